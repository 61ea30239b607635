# Find hypre (BoomerAMG). Defines HYPRE_FOUND, HYPRE_INCLUDE_DIR,
# HYPRE_LIBRARY and the imported target HYPRE::HYPRE (the library only).
# The include directory is deliberately not a usage requirement of the
# target: hypre's header directory holds generic names (krylov.h, lobpcg.h)
# that must not shadow a project's own; add HYPRE_INCLUDE_DIR to the one
# source that includes HYPRE.h. Debian's hypre is built with MPI: link
# MPI::MPI_C and Threads::Threads as well.
find_path(HYPRE_INCLUDE_DIR HYPRE.h PATH_SUFFIXES hypre)
find_library(HYPRE_LIBRARY HYPRE)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(HYPRE REQUIRED_VARS HYPRE_LIBRARY HYPRE_INCLUDE_DIR)
if(HYPRE_FOUND AND NOT TARGET HYPRE::HYPRE)
  add_library(HYPRE::HYPRE UNKNOWN IMPORTED)
  set_target_properties(HYPRE::HYPRE PROPERTIES IMPORTED_LOCATION "${HYPRE_LIBRARY}")
endif()
mark_as_advanced(HYPRE_INCLUDE_DIR HYPRE_LIBRARY)

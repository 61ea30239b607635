# Find sequential MUMPS (Debian's libmumps-seq-dev: zmumps_c.h, dmumps_c.h,
# libzmumps_seq, libdmumps_seq, libmumps_common_seq, with the MPI stubs
# built in). Defines MUMPS_FOUND, MUMPS_INCLUDE_DIR, MUMPS_ZMUMPS_LIBRARY,
# MUMPS_DMUMPS_LIBRARY, MUMPS_COMMON_LIBRARY and the imported target
# MUMPS::MUMPS (both arithmetics) with its include directory.
find_path(MUMPS_INCLUDE_DIR zmumps_c.h)
find_library(MUMPS_ZMUMPS_LIBRARY zmumps_seq)
find_library(MUMPS_DMUMPS_LIBRARY dmumps_seq)
find_library(MUMPS_COMMON_LIBRARY mumps_common_seq)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MUMPS REQUIRED_VARS MUMPS_ZMUMPS_LIBRARY MUMPS_DMUMPS_LIBRARY
                                  MUMPS_COMMON_LIBRARY MUMPS_INCLUDE_DIR)
if(MUMPS_FOUND AND NOT TARGET MUMPS::MUMPS)
  add_library(MUMPS::MUMPS INTERFACE IMPORTED)
  set_target_properties(MUMPS::MUMPS PROPERTIES
    INTERFACE_LINK_LIBRARIES "${MUMPS_ZMUMPS_LIBRARY};${MUMPS_DMUMPS_LIBRARY};${MUMPS_COMMON_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MUMPS_INCLUDE_DIR}")
endif()
mark_as_advanced(MUMPS_INCLUDE_DIR MUMPS_ZMUMPS_LIBRARY MUMPS_DMUMPS_LIBRARY MUMPS_COMMON_LIBRARY)

# Find the SuiteSparse components sla uses (Debian's libsuitesparse-dev 5.x
# ships neither a CMake package nor .pc files). Defines imported targets
# SuiteSparse::<comp> for comp in cholmod umfpack klu spqr amd colamd btf camd
# ccolamd suitesparseconfig, and SuiteSparse_FOUND.
find_path(SuiteSparse_INCLUDE_DIR cholmod.h PATH_SUFFIXES suitesparse)
set(_ss_components cholmod umfpack klu spqr amd colamd btf camd ccolamd suitesparseconfig)
set(SuiteSparse_FOUND FALSE)
if(SuiteSparse_INCLUDE_DIR)
  set(SuiteSparse_FOUND TRUE)
  foreach(c ${_ss_components})
    find_library(SuiteSparse_${c}_LIBRARY NAMES ${c})
    if(SuiteSparse_${c}_LIBRARY)
      if(NOT TARGET SuiteSparse::${c})
        add_library(SuiteSparse::${c} UNKNOWN IMPORTED)
        set_target_properties(SuiteSparse::${c} PROPERTIES
          IMPORTED_LOCATION ${SuiteSparse_${c}_LIBRARY}
          INTERFACE_INCLUDE_DIRECTORIES ${SuiteSparse_INCLUDE_DIR})
      endif()
    else()
      set(SuiteSparse_FOUND FALSE)
    endif()
  endforeach()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SuiteSparse REQUIRED_VARS SuiteSparse_INCLUDE_DIR SuiteSparse_FOUND)

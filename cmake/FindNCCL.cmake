# FindNCCL
# --------
# Finds the NCCL headers (and, for tests only, the path of the real library).
# TriRace never links libnccl: the shim and hostccl reach NCCL at run time.
#
# Search order: the NCCL_HOME variable (CMake or environment), then the CUDA
# toolkit's include and library folders, then the system paths.
#
# Result variables:
#   NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_VERSION (e.g. 2.28.9),
#   NCCL_VERSION_CODE (e.g. 22809), NCCL_LIBRARY (may be empty: optional)
# Imported target:
#   NCCL::headers  (INTERFACE: include folder only)

set(_nccl_hints "")
if(DEFINED NCCL_HOME)
  list(APPEND _nccl_hints "${NCCL_HOME}")
endif()
if(DEFINED ENV{NCCL_HOME})
  list(APPEND _nccl_hints "$ENV{NCCL_HOME}")
endif()
set(_nccl_include_hints "")
set(_nccl_library_hints "")
foreach(h IN LISTS _nccl_hints)
  list(APPEND _nccl_include_hints "${h}/include")
  list(APPEND _nccl_library_hints "${h}/lib" "${h}/lib64")
endforeach()
if(CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _nccl_include_hints ${CUDAToolkit_INCLUDE_DIRS})
endif()
if(CUDAToolkit_LIBRARY_DIR)
  list(APPEND _nccl_library_hints "${CUDAToolkit_LIBRARY_DIR}")
endif()

find_path(NCCL_INCLUDE_DIR NAMES nccl.h HINTS ${_nccl_include_hints})
find_library(NCCL_LIBRARY NAMES libnccl.so.2 nccl HINTS ${_nccl_library_hints})

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_defs REGEX "^#define NCCL_(MAJOR|MINOR|PATCH|VERSION_CODE) ")
  foreach(part MAJOR MINOR PATCH VERSION_CODE)
    string(REGEX MATCH "#define NCCL_${part} +([0-9]+)" _m "${_nccl_defs}")
    set(_nccl_${part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
  set(NCCL_VERSION_CODE "${_nccl_VERSION_CODE}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL
  REQUIRED_VARS NCCL_INCLUDE_DIR
  VERSION_VAR NCCL_VERSION
  REASON_FAILURE_MESSAGE "set NCCL_HOME to an NCCL install, or install the Debian package libnccl-dev")

if(NCCL_FOUND AND NOT TARGET NCCL::headers)
  add_library(NCCL::headers INTERFACE IMPORTED)
  set_target_properties(NCCL::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

# Build options shared by every module.

option(TRIRACE_WERROR "Treat compiler warnings as errors" OFF)
option(TRIRACE_BUILD_TESTS "Build the GoogleTest suites and register them with ctest" ON)
option(TRIRACE_BUILD_BENCHMARKS "Build the Google Benchmark programs" ON)
set(TRIRACE_SANITIZE "" CACHE STRING
    "Sanitizer to build with: empty, address, undefined, thread (address,undefined also works)")
set_property(CACHE TRIRACE_SANITIZE PROPERTY STRINGS "" address undefined thread "address,undefined")

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_C_STANDARD 11)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# Hidden by default: every shared library exports only what its version
# script or TRIRACE_EXPORT marks.
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_C_VISIBILITY_PRESET hidden)
set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)

# Fuzzing (tests/fuzz, scripts/fuzz.sh): clang's libFuzzer, with every
# library compiled for coverage; pair it with TRIRACE_SANITIZE=address,undefined.
option(TRIRACE_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)
if(TRIRACE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRIRACE_FUZZ=ON needs clang (CC=clang CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

option(TRIRACE_THREAD_SAFETY "Check lock annotations with clang's -Wthread-safety (needs clang)" OFF)

add_compile_options(-Wall -Wextra)
if(TRIRACE_THREAD_SAFETY)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRIRACE_THREAD_SAFETY=ON needs clang (CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # ABSL_GUARDED_BY and friends are checked only by clang.
  add_compile_options(-Wthread-safety)
endif()
if(TRIRACE_WERROR)
  add_compile_options(-Werror)
endif()

if(TRIRACE_SANITIZE)
  string(REPLACE "," ";" _trirace_sanitizers "${TRIRACE_SANITIZE}")
  foreach(s IN LISTS _trirace_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "TRIRACE_SANITIZE='${TRIRACE_SANITIZE}': '${s}' is not one of address, undefined, thread")
    endif()
  endforeach()
  if("thread" IN_LIST _trirace_sanitizers AND "address" IN_LIST _trirace_sanitizers)
    message(FATAL_ERROR "TRIRACE_SANITIZE: thread and address cannot be combined")
  endif()
  add_compile_options(-fsanitize=${TRIRACE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  if("undefined" IN_LIST _trirace_sanitizers)
    # NCCL's API is C: an ncclDataType_t or ncclRedOp_t argument may hold
    # any int (the shim must refuse an unknown one, not assume it away), so
    # C++'s rule that an enum holds only its enumerators' range is off.
    add_compile_options(-fno-sanitize=enum)
  endif()
  # GCC 12's -Wmaybe-uninitialized misfires on instrumented standard library
  # code (std::regex, std::function) under the sanitizers.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  if("thread" IN_LIST _trirace_sanitizers AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns that TSan does not model std::atomic_thread_fence; the
    # occupancy seqlock uses fences on purpose, so this stays a warning.
    add_compile_options(-Wno-error=tsan)
  endif()
  add_link_options(-fsanitize=${TRIRACE_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND "address" IN_LIST _trirace_sanitizers)
    # The sanitizer runtime as a shared library that every binary needs:
    # the shim and hostccl are preloaded into programs that are not
    # instrumented (sh, env, python), which then load the runtime with them
    # (run with ASAN_OPTIONS=verify_asan_link_order=0, as scripts/test.sh does).
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                    OUTPUT_VARIABLE _trirace_asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(_trirace_asan_dir "${_trirace_asan_rt}" DIRECTORY)
    add_link_options(-shared-libsan "-Wl,-rpath,${_trirace_asan_dir}")
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND "undefined" IN_LIST _trirace_sanitizers)
    # A C program linked with a C++ library (hostccl's drop-in check) needs
    # UBSan's C++ half, which clang links for C++ links only.
    add_link_options("$<$<LINK_LANGUAGE:C>:-fsanitize-link-c++-runtime;-lstdc++>")
  endif()
  message(STATUS "TriRace: building with -fsanitize=${TRIRACE_SANITIZE}")
endif()

# trirace_shared_library(<name> VERSION_SCRIPT <file> SOURCES ...)
# A shared library with hidden symbols, an export list, and no undefined
# symbols left for the loader to guess at.
function(trirace_shared_library name)
  cmake_parse_arguments(ARG "" "VERSION_SCRIPT;OUTPUT_NAME" "SOURCES" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  if(ARG_OUTPUT_NAME)
    set_target_properties(${name} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(ARG_VERSION_SCRIPT)
    target_link_options(${name} PRIVATE "-Wl,--version-script=${ARG_VERSION_SCRIPT}")
    set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS "${ARG_VERSION_SCRIPT}")
  endif()
  if(NOT TRIRACE_SANITIZE)
    target_link_options(${name} PRIVATE "-Wl,--no-undefined")
  endif()
  target_link_options(${name} PRIVATE "-Wl,--as-needed")
endfunction()

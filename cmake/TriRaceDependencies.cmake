# Third-party dependencies, found the CMake way. A missing required one stops
# configure naming the Debian package; a missing optional one switches its
# feature off and says so. scripts/setup-deps.sh installs all of them.

function(trirace_require found what debian_package)
  if(NOT ${found})
    message(FATAL_ERROR "TriRace needs ${what}: install the Debian package '${debian_package}' "
                        "(or run scripts/setup-deps.sh)")
  endif()
endfunction()

# CUDA toolkit and NCCL: headers only (nccl.h includes cuda_runtime.h), and
# only for the modules that speak NCCL's API (TRIRACE_NEEDS_NCCL). Nothing
# links libcudart or libcuda; the CUDA backend loads libcuda.so.1 with dlopen.
if(TRIRACE_NEEDS_NCCL)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    # Without nvcc, FindCUDAToolkit may miss a headers-only install.
    find_path(_trirace_cuda_include cuda_runtime.h
              HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES include)
    if(_trirace_cuda_include)
      set(CUDAToolkit_FOUND TRUE)
      set(CUDAToolkit_INCLUDE_DIRS "${_trirace_cuda_include}")
    endif()
  endif()
  trirace_require(CUDAToolkit_FOUND "the CUDA toolkit headers (cuda_runtime.h)" "nvidia-cuda-toolkit-headers")
  add_library(trirace_cuda_headers INTERFACE)
  target_include_directories(trirace_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  message(STATUS "TriRace: CUDA headers in ${CUDAToolkit_INCLUDE_DIRS}")

  find_package(NCCL)
  trirace_require(NCCL_FOUND "the NCCL headers (nccl.h)" "libnccl-dev")
  target_link_libraries(trirace_cuda_headers INTERFACE NCCL::headers)
  message(STATUS "TriRace: NCCL ${NCCL_VERSION} headers in ${NCCL_INCLUDE_DIR}; "
                 "real library for tests: ${NCCL_LIBRARY}")
else()
  message(STATUS "TriRace: no module of this build speaks NCCL: CUDA and NCCL headers not needed")
endif()


find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
trirace_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

# Abseil and tinyxml2: by default built from source into every library
# (third_party/), so that the preloaded shim needs nothing the target machine
# may lack. TRIRACE_BUNDLED_DEPS=OFF links Debian's shared libraries instead
# (quicker to set up; the installed libraries then need libabsl and
# libtinyxml2 at run time).
option(TRIRACE_BUNDLED_DEPS "Link Abseil and tinyxml2 statically, built from the sources in TRIRACE_DEPS_DIR" ON)
set(_trirace_deps_default "${CMAKE_SOURCE_DIR}/.deps")
if(DEFINED ENV{TRIRACE_DEPS_DIR})
  set(_trirace_deps_default "$ENV{TRIRACE_DEPS_DIR}")
endif()
set(TRIRACE_DEPS_DIR "${_trirace_deps_default}" CACHE PATH
    "where scripts/fetch-sources.sh unpacked the Abseil and tinyxml2 sources")
if(TRIRACE_BUNDLED_DEPS)
  foreach(_src abseil-cpp/CMakeLists.txt tinyxml2/tinyxml2.cpp)
    if(NOT EXISTS "${TRIRACE_DEPS_DIR}/${_src}")
      message(FATAL_ERROR "TRIRACE_BUNDLED_DEPS=ON needs ${TRIRACE_DEPS_DIR}/${_src}: run "
                          "scripts/fetch-sources.sh (scripts/build.sh does), or configure with "
                          "-DTRIRACE_BUNDLED_DEPS=OFF to link Debian's shared Abseil and tinyxml2")
    endif()
  endforeach()
  add_subdirectory(third_party)
  message(STATUS "TriRace: Abseil and tinyxml2 linked statically, from ${TRIRACE_DEPS_DIR}")
else()
  find_package(absl CONFIG QUIET)
  trirace_require(absl_FOUND "Abseil" "libabsl-dev")
  pkg_check_modules(TINYXML2 QUIET IMPORTED_TARGET tinyxml2)
  trirace_require(TINYXML2_FOUND "tinyxml2" "libtinyxml2-dev")
  add_library(TriRace::tinyxml2 ALIAS PkgConfig::TINYXML2)
  message(STATUS "TriRace: Debian's shared Abseil and tinyxml2 (TRIRACE_BUNDLED_DEPS=OFF)")
endif()

pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
if(HWLOC_FOUND)
  message(STATUS "TriRace: hwloc ${HWLOC_VERSION}: topology discovery enabled")
else()
  message(STATUS "TriRace: hwloc not found: topology discovery from hwloc disabled (install libhwloc-dev)")
endif()
pkg_check_modules(IBVERBS QUIET IMPORTED_TARGET libibverbs)
if(IBVERBS_FOUND)
  message(STATUS "TriRace: libibverbs ${IBVERBS_VERSION}: InfiniBand discovery enabled")
else()
  message(STATUS "TriRace: libibverbs not found: InfiniBand discovery disabled (install libibverbs-dev)")
endif()

find_package(nlohmann_json 3 QUIET)
trirace_require(nlohmann_json_FOUND "nlohmann-json" "nlohmann-json3-dev")


# Command lines of the `trirace` command, the examples and the benchmarks
# (header-only, target CLI11::CLI11).
find_package(CLI11 CONFIG QUIET)
trirace_require(CLI11_FOUND "CLI11" "libcli11-dev")

if(TRIRACE_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  trirace_require(GTest_FOUND "GoogleTest and GoogleMock" "libgtest-dev libgmock-dev")
  include(GoogleTest)
endif()
if(TRIRACE_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG QUIET)
  trirace_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()

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

find_package(absl CONFIG QUIET)
trirace_require(absl_FOUND "Abseil" "libabsl-dev")

find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
trirace_require(PKG_CONFIG_FOUND "pkg-config" "pkg-config")

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

# NCCL topology XML files (topology/discovery/nccl_xml.cc). Always: the
# `trirace` command, built with every module set, reads them (`trirace topo`).
pkg_check_modules(TINYXML2 QUIET IMPORTED_TARGET tinyxml2)
trirace_require(TINYXML2_FOUND "tinyxml2" "libtinyxml2-dev")

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

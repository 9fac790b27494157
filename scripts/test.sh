#!/usr/bin/env bash
# Builds everything and runs the whole test suite with ctest; compiles every
# module with clang and -Wthread-safety, so lock annotations (ABSL_GUARDED_BY,
# ...) are checked; then builds the modules with a data path (the net plugin)
# under AddressSanitizer and runs their suites again there.
#   TRIRACE_TEST_ASAN=0     skips the AddressSanitizer pass
#   TRIRACE_TEST_THREAD_SAFETY=0  skips the thread-safety pass
#   TRIRACE_BUILD_DIR=dir   main build folder (default build/)
# Extra arguments go to the CMake configure step of the main build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
jobs=$(nproc)

# The same configure as scripts/run.sh (build.sh): what run.sh built is reused.
"$root/scripts/build.sh" "$@"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600

if [ "${TRIRACE_TEST_THREAD_SAFETY:-1}" != "0" ]; then
  tsa_dir="$build_dir-thread-safety"
  echo "== Thread-safety analysis: every module with clang -Wthread-safety in $tsa_dir"
  # Analysis only, nothing here runs: no optimiser, no debug info (about
  # 3 minutes instead of 5 on 2 cores), and Debian's shared Abseil (the
  # annotations are the same; building Abseil would only cost time).
  CC=clang CXX=clang++ TRIRACE_BUILD_DIR="$tsa_dir" "$root/scripts/build.sh" \
    -DTRIRACE_THREAD_SAFETY=ON -DTRIRACE_BUILD_TESTS=OFF -DTRIRACE_BUILD_BENCHMARKS=OFF -DTRIRACE_BUNDLED_DEPS=OFF \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0
fi

if [ "${TRIRACE_TEST_ASAN:-1}" != "0" ]; then
  asan_dir="$build_dir-asan"
  asan_modules="plugin"
  echo "== AddressSanitizer pass: $asan_modules in $asan_dir"
  # Only what the suite below runs.
  TRIRACE_BUILD_DIR="$asan_dir" TRIRACE_BUILD_TARGETS=plugin_tests "$root/scripts/build.sh" \
    -DTRIRACE_SANITIZE=address -DTRIRACE_BUILD_BENCHMARKS=OFF -DTRIRACE_MODULES="$asan_modules"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" --timeout 600 -R '^NetPlugin'
fi

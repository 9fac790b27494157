#!/usr/bin/env bash
# Builds everything and runs the whole test suite with ctest; compiles every
# module with clang and -Wthread-safety, so lock annotations (ABSL_GUARDED_BY,
# ...) are checked; then builds the module with a data path from strangers (the
# net plugin) with clang, AddressSanitizer and UndefinedBehaviorSanitizer, runs
# its suites again there, and runs each fuzz target (tests/fuzz) for 30 s.
#   TRIRACE_TEST_ASAN=0     skips the sanitizer pass (ASan+UBSan: the plugin's suites, the fuzzers)
#   TRIRACE_TEST_FUZZ=0     keeps the sanitizer pass but skips the fuzzers
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
  # One clang build of the net plugin module with AddressSanitizer and
  # UndefinedBehaviorSanitizer serves two checks: the plugin's suites, and the
  # fuzz targets (scripts/fuzz.sh, the same folder and flags), each for
  # TRIRACE_FUZZ_SECONDS (30).
  san_dir="$build_dir-fuzz"
  echo "== Sanitizer pass: the net plugin's suites and the fuzzers under ASan+UBSan in $san_dir"
  CC=clang CXX=clang++ TRIRACE_BUILD_DIR="$san_dir" TRIRACE_BUILD_TARGETS=plugin_tests "$root/scripts/build.sh" \
    -DTRIRACE_FUZZ=ON -DTRIRACE_SANITIZE=address,undefined -DTRIRACE_MODULES=plugin -DTRIRACE_BUILD_BENCHMARKS=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$san_dir" --output-on-failure -j "$jobs" --timeout 600 -R '^NetPlugin'
  if [ "${TRIRACE_TEST_FUZZ:-1}" != "0" ]; then
    TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/fuzz.sh"
  fi
fi

#!/usr/bin/env bash
# The README's one test command. Its passes, each on its own build tree:
#  1. build/ (the release build that scripts/run.sh also uses): every test,
#     with ctest.
#  2. build-asan/: every module compiled by clang with AddressSanitizer and
#     UndefinedBehaviorSanitizer, and the lock annotations checked
#     (-Wthread-safety as errors). By default (CI) it runs the suites of the
#     libraries, the plugin, hostccl's and the shim's in-process suites and
#     the shim's bad-input suite (every policy in schedule mode),
#     then each fuzz target (tests/fuzz) for TRIRACE_FUZZ_SECONDS (10 here,
#     to keep CI well under its 70 minutes; scripts/fuzz.sh alone defaults to 30).
#     TRIRACE_TEST_ASAN=all runs every C++ suite there instead (about 25
#     more minutes on 2 cores: the multi-process sweeps, the test bed, the
#     command-line tools, the simulator), as docs/reliability.md reports.
#  3. On request (TRIRACE_TEST_TSAN=1; .ci/run asks), build-tsan/:
#     ThreadSanitizer over the scheduler, the shim's gated launcher,
#     completion watcher and in-process units, and hostccl's in-process
#     suites (about 7 minutes of build and 5 s of tests on 2 cores).
# What cannot run sanitized runs in pass 1 only: PyTorch (an uninstrumented
# interpreter), the checks of the installed and packaged products, the
# benchmark runs and the fault matrix.
#   TRIRACE_TEST_ASAN=0|1|all   skips pass 2, runs its CI set, or every suite
#   TRIRACE_TEST_FUZZ=0         keeps pass 2 but skips the fuzzers
#   TRIRACE_TEST_TSAN=1         runs pass 3
#   TRIRACE_TEST_LONG=1         pass 1 also runs the fault matrix's 60 s pause
#   TRIRACE_BUILD_DIR=dir       the release build folder (default build/);
#                               the others are dir-asan and dir-tsan
# Extra arguments go to the CMake configure step of the release build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
jobs=$(nproc)
# Not exported: the tests must not see it (the Python package would look
# for hostccl there first). The sanitizer scripts get it on their line.

# The same configure as scripts/run.sh (build.sh): what run.sh built is reused.
TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/build.sh" "$@"
# The 60 s pause of the fault matrix (one more minute) only when asked.
long_only=()
[ "${TRIRACE_TEST_LONG:-0}" != "0" ] || long_only=(-E '^LongPause\.')
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600 "${long_only[@]}"

# Passes 2 and 3 run each GoogleTest binary as one ctest test (a sanitized
# process is slow to start; tests/CMakeLists.txt). What only the release
# build runs (see above): the scripts' tests by name, the benchmark runs
# inside testbed_net_test by filter, and the fault matrix, whose rank
# processes are the same as those of the multi-process suites run here.
release_only='^(PyTorch|Recipes|build|E2eTools)\.|^faults_testbed_test$'
sanitizer_env=(GTEST_FILTER='-TestbedE2E.*' ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0
               UBSAN_OPTIONS=print_stacktrace=1
               TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$root/tests/tsan.supp")

asan=${TRIRACE_TEST_ASAN:-1}
if [ "$asan" != "0" ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer + -Wthread-safety: every module in $build_dir-asan"
  if [ "$asan" = "all" ]; then
    TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/sanitizer-build.sh" address
    env "${sanitizer_env[@]}" ctest --test-dir "$build_dir-asan" --output-on-failure -j "$jobs" --timeout 600 \
      -E "$release_only"
  else
    ci_suites=(common_test annotation_test annotation_bad_input_test scheduler_test topology_test
               topology_links_test nccl_adapter_test device_cuda_test device_host_test
               plugin_conformance_test plugin_lifecycle_test plugin_close_test plugin_bad_input_test
               plugin_liveness_test plugin_class_priority_test plugin_rto_min_test plugin_occupancy_test
               plugin_tcp_unit_test plugin_loader_test hostccl_reduce_test hostccl_shm_test
               hostccl_ring_ready_test hostccl_stream_test hostccl_api_test hostccl_clock_test
               interpose_unit_test interpose_plugin_occupancy_test interpose_gated_launcher_test
               interpose_stream_watcher_test interpose_bad_input_test)
    replays=(params_fuzz_replay topology_fuzz_replay occupancy_fuzz_replay plugin_wire_fuzz_replay
             hwloc_xml_fuzz_replay replay_fuzz_replay)
    # The suites' targets bring what they load and launch (add_dependencies).
    TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/sanitizer-build.sh" address "${ci_suites[@]}" "${replays[@]}" plugin_tests
    ci_regex="^($(IFS='|'; echo "${ci_suites[*]}"))\$|^NetPlugin\\.|^fuzz\\."
    env "${sanitizer_env[@]}" ctest --test-dir "$build_dir-asan" --output-on-failure -j "$jobs" --timeout 600 \
      -R "$ci_regex"
  fi
  if [ "${TRIRACE_TEST_FUZZ:-1}" != "0" ]; then
    TRIRACE_FUZZ_SECONDS=${TRIRACE_FUZZ_SECONDS:-10} TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/fuzz.sh" \
      params_fuzz topology_fuzz occupancy_fuzz plugin_wire_fuzz hwloc_xml_fuzz replay_fuzz
  fi
fi

if [ "${TRIRACE_TEST_TSAN:-0}" != "0" ]; then
  echo "== ThreadSanitizer: the scheduler, the gated launcher and hostccl in $build_dir-tsan"
  # The scheduler's suite, the gated launcher over a fake device (its
  # threads, gates and watchdog in one process), the completion watcher, the
  # shim's in-process units (the metrics writer's thread among them) and
  # hostccl's in-process suites (rings, movers, streams, the API across
  # threads). tests/tsan.supp lists the two reports that are not races.
  tsan_suites=(scheduler_test interpose_gated_launcher_test interpose_stream_watcher_test interpose_unit_test
               hostccl_api_test hostccl_reduce_test hostccl_ring_ready_test hostccl_shm_test hostccl_stream_test)
  TRIRACE_BUILD_DIR="$build_dir" "$root/scripts/sanitizer-build.sh" thread "${tsan_suites[@]}"
  env "${sanitizer_env[@]}" ctest --test-dir "$build_dir-tsan" --output-on-failure -j "$jobs" --timeout 600 \
    -R "^($(IFS='|'; echo "${tsan_suites[*]}"))\$"
fi

#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in the AddressSanitizer +
# UndefinedBehaviorSanitizer tree that scripts/test.sh also uses
# (${TRIRACE_BUILD_DIR:-build}-asan, scripts/sanitizer-build.sh), and runs
# each for a bounded time from its corpus in tests/fuzz/corpus/. Prints, per
# target, the executions and the coverage reached; fails on the first crash,
# leak or hang, leaving the input in the tree's fuzz-runs/ folder (crash-*,
# leak-*, timeout-*): replay it with <target>_replay, fix, and add it to the
# corpus. A target that cannot run here (hwloc_xml_fuzz without hwloc) exits
# 75 (libFuzzer's own failures exit 77) and is reported as skipped, with why.
#   TRIRACE_FUZZ_SECONDS=30   time per target
#   scripts/fuzz.sh [target...]   only these (default: every target)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz_dir="${TRIRACE_BUILD_DIR:-$root/build}-asan"
seconds=${TRIRACE_FUZZ_SECONDS:-30}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(params_fuzz topology_fuzz occupancy_fuzz plugin_wire_fuzz hwloc_xml_fuzz replay_fuzz)

build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzz"); done
# plugin_wire_fuzz loads the net plugin it fuzzes.
case " ${targets[*]} " in *" plugin_wire_fuzz "*) build_targets+=(nccl_net_trirace) ;; esac
"$root/scripts/sanitizer-build.sh" address "${build_targets[@]}" >&2

work="$fuzz_dir/fuzz-runs"
mkdir -p "$work"
printf '%-18s %10s %8s %8s %s\n' target execs cov ft corpus
for t in "${targets[@]}"; do
  bin=$(find "$fuzz_dir/" -name "${t}_fuzz" -type f -perm -u+x | head -n 1)
  [ -n "$bin" ] || { echo "fuzz: ${t}_fuzz was not built" >&2; exit 1; }
  found="$work/$t"  # new inputs land here, not in the repository's corpus
  mkdir -p "$found"
  log="$work/$t.log"
  rc=0
  # verify_asan_link_order=0: a clang ASan build links the runtime as a
  # shared library (cmake/TriRaceOptions.cmake), after libstdc++.
  (cd "$work" && ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$t-" "$found" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1) || rc=$?
  if [ "$rc" -eq 75 ]; then
    printf '%-18s %s\n' "$t" "skipped: $(grep -m 1 'skipped' "$log")"
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: $t failed; the input is in $work/$t-*" >&2
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  printf '%-18s %10s %8s %8s %s\n' "$t" "$execs" "$cov" "$ft" "$(ls "$found" | wc -l) new inputs"
done

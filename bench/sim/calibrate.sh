#!/usr/bin/env bash
# calibrate.sh: every bench/e2e preset and mode simulated on the `testbed`
# cluster (trirace sim), printed beside the medians a bench/e2e run
# measured, with the error of each (docs/simulation.md, "Calibration").
#
#   bench/sim/calibrate.sh [--build DIR] [--results FILE]... [--rate GBPS]
#                          [--presets LIST] [--modes LIST] [--json] [-- extra trirace sim flags]
#
# --results: a bench/e2e results.tsv (run_e2e.sh --out DIR writes DIR/results.tsv),
#   repeatable; default: the two runs of 2026-12-06 in bench/sim/data/ that
#   docs/simulation.md's calibration was made against (the four presets;
#   rails-split and rails-shared, a row per job: <preset>/dp, <preset>/pp).
# --rate: the run's link rate in Gbit/s (run_e2e.sh --rate; default 0.3).
# The run's iterations and warm-up are the presets' own unless extra flags
# say otherwise (give the same `-- --iterations N --warmup W` as the run).
# Prints per preset and mode: measured median (of the repetitions' medians),
# the spread, simulated, simulated/measured - 1; then the largest error.
# Exit codes: 0 printed, 2 usage, 1 missing programs or data.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build" results=() rate=0.3
presets="contention,megatron,sparse,no-contention,rails-split,rails-shared" modes="off,fifo,priority,wire,gate,trirace"
json=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --results) results+=("$2"); shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --presets) presets=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --json) json=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "calibrate: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
trirace="$build/bin/trirace"
[ -x "$trirace" ] || { echo "calibrate: $trirace is missing: build first (scripts/build.sh)" >&2; exit 1; }
[ ${#results[@]} -gt 0 ] ||
  results=("$here/data/testbed-300mbit-2026-12-06.tsv" "$here/data/testbed-rails-300mbit-2026-12-06.tsv")
for f in "${results[@]}"; do [ -f "$f" ] || { echo "calibrate: --results $f: no such file" >&2; exit 1; }; done
[[ $rate =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "calibrate: --rate '$rate': expected Gbit/s" >&2; exit 2; }
sims=$(mktemp -d "${TMPDIR:-/tmp}/trirace-calibrate.XXXXXX")
trap 'rm -rf "$sims"' EXIT
IFS=, read -r -a preset_list <<<"$presets"
for p in "${preset_list[@]}"; do
  "$trirace" sim --cluster testbed --gbps "$rate" ${CAL_SIM_FLAGS:-} --modes "$modes" --json --preset "$p" -- "${extra[@]}" \
    >"$sims/$p.json" || { echo "calibrate: trirace sim failed on preset $p" >&2; exit 1; }
done
python3 "$here/calibrate_table.py" "$sims" "$presets" "$modes" "$json" "${results[@]}"

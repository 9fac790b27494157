#!/usr/bin/env bash
# scale.sh: the simulator's own cost as the cluster grows: a 1F1B iteration
# of gpt-1.3b with 32 micro-batches on dgx-h100 (8 GPUs a node, pp 8, the
# rest data-parallel) in all six modes and the ideal and bound beside them,
# at each GPU count; prints per count the whole command's wall time, the
# events simulated, events per second and the peak resident memory
# (docs/simulation.md, "Scale").
#
#   bench/sim/scale.sh [--build DIR] [--gpus LIST]    (default 64,256,1024,2048,4096,8192)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build" gpus="64,256,1024,2048,4096,8192"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
trirace="$build/bin/trirace"
[ -x "$trirace" ] || { echo "scale: $trirace is missing: build first" >&2; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/trirace-scale.XXXXXX")
trap 'rm -f "$out"' EXIT
printf '%6s %6s %11s %9s %10s %9s %13s\n' gpus hosts events wall_s Mevents/s rss_MiB iteration_ms
IFS=, read -r -a counts <<<"$gpus"
for n in "${counts[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] && [ $((n % 64)) = 0 ] || { echo "scale: --gpus: $n is not a multiple of 64" >&2; exit 2; }
  start=$(date +%s.%N)
  "$trirace" sim --cluster dgx-h100 --hosts $((n / 8)) --model gpt-1.3b --pp 8 --dp $((n / 8)) \
    --schedule 1f1b --microbatches 32 --iterations 1 --warmup 0 --json --timing >"$out"
  end=$(date +%s.%N)
  python3 - "$n" "$start" "$end" "$out" <<'PY'
import json, sys
n, start, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
d = json.load(open(sys.argv[4]))
t = d["timing"]
wall = end - start
print("%6d %6d %11d %9.2f %10.2f %9.0f %13.3f" % (n, n // 8, t["events"], wall, t["events"] / t["wall_s"] / 1e6,
                                                t["peak_rss_mib"], d["modes"]["off"]["iteration_ms"]))
PY
done

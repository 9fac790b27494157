#!/usr/bin/env bash
# fabric.sh: beyond the paper's setting: 256 and 1024 GPUs of dgx-h100 on
# a rail-optimised fabric against two-tier fabrics oversubscribed 2:1 and
# 4:1 (16 nodes a leaf), 3-D parallel (tensor parallel inside a node,
# pipeline and data parallel across nodes, so both cross every NIC), every
# mode; a Markdown table of off's iteration time and each mode's speed-up
# (docs/simulation.md, "Beyond the paper"). Every mode runs with class
# queues on every link (--qos fabric), and `trirace` once more with none
# (--qos none, dgx-h100's own: one lossless InfiniBand class).
#
#   bench/sim/fabric.sh [--build DIR] [--gbps G] [--gpus LIST] [--models LIST]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build" gbps=400 gpus="256,1024" models="gpt-1.3b,gpt-7b"
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --gbps) gbps=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fabric: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
trirace="$build/bin/trirace"
[ -x "$trirace" ] || { echo "fabric: $trirace is missing: build first" >&2; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/trirace-fabric.XXXXXX")
trap 'rm -f "$out" "$out.none"' EXIT
echo "| GPUs | model | schedule | fabric | off ms | wire | gate | trirace | ideal | trirace, no QoS | busiest link |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
IFS=, read -r -a gpu_list <<<"$gpus"
IFS=, read -r -a model_list <<<"$models"
for n in "${gpu_list[@]}"; do
  for model in "${model_list[@]}"; do
    for schedule in 2bw 1f1b; do
      for fabric in rail 2 4; do
        flags=(--cluster dgx-h100 --hosts $((n / 8)) --gbps "$gbps")
        if [ "$fabric" = rail ]; then
          flags+=(--fabric rail)
        else
          flags+=(--fabric two-tier --hosts-per-leaf 16 --oversubscription "$fabric")
        fi
        "$trirace" sim "${flags[@]}" --model "$model" --tp 8 --pp 8 --dp $((n / 64)) --schedule $schedule \
          --microbatches 16 --iterations 2 --warmup 1 --modes off,wire,gate,trirace --qos fabric --json >"$out"
        "$trirace" sim "${flags[@]}" --model "$model" --tp 8 --pp 8 --dp $((n / 64)) --schedule $schedule \
          --microbatches 16 --iterations 2 --warmup 1 --modes off,trirace --qos none --json >"$out.none"
        python3 - "$n" "$model" "$schedule" "$fabric" "$out" "$out.none" <<'PY'
import json, sys
n, model, schedule, fabric, path, path_none = sys.argv[1:7]
d = json.load(open(path))
none = json.load(open(path_none))["modes"]["trirace"]["speedup"]
m = d["modes"]
off = m["off"]["iteration_ms"]
cells = ["%.3fx" % m[k]["speedup"] for k in ("wire", "gate", "trirace")]
link = m["off"]["busiest_links"][0] if m["off"]["busiest_links"] else {"link": "-", "utilisation": 0}
print("| %s | %s | %s | %s | %.1f | %s | %.3fx | %.3fx | %s %.0f%% |" % (
    n, model, schedule, "rail-optimised" if fabric == "rail" else "two-tier %s:1" % fabric, off, " | ".join(cells),
    off / d["ideal_ms"], none, link["link"], 100 * link["utilisation"]))
PY
      done
    done
  done
done

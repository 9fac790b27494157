#!/usr/bin/env bash
# paper.sh: the TriRace paper's setting on the simulator: BERT-large and a
# GPT-2-like model (gpt2-xl) under PipeDream-2BW and Megatron-style 1F1B,
# pipeline x data parallel on 8, 16 and 32 GPUs over 100 Gbit/s-class
# networking, every mode; prints a Markdown table of off's iteration time
# and each mode's speed-up over it (docs/simulation.md, "The paper's
# setting"). Two clusters bracket the paper's hardware: pcie-2nic (8 GPUs
# and 2 x 100 Gbit/s a node: four GPUs share a NIC) and one GPU per node at
# 100 Gbit/s (dgx-h100 --ranks-per-host 1 --gbps 100). Stages of a replica
# are adjacent (--order pp-inner), so pipeline and data-parallel traffic
# cross the same NICs. Every mode runs with class queues on every link
# (--qos fabric: the paper's testbeds honoured marks), and `trirace` once
# more with none (--qos none, most clusters: fq_codel hosts, one RDMA class),
# where `wire` is `off` by construction and `gate` does not change.
#
#   bench/sim/paper.sh [--build DIR] [--microbatches M] [--micro-batch-size B]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../../build" m=8 b=4
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --microbatches) m=$2; shift 2 ;;
    --micro-batch-size) b=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "paper: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
trirace="$build/bin/trirace"
[ -x "$trirace" ] || { echo "paper: $trirace is missing: build first" >&2; exit 1; }
out=$(mktemp "${TMPDIR:-/tmp}/trirace-paper.XXXXXX")
trap 'rm -f "$out" "$out.none"' EXIT
echo "| cluster | model | schedule | GPUs (pp x dp) | off ms | fifo | priority | wire | gate | trirace | ideal | trirace, no QoS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for cluster in pcie-2nic one-gpu-nodes; do
  for model in bert-large gpt2-xl; do
    for schedule in 2bw 1f1b; do
      for shape in "4 2" "4 4" "8 4"; do
        read -r pp dp <<<"$shape"
        gpus=$((pp * dp))
        if [ $cluster = pcie-2nic ]; then
          flags=(--cluster pcie-2nic --hosts $(((gpus + 7) / 8)) --ranks-per-host $((gpus < 8 ? gpus : 8)))
        else
          flags=(--cluster dgx-h100 --hosts $gpus --ranks-per-host 1 --gbps 100)
        fi
        "$trirace" sim "${flags[@]}" --model $model --pp $pp --dp $dp --order pp-inner --schedule $schedule \
          --microbatches "$m" --micro-batch-size "$b" --modes off,fifo,priority,wire,gate,trirace --qos fabric \
          --json >"$out"
        "$trirace" sim "${flags[@]}" --model $model --pp $pp --dp $dp --order pp-inner --schedule $schedule \
          --microbatches "$m" --micro-batch-size "$b" --modes off,trirace --qos none --json >"$out.none"
        python3 - "$cluster" "$model" "$schedule" "$gpus ($pp x $dp)" "$out" "$out.none" <<'PY'
import json, sys
cluster, model, schedule, shape, path, path_none = sys.argv[1:7]
d = json.load(open(path))
m = d["modes"]
off = m["off"]["iteration_ms"]
cells = ["%.3fx" % m[k]["speedup"] for k in ("fifo", "priority", "wire", "gate", "trirace")]
none = json.load(open(path_none))["modes"]["trirace"]["speedup"]
print("| %s | %s | %s | %s | %.1f | %s | %.3fx | %.3fx |" % (cluster, model, schedule, shape, off, " | ".join(cells),
                                                           off / d["ideal_ms"], none))
PY
      done
    done
  done
done

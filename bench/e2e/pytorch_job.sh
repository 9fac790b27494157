#!/usr/bin/env bash
# pytorch_job.sh: one rank of the PyTorch presets (run_e2e.sh --preset
# pytorch | pytorch-sparse | pytorch-2bw): examples/pytorch/hybrid_train.py
# on hostccl's torch.distributed backend, with the torchrun variables that
# `testbed.sh run` (or launch.sh) sets.
#
#   pytorch_job.sh --build DIR --preset P [-- extra hybrid_train.py flags]
#
# The presets: a small GPT, 2 pipeline stages x WORLD_SIZE/2 replicas (rank r
# is stage r / replicas: with 2 ranks per host, stage 0 on the first half of
# the hosts), DDP per stage, 1F1B; sized so that the shaped links, not the
# 2 cores of the test machine, set the pace: few tokens per step (little
# compute) and a wide model (many gradient bytes).
#   pytorch         1F1B, DDP's bucketed all-reduce beside the activations
#   pytorch-sparse  + the row-sharded embedding (all-gather, all-to-all)
#   pytorch-2bw     PipeDream-2BW's update: a step's all-reduce overlaps the next step
# The interpreter: TRIRACE_TORCH_PYTHON, else the first python3 with torch
# (tests/python/torch_python.sh). Exit status: the script's.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "pytorch_job: $*" >&2; exit 2; }

build="" preset=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:-}; shift 2 ;;
    --preset) preset=${2:-}; shift 2 ;;
    --) shift; break ;;
    *) die "unknown flag '$1' (usage: pytorch_job.sh --build DIR --preset P [-- flags])" ;;
  esac
done
[ -n "$build" ] || die "--build DIR is required"
base=(--backend hostccl --stages 2 --layers 4 --hidden 384 --heads 4 --seq 2 --vocab 256
      --micro-batches 4 --micro-batch-size 1 --steps 10 --warmup-steps 2)
case $preset in
  pytorch) args=("${base[@]}") ;;
  pytorch-sparse) args=("${base[@]}" --sparse-embedding) ;;
  pytorch-2bw) args=("${base[@]}" --schedule 2bw) ;;
  *) die "--preset '$preset': expected pytorch, pytorch-sparse or pytorch-2bw" ;;
esac
py=${TRIRACE_TORCH_PYTHON:-}
[ -n "$py" ] || py=$("$root/tests/python/torch_python.sh") || exit 1
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export TRIRACE_HOSTCCL_LIBRARY=${TRIRACE_HOSTCCL_LIBRARY:-$build/hostccl/lib/libnccl.so.2}
exec "$py" "$root/examples/pytorch/hybrid_train.py" "${args[@]}" "$@"

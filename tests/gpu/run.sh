#!/usr/bin/env bash
# GPU-machine check of the gated launch with the CUDA device backend.
#
#   tests/gpu/run.sh [build-dir] [libnccl.so.2]
#
# Builds (if needed) and runs gated_allreduce: a single-rank job that runs
# AllReduces behind cuStreamWaitValue32 gates on host-mapped memory, checks
# that a closed gate holds the op and the user stream behind it, that the
# engine (trirace policy) releases every chunk of a split 64 MiB AllReduce
# and sees each complete through event polling, and that the results are
# right. Prints one PASS/FAIL line per check; exit status 0 when all pass.
#
# Needs: an NVIDIA GPU with its driver (libcuda.so.1) and a real libnccl.so.2
# (found by the loader, or given as the second argument). Nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-gpu}
nccl=${2:-libnccl.so.2}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU here (nvidia-smi finds none)"
  exit 0
fi
nvidia-smi -L
if [ ! -x "$build/bin/gated_allreduce" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DTRIRACE_MODULES=scheduler -DTRIRACE_BUILD_BENCHMARKS=OFF >/dev/null
  ninja -C "$build" gated_allreduce
fi
exec timeout 120 "$build/bin/gated_allreduce" "$nccl"

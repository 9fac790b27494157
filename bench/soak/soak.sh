#!/usr/bin/env bash
# soak.sh: the full soak of issue #41 (docs/reliability.md, "Soak").
#
#   bench/soak/soak.sh [BUILD_DIR] [SOAK_RANKS_ARGS...]
#
# Runs 10^6 NCCL ops over 1000 communicators (created, used and destroyed
# over the run, at most 3 alive at once) on 2 rank processes, with
# libtrirace.so preloaded over hostccl in schedule mode with the trirace
# policy, every result checked, and prints one table per rank (RSS, fds,
# threads, shared memory, the trace buffer, sampled 20 times) and a verdict
# per column: bounded or not after the first 10% of the run. Arguments after
# BUILD_DIR (default: build) go to soak_ranks and override its defaults,
# e.g. `bench/soak/soak.sh build --ops 100000 --comms 100` (the ctest's
# size) or `--keep` to keep the traces and logs; `soak_ranks --help` lists
# them all. Other TRIRACE_* variables in the environment reach the ranks.
#
# It builds nothing: build soak_ranks, libtrirace.so and hostccl first
# (cmake --build BUILD_DIR --target soak_ranks). About 2 minutes on 2
# cores; the exit status is 0 when every column stays bounded, every result
# is right and no rank failed or hung, else 1.
set -euo pipefail

build=${1:-build}
if [ $# -gt 0 ]; then shift; fi
soak=$build/bin/soak_ranks
shim=$build/lib/libtrirace.so
nccl=$build/hostccl/lib/libnccl.so.2
for f in "$soak" "$shim" "$nccl"; do
  if [ ! -e "$f" ]; then
    echo "soak.sh: $f is missing: build it first (cmake --build $build --target soak_ranks)" >&2
    exit 2
  fi
done
exec "$soak" --shim "$shim" --nccl "$nccl" --ops 1000000 --comms 1000 "$@"

#!/usr/bin/env bash
# The main job: builds what the demo needs (not the test suite), shows
# TriRace's version and configuration, then runs `trirace demo`: the
# hybrid-parallel example under every mode and policy (on the
# network-namespace test bed as root, on loopback otherwise).
#   scripts/run.sh [--build-only] [demo flags...]
# scripts/test.sh later builds the rest in the same folder, reusing all of it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
# The command, the shim, the net plugin, hostccl (the example's NCCL), the
# example and the simulator's ideal (e2e_bound).
TRIRACE_BUILD_TARGETS="trirace trirace_shim nccl_net_trirace hostccl hybrid_parallel e2e_bound" \
  "$root/scripts/build.sh" >&2
if [ "${1:-}" = --build-only ]; then exit 0; fi
"$build_dir/bin/trirace" version
echo
"$build_dir/bin/trirace" env
echo
"$build_dir/bin/trirace" demo "$@"

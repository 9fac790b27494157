#!/usr/bin/env bash
# Configures (once) and builds TriRace into ${TRIRACE_BUILD_DIR:-build}.
# Extra arguments go to the CMake configure step, e.g. -DTRIRACE_SANITIZE=address.
# TRIRACE_BUILD_TARGETS (space-separated) builds only those targets.
#
# scripts/run.sh and scripts/test.sh both build through here with the same
# configure flags, so test.sh reuses every object run.sh built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
"$root/scripts/setup-deps.sh"
"$root/scripts/fetch-sources.sh"
# Line tables only (-g1): backtraces and sanitizer reports keep file:line,
# and the build is about a quarter shorter than with full debug info.
g1=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
if [ ! -f "$build_dir/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DTRIRACE_WERROR=ON "${g1[@]}" "$@"
fi
targets=()
for t in ${TRIRACE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"

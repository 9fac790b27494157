#!/usr/bin/env bash
# Configures (once) and builds TriRace into ${TRIRACE_BUILD_DIR:-build}.
# Extra arguments go to the CMake configure step, e.g. -DTRIRACE_SANITIZE=address.
# TRIRACE_BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
"$root/scripts/setup-deps.sh"
if [ ! -f "$build_dir/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DTRIRACE_WERROR=ON "$@"
fi
targets=()
for t in ${TRIRACE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"

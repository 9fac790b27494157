#!/usr/bin/env bash
# Builds everything and runs the whole test suite with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" "$@"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600

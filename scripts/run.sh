#!/usr/bin/env bash
# The main job: builds TriRace and shows what it is and how it is configured.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" >&2
"$build_dir/bin/trirace" version
echo
"$build_dir/bin/trirace" env

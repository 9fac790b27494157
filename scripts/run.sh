#!/usr/bin/env bash
# The main job: builds TriRace, shows its version and configuration, then
# runs `trirace demo`: the hybrid-parallel example under every mode and
# policy (on the network-namespace test bed as root, on loopback otherwise).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TRIRACE_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" >&2
"$build_dir/bin/trirace" version
echo
"$build_dir/bin/trirace" env
echo
"$build_dir/bin/trirace" demo "$@"

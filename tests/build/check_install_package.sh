#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the .deb; checks that
# the command and headers are installed and the package lists its runtime
# dependencies.
set -euo pipefail
build_dir=$1
cmake=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/trirace-install-XXXXXX")
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build_dir" --prefix "$work/prefix" >/dev/null
for f in bin/trirace include/trirace/trirace.h; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed" >&2; exit 1; }
done
"$work/prefix/bin/trirace" version

cpack_bin="$(dirname "$cmake")/cpack"
(cd "$work" && "$cpack_bin" -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/pkg" >/dev/null)
deb=$(ls "$work"/pkg/*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for dep in libabsl libhwloc libibverbs; do
  grep -q "$dep" <<<"$depends" || { echo "FAIL: Depends lacks $dep" >&2; exit 1; }
done
contents=$(dpkg-deb -c "$deb")
grep -q 'bin/trirace$' <<<"$contents" || { echo "FAIL: trirace missing from the .deb" >&2; exit 1; }
echo "ok: $(basename "$deb")"

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
# Every library the build produced is installed, and `trirace run` finds the
# shim and the plugin in the prefix.
for lib in libtrirace.so libnccl-net-trirace.so; do
  if [ -e "$build_dir/lib/$lib" ]; then
    found=$(find "$work/prefix" -name "$lib" | head -n 1)
    [ -n "$found" ] || { echo "FAIL: $lib built but not installed" >&2; exit 1; }
  fi
done
if [ -e "$build_dir/hostccl/lib/libnccl.so.2" ]; then
  find "$work/prefix" -path '*hostccl/libnccl.so.2' | grep -q . || { echo "FAIL: hostccl not installed" >&2; exit 1; }
fi
# The Python package is installed beside the libraries and finds the
# installed hostccl by itself (nothing set, no build tree in reach).
pkg=$(find "$work/prefix" -path '*dist-packages/trirace/__init__.py' | head -n 1)
[ -n "$pkg" ] || { echo "FAIL: the trirace Python package is not installed" >&2; exit 1; }
if [ -e "$build_dir/hostccl/lib/libnccl.so.2" ] && command -v python3 >/dev/null; then
  found=$(cd / && env -u TRIRACE_HOSTCCL_LIBRARY PATH=/usr/bin:/bin PYTHONPATH="$(dirname "$(dirname "$pkg")")" \
          python3 -c 'from trirace import _nccl; print(_nccl.find_library())')
  case "$found" in
    "$work/prefix/"*hostccl/libnccl.so.2) ;;
    *) echo "FAIL: the installed package found hostccl at '$found', not in the prefix" >&2; exit 1 ;;
  esac
fi
if [ -e "$build_dir/lib/libtrirace.so" ]; then
  run_env=$(env -u NCCL_NET_PLUGIN LD_PRELOAD= "$work/prefix/bin/trirace" run -- env)
  grep -q "^LD_PRELOAD=$work/prefix/.*libtrirace.so" <<<"$run_env" || { echo "FAIL: trirace run does not preload the installed shim" >&2; exit 1; }
fi

cpack_bin="$(dirname "$cmake")/cpack"
(cd "$work" && "$cpack_bin" -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/pkg" >/dev/null)
deb=$(ls "$work"/pkg/*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for dep in libabsl libhwloc libibverbs libtinyxml2; do
  grep -q "$dep" <<<"$depends" || { echo "FAIL: Depends lacks $dep" >&2; exit 1; }
done
contents=$(dpkg-deb -c "$deb")
grep -q 'bin/trirace$' <<<"$contents" || { echo "FAIL: trirace missing from the .deb" >&2; exit 1; }
echo "ok: $(basename "$deb")"

#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the .deb and the
# relocatable .tar.gz; checks that the command and headers are installed, that
# the prefix works moved elsewhere with an empty environment, and that the
# package lists its runtime dependencies.
#   check_install_package.sh <build dir> <cmake> [ON|OFF: TRIRACE_BUNDLED_DEPS]
set -euo pipefail
build_dir=$1
cmake=$2
bundled=${3:-ON}  # TRIRACE_BUNDLED_DEPS of the build
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
  found=$(cd / && env -u TRIRACE_HOSTCCL_LIBRARY -u TRIRACE_BUILD_DIR PATH=/usr/bin:/bin PYTHONPATH="$(dirname "$(dirname "$pkg")")" \
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

# Self-contained (TRIRACE_BUNDLED_DEPS=ON): the prefix copied to a fresh
# folder works with nothing set: the shim preloads without a loader error, and
# `trirace doctor` finds it loadable and schedule mode possible over the
# installed hostccl.
if [ "$bundled" = ON ] && [ -e "$build_dir/lib/libtrirace.so" ]; then
  moved="$work/elsewhere"
  cp -a "$work/prefix" "$moved"
  out=$(cd / && env -i PATH=/usr/bin:/bin LD_PRELOAD="$moved/lib/libtrirace.so" /bin/true 2>&1)
  [ -z "$out" ] || { echo "FAIL: preloading the moved shim with an empty environment: $out" >&2; exit 1; }
  if [ -e "$moved/lib/hostccl/libnccl.so.2" ]; then
    doctor=$(cd / && env -i PATH=/usr/bin:/bin TRIRACE_MODE=schedule \
             TRIRACE_NCCL_LIBRARY="$moved/lib/hostccl/libnccl.so.2" "$moved/bin/trirace" doctor) || {
      echo "$doctor" >&2; echo "FAIL: trirace doctor in the moved prefix says schedule mode cannot run" >&2; exit 1; }
    grep -q "ok   shim       $moved/lib/libtrirace.so loads" <<<"$doctor" || {
      echo "$doctor" >&2; echo "FAIL: the doctor did not load the moved shim" >&2; exit 1; }
    echo "ok: the moved prefix preloads and schedules with an empty environment"
  fi
fi

cpack_bin="$(dirname "$cmake")/cpack"
(cd "$work" && "$cpack_bin" -G "DEB;TGZ" --config "$build_dir/CPackConfig.cmake" -B "$work/pkg" >/dev/null)
deb=$(ls "$work"/pkg/*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
expected=(libhwloc)
unexpected=()
if [ "$bundled" = ON ]; then unexpected=(libabsl libtinyxml2); else expected+=(libabsl libtinyxml2); fi
for dep in "${expected[@]}"; do
  grep -q "$dep" <<<"$depends" || { echo "FAIL: Depends lacks $dep" >&2; exit 1; }
done
for dep in "${unexpected[@]}"; do
  if grep -q "$dep" <<<"$depends"; then echo "FAIL: Depends lists $dep, which is linked statically" >&2; exit 1; fi
done
contents=$(dpkg-deb -c "$deb")
grep -q 'bin/trirace$' <<<"$contents" || { echo "FAIL: trirace missing from the .deb" >&2; exit 1; }
echo "ok: $(basename "$deb")"
# The relocatable tarball: the install tree under one top folder.
tgz=$(ls "$work"/pkg/trirace-*-linux-x86_64.tar.gz)
listing=$(tar -tzf "$tgz")
grep -q '^trirace-[^/]*-linux-x86_64/bin/trirace$' <<<"$listing" || {
  echo "FAIL: $(basename "$tgz") lacks bin/trirace under its top folder" >&2; exit 1; }
echo "ok: $(basename "$tgz")"

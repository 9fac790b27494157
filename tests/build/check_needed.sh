#!/usr/bin/env bash
# What the built libraries need from the machine they run on.
#   check_needed.sh <build dir> [<cmake> ON]
# 1. No shared library under the build tree lists libcudart, libcuda or
#    libnccl as NEEDED. hostccl's own libnccl.so.2 is checked like the rest:
#    it must not pull in another NCCL or CUDA either.
# 2. With a cmake and ON (TRIRACE_BUNDLED_DEPS): every installed library and
#    program needs only the C/C++ runtime. The one exception is
#    libtrirace-topo-hwloc.so, the optional hwloc backend, which may need
#    libhwloc: it is loaded with dlopen only where hwloc is installed.
#    Prints the highest GLIBC_ symbol version they reference.
set -euo pipefail
build_dir=$1
cmake=${2:-}
bundled=${3:-OFF}
mapfile -t libs < <(find "$build_dir" -name '*.so*' -type f -not -path '*/_CPack_Packages/*' -not -path '*/CMakeFiles/*' | sort)
if [ ${#libs[@]} -eq 0 ]; then
  echo "no shared libraries found under $build_dir" >&2
  exit 1
fi
bad=0
for lib in "${libs[@]}"; do
  if readelf -d "$lib" | grep -E 'NEEDED.*\[(libcudart|libcuda|libnccl)[^]]*\]'; then
    echo "FAIL: $lib needs CUDA or NCCL at link time" >&2
    bad=1
  fi
done
[ $bad -eq 0 ] && echo "ok: ${#libs[@]} libraries, none needs CUDA or NCCL"
[ -n "$cmake" ] && [ "$bundled" = ON ] || exit $bad

work=$(mktemp -d "${TMPDIR:-/tmp}/trirace-needed-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build_dir" --prefix "$work" >/dev/null
runtime='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2)$'
mapfile -t installed < <(find "$work" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec sh -c \
  'head -c 4 "$1" | grep -q "ELF" && echo "$1"' _ {} \; | sort)
[ ${#installed[@]} -gt 0 ] || { echo "FAIL: nothing installed" >&2; exit 1; }
for f in "${installed[@]}"; do
  allowed=$runtime
  [ "$(basename "$f")" = libtrirace-topo-hwloc.so ] && allowed="${runtime%)\$}|libhwloc\.so\.[0-9]+)\$"
  needed=$(readelf -d "$f" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
  extra=$(grep -Ev "$allowed" <<<"$needed" || true)
  if [ -n "$extra" ]; then
    echo "FAIL: ${f#"$work"/} needs $(tr '\n' ' ' <<<"$extra")(only the C/C++ runtime is allowed)" >&2
    bad=1
  else
    echo "ok: ${f#"$work"/}: $(tr '\n' ' ' <<<"$needed")"
  fi
done
glibc=$(for f in "${installed[@]}"; do readelf -V --wide "$f"; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
echo "highest glibc symbol version referenced: $glibc"
exit $bad

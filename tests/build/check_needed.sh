#!/usr/bin/env bash
# Fails if any shared library under the build tree lists libcudart, libcuda
# or libnccl as NEEDED. hostccl's own libnccl.so.2 is checked like the rest:
# it must not pull in another NCCL or CUDA either.
set -euo pipefail
build_dir=$1
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
  else
    echo "ok: $lib"
  fi
done
exit $bad

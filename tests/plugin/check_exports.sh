#!/bin/sh
# Checks that a net plugin library exports the NCCL table symbols and
# nothing else of ours: `nm -D --defined-only` must list exactly these.
set -eu
lib="$1"
expected="ncclNetPlugin_v10
ncclNetPlugin_v11
ncclNetPlugin_v8
ncclNetPlugin_v9"
actual=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
if [ "$actual" != "$expected" ]; then
  echo "unexpected exported symbols in $lib:" >&2
  echo "$actual" >&2
  echo "expected:" >&2
  echo "$expected" >&2
  exit 1
fi
for required in ncclNetPlugin_v11 ncclNetPlugin_v10 ncclNetPlugin_v9; do
  echo "$actual" | grep -qx "$required" || { echo "missing $required" >&2; exit 1; }
done
echo "exports OK: $(echo "$actual" | tr '\n' ' ')"

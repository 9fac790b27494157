#!/usr/bin/env bash
# Proves that common/ and scheduler/ (and the trirace command, always built)
# need neither CUDA nor NCCL headers: configures a fresh build of only those
# modules with both packages made unfindable, builds it, and reads Ninja's
# dependency log to check that no object included a CUDA or NCCL header.
#   check_without_nccl.sh <source dir> <cmake> <scratch build dir>
set -euo pipefail
src=$1
cmake=$2
out=$3
rm -rf "$out"
trap 'rm -rf "$out"' EXIT

env -u CUDA_HOME -u CUDA_PATH -u NCCL_HOME "$cmake" -S "$src" -B "$out" -G Ninja -DTRIRACE_WERROR=ON \
  -DTRIRACE_MODULES=scheduler -DTRIRACE_BUILD_BENCHMARKS=OFF -DTRIRACE_BUNDLED_DEPS=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG=-O0 -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=ON >"$out.configure.log" 2>&1 || {
  cat "$out.configure.log" >&2
  echo "FAIL: configure of common;scheduler without CUDA and NCCL failed" >&2
  exit 1
}
rm -f "$out.configure.log"
# The libraries and the command only: their tests prove nothing more about
# headers and would double the time of this check.
"$cmake" --build "$out" -j "$(nproc)" --target trirace_common trirace_scheduler trirace

# Every header each object was compiled against, as the compiler reported it.
headers=$(ninja -C "$out" -t deps | grep -E '^ +/' | sort -u)
if grep -E '/(nccl|nccl_net|cuda|cuda_runtime|cuda_runtime_api)\.h$' <<<"$headers"; then
  echo "FAIL: the headers above were included by common/, scheduler/ or the trirace command" >&2
  exit 1
fi
echo "ok: $(wc -l <<<"$headers") headers, none from CUDA or NCCL"

#!/usr/bin/env bash
# Configures (once) and builds the sanitizer trees that scripts/test.sh and
# scripts/fuzz.sh run, with clang and Debian's shared libraries where that
# loses nothing:
#   sanitizer-build.sh address [target...]
#       ${TRIRACE_BUILD_DIR:-build}-asan: every module, AddressSanitizer +
#       UndefinedBehaviorSanitizer, the lock annotations checked
#       (-Wthread-safety, as errors) and the libFuzzer targets of tests/fuzz.
#       Debian's Abseil, uninstrumented: ASan needs nothing of it.
#   sanitizer-build.sh thread [target...]
#       ${TRIRACE_BUILD_DIR:-build}-tsan: ThreadSanitizer over the modules with
#       threads of their own (scheduler, hostccl, the shim's gated launcher),
#       with the bundled Abseil built instrumented, so that TSan sees every
#       absl::Mutex (an uninstrumented Abseil would make every guarded access
#       look like a race).
# -O0 with line tables: a third less build time than -O1, and reports keep
# file:line. No target: everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:?usage: sanitizer-build.sh address|thread [target...]}
shift
base=${TRIRACE_BUILD_DIR:-$root/build}
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRIRACE_BUILD_BENCHMARKS=OFF
       -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -gline-tables-only"
       -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -gline-tables-only")
case $kind in
  address)
    dir="$base-asan"
    flags+=(-DTRIRACE_SANITIZE=address,undefined -DTRIRACE_THREAD_SAFETY=ON -DTRIRACE_FUZZ=ON
            -DTRIRACE_BUNDLED_DEPS=OFF) ;;
  thread)
    dir="$base-tsan"
    flags+=(-DTRIRACE_SANITIZE=thread "-DTRIRACE_MODULES=scheduler;plugin;hostccl;topology;interpose"
            -DTRIRACE_BUNDLED_DEPS=ON) ;;
  *) echo "sanitizer-build.sh: '$kind': expected address or thread" >&2; exit 2 ;;
esac
"$root/scripts/setup-deps.sh"
"$root/scripts/fetch-sources.sh"
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$dir" -G Ninja -DTRIRACE_WERROR=ON "${flags[@]}"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"

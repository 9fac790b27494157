#!/usr/bin/env bash
# Installs the Debian packages TriRace builds and tests with, if any is
# missing. Idempotent: apt-get update runs only when something must be
# installed. Needs root (or sudo) only in that case.
#   scripts/setup-deps.sh               what building and every test need
#   scripts/setup-deps.sh --build-only  what building the libraries and the
#                                       command needs (a cluster node; configure
#                                       with -DTRIRACE_BUILD_TESTS=OFF
#                                       -DTRIRACE_BUILD_BENCHMARKS=OFF)
set -euo pipefail

build_packages=(
  cmake ninja-build g++ pkg-config git dpkg-dev
  libabsl-dev libhwloc-dev libibverbs-dev nlohmann-json3-dev libcli11-dev libtinyxml2-dev
)
test_packages=(
  clang libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 iputils-ping nftables python3-matplotlib graphviz
  python3-torch  # Debian's PyTorch (for /usr/bin/python3): tests/python, examples/pytorch
  python3-prometheus-client  # tests/python: TRIRACE_METRICS_FILE read with the Prometheus parser
)
case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  --build-only) packages=("${build_packages[@]}") ;;
  *) echo "setup-deps: unknown argument '$1', expected nothing or --build-only" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

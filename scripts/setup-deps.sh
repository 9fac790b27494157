#!/usr/bin/env bash
# Installs the Debian packages TriRace builds and tests with, if any is
# missing. Idempotent: apt-get update runs only when something must be
# installed. Needs root (or sudo) only in that case.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang pkg-config git
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libhwloc-dev libibverbs-dev nlohmann-json3-dev libcli11-dev libtinyxml2-dev
  dpkg-dev iproute2 iputils-ping nftables python3-matplotlib graphviz
  python3-torch  # Debian's PyTorch (for /usr/bin/python3): tests/python, examples/pytorch
  python3-prometheus-client  # tests/python: TRIRACE_METRICS_FILE read with the Prometheus parser
)

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

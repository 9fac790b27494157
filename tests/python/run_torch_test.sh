#!/usr/bin/env bash
# Runs one unittest class of a tests/python test file with a torch-capable
# interpreter; exits 77 (ctest's skip) with the reason when there is none.
#   run_torch_test.sh test_pytorch.py TestDdp
set -u
here=$(cd "$(dirname "$0")" && pwd)
if ! py=$("$here/torch_python.sh"); then
  echo "SKIPPED: torch is not installed for any python3 here" >&2
  exit 77
fi
echo "python with torch: $py" >&2
cd "$here" && exec "$py" -m unittest -v "${1%.py}.$2"

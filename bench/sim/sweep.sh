#!/usr/bin/env bash
# sweep.sh: the compute : communication sweep (sweep.py) with a python3
# that has matplotlib, for the picture docs/simulation.md shows:
#
#   bench/sim/sweep.sh [sweep.py flags]     e.g. --out docs/images/sim-sweep.png
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=python3
# The Debian python3 first: python3-matplotlib is installed for it.
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
exec "$py" "$here/sweep.py" "$@"

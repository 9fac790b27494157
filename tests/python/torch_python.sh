#!/usr/bin/env bash
# Prints the first Python interpreter that can import torch: each python3 on
# PATH in order, then /usr/bin/python3 (Debian's, where python3-torch installs).
# Exits 1, saying so on stderr, when none can.
set -u
seen=" "
for py in $(type -a -p python3 2>/dev/null) /usr/bin/python3; do
  case "$seen" in *" $py "*) continue ;; esac
  seen="$seen$py "
  if [ -x "$py" ] && (cd / && "$py" -c 'import torch' >/dev/null 2>&1); then
    echo "$py"
    exit 0
  fi
done
echo "no python3 with torch (tried:$seen); install Debian's python3-torch (scripts/setup-deps.sh)" >&2
exit 1

#!/usr/bin/env bash
# wire_priority.sh: what class priority (TRIRACE_NET_CLASS_PRIORITY) buys on
# a shaped link, measured below NCCL: one 256 KiB message (a pipeline
# activation) from host 0 to host 1 while 4 bulk TCP streams (a gradient
# all-reduce) fill the same uplink (bulk from host 0) or host 1's downlink
# (bulk from host 2), on a 3-host test bed with the priority queues
# (--prio). Prints the probe's round trip for: the links idle; bulk and
# probe unmarked (no class priority); bulk marked DENSE and the probe P2P
# (what the plugin sets with class priority on).
#
#   bench/e2e/wire_priority.sh [--rate RATE] [--probe-bytes N] [--flows F] [--probes P]
#
# Needs root (network namespaces) and python3. Prints figures; never fails
# on timing. Exit codes: 0 done, 2 usage, 77 no root / no test bed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
testbed="$root/tools/testbed/testbed.sh"
probe="$here/wire_priority_probe.py"
rate=300mbit probe_bytes=262144 flows=4 probes=20
while [ $# -gt 0 ]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --probe-bytes) probe_bytes=$2; shift 2 ;;
    --flows) flows=$2; shift 2 ;;
    --probes) probes=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "wire_priority: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$probe_bytes" "$flows" "$probes"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "wire_priority: '$v': expected a positive integer" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "wire_priority: needs root (network namespaces); skipped" >&2; exit 77; }

out=$(mktemp -d "${TMPDIR:-/tmp}/trirace-wireprio.XXXXXX")
name=""
cleanup() { [ -n "$name" ] && "$testbed" down --name "$name" >/dev/null 2>&1; rm -rf "$out"; }
trap cleanup EXIT
line=$("$testbed" up --hosts 3 --rate "$rate" --prio --owner $$ 2>"$out/up.err") || {
  echo "wire_priority: no test bed: $(tail -n1 "$out/up.err")" >&2
  exit 77
}
name=$(sed -n 's/^TESTBED name=\([^ ]*\).*/\1/p' <<<"$line")
peer=$(sed -n 's/.* addrs=[^,]*,\([^,]*\),.*/\1/p' <<<"$line")
echo "test bed: $line"
echo "probe: $probe_bytes bytes + 1-byte reply, $probes times; bulk: $flows TCP streams"
printf '%-10s %-38s %s\n' "shared" "case (bulk mark / probe mark)" "probe round trip"
for where in uplink downlink; do
  for c in "idle:-1:6" "unmarked, no class priority:0:0" "class priority (DENSE / P2P):1:6"; do
    IFS=: read -r label bulk_prio probe_prio <<<"$c"
    [ "$where" = downlink ] && [ "$bulk_prio" = -1 ] && continue  # idle is idle
    "$testbed" run --name "$name" --timeout 60 --out "$out/run" -- \
      python3 "$probe" "$peer" "$where" "$flows" "$bulk_prio" "$probe_prio" "$probe_bytes" "$probes" \
      >/dev/null 2>&1
    result=$(sed -n 's/^probe_ms //p' "$out/run/rank-0.out" 2>/dev/null)
    printf '%-10s %-38s %s\n' "$where" "$label" "${result:-failed (see rank logs)} ms"
  done
done

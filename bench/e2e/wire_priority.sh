#!/usr/bin/env bash
# wire_priority.sh: what class priority (TRIRACE_NET_CLASS_PRIORITY) buys on
# a shaped link, measured below NCCL: one 256 KiB message (a pipeline
# activation) sent while 4 bulk TCP streams (a gradient all-reduce) fill the
# same uplink, on a 2-host test bed with the priority queue (--prio).
# Prints the probe's round trip for: the link idle; bulk and probe in one
# band (no class priority); bulk at the DENSE priority and the probe at the
# P2P priority (what the plugin sets with class priority on).
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
line=$("$testbed" up --hosts 2 --rate "$rate" --prio --owner $$ 2>"$out/up.err") || {
  echo "wire_priority: no test bed: $(tail -n1 "$out/up.err")" >&2
  exit 77
}
name=$(sed -n 's/^TESTBED name=\([^ ]*\).*/\1/p' <<<"$line")
peer=$(sed -n 's/.* addrs=[^,]*,\([^ ]*\).*/\1/p' <<<"$line")
echo "test bed: $line"
echo "probe: $probe_bytes bytes + 1-byte reply, $probes times; bulk: $flows TCP streams"
printf '%-44s %s\n' "case (bulk priority / probe priority)" "probe round trip"
for c in "idle:-1:6" "one band, no class priority:0:0" "class priority (DENSE 1 / P2P 6):1:6"; do
  IFS=: read -r label bulk_prio probe_prio <<<"$c"
  "$testbed" run --name "$name" --timeout 60 --out "$out/run" -- \
    python3 "$probe" "$peer" "$flows" "$bulk_prio" "$probe_prio" "$probe_bytes" "$probes" >/dev/null 2>&1
  result=$(sed -n 's/^probe_ms //p' "$out/run/rank-0.out" 2>/dev/null)
  printf '%-44s %s\n' "$label ($bulk_prio / $probe_prio)" "${result:-failed (see rank logs)} ms"
done

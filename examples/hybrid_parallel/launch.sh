#!/usr/bin/env bash
# launch.sh: runs N local processes of one command as the ranks of a job.
#
#   launch.sh -n 4 [--timeout 120] [--out DIR] [--env K=V]... -- hybrid_parallel --preset tiny
#
# Every rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and
# RENDEZVOUS_FILE (a fresh path in the output folder that rank 0 writes the
# NCCL unique id to; hybrid_parallel reads all of these). Rank r's stdout and
# stderr go to DIR/rank-r.out and DIR/rank-r.err; when every rank succeeded,
# rank 0's stdout is printed. When one rank fails, or the timeout passes, the
# others are killed.
#
# Exit codes: 0 all ranks exited 0; 1 a rank failed (its stderr's end is
# printed); 2 usage; 124 timeout. Without --out, a temporary folder is used
# and removed after a successful run (kept, and named, after a failure).
set -uo pipefail

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

nranks="" timeout=300 out="" keep_out=0
extra_env=()
while [ $# -gt 0 ]; do
  case $1 in
    -n | --nranks) [ $# -ge 2 ] || usage; nranks=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; keep_out=1; shift 2 ;;
    --env) [ $# -ge 2 ] || usage; extra_env+=("$2"); shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "launch.sh: unknown flag '$1'" >&2; usage ;;
  esac
done
[ $# -gt 0 ] || { echo "launch.sh: no command after --" >&2; usage; }
if ! [[ $nranks =~ ^[0-9]{1,4}$ ]] || [ "$nranks" -lt 1 ] || [ "$nranks" -gt 1024 ]; then
  echo "launch.sh: -n '$nranks': expected a number of ranks from 1 to 1024" >&2
  exit 2
fi
if ! [[ $timeout =~ ^[0-9]{1,9}$ ]] || [ "$timeout" -lt 1 ]; then
  echo "launch.sh: --timeout '$timeout': expected whole seconds, at least 1" >&2
  exit 2
fi
for kv in "${extra_env[@]}"; do
  [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "launch.sh: --env '$kv': expected NAME=VALUE" >&2; exit 2; }
done

if [ -n "$out" ]; then
  mkdir -p "$out" || { echo "launch.sh: --out '$out': cannot create it" >&2; exit 1; }
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/hybrid-launch.XXXXXX") || exit 1
fi
rendezvous="$out/rendezvous"
rm -f "$rendezvous"

pids=()
kill_all() {
  local pid tries alive
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; done
  for ((tries = 0; tries < 30; tries++)); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; done
}
timer=""
on_signal() {
  trap - INT TERM
  kill_all
  [ -n "$timer" ] && kill "$timer" 2>/dev/null
  exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

declare -A rank_of
for ((r = 0; r < nranks; r++)); do
  # setsid: each rank leads its own process group, so killing it kills
  # whatever it started too.
  setsid env RANK=$r WORLD_SIZE="$nranks" LOCAL_RANK=$r LOCAL_WORLD_SIZE="$nranks" \
    RENDEZVOUS_FILE="$rendezvous" "${extra_env[@]}" "$@" \
    >"$out/rank-$r.out" 2>"$out/rank-$r.err" </dev/null &
  pids+=($!)
  rank_of[$!]=$r
done

# The timer must not hold the caller's stdout/stderr open if it outlives us.
sleep "$timeout" >/dev/null 2>&1 &
timer=$!
live=("${pids[@]}")
status=ok failed_rank="" failed_rc=0
while [ ${#live[@]} -gt 0 ]; do
  done_pid=""
  wait -n -p done_pid "${live[@]}" "$timer"
  rc=$?
  [ -z "$done_pid" ] && continue
  if [ "$done_pid" = "$timer" ]; then
    status=timeout
    break
  fi
  still=()
  for p in "${live[@]}"; do [ "$p" != "$done_pid" ] && still+=("$p"); done
  live=("${still[@]}")
  if [ "$rc" -ne 0 ]; then
    status=failed failed_rank=${rank_of[$done_pid]} failed_rc=$rc
    break
  fi
done
kill "$timer" 2>/dev/null
wait "$timer" 2>/dev/null

case $status in
  ok)
    cat "$out/rank-0.out"
    [ $keep_out = 0 ] && rm -rf "$out"
    exit 0
    ;;
  timeout)
    kill_all
    echo "launch.sh: timed out after ${timeout}s: killed every rank (logs in $out)" >&2
    exit 124
    ;;
  failed)
    kill_all
    echo "launch.sh: rank $failed_rank exited with $failed_rc: killed the others (logs in $out); its stderr ends with:" >&2
    tail -n 20 "$out/rank-$failed_rank.err" >&2
    exit 1
    ;;
esac

# testbed_ranks.sh: the rank side of testbed.sh (`run` and `exec`):
# the environment every rank gets, starting ranks in their host's
# namespace, and supervising them (one failure or the timeout kills all).
# Sourced by testbed.sh; uses its globals (NAME, OUT, RANKS_PER_HOST, ...)
# and helpers (host_ns, host_addr, detect_ifname, ...). Not run on its own.
# shellcheck shell=bash disable=SC2034,SC2086,SC2153
# (the EX_* constants, HOSTS and the other globals come from testbed.sh)

# Rate of a test bed's uplink in Gbit/s, read back from its root qdisc.
testbed_gbps() {
  local ns=$1 dev=$2 rate bps
  rate=$(tc -n "$ns" qdisc show dev "$dev" | sed -n 's/.* rate \([0-9.]*[KMGT]\?bit\).*/\1/p' | head -1)
  case $rate in
    *Kbit) bps=$(awk -v r="${rate%Kbit}" 'BEGIN{print r * 1e3}') ;;
    *Mbit) bps=$(awk -v r="${rate%Mbit}" 'BEGIN{print r * 1e6}') ;;
    *Gbit) bps=$(awk -v r="${rate%Gbit}" 'BEGIN{print r * 1e9}') ;;
    *Tbit) bps=$(awk -v r="${rate%Tbit}" 'BEGIN{print r * 1e12}') ;;
    *bit) bps=${rate%bit} ;;
    *) bps=0 ;;
  esac
  awk -v b="$bps" 'BEGIN{printf "%g", b / 1e9}'
}

# rank_env NAME HOST_INDEX RANK LOCAL_RANK: the env lines of one rank, in
# ENVS. The rank's NIC is rail LOCAL_RANK % (the host's uplinks), as a GPU
# uses its nearest NIC; a --env given by the caller comes last and wins.
rank_env() {
  local name=$1 h=$2 r=$3 l=$4 ns uplinks=() rail dev
  ns=$(host_ns "$name" "$h")
  mapfile -t uplinks < <(host_uplinks "$ns")
  rail=$((l % ${#uplinks[@]}))
  dev=${uplinks[rail]}
  local IFS=,
  ENVS=(
    "RANK=$r" "WORLD_SIZE=$WORLD" "LOCAL_RANK=$l" "LOCAL_WORLD_SIZE=$RANKS_PER_HOST"
    "TRIRACE_HOST_ID=h$h" "TRIRACE_NET_IFNAME=$dev" "NCCL_SOCKET_IFNAME=$dev" "TRIRACE_NIC=$dev"
    "TRIRACE_NIC_GBPS=$GBPS" "TRIRACE_JOB_ID=$name-h$h"
    "MASTER_ADDR=$(host_addr "$name" 0)" "MASTER_PORT=$PORT" "RENDEZVOUS_FILE=$RENDEZVOUS"
    "TESTBED_NAME=$name" "TESTBED_HOST_ADDR=$(rail_addr "$h" "$rail")" "TESTBED_OUT=$OUT"
    "TESTBED_RAIL=$rail" "TESTBED_IFNAMES=${uplinks[*]}"
    ${SPEC_FILE:+"TRIRACE_TOPO_FILE=$SPEC_FILE"}
    "${EXTRA_ENV[@]}"
  )
}

check_env_flags() {
  local kv
  for kv in "${EXTRA_ENV[@]}"; do
    [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die $EX_USAGE "--env '$kv': expected NAME=VALUE"
  done
}

RANK_PIDS=()
TIMER_PID=""
kill_ranks() {
  local pid tries alive
  for pid in "${RANK_PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for ((tries = 0; tries < 30; tries++)); do
    alive=0
    for pid in "${RANK_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && return
    sleep 0.1
  done
  for pid in "${RANK_PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
}

verb_run() {
  parse_flags "$@"
  [ ${#CMD[@]} -gt 0 ] || die $EX_USAGE "run needs a command after --"
  int_in "$RANKS_PER_HOST" 1 64 ||
    die $EX_USAGE "--ranks-per-host '$RANKS_PER_HOST': expected an integer from 1 to 64"
  int_in "$TIMEOUT" 1 1000000000 ||
    die $EX_USAGE "--timeout '$TIMEOUT': expected whole seconds, at least 1"
  check_env_flags
  PRIVATE=""
  if [ -n "$NAME" ]; then
    check_name_given run
    require_root
    netns_exists "$(fabric_ns "$NAME")" || die $EX_FAIL "no test bed named '$NAME' (see 'testbed.sh list')"
  else
    check_shape_flags
    require_root
    require_tools
    NAME=$(new_name $$)
    PRIVATE=$NAME
  fi
  install_traps
  [ -n "$PRIVATE" ] && create_testbed "$NAME" "$HOSTS"

  local hosts=() h
  mapfile -t hosts < <(host_indexes "$NAME")
  [ ${#hosts[@]} -gt 0 ] || die $EX_FAIL "test bed '$NAME' has no hosts"
  WORLD=$((${#hosts[@]} * RANKS_PER_HOST))
  if [ -z "$OUT" ]; then
    OUT=$(mktemp -d "${TMPDIR:-/tmp}/testbed-run.XXXXXX") || die $EX_FAIL "cannot make an output folder"
  else
    mkdir -p "$OUT" || die $EX_FAIL "--out '$OUT': cannot create it"
  fi
  OUT=$(cd "$OUT" && pwd)
  RENDEZVOUS="$OUT/rendezvous"
  rm -f "$RENDEZVOUS"
  PORT=$((20000 + RANDOM % 20000))
  GBPS=$(testbed_gbps "$(host_ns "$NAME" "${hosts[0]}")" "$(detect_ifname "$(host_ns "$NAME" "${hosts[0]}")")")
  SPEC_FILE="$OUT/topology.json"
  write_spec "$NAME" >"$SPEC_FILE" || die $EX_FAIL "cannot write the test bed's spec to $SPEC_FILE"

  local r l pid rank_of_pid=() host_of_rank=()
  RANK_PIDS=()
  for h in "${hosts[@]}"; do
    for ((l = 0; l < RANKS_PER_HOST; l++)); do
      r=${#RANK_PIDS[@]}
      rank_env "$NAME" "$h" "$r" "$l"
      # setsid: each rank leads its own process group, so killing it kills
      # whatever it started too.
      setsid ip netns exec "$(host_ns "$NAME" "$h")" env "${ENVS[@]}" "${CMD[@]}" \
        >"$OUT/rank-$r.out" 2>"$OUT/rank-$r.err" </dev/null &
      pid=$!
      RANK_PIDS+=("$pid")
      rank_of_pid[pid]=$r
      host_of_rank[r]=$h
    done
  done

  # The timer must not hold the caller's stdout/stderr open if it outlives us.
  sleep "$TIMEOUT" >/dev/null 2>&1 &
  TIMER_PID=$!
  local timer=$TIMER_PID rc status=ok failed_rank="" failed_rc=0 remaining=$WORLD
  local exit_codes=() ended_ms=()
  local live=("${RANK_PIDS[@]}")
  # Polled rather than `wait -n PID...`, which once (bash 5.2) missed ranks
  # that had all exited and blocked until the timer fired. `wait PID` on a
  # child already gone returns its status.
  while true; do
    local still=() p
    for p in "${live[@]}"; do
      if kill -0 "$p" 2>/dev/null; then
        still+=("$p")
        continue
      fi
      wait "$p"
      rc=$?
      r=${rank_of_pid[p]}
      exit_codes[r]=$rc
      ended_ms[r]=$(date +%s%3N)
      remaining=$((remaining - 1))
      if [ "$rc" -ne 0 ] && [ "$status" = ok ]; then
        status=failed
        failed_rank=$r
        failed_rc=$rc
      fi
    done
    live=("${still[@]}")
    # A failure is reported as such even if the timer ran out meanwhile.
    { ((remaining > 0)) && { [ "$status" = ok ] || [ "$KEEP_GOING" = 1 ]; }; } || break
    if ! kill -0 "$timer" 2>/dev/null; then
      status=timeout
      break
    fi
    sleep 0.05
  done
  kill "$timer" 2>/dev/null
  wait "$timer" 2>/dev/null
  if [ "$status" != ok ]; then
    kill_ranks
    for pid in "${RANK_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  fi

  {
    echo -e "rank\thost\tpid\texit\tended_ms"
    for ((r = 0; r < WORLD; r++)); do
      echo -e "$r\th${host_of_rank[r]}\t${RANK_PIDS[r]}\t${exit_codes[r]:-killed}\t${ended_ms[r]:-}"
    done
  } >"$OUT/ranks.tsv"

  case $status in
    ok)
      echo "TESTBED-RUN status=ok name=$NAME ranks=$WORLD out=$OUT"
      [ -n "$PRIVATE" ] && [ "$KEEP" = 1 ] && print_testbed "$NAME"
      return 0
      ;;
    timeout)
      echo "TESTBED-RUN status=timeout name=$NAME ranks=$WORLD timeout_s=$TIMEOUT out=$OUT"
      log "timed out after ${TIMEOUT}s: killed every rank (logs in $OUT)"
      exit $EX_TIMEOUT
      ;;
    failed)
      echo "TESTBED-RUN status=failed name=$NAME ranks=$WORLD rank=$failed_rank exit=$failed_rc out=$OUT"
      log "rank $failed_rank exited with $failed_rc: killed the others; its stderr ends with:"
      tail -n 20 "$OUT/rank-$failed_rank.err" >&2
      exit $EX_FAIL
      ;;
  esac
}

verb_exec() {
  parse_flags "$@"
  check_name_given exec
  [ ${#CMD[@]} -gt 0 ] || die $EX_USAGE "exec needs a command after --"
  [[ $HOST_INDEX =~ ^[0-9]+$ ]] || die $EX_USAGE "--host '$HOST_INDEX': expected a host index"
  check_env_flags
  require_root
  local ns
  ns=$(host_ns "$NAME" "$HOST_INDEX")
  netns_exists "$ns" || die $EX_FAIL "test bed '$NAME' has no host $HOST_INDEX"
  WORLD=1 RANKS_PER_HOST=1 PORT=29500 OUT="${OUT:-}" RENDEZVOUS="${RENDEZVOUS:-}" SPEC_FILE=""
  GBPS=$(testbed_gbps "$ns" "$(detect_ifname "$ns")")
  rank_env "$NAME" "$HOST_INDEX" 0 0
  exec ip netns exec "$ns" env "${ENVS[@]}" "${CMD[@]}"
}

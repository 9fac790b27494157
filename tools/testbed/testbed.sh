#!/usr/bin/env bash
# testbed.sh: a multi-host test bed on one machine.
#
# Each "host" is a network namespace with one veth uplink (a NIC) per rail
# into that rail's Linux bridge; the bridges live in a "fabric" namespace.
# Both directions of every uplink are shaped with tc like a NIC (token
# bucket at --rate, optional netem --delay, optional priority queue that
# honours socket priority). Ranks of a job run inside their host's
# namespace with `ip netns exec`, each on the rail of its local rank.
#
# Addresses (10.213.<rail>.0/24) exist only inside the test bed's namespaces
# and are never routed outside them. In the namespace this script is started from
# nothing is touched beyond creating and deleting the named namespaces.
#
# Run `testbed.sh help` for the verbs and flags; docs/testbed.md has the
# details. Exit codes:
#   0   success
#   1   failure (a rank failed, a setup step failed)
#   2   usage error
#   77  not root
#   78  this kernel or iproute2 lacks something the test bed needs
#       (network namespaces, veth, bridge, a qdisc)
#   124 `run` timed out (every rank was killed)
#   130/143 interrupted by SIGINT/SIGTERM (everything this call made is removed)

set -uo pipefail

readonly EX_FAIL=1 EX_USAGE=2 EX_NOT_ROOT=77 EX_NO_SUPPORT=78 EX_TIMEOUT=124
readonly NAME_BASE=trtb
readonly SUBNET=10.213.0       # rail 0's /24, used inside the test bed only (rail k: 10.213.k)
readonly FIRST_OCTET=10        # host i is $SUBNET.$((FIRST_OCTET + i))
readonly MAX_HOSTS=200
readonly HOST_QUEUE_FRAMES=1000  # a host's transmit queue: Linux's default txqueuelen
# What one TCP socket of a host may have queued below it (TCP small queues,
# net.ipv4.tcp_limit_output_bytes): Linux's default of 4 MiB is sized for
# 100 Gbit/s NICs and lets one socket queue 100 ms at the test bed's rates.
readonly HOST_TSQ_BYTES=262144
# Whether a TCP connection idle for a retransmission timeout starts again
# from its initial window (net.ipv4.tcp_slow_start_after_idle). Off: a
# cluster fabric (RDMA, or TCP clusters tuned for NCCL) sends a pipeline's
# next activation at once, whatever the gap since the last.
readonly HOST_SLOW_START_AFTER_IDLE=0

usage() {
  cat <<'EOF'
usage: testbed.sh VERB [flags]

verbs
  up       create (or re-shape) a test bed; prints one "TESTBED ..." line
  spec     print the TriRace JSON spec of a test bed (docs/topology.md)
  run      run a command as R ranks per host, in a given or a private test bed
  exec     run one command in one host of a test bed, with the rank env
  info     describe a test bed (hosts, addresses, qdiscs)
  list     list test beds and whether their owner is alive
  down     remove one test bed (kills what still runs in it)
  cleanup  remove leftovers: test beds whose owner process is gone (default),
           or every namespace whose name starts with --prefix
  help     this text

shape flags (up, and run without --name)
  --hosts H            hosts (namespaces), 1..200 (default 2)
  --nics N             NICs per host, 1..8 (default 1): rail k is one more
                       bridge, each host's uplink k into it, 10.213.k.0/24
  --rate RATE          uplink rate in each direction, tc syntax with an
                       integer and a unit bit|kbit|mbit|gbit (default 1gbit)
  --delay D            one-way delay added on each link direction, e.g. 50us,
                       2ms; 0 = none (default 0). Needs the netem qdisc.
  --burst BYTES        token bucket size (default: 1 ms of --rate, >= 32768)
  --queue T            the switch port's buffer in front of each host, as
                       the longest queueing delay before drops, e.g. 20ms
                       (default); a host's own transmit queue is
                       Linux's default of 1000 frames
  --mtu BYTES          MTU of every link, 576..65535 (default 9000: jumbo
                       frames, as cluster fabrics use; at 1500 the kernel's
                       per-packet work, not the shaped rate, limits a small
                       machine)
  --prio               add a priority queue (pfifo_fast) under the rate limit
                       so socket priority picks one of three bands on the
                       host side and the DSCP on the fabric side (nftables)
  --ifname NAME        rail 0's uplink name inside each host (default tb0);
                       rail k's is NAME with its trailing number plus k
  --name NAME          test bed name ([a-z0-9-], e.g. trtb-1234-ab12); up:
                       default trtb-<owner pid>-<random>
  --owner PID          process whose exit makes the test bed a leftover for
                       `cleanup` (up: default the calling process)

run flags
  --name NAME          use this existing test bed (otherwise a private one is
                       made from the shape flags and removed at exit)
  --ranks-per-host R   ranks per host (default 1); rank = host * R + local
  --out DIR            where rank-<r>.out/.err and ranks.tsv go (made if
                       missing; default a new folder under ${TMPDIR:-/tmp})
  --timeout SEC        kill every rank after this many seconds (default 300)
  --env K=V            extra environment for every rank (repeatable)
  --keep               with a private test bed: leave it up (prints its name)
  --keep-going         a failed rank does not stop the others: each ends on
                       its own, or at --timeout (fault tests watch survivors)
  -- CMD [ARGS...]     the command every rank runs

exec flags: --name NAME --host I [--env K=V]... -- CMD [ARGS...]
spec flags: --name NAME
down flags: --name NAME
cleanup flags: [--prefix P | --name NAME]

environment of every rank (run, exec)
  RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE   the rank's place in the job
  TRIRACE_HOST_ID=h<i>        the host id TriRace's link model uses
  TRIRACE_NET_IFNAME, NCCL_SOCKET_IFNAME, TRIRACE_NIC = the rank's uplink:
                              rail LOCAL_RANK % --nics, as a GPU uses its
                              nearest NIC on a rail-optimised cluster
  TRIRACE_NIC_GBPS            the uplink's rate in Gbit/s
  TRIRACE_TOPO_FILE           (run) <out>/topology.json, the test bed's spec
  TESTBED_RAIL TESTBED_IFNAMES  the rank's rail, every rail's uplink (comma list)
  TRIRACE_JOB_ID=<name>-h<i>  one occupancy segment per host (hosts share /dev/shm)
  MASTER_ADDR MASTER_PORT     host 0's address and a port for a TCP rendezvous
  RENDEZVOUS_FILE             a fresh path on the shared file system that rank
                              0 may write a unique id to (run: in --out)
  TESTBED_NAME TESTBED_HOST_ADDR (on the rank's rail) TESTBED_OUT
EOF
}

log() { echo "testbed: $*" >&2; }
die() {
  local code=$1
  shift
  echo "testbed: $*" >&2
  exit "$code"
}

# ---- checks ---------------------------------------------------------------

require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    die $EX_NOT_ROOT "needs root (network namespaces, veth links and tc need CAP_SYS_ADMIN and" \
      "CAP_NET_ADMIN); run as root, e.g. with sudo (exit code $EX_NOT_ROOT)"
  fi
}

require_tools() {
  local t
  for t in ip tc; do
    command -v "$t" >/dev/null 2>&1 ||
      die $EX_NO_SUPPORT "'$t' not found: install the Debian package iproute2 (scripts/setup-deps.sh)"
  done
  local types
  types=$(ip link help 2>&1)
  for t in veth bridge; do
    grep -qw "$t" <<<"$types" ||
      die $EX_NO_SUPPORT "this 'ip' has no '$t' link type: install a current iproute2"
  done
}

# Runs a setup command; a failure of a command that probes a kernel feature
# exits with EX_NO_SUPPORT, naming the command and its error.
feature_step() {
  local what=$1
  shift
  local err
  if ! err=$("$@" 2>&1); then
    log "$what failed: '$*': ${err:-no message}"
    exit $EX_NO_SUPPORT
  fi
}
step() {
  local err
  if ! err=$("$@" 2>&1); then
    log "'$*' failed: ${err:-no message}"
    exit $EX_FAIL
  fi
}

# ---- names ----------------------------------------------------------------

valid_name() { [[ $1 =~ ^[a-z0-9][a-z0-9-]{0,47}$ ]]; }
fabric_ns() { echo "$1-fab"; }
host_ns() { echo "$1-h$2"; }
host_addr() { echo "$SUBNET.$((FIRST_OCTET + $2))"; }

all_netns() { ip netns list 2>/dev/null | awk '{print $1}'; }
netns_exists() { all_netns | grep -qxF -- "$1"; }

# Test bed names: every namespace called <name>-fab.
list_names() { all_netns | sed -n 's/^\(.*\)-fab$/\1/p' | sort -u; }

# Host indexes of a test bed, in order.
host_indexes() {
  local name=$1
  all_netns | while read -r ns; do
    if [[ $ns == "$name"-h* ]]; then
      local i=${ns#"$name"-h}
      [[ $i =~ ^[0-9]+$ ]] && echo "$i"
    fi
  done | sort -n
}

# The owner pid of a generated name (trtb-<pid>-<hex>), or empty.
owner_of() {
  if [[ $1 =~ ^${NAME_BASE}-([0-9]+)-[0-9a-f]+$ ]]; then echo "${BASH_REMATCH[1]}"; fi
}
owner_alive() {
  local pid
  pid=$(owner_of "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

new_name() {
  local owner=$1 rand
  rand=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  echo "$NAME_BASE-$owner-$rand"
}

# ---- rates ----------------------------------------------------------------

# Bits per second of a tc rate (integer + bit|kbit|mbit|gbit|tbit).
rate_bps() {
  if [[ ! $1 =~ ^([0-9]+)(bit|kbit|mbit|gbit|tbit)$ ]]; then
    return 1
  fi
  local n=${BASH_REMATCH[1]} mult
  case ${BASH_REMATCH[2]} in
    bit) mult=1 ;;
    kbit) mult=1000 ;;
    mbit) mult=1000000 ;;
    gbit) mult=1000000000 ;;
    tbit) mult=1000000000000 ;;
  esac
  echo $((n * mult))
}

# int_in VALUE MIN MAX: VALUE is a decimal integer in [MIN, MAX].
int_in() {
  [[ $1 =~ ^[0-9]{1,15}$ ]] || return 1
  local v=$((10#$1))
  ((v >= $2 && v <= $3))
}

valid_time() { [[ $1 == 0 || $1 =~ ^[0-9]+(us|ms|s)$ ]]; }

# time_us T: microseconds in a time that valid_time accepts.
time_us() {
  [[ $1 =~ ^([0-9]+)(us|ms|s)?$ ]] || return 1
  local n=$((10#${BASH_REMATCH[1]}))
  case ${BASH_REMATCH[2]} in
    ms) n=$((n * 1000)) ;;
    s) n=$((n * 1000000)) ;;
  esac
  echo "$n"
}

# ---- links ------------------------------------------------------------------

# Shaping, creating and removing test beds, rails and the JSON spec.
# shellcheck source=tools/testbed/testbed_links.sh
source "$(dirname "${BASH_SOURCE[0]}")/testbed_links.sh"

# ---- flags ----------------------------------------------------------------

HOSTS=2 NICS=1 RATE=1gbit DELAY=0 BURST="" QUEUE=20ms MTU=9000 PRIO=0 IFNAME=tb0 NAME="" OWNER=""
RANKS_PER_HOST=1 OUT="" TIMEOUT=300 KEEP=0 KEEP_GOING=0 HOST_INDEX="" PREFIX=""
EXTRA_ENV=()
CMD=()

need_value() { [ $# -ge 2 ] || die $EX_USAGE "$1 needs a value"; }

parse_flags() {
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) need_value "$@"; HOSTS=$2; shift 2 ;;
      --nics) need_value "$@"; NICS=$2; shift 2 ;;
      --rate) need_value "$@"; RATE=$2; shift 2 ;;
      --delay) need_value "$@"; DELAY=$2; shift 2 ;;
      --burst) need_value "$@"; BURST=$2; shift 2 ;;
      --queue) need_value "$@"; QUEUE=$2; shift 2 ;;
      --mtu) need_value "$@"; MTU=$2; shift 2 ;;
      --prio) PRIO=1; shift ;;
      --ifname) need_value "$@"; IFNAME=$2; shift 2 ;;
      --name) need_value "$@"; NAME=$2; shift 2 ;;
      --owner) need_value "$@"; OWNER=$2; shift 2 ;;
      --ranks-per-host) need_value "$@"; RANKS_PER_HOST=$2; shift 2 ;;
      --out) need_value "$@"; OUT=$2; shift 2 ;;
      --timeout) need_value "$@"; TIMEOUT=$2; shift 2 ;;
      --env) need_value "$@"; EXTRA_ENV+=("$2"); shift 2 ;;
      --keep) KEEP=1; shift ;;
      --keep-going) KEEP_GOING=1; shift ;;
      --host) need_value "$@"; HOST_INDEX=$2; shift 2 ;;
      --prefix) need_value "$@"; PREFIX=$2; shift 2 ;;
      --) shift; CMD=("$@"); return ;;
      *) die $EX_USAGE "unknown flag '$1' (see 'testbed.sh help')" ;;
    esac
  done
}

check_shape_flags() {
  int_in "$HOSTS" 1 $MAX_HOSTS ||
    die $EX_USAGE "--hosts '$HOSTS': expected an integer from 1 to $MAX_HOSTS"
  local bps
  bps=$(rate_bps "$RATE") ||
    die $EX_USAGE "--rate '$RATE': expected an integer and a unit bit, kbit, mbit, gbit or tbit (e.g. 1gbit)"
  ((bps > 0)) || die $EX_USAGE "--rate '$RATE': must be above 0"
  RATE_BPS=$bps
  valid_time "$DELAY" || die $EX_USAGE "--delay '$DELAY': expected 0 or an integer and us, ms or s (e.g. 50us)"
  [[ $DELAY =~ ^0+(us|ms|s)?$ ]] && DELAY=0
  { valid_time "$QUEUE" && [ "$QUEUE" != 0 ]; } ||
    die $EX_USAGE "--queue '$QUEUE': expected an integer and us, ms or s (e.g. 20ms)"
  if [ -z "$BURST" ]; then
    BURST=$((RATE_BPS / 8 / 1000))
    ((BURST < 32768)) && BURST=32768
  fi
  int_in "$MTU" 576 65535 || die $EX_USAGE "--mtu '$MTU': expected an integer from 576 to 65535"
  int_in "$BURST" 2048 1000000000000 ||
    die $EX_USAGE "--burst '$BURST': expected bytes, at least 2048"
  # tbf never passes a packet larger than its bucket.
  ((BURST >= MTU + 14)) || die $EX_USAGE "--burst '$BURST': must hold one frame of --mtu $MTU (at least $((MTU + 14)))"
  local queue_us
  queue_us=$(time_us "$QUEUE")
  QUEUE_FRAMES=$((RATE_BPS / 8 * queue_us / 1000000 / MTU))
  ((QUEUE_FRAMES < 2)) && QUEUE_FRAMES=2
  int_in "$NICS" 1 "$MAX_NICS" || die $EX_USAGE "--nics '$NICS': expected an integer from 1 to $MAX_NICS"
  NICS=$((10#$NICS))
  [[ $IFNAME =~ ^[a-zA-Z][a-zA-Z0-9_]{0,14}$ ]] ||
    die $EX_USAGE "--ifname '$IFNAME': expected 1 to 15 letters, digits or _ starting with a letter"
  [[ $(uplink_name $((NICS - 1))) =~ ^.{1,15}$ ]] ||
    die $EX_USAGE "--ifname '$IFNAME': rail $((NICS - 1))'s name $(uplink_name $((NICS - 1))) is longer than 15 characters"
}

check_name_given() {
  [ -n "$NAME" ] || die $EX_USAGE "$1 needs --name NAME (see 'testbed.sh list')"
  valid_name "$NAME" || die $EX_USAGE "--name '$NAME': expected 1 to 48 of [a-z0-9-], not starting with -"
}

# Rail 0's uplink name inside a test bed (whatever `up` was given).
detect_ifname() { host_uplinks "$1" | head -n 1; }

# ---- verbs ----------------------------------------------------------------

# run / exec: rank environment, launch and supervision.
# shellcheck source=tools/testbed/testbed_ranks.sh
source "$(dirname "${BASH_SOURCE[0]}")/testbed_ranks.sh"

on_signal() {
  local sig=$1 code=$2
  trap - INT TERM
  [ -n "$BUILDING" ] && destroy_testbed "$BUILDING"
  [ -n "${PRIVATE:-}" ] && [ "$KEEP" = 0 ] && destroy_testbed "$PRIVATE"
  kill_ranks 2>/dev/null
  [ -n "$TIMER_PID" ] && kill "$TIMER_PID" 2>/dev/null
  log "interrupted by SIG$sig: removed what this call made"
  exit "$code"
}
on_exit() {
  [ -n "$BUILDING" ] && destroy_testbed "$BUILDING"
  [ -n "${PRIVATE:-}" ] && [ "$KEEP" = 0 ] && destroy_testbed "$PRIVATE"
}
install_traps() {
  trap 'on_signal INT 130' INT
  trap 'on_signal TERM 143' TERM
  trap on_exit EXIT
}

print_testbed() {
  local name=$1 i addrs=()
  for i in $(host_indexes "$name"); do addrs+=("$(host_addr "$name" "$i")"); done
  local IFS=,
  echo "TESTBED name=$name hosts=${#addrs[@]} ifname=$IFNAME addrs=${addrs[*]} rate=$RATE delay=$DELAY prio=$PRIO mtu=$MTU nics=$NICS"
}

verb_up() {
  parse_flags "$@"
  check_shape_flags
  require_root
  require_tools
  [ -n "$OWNER" ] || OWNER=$PPID
  if [ -z "$NAME" ]; then NAME=$(new_name "$OWNER"); fi
  valid_name "$NAME" || die $EX_USAGE "--name '$NAME': expected 1 to 48 of [a-z0-9-], not starting with -"
  install_traps
  create_testbed "$NAME" "$HOSTS"
  print_testbed "$NAME"
}

verb_spec() {
  parse_flags "$@"
  check_name_given spec
  require_root
  netns_exists "$(fabric_ns "$NAME")" || die $EX_FAIL "no test bed named '$NAME'"
  write_spec "$NAME" || die $EX_FAIL "test bed '$NAME' has no hosts or no uplinks"
}

verb_down() {
  parse_flags "$@"
  check_name_given down
  require_root
  destroy_testbed "$NAME"
}

verb_cleanup() {
  parse_flags "$@"
  require_root
  local ns name removed=0
  if [ -n "$NAME" ]; then
    valid_name "$NAME" || die $EX_USAGE "--name '$NAME': not a test bed name"
    destroy_testbed "$NAME"
    echo "removed $NAME"
    return
  fi
  if [ -n "$PREFIX" ]; then
    [[ $PREFIX =~ ^[a-z0-9][a-z0-9-]*$ ]] || die $EX_USAGE "--prefix '$PREFIX': expected [a-z0-9-]"
    for ns in $(all_netns); do
      if [[ $ns == "$PREFIX"* ]]; then
        destroy_ns "$ns"
        echo "removed $ns"
        removed=$((removed + 1))
      fi
    done
  else
    # Leftovers: generated names whose owner is gone, and stray host
    # namespaces of such names whose fabric is already gone.
    for ns in $(all_netns); do
      name=$(sed -n "s/^\(${NAME_BASE}-[0-9]*-[0-9a-f]*\)-\(fab\|h[0-9]*\)$/\1/p" <<<"$ns")
      if [ -n "$name" ] && ! owner_alive "$name"; then
        destroy_ns "$ns"
        echo "removed $ns"
        removed=$((removed + 1))
      fi
    done
  fi
  log "cleanup: removed $removed namespace(s)"
}

verb_list() {
  local name state
  for name in $(list_names); do
    if [ -z "$(owner_of "$name")" ]; then
      state="named"
    elif owner_alive "$name"; then
      state="owner-alive"
    else
      state="leftover"
    fi
    echo "$name hosts=$(host_indexes "$name" | wc -l) $state"
  done
}

verb_info() {
  parse_flags "$@"
  check_name_given info
  netns_exists "$(fabric_ns "$NAME")" || die $EX_FAIL "no test bed named '$NAME'"
  local i k ns dev
  for i in $(host_indexes "$NAME"); do
    ns=$(host_ns "$NAME" "$i")
    k=0
    for dev in $(host_uplinks "$ns"); do
      echo "host $i rail $k namespace=$ns ifname=$dev addr=$(rail_addr "$i" "$k")"
      tc -n "$ns" qdisc show dev "$dev" | sed 's/^/  tx: /'
      tc -n "$(fabric_ns "$NAME")" qdisc show dev "$(fabric_port "$i" "$k")" | sed 's/^/  rx: /'
      k=$((k + 1))
    done
  done
}

main() {
  [ $# -ge 1 ] || { usage >&2; exit $EX_USAGE; }
  local verb=$1
  shift
  case $verb in
    up) verb_up "$@" ;;
    spec) verb_spec "$@" ;;
    run) verb_run "$@" ;;
    exec) verb_exec "$@" ;;
    info) verb_info "$@" ;;
    list) verb_list ;;
    down) verb_down "$@" ;;
    cleanup) verb_cleanup "$@" ;;
    help | -h | --help) usage ;;
    *) die $EX_USAGE "unknown verb '$verb' (see 'testbed.sh help')" ;;
  esac
}

main "$@"

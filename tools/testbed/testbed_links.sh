# testbed_links.sh: the link side of testbed.sh: rails, shaping, creating
# and removing a test bed, and the JSON spec that describes one.
# Sourced by testbed.sh; uses its globals (RATE, DELAY, MTU, PRIO, IFNAME,
# NICS, ...) and helpers (step, feature_step, host_ns, ...). Not run on its
# own.
# shellcheck shell=bash disable=SC2153,SC2034
# (RATE, MTU and the other globals come from testbed.sh; BUILDING is read there)

# ---- rails ------------------------------------------------------------------
#
# Rail k (0 <= k < NICS) is one bridge (tbbr<k>) in the fabric namespace and
# one uplink per host into it: inside host i the uplink is uplink_name k with
# the address 10.213.k.<10 + i>/24; on the fabric side it is p<i> on rail 0
# and p<i>r<k> on the others. Every host has an address on every rail, so a
# connection goes out through the rail of the address it is made to (the
# destination's subnet picks the route).

readonly MAX_NICS=8

# uplink_name K: rail K's uplink inside a host: --ifname for rail 0, then
# the same name with its trailing number plus K (tb0, tb1, ...; eth, eth1).
uplink_name() {
  local k=$1
  [ "$k" = 0 ] && { echo "$IFNAME"; return; }
  [[ $IFNAME =~ ^(.*[^0-9])([0-9]*)$ ]]
  local base=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]:-0}
  echo "$base$((10#$n + k))"
}
rail_addr() { echo "10.213.$2.$((FIRST_OCTET + $1))"; }  # rail_addr HOST RAIL
fabric_port() { if [ "$2" = 0 ]; then echo "p$1"; else echo "p$1r$2"; fi; }  # fabric_port HOST RAIL
rail_bridge() { echo "tbbr$1"; }

# The uplinks of a host namespace, rail 0 first, one per line (from their
# addresses, so what an earlier `up` made is read back as it is).
host_uplinks() {
  ip -n "$1" -o -4 addr show 2>/dev/null |
    awk '$2 != "lo" { split($4, a, "."); print a[3], $2 }' | sort -n | awk '{ print $2 }'
}

# ---- shaping ----------------------------------------------------------------

# shape NS DEV FRAMES: token bucket at RATE (root 1:), netem DELAY under it
# (10:), and a priority queue under that (20:) when PRIO is set; the queue
# holds FRAMES frames of MTU bytes (tbf's own byte limit, or pfifo_fast's
# packet limit, which is the device's txqueuelen when it is created).
# Replaces whatever the device had, so running it again gives the same
# result.
shape() {
  local ns=$1 dev=$2 frames=$3 parent=1:1
  tc -n "$ns" qdisc del dev "$dev" root >/dev/null 2>&1
  step ip -n "$ns" link set "$dev" mtu "$MTU" txqueuelen "$frames"
  feature_step "the tbf qdisc (sch_tbf)" \
    tc -n "$ns" qdisc add dev "$dev" root handle 1: tbf rate "$RATE" burst "$BURST" limit $((frames * MTU))
  if [ "$DELAY" != 0 ]; then
    feature_step "the netem qdisc (sch_netem) for --delay" \
      tc -n "$ns" qdisc add dev "$dev" parent "$parent" handle 10: netem delay "$DELAY" limit 100000
    parent=10:1
  fi
  if [ "$PRIO" = 1 ]; then
    feature_step "the pfifo_fast qdisc for --prio" \
      tc -n "$ns" qdisc add dev "$dev" parent "$parent" handle 20: pfifo_fast
  fi
}

# classify_fabric FAB: with PRIO, the fabric's bridges set each forwarded
# packet's priority from its DSCP, as a switch maps DSCP to a traffic class
# (the socket priority a host sets does not survive the veth into another
# namespace): EF (46) -> 6 (band 0), CS1 (8) -> 1 (band 2), the rest 0
# (band 1). Without PRIO the table is removed. Needs nftables (nft).
classify_fabric() {
  local fab=$1
  ip netns exec "$fab" nft delete table bridge trirace_tb >/dev/null 2>&1
  [ "$PRIO" = 1 ] || return 0
  command -v nft >/dev/null 2>&1 ||
    { log "--prio needs nft (Debian package nftables) to map DSCP to priority in the fabric"; exit "$EX_NO_SUPPORT"; }
  feature_step "the nftables bridge family for --prio" ip netns exec "$fab" nft -f - <<'NFT'
table bridge trirace_tb {
  chain classify {
    type filter hook postrouting priority 0; policy accept;
    ip dscp ef meta priority set 0:6
    ip dscp cs1 meta priority set 0:1
  }
}
NFT
}

# ---- create / destroy -----------------------------------------------------

# Set while `up` builds a test bed, so a signal or failure removes it.
BUILDING=""

# no_ipv6 NS: its neighbour discovery would put unasked-for packets on the links.
no_ipv6() {
  ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
    >/dev/null 2>&1 || true
}

# add_uplink NAME HOST RAIL: host HOST's uplink into rail RAIL's bridge,
# addressed and shaped in both directions.
add_uplink() {
  local name=$1 i=$2 k=$3 fab ns dev port
  fab=$(fabric_ns "$name")
  ns=$(host_ns "$name" "$i")
  dev=$(uplink_name "$k")
  port=$(fabric_port "$i" "$k")
  if ! ip -n "$ns" link show "$dev" >/dev/null 2>&1; then
    ip -n "$fab" link del "$port" >/dev/null 2>&1
    feature_step "creating a veth pair" ip -n "$fab" link add "$port" type veth peer name "$dev" netns "$ns"
  fi
  step ip -n "$fab" link set "$port" master "$(rail_bridge "$k")"
  step ip -n "$fab" link set "$port" up
  step ip -n "$ns" addr replace "$(rail_addr "$i" "$k")/24" dev "$dev"
  step ip -n "$ns" link set "$dev" up
  # host -> fabric, the NIC's transmit side: the kernel's own queue in front
  # of a NIC, which the host's sockets fill only up to their own limit each.
  shape "$ns" "$dev" "$HOST_QUEUE_FRAMES"
  # fabric -> host, the NIC's receive side: the switch port's buffer.
  shape "$fab" "$port" "$QUEUE_FRAMES"
}

create_testbed() {
  local name=$1 hosts=$2 fab i k ns br
  fab=$(fabric_ns "$name")
  BUILDING=$name
  if ! netns_exists "$fab"; then
    feature_step "creating a network namespace" ip netns add "$fab"
  fi
  no_ipv6 "$fab"
  step ip -n "$fab" link set lo up
  for ((k = 0; k < NICS; k++)); do
    br=$(rail_bridge "$k")
    if ! ip -n "$fab" link show "$br" >/dev/null 2>&1; then
      feature_step "creating a bridge" ip -n "$fab" link add "$br" type bridge stp_state 0
    fi
    step ip -n "$fab" link set "$br" mtu "$MTU" up
  done
  for ((i = 0; i < hosts; i++)); do
    ns=$(host_ns "$name" "$i")
    netns_exists "$ns" || feature_step "creating a network namespace" ip netns add "$ns"
    no_ipv6 "$ns"
    step ip -n "$ns" link set lo up
    # Kernels without the per-namespace sysctl keep their own limit.
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_limit_output_bytes="$HOST_TSQ_BYTES" >/dev/null 2>&1 ||
      log "host $i: could not set net.ipv4.tcp_limit_output_bytes; sockets may queue more on its uplinks"
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_slow_start_after_idle="$HOST_SLOW_START_AFTER_IDLE" >/dev/null 2>&1 ||
      log "host $i: could not set net.ipv4.tcp_slow_start_after_idle"
    for ((k = 0; k < NICS; k++)); do add_uplink "$name" "$i" "$k"; done
    # Rails beyond --nics left from an earlier `up` of the same name (the
    # veth's fabric end goes with it).
    for ((k = NICS; k < MAX_NICS; k++)); do ip -n "$ns" link del "$(uplink_name "$k")" >/dev/null 2>&1; done
  done
  for ((k = NICS; k < MAX_NICS; k++)); do ip -n "$fab" link del "$(rail_bridge "$k")" >/dev/null 2>&1; done
  classify_fabric "$fab"
  # Hosts beyond --hosts left from an earlier `up` of the same name.
  for i in $(host_indexes "$name"); do
    if ((i >= hosts)); then
      destroy_ns "$(host_ns "$name" "$i")"
      for ((k = 0; k < MAX_NICS; k++)); do ip -n "$fab" link del "$(fabric_port "$i" "$k")" >/dev/null 2>&1; done
    fi
  done
  BUILDING=""
}

# Kills what runs in a namespace, then deletes it (its links and qdiscs go
# with it).
destroy_ns() {
  local ns=$1 pids tries
  netns_exists "$ns" || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null
    for ((tries = 0; tries < 20; tries++)); do
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -z "$pids" ] && break
      sleep 0.1
    done
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  fi
  ip netns del "$ns" 2>/dev/null || log "could not delete namespace $ns"
}

destroy_testbed() {
  local name=$1 i
  for i in $(host_indexes "$name"); do
    destroy_ns "$(host_ns "$name" "$i")"
  done
  destroy_ns "$(fabric_ns "$name")"
  # The occupancy segments of its hosts (TRIRACE_JOB_ID=<name>-h<i>): the
  # net plugin leaves them in /dev/shm, which the namespaces share.
  rm -f /dev/shm/trirace-*-"$name"-h[0-9]*
}

# ---- the JSON spec ------------------------------------------------------------

# write_spec NAME: prints the TriRace JSON spec (docs/topology.md) of a test
# bed as it is: host keys h<i> (the ranks' TRIRACE_HOST_ID), each host's
# uplinks as Ethernet NICs at the shaped rate, rail k = uplink k; one bridge
# is a single switch, several are a rail-optimised fabric. Ranks read it
# through TRIRACE_TOPO_FILE.
write_spec() {
  local name=$1 hosts=() h0 uplinks=() gbps kind=single_switch nics="" k
  mapfile -t hosts < <(host_indexes "$name")
  [ ${#hosts[@]} -gt 0 ] || return 1
  h0=$(host_ns "$name" "${hosts[0]}")
  mapfile -t uplinks < <(host_uplinks "$h0")
  [ ${#uplinks[@]} -gt 0 ] || return 1
  gbps=$(testbed_gbps "$h0" "${uplinks[0]}")
  [ ${#uplinks[@]} -gt 1 ] && kind=rail_optimized
  for k in "${!uplinks[@]}"; do
    nics+="${nics:+, }{\"name\": \"${uplinks[k]}\", \"numa\": 0, \"link_layer\": \"eth\", \"gbps\": $gbps}"
  done
  {
    echo "{\"fabric\": {\"kind\": \"$kind\"},"
    echo " \"hosts\": ["
    echo "  {\"key\": \"h${hosts[0]}\", \"numa_nodes\": 1, \"nics\": [$nics]}"
    for h in "${hosts[@]:1}"; do echo "  ,{\"key\": \"h$h\", \"like\": \"h${hosts[0]}\"}"; done
    echo " ]}"
  }
}

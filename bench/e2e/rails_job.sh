#!/usr/bin/env bash
# rails_job.sh: one rank of the 2-rail presets (run_e2e.sh --preset
# rails-split | rails-shared), run by `testbed.sh run --ranks-per-host 2` on
# a test bed with two NICs per host.
#
#   rails_job.sh --placement split|shared -- HYBRID [hybrid_parallel flags...]
#
# Two training jobs share the hosts, as the data-parallel and the pipeline
# ranks of a rail-optimised cluster do: local rank 0 of every host is a rank
# of a data-parallel job (one stage, one replica per host: DENSE all-reduce
# only), local rank 1 a rank of a pipeline job (one stage per host, one
# replica: P2P only). Each job has its own ranks, rendezvous file and
# communicators. The placement picks the NICs:
#   split   the DP job on rail 0 (tb0), the pipeline on rail 1 (tb1)
#   shared  both on rail 0, rail 1 idle: the same jobs competing for a link
# Both jobs publish occupancy into their host's one segment
# (TRIRACE_JOB_ID), each under the NIC it uses, so a rank sees the other
# job's bytes on its own NIC as foreign traffic, and none from the other rail.
#
# The jobs' shapes start from --preset contention (its sizes and compute
# times); the flags after HYBRID are added to both. Exit status: the job's.
set -uo pipefail

die() { echo "rails_job: $*" >&2; exit 2; }

placement=""
while [ $# -gt 0 ]; do
  case $1 in
    --placement) placement=${2:-}; shift 2 ;;
    --) shift; break ;;
    *) die "unknown flag '$1' (expected --placement split|shared -- HYBRID [flags])" ;;
  esac
done
case $placement in
  split | shared) ;;
  *) die "--placement '$placement': expected split or shared" ;;
esac
[ $# -ge 1 ] || die "no hybrid_parallel program after --"
hybrid=$1
shift

for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE RENDEZVOUS_FILE TESTBED_IFNAMES; do
  [ -n "${!v:-}" ] || die "$v is not set: run me with tools/testbed/testbed.sh run"
done
[ "$LOCAL_WORLD_SIZE" = 2 ] || die "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE: expected 2 (--ranks-per-host 2)"
IFS=, read -r -a uplinks <<<"$TESTBED_IFNAMES"
[ "${#uplinks[@]}" -ge 2 ] || die "TESTBED_IFNAMES='$TESTBED_IFNAMES': expected two NICs per host (testbed.sh up --nics 2)"

job=$LOCAL_RANK  # 0: data parallel, 1: pipeline
hosts=$((WORLD_SIZE / LOCAL_WORLD_SIZE))
rail=0
[ "$placement" = split ] && rail=$job
nic=${uplinks[rail]}
export RANK=$((RANK / LOCAL_WORLD_SIZE)) WORLD_SIZE=$hosts LOCAL_RANK=0 LOCAL_WORLD_SIZE=1
export RENDEZVOUS_FILE="$RENDEZVOUS_FILE.job$job"
export TRIRACE_NET_IFNAME=$nic NCCL_SOCKET_IFNAME=$nic TRIRACE_NIC=$nic TESTBED_RAIL=$rail
# Both jobs have a rank 0: each job's traces go to a folder of their own.
if [ -n "${TRIRACE_TRACE:-}" ]; then
  mkdir -p "$(dirname "$TRIRACE_TRACE")/job$job"
  TRIRACE_TRACE="$(dirname "$TRIRACE_TRACE")/job$job/$(basename "$TRIRACE_TRACE")"
fi
if [ "$job" = 0 ]; then
  shape=(--stages 1 --replicas "$hosts")
else
  shape=(--stages "$hosts" --replicas 1)
fi
exec "$hybrid" --preset contention "${shape[@]}" "$@"

#!/usr/bin/env bash
# One Slurm task = one torch.distributed rank, run under TriRace.
#
#   srun [srun options] ./trirace_task.sh [trirace run options] -- CMD [ARGS...]
#
# Sets for the rank what torchrun would set, from what srun set for the task:
#   RANK        = SLURM_PROCID
#   WORLD_SIZE  = SLURM_NTASKS
#   LOCAL_RANK  = SLURM_LOCALID
#   LOCAL_WORLD_SIZE = the number of tasks on this node (SLURM_STEP_TASKS_PER_NODE,
#                 else SLURM_TASKS_PER_NODE, e.g. "8(x2)", at index SLURM_NODEID)
#   MASTER_ADDR = the first host of the step (`scontrol show hostnames`), unless set
#   MASTER_PORT = 20000 + SLURM_JOB_ID % 10000, unless set
# then execs `trirace run` with its arguments. Running `trirace run` here, in
# the task, is what makes it right on every node: the shim goes into LD_PRELOAD
# of this rank only, and the network transport (NCCL_NET_PLUGIN) is chosen from
# this node's NICs. `trirace` (and the program) must be on PATH: sbatch and
# srun pass the submitting shell's environment on. Exits 2 outside a Slurm task.
set -euo pipefail

die() {
  echo "trirace_task.sh: $*" >&2
  exit 2
}

for var in SLURM_PROCID SLURM_NTASKS SLURM_LOCALID SLURM_NODEID; do
  [ -n "${!var:-}" ] || die "$var is unset: start this script with srun, which sets it for every task"
done

# The task count of node number $1 in a Slurm list like "8(x2),4" (8, 8, 4).
tasks_on_node() {
  local node=$1 first=0 item count repeat
  local -a items
  IFS=, read -r -a items <<<"$2"
  for item in "${items[@]}"; do
    if [[ $item =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
      count=${BASH_REMATCH[1]} repeat=${BASH_REMATCH[2]}
    elif [[ $item =~ ^[0-9]+$ ]]; then
      count=$item repeat=1
    else
      return 1
    fi
    if ((node < first + repeat)); then
      echo "$count"
      return 0
    fi
    first=$((first + repeat))
  done
  return 1
}

per_node=${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-}}
local_world_size=$(tasks_on_node "$SLURM_NODEID" "$per_node") ||
  die "cannot tell how many tasks node $SLURM_NODEID has from SLURM_TASKS_PER_NODE=\"$per_node\""

export RANK=$SLURM_PROCID
export WORLD_SIZE=$SLURM_NTASKS
export LOCAL_RANK=$SLURM_LOCALID
export LOCAL_WORLD_SIZE=$local_world_size

if [ -z "${MASTER_ADDR:-}" ]; then
  nodes=${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-}}
  [ -n "$nodes" ] || die "MASTER_ADDR is unset and so are SLURM_STEP_NODELIST and SLURM_JOB_NODELIST"
  MASTER_ADDR=$(scontrol show hostnames "$nodes" | sed -n 1p)
  [ -n "$MASTER_ADDR" ] || die "scontrol show hostnames \"$nodes\" named no host"
fi
export MASTER_ADDR
if [ -z "${MASTER_PORT:-}" ]; then
  [ -n "${SLURM_JOB_ID:-}" ] || die "MASTER_PORT is unset and so is SLURM_JOB_ID to derive it from"
  MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000))
fi
export MASTER_PORT

exec trirace run "$@"

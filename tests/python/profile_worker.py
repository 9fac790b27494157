"""One rank of the profiler check: hostccl's ops under torch.profiler.

Runs an all-reduce, a broadcast, an all-gather, a send/recv pair (rank 0 to
1), a reduce-scatter and a barrier under torch.profiler, then prints one line

    RESULT {"events": {"hostccl:all_reduce": 1, ...}, "all_reduce_us": ..., "slow_peer_us": ...}

with the count of every profiler event whose name starts with "hostccl:".
The all-reduce waits for rank 1, which sleeps 0.2 s before joining it: the
event spans the call to the op's completion, so it lasts at least that long
on rank 0 (all_reduce_us) while the call itself returned at once.
"""

import json
import os
import time

import torch
import torch.distributed as dist

import trirace.hostccl  # noqa: F401  (registers the backend)

SLOW_PEER_S = 0.2


def main():
    dist.init_process_group(backend="hostccl")
    rank, size = dist.get_rank(), dist.get_world_size()
    x = torch.ones(1024)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        if rank == 1:
            time.sleep(SLOW_PEER_S)
        work = dist.all_reduce(x, async_op=True)
        work.wait()
        dist.broadcast(x, src=0)
        gathered = [torch.zeros(1024) for _ in range(size)]
        dist.all_gather(gathered, x)
        if rank == 0:
            dist.send(x, dst=1)
        elif rank == 1:
            dist.recv(x, src=0)
        out = torch.zeros(1024)
        dist.reduce_scatter(out, [torch.ones(1024) for _ in range(size)])
        dist.barrier()
    counts = {}
    all_reduce_us = 0.0
    for e in prof.events():
        if e.name.startswith("hostccl:"):
            counts[e.name] = counts.get(e.name, 0) + 1
            if e.name == "hostccl:all_reduce":
                all_reduce_us = max(all_reduce_us, e.cpu_time_total)
    if rank == 0:
        print("RESULT " + json.dumps({"events": counts, "all_reduce_us": all_reduce_us,
                                      "slow_peer_us": SLOW_PEER_S * 1e6}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""One rank of a DDP job over the hostccl backend (for test_pytorch.py).

Trains a small MLP for --steps SGD steps with DistributedDataParallel; each
rank takes its slice of a fixed global batch. Rank 0 then trains the same
model on the whole batch in one process and prints one line:
  RESULT {"losses": [...], "checksum": sha256 of the final weights,
          "max_abs_diff_vs_single": ..., "buckets": ...}
Env: KILL_RANK / KILL_STEP make that rank die (SIGKILL) inside that step's
backward, for the failure test; BAD_USE runs the misuse checks instead.
"""

import argparse
import datetime
import hashlib
import json
import os
import signal
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import trirace  # noqa: E402
import trirace.hostccl  # noqa: E402,F401
import trirace.torch  # noqa: E402

GLOBAL_BATCH = 32


def make_model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(16, 256), nn.Tanh(), nn.Linear(256, 1024), nn.Tanh(), nn.Linear(1024, 4))


def make_data():
    g = torch.Generator().manual_seed(99)
    return torch.randn(GLOBAL_BATCH, 16, generator=g), torch.randn(GLOBAL_BATCH, 4, generator=g)


def checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()


def single_process(steps, lr):
    model = make_model()
    x, y = make_data()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def bad_use(rank):
    """Each misuse must raise a Python exception naming the problem."""
    checks = {
        "meta tensor": lambda: dist.all_reduce(torch.empty(2, device="meta")),
        "int16 (NCCL lacks it)": lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)),
        "bool reduction": lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool)),
        "non-contiguous": lambda: dist.all_reduce(torch.ones(4, 4).t()),
        "bitwise op": lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BAND),
        "all_gather list size": lambda: dist.all_gather([torch.empty(2)], torch.ones(2)),
        "alltoall splits": lambda: dist.all_to_all_single(torch.empty(4), torch.ones(4), [1, 1], [3, 3]),
        "send to self's group out of range": lambda: dist.send(torch.ones(1), dist.get_world_size() + 3),
    }
    report = {}
    for name, call in checks.items():
        try:
            call()
            report[name] = "no error"
        except Exception as error:  # what we want
            report[name] = "%s: %s" % (type(error).__name__, error)
    # Mismatched sizes across ranks: a group error on every rank, no hang.
    try:
        dist.all_reduce(torch.ones(8 + 1000 * rank))
        report["mismatched sizes"] = "no error"
    except Exception as error:
        report["mismatched sizes"] = "%s: %s" % (type(error).__name__, error)
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--hook", action="store_true", help="trirace.torch.ddp_comm_hook")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("hostccl", timeout=datetime.timedelta(seconds=opts.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()

    if os.environ.get("BAD_USE"):
        report = bad_use(rank)
        if rank == 0:
            print("RESULT " + json.dumps({"bad_use": report}), flush=True)
        return

    # A side group named at creation; its one all-reduce shows the role in the trace.
    with trirace.comm_role("expert"):
        side = dist.new_group(list(range(world)))
    dist.all_reduce(torch.ones(1), group=side)

    model = make_model()
    tagger = trirace.torch.auto_tag(model)
    trirace.torch.set_role(None, "data_parallel")
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=opts.bucket_cap_mb)
    if opts.hook:
        ddp.register_comm_hook(tagger, trirace.torch.ddp_comm_hook)
    x, y = make_data()
    per_rank = GLOBAL_BATCH // world
    xs, ys = x[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]
    opt = torch.optim.SGD(ddp.parameters(), lr=opts.lr)
    kill_rank = int(os.environ.get("KILL_RANK", "-1"))
    kill_step = int(os.environ.get("KILL_STEP", "-1"))
    losses = []
    for step in range(opts.steps):
        with trirace.iteration(step):
            opt.zero_grad()
            loss = nn.functional.mse_loss(ddp(xs), ys)
            if rank == kill_rank and step == kill_step:
                os.kill(os.getpid(), signal.SIGKILL)
            loss.backward()
            opt.step()
        losses.append(loss.detach())
    # The global loss of each step: the mean of the ranks' (equal-sized) slices.
    stacked = torch.stack(losses)
    dist.all_reduce(stacked)
    stacked /= world
    if rank == 0:
        reference, ref_losses = single_process(opts.steps, opts.lr)
        diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
        print("RESULT " + json.dumps({
            "losses": [float(v) for v in stacked.tolist()],
            "reference_losses": ref_losses,
            "checksum": checksum(model),
            "max_abs_diff_vs_single": diff,
            "layers": tagger.num_layers,
            "trirace_loaded": trirace.loaded(),
        }), flush=True)


if __name__ == "__main__":
    main()

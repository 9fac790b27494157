#!/usr/bin/env python3
"""torch_check: a one-GPU PyTorch job over NCCL (world size 1).

Runs a few deterministic DDP training steps (fixed seeds, deterministic
algorithms) and dist.all_reduce / broadcast / all_gather on CUDA tensors
(one large enough for TriRace to split into chunks, one on a side stream,
one async), checks every collective result exactly against the host's
expectation, and prints

    CHECKSUM <hex>    (parameters and results; the same with and without
                       LD_PRELOAD=libtrirace.so)
    PASS torch_check  or  FAIL torch_check: <why>

Exit 0 pass, 1 fail, 77 when torch, CUDA or the nccl backend is missing,
124 when the watchdog fires (TORCH_CHECK_TIMEOUT seconds, default 150).
Written against APIs present in torch 1.13 and 2.x. TORCH_CHECK_CPU=1 runs
the same steps on the CPU over gloo: only to test this script on a machine
without a GPU.
"""
import datetime
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time

SKIP = 77


def say(line):
    print(line, flush=True)


def skip(why):
    say("SKIP torch_check: " + why)
    sys.exit(SKIP)


def start_watchdog(seconds):
    def fire():
        say("FAIL torch_check: watchdog: still running after %d s: hang" % seconds)
        os._exit(124)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def loaded_nccl():
    """Paths of the libnccl files mapped into this process."""
    paths = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "libnccl" in os.path.basename(path):
                    paths.add(path)
    except OSError:
        pass
    return sorted(paths)


class Digest:
    """SHA-256 over dtype, shape and bytes of each tensor, in call order."""

    def __init__(self, torch):
        self.torch = torch
        self.h = hashlib.sha256()

    def add(self, name, t):
        torch = self.torch
        t = t.detach().contiguous().cpu().reshape(-1)
        self.h.update(("%s %s %d;" % (name, t.dtype, t.numel())).encode())
        if t.numel() <= (1 << 20):
            try:
                raw = bytes(t.view(torch.uint8).tolist())
            except RuntimeError:  # a torch without view(dtype) of another size
                raw = repr(t.tolist()).encode()
            self.h.update(raw)
        else:
            # Large integer-valued tensors (checked exactly already): two
            # exact int64 sums stand for the bytes, and cost no Python loop.
            v = t.to(torch.int64)
            w = torch.arange(v.numel(), dtype=torch.int64) % 1000003
            self.h.update(("%d %d;" % (int(v.sum()), int((v * w).sum()))).encode())

    def hexdigest(self):
        return self.h.hexdigest()[:16]


def main():
    timeout = int(os.environ.get("TORCH_CHECK_TIMEOUT", "150"))
    watchdog = start_watchdog(timeout)
    # cuBLAS needs this for deterministic results; set before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        from torch.nn.parallel import DistributedDataParallel as DDP
    except Exception as e:  # ImportError, or a broken install
        skip("cannot import torch (%s: %s)" % (type(e).__name__, e))
    cuda = os.environ.get("TORCH_CHECK_CPU", "") != "1"
    if not dist.is_available():
        skip("torch %s has no torch.distributed" % torch.__version__)
    if cuda and not torch.cuda.is_available():
        skip("torch %s sees no CUDA GPU (torch.version.cuda %s)" % (torch.__version__, torch.version.cuda))
    if cuda and not dist.is_nccl_available():
        skip("torch %s has no nccl backend for torch.distributed" % torch.__version__)

    gpu, nccl_version = "none (TORCH_CHECK_CPU=1: gloo on the CPU)", "-"
    if cuda:
        torch.cuda.set_device(0)
        gpu = torch.cuda.get_device_name(0)
        try:
            nccl_version = torch.cuda.nccl.version()
        except Exception as e:
            nccl_version = "unknown (%s)" % e
    say("torch_check: torch %s, CUDA %s, GPU %s, torch NCCL %s; LD_PRELOAD=%s TRIRACE_MODE=%s"
        % (torch.__version__, torch.version.cuda, gpu, nccl_version,
           os.environ.get("LD_PRELOAD", ""), os.environ.get("TRIRACE_MODE", "")))

    torch.manual_seed(1234)
    if cuda:
        torch.cuda.manual_seed_all(1234)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True)

    store_dir = tempfile.mkdtemp(prefix="torch_check.")
    store = dist.FileStore(os.path.join(store_dir, "store"), 1)
    dist.init_process_group("nccl" if cuda else "gloo", store=store, rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=max(30, timeout - 10)))
    say("torch_check: process group up (backend %s, world size %d); libnccl mapped: %s"
        % (dist.get_backend(), dist.get_world_size(), ", ".join(loaded_nccl()) or "none"))

    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    digest = Digest(torch)
    failures = []

    def expect(name, got, want):
        if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
            bad = (got != want).nonzero()
            first = bad[0].tolist() if bad.numel() else "shape/dtype"
            failures.append("%s: differs (first at %s; got %s %s, want %s %s)"
                            % (name, first, got.dtype, tuple(got.shape), want.dtype, tuple(want.shape)))
        digest.add(name, got)

    # 1. DDP: a small MLP, several buckets, a few SGD steps.
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 16)).to(dev)
    ddp = DDP(model, device_ids=[0] if cuda else None, bucket_cap_mb=0.1)  # about 4 buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(99)
    losses = []
    for _ in range(5):
        x = torch.randn(32, 64, generator=gen).to(dev)
        y = torch.randn(32, 16, generator=gen).to(dev)
        loss = F.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    sync()
    for name, p in model.named_parameters():
        digest.add("param." + name, p)
    say("torch_check: DDP losses %s" % " ".join("%.6f" % v for v in losses))

    # 2. Collectives, integer-valued so every result is exact.
    for it in range(3):
        n_big = (6 << 20) + 3  # about 24 MiB of float32: several chunks
        base = (torch.arange(n_big, dtype=torch.int64) * 7 + it * 13) % 2001 - 1000
        big_host = base.to(torch.float32)
        big = big_host.to(dev)
        dist.all_reduce(big)  # sum over one rank: unchanged
        expect("all_reduce.f32.%d" % it, big.cpu(), big_host)

        ints_host = ((torch.arange(1 << 16, dtype=torch.int64) * 31 + it) % 100003 - 50000).to(torch.int32)
        ints = ints_host.to(dev)
        dist.all_reduce(ints)
        expect("all_reduce.i32.%d" % it, ints.cpu(), ints_host)

        bc_host = big_host[: 1 << 20].clone() + 1
        bc = bc_host.to(dev)
        dist.broadcast(bc, src=0)
        expect("broadcast.%d" % it, bc.cpu(), bc_host)

        part_host = big_host[: 1 << 18].clone() - 1
        part = part_host.to(dev)
        gathered = [torch.full_like(part, -7.0) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, part)
        expect("all_gather.%d" % it, gathered[0].cpu(), part_host)

        # A side stream that follows the current one, and an async op.
        side_in = big * 2  # on the current stream
        if cuda:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                dist.all_reduce(side_in)
            torch.cuda.current_stream().wait_stream(side)
        else:
            dist.all_reduce(side_in)
        expect("side_stream.%d" % it, side_in.cpu(), big_host * 2)

        work = dist.all_reduce(ints, async_op=True)
        work.wait()
        expect("async.%d" % it, ints.cpu(), ints_host)
    sync()

    dist.destroy_process_group()
    shutil.rmtree(store_dir, ignore_errors=True)
    watchdog.cancel()
    say("CHECKSUM %s" % digest.hexdigest())
    if failures:
        for f in failures:
            say("MISMATCH " + f)
        say("FAIL torch_check: %d result(s) differ" % len(failures))
        return 1
    say("PASS torch_check: DDP 5 steps, 18 collective results exact")
    return 0


if __name__ == "__main__":
    started = time.time()
    try:
        rc = main()
    except SystemExit:
        raise
    except BaseException as e:  # report, never hang or pass silently
        import traceback
        traceback.print_exc()
        say("FAIL torch_check: %s: %s" % (type(e).__name__, e))
        rc = 1
    say("torch_check: %.1f s" % (time.time() - started))
    sys.exit(rc)

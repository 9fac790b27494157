#!/usr/bin/env python3
"""hybrid_train: a small GPT trained with pipeline x data parallelism.

A GPT-style decoder (token embedding + learned positional embedding, N
pre-LayerNorm transformer blocks, final LayerNorm, LM head) trained on
synthetic tokens with pipeline parallelism (PP) across --stages and data
parallelism (DP, torch DistributedDataParallel) across the replicas of each
stage, optionally with the token embedding row-sharded over the replicas of
stage 0 (--sparse-embedding). Meant to be run under TriRace
(docs/pytorch.md); it runs the same without it.

Launch
    torchrun --nproc_per_node=4 examples/pytorch/hybrid_train.py --stages 2
    (Debian's torchrun of torch 1.13 on Python 3.11 also needs
    --redirects 1 --tee 1; see docs/pytorch.md.)
Ranks come from the torchrun-style environment: RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT (init_method env://) and LOCAL_RANK (the GPU used by
--backend nccl; optional otherwise).

Layout
    R = WORLD_SIZE // S replicas, S = --stages (WORLD_SIZE must be a multiple
    of S). Rank r is stage r // R of replica r % R: consecutive ranks hold the
    same stage of different replicas, so a host with R consecutive ranks holds
    one whole stage, and its DP all-reduce stays on that host while the
    activations cross hosts.
    Process groups, created by every rank in this order (dist.new_group):
      DP group of stage s      ranks s*R .. s*R+R-1            role data_parallel
      PP group of replica j    ranks j, j+R, .., j+(S-1)*R     role pipeline
                               (only when S > 1)
      sparse group             the ranks of stage 0            role expert
                               (only with --sparse-embedding)
    Each group runs one tiny all-reduce right after creation, so every
    communicator exists before the first timed step (and before the first
    batch_isend_irecv on a PP group, which NCCL needs).
    The --layers blocks are split evenly (--layers must be a multiple of S);
    stage 0 also holds the embeddings, the last stage the final LayerNorm, the
    head and the loss.

Data
    Step t uses one global batch of G = R * --micro-batches *
    --micro-batch-size sequences of --seq + 1 tokens, drawn from a generator
    seeded with (--seed, t): each sequence is an arithmetic progression modulo
    --vocab (random start, stride 1..3) with 10% of the tokens replaced by
    random ones, so the model has something to learn. Replica j takes the
    j-th slice of G / R sequences and cuts it into micro-batches. The loss is
    the token-mean cross entropy of each micro-batch divided by the number of
    micro-batches, and DDP averages over replicas, so the gradient is the mean
    over the whole global batch for any layout with the same G.

Model init
    Every rank builds the whole model with one generator seeded with --seed
    (normal(0, 0.02) weights, zero biases, unit LayerNorm gains), then keeps
    its stage's part: the initial weights never depend on the layout.
    The optimizer is plain SGD (w -= lr * grad) on every parameter.

Schedules (--schedule)
    1f1b  Megatron-LM's one-forward-one-backward with a flush per step: stage
          s runs min(S - s - 1, M) warm-up forwards, then pairs of one forward
          and one backward, then the remaining backwards (cool-down), then the
          optimizer step. Activations go forward and their gradients backward
          with send/recv on the replica's PP group; the combined exchanges
          (send forward + receive backward, send backward + receive forward)
          are one batch_isend_irecv (one NCCL group) with --backend nccl, as
          in Megatron-LM; with other backends the two ops are issued with the
          lower stage sending first and the upper stage receiving first, so
          backends whose sends wait for the matching receive cannot deadlock.
    2bw   PipeDream-2BW's weight update, W(t+1) = W(t) - lr * grad(W(t-1)),
          on the same 1F1B order with a flush per step: the gradient of step
          t is computed with W(t); its DP all-reduce is launched during the
          last backward of step t (bucket by bucket, by a DDP comm hook that
          returns at once) and awaited only at the optimizer step of step
          t + 1, which applies it; step 0 applies nothing, and the gradient
          of the last step is awaited and dropped at the end. So the
          all-reduce of one step overlaps the whole pipeline traffic of the
          next one, as with PipeDream-2BW's double-buffered weights (here the
          gradient is double-buffered; PipeDream-2BW also runs without a
          flush, which this script does not do). With --sparse-embedding the
          sharded table's gradient is applied one step late as well.
    Both are deterministic: same flags and layout give bit-identical losses
    and weights.

DDP and micro-batches
    Gradients accumulate in .grad over the micro-batches, and DDP must
    all-reduce once, during the last micro-batch's backward, so that its
    bucketed all-reduce overlaps that backward (Megatron-LM and DeepSpeed do
    the same with their own DDP). torch DDP decides at *forward* time whether
    the next backward synchronises (no_sync() must enclose the forward), but
    in 1F1B the last micro-batch's forward is followed by other micro-batches'
    backwards. So every real forward runs under no_sync(), and right before
    the last backward the script runs the DDP module once, with sync on, on a
    one-token input whose output is dropped: that arms DDP's reducer, and the
    last backward all-reduces the accumulated gradients bucket by bucket
    (--bucket-mb) while it runs. The extra forward costs one token's worth of
    compute and no communication.

Sparse embedding (--sparse-embedding)
    The token table is row-sharded over the R replicas of stage 0 (ceil(V/R)
    rows each, replica j owns rows j*ceil(V/R) ..), outside DDP. Per
    micro-batch, on the sparse group: all_gather of every replica's token ids;
    each rank picks, for every replica, the looked-up rows it owns (in
    position order) and all_to_all_single (uneven splits) sends them there;
    the receiver puts them back in position order. Backward: the rows'
    gradients go back to their owners by the reverse all_to_all_single, and
    each owner adds them into its shard's gradient (index_put_ with
    accumulate), divided by R at the step's end (DDP's mean). Same result as
    the dense table up to float rounding. The positional embedding stays
    dense (in DDP).

TriRace annotations (--trirace-tags on, the default)
    The script imports `trirace` (adding <this dir>/../../python to sys.path
    if the plain import fails) and, when it imports: each group above is
    made and runs its first (tiny) all-reduce inside trirace.comm_role(role),
    so its NCCL communicator has the role from creation whether the backend
    creates it in new_group (hostccl) or at the first collective
    (ProcessGroupNCCL); gloo has none. Then trirace.torch.auto_tag on the stage's
    module, trirace.iteration_begin/end around each step, and
    trirace.tag scopes: forward/backward of each micro-batch (stage,
    microbatch, iteration, phase), each P2P exchange (traffic_class "p2p",
    phase and micro-batch of the tensor sent, or received when nothing is
    sent), each sparse exchange (traffic_class "sparse"), 2bw's gradient
    all-reduces (traffic_class "dense"), the optimizer step (phase
    "optimizer"). Without the package, or with --trirace-tags off, no
    annotation call is made. --backend hostccl imports trirace.hostccl,
    which registers the torch.distributed backend "hostccl".

Output
    One line on rank 0's stdout: RESULT {json} with world_size, stages,
    replicas, schedule, backend, steps, warmup_steps, median_step_ms, step_ms,
    losses, weights_checksum, replicas_agree, cpu, trirace and config. Other
    ranks print nothing on stdout; errors go to stderr.
    step_ms[t]: wall time on rank 0 from the end of step t - 1 (the start of
      the loop for t = 0) to the end of step t, where a step ends when rank
      0's optimizer step has returned (with CUDA after a device
      synchronize); no barrier. Rank 0 is stage 0, which finishes its last
      backward after every later stage, so in steady state this is the
      job's step period. median_step_ms is the median over the steps after
      --warmup-steps.
    losses[t]: the global mean loss of step t (mean over replicas of the
      last stage's sum of micro-batch losses), gathered once after the last
      step, as full-precision floats.
    weights_checksum: sha256 over the per-parameter sha256 digests (name,
      dtype, shape, bytes) of every final parameter of the whole model in its
      definition order (the sharded table is gathered first), so the same
      weights give the same checksum whatever the layout.
    replicas_agree: every replica of every stage ended with the same weights.
    ranks_cpu_pct: the sum of every rank's cpu (below) over this machine's
      cores, in percent (near 100: the CPUs, not the links, set the pace
      when all ranks share one machine, as on the test bed).
    cpu: process CPU seconds (all threads) / wall seconds over the steps
      after warm-up, on rank 0 and the maximum over ranks.

Exit codes: 0 done, 2 bad flags or environment (the message names the flag
or variable, its value and what is accepted), 1 anything else.
Written against APIs present in torch 1.13 and 2.x.
"""
import argparse
import hashlib
import importlib
import json
import math
import os
import statistics
import sys
import time

# Must be set before CUDA initialises cuBLAS for deterministic matmuls.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from hybrid_trainer import PROG, Annotations, Trainer, import_trirace  # noqa: E402


class UsageError(Exception):
    """A bad flag or environment variable: exit code 2."""


# ---------------------------------------------------------------------------
# Flags and environment


def parse_flags(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="A small GPT trained with pipeline x data parallelism "
        "(see the module docstring for layout, schedules and output).")
    p.add_argument("--backend", default="hostccl",
                   help="hostccl (TriRace's CPU NCCL, needs the trirace package), "
                   "gloo, or nccl (CUDA tensors on cuda:LOCAL_RANK) (default %(default)s)")
    p.add_argument("--stages", type=int, default=2, help="pipeline stages (default %(default)s)")
    p.add_argument("--layers", type=int, default=4, help="transformer blocks (default %(default)s)")
    p.add_argument("--hidden", type=int, default=128, help="model width (default %(default)s)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default %(default)s)")
    p.add_argument("--seq", type=int, default=32, help="tokens per sequence (default %(default)s)")
    p.add_argument("--vocab", type=int, default=256, help="vocabulary size (default %(default)s)")
    p.add_argument("--micro-batches", type=int, default=4,
                   help="micro-batches per step and replica (default %(default)s)")
    p.add_argument("--micro-batch-size", type=int, default=2,
                   help="sequences per micro-batch (default %(default)s)")
    p.add_argument("--steps", type=int, default=5, help="training steps (default %(default)s)")
    p.add_argument("--warmup-steps", type=int, default=1,
                   help="first steps left out of median_step_ms and cpu (default %(default)s)")
    p.add_argument("--schedule", default="1f1b",
                   help="1f1b or 2bw (default %(default)s)")
    p.add_argument("--lr", type=float, default=0.5, help="SGD learning rate (default %(default)s)")
    p.add_argument("--seed", type=int, default=1234, help="model and data seed (default %(default)s)")
    p.add_argument("--bucket-mb", type=float, default=0.25,
                   help="DDP bucket size in MB (default %(default)s)")
    p.add_argument("--sparse-embedding", action="store_true",
                   help="row-shard the token table over stage 0's replicas (sparse traffic)")
    p.add_argument("--trirace-tags", default="on",
                   help="on: annotate with the trirace package if it imports; "
                   "off: no annotation calls (default %(default)s)")
    a = p.parse_args(argv)

    def need(cond, flag, value, accepted):
        if not cond:
            raise UsageError("%s %s is not accepted; expected %s" % (flag, value, accepted))

    need(a.backend in ("hostccl", "gloo", "nccl"), "--backend", a.backend, "hostccl, gloo or nccl")
    need(a.schedule in ("1f1b", "2bw"), "--schedule", a.schedule, "1f1b or 2bw")
    need(a.trirace_tags in ("on", "off"), "--trirace-tags", a.trirace_tags, "on or off")
    need(a.stages >= 1, "--stages", a.stages, "an integer >= 1")
    need(a.layers >= 1, "--layers", a.layers, "an integer >= 1")
    need(a.layers % a.stages == 0, "--layers", a.layers,
         "a multiple of --stages %d (blocks are split evenly)" % a.stages)
    need(a.hidden >= 1, "--hidden", a.hidden, "an integer >= 1")
    need(a.heads >= 1 and a.hidden % a.heads == 0, "--heads", a.heads,
         "an integer >= 1 that divides --hidden %d" % a.hidden)
    need(a.seq >= 1, "--seq", a.seq, "an integer >= 1")
    need(a.vocab >= 2, "--vocab", a.vocab, "an integer >= 2")
    need(a.micro_batches >= 1, "--micro-batches", a.micro_batches, "an integer >= 1")
    need(a.micro_batch_size >= 1, "--micro-batch-size", a.micro_batch_size, "an integer >= 1")
    need(a.steps >= 1, "--steps", a.steps, "an integer >= 1")
    need(0 <= a.warmup_steps < a.steps, "--warmup-steps", a.warmup_steps,
         "an integer >= 0 and below --steps %d" % a.steps)
    need(math.isfinite(a.lr) and a.lr > 0, "--lr", a.lr, "a finite number > 0")
    need(math.isfinite(a.bucket_mb) and a.bucket_mb > 0, "--bucket-mb", a.bucket_mb,
         "a finite number > 0")
    return a


def env_int(name, lo, hi=None, default=None, why="torchrun sets it"):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        if default is not None:
            return default
        raise UsageError("environment variable %s is not set; expected an integer (%s)" % (name, why))
    try:
        value = int(raw)
    except ValueError:
        raise UsageError("%s=%r is not an integer (%s)" % (name, raw, why)) from None
    if value < lo or (hi is not None and value > hi):
        rng = ">= %d" % lo if hi is None else "%d .. %d" % (lo, hi)
        raise UsageError("%s=%d is out of range; expected %s (%s)" % (name, value, rng, why))
    return value


def read_env(flags):
    world = env_int("WORLD_SIZE", 1)
    rank = env_int("RANK", 0, world - 1, why="torchrun sets it; 0 <= RANK < WORLD_SIZE=%d" % world)
    if not os.environ.get("MASTER_ADDR"):
        raise UsageError("environment variable MASTER_ADDR is not set; expected the host name "
                         "or address of rank 0 (torchrun sets it)")
    env_int("MASTER_PORT", 1, 65535)
    if flags.backend == "nccl":
        local_rank = env_int("LOCAL_RANK", 0, why="the GPU index of this rank on its host")
    else:
        local_rank = env_int("LOCAL_RANK", 0, default=0, why="the index of this rank on its host")
    if world % flags.stages != 0:
        raise UsageError("WORLD_SIZE=%d is not a multiple of --stages %d; expected a WORLD_SIZE "
                         "that --stages divides (ranks = stages x replicas)" % (world, flags.stages))
    return rank, world, local_rank


def run(flags):
    rank, world, local_rank = read_env(flags)
    torch.manual_seed(flags.seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    ann = Annotations(flags.trirace_tags == "on", flags.backend)
    if flags.backend == "hostccl":
        try:
            import_trirace()
            importlib.import_module("trirace.hostccl")  # registers the "hostccl" backend
        except Exception as e:
            raise UsageError("--backend hostccl needs the trirace package (python/trirace, on "
                             "PYTHONPATH or pip-installed) and its hostccl module: %s; "
                             "--backend gloo runs without it" % e) from None
    if flags.backend == "nccl":
        if not torch.cuda.is_available():
            raise UsageError("--backend nccl needs CUDA, which this torch does not see; "
                             "expected hostccl or gloo on a machine without GPUs")
        if local_rank >= torch.cuda.device_count():
            raise UsageError("LOCAL_RANK=%d but this host has %d GPU(s); expected 0 <= LOCAL_RANK < %d"
                             % (local_rank, torch.cuda.device_count(), torch.cuda.device_count()))
    dist.init_process_group(backend=flags.backend, init_method="env://",
                            rank=rank, world_size=world)
    t = Trainer(flags, rank, world, local_rank, ann)

    losses, step_ms = [], []
    cpu0 = wall0 = None
    sync = (lambda: torch.cuda.synchronize(t.device)) if t.nccl else (lambda: None)
    sync()
    last_end = time.perf_counter()
    for step in range(flags.steps):
        if step == flags.warmup_steps:
            cpu0, wall0 = time.process_time(), last_end
        ann.iteration_begin(step)
        loss = t.step(step)
        ann.iteration_end(step)
        sync()
        end = time.perf_counter()
        step_ms.append((end - last_end) * 1e3)
        last_end = end
        losses.append(loss)
    cpu_frac = (time.process_time() - cpu0) / max(last_end - wall0, 1e-9)
    t.finish()

    # Everything rank 0 reports, in one all-reduce (SUM) over the world.
    digests = t.digests()
    P, W, steps = len(t.global_names), world, flags.steps
    report = torch.zeros(steps + P * 32 + W * 33, dtype=torch.float64)
    if t.last:
        report[:steps] = torch.stack([x.to("cpu", torch.float64) for x in losses])
    if t.replica == 0:
        for i, name in enumerate(t.global_names):
            if name in digests:
                report[steps + 32 * i: steps + 32 * (i + 1)] = torch.tensor(list(digests[name]),
                                                                            dtype=torch.float64)
    stage_digest = hashlib.sha256(b"".join(digests[n] for n in sorted(digests))).digest()
    row = steps + P * 32 + rank * 33
    report[row:row + 32] = torch.tensor(list(stage_digest), dtype=torch.float64)
    report[row + 32] = cpu_frac
    report = report.to(t.device)
    dist.all_reduce(report)
    report = report.cpu()

    if rank == 0:
        per_param = bytes(int(v) for v in report[steps:steps + P * 32].tolist())
        rows = report[steps + P * 32:].reshape(W, 33)
        stage_digests = [bytes(int(v) for v in rows[r, :32].tolist()) for r in range(W)]
        agree = all(stage_digests[r] == stage_digests[(r // t.R) * t.R] for r in range(W))
        measured = step_ms[flags.warmup_steps:]
        result = {
            "example": "hybrid_train",
            "world_size": world,
            "stages": t.S,
            "replicas": t.R,
            "schedule": flags.schedule,
            "backend": flags.backend,
            "sparse_embedding": bool(flags.sparse_embedding),
            "steps": steps,
            "warmup_steps": flags.warmup_steps,
            "median_step_ms": statistics.median(measured),
            "step_ms": step_ms,
            "losses": [float(v) / t.R for v in report[:steps].tolist()],
            "weights_checksum": hashlib.sha256(per_param).hexdigest(),
            "replicas_agree": agree,
            "cpu": {"rank0": cpu_frac, "max": float(rows[:, 32].max())},
            # All ranks' CPU as a share of this machine's cores (the ranks of a test bed share them).
            "ranks_cpu_pct": 100 * float(rows[:, 32].sum()) / (os.cpu_count() or 1),
            "trirace": ann.describe(),
            "torch": torch.__version__,
            "config": {
                "layers": flags.layers, "hidden": flags.hidden, "heads": flags.heads,
                "seq": flags.seq, "vocab": flags.vocab, "micro_batches": flags.micro_batches,
                "micro_batch_size": flags.micro_batch_size,
                "global_batch": t.R * flags.micro_batches * flags.micro_batch_size,
                "lr": flags.lr, "seed": flags.seed, "bucket_mb": flags.bucket_mb,
            },
        }
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def main(argv=None):
    try:
        flags = parse_flags(sys.argv[1:] if argv is None else argv)
        run(flags)
    except UsageError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

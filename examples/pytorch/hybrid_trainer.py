"""The training of hybrid_train.py: TriRace annotations and the Trainer
(groups, schedules, DDP, the sparse embedding; see hybrid_train.py's
docstring)."""
import contextlib
import importlib
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from hybrid_model import GPT, Stage, lm_loss, param_digest

PROG = "hybrid_train.py"
ROLE_DP, ROLE_PP, ROLE_SPARSE = "data_parallel", "pipeline", "expert"


# ---------------------------------------------------------------------------
# TriRace annotations (no-ops without the package or with --trirace-tags off)


def import_trirace():
    """The trirace package, or None; adds <script>/../../python when needed."""
    try:
        return importlib.import_module("trirace")
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.normpath(os.path.join(here, "..", "..", "python")))
    try:
        return importlib.import_module("trirace")
    except ImportError:
        return None


class Annotations:
    def __init__(self, enabled, backend):
        self.backend = backend
        self.pkg = None
        self.torch_helpers = None
        self.import_error = None
        if not enabled:
            return
        self.pkg = import_trirace()
        if self.pkg is None:
            self.import_error = "trirace does not import"
            return
        try:
            self.torch_helpers = importlib.import_module("trirace.torch")
        except Exception as e:  # the package without its torch helpers: tags only
            self.import_error = "trirace.torch: %s" % e

    @property
    def active(self):
        return self.pkg is not None

    def tag(self, **fields):
        if self.pkg is None:
            return contextlib.nullcontext()
        return self.pkg.tag(**{k: v for k, v in fields.items() if v is not None})

    def iteration_begin(self, i):
        if self.pkg is not None:
            self.pkg.iteration_begin(i)

    def iteration_end(self, i):
        if self.pkg is not None:
            self.pkg.iteration_end(i)

    def comm_role(self, role):
        """A scope whose new NCCL communicators get `role` (trirace.comm_role)."""
        if self.pkg is None:
            return contextlib.nullcontext()
        return self.pkg.comm_role(role)

    def auto_tag(self, module, stage):
        if self.torch_helpers is None:
            return None
        return self.torch_helpers.auto_tag(module, stage=stage)

    def describe(self):
        d = {"tags": self.active, "torch_helpers": self.torch_helpers is not None}
        if self.pkg is not None:
            for key, fn in (("loaded", "loaded"), ("version", "version")):
                try:
                    d[key] = getattr(self.pkg, fn)()
                except Exception as e:
                    d[key] = "error: %s" % e
        if self.import_error:
            d["note"] = self.import_error
        return d


# ---------------------------------------------------------------------------
# Training


class Trainer:
    def __init__(self, flags, rank, world, local_rank, ann):
        self.f = flags
        self.rank, self.world = rank, world
        self.ann = ann
        S = flags.stages
        R = world // S
        self.S, self.R = S, R
        self.stage, self.replica = rank // R, rank % R
        self.first, self.last = self.stage == 0, self.stage == S - 1
        self.M, self.mbs = flags.micro_batches, flags.micro_batch_size
        self.nccl = flags.backend == "nccl"
        if self.nccl:
            torch.cuda.set_device(local_rank)
            self.device = torch.device("cuda", local_rank)
        else:
            self.device = torch.device("cpu")
        self.sparse = flags.sparse_embedding
        self.prev_rank = rank - R if not self.first else None
        self.next_rank = rank + R if not self.last else None

        self.make_groups()
        self.make_model()
        self.pending = []       # 2bw: gradient all-reduces launched this step
        self.ready = []         # 2bw: those of the previous step
        self.shard_grad_prev = None

    # -- groups -------------------------------------------------------------

    def make_groups(self):
        S, R = self.S, self.R
        # Each group is made, and runs one small all-reduce, inside a
        # trirace.comm_role scope: its communicator gets the role when it is
        # created (hostccl: in new_group; ProcessGroupNCCL: at the group's
        # first collective, or in new_group with eager init).
        self.dp = None
        for s in range(S):
            with self.ann.comm_role(ROLE_DP):
                g = dist.new_group([s * R + j for j in range(R)])
            if s == self.stage:
                self.dp = g
        self.pp = None
        if S > 1:
            for j in range(R):
                with self.ann.comm_role(ROLE_PP):
                    g = dist.new_group([s * R + j for s in range(S)])
                if j == self.replica:
                    self.pp = g
        self.sp = None
        if self.sparse:
            with self.ann.comm_role(ROLE_SPARSE):
                g = dist.new_group(list(range(R)))
            if self.first:
                self.sp = g
        # DP groups, then PP, then sparse: the groups of each kind are
        # disjoint, so this order cannot deadlock.
        for g, role in ((self.dp, ROLE_DP), (self.pp, ROLE_PP), (self.sp, ROLE_SPARSE)):
            if g is not None:
                with self.ann.comm_role(role):
                    dist.all_reduce(torch.ones(1, device=self.device), group=g)

    # -- model --------------------------------------------------------------

    def make_model(self):
        f = self.f
        full = GPT(f)
        names = {id(p): n for n, p in full.named_parameters()}
        self.global_names = [n for n, _ in full.named_parameters()]
        per = f.layers // self.S
        lo, hi = self.stage * per, (self.stage + 1) * per
        stage = Stage(full, self.first, self.last, lo, hi, dense_tok=not self.sparse)
        self.stage_names = [names[id(p)] for p in stage.parameters()]
        self.shard = None
        if self.first and self.sparse:
            self.rows = -(-f.vocab // self.R)
            r0 = self.replica * self.rows
            r1 = min(f.vocab, r0 + self.rows)
            shard = torch.zeros(self.rows, f.hidden)
            if r1 > r0:
                shard[: r1 - r0] = full.tok.weight.detach()[r0:r1]
            self.shard = shard.to(self.device)
            self.shard_grad = torch.zeros_like(self.shard)
        del full
        stage.to(self.device)
        self.module = stage
        self.params = list(stage.parameters())
        self.ddp = DistributedDataParallel(
            stage,
            device_ids=[self.device.index] if self.nccl else None,
            process_group=self.dp,
            broadcast_buffers=False,
            bucket_cap_mb=f.bucket_mb)
        if f.schedule == "2bw":
            self.ddp.register_comm_hook(None, self.stale_hook)
        if self.first and not self.sparse:
            self.dummy = torch.zeros(1, 1, dtype=torch.long, device=self.device)
        else:
            self.dummy = torch.zeros(1, 1, f.hidden, device=self.device)
        self.tag_handle = self.ann.auto_tag(stage, self.stage)

    def stale_hook(self, _state, bucket):
        """2bw: launch this bucket's all-reduce and return at once."""
        buf = bucket.buffer()
        params = bucket.parameters()
        sizes = []
        offset = 0
        for g in bucket.gradients():
            if g.data_ptr() != buf.data_ptr() + offset * buf.element_size():
                raise RuntimeError("DDP bucket layout: gradients are not consecutive in the buffer")
            sizes.append(g.numel())
            offset += g.numel()
        reduced = buf.div(self.R)  # a copy: DDP reuses its buffer next step
        with self.ann.tag(stage=self.stage, phase="backward", traffic_class="dense"):
            work = dist.all_reduce(reduced, group=self.dp, async_op=True)
        self.pending.append((params, sizes, reduced, work))
        fut = torch.futures.Future(devices=[self.device]) if self.nccl else torch.futures.Future()
        fut.set_result(buf)  # .grad keeps the local gradient; the optimizer replaces it
        return fut

    # -- data ---------------------------------------------------------------

    def batch(self, step):
        f = self.f
        G = self.R * self.M * self.mbs
        gen = torch.Generator().manual_seed(f.seed * 1000003 + 7919 + step)
        n = f.seq + 1
        start = torch.randint(0, f.vocab, (G, 1), generator=gen)
        stride = torch.randint(1, 4, (G, 1), generator=gen)
        toks = (start + stride * torch.arange(n)) % f.vocab
        noise = torch.rand(G, n, generator=gen) < 0.1
        toks = torch.where(noise, torch.randint(0, f.vocab, (G, n), generator=gen), toks)
        per = self.M * self.mbs
        mine = toks[self.replica * per:(self.replica + 1) * per].to(self.device)
        return [mine[i * self.mbs:(i + 1) * self.mbs] for i in range(self.M)]

    # -- point to point -----------------------------------------------------

    def act_shape(self):
        return (self.mbs, self.f.seq, self.f.hidden)

    def exchange(self, peer, send=None, recv=False, tag=None):
        """Send `send` to and/or receive one activation-sized tensor from peer."""
        buf = torch.empty(self.act_shape(), device=self.device) if recv else None
        with self.ann.tag(traffic_class="p2p", **tag):
            if self.nccl:
                ops = []
                if send is not None:
                    ops.append(dist.P2POp(dist.isend, send, peer, self.pp))
                if buf is not None:
                    ops.append(dist.P2POp(dist.irecv, buf, peer, self.pp))
                works = dist.batch_isend_irecv(ops)
            else:
                steps = []
                if send is not None:
                    steps.append(lambda: dist.isend(send, peer, group=self.pp))
                if buf is not None:
                    steps.append(lambda: dist.irecv(buf, peer, group=self.pp))
                if peer < self.rank:  # the upper stage of the pair receives first
                    steps.reverse()
                works = [s() for s in steps]
            for w in works:
                w.wait()
        return buf

    # -- sparse embedding ---------------------------------------------------

    def sparse_forward(self, ids, mb, step):
        """Rows of ids (mbs x seq) from the sharded table, gathered by owner."""
        R, rows = self.R, self.rows
        flat = ids.reshape(-1).contiguous()
        with self.ann.tag(stage=0, microbatch=mb, iteration=step, phase="forward",
                          traffic_class="sparse"):
            gathered = [torch.empty_like(flat) for _ in range(R)]
            dist.all_gather(gathered, flat, group=self.sp)
            # rows I own, for each replica in turn, in position order
            local = [g[torch.div(g, rows, rounding_mode="floor") == self.replica] - self.replica * rows
                     for g in gathered]
            send_sizes = [int(x.numel()) for x in local]
            send = self.shard.index_select(0, torch.cat(local))
            # my positions grouped by owner, in position order
            owner = torch.div(flat, rows, rounding_mode="floor")
            positions = [torch.nonzero(owner == j).reshape(-1) for j in range(R)]
            recv_sizes = [int(x.numel()) for x in positions]
            recv = torch.empty(flat.numel(), self.f.hidden, device=self.device)
            dist.all_to_all_single(recv, send, recv_sizes, send_sizes, group=self.sp)
        order = torch.cat(positions)
        emb = recv.index_select(0, torch.sort(order).indices)
        ctx = (local, send_sizes, order, recv_sizes)
        return emb.reshape(ids.shape[0], ids.shape[1], -1), ctx

    def sparse_backward(self, grad, ctx, mb, step):
        local, send_sizes, order, recv_sizes = ctx
        g = grad.reshape(-1, grad.shape[-1]).index_select(0, order)
        back = torch.empty(sum(send_sizes), grad.shape[-1], device=self.device)
        with self.ann.tag(stage=0, microbatch=mb, iteration=step, phase="backward",
                          traffic_class="sparse"):
            dist.all_to_all_single(back, g, send_sizes, recv_sizes, group=self.sp)
        self.shard_grad.index_put_((torch.cat(local),), back, accumulate=True)

    # -- one micro-batch ----------------------------------------------------

    def forward(self, mb, step, tokens, received):
        with self.ann.tag(stage=self.stage, microbatch=mb, iteration=step, phase="forward"):
            ctx = None
            if self.first:
                ids = tokens[mb][:, :-1]
                if self.sparse:
                    x, ctx = self.sparse_forward(ids, mb, step)
                    x.requires_grad_(True)
                else:
                    x = ids
            else:
                x = received.requires_grad_(True)
            with self.ddp.no_sync():
                out = self.ddp(x)
            if self.last:
                targets = tokens[mb][:, 1:]
                out = lm_loss(out, targets) / self.M
                self.step_loss = out.detach() + (0 if self.step_loss is None else self.step_loss)
        return (mb, x, out, ctx)

    def backward(self, item, grad_out, step):
        mb, x, out, ctx = item
        with self.ann.tag(stage=self.stage, microbatch=mb, iteration=step, phase="backward"):
            if mb == self.M - 1:
                self.ddp(self.dummy)  # arms DDP: this backward all-reduces
            if self.last:
                out.backward()
            else:
                torch.autograd.backward(out, grad_out)
            if self.first:
                if self.sparse:
                    self.sparse_backward(x.grad, ctx, mb, step)
                return None
            return x.grad

    # -- one step -----------------------------------------------------------

    def step(self, step):
        S, M = self.S, self.M
        tokens = self.batch(step)
        self.step_loss = None
        warm = min(S - self.stage - 1, M)
        steady = M - warm
        stash = []

        def recv_forward(mb):
            if self.first:
                return None
            return self.exchange(self.prev_rank, recv=True,
                                 tag=dict(stage=self.stage, microbatch=mb, iteration=step,
                                          phase="forward"))

        for mb in range(warm):
            item = self.forward(mb, step, tokens, recv_forward(mb))
            self.exchange(self.next_rank, send=item[2].detach(),
                          tag=dict(stage=self.stage, microbatch=mb, iteration=step, phase="forward"))
            stash.append(item)
        received = recv_forward(warm) if steady > 0 else None
        for j in range(steady):
            mb = warm + j
            item = self.forward(mb, step, tokens, received)
            stash.append(item)
            grad = None
            if not self.last:  # send forward, receive backward
                grad = self.exchange(self.next_rank, send=item[2].detach(), recv=True,
                                     tag=dict(stage=self.stage, microbatch=mb, iteration=step,
                                              phase="forward"))
            oldest = stash.pop(0)
            gin = self.backward(oldest, grad, step)
            received = None
            if not self.first:
                if j == steady - 1:  # send backward
                    self.exchange(self.prev_rank, send=gin,
                                  tag=dict(stage=self.stage, microbatch=oldest[0], iteration=step,
                                           phase="backward"))
                else:  # send backward, receive forward
                    received = self.exchange(self.prev_rank, send=gin, recv=True,
                                             tag=dict(stage=self.stage, microbatch=oldest[0],
                                                      iteration=step, phase="backward"))
        for _ in range(warm):
            oldest = stash.pop(0)
            grad = self.exchange(self.next_rank, recv=True,
                                 tag=dict(stage=self.stage, microbatch=oldest[0], iteration=step,
                                          phase="backward"))
            gin = self.backward(oldest, grad, step)
            if not self.first:
                self.exchange(self.prev_rank, send=gin,
                              tag=dict(stage=self.stage, microbatch=oldest[0], iteration=step,
                                       phase="backward"))
        with self.ann.tag(stage=self.stage, iteration=step, phase="optimizer"):
            self.optimizer_step()
        return self.step_loss

    def optimizer_step(self):
        lr = self.f.lr
        with torch.no_grad():
            if self.f.schedule == "1f1b":
                for p in self.params:
                    p.add_(p.grad, alpha=-lr)
                if self.shard is not None:
                    self.shard.add_(self.shard_grad.div(self.R), alpha=-lr)
            else:
                ready, self.ready, self.pending = self.ready, self.pending, []
                self.apply_stale(ready)
                if self.shard is not None:
                    if self.shard_grad_prev is not None:
                        self.shard.add_(self.shard_grad_prev.div(self.R), alpha=-lr)
                    self.shard_grad_prev = self.shard_grad.clone()
            for p in self.params:
                p.grad = None
            if self.shard is not None:
                self.shard_grad.zero_()

    def apply_stale(self, launched):
        """2bw: apply the averaged gradient of the previous step, if any."""
        for params, sizes, reduced, work in launched:
            work.wait()
            offset = 0
            for p, n in zip(params, sizes):
                p.add_(reduced[offset:offset + n].view_as(p), alpha=-self.f.lr)
                offset += n

    def finish(self):
        """Wait for what is still in flight (2bw's last gradient, dropped)."""
        for _, _, _, work in self.ready + self.pending:
            work.wait()
        self.ready, self.pending = [], []
        if self.tag_handle is not None:
            self.tag_handle.remove()

    # -- results ------------------------------------------------------------

    def digests(self):
        """Per-parameter digests of this stage {global name: digest}."""
        out = {}
        for name, p in zip(self.stage_names, self.params):
            out[name] = param_digest(name, p)
        if self.first and self.sparse:
            parts = [torch.empty_like(self.shard) for _ in range(self.R)]
            dist.all_gather(parts, self.shard, group=self.sp)
            table = torch.cat(parts)[: self.f.vocab]
            out["tok.weight"] = param_digest("tok.weight", table)
        return out

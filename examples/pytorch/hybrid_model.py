"""The model of hybrid_train.py: a small GPT, its pipeline stages, the loss
and the weight digests (see hybrid_train.py's docstring)."""
import hashlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------
# Model


class Block(nn.Module):
    """Pre-LN transformer block: causal self-attention and a GELU MLP."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        hd = h // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 / math.sqrt(hd))
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """The whole model; every rank builds it, then keeps one stage of it."""

    def __init__(self, flags):
        super().__init__()
        self.tok = nn.Embedding(flags.vocab, flags.hidden)
        self.pos = nn.Parameter(torch.zeros(flags.seq, flags.hidden))
        self.blocks = nn.ModuleList(Block(flags.hidden, flags.heads) for _ in range(flags.layers))
        self.ln_f = nn.LayerNorm(flags.hidden)
        self.head = nn.Linear(flags.hidden, flags.vocab, bias=False)
        gen = torch.Generator().manual_seed(flags.seed)
        with torch.no_grad():
            self.pos.normal_(0.0, 0.02, generator=gen)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.weight.normal_(0.0, 0.02, generator=gen)
                    if getattr(m, "bias", None) is not None:
                        m.bias.zero_()
                elif isinstance(m, nn.LayerNorm):
                    m.weight.fill_(1.0)
                    m.bias.zero_()


class Stage(nn.Module):
    """One pipeline stage: [token emb] [+ positions] blocks [final LN + head]."""

    def __init__(self, full, first, last, lo, hi, dense_tok):
        super().__init__()
        self.first, self.last = first, last
        if first:
            if dense_tok:
                self.tok = full.tok
            self.pos = full.pos
        self.blocks = nn.ModuleList(full.blocks[lo:hi])
        if last:
            self.ln_f = full.ln_f
            self.head = full.head

    def forward(self, x):
        if self.first:
            if hasattr(self, "tok"):
                x = self.tok(x)
            x = x + self.pos[: x.shape[1]]
        for block in self.blocks:
            x = block(x)
        if self.last:
            x = self.head(self.ln_f(x))
        return x


def lm_loss(logits, targets):
    """Token-mean cross entropy, written out: F.cross_entropy's NLL step has
    no deterministic CUDA implementation in some torch versions."""
    logits = logits.reshape(-1, logits.shape[-1])
    picked = logits.gather(1, targets.reshape(-1, 1)).squeeze(1)
    return (torch.logsumexp(logits, dim=1) - picked).mean()


# ---------------------------------------------------------------------------
# Digests


def tensor_bytes(t):
    t = t.detach().to("cpu").contiguous()
    try:
        return t.numpy().tobytes()
    except (RuntimeError, TypeError, ImportError):  # a torch without numpy
        return bytes(t.reshape(-1).view(torch.uint8).tolist())


def param_digest(name, t):
    h = hashlib.sha256()
    h.update(("%s %s %s;" % (name, str(t.dtype), list(t.shape))).encode())
    h.update(tensor_bytes(t))
    return h.digest()

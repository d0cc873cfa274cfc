"""The GPT-style decoder of the training benchmark, built from taco.torch's TP layers."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import taco.torch as tt

from .config import VOCAB


class Block(nn.Module):
    def __init__(self, cfg, tp, dev):
        super().__init__()
        d, P = cfg["d_model"], tp.size
        self.d, self.P, self.heads = d, P, cfg["heads"]
        if self.heads % P or d % self.heads:
            raise SystemExit(f"heads ({self.heads}) must divide by TP ({P}) and d_model ({d}) by heads")
        self.hd = d // self.heads
        self.ln1 = nn.LayerNorm(d, device=dev)
        self.ln2 = nn.LayerNorm(d, device=dev)
        self.qkv = tt.ColumnParallelLinear(d, 3 * d, tp, device=dev, dtype=torch.float32)
        self.proj = tt.RowParallelLinear(d, d, tp, device=dev, dtype=torch.float32)
        self.up = tt.ColumnParallelLinear(d, cfg["mlp"], tp, device=dev, dtype=torch.float32)
        self.down = tt.RowParallelLinear(cfg["mlp"], d, tp, device=dev, dtype=torch.float32)
        self.cdtype = None

    @torch.no_grad()
    def init_from(self, g, std, out_std):
        """Draw the full (unsharded) weights on the CPU from generator g and keep the shards,
        so a seed gives the same model at every TP size. QKV: rank r's shard is
        [Q rows, K rows, V rows] of its heads (Megatron's per-rank layout)."""
        d, P, k = self.d, self.P, self.d // self.P
        Wq, Wk, Wv = (torch.randn(d, d, generator=g) * std for _ in range(3))
        for r in range(P):
            self.qkv.weights[r].copy_(torch.cat([W[r * k:(r + 1) * k] for W in (Wq, Wk, Wv)]))
            self.qkv.biases[r].zero_()
        for lin, out_dim, in_dim, s in ((self.up, self.up.out_features, d, std),):
            W = torch.randn(out_dim, in_dim, generator=g) * s
            kk = out_dim // P
            for r in range(P):
                lin.weights[r].copy_(W[r * kk:(r + 1) * kk])
                lin.biases[r].zero_()
        for lin in (self.proj, self.down):
            W = torch.randn(lin.out_features, lin.in_features, generator=g) * out_std
            kk = lin.in_features // P
            for r in range(P):
                lin.weights[r].copy_(W[:, r * kk:(r + 1) * kk])
            lin.bias.zero_()

    def _c(self, x):
        return x if self.cdtype is None else x.to(self.cdtype)

    def forward(self, x):
        B, T, _ = x.shape
        hl = self.heads // self.P
        outs = []
        for t in self.qkv(self._c(self.ln1(x))):  # one (B, T, 3d/P) tensor per TP rank
            q, k, v = (u.reshape(B, T, hl, self.hd).transpose(1, 2) for u in t.split(self.d // self.P, dim=-1))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            outs.append(y.transpose(1, 2).reshape(B, T, self.d // self.P))
        x = x + self.proj(outs)
        x = x + self.down([F.gelu(u) for u in self.up(self._c(self.ln2(x)))])
        return x


class GPT(nn.Module):
    def __init__(self, cfg, tp, dev, seed):
        super().__init__()
        d = cfg["d_model"]
        self.wte = nn.Embedding(VOCAB, d, device=dev)
        self.wpe = nn.Embedding(cfg["seq"], d, device=dev)
        self.blocks = nn.ModuleList([Block(cfg, tp, dev) for _ in range(cfg["layers"])])
        self.ln_f = nn.LayerNorm(d, device=dev)
        self.head = None if cfg["tied"] else nn.Linear(d, VOCAB, bias=False, device=dev)
        g = torch.Generator().manual_seed(int(seed))
        std, out_std = 0.02, 0.02 / math.sqrt(2 * cfg["layers"])
        with torch.no_grad():
            self.wte.weight.copy_(torch.randn(VOCAB, d, generator=g) * std)
            self.wpe.weight.copy_(torch.randn(cfg["seq"], d, generator=g) * 0.01)
            if self.head is not None:
                self.head.weight.copy_(torch.randn(VOCAB, d, generator=g) * std)
        for b in self.blocks:
            b.init_from(g, std, out_std)

    def set_compute_dtype(self, dt):
        for b in self.blocks:
            b.cdtype = dt

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight if self.head is None else self.head.weight)
        return F.cross_entropy(logits.float().reshape(-1, VOCAB), targets.reshape(-1))

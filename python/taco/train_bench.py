"""python -m taco train: a tensor-parallel training benchmark that tells codecs apart.

A GPT-style decoder (pre-LN, causal attention, GELU MLP, learned positions, tied
byte embeddings) built from taco.torch's TP layers: per block, the attention QKV and
the MLP up-projection are ColumnParallelLinear (their input gradient is AllReduced
in backward), the attention output and the MLP down-projection are RowParallelLinear
(their partial outputs are AllReduced in forward); heads are split across TP ranks.
So every block issues 4 TP AllReduces per step (2 forward, 2 backward).

Backends (what sums the TP partials):
  taco       libtaco's compressed AllReduce on the loopback transport: the P TP ranks
             run on this one GPU (taco.torch.TPGroup.loopback, fallback_bytes=0 so
             every message is compressed). The real code path. Codec `exact` = libtaco's
             codec none (the plain loopback kernel: fp32 sum in rank order).
  cpu-exact  the exact sum on the CPU (fp64 sum of the P partials rounded to the dtype);
             no libtaco. Codec must be `exact`.
  cpu-ref    taco.reference.allreduce(parts, codec) on the CPU: the numpy model of the
             two-shot AllReduce, bit-exact with the GPU library. Slow; for tiny runs.

Codecs: `exact` (codec none), every registry codec (bf16 taco taco-e5m2 fp8-block
int8-hadamard int8-block int4-block), and two ablations of the paper that are not
registry codecs: pt-fp8 (per-tensor FP8 E4M3 scale) and rot-pt-fp8 (Walsh-Hadamard
rotation per 256-block, one scale per tensor). On cpu-ref these are taco.accuracy's
numpy models; on the taco backend they are torch emulations (not libtaco) of the same
two-shot scheme, flagged `emulated` in the log.

Data: bytes of real text available offline: Python's help topics (pydoc_data.topics)
then the stdlib's own .py/.txt files (sorted paths), one document each; every 20th
document is held out for validation. `--corpus pydoc` uses the help topics only.
Batches are drawn at random offsets from a generator seeded by (seed, step): the data
position is the step number, so checkpoint/resume is exact.

Logged (--out DIR, one DIR/<run>.json per run, rewritten at every eval): per-step train
loss, val loss at every eval (`val`: forward through the run's collective, as a
compressed TP deployment sees it; `val_exact`: the same weights through the exact
sum, which isolates what compression did to training), grad norm, skipped (fp16
overflow) steps, AllReduce calls/elements per step, ms/step.

    python -m taco train --preset small --tp 8 --codec taco --steps 3000 --out runs/
    python -m taco train --sweep --preset small --tp 8 --seeds 0,1,2 --out runs/
    python -m taco train --summary runs/          # the sweep table from the JSON logs
    python -m taco train --plot runs/             # runs/val_curves.png (needs matplotlib)
    python -m taco train --preset tiny --backend cpu-ref --codec taco --steps 20
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import statistics
import sys
import time

import numpy as np

REGISTRY = ["bf16", "taco", "taco-e5m2", "fp8-block", "int8-hadamard", "int8-block", "int4-block"]
ABLATIONS = ["pt-fp8", "rot-pt-fp8"]
BASELINE = "exact"
CONTROL = "int4-block"
ALL_CODECS = [BASELINE] + REGISTRY + ABLATIONS
BACKENDS = ("taco", "cpu-exact", "cpu-ref")

# layers, d_model, heads, mlp hidden, seq, batch, lr, warmup, steps
PRESETS = {
    "tiny": dict(layers=4, d_model=128, heads=8, mlp=512, seq=64, batch=8, lr=3e-3, warmup=20, steps=200),
    "small": dict(layers=6, d_model=512, heads=8, mlp=2048, seq=256, batch=32, lr=1e-3, warmup=200, steps=3000),
    "base": dict(layers=12, d_model=768, heads=16, mlp=3072, seq=512, batch=32, lr=6e-4, warmup=500, steps=5000),
}
VOCAB = 256  # byte-level
VAL_EVERY_NTH_DOC = 20
CKPT_VERSION = 1


# ------------------------------------------------------------------ corpus


def corpus_documents(which: str = "stdlib") -> list:
    """The documents (bytes), deterministic order: help topics, then (stdlib) every
    .py/.txt file of the standard library by sorted relative path, without
    site-packages/dist-packages/__pycache__."""
    import pydoc_data.topics as topics

    docs = [topics.topics[k].encode("utf-8") for k in sorted(topics.topics)]
    if which == "pydoc":
        return docs
    if which != "stdlib":
        raise ValueError(f"unknown corpus {which!r} (stdlib, pydoc)")
    import sysconfig

    root = sysconfig.get_paths()["stdlib"]
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in ("site-packages", "dist-packages", "__pycache__")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith((".py", ".txt"))]
    for rel in sorted(files):
        try:
            with open(os.path.join(root, rel), "rb") as f:
                docs.append(f.read())
        except OSError:
            continue
    return docs


class Corpus:
    """Train and validation byte streams (documents joined by a blank line)."""

    def __init__(self, which: str = "stdlib"):
        docs = corpus_documents(which)
        tr = [d for i, d in enumerate(docs) if i % VAL_EVERY_NTH_DOC != VAL_EVERY_NTH_DOC - 1]
        va = [d for i, d in enumerate(docs) if i % VAL_EVERY_NTH_DOC == VAL_EVERY_NTH_DOC - 1]
        self.train = np.frombuffer(b"\n\n".join(tr), np.uint8)
        self.val = np.frombuffer(b"\n\n".join(va), np.uint8)
        h = hashlib.sha256()
        for d in docs:
            h.update(hashlib.sha256(d).digest())
        self.sha256 = h.hexdigest()[:16]
        self.name, self.documents = which, len(docs)

    def info(self) -> dict:
        return {"corpus": self.name, "documents": self.documents, "train_bytes": int(self.train.size),
                "val_bytes": int(self.val.size), "sha256": self.sha256}


def batch_offsets(n: int, seq: int, batch: int, seed: int, step: int) -> np.ndarray:
    """Random window starts for `step`: a pure function of (seed, step)."""
    return np.random.default_rng([int(seed), int(step), 0x7A]).integers(0, n - seq - 1, size=batch)


def val_offsets(n: int, seq: int, count: int) -> np.ndarray:
    """`count` fixed, evenly spread windows of the validation stream."""
    span = n - seq - 1
    if span <= 0:
        raise ValueError("validation split shorter than one sequence")
    return (np.arange(count, dtype=np.int64) * span) // max(1, count)


# ------------------------------------------------------------------ summaries (pure python)


def sweep_summary(finals: dict, control: str = CONTROL, factor: float = 3.0, paired: dict | None = None) -> dict:
    """finals: {codec: [final val loss per seed]}, with BASELINE's list the baseline seeds.
    spread = max - min of the baseline (the seed-to-seed spread, conservative), std its
    sample standard deviation; each codec: delta = mean - baseline mean, rel = delta /
    baseline mean, ratio = delta / spread, sigmas = delta / std, above = every run of the
    codec is worse than every baseline run. The control discriminates when its delta is
    >= factor * spread (the range grows with the number of seeds, about 1.7 std for 3 and
    2.3 std for 5, so sigmas is printed beside it). paired: {codec: [codec - baseline of the
    same seed, ...]}, shown beside the unpaired delta (same init and data order)."""
    base = [float(v) for v in finals.get(BASELINE, [])]
    if len(base) < 2:
        raise ValueError(f"need >= 2 baseline ({BASELINE}) seeds for a spread, got {len(base)}")
    mean = statistics.fmean(base)
    spread = max(base) - min(base)
    std = statistics.stdev(base)
    rows = []
    for c, vals in finals.items():
        vals = [float(v) for v in vals]
        m = statistics.fmean(vals) if vals else float("nan")
        d = m - mean
        pd = (paired or {}).get(c, [])
        rows.append({"codec": c, "n": len(vals), "mean": m, "delta": d, "rel": d / mean,
                     "ratio": d / spread if spread > 0 else (math.inf if d > 0 else 0.0),
                     "sigmas": d / std if std > 0 else (math.inf if d > 0 else 0.0),
                     "above": bool(vals) and c != BASELINE and min(vals) > max(base),
                     "inside_floor": abs(d) <= spread,
                     "paired_rel": statistics.fmean(pd) / mean if pd else None, "paired_n": len(pd)})
    ctl = next((r for r in rows if r["codec"] == control), None)
    verdict = None
    if ctl is not None:
        verdict = bool(math.isfinite(ctl["delta"]) and ctl["delta"] >= factor * spread) or not math.isfinite(ctl["mean"])
    return {"baseline_mean": mean, "spread": spread, "std": std, "baseline_n": len(base), "rows": rows,
            "control": control, "factor": factor, "control_discriminates": verdict}


def format_summary(s: dict) -> str:
    out = [f"baseline ({BASELINE}) val loss: mean {s['baseline_mean']:.5f} over {s['baseline_n']} seeds, "
           f"spread (max-min) {s['spread']:.5f} = {100 * s['spread'] / s['baseline_mean']:.3f}%, "
           f"std {s['std']:.5f}",
           f"{'codec':<16}{'seeds':>6}{'val':>11}{'delta':>10}{'rel %':>9}{'x spread':>10}{'x std':>8}"
           f"  inside floor  paired rel % (pairs)"]
    for r in s["rows"]:
        pr = "" if r.get("paired_rel") is None else f"  {100 * r['paired_rel']:+.3f} ({r['paired_n']})"
        out.append(f"{r['codec']:<16}{r['n']:>6}{r['mean']:>11.5f}{r['delta']:>+10.5f}{100 * r['rel']:>+9.3f}"
                   f"{r['ratio']:>10.2f}{r['sigmas']:>8.1f}  {'yes' if r['inside_floor'] else 'no ':<12}{pr}")
    v = s["control_discriminates"]
    if v is None:
        out.append(f"control {s['control']}: not run")
    else:
        ctl = next(r for r in s["rows"] if r["codec"] == s["control"])
        out.append(f"control {s['control']} degrades by >= {s['factor']:g}x the baseline spread: "
                   f"{'YES (the benchmark discriminates)' if v else 'NO (the benchmark does not discriminate)'}"
                   f" [{ctl['ratio']:.2f}x spread, {ctl['sigmas']:.1f}x std; every control run worse than every "
                   f"baseline run: {'yes' if ctl['above'] else 'no'}]")
    return "\n".join(out)


def load_logs(d: str) -> list:
    logs = []
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "taco-train":
            logs.append(doc)
    return logs


def run_value(lg: dict, key: str = "val", at_step: int | None = None, tail: int = 1):
    """The run's val loss: the mean of its last `tail` evals at or before `at_step` (default:
    the last eval); None when the run has not reached `at_step`."""
    ev = [e for e in lg["evals"] if e.get(key) is not None and (at_step is None or e["step"] <= at_step)]
    if not ev or (at_step is not None and ev[-1]["step"] != at_step):
        return None
    return statistics.fmean(e[key] for e in ev[-tail:])


def _run_values(logs: list, key: str, finished_only: bool, at_step: int | None, tail: int) -> list:
    """(codec, seed, value) of every run that counts: with at_step, each run that reached it
    (every run of a sweep shares one LR schedule, so equal steps compare); else the finished runs."""
    out = []
    for lg in logs:
        if finished_only and at_step is None and not lg.get("finished"):
            continue
        v = run_value(lg, key, at_step, tail)
        if v is not None:
            out.append((lg["config"]["codec"], lg["config"]["seed"], v))
    return out


def finals_from_logs(logs: list, key: str = "val", finished_only: bool = True, at_step: int | None = None,
                     tail: int = 1) -> dict:
    """{codec: [value per run]}."""
    finals: dict = {}
    for codec, _, v in _run_values(logs, key, finished_only, at_step, tail):
        finals.setdefault(codec, []).append(v)
    return finals


def paired_from_logs(logs: list, key: str = "val", finished_only: bool = True, at_step: int | None = None,
                     tail: int = 1) -> dict:
    """{codec: [value - baseline value of the same seed]} for the seeds that have both."""
    vals = {(codec, seed): v for codec, seed, v in _run_values(logs, key, finished_only, at_step, tail)}
    out: dict = {}
    for (c, seed), v in vals.items():
        if c != BASELINE and (BASELINE, seed) in vals:
            out.setdefault(c, []).append(v - vals[(BASELINE, seed)])
    return out


def plot_dir(d: str, path: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = load_logs(d)
    if not logs:
        raise SystemExit(f"--plot: no taco-train JSON logs in {d}")
    path = path or os.path.join(d, "val_curves.png")
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    codecs = list(dict.fromkeys(lg["config"]["codec"] for lg in logs))
    colors = {c: plt.cm.tab10(i % 10) for i, c in enumerate(c for c in codecs if c != BASELINE)}
    seen = set()
    for lg in logs:
        c = lg["config"]["codec"]
        ev = lg["evals"]
        col = "k" if c == BASELINE else colors[c]
        lab = None if c in seen else c
        seen.add(c)
        for ax in axes:
            ax.plot([e["step"] for e in ev], [e["val"] for e in ev], color=col, lw=1.0 if c == BASELINE else 1.4,
                    alpha=0.7 if c == BASELINE else 0.9, label=lab)
    cfg = logs[0]["config"]
    axes[0].set_title(f"validation loss: {cfg['preset']}, TP={cfg['tp']}, {cfg['dtype']} ({len(logs)} runs)")
    steps = [e["step"] for lg in logs for e in lg["evals"]]
    last = max(steps) if steps else 1
    tail = [e["val"] for lg in logs for e in lg["evals"] if e["step"] >= 0.5 * last]
    axes[1].set_xlim(0.5 * last, last * 1.01)
    if tail:
        lo, hi = min(tail), max(tail)
        axes[1].set_ylim(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9))
    axes[1].set_title("second half (zoom); black: exact baseline seeds")
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("val loss (nats/byte)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ everything that needs torch


def _torch_parts():
    """Model, TP groups and the training loop (imports torch)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    import taco.torch as tt

    from . import accuracy
    from . import reference as ref

    # -------------------------------------------------------------- collectives

    class TrainTP(tt.TPGroup):
        """P TP ranks in this process; `reduce(tensors, outs)` does the sum. Counts calls
        and elements, and (when `watch`) non-finite values in and out, on the device
        (no host sync until read)."""

        def __init__(self, P, reduce, comms=None, name=""):
            self.comms = list(comms) if comms is not None else [None] * P
            self.size = P
            self.local_ranks = list(range(P))
            self.reduce, self.name = reduce, name
            self.calls = 0
            self.elements = 0
            self.watch = False
            self.nf = None

        def all_reduce_(self, tensors, outs=None):
            tensors = list(tensors)
            outs = tensors if outs is None else list(outs)
            if self.watch:
                bad_in = torch.stack([(~torch.isfinite(t)).any() for t in tensors]).any()
            self.reduce(tensors, outs)
            self.calls += 1
            self.elements += tensors[0].numel()
            if self.watch:
                bad_out = torch.stack([(~torch.isfinite(o)).any() for o in outs]).any()
                v = torch.stack([bad_in, bad_out, bad_in & ~bad_out]).to(torch.int64)
                self.nf = v if self.nf is None else self.nf + v
            return outs

        def read_nonfinite(self) -> dict:
            v = [0, 0, 0] if self.nf is None else [int(x) for x in self.nf.tolist()]
            self.nf = None
            return {"calls_nonfinite_in": v[0], "calls_nonfinite_out": v[1], "calls_nonfinite_lost": v[2]}

    def exact_sum(tensors, outs):
        s = sum(t.double() for t in tensors).to(tensors[0].dtype)
        for o in outs:
            o.copy_(s)

    def rank_order_sum(tensors, outs):  # libtaco's plain path: fp32 in rank order
        s = tensors[0].float()
        for t in tensors[1:]:
            s = s + t.float()
        s = s.to(tensors[0].dtype)
        for o in outs:
            o.copy_(s)

    def _to_np(t):
        t = t.detach().contiguous().cpu().reshape(-1)
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()

    def _from_np(a, like):
        if like.dtype == torch.bfloat16:
            return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(a))

    def ref_reduce(codec):
        def f(tensors, outs):
            parts = [_to_np(t) for t in tensors]
            if codec in ABLATIONS:
                y = accuracy.allreduce_pertensor(parts, rotate=codec == "rot-pt-fp8")
            else:
                y = ref.allreduce(parts, "none" if codec == BASELINE else codec)
            y = _from_np(y, tensors[0]).reshape(tensors[0].shape).to(tensors[0].device)
            for o in outs:
                o.copy_(y)
        return f

    _H = {}

    def _wht(v):  # orthonormal 256-point Walsh-Hadamard per block (matrix form)
        key = v.device
        if key not in _H:
            _H[key] = torch.from_numpy(ref._fwht(np.eye(256, dtype=np.float32)) * np.float32(1 / 16)).to(v.device)
        return (v.reshape(-1, 256) @ _H[key]).reshape(-1)

    def _pt_roundtrip(x, rotate):
        n = x.numel()
        v = torch.zeros(-(-n // 256) * 256, dtype=torch.float32, device=x.device)
        v[:n] = x.reshape(-1).float()
        if rotate:
            v = _wht(v)
        m = v.abs().max()
        q = (v * (448.0 / m)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float()
        d = torch.where(m > 0, q * (m / 448.0), torch.zeros_like(q))
        if rotate:
            d = _wht(d)
        return d[:n]

    def emulated_pertensor(rotate):
        """torch emulation of accuracy.allreduce_pertensor (two-shot, one scale per tensor)."""
        def f(tensors, outs):
            P, n, dt = len(tensors), tensors[0].numel(), tensors[0].dtype
            sent = [_pt_roundtrip(t, rotate) for t in tensors]
            y = torch.empty(n, dtype=dt, device=tensors[0].device)
            for o, (off, ln) in enumerate(ref.shard_plan(n, P, 256)):
                if ln == 0:
                    continue
                acc = torch.zeros(ln, dtype=torch.float32, device=y.device)
                for j in range(P):
                    if j != o:
                        acc = acc + sent[j][off:off + ln]
                acc = acc + tensors[o].reshape(-1)[off:off + ln].float()
                y[off:off + ln] = _pt_roundtrip(acc, rotate).to(dt)
            y = y.reshape(tensors[0].shape)
            for o in outs:
                o.copy_(y)
        return f

    def make_tp(backend, codec, P):
        """(TrainTP, close function, notes)"""
        if backend == "cpu-exact":
            if codec != BASELINE:
                raise SystemExit(f"--backend cpu-exact computes the exact sum: codec must be {BASELINE!r}, got {codec!r}")
            return TrainTP(P, exact_sum, name="cpu-exact: fp64 sum rounded to the dtype"), (lambda: None), ""
        if backend == "cpu-ref":
            what = ("taco.accuracy.allreduce_pertensor (numpy ablation)" if codec in ABLATIONS
                    else f"taco.reference.allreduce(parts, {('none' if codec == BASELINE else codec)!r})")
            return TrainTP(P, ref_reduce(codec), name=f"cpu-ref: {what}"), (lambda: None), ""
        if codec in ABLATIONS:
            return (TrainTP(P, emulated_pertensor(codec == "rot-pt-fp8"),
                            name=f"emulated {codec} in torch (not libtaco)"), (lambda: None), "emulated")
        lib_codec = "none" if codec == BASELINE else codec
        inner = tt.TPGroup.loopback(P, codec=lib_codec, fallback_bytes=0)
        tp = TrainTP(P, inner.all_reduce_, comms=inner.comms,
                     name=f"libtaco loopback P={P} codec {lib_codec} fallback_bytes=0")
        return tp, inner.close, ""

    # -------------------------------------------------------------- model

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

    return dict(torch=torch, TrainTP=TrainTP, make_tp=make_tp, GPT=GPT, exact_sum=exact_sum,
                rank_order_sum=rank_order_sum, emulated_pertensor=emulated_pertensor, ref_reduce=ref_reduce)


# ------------------------------------------------------------------ config


CORE_KEYS = ("preset", "layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps", "tp",
             "codec", "backend", "dtype", "seed", "tied", "corpus", "weight_decay", "clip", "eval_batches")


def make_config(args) -> dict:
    if args.preset not in PRESETS:
        raise SystemExit(f"--preset: unknown preset {args.preset!r} ({', '.join(PRESETS)})")
    cfg = dict(PRESETS[args.preset])
    for k in ("layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps"):
        v = getattr(args, k, None)
        if v is not None:
            cfg[k] = v
    cfg.update(preset=args.preset, tp=args.tp, codec=args.codec, backend=args.backend, dtype=args.dtype,
               seed=args.seed, tied=not args.untied, corpus=args.corpus, weight_decay=args.weight_decay,
               clip=args.clip, eval_batches=args.eval_batches)
    if cfg["codec"] not in ALL_CODECS:
        raise SystemExit(f"--codec: unknown codec {cfg['codec']!r} ({', '.join(ALL_CODECS)})")
    if cfg["backend"] not in BACKENDS:
        raise SystemExit(f"--backend: {cfg['backend']!r} is not one of {', '.join(BACKENDS)}")
    return cfg


def config_argv(cfg: dict) -> list:
    """Command-line arguments that make_config turns back into `cfg` (for the sweep's workers)."""
    argv = ["--preset", cfg["preset"], "--tp", str(cfg["tp"]), "--codec", cfg["codec"], "--backend", cfg["backend"],
            "--dtype", cfg["dtype"], "--seed", str(cfg["seed"]), "--corpus", cfg["corpus"],
            "--weight-decay", repr(cfg["weight_decay"]), "--clip", repr(cfg["clip"]),
            "--eval-batches", str(cfg["eval_batches"])]
    for k in ("layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps"):
        argv += ["--" + k.replace("_", "-"), repr(cfg[k])]
    return argv + ([] if cfg["tied"] else ["--untied"])


def run_name(cfg: dict) -> str:
    return f"{cfg['preset']}-tp{cfg['tp']}-{cfg['dtype']}-{cfg['backend']}-{cfg['codec']}-s{cfg['seed']}"


def lr_at(cfg: dict, step: int) -> float:
    """Linear warmup to lr, then cosine to lr/10 at `steps` (step counts from 1)."""
    lr, w, n = cfg["lr"], cfg["warmup"], cfg["steps"]
    if step <= w:
        return lr * step / max(1, w)
    t = min(1.0, (step - w) / max(1, n - w))
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


# ------------------------------------------------------------------ training


_CORPUS_CACHE: dict = {}


def capture_sites(cfg: dict) -> list:
    """(name, direction) of the TP AllReduces of one training step, in call order: forward,
    each layer's attention output and MLP down projections (row-parallel partial outputs);
    backward, from the last layer down, its MLP up and QKV input gradients (column-parallel)."""
    L = cfg["layers"]
    fwd = [(f"L{i}.{n}", "forward") for i in range(L) for n in ("attn_out", "mlp_down")]
    bwd = [(f"L{i}.{n}", "backward") for i in reversed(range(L)) for n in ("mlp_up", "qkv")]
    return fwd + bwd


def save_capture(path: str, recorded: list, cfg: dict, step: int, tokens: int, dtype: str) -> None:
    """Writes the partials of one step's TP AllReduces as float32 arrays (P, rows, features),
    `tokens` token rows sampled once (the same rows at every site) to bound the file size."""
    sites = capture_sites(cfg)
    if len(recorded) != len(sites):
        raise RuntimeError(f"captured {len(recorded)} AllReduces, expected {len(sites)} for {cfg['layers']} layers")
    rows_total = recorded[0][0].shape[0]
    rows = np.sort(np.random.default_rng([int(cfg["seed"]), step, 0xCA]).choice(
        rows_total, size=min(tokens, rows_total), replace=False))
    arrays = {f"site{k}": np.stack([p[rows] for p in parts]) for k, parts in enumerate(recorded)}
    meta = {"kind": "taco-capture", "config": cfg, "step": step, "dtype": dtype, "rows": int(len(rows)),
            "rows_total": int(rows_total), "sites": [{"name": n, "direction": d} for n, d in sites]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def get_corpus(which: str) -> Corpus:
    if which not in _CORPUS_CACHE:
        _CORPUS_CACHE[which] = Corpus(which)
    return _CORPUS_CACHE[which]


def train(cfg: dict, out: str | None = None, *, eval_every: int = 100, checkpoint_every: int = 0,
          resume: bool = False, stop_after: int | None = None, time_limit: float | None = None,
          force_overflow_at: int | None = None, eval_exact: bool = True, quiet: bool = False,
          device: str | None = None, capture: str | None = None, capture_step: int | None = None,
          capture_tokens: int = 512) -> dict:
    """One run; returns its log (also written to out/<run>.json when `out`). With `capture`,
    the P partial tensors of every TP AllReduce of training step `capture_step` (default:
    the last step) are saved there (save_capture) for `python -m taco accuracy --source capture`."""
    T = _torch_parts()
    torch = T["torch"]
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    name = run_name(cfg)
    if device is None:
        device = "cuda" if cfg["backend"] == "taco" else "cpu"
    dev = torch.device(device)
    if cfg["backend"] == "taco" and dev.type != "cuda":
        raise SystemExit("--backend taco needs a CUDA GPU (use --backend cpu-exact / cpu-ref on the CPU)")
    if dev.type == "cuda":
        torch.cuda.set_device(dev.index or 0)
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 runs are fp32
        torch.backends.cudnn.allow_tf32 = False
    corpus = get_corpus(cfg["corpus"])
    P = cfg["tp"]
    tp, close_tp, note = T["make_tp"](cfg["backend"], cfg["codec"], P)
    exact_red = T["rank_order_sum"]
    model = T["GPT"](cfg, tp, dev, cfg["seed"])
    cdt = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    model.set_compute_dtype(cdt)
    decay = [p for n_, p in model.named_parameters() if p.dim() >= 2 and "wpe" not in n_]
    no_decay = [p for n_, p in model.named_parameters() if not (p.dim() >= 2 and "wpe" not in n_)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg["lr"], betas=(0.9, 0.95), eps=1e-8)
    scaler = torch.amp.GradScaler(dev.type, enabled=cfg["dtype"] == "fp16")
    if cfg["dtype"] == "fp16":
        tp.watch = True
    data_tr = torch.from_numpy(corpus.train.astype(np.int64)).to(dev)
    data_va = torch.from_numpy(corpus.val.astype(np.int64)).to(dev)
    S, B = cfg["seq"], cfg["batch"]
    ar = torch.arange(S + 1, device=dev)

    def windows(data, offs):
        idx = torch.from_numpy(np.asarray(offs, np.int64)).to(dev)[:, None] + ar[None, :]
        w = data[idx]
        return w[:, :-1], w[:, 1:]

    vo = val_offsets(corpus.val.size, S, cfg["eval_batches"] * B)

    def autocast():
        if cdt is None:
            return torch.autocast(dev.type, enabled=False)
        return torch.autocast(dev.type, dtype=cdt)

    @torch.no_grad()
    def evaluate(reduce=None):
        saved = tp.reduce
        if reduce is not None:
            tp.reduce = reduce
        try:
            tot = torch.zeros((), dtype=torch.float64, device=dev)
            for i in range(cfg["eval_batches"]):
                x, y = windows(data_va, vo[i * B:(i + 1) * B])
                with autocast():
                    tot += model(x, y).double()
            return float(tot / cfg["eval_batches"])
        finally:
            tp.reduce = saved

    nparams = sum(p.numel() for p in model.parameters())
    log = {"kind": "taco-train", "name": name, "config": cfg, "params": nparams,
           "params_nonembedding": nparams - model.wte.weight.numel() - model.wpe.weight.numel(),
           "corpus": corpus.info(), "collective": tp.name, "emulated": note == "emulated",
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "torch": torch.__version__, "train": [], "evals": [], "skipped_steps": [], "overflow_checks": [],
           "grad_norm": [], "sessions": [], "finished": False}
    step = 0
    ckpt = os.path.join(out, name + ".ckpt.pt") if out else None
    if resume and ckpt and os.path.exists(ckpt):
        st = torch.load(ckpt, map_location=dev, weights_only=False)
        if st.get("version") != CKPT_VERSION:
            raise SystemExit(f"{ckpt}: checkpoint version {st.get('version')} != {CKPT_VERSION}")
        diff = {k: (st["config"].get(k), cfg.get(k)) for k in CORE_KEYS if st["config"].get(k) != cfg.get(k)}
        if diff:
            raise SystemExit(f"--resume: {ckpt} was written with a different configuration: {diff}")
        if st["log"]["corpus"]["sha256"] != corpus.sha256:
            raise SystemExit(f"--resume: corpus differs from the checkpoint's ({st['log']['corpus']} vs "
                             f"{corpus.info()}): a different Python stdlib? resume on the same machine image")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        scaler.load_state_dict(st["scaler"])
        # map_location moved every tensor to `dev`; RNG states must be CPU ByteTensors
        torch.set_rng_state(st["rng_cpu"].cpu())
        if dev.type == "cuda" and st.get("rng_cuda") is not None:
            torch.cuda.set_rng_state(st["rng_cuda"].cpu(), dev)
        step, log = st["step"], st["log"]
        if st["data_position"] != step:
            raise SystemExit(f"{ckpt}: data position {st['data_position']} != step {step}")
        say(f"resumed {name} at step {step} from {ckpt}")

    def save_log():
        if out:
            tmp = os.path.join(out, name + ".json.tmp")
            with open(tmp, "w") as f:
                json.dump(log, f, indent=1)
            os.replace(tmp, os.path.join(out, name + ".json"))

    def save_ckpt():
        if not ckpt:
            return
        st = {"version": CKPT_VERSION, "config": cfg, "step": step, "data_position": step,
              "model": model.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
              "rng_cpu": torch.get_rng_state(),
              "rng_cuda": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None, "log": log}
        torch.save(st, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    if out:
        os.makedirs(out, exist_ok=True)
    say(f"{name}: {nparams / 1e6:.2f}M parameters ({log['params_nonembedding'] / 1e6:.2f}M non-embedding), "
        f"{cfg['layers']} layers, d={cfg['d_model']}, {cfg['heads']} heads, TP={P}, {cfg['dtype']}, "
        f"{B}x{S} tokens/step; collective: {tp.name}; corpus {corpus.name} "
        f"{corpus.train.size / 1e6:.2f} MB train / {corpus.val.size / 1e6:.2f} MB val")
    t_session, start_step = time.time(), step
    pending = []  # device losses not yet read
    last_flush_t, last_flush_step = time.time(), step

    def flush():
        nonlocal pending, last_flush_t, last_flush_step
        if pending:
            vals = torch.stack([p[1] for p in pending]).tolist()
            gn = torch.stack([p[2] for p in pending]).tolist()
            log["train"] += [[s, v] for (s, _, _), v in zip(pending, vals)]
            log["grad_norm"] += [[s, v] for (s, _, _), v in zip(pending, gn)]
            pending = []
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        now = time.time()
        ms = 1000 * (now - last_flush_t) / max(1, step - last_flush_step)
        last_flush_t, last_flush_step = now, step
        return ms

    if step == 0 and not log["evals"]:
        v0 = evaluate()
        log["evals"].append({"step": 0, "val": v0, "val_exact": evaluate(exact_red) if eval_exact else None})
        say(f"step {0:6d}  val {v0:.4f}")
    stopped = "finished"
    while step < cfg["steps"]:
        step += 1
        for gp in opt.param_groups:
            gp["lr"] = lr_at(cfg, step)
        x, y = windows(data_tr, batch_offsets(corpus.train.size, S, B, cfg["seed"], step))
        c0, e0 = tp.calls, tp.elements
        capturing = capture is not None and step == (capture_step or cfg["steps"])
        if capturing:
            recorded, plain_reduce = [], tp.reduce

            def recording_reduce(tensors, outs):
                recorded.append([t.detach().float().cpu().numpy().reshape(-1, t.shape[-1]) for t in tensors])
                plain_reduce(tensors, outs)

            tp.reduce = recording_reduce
        with autocast():
            loss = model(x, y)
        forced = force_overflow_at is not None and step == force_overflow_at
        lb = loss * 1e30 if forced else loss
        if forced:
            before = [p.detach().clone() for p in model.parameters()]
            scale_before = scaler.get_scale() if scaler.is_enabled() else None
            tp.watch = True
            tp.read_nonfinite()
        opt.zero_grad(set_to_none=True)
        scaler.scale(lb).backward()
        scaler.unscale_(opt)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"] if cfg["clip"] > 0 else float("inf"))
        if scaler.is_enabled():
            sc = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            if scaler.get_scale() < sc:
                log["skipped_steps"].append(step)
        else:
            if not forced or torch.isfinite(gnorm):
                opt.step()
        if capturing:
            tp.reduce = plain_reduce
            save_capture(capture, recorded, cfg, step, capture_tokens, str(cdt or "torch.float32"))
            say(f"step {step:6d}  captured the partials of {len(recorded)} TP AllReduces -> {capture}")
        if "allreduce_per_step" not in log:
            log["allreduce_per_step"] = {"calls": tp.calls - c0, "elements": tp.elements - e0,
                                         "bytes_uncompressed": (tp.elements - e0) * (4 if cdt is None else 2)}
        pending.append((step, loss.detach().float(), gnorm.detach().float()))
        if forced:
            nf = tp.read_nonfinite()
            tp.watch = cfg["dtype"] == "fp16"
            unchanged = all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
            rec = dict(step=step, **nf, grad_norm=float(gnorm), scale_before=scale_before,
                       scale_after=scaler.get_scale() if scaler.is_enabled() else None,
                       skipped=step in log["skipped_steps"] or (not scaler.is_enabled() and unchanged),
                       params_unchanged=unchanged, codec=cfg["codec"])
            rec["propagated"] = rec["calls_nonfinite_in"] > 0 and rec["calls_nonfinite_lost"] == 0
            log["overflow_checks"].append(rec)
            say(f"step {step:6d}  forced overflow (loss x 1e30): {nf['calls_nonfinite_in']} TP AllReduce calls had "
                f"non-finite inputs, {nf['calls_nonfinite_out']} non-finite outputs, {nf['calls_nonfinite_lost']} "
                f"lost them (non-finite in, finite out) through {cfg['codec']}; grad norm {rec['grad_norm']}; "
                f"scaler {scale_before} -> {rec['scale_after']}; step "
                f"{'SKIPPED' if rec['skipped'] else 'TAKEN'}, parameters {'unchanged' if unchanged else 'CHANGED'}")
        elif scaler.is_enabled() and tp.nf is not None and step % 50 == 0:
            tp.read_nonfinite()  # keep the counters bounded; overflow steps are in skipped_steps
        done = step == cfg["steps"]
        timeout = time_limit is not None and time.time() - t_session > time_limit
        halt = done or timeout or (stop_after is not None and step - start_step >= stop_after)
        if step % eval_every == 0 or halt:
            ms = flush()
            v = evaluate()
            ve = evaluate(exact_red) if eval_exact else None
            log["evals"].append({"step": step, "val": v, "val_exact": ve, "ms_per_step": ms,
                                 "train": log["train"][-1][1]})
            say(f"step {step:6d}  train {log['train'][-1][1]:.4f}  val {v:.4f}"
                + (f"  val_exact {ve:.4f}" if ve is not None else "") + f"  {ms:.1f} ms/step")
            save_log()
        if checkpoint_every and (step % checkpoint_every == 0 or halt):
            flush()
            save_ckpt()
        if halt:
            stopped = "finished" if done else ("time limit" if timeout else "stop-after")
            break
    flush()
    log["finished"] = step >= cfg["steps"]
    log["sessions"].append({"from_step": start_step, "to_step": step, "seconds": round(time.time() - t_session, 1),
                            "stopped": stopped})
    save_log()
    if ckpt and (checkpoint_every or resume or not log["finished"]):
        save_ckpt()
    close_tp()
    say(f"{name}: {stopped} at step {step}" + (f" (checkpoint {ckpt})" if ckpt and os.path.exists(ckpt) else ""))
    return log


# ------------------------------------------------------------------ CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="tiny", help=f"model/data size: {', '.join(PRESETS)} (default tiny)")
    p.add_argument("--tp", type=int, default=4, help="tensor-parallel size (default 4; 8 for the study)")
    p.add_argument("--codec", default=BASELINE, help=f"{', '.join(ALL_CODECS)} (default {BASELINE})")
    p.add_argument("--backend", default=None, choices=BACKENDS,
                   help="taco (GPU, libtaco loopback; default when a GPU is present), cpu-exact, cpu-ref")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp32", "fp16"),
                   help="compute/communication dtype (autocast; fp32 master weights); fp16 uses a GradScaler")
    p.add_argument("--seed", type=int, default=0, help="model init and data order")
    p.add_argument("--steps", type=int, default=None, help="total steps (the LR schedule's length)")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--seq", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--d-model", dest="d_model", type=int, default=None)
    p.add_argument("--heads", type=int, default=None)
    p.add_argument("--mlp", type=int, default=None)
    p.add_argument("--untied", action="store_true", help="separate output head (default: tied to the embedding)")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="grad-norm clip (0: none)")
    p.add_argument("--corpus", default="stdlib", choices=("stdlib", "pydoc"))
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-batches", type=int, default=32,
                   help="validation windows = eval_batches x batch, fixed (default 32: 8 left a seed spread of 1.3-1.7%%)")
    p.add_argument("--no-eval-exact", action="store_true", help="skip val_exact (eval through the exact sum)")
    p.add_argument("--out", default=None, metavar="DIR", help="JSON logs (and checkpoints) go here")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="N",
                   help="save model+optimizer+scaler+RNG+step to DIR/<run>.ckpt.pt every N steps and at the end")
    p.add_argument("--resume", action="store_true", help="continue DIR/<run>.ckpt.pt when it exists")
    p.add_argument("--stop-after", type=int, default=None, metavar="N", help="stop (and checkpoint) after N steps")
    p.add_argument("--time-limit", type=float, default=None, metavar="SEC",
                   help="stop (and checkpoint) once this invocation has run SEC seconds (sweep: in total)")
    p.add_argument("--force-overflow-at", type=int, default=None, metavar="STEP",
                   help="multiply the loss by 1e30 at STEP (fp16: the GradScaler must skip it)")
    p.add_argument("--device", default=None, help="torch device (default: cuda for taco, cpu otherwise)")
    p.add_argument("--capture", default=None, metavar="FILE.npz",
                   help="save the partials of every TP AllReduce of one training step (for "
                        "`python -m taco accuracy --source capture FILE.npz`)")
    p.add_argument("--capture-step", type=int, default=None, metavar="N", help="the step to capture (default: the last)")
    p.add_argument("--capture-tokens", type=int, default=512, metavar="K", help="token rows kept per tensor (default 512)")
    p.add_argument("--quiet", action="store_true")
    g = p.add_argument_group("sweep / reports")
    g.add_argument("--sweep", action="store_true", help="baseline seeds + every codec, then the summary")
    g.add_argument("--seeds", default="0,1,2", help="sweep: baseline seeds (default 0,1,2)")
    g.add_argument("--codec-seeds", default=None, help="sweep: seeds for the codecs (default: the first baseline seed)")
    g.add_argument("--codecs", default="all", help="sweep: comma list (default all registry codecs + ablations)")
    g.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="sweep: run N trainings at once, each in its own process (on one H200, 7 small TP=8 "
                        "runs train ~3x the steps/s of one; default 1)")
    g.add_argument("--gpus", default=None, metavar="LIST",
                   help="sweep with --parallel: spread the runs round-robin over these CUDA devices (e.g. 0,1)")
    g.add_argument("--summary", default=None, metavar="DIR", help="print the sweep summary of the logs in DIR")
    g.add_argument("--plot", default=None, metavar="DIR", help="PNG of the validation curves of the logs in DIR")
    g.add_argument("--at-step", dest="at_step", type=int, default=None, metavar="N",
                   help="summary: compare the runs at step N (unfinished runs that reached it count)")
    g.add_argument("--tail", type=int, default=1, metavar="K",
                   help="summary: average each run's last K evals (smooths eval-to-eval noise; default 1)")


def _print_summary(d: str, key: str = "val", at_step: int | None = None, tail: int = 1) -> int:
    logs = load_logs(d)
    what = (f"at step {at_step}" if at_step else "final") + (f", mean of the last {tail} evals" if tail > 1 else "")
    for k in (key, "val_exact"):
        finals = finals_from_logs(logs, k, at_step=at_step, tail=tail)
        if len(finals.get(BASELINE, [])) < 2:
            print(f"{d}: need >= 2 {BASELINE} runs {what} for a noise floor (have {len(finals.get(BASELINE, []))})")
            return 1
        print(f"\n[{k}] " + ("forward through the run's collective" if k == "val" else
                              "same weights, forward through the exact sum") + f"; {what}")
        print(format_summary(sweep_summary(finals, paired=paired_from_logs(logs, k, at_step=at_step, tail=tail))))
    counted = {id(lg) for lg in logs if run_value(lg, key, at_step, tail) is not None
               and (at_step is not None or lg.get("finished"))}
    left = [lg["name"] for lg in logs if id(lg) not in counted]
    if left:
        print(f"not counted ({'did not reach step %d' % at_step if at_step else 'unfinished'}): {', '.join(left)}")
    return 0


def run(args) -> int:
    if args.plot:
        print(plot_dir(args.plot))
        return 0
    if args.summary:
        return _print_summary(args.summary, at_step=args.at_step, tail=args.tail)
    if args.backend is None:
        try:
            import torch

            args.backend = "taco" if torch.cuda.is_available() else "cpu-exact"
        except ImportError:
            args.backend = "cpu-exact"
    common = dict(eval_every=args.eval_every, checkpoint_every=args.checkpoint_every, resume=args.resume,
                  stop_after=args.stop_after, force_overflow_at=args.force_overflow_at,
                  eval_exact=not args.no_eval_exact, quiet=args.quiet, device=args.device)
    if not args.sweep:
        cfg = make_config(args)
        train(cfg, args.out, time_limit=args.time_limit, capture=args.capture, capture_step=args.capture_step,
              capture_tokens=args.capture_tokens, **common)
        return 0
    if args.capture:
        raise SystemExit("--capture: one run at a time (not with --sweep)")
    if not args.out:
        raise SystemExit("--sweep needs --out DIR")
    seeds = [int(s) for s in args.seeds.split(",")]
    cseeds = [int(s) for s in args.codec_seeds.split(",")] if args.codec_seeds else seeds[:1]
    codecs = REGISTRY + ABLATIONS if args.codecs == "all" else [c for c in args.codecs.split(",") if c]
    plan = [(BASELINE, s) for s in seeds] + [(c, s) for c in codecs if c != BASELINE for s in cseeds]
    if args.parallel < 1:
        raise SystemExit(f"--parallel: must be >= 1, got {args.parallel}")
    if args.parallel > 1 or args.gpus:
        return _parallel_sweep(args, plan)
    t0 = time.time()
    for cfg in _pending_runs(args, plan):
        left = None if args.time_limit is None else args.time_limit - (time.time() - t0)
        if left is not None and left <= 0:
            print("sweep: time limit reached; rerun the same command with --resume to continue")
            return 3
        lg = train(cfg, args.out, time_limit=left, **dict(common, resume=True,
                                                          checkpoint_every=args.checkpoint_every or 500))
        if not lg["finished"]:
            print("sweep: time limit reached; rerun the same command to continue")
            return 3
    return _print_summary(args.out)


def _sweep_config(args, codec: str, seed: int) -> dict:
    a = argparse.Namespace(**vars(args))
    a.codec, a.seed = codec, seed
    if args.backend == "cpu-exact" and codec != BASELINE:
        a.backend = "cpu-ref"
    return make_config(a)


def _pending_runs(args, plan: list) -> list:
    """The configs of the sweep's runs that have not finished (the finished ones are reported)."""
    todo = []
    for codec, seed in plan:
        cfg = _sweep_config(args, codec, seed)
        if _finished(os.path.join(args.out, run_name(cfg) + ".json")):
            print(f"{run_name(cfg)}: finished earlier, skipped")
            continue
        todo.append(cfg)
    return todo


def _parallel_sweep(args, plan: list) -> int:
    """The sweep's runs as worker processes (`python -m taco train` with the run's own
    arguments, --resume, checkpointing), `--parallel` at a time, round-robin over `--gpus`;
    then the summary. Each worker's output goes to DIR/<run>.log."""
    import subprocess

    gpus = [g for g in (args.gpus or "").split(",") if g]
    todo = _pending_runs(args, plan)
    os.makedirs(args.out, exist_ok=True)
    t0, running, failed, k = time.time(), [], [], 0
    while todo or running:
        while todo and len(running) < args.parallel:
            cfg = todo.pop(0)
            argv = [sys.executable, "-m", "taco", "train", *config_argv(cfg), "--out", args.out, "--resume",
                    "--quiet", "--eval-every", str(args.eval_every),
                    "--checkpoint-every", str(args.checkpoint_every or 500)]
            if args.no_eval_exact:
                argv.append("--no-eval-exact")
            if args.time_limit is not None:
                argv += ["--time-limit", repr(max(1.0, args.time_limit - (time.time() - t0)))]
            env = dict(os.environ)
            if gpus:
                env["CUDA_VISIBLE_DEVICES"] = gpus[k % len(gpus)]
            k += 1
            logf = open(os.path.join(args.out, run_name(cfg) + ".log"), "w")
            running.append((subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env), logf, cfg))
            print(f"started {run_name(cfg)}" + (f" on GPU {env['CUDA_VISIBLE_DEVICES']}" if gpus else ""), flush=True)
        time.sleep(0.2)
        for job in list(running):
            proc, logf, cfg = job
            if proc.poll() is None:
                continue
            running.remove(job)
            logf.close()
            if proc.returncode != 0:
                failed.append(run_name(cfg))
                print(f"{run_name(cfg)}: exit code {proc.returncode} (see {logf.name})", flush=True)
    if failed:
        print(f"sweep: {len(failed)} run(s) failed: {', '.join(failed)}")
        return 1
    unfinished = [run_name(c) for c in (_sweep_config(args, c, s) for c, s in plan)
                  if not _finished(os.path.join(args.out, run_name(c) + ".json"))]
    if unfinished:
        print(f"sweep: time limit reached ({len(unfinished)} unfinished); rerun the same command to continue")
        return 3
    return _print_summary(args.out)


def _finished(path: str) -> bool:
    try:
        with open(path) as f:
            return bool(json.load(f).get("finished"))
    except (OSError, ValueError):
        return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m taco train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

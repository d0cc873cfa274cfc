"""The TP groups that sum the partials of the training benchmark's tensor-parallel layers:
libtaco's loopback AllReduce (backend taco), the exact sum (cpu-exact), the numpy model of
the library (cpu-ref), and torch emulations of the per-tensor ablations."""

from __future__ import annotations

import numpy as np
import torch

import taco.torch as tt
from taco import reference as ref

from ..ablations import ABLATIONS, allreduce_pertensor, is_rotated
from .config import BASELINE


class TrainTP(tt.TPGroup):
    """P TP ranks in this process; `reduce(tensors, outs)` does the sum. Counts calls
    and elements, and (when `watch`) non-finite values in and out, on the device
    (no host sync until read)."""

    def __init__(self, P, reduce, comms=None, name=""):
        self.comms = list(comms) if comms is not None else [None] * P
        self.size = P
        self.local_ranks = list(range(P))
        self.reduce, self.name = reduce, name
        tt.register_communicator(self)  # the TP layers' torch ops find the group by its group_name
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
            y = allreduce_pertensor(parts, rotate=is_rotated(codec))
        else:
            y = ref.allreduce(parts, "none" if codec == BASELINE else codec)
        y = _from_np(y, tensors[0]).reshape(tensors[0].shape).to(tensors[0].device)
        for o in outs:
            o.copy_(y)
    return f


_H = {}  # the 256-point Walsh-Hadamard matrix per device


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
    """torch emulation of taco_bench.ablations.allreduce_pertensor (two-shot, one scale per tensor)."""
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
        what = ("taco_bench.ablations.allreduce_pertensor (numpy ablation)" if codec in ABLATIONS
                else f"taco.reference.allreduce(parts, {('none' if codec == BASELINE else codec)!r})")
        return TrainTP(P, ref_reduce(codec), name=f"cpu-ref: {what}"), (lambda: None), ""
    if codec in ABLATIONS:
        return (TrainTP(P, emulated_pertensor(is_rotated(codec)),
                        name=f"emulated {codec} in torch (not libtaco)"), (lambda: None), "emulated")
    lib_codec = "none" if codec == BASELINE else codec
    inner = tt.TPGroup.loopback(P, codec=lib_codec, fallback_bytes=0)
    tp = TrainTP(P, inner.all_reduce_, comms=inner.comms,
                 name=f"libtaco loopback P={P} codec {lib_codec} fallback_bytes=0")
    return tp, inner.close, ""

# -------------------------------------------------------------- model

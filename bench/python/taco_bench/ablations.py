"""The paper's per-tensor FP8 ablations as numpy models (not library codecs): the rows
`pt-fp8` and `rot-pt-fp8` of `python -m taco_bench accuracy` and the cpu-ref backend of
`python -m taco_bench train`.

  pt-fp8      per-tensor FP8 E4M3: one absmax scale per tensor (per rank's partial in the
              first shot, per reduced shard in the second)
  rot-pt-fp8  Walsh-Hadamard rotation per 256-block, then one absmax scale per tensor
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from taco import reference as ref

ABLATIONS = ["pt-fp8", "rot-pt-fp8"]
E4M3_MAX = np.float32(448.0)
ROT_BLOCK = 256


def is_rotated(name: str) -> bool:
    """Whether the ablation `name` rotates before quantising."""
    if name not in ABLATIONS:
        raise ValueError(f"{name!r} is not an ablation ({', '.join(ABLATIONS)})")
    return name == "rot-pt-fp8"


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

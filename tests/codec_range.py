"""The codec range sweep, shared by tests/python/test_codec_range.py (the host twin
against the numpy spec) and tests/gpu/test_codec_range_gpu.py (the kernels against the
host twin), and the per-codec error bounds that docs/codecs.md ("Range") states."""
import ml_dtypes
import numpy as np

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = [F32, F16, BF16]
TINY = 2.0 ** -149  # fp32's smallest subnormal: the unit of the absolute error terms

# (smallest subnormal, largest finite) exponents of each dtype's binades
EXPONENTS = {F32: (-149, 127), BF16: (-133, 127), F16: (-24, 15)}


def same_bits(a, b):
    """Bitwise equality, any NaN equal to any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    ua, ub = a.view(np.uint8).reshape(a.size, -1), b.view(np.uint8).reshape(b.size, -1)
    return bool(np.all(nan | np.all(ua == ub, axis=1)))


def dtype_max(dtype) -> float:
    return float(ml_dtypes.finfo(dtype).max)


def sweep(dtype, B: int, seed: int = 0):
    """(x, labels): blocks of B elements of `dtype` covering its whole range. For every
    power of two 2^e from the smallest subnormal to the top binade, three blocks with
    max|x| = 2^e exactly: Laplace values, a spike (2^e and -2^(e-1) among zeros), and a
    flat block of random signs (the worst case of the rotated codecs); then blocks at the
    dtype's largest finite value and just below it (constant, alternating signs,
    Laplace-shaped), and blocks whose elements take every exponent of the dtype."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    lo, hi = EXPONENTS[dt]
    top = dtype_max(dt)
    below = float(np.nextafter(dt.type(top), dt.type(0)))
    blocks, labels = [], []

    def add(v, label):
        blocks.append(np.asarray(v, np.float64))
        labels.append(label)

    for e in range(lo, hi + 1):
        lap = rng.laplace(size=B)
        add(lap / np.abs(lap).max() * 2.0 ** e, ("laplace", e))
        spike = np.zeros(B)
        i, j = rng.choice(B, 2, replace=False)
        spike[i], spike[j] = 2.0 ** e, -(2.0 ** (e - 1))
        add(spike, ("spike", e))
        add(np.where(rng.random(B) < 0.5, -1.0, 1.0) * 2.0 ** e, ("flat", e))
    for m in (top, below):
        add(np.full(B, m), ("constant", m))
        add(np.where(np.arange(B) % 2 == 0, m, -m), ("alternating", m))
        lap = rng.laplace(size=B)
        add(lap / np.abs(lap).max() * m, ("laplace-max", m))
    for k in range(4):
        mixed = rng.laplace(size=B) * np.ldexp(1.0, rng.integers(lo, hi + 1, size=B))
        add(np.clip(mixed, -top, top), ("mixed", k))
    x = np.concatenate(blocks)
    with np.errstate(over="ignore"):
        x = x.astype(np.float32).astype(dt)  # rounds to the dtype (the clip keeps it finite)
    assert np.all(np.isfinite(x.astype(np.float32)))
    return x, labels


def block_errors(x, y, B: int):
    """Per block: (max|x|, max|y - x|), in float64."""
    xb = np.asarray(x).astype(np.float64).reshape(-1, B)
    yb = np.asarray(y).astype(np.float64).reshape(-1, B)
    return np.abs(xb).max(axis=1), np.abs(yb - xb).max(axis=1)


# Per codec and block size: (E, A) with max|y - x| <= E * max|x| + A * 2^-149 for every
# block of the sweep, the fp32 reconstruction of any dtype. E is the block-relative
# error of normal blocks (measured on the sweep, whose flat blocks are the rotated
# codecs' worst case, with ~20% margin); A the absolute error that the fp32 subnormal
# range adds (docs/codecs.md, "Range": the rounding of the decoded values, and for the
# codecs without the adaptive scale a stored scale that is a whole multiple of 2^-149).
ERROR_BOUNDS = {
    ("none", 0): (0.0, 0.0),
    ("bf16", 0): (2.0 ** -8, 2.0 ** 15),
    ("taco", 32): (0.16, 1.0), ("taco", 256): (0.28, 1.0), ("taco", 1024): (0.4, 1.0),
    ("taco-e5m2", 32): (0.28, 1.0), ("taco-e5m2", 256): (0.5, 1.0), ("taco-e5m2", 1024): (0.95, 1.0),
    ("fp8-block", 32): (1.001 / 28, 16.5), ("fp8-block", 256): (1.001 / 28, 16.5), ("fp8-block", 1024): (1.001 / 28, 16.5),
    ("int8-block", 32): (1.001 / 254, 0.5), ("int8-block", 256): (1.001 / 254, 0.5),
    ("int8-block", 1024): (1.001 / 254, 0.5),
    ("int4-block", 32): (1.001 / 14, 0.5), ("int4-block", 256): (1.001 / 14, 0.5), ("int4-block", 1024): (1.001 / 14, 0.5),
    ("int8-hadamard", 32): (0.025, 18.0), ("int8-hadamard", 256): (0.19, 10.0), ("int8-hadamard", 1024): (0.24, 18.0),
    ("int6-hadamard", 32): (0.18, 3.0), ("int6-hadamard", 256): (0.5, 8.0), ("int6-hadamard", 1024): (0.42, 64.0),
}

"""Overflow as NCCL gives it (docs/codecs.md, "Overflow"): a sum past the output type's largest
finite value arrives as +-Inf, the sum's sign, on every algorithm and codec; NaN only from NaN
input; the other elements finite. Checked on the numpy spec (the collective model, per
algorithm), on the host twin against the spec bit for bit, and against the saturating spec it
replaced on the results that do not overflow (their bits are unchanged)."""
import hashlib

import ml_dtypes
import numpy as np
import pytest

import taco
from taco import reference as ref

from codec_range import same_bits

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
DTYPES = [F32, BF16, F16]
P = 4


def big(dtype):
    """Two of them overflow the dtype, one does not."""
    return 0.75 * float(ml_dtypes.finfo(dtype).max)


def overflow_parts(dtype, B, sign=1.0, seed=0):
    """P partials of 2 blocks each: block 0 has one element that overflows the sum (BIG on every
    rank) beside small ones; block 1 is small values only. Returns (parts, exact sum in float64)."""
    rng = np.random.default_rng(seed)
    n = 2 * B
    parts = []
    for r in range(P):
        x = rng.uniform(-1.0, 1.0, n) * 100.0
        x[3] = sign * big(dtype)
        parts.append(x.astype(np.float32).astype(dtype))
    exact = np.sum([p.astype(np.float64) for p in parts], axis=0)
    return parts, exact


def block_of(codec):
    return ref.codec_params(codec)["block"] or ref.PLAIN_GRANULE


CASES = [(codec, algo) for codec in ref.CODECS for algo in ref.ALGOS]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec, algo", CASES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_model_overflow_is_inf_with_the_sums_sign(codec, algo, dtype, sign):
    """Every algorithm of the collective model (what the kernels must give, bit for bit)."""
    B = block_of(codec)
    parts, exact = overflow_parts(dtype, B, sign)
    with np.errstate(all="ignore"):
        outs = ref.allreduce_ranks(parts, codec, algo=algo)
    for r, out in enumerate(outs):
        y = out.astype(np.float64)
        assert y[3] == sign * np.inf, f"rank {r}: the overflowing element arrived as {y[3]}"
        assert not np.isnan(y).any(), f"rank {r}: NaN at {np.flatnonzero(np.isnan(y))[:8]}"
        others = np.delete(np.arange(y.size), 3)
        assert np.all(np.isfinite(y[others])), f"rank {r}: a finite sum arrived non-finite"
        # the small elements keep a codec's accuracy: block 1 relative to its own max, block 0
        # (beside an Inf) at least finite; the none/bf16 paths are elementwise and tight
        err = np.abs(y[B:] - exact[B:]) / np.abs(exact[B:]).max()
        assert err.max() < 0.5, f"rank {r}: block 1 error {err.max()}"
        assert same_bits(out, outs[0]), "ranks differ"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec", list(ref.CODECS))
def test_model_reduce_scatter_overflow(codec, dtype):
    B = block_of(codec)
    parts, exact = overflow_parts(dtype, B)
    with np.errstate(all="ignore"):
        outs = ref.reduce_scatter([np.concatenate([p] * P) for p in parts], codec)
    for out in outs:
        y = out.astype(np.float64)
        assert y[3] == np.inf and not np.isnan(y).any() and np.isfinite(np.delete(y, 3)).all()


def test_model_sums_that_do_not_overflow_stay_finite():
    """The exact input can bring a sum past FLT_MAX back (K = 64: it joins the sum scaled), and
    one input alone still saturates."""
    B = 256
    big = np.full(B, 3e38, np.float32)
    w = ref.compress(big, "fp8-block")
    minus = np.full(B, -3e38, np.float32)
    with np.errstate(all="ignore"):
        y = ref.decompress_accumulate([w, w], "fp8-block", B, np.float32, exact=minus)  # 6e38 - 3e38
        one = ref.decompress(ref.compress(np.full(B, np.finfo(np.float32).max, np.float32), "taco"), "taco", B,
                             np.float32)
    assert np.all(np.isfinite(y)) and np.allclose(y, 3e38, rtol=0.05)
    assert np.all(np.isfinite(one))


# ---- the host twin equals the spec on overflowing sums (wide blocks included)


def host_vs_spec(codec, dtype, wires, exact, count):
    with np.errstate(all="ignore"):
        want = ref.decompress_accumulate(wires, codec, count, dtype, exact)
        wwire, wy = ref.decompress_reduce_compress(wires, codec, count, dtype, exact)
    got = taco.decompress_accumulate(wires, codec, count, dtype, exact)
    assert same_bits(got, want), f"{codec} {dtype}: accumulate differs from the spec"
    gwire, gy = taco.decompress_reduce_compress(wires, codec, count, dtype, exact, return_decompressed=True)
    assert np.array_equal(gwire, wwire), f"{codec} {dtype}: reduce-compress wire differs from the spec"
    assert same_bits(gy, wy)
    assert same_bits(taco.decompress(gwire, codec, count, dtype), wy), "the wide wire decodes otherwise"
    return gwire, gy


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec", list(ref.CODECS))
@pytest.mark.parametrize("k, with_exact", [(1, True), (2, False), (2, True), (3, True)])
def test_host_twin_equals_the_spec_on_overflow(codec, dtype, k, with_exact):
    B = block_of(codec)
    parts, _ = overflow_parts(dtype, B, seed=k)
    count = parts[0].size
    wires = [ref.compress(p, codec) for p in parts[:k]]
    exact = parts[k] if with_exact else None
    wire, y = host_vs_spec(codec, dtype, wires, exact, count)
    y = y.astype(np.float64)
    assert y[3] == np.inf and not np.isnan(y).any() and np.isfinite(np.delete(y, 3)).all()
    if ref.codec_params(codec)["block"] and dtype != F16:  # fp16's sums overflow at the rounding to fp16 only
        c = ref._Codec(codec, None)
        _, (alpha, s) = ref._unpack(c, wire, count, dtype)
        assert s[0] < 0 and s[1] >= 0, "block 0 should be wide, block 1 not"


def test_host_twin_wide_inputs_summed_again():
    """Wide wires are valid inputs of every operation: summed again (K = 64 with an unsaturated
    unshift), and a block whose scaled sum is not finite either (an Inf input) is a NaN block."""
    B = 256
    parts, _ = overflow_parts(F32, B)
    w = [ref.compress(p, "taco") for p in parts]
    with np.errstate(all="ignore"):
        wide, _ = ref.decompress_reduce_compress(w[:2], "taco", 2 * B, np.float32, parts[2])
    host_vs_spec("taco", F32, [wide, w[3]], parts[0], 2 * B)
    host_vs_spec("taco", F32, [wide, wide], None, 2 * B)
    inf = parts[0].copy()
    inf[5] = np.inf
    wire, y = host_vs_spec("taco", F32, [w[1], w[2]], inf, 2 * B)
    assert np.isnan(y[:B]).all() and np.isfinite(y[B:]).all()


def test_bf16_codec_saturates_fp32_but_not_16_bit_sums():
    """fp32 data: a finite value stays finite on the wire (saturated); bf16 data: a sum past
    bf16's range is Inf on the wire, as in the dtype."""
    x32 = np.full(8, 1.7e38, np.float32)
    xb = x32.astype(BF16)
    for x, dt, inf in ((x32, F32, False), (xb, BF16, True)):
        w = ref.compress(x, "bf16")
        with np.errstate(all="ignore"):
            out, y = ref.decompress_reduce_compress([w], "bf16", 8, dt, x)
        hout, hy = taco.decompress_reduce_compress([w], "bf16", 8, dt, x, return_decompressed=True)
        assert np.array_equal(out, hout) and same_bits(y, hy)
        assert np.all(np.isinf(y.astype(np.float32))) == inf


# ---- the results that do not overflow keep the bits they had when sums saturated


def lcg_blocks(B, nblocks, seed):
    """Deterministic test data without a random generator or a transcendental function (the
    digest below must not depend on numpy's version): block k has max below 2^e_k, e_k sweeping
    the fp32 exponents from the top down, mantissas from a 64-bit LCG."""
    state = seed * 2654435761 + 1
    vals = []
    for k in range(nblocks):
        e = 127 - (k * 7) % 260
        for _ in range(B):
            state = (state * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
            m = state >> 40  # 24 bits
            vals.append((-1.0 if m & 1 else 1.0) * (m / 2.0 ** 24) * 2.0 ** e)
    return np.clip(np.array(vals), -3.4e38, 3.4e38)


def overflow_mask(codec, wires, count, dtype):
    """Blocks whose K = 64 sum of two or more inputs exceeds FLT_MAX 2^-64: the only ones whose
    decode changed."""
    c = ref._Codec(codec, None)
    up = [ref._unpack(c, w, count, dtype) for w in wires]
    ds, K, sat = ref._decode_scales(c, [sc for _, sc in up])
    with np.errstate(all="ignore"):
        F = up[0][0] * ds[0][:, None]
        for (f, _), d in zip(up[1:], ds[1:]):
            F = F + f * d[:, None]
        if c.rotate:
            F = ref._fwht(F)
    return (K == 64) & ~sat & np.any(np.abs(F) > ref.TOP, axis=1)


def unchanged_digest(dtype, impl=ref):
    """sha256 over every block codec's outputs (by `impl`: the spec, or the saturating spec it replaced)
    on lcg_blocks data, leaving out the blocks whose sum overflowed or whose reduce-compress is now
    wide (a NaN block in the saturating spec), as the spec finds them."""
    h = hashlib.sha256()
    for codec in ref.CODECS:
        B = ref.codec_params(codec)["block"]
        if not B:
            continue
        top = float(ml_dtypes.finfo(dtype).max)
        x = np.clip(lcg_blocks(B, 40, 1), -top, top).astype(np.float32).astype(dtype)
        x2 = np.clip(lcg_blocks(B, 40, 2)[::-1], -top, top).astype(np.float32).astype(dtype)
        ex = (x.astype(np.float32) * np.float32(-0.5)).astype(dtype)
        w, w2 = ref.compress(x, codec), ref.compress(x2, codec)
        h.update(impl.compress(x, codec).tobytes())
        c = ref._Codec(codec, None)
        for wires, e in (([w], None), ([w, w2], None), ([w, w2], ex), ([w], ex), ([w, w], None), ([w, w], ex)):
            keep = ~overflow_mask(codec, wires, x.size, dtype)
            with np.errstate(all="ignore"):
                now = ref.decompress_reduce_compress(wires, codec, x.size, dtype, e)[0]
                keep &= ~(ref._unpack(c, now, x.size, dtype)[1][1] < 0)  # wide blocks were NaN blocks before
                y = impl.decompress_accumulate(wires, codec, x.size, dtype, e)
                rw, ry = impl.decompress_reduce_compress(wires, codec, x.size, dtype, e)
            codes, (alpha, s) = ref._unpack(c, rw, x.size, dtype)
            h.update(y.reshape(-1, B)[keep].tobytes())
            h.update(ry.reshape(-1, B)[keep].tobytes())
            h.update(codes[keep].tobytes() + alpha[keep].tobytes() + s[keep].tobytes())
    return h.hexdigest()


# Computed with the saturating spec (python/taco/reference.py of commit 6689eac), with the same masks.
UNCHANGED = {
    "float32": "cc478326dbe2cd8155425a3379243515573a89d43cc7854079c1cdaeeedc2f41",
    "bfloat16": "d4fea807252ca15fe76f7a2593ddd71fb5d744318803dd788191f128cec63446",
    "float16": "14e16eb9e68b5769f24500fe7068891763aaa505dff6d145fe364da8b3ed5f06",
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_results_that_do_not_overflow_keep_their_bits(dtype):
    assert unchanged_digest(dtype) == UNCHANGED[str(dtype)]


def test_host_twin_equals_the_spec_on_random_payloads():
    """Random payloads under valid headers: half their scales are negative (wide), many are huge,
    NaN or subnormal; the host twin decodes, sums and re-compresses them as the spec does."""
    import fuzz_cases as fz

    rng = np.random.default_rng(31)
    for i in range(60):
        spec, c = fz.random_codec(rng)
        if not ref.codec_params(spec)["block"]:
            continue
        count = int(rng.integers(1, 3000))
        dname = list(fz.DTYPES)[int(rng.integers(3))]
        wires = [fz.make_wire(rng, "payload", c, spec, count, dname) for _ in range(int(rng.integers(1, 4)))]
        with np.errstate(all="ignore"):  # fp16 exact inputs overflow to Inf: an input like any other
            exact = (rng.standard_normal(count) * 1e30).astype(np.float32).astype(fz.DTYPES[dname]) \
                if rng.random() < 0.5 else None
            want_y = ref.decompress(wires[0], spec, count, dname)
            want_a = ref.decompress_accumulate(wires, spec, count, dname, exact)
            want_w, want_r = ref.decompress_reduce_compress(wires, spec, count, dname, exact)
        what = f"case {i}: {spec} {dname} count={count} k={len(wires)}"
        assert same_bits(taco.decompress(wires[0], spec, count, dname), want_y), what
        assert same_bits(taco.decompress_accumulate(wires, spec, count, dname, exact), want_a), what
        got_w, got_r = taco.decompress_reduce_compress(wires, spec, count, dname, exact, return_decompressed=True)
        assert np.array_equal(got_w, want_w), what
        assert same_bits(got_r, want_r), what

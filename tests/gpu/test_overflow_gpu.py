"""Overflow as NCCL gives it, on the GPU (docs/codecs.md, "Overflow"): a sum past the output
type's largest finite value arrives as +-Inf, the sum's sign, on every AllReduce algorithm
(plain, staged, fused, one-shot, raw one-shot), on ReduceScatter, with every codec, for fp32,
bf16 and fp16; NaN nowhere; the other elements finite. The compressed algorithms must also equal
the numpy model bit for bit on every rank, and the codec kernels the host twin (wide blocks
included: their decode on the B = 256 rotated kernels, the staged and the general block
kernels).

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_overflow_gpu.py
"""
import ml_dtypes
import numpy as np
import pytest

import cupy_arrays
from codec_range import same_bits
from cupy_arrays import cupy  # noqa: F401 (fixture)
from loopback_world import (BF16, DTYPES, assert_same, block_of, close_all, run_group, taco, to_dev,  # noqa: F401
                            to_host, torch, world)
from codec_sets import BLOCKED as BLOCK_CODECS

pytestmark = pytest.mark.gpu

# The algorithms a communicator of each codec can run (coll/allreduce_select.cc, algoUnavailable):
# the uncompressed ones with codec none, the staged two-shot with bf16 too, the peer-memory ones
# with block codecs.
COMBOS = ([("none", "plain"), ("none", "oneshot-raw"), ("bf16", "staged")]
          + [(c, a) for c in BLOCK_CODECS for a in ("staged", "fused", "oneshot")])


def model_algo(algo):
    return "twoshot" if algo in ("fused", "staged") else algo


def overflow_parts(P, count, dtype, B, seed=0):
    """P partials with elements whose sum overflows the dtype (+ at some, - at others, in
    several blocks and shards) beside small values. Returns (parts, {index: sign})."""
    rng = np.random.default_rng(seed)
    big = 0.75 * float(ml_dtypes.finfo(dtype).max)  # P >= 2 of them overflow
    where = {3: 1.0, 5: -1.0, B + 7: -1.0, count // 2 + 1: 1.0, count - 2: -1.0}
    parts = []
    for _ in range(P):
        x = rng.uniform(-1.0, 1.0, count) * 50.0
        for i, sg in where.items():
            x[i] = sg * big
        parts.append(x.astype(np.float32).astype(dtype))
    return parts, where


def check_overflow(y, where, what):
    y = np.asarray(y).astype(np.float32)
    for i, sg in where.items():
        assert y[i] == sg * np.inf, f"{what}: element {i} arrived as {y[i]}, not {sg * np.inf}"
    assert not np.isnan(y).any(), f"{what}: NaN at {np.flatnonzero(np.isnan(y))[:8]}"
    rest = np.ones(y.size, bool)
    rest[list(where)] = False
    assert np.isfinite(y[rest]).all(), f"{what}: a finite sum arrived as {y[rest][~np.isfinite(y[rest])][:4]}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec, algo", COMBOS)
@pytest.mark.parametrize("P", [2, 4])
def test_allreduce_overflow_is_inf(taco, torch, P, codec, algo, dtype):
    from taco import reference as ref

    B = block_of(codec)
    count = 8 * P * B - 7  # B = 256: every rank's piece is a whole 1,024-element tile and a tail
    parts, where = overflow_parts(P, count, dtype, B, seed=P)
    comms = world(taco, P, codec, algo=algo)
    try:
        assert comms[0].allreduce_algo(count, dtype) == algo
        outs = [to_host(torch, o) for o in run_group(taco, torch, comms, "allreduce",
                                                      [to_dev(torch, p) for p in parts], False)]
    finally:
        close_all(comms)
    for r, out in enumerate(outs):
        check_overflow(out, where, f"{codec} {algo} P={P} rank {r}")
        assert_same(out, outs[0], f"rank {r} against rank 0")
    if algo != "plain":  # the loopback transport's own sum: its order is not the model's
        with np.errstate(all="ignore"):
            want = ref.allreduce(parts, codec, algo=model_algo(algo))
        assert_same(outs[0], want, f"{codec} {algo} P={P}: against the model")


@pytest.mark.parametrize("dtype", [BF16, np.dtype(np.float32)], ids=str)
@pytest.mark.parametrize("codec", ["fp8-block", "int8-block", "int4-block"])
@pytest.mark.parametrize("P", [2, 8])
def test_fused_overflow_across_many_tiles(taco, torch, P, codec, dtype):
    """2^22 + 5 elements, so that every warp of the fused two-shot's phases takes several tiles:
    overflowing sums and large finite ones (whose blocks the staged sum leaves to the general
    loop) in 48 blocks spread over every rank's piece. At P = 8 fp8-block and int8-block take
    the claimed tile order (coll/allreduce_peer.cu), where the warp that meets such a block goes
    on through the general loads and widens the overflowed blocks there, and every other tile is
    still taken exactly once; at P = 2, and int4-block, the static order. Against the model, bit
    for bit."""
    from taco import reference as ref

    count = (1 << 22) + 5
    rng = np.random.default_rng(P)
    top = float(ml_dtypes.finfo(dtype).max)
    idx = rng.choice(count, 48, replace=False)
    where = {int(i): (1.0 if k % 2 == 0 else -1.0) for k, i in enumerate(idx[:24])}  # P >= 2 of them overflow
    large = [int(i) for i in idx[24:]]  # finite sums near the top of the range
    parts = []
    for _ in range(P):
        x = rng.laplace(size=count).astype(np.float32)
        for i, sg in where.items():
            x[i] = sg * 0.75 * top
        x[large] = 0.9 * top / P
        parts.append(x.astype(dtype))
    comms = world(taco, P, codec, algo="fused")
    try:
        assert comms[0].allreduce_algo(count, dtype) == "fused"
        outs = [to_host(torch, o) for o in run_group(taco, torch, comms, "allreduce",
                                                      [to_dev(torch, p) for p in parts], False)]
    finally:
        close_all(comms)
    with np.errstate(all="ignore"):
        want = ref.allreduce(parts, codec, algo="twoshot")
    for r, out in enumerate(outs):
        check_overflow(out, where, f"{codec} P={P} rank {r}")
        assert_same(out, want, f"{codec} P={P} rank {r}: against the model")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec", ["none", "bf16"] + BLOCK_CODECS)
@pytest.mark.parametrize("P", [2, 4])
def test_reduce_scatter_overflow_is_inf(taco, torch, P, codec, dtype):
    from taco import reference as ref

    B = block_of(codec)
    n = 2 * B - 5  # per rank
    parts, where = overflow_parts(P, n, dtype, B, seed=10 + P)
    full = [np.concatenate([p] * P) for p in parts]
    comms = world(taco, P, codec)
    try:
        outs = [to_host(torch, o) for o in run_group(taco, torch, comms, "reduce_scatter",
                                                      [to_dev(torch, x) for x in full], False)]
    finally:
        close_all(comms)
    with np.errstate(all="ignore"):
        want = ref.reduce_scatter(full, codec)
    for r, out in enumerate(outs):
        check_overflow(out, where, f"{codec} P={P} rank {r}")
        if codec != "none":  # none is the transport's plain collective
            assert_same(out, want[r], f"{codec} P={P} rank {r}: against the model")


# ---- the codec kernels against the host twin on sums that overflow


SPECS = BLOCK_CODECS + ["bf16", "taco:block=64", "int8-hadamard:block=32", "int6-hadamard:block=1024",
                        "fp8-block:block=1024"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("k, with_exact", [(1, True), (2, False), (3, True), (5, True)])
def test_codec_kernels_match_the_host_twin_on_overflow(taco, cupy, spec, dtype, k, with_exact):
    B = taco.codec_info(spec)["block_size"] or 256
    # whole 2,048-element tiles with aligned buffers (the staged kernels, the B = 256 rotated
    # decompress of the wide wire), and the same with a tail (the general path)
    for n in (4096, 4096 - 77):
        parts, where = overflow_parts(k + 1, n, dtype, B, seed=k)
        wires = [taco.compress(p, spec) for p in parts[:k]]
        exact = parts[k] if with_exact else None
        dw = [cupy.asarray(w) for w in wires]
        de = cupy_arrays.to_dev(cupy, exact) if with_exact else None
        what = f"{spec} {dtype} k={k} exact={with_exact} n={n}"
        a_h = taco.decompress_accumulate(wires, spec, n, dtype, exact)
        a_d = taco.decompress_accumulate(dw, spec, n, dtype, de)
        assert same_bits(cupy_arrays.from_dev(cupy, a_d, dtype), a_h), what + ": decompress-accumulate"
        if k + with_exact >= 2:
            check_overflow(a_h, where, what)
        o_h, r_h = taco.decompress_reduce_compress(wires, spec, n, dtype, exact, return_decompressed=True)
        o_d, r_d = taco.decompress_reduce_compress(dw, spec, n, dtype, de, return_decompressed=True)
        assert np.array_equal(cupy.asnumpy(o_d), o_h), what + ": decompress-reduce-compress wire"
        assert same_bits(cupy_arrays.from_dev(cupy, r_d, dtype), r_h), what + ": decompress-reduce-compress output"
        y_d = taco.decompress(cupy.asarray(o_h), spec, n, dtype)  # the wide wire, decoded on the device
        assert same_bits(cupy_arrays.from_dev(cupy, y_d, dtype), r_h), what + ": decompress of the wide wire"
        if k + with_exact >= 2:
            check_overflow(r_h, where, what + " (reduce-compress)")

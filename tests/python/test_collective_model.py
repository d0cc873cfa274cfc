"""Invariants of the numpy collective model (python/taco/reference.py, collective section).

The GPU tests compare libtaco's collectives to this model bit for bit; these tests pin
down that the model itself says what docs/collectives.md promises."""
import ml_dtypes
import numpy as np
import pytest

from codec_sets import ALL as CODECS
from taco import reference as ref

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def parts_for(P, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.laplace(size=n).astype(np.float32).astype(dtype) for _ in range(P)]


# ---------------------------------------------------------------- plan
def test_shard_plan_known_values():
    assert ref.shard_plan(1000, 4, 256) == [(0, 256), (256, 256), (512, 256), (768, 232)]
    assert ref.shard_plan(300, 4, 256) == [(0, 256), (256, 44), (300, 0), (300, 0)]
    assert ref.shard_plan(7 * 256, 3, 256) == [(0, 768), (768, 512), (1280, 512)]
    assert ref.shard_plan(0, 2, 32) == [(0, 0), (0, 0)]


@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("B", [32, 256, 1024])
def test_shard_plan_tiles(P, B):
    for count in [1, B - 1, P * B - 1, P * B, 5 * P * B + 3, 100_003]:
        sh = ref.shard_plan(count, P, B)
        assert sum(n for _, n in sh) == count
        at = 0
        for off, n in sh:
            if n:
                assert off == at and off % B == 0
            at += n
        blocks = [-(-n // B) for _, n in sh]
        assert max(blocks) - min(blocks) <= 1


def test_piece_elems_matches_c_formula():
    assert ref.piece_elems(64 << 20, 4, 2, 256, 0) == 8 << 20  # tests/host/test_plan.cc
    assert ref.piece_elems(1, 8, 4, 256, 0) == 256
    assert ref.piece_elems(None, 4, 2, 256, 1000) == 1024


# ---------------------------------------------------------------- AllReduce
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec", CODECS)
def test_allreduce_p1_is_a_round_trip(dtype, codec):
    (x,) = parts = parts_for(1, 1000, dtype)
    want = ref.decompress(ref.compress(x, codec), codec, x.size, dtype)
    assert same(ref.allreduce(parts, codec), want)


@pytest.mark.parametrize("P", [2, 3, 4])
def test_allreduce_two_quantizations_structure(P):
    """fp32: each output element = decompress(compress(exact own + decoded others)),
    the others each compressed once: rebuilt here from the codec API alone. (Whole
    blocks only: in a short last block the reduce kernel compresses the padding of the
    rotated-domain sum, which a fresh compress of the truncated sum pads with zeros.)"""
    count = P * 256 * 2 + 256
    parts = parts_for(P, count, np.float32, seed=P)
    got = ref.allreduce(parts, "taco")
    for o, (off, n) in enumerate(ref.shard_plan(count, P, 256)):
        if n == 0:
            continue
        others = [ref.compress(parts[j][off:off + n]) for j in range(P) if j != o]
        s = ref.decompress_accumulate(others, "taco", n, np.float32, exact=parts[o][off:off + n])
        want = ref.decompress(ref.compress(s), "taco", n, np.float32)
        assert same(got[off:off + n], want), f"owner {o}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("P", [2, 3, 8])
def test_allreduce_identical_on_every_rank(dtype, P):
    count = P * 256 - 1
    outs = ref.allreduce_ranks(parts_for(P, count, dtype), "taco")
    for r in range(1, P):
        assert same(outs[r], outs[0]), f"rank {r}"


@pytest.mark.parametrize("codec", ["taco", "int8-hadamard", "bf16"])
def test_results_independent_of_chunk_size(codec):
    P, n = 3, 3 * 256 * 5 + 13
    parts = parts_for(P, n, BF16, seed=3)
    chunks = [None, 1, 3 * 256 * 2 * 2, 12345, 1 << 20]
    ar = [ref.allreduce(parts, codec, chunk_bytes=c) for c in chunks]
    rs = [ref.reduce_scatter(parts_for(P, 3 * 700, BF16), codec, chunk_bytes=c) for c in chunks]
    ag = [ref.allgather(parts, codec, chunk_bytes=c) for c in chunks]
    a2 = [ref.alltoall(parts_for(P, 3 * 700, BF16), codec, chunk_bytes=c) for c in chunks]
    for i in range(1, len(chunks)):
        assert same(ar[i], ar[0])
        assert same(ag[i], ag[0])
        assert all(same(x, y) for x, y in zip(rs[i], rs[0]))
        assert all(same(x, y) for x, y in zip(a2[i], a2[0]))


def test_allreduce_tiny_counts():
    for P in [2, 4, 8]:
        for count in [1, 2, 255, 257]:
            parts = parts_for(P, count, np.float32, seed=count)
            out = ref.allreduce(parts)
            assert out.shape == (count,)
            assert np.allclose(out, sum(p.astype(np.float64) for p in parts), rtol=0.2, atol=0.2 * P)


def test_plain_path_is_exact_fp32_sum_in_rank_order():
    parts = parts_for(4, 1000, BF16)
    want = parts[0].astype(np.float32)
    for p in parts[1:]:
        want = want + p.astype(np.float32)
    assert same(ref.allreduce(parts, "none"), want.astype(BF16))
    # below fallback_bytes a compressed codec is exact too
    assert same(ref.allreduce(parts, "taco", fallback_bytes=1 << 20), want.astype(BF16))


def test_compressed_error_is_small():
    P = 4
    parts = parts_for(P, 4096, np.float32)
    exact = sum(p.astype(np.float64) for p in parts)
    err = np.linalg.norm(ref.allreduce(parts) - exact) / np.linalg.norm(exact)
    assert 0 < err < 0.1


# ---------------------------------------------------------------- the others
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reduce_scatter(dtype):
    P, n = 3, 600
    parts = parts_for(P, P * n, dtype)
    outs = ref.reduce_scatter(parts, "taco")
    for r in range(P):
        others = [ref.compress(parts[j][r * n:(r + 1) * n]) for j in range(P) if j != r]
        want = ref.decompress_accumulate(others, "taco", n, dtype, exact=parts[r][r * n:(r + 1) * n])
        assert same(outs[r], want)
    # P = 1: exact
    assert same(ref.reduce_scatter(parts[:1], "taco")[0], parts[0])


def test_allgather_round_trips_every_block():
    P, n = 4, 300
    parts = parts_for(P, n, np.float16)
    out = ref.allgather(parts, "taco")
    for j in range(P):
        want = ref.decompress(ref.compress(parts[j]), "taco", n, np.float16)
        assert same(out[j * n:(j + 1) * n], want)
    assert same(ref.allgather(parts, "none"), np.concatenate(parts))


def test_alltoall_is_a_transpose_of_round_trips():
    P, n = 3, 257
    parts = parts_for(P, P * n, np.float32)
    outs = ref.alltoall(parts, "fp8-block")
    for r in range(P):
        for j in range(P):
            blk = parts[j][r * n:(r + 1) * n]
            want = ref.decompress(ref.compress(blk, "fp8-block"), "fp8-block", n, np.float32)
            assert same(outs[r][j * n:(j + 1) * n], want)
    plain = ref.alltoall(parts, "none")
    assert same(plain[1][2 * n:3 * n], parts[2][n:2 * n])


def test_bad_parts():
    with pytest.raises(ValueError):
        ref.allreduce([np.zeros(4, np.float32), np.zeros(5, np.float32)])
    with pytest.raises(ValueError):
        ref.reduce_scatter([np.zeros(5, np.float32), np.zeros(5, np.float32)])

"""Host codec (C twin) against the numpy spec, bit for bit, and the codec contract."""
import ml_dtypes
import numpy as np
import pytest

import taco
from codec_sets import BLOCKED, ELEMENTWISE, INFO, ROTATED
from taco import reference as ref

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def same_bits(a, b):
    """Bitwise equality, any NaN equal to any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "u":
        return np.array_equal(a, b)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    nan = np.isnan(fa) & np.isnan(fb)
    ua = a.view(np.uint8).reshape(a.size, -1)
    ub = b.view(np.uint8).reshape(b.size, -1)
    return bool(np.all(nan | np.all(ua == ub, axis=1)))


def laplace(n, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.laplace(size=n) * scale).astype(np.float32).astype(dtype)


def spec(codec, block):
    return codec if block is None else f"{codec}:block={block}"


def cases():
    for codec in BLOCKED:
        for block in (None, 32, 1024):
            B = block or ref.block_size(codec)
            for n in sorted({1, B - 1, B + 1}):
                yield codec, block, n
        yield codec, None, 10**6 + 3
    for codec in ELEMENTWISE:
        for n in (1, 255, 10**6 + 3):
            yield codec, None, n


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec,block,n", list(cases()))
def test_host_matches_reference(codec, block, n, dtype):
    s = spec(codec, block)
    x = laplace(n, dtype, seed=n)
    wire = taco.compress(x, s)
    assert np.array_equal(wire, ref.compress(x, s)), "wire bytes differ from the numpy spec"
    y = taco.decompress(wire, s, n, dtype)
    assert same_bits(y, ref.decompress(wire, s, n, dtype))


@pytest.mark.parametrize("codec", BLOCKED + ELEMENTWISE)
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("with_exact", [False, True])
def test_accumulate_and_reduce_compress_match_reference(codec, k, with_exact):
    n = 3 * ref.block_size(codec) * 5 + 7
    dtype = BF16
    xs = [laplace(n, dtype, seed=10 + i, scale=10.0 ** (i - 1)) for i in range(k)]
    wires = [ref.compress(x, codec) for x in xs]
    exact = laplace(n, dtype, seed=99) if with_exact else None
    y = taco.decompress_accumulate(wires, codec, n, dtype, exact)
    assert same_bits(y, ref.decompress_accumulate(wires, codec, n, dtype, exact))
    out, y2 = taco.decompress_reduce_compress(wires, codec, n, dtype, exact, return_decompressed=True)
    rout, ry = ref.decompress_reduce_compress(wires, codec, n, dtype, exact)
    assert np.array_equal(out, rout)
    assert same_bits(y2, ry)
    # the optional output is exactly the decompression of the compressed sum
    assert same_bits(y2, taco.decompress(out, codec, n, dtype))


@pytest.mark.parametrize("codec", BLOCKED + ELEMENTWISE)
def test_zero_blocks_decompress_to_exact_zeros(codec):
    B = ref.block_size(codec)
    x = laplace(4 * B, np.float32)
    x[B:3 * B] = 0.0
    y = taco.decompress(taco.compress(x, codec), codec, x.size, np.float32)
    assert np.all(y[B:3 * B] == 0.0)
    z = np.zeros(1000, np.float32)
    assert np.all(taco.decompress(taco.compress(z, codec), codec, z.size, np.float32) == 0.0)


@pytest.mark.parametrize("codec", BLOCKED + ELEMENTWISE)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_non_finite_input_makes_its_block_non_finite(codec, bad, dtype):
    B = max(ref.block_size(codec), 8)  # elementwise codecs: blocks of 8 for the test's bookkeeping
    x = laplace(3 * B, dtype)
    x[B + 5] = bad
    y = taco.decompress(taco.compress(x, codec), codec, x.size, dtype).astype(np.float32)
    if ref.block_size(codec) == 1:  # elementwise codecs: the element itself stays non-finite
        assert not np.isfinite(y[B + 5])
        assert np.all(np.isfinite(np.delete(y, B + 5)))
        return
    else:
        assert not np.any(np.isfinite(y[B:2 * B])), "a block holding NaN/Inf decompressed to finite values"
    assert np.all(np.isfinite(np.delete(y, np.arange(B, 2 * B))))
    # ... and it survives accumulation and re-compression
    w = taco.compress(x, codec)
    acc = taco.decompress_accumulate([w, w], codec, x.size, dtype)
    assert not np.isfinite(acc.astype(np.float32)[B + 5])


def edge_blocks(dtype, B):
    """Blocks of B side by side: ordinary, zero, NaN, +Inf, -Inf, tiny (below the 2^-64 lift),
    fp32-subnormal, a lone smallest subnormal, constant, and huge (lifted by 2^-64 so that the
    rotation cannot overflow, for fp32/bf16; fp16's largest values); the last block cut short."""
    lap = lambda seed, scale: laplace(B, np.float32, seed=seed, scale=scale)  # noqa: E731
    huge = 6e4 / 8 if dtype == np.float16 else 1e37
    blocks = [lap(1, 1.0), np.zeros(B, np.float32), lap(2, 1.0), lap(3, 1.0), lap(4, 1.0), lap(5, 1e-25),
              lap(6, 1e-41), np.zeros(B, np.float32), np.full(B, -0.75, np.float32), lap(7, huge), lap(8, 1.0)]
    blocks[2][7] = np.nan
    blocks[3][0] = np.inf
    blocks[4][B - 1] = -np.inf
    blocks[7][3] = np.float32(1e-45)
    return np.concatenate(blocks)[:-5].astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("block", [32, 256, 1024])
@pytest.mark.parametrize("codec", [c for c in ROTATED if INFO[c]["scales_per_block"] == 1])
def test_rotated_int_codecs_at_the_edges_match_reference(codec, block, dtype):
    """The rotated codecs without the adaptive scale (int8-hadamard, int6-hadamard) treat
    zero, non-finite, tiny and huge blocks alike, and the host twin matches the spec bit for
    bit on all of them."""
    s = spec(codec, block)
    x = edge_blocks(dtype, block)
    wire = taco.compress(x, s)
    assert np.array_equal(wire, ref.compress(x, s)), "wire bytes differ from the numpy spec"
    y = taco.decompress(wire, s, x.size, dtype)
    assert same_bits(y, ref.decompress(wire, s, x.size, dtype))
    yf = y.astype(np.float32).reshape(-1)
    B = block
    assert np.all(yf[B:2 * B] == 0.0)
    assert np.all(np.isnan(yf[2 * B:5 * B])), "NaN / Inf blocks decode to NaN"
    assert np.all(np.isfinite(yf[:B])) and np.all(np.isfinite(yf[5 * B:9 * B]))
    if dtype != np.float16:  # fp16's own range can overflow on output (as NCCL's fp16 sum does)
        assert np.all(np.isfinite(yf[5 * B:])), "finite input (the huge block too) decoded to NaN / Inf"


# Worst NMSE of one round trip on Laplace data at unit scale (measured, with margin).
NMSE_BOUND = {"taco": 2e-3, "taco-e5m2": 6e-3, "fp8-block": 2e-3, "int8-hadamard": 2e-4,
              "int8-block": 4e-4, "int4-block": 4e-2, "int6-hadamard": 1.2e-3, "bf16": 1e-5, "none": 0.0}


def nmse(x, y):
    x = x.astype(np.float64)
    return float(np.sum((y.astype(np.float64) - x) ** 2) / np.sum(x ** 2))


@pytest.mark.parametrize("codec", BLOCKED + ELEMENTWISE)
@pytest.mark.parametrize("scale", [1e-30, 1e-20, 1e-10, 1.0, 1e10, 1e20, 1e30])
def test_fp32_magnitudes_round_trip_with_bounded_error(codec, scale):
    x = laplace(1 << 14, np.float32, seed=3, scale=scale)
    y = taco.decompress(taco.compress(x, codec), codec, x.size, np.float32)
    assert np.all(np.isfinite(y))
    assert nmse(x, y) <= NMSE_BOUND[codec] * 1.01 + 1e-12


@pytest.mark.parametrize("codec", BLOCKED)
def test_fp32_denormals_round_trip(codec):
    x = laplace(1 << 12, np.float32, seed=4, scale=1e-39)  # mostly subnormal
    y = taco.decompress(taco.compress(x, codec), codec, x.size, np.float32)
    assert np.all(np.isfinite(y))
    assert nmse(x, y) <= max(4 * NMSE_BOUND[codec], 1e-2)


@pytest.mark.parametrize("codec", BLOCKED + ELEMENTWISE)
@pytest.mark.parametrize("dtype,scale", [(np.float16, 3e3), (np.float16, 1e-6), (BF16, 1e37), (BF16, 1e-37)],
                         ids=["fp16-large", "fp16-subnormal", "bf16-large", "bf16-small"])
def test_half_extremes_round_trip(codec, dtype, scale):
    # Laplace tails reach ~10x scale: fp16 3e3 puts the largest block maxima near 30000.
    x = laplace(1 << 12, dtype, seed=5, scale=scale)
    y = taco.decompress(taco.compress(x, codec), codec, x.size, dtype)
    yf = y.astype(np.float32)
    finite = np.isfinite(yf)
    # values beyond the dtype's range overflow to inf, as NCCL's own fp16 sum does; only near the max
    assert np.all(finite | (np.abs(x.astype(np.float32)) > 0.9 * float(ml_dtypes.finfo(dtype).max)))
    err = nmse(x.astype(np.float32)[finite], yf[finite])
    # fp16 subnormals carry only a few bits themselves
    bound = 2e-2 if scale < 1e-5 and dtype == np.float16 else max(2 * NMSE_BOUND[codec], 1e-4)
    assert err <= bound


def test_error_nmse_ordering_on_laplace():
    """The measured accuracy ranking (docs/results.md, "Codec kernels") holds."""
    x = laplace(1 << 16, np.float32, seed=7)
    e = {c: nmse(x, taco.decompress(taco.compress(x, c), c, x.size, np.float32)) for c in BLOCKED + ["bf16"]}
    assert e["bf16"] < e["int8-hadamard"] < e["int8-block"] < e["fp8-block"] < e["taco-e5m2"] < e["int4-block"]
    assert e["taco"] < e["taco-e5m2"]
    assert e["int8-hadamard"] < e["int6-hadamard"] < e["taco-e5m2"]


def test_compressed_size_is_a_pure_function():
    for codec in BLOCKED + ELEMENTWISE:
        for n in (1, 255, 256, 257, 10**6):
            for dt in DTYPES:
                size = taco.compressed_size(codec, n, dt)
                assert size == ref.compressed_size(codec, n, dt)
                assert size % 16 == 0 and size >= 16
    # taco, bf16 input: 1 byte per element + 8 bytes of scales per 256 elements + header
    assert taco.compressed_size("taco", 1 << 20, BF16) == 16 + (1 << 20) + 8 * 4096


# ---- bad arguments: specific codes, messages that name the argument
def test_unknown_codec_is_invalid_argument():
    with pytest.raises(taco.InvalidArgumentError, match="unknown codec 'nope'") as e:
        taco.compress(np.ones(4, np.float32), "nope")
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("block", [0, 3, 16, 48, 2048, -32])
def test_bad_block_size(block):
    with pytest.raises(taco.InvalidArgumentError, match="block"):
        taco.compress(np.ones(4, np.float32), f"taco:block={block}")


def test_count_zero_is_invalid():
    with pytest.raises(taco.InvalidArgumentError, match="x: is empty"):
        taco.compress(np.ones(0, np.float32), "taco")


def test_output_buffer_too_small():
    """Named in the caller's words (out, and the bytes it needs), not the C function's."""
    x = np.ones(1000, np.float32)
    need = taco.compressed_size("taco", 1000, np.float32)
    out = np.zeros(need - 16, np.uint8)
    with pytest.raises(taco.InvalidArgumentError, match=f"^tacoInvalidArgument: out: has {need - 16} bytes; the "
                                                        f"compressed buffer needs {need}$"):
        taco.compress(x, "taco", out=out)
    w = taco.compress(x, "taco")
    with pytest.raises(taco.InvalidArgumentError, match=f"out: has 10 bytes; the compressed buffer needs {need}"):
        taco.decompress_reduce_compress([w, w], "taco", 1000, np.float32, out=np.zeros(10, np.uint8))


def test_wire_from_another_codec_is_rejected():
    x = np.ones(1000, np.float32)
    w = taco.compress(x, "fp8-block")
    with pytest.raises(taco.InvalidArgumentError, match="codec: 'int8-block', but wire was compressed with codec "
                                                        "'fp8-block'"):
        taco.decompress(w, "int8-block", 1000, np.float32)
    with pytest.raises(taco.InvalidArgumentError, match="count: 999, but wire holds 1000 elements"):
        taco.decompress(w, "fp8-block", 999, np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_bf16_wire_holds_nan_as_the_library_writes_it(dtype):
    """Every NaN, of either sign and any payload, is 0x7fff on the bf16 codec's wire, in the host
    twin (and the kernels: CUDA's canonical bf16 NaN) and the spec alike; the spec kept the sign
    (0x7fc0 / 0xffc0)."""
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF], np.uint32).view(np.float32)
    x = np.concatenate([bits, np.array([1.0, -0.0, np.inf, -np.inf], np.float32)])
    with np.errstate(invalid="ignore"):
        x = x.astype(dtype)
    host, spec = taco.compress(x, "bf16"), ref.compress(x, "bf16")
    assert np.array_equal(host, spec)
    codes = host[16:16 + 2 * x.size].view(np.uint16)
    assert codes[:4].tolist() == [0x7FFF] * 4
    # codec none: 16-bit data goes through fp32 too (its NaNs become 0x7fff); fp32 data is copied
    host, spec = taco.compress(x, "none"), ref.compress(x, "none")
    assert np.array_equal(host, spec)
    if np.dtype(dtype).itemsize == 2:
        assert host[16:16 + 8].view(np.uint16).tolist() == [0x7FFF] * 4
    else:
        assert np.array_equal(host[16:16 + 16].view(np.uint32), bits.view(np.uint32))

"""GPU codec kernels against the CPU twin (and so the numpy spec), bit for bit."""
import ml_dtypes
import numpy as np
import pytest

import taco
from codec_range import same_bits
from cupy_arrays import cupy, from_dev, to_dev  # noqa: F401 (fixture)
from codec_sets import ALL as CODECS, BLOCKED, BYTE_CODES, ROTATED

pytestmark = pytest.mark.gpu

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def data(n, dtype, seed=0, special=True):
    rng = np.random.default_rng(seed)
    x = (rng.laplace(size=n) * 10.0 ** rng.integers(-3, 3)).astype(np.float32)
    if special and n > 600:
        x[:256] = 0.0                       # a zero block
        x[300] = np.nan                     # a NaN block
        x[600] = np.inf
    return x.astype(dtype)


def spec(codec, block):
    return codec if block is None else f"{codec}:block={block}"


def gpu_cases():
    for codec in CODECS:
        blocks = (None, 32, 128, 1024) if codec in BLOCKED else (None,)
        for block in blocks:
            B = {None: 256, 32: 32, 128: 128, 1024: 1024}[block] if codec in BLOCKED else 8
            for n in sorted({1, B - 1, B + 1, 10**6 + 3}):
                yield codec, block, n


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("codec,block,n", list(gpu_cases()))
def test_gpu_matches_host(cupy, codec, block, n, dtype):
    s = spec(codec, block)
    x = data(n, dtype, seed=n)
    wire_h = taco.compress(x, s)
    xd = to_dev(cupy, x)
    wire_d = taco.compress(xd, s, dtype=str(np.dtype(dtype)) if dtype == BF16 else None)
    assert np.array_equal(cupy.asnumpy(wire_d), wire_h), "GPU wire differs from the CPU twin"
    yh = taco.decompress(wire_h, s, n, dtype)
    yd = taco.decompress(cupy.asarray(wire_h), s, n, dtype)
    assert same_bits(from_dev(cupy, yd, dtype), yh)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("k", [1, 2, 7])
def test_gpu_accumulate_and_reduce_compress_match_host(cupy, codec, k):
    n = 5 * 1024 + 77
    dtype = BF16
    xs = [data(n, dtype, seed=20 + i, special=(i == 0)) for i in range(k)]
    wires = [taco.compress(x, codec) for x in xs]
    exact = data(n, dtype, seed=5, special=False)
    yh = taco.decompress_accumulate(wires, codec, n, dtype, exact)
    dw = [cupy.asarray(w) for w in wires]
    yd = taco.decompress_accumulate(dw, codec, n, dtype, to_dev(cupy, exact))
    assert same_bits(from_dev(cupy, yd, dtype), yh)
    oh, y2h = taco.decompress_reduce_compress(wires, codec, n, dtype, exact, return_decompressed=True)
    od, y2d = taco.decompress_reduce_compress(dw, codec, n, dtype, to_dev(cupy, exact), return_decompressed=True)
    assert np.array_equal(cupy.asnumpy(od), oh)
    assert same_bits(from_dev(cupy, y2d, dtype), y2h)


# The staged multi-input sum (genericSumTiles, device/block_sum.cuh) stages a tile as
# units of up to 3 compressed inputs, then the exact input: k = 1 ... 15 inputs make 1 ... 5
# units of codes, 1 ... 6 units per tile with the exact input, so its 3 slots wrap within a
# tile and across tiles. Byte codes at block sizes 32 (a lane per block), 256 and 1024 (a
# warp per block), rotated and not, adaptive and not.
# INT4: a block per thread at its B = 32 (its codes staged whole), and two threads a block at 64
STAGED_SUM_SPECS = BYTE_CODES + ["taco:block=32", "int8-hadamard:block=1024", "int4-block", "int4-block:block=64"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", STAGED_SUM_SPECS)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 15])
def test_gpu_staged_sum_matches_host(cupy, k, spec, dtype):
    # nine whole tiles of 1,024 elements with aligned buffers (staged) and a partial one
    # (the general loads); with and without the exact input, reduce-compress with and
    # without y; the NaN / Inf / zero blocks in the last input (the last group)
    n = 9 * 1024 + 77
    xs = [data(n, dtype, seed=40 + i, special=(i == k - 1)) for i in range(k)]
    wires = [taco.compress(x, spec) for x in xs]
    dw = [cupy.asarray(w) for w in wires]
    exact = data(n, dtype, seed=6, special=False)
    for ex in (None, exact):
        exd = None if ex is None else to_dev(cupy, ex)
        what = f"k = {k}, exact input: {ex is not None}"
        yh = taco.decompress_accumulate(wires, spec, n, dtype, ex)
        yd = taco.decompress_accumulate(dw, spec, n, dtype, exd)
        assert same_bits(from_dev(cupy, yd, dtype), yh), f"decompress-accumulate, {what}"
        oh, rh = taco.decompress_reduce_compress(wires, spec, n, dtype, ex, return_decompressed=True)
        od, rd = taco.decompress_reduce_compress(dw, spec, n, dtype, exd, return_decompressed=True)
        assert np.array_equal(cupy.asnumpy(od), oh), f"decompress-reduce-compress wire, {what}"
        assert same_bits(from_dev(cupy, rd, dtype), rh), f"decompress-reduce-compress y, {what}"
        od = taco.decompress_reduce_compress(dw, spec, n, dtype, exd)
        assert np.array_equal(cupy.asnumpy(od), oh), f"decompress-reduce-compress without y, {what}"


@pytest.mark.parametrize("k,with_exact", [(2, False), (1, True), (4, True), (7, True)])
@pytest.mark.parametrize("dtype", [BF16, np.dtype(np.float32)], ids=str)
def test_gpu_staged_sum_several_tiles_per_warp(cupy, k, with_exact, dtype):
    # 2^25 + 77 elements: decompress-reduce-compress's grid (at most 8 CTAs of 8 warps per
    # SM: codec/launch.cu, ctasPerSm) leaves each warp several tiles, so the pipeline stages
    # the next tile's units (1, 2, 3 and 4 per tile here) while it computes this one's: at
    # 2 and 4 a slot holds codes in one unit and the exact input in another. The inputs
    # are compressed on the GPU (held to the host twin by the tests above).
    n = (1 << 25) + 77
    codec = "taco"
    rng = np.random.default_rng(k)
    xs = [(rng.laplace(size=n) * 4.0 ** i).astype(np.float32).astype(dtype) for i in range(k)]
    dtype_arg = str(np.dtype(dtype)) if dtype == BF16 else None
    dw = [taco.compress(to_dev(cupy, x), codec, dtype=dtype_arg) for x in xs]
    wires = [cupy.asnumpy(w) for w in dw]
    exact = xs[0] if with_exact else None
    exd = to_dev(cupy, exact) if with_exact else None
    oh, rh = taco.decompress_reduce_compress(wires, codec, n, dtype, exact, return_decompressed=True)
    od, rd = taco.decompress_reduce_compress(dw, codec, n, dtype, exd, return_decompressed=True)
    assert np.array_equal(cupy.asnumpy(od), oh)
    assert same_bits(from_dev(cupy, rd, dtype), rh)
    yh = taco.decompress_accumulate(wires, codec, n, dtype, exact)
    yd = taco.decompress_accumulate(dw, codec, n, dtype, exd)
    assert same_bits(from_dev(cupy, yd, dtype), yh)


@pytest.mark.parametrize("where", ["wire", "exact", "out", "y"])
@pytest.mark.parametrize("codec", ["taco", "fp8-block"])
def test_gpu_sum_with_an_unaligned_pointer(cupy, codec, where):
    # One pointer 4-byte but not 16-byte aligned: the sum of 4 inputs takes the general
    # loads (generalTiles) instead of the staged pipeline, with the same bits.
    n, k = 5 * 1024 + 77, 4
    f32 = np.dtype(np.float32)
    xs = [data(n, f32, seed=60 + i) for i in range(k)]
    wires = [taco.compress(x, codec) for x in xs]
    exact = data(n, f32, seed=7, special=False)
    size = taco.compressed_size(codec, n, np.float32)

    def unaligned_bytes(nbytes):
        return cupy.zeros(nbytes + 16, cupy.uint8)[4:4 + nbytes]

    def unaligned_f32(host=None):
        buf = cupy.zeros(n + 1, cupy.float32)
        if host is not None:
            buf[1:] = cupy.asarray(host)
        return buf[1:]

    dw = [cupy.asarray(w) for w in wires]
    if where == "wire":
        dw[2] = unaligned_bytes(size)
        dw[2][...] = cupy.asarray(wires[2])
    exd = unaligned_f32(exact) if where == "exact" else cupy.asarray(exact)
    out = unaligned_bytes(size) if where == "out" else cupy.zeros(size, cupy.uint8)
    y = unaligned_f32() if where == "y" else cupy.zeros(n, cupy.float32)
    oh, rh = taco.decompress_reduce_compress(wires, codec, n, f32, exact, return_decompressed=True)
    taco.decompress_reduce_compress(dw, codec, n, f32, exd, out=out, y=y)
    assert np.array_equal(cupy.asnumpy(out), oh)
    assert same_bits(cupy.asnumpy(y), rh)
    y2 = unaligned_f32() if where == "y" else cupy.zeros(n, cupy.float32)
    taco.decompress_accumulate(dw, codec, n, f32, exd, out=y2)
    assert same_bits(cupy.asnumpy(y2), taco.decompress_accumulate(wires, codec, n, f32, exact))


@pytest.mark.parametrize("codec,dtype", [("taco", BF16), ("taco", np.dtype(np.float32)),
                                         ("fp8-block", np.dtype(np.float16)), ("int8-hadamard", BF16),
                                         ("int6-hadamard", BF16), ("int6-hadamard", np.dtype(np.float32))])
def test_gpu_matches_host_at_2_28(cupy, codec, dtype):
    n = (1 << 28) + 3
    rng = cupy.random.default_rng(1)
    xd32 = rng.laplace(size=n, dtype=cupy.float32) if hasattr(rng, "laplace") else \
        cupy.asarray(np.random.default_rng(1).laplace(size=n).astype(np.float32))
    x = cupy.asnumpy(xd32).astype(dtype)
    wire_h = taco.compress(x, codec)
    wire_d = taco.compress(to_dev(cupy, x), codec, dtype=str(np.dtype(dtype)) if dtype == BF16 else None)
    assert np.array_equal(cupy.asnumpy(wire_d), wire_h)
    yd = taco.decompress(wire_d, codec, n, dtype)
    yh = taco.decompress(wire_h, codec, n, dtype)
    assert same_bits(from_dev(cupy, yd, dtype), yh)


@pytest.mark.parametrize("offset", [1, 3, 5])
@pytest.mark.parametrize("codec", CODECS)
def test_unaligned_pointers(cupy, codec, offset):
    n = 3000
    x = data(n + offset, np.dtype(np.float32), seed=offset)
    xd = cupy.asarray(x)[offset:]          # 4-byte aligned, not 16-byte aligned
    size = taco.compressed_size(codec, n, np.float32)
    buf = cupy.zeros(size + 16, cupy.uint8)
    out = buf[4:4 + size]                  # compressed buffer at a 4-byte (not 16) offset
    taco.compress(xd, codec, out=out)
    assert np.array_equal(cupy.asnumpy(out), taco.compress(x[offset:], codec))
    ybuf = cupy.zeros(n + 1, cupy.float32)
    y = ybuf[1:]
    taco.decompress(out, codec, n, np.float32, out=y)
    assert same_bits(cupy.asnumpy(y), taco.decompress(taco.compress(x[offset:], codec), codec, n, np.float32))


def test_work_lands_on_the_given_stream(cupy):
    n = 1 << 24
    x = cupy.asarray(data(n, np.dtype(np.float32), special=False))
    s = cupy.cuda.Stream(non_blocking=True)
    size = taco.compressed_size("taco", n, np.float32)
    out = cupy.zeros(size, cupy.uint8)
    ev_before = cupy.cuda.Event()
    with s:
        # a long kernel on s; compress must run after it, on s
        spin = cupy.zeros(1 << 26, cupy.float32)
        for _ in range(20):
            spin += 1.0
        x2 = x * 1.0
        ev_before.record(s)
    taco.compress(x2, "taco", out=out, stream=s.ptr)
    done = cupy.cuda.Event()
    done.record(s)
    done.synchronize()
    assert np.array_equal(cupy.asnumpy(out), taco.compress(cupy.asnumpy(x), "taco"))
    # the default stream saw none of it: an event recorded there completes before the spin ends
    assert ev_before.done


def test_host_pointer_to_device_call_is_rejected(cupy):
    x = np.ones(1024, np.float32)
    lib, ffi = taco._lib.lib(), taco._lib.ffi()
    c = ffi.new("tacoCodec_t*")
    assert lib.tacoCodecFind(b"taco", c) == 0
    out = cupy.zeros(taco.compressed_size("taco", 1024, np.float32), cupy.uint8)
    rc = lib.tacoCompress(c[0], ffi.cast("void*", x.ctypes.data), 1024, lib.tacoFloat32,
                          ffi.cast("void*", out.data.ptr), out.nbytes, ffi.NULL)
    assert rc == lib.tacoInvalidArgument
    assert "x argument" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()
    assert "not device memory" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()


@pytest.mark.parametrize("codec", BLOCKED)
@pytest.mark.parametrize("dtype", [BF16, np.dtype(np.float32)], ids=str)
def test_mismatched_header_decompresses_to_nan(cupy, codec, dtype):
    # The device kernels cannot return an error without a host synchronisation, so a
    # header that does not match (here: a bad magic, and a wire of another codec) makes
    # them write NaN over the whole output (docs/format.md). The rotated codecs at B = 256
    # with aligned buffers run the rotated kernel, the others the general one.
    n = 8 * 1024 + 5
    x = data(n, dtype, seed=3, special=False)
    wire = taco.compress(x, codec)
    bad = wire.copy()
    bad[0] ^= 0xFF                                                  # magic
    wrong = [bad]
    size = taco.compressed_size(codec, n, np.float32)
    same_size = [c for c in BLOCKED if c != codec and taco.compressed_size(c, n, np.float32) == size]
    for other in same_size[:1]:                                     # the same layout, another codec id
        wrong.append(taco.compress(x, other))
    for w in wrong:
        y = from_dev(cupy, taco.decompress(cupy.asarray(w), codec, n, dtype), dtype)
        assert np.isnan(y.astype(np.float32)).all()
    # the good wire still decodes as on the host (the same kernel, right after)
    y = from_dev(cupy, taco.decompress(cupy.asarray(wire), codec, n, dtype), dtype)
    assert same_bits(y, taco.decompress(wire, codec, n, dtype))


def tile_boundary_cases():
    for codec in ROTATED:
        for dtype in DTYPES:
            for n in (16 * 2048, 9 * 1024, 41 * 256, 41 * 256 + 5):
                yield codec, dtype, n
        yield codec, np.dtype(np.float16), 40 * 2**20 + 3 * 256  # once (bf16 has the 2^28 test)


@pytest.mark.parametrize("codec,dtype,n", list(tile_boundary_cases()), ids=str)
def test_gpu_rotated256_tile_boundaries(cupy, codec, dtype, n):
    # B = 256 with aligned buffers: the rotated kernels take whole tiles (4 blocks; the
    # 16-bit compress 8) and the general path the last partial one, at counts that are
    # multiples of 2,048, of 1,024 only, of 256 only and of none; the largest has
    # several tiles per warp (16-bit compress and decompress: the pipelines' slots wrap).
    x = data(n, dtype, seed=n % 1000)
    wire_h = taco.compress(x, codec)
    wire_d = taco.compress(to_dev(cupy, x), codec, dtype=str(np.dtype(dtype)) if dtype == BF16 else None)
    assert np.array_equal(cupy.asnumpy(wire_d), wire_h), "GPU wire differs from the CPU twin"
    yd = taco.decompress(cupy.asarray(wire_h), codec, n, dtype)
    assert same_bits(from_dev(cupy, yd, dtype), taco.decompress(wire_h, codec, n, dtype))


def exponent_sweep(dtype, nblocks=256, seed=7):
    """nblocks blocks of 256 Laplace values, block b scaled by 2^e_b with e_b sweeping the
    dtype's whole range (block maxima from near the smallest subnormal to near the largest
    finite value), so every branch of the kernels' energy and scale code is taken: the
    rotated kernels take the block energy through different instructions for max|x| below
    2^-118, between 2^-118 and 2^10, and above."""
    lo, hi = {np.dtype(np.float16): (-24, 13)}.get(np.dtype(dtype), (-140, 124))
    rng = np.random.default_rng(seed)
    e = np.round(np.linspace(lo, hi, nblocks)).astype(np.int64)
    x = rng.laplace(size=(nblocks, 256)) / 8.0                      # |x| mostly below 1
    return (x * np.ldexp(1.0, e)[:, None]).astype(np.float32).astype(dtype).reshape(-1)


@pytest.mark.parametrize("codec", BLOCKED)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gpu_matches_host_across_the_exponent_range(cupy, codec, dtype):
    # 65,536 elements: whole 2,048-element tiles with aligned buffers (the B = 256 fast
    # kernels), and the same data with a tail (the general path for the last tile)
    for n in (65536, 65536 - 77):
        x = exponent_sweep(dtype)[:n]
        wire_h = taco.compress(x, codec)
        wire_d = taco.compress(to_dev(cupy, x), codec, dtype=str(np.dtype(dtype)) if dtype == BF16 else None)
        assert np.array_equal(cupy.asnumpy(wire_d), wire_h), "GPU wire differs from the CPU twin"
        yd = taco.decompress(cupy.asarray(wire_h), codec, n, dtype)
        assert same_bits(from_dev(cupy, yd, dtype), taco.decompress(wire_h, codec, n, dtype))

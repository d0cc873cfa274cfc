"""The codec kernels over the whole exponent range (tests/codec_range.py's sweep, from
fp32's smallest subnormal to FLT_MAX) against the host twin, bit for bit: compress,
decompress, decompress-accumulate and decompress-reduce-compress, through every kernel
variant (the B = 256 rotated kernels on whole aligned tiles, the staged and general
block kernels, the elementwise kernel). The host twin is held to the numpy spec and to
the error bounds by tests/python/test_codec_range.py."""
import numpy as np
import pytest

import taco
from codec_range import BF16, DTYPES, same_bits, sweep
from cupy_arrays import cupy, from_dev, to_dev  # noqa: F401 (fixture)
from codec_sets import BYTE_CODES

pytestmark = pytest.mark.gpu


def dtype_arg(dtype):
    return str(np.dtype(dtype)) if np.dtype(dtype) == BF16 else None


def specs():
    for codec in taco.codecs():
        for block in ((None, 32, 128, 1024) if taco.codec_info(codec)["block_size"] else (None,)):
            yield codec if block is None else f"{codec}:block={block}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", list(specs()))
def test_gpu_matches_host_across_the_whole_range(cupy, spec, dtype):
    B = taco.codec_info(spec)["block_size"] or 256
    x_all, _ = sweep(dtype, B, seed=1)
    x2_all = sweep(dtype, B, seed=2)[0][::-1]  # its largest blocks meet the smallest of x
    # whole 2,048-element tiles with aligned buffers (the B = 256 rotated kernels, the
    # staged block kernels), and the same data with a tail (the general path)
    whole = x_all.size // 2048 * 2048
    for n in (whole, whole - 77):
        x, x2 = x_all[:n], x2_all[:n].copy()
        wire_h = taco.compress(x, spec)
        wire_d = taco.compress(to_dev(cupy, x), spec, dtype=dtype_arg(dtype))
        assert np.array_equal(cupy.asnumpy(wire_d), wire_h), f"compress, n = {n}"
        y_h = taco.decompress(wire_h, spec, n, dtype)
        y_d = taco.decompress(cupy.asarray(wire_h), spec, n, dtype)
        assert same_bits(from_dev(cupy, y_d, dtype), y_h), f"decompress, n = {n}"
        wires = [wire_h, taco.compress(x2, spec)]
        exact = (x.astype(np.float32) * np.float32(-0.5)).astype(dtype)
        dw = [cupy.asarray(w) for w in wires]
        a_h = taco.decompress_accumulate(wires, spec, n, dtype, exact)
        a_d = taco.decompress_accumulate(dw, spec, n, dtype, to_dev(cupy, exact))
        assert same_bits(from_dev(cupy, a_d, dtype), a_h), f"decompress-accumulate, n = {n}"
        o_h, r_h = taco.decompress_reduce_compress(wires, spec, n, dtype, exact, return_decompressed=True)
        o_d, r_d = taco.decompress_reduce_compress(dw, spec, n, dtype, to_dev(cupy, exact),
                                                   return_decompressed=True)
        assert np.array_equal(cupy.asnumpy(o_d), o_h), f"decompress-reduce-compress wire, n = {n}"
        assert same_bits(from_dev(cupy, r_d, dtype), r_h), f"decompress-reduce-compress output, n = {n}"


def block_shifts(wire, spec, n, dtype):
    """Each block's decode shift K (block_math.h, decodeShift: 64, 0 or -64) of one wire."""
    from taco import reference as ref
    c = ref._Codec(spec, None)
    return ref._decode_scales(c, [ref._unpack(c, wire, n, dtype)[1]])[1]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", BYTE_CODES + ["int6-hadamard", "taco:block=32", "int8-hadamard:block=1024"])
@pytest.mark.parametrize("k", [4, 7])
def test_gpu_staged_sum_shift_of_a_later_group(cupy, spec, dtype, k):
    # The staged sum (genericSumTiles) decodes with the shift K of the first group of 3
    # inputs and sums a tile again through the general loads where a later group's is
    # larger; the rotated codecs' sum at B = 256 (rotated256SumTiles) does the same with
    # input 0's K. The last input (group 1 of k = 4, group 2 of k = 7) runs the sweep
    # backwards: where the others hold the smallest blocks (K = -64) it holds the largest
    # (K = 0 or 64), and the other way round (group 0's K stands).
    B = taco.codec_info(spec)["block_size"]
    fwd = [sweep(dtype, B, seed=s)[0] for s in (1, 3, 4, 5)]
    rev = sweep(dtype, B, seed=2)[0][::-1].copy()
    xs = fwd[:3] + ([] if k == 4 else [fwd[3], fwd[0], fwd[1]]) + [rev]
    n = xs[0].size // 2048 * 2048  # whole tiles, aligned: every tile staged
    xs = [x[:n] for x in xs]
    wires = [taco.compress(x, spec) for x in xs]
    shifts = np.array([block_shifts(w, spec, n, dtype) for w in wires])
    if np.dtype(dtype) != np.dtype(np.float16):  # fp16's range never needs a shift
        assert (shifts[-1] > shifts[:-1].max(axis=0)).any(), "no block where the last group shifts further"
        assert (shifts[:3].max(axis=0) > shifts[-1]).any(), "no block where group 0 shifts further"
    exact = (xs[1].astype(np.float32) * np.float32(0.25)).astype(dtype)
    dw = [cupy.asarray(w) for w in wires]
    a_h = taco.decompress_accumulate(wires, spec, n, dtype, exact)
    a_d = taco.decompress_accumulate(dw, spec, n, dtype, to_dev(cupy, exact))
    assert same_bits(from_dev(cupy, a_d, dtype), a_h), "decompress-accumulate"
    o_h, r_h = taco.decompress_reduce_compress(wires, spec, n, dtype, exact, return_decompressed=True)
    o_d, r_d = taco.decompress_reduce_compress(dw, spec, n, dtype, to_dev(cupy, exact), return_decompressed=True)
    assert np.array_equal(cupy.asnumpy(o_d), o_h), "decompress-reduce-compress wire"
    assert same_bits(from_dev(cupy, r_d, dtype), r_h), "decompress-reduce-compress output"

"""Every codec over the whole exponent range of its input (docs/codecs.md, "Range"): the
host twin against the numpy spec bit for bit, finite input to a finite reconstruction,
and the documented per-codec error bound, from fp32's smallest subnormal to FLT_MAX."""
import numpy as np
import pytest

import taco
from taco import reference as ref
from codec_range import BF16, DTYPES, ERROR_BOUNDS, F32, TINY, block_errors, same_bits, sweep

FLT_MAX = float(np.finfo(np.float32).max)


def blocked(codec):
    return ref.codec_params(codec)["block"] > 0


def specs():
    for codec in taco.codecs():
        for block in ((None, 32, 1024) if blocked(codec) else (None,)):
            yield codec if block is None else f"{codec}:block={block}"


def test_every_codec_has_a_documented_bound():
    assert {c for c, _ in ERROR_BOUNDS} == set(taco.codecs())


def check_bound(spec, x, y):
    """max|y - x| <= E max|x| + A 2^-149 per block, y the fp32 reconstruction."""
    c = ref.codec_params(spec)
    B = c["block"] or 256
    E, A = ERROR_BOUNDS[(c["name"], c["block"])]
    m0, err = block_errors(x, y, B)
    over = err > E * m0 + A * TINY
    if over.any():
        i = int(np.argmax(err - (E * m0 + A * TINY)))
        pytest.fail(f"{spec}: {int(over.sum())} blocks above the bound, worst block {i}: max|x| = {m0[i]:.3e}, "
                    f"error {err[i]:.3e} > {E} max|x| + {A} 2^-149")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("spec", list(specs()))
def test_exponent_sweep(spec, dtype):
    c = ref.codec_params(spec)
    x, _ = sweep(dtype, c["block"] or 256, seed=1)
    wire = taco.compress(x, spec)
    assert np.array_equal(wire, ref.compress(x, spec)), "wire bytes differ from the numpy spec"
    y = taco.decompress(wire, spec, x.size, dtype)
    assert same_bits(y, ref.decompress(wire, spec, x.size, dtype))
    # the reconstruction, in fp32 (a block codec's wire decodes to any float type)
    y32 = y.astype(np.float32) if c["name"] == "none" else taco.decompress(wire, spec, x.size, np.float32)
    assert same_bits(y32, ref.decompress(wire, spec, x.size, np.float32 if c["name"] != "none" else dtype)
                     .astype(np.float32))
    assert np.all(np.isfinite(y32)), f"finite input decoded to {y32[~np.isfinite(y32)][:4]}"
    # a 16-bit output is the IEEE rounding of it: Inf only where the reconstruction
    # exceeds the dtype's largest finite value (docs/codecs.md, "Range")
    with np.errstate(over="ignore"):
        assert same_bits(y, y32.astype(dtype))
    check_bound(spec, x, y32)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
@pytest.mark.parametrize("codec", taco.codecs())
def test_exponent_sweep_accumulate_and_reduce_compress(codec, dtype):
    B = ref.block_size(codec) if blocked(codec) else 256
    x, _ = sweep(dtype, B, seed=2)
    x2, _ = sweep(dtype, B, seed=3)
    x2 = x2[::-1].copy()  # the largest blocks of one input meet the smallest of the other
    wires = [ref.compress(x, codec), ref.compress(x2, codec)]
    exact = (x.astype(np.float32) * np.float32(-0.5)).astype(dtype)
    y = taco.decompress_accumulate(wires, codec, x.size, dtype, exact)
    assert same_bits(y, ref.decompress_accumulate(wires, codec, x.size, dtype, exact))
    out, y2 = taco.decompress_reduce_compress(wires, codec, x.size, dtype, exact, return_decompressed=True)
    rout, ry2 = ref.decompress_reduce_compress(wires, codec, x.size, dtype, exact)
    assert np.array_equal(out, rout)
    assert same_bits(y2, ry2)
    assert same_bits(y2, taco.decompress(out, codec, x.size, dtype))


@pytest.mark.parametrize("codec", taco.codecs())
def test_largest_finite_values_decode_finite(codec):
    """Blocks at FLT_MAX (constant, alternating, a lone one, one ulp below) decode to
    finite values within the codec's bound: no Inf from rounding q * s above FLT_MAX,
    no NaN from a rotation that overflows."""
    B = ref.block_size(codec) if blocked(codec) else 256
    below = float(np.nextafter(np.float32(FLT_MAX), np.float32(0)))
    rows = [np.full(B, FLT_MAX), np.where(np.arange(B) % 2 == 0, FLT_MAX, -FLT_MAX), np.full(B, -below),
            np.where(np.arange(B) == 3, FLT_MAX, 0.0), np.linspace(-FLT_MAX, FLT_MAX, B)]
    x = np.concatenate(rows).astype(np.float32)
    y = taco.decompress(taco.compress(x, codec), codec, x.size, np.float32)
    assert np.all(np.isfinite(y)), f"{codec}: FLT_MAX blocks decoded to {y[~np.isfinite(y)][:4]}"
    check_bound(codec, x, y)


@pytest.mark.parametrize("codec", ["taco", "taco-e5m2"])
@pytest.mark.parametrize("scale", [1e-41, 1e-40, 1e-39, 1e-38])
def test_adaptive_codecs_keep_their_accuracy_on_fp32_subnormals(codec, scale):
    """The decode multiplier d of a tiny block was a subnormal float (with E5M2's Qmax
    57344, d ~ 8e-7 max|x|: from max|x| ~ 1e-32 down, and zero below ~2e-39); the decode
    now runs scaled by 2^64 there, so the NMSE on the same Laplace values is the one at
    unit scale (the data's own fp32 rounding aside)."""

    def nmse(s):
        x = (np.random.default_rng(11).laplace(size=1 << 14) * s).astype(np.float32)
        y = taco.decompress(taco.compress(x, codec), codec, x.size, np.float32)
        assert not np.any(np.all(y.reshape(-1, 256) == 0, axis=1)), "a block decoded to zeros"
        x64 = x.astype(np.float64)
        return float(np.sum((y - x64) ** 2) / np.sum(x64 ** 2))

    assert nmse(scale) <= 1.01 * nmse(1.0)


@pytest.mark.parametrize("codec,qmax", [("int8-block", 127), ("int4-block", 7)])
def test_integer_block_codecs_are_exact_at_the_bottom_of_fp32(codec, qmax):
    """Below 2^-126 the stored scale is rounded up to the 2^-149 grid and the codes taken
    from it: blocks of at most qmax units of 2^-149 get s = 2^-149 and decode exactly."""
    B = ref.block_size(codec)
    rng = np.random.default_rng(5)
    units = rng.integers(-qmax, qmax + 1, size=(64, B)).astype(np.float64)
    x = (units * TINY).astype(np.float32).reshape(-1)
    wire = taco.compress(x, codec)
    assert np.array_equal(wire, ref.compress(x, codec))
    assert np.array_equal(taco.decompress(wire, codec, x.size, np.float32), x)


def test_bf16_codec_saturates_finite_values_and_keeps_inf_and_nan():
    bits = np.array([0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0xFF7FFFFF, 0x7F7F0000, 0x7F800000, 0xFF800000,
                     0x7FC00000, 0x3F800000], np.uint32)
    x = bits.view(np.float32)
    for wire in (taco.compress(x, "bf16"), ref.compress(x, "bf16")):
        codes = wire[16:16 + 2 * x.size].view(np.uint16)
        # FLT_MAX, the first value that rounds to Inf, the last that does not, -FLT_MAX,
        # bf16's max, +-Inf, NaN, 1
        assert list(codes[:7]) == [0x7F7F, 0x7F7F, 0x7F7F, 0xFF7F, 0x7F7F, 0x7F80, 0xFF80]
        assert codes[7] & 0x7FFF > 0x7F80 and codes[8] == 0x3F80
    # an fp32 sum beyond bf16's range but not fp32's saturates on the wire too
    half = np.full(8, 1.7e38, np.float32)
    w = ref.compress(half, "bf16")
    for out in (taco.decompress_reduce_compress([w], "bf16", 8, np.float32, half),
                ref.decompress_reduce_compress([w], "bf16", 8, np.float32, half)[0]):
        assert np.all(out[16:32].view(np.uint16) == 0x7F7F)

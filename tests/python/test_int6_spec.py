"""The numpy spec of int6-hadamard (python/taco/reference.py): its bit layout, range and
non-finite rules, checked against hand-computed bytes. The C host twin and the kernels
are held to this spec by test_codec_host.py and tests/gpu."""
import ml_dtypes
import numpy as np
import pytest

from taco import reference as ref

CODEC = "int6-hadamard"
BF16 = np.dtype(ml_dtypes.bfloat16)


def fwht(v):
    return ref._fwht(np.asarray(v, np.float32).reshape(1, -1)).reshape(-1)


def with_rotated_codes(z):
    """x whose unnormalised rotation Z' is exactly z (small integers): the FWHT is its own
    inverse up to a factor B, and FWHT(z) / B and every partial sum are exact in fp32.
    With max|z| = 31, inv = 31 / max|Z'| = 1 and the codes are z itself."""
    z = np.asarray(z, np.float32)
    return fwht(z) / np.float32(z.size)


def test_registry_entry():
    p = ref.codec_params(CODEC)
    assert p == {"name": CODEC, "id": 8, "format": "int6", "block": 256, "rotate": True, "adaptive": False,
                 "format_version": 1}
    assert ref.block_size(CODEC, 32) == 32 and ref.block_size(f"{CODEC}:block=1024") == 1024
    with pytest.raises(ValueError, match="block size"):
        ref.codec_params(CODEC, 16)


def test_four_codes_in_three_little_endian_bytes():
    # codes 1, -1, 31, -31 as 6-bit two's complement: 0x01, 0x3F, 0x1F, 0x21;
    # the word 0x01 | 0x3F << 6 | 0x1F << 12 | 0x21 << 18 = 0x85FFC1, stored C1 FF 85
    z = np.zeros(256, np.float32)
    z[:4] = [1, -1, 31, -31]
    z[4:8] = [0, 0, 0, -2]
    wire = ref.compress(with_rotated_codes(z), CODEC)
    codes = wire[16:16 + 192]
    assert list(codes[:3]) == [0xC1, 0xFF, 0x85]
    assert list(codes[3:6]) == [0x00, 0x00, 0xF8]  # -2 = 0x3E at bits 18..23 -> 0xF80000
    assert not codes[6:].any()
    # s = max|Z| / 31 with Z = Z' / sqrt(B): 31 / 16 / 31
    assert wire[16 + 192:16 + 196].view(np.float32)[0] == np.float32(1 / 16)


@pytest.mark.parametrize("B", [32, 256, 1024])
def test_every_code_round_trips(B):
    z = np.resize(np.arange(-31, 32, dtype=np.float32), B)
    z[0] = 31  # max |z| = 31 in every block size
    x = with_rotated_codes(z)
    wire = ref.compress(x, CODEC, block=B)
    codes = ref._unpack_int6(wire[16:16 + B // 4 * 3].reshape(1, -1)).reshape(-1)
    assert np.array_equal(ref._decode(codes, "int6"), z)
    y = ref.decompress(wire, CODEC, B, block=B)
    if B in (256, 1024):  # c = 1/sqrt(B) exact: q * s * c = z / B, and y = x exactly
        assert np.array_equal(y, x)
    else:
        assert np.allclose(y, x, rtol=0, atol=1e-6 * np.abs(x).max())


def test_pack_unpack_are_inverse():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 64, size=(5, 256)).astype(np.uint8)
    packed = ref._pack_int6(codes)
    assert packed.shape == (5, 192)
    assert np.array_equal(ref._unpack_int6(packed), codes)


@pytest.mark.parametrize("count", [1, 255, 256, 257, 1000])
def test_wire_size(count):
    nb = -(-count // 256)
    codes = nb * 192
    expect = 16 + (codes + 15) // 16 * 16 + (4 * nb + 15) // 16 * 16
    for dt in (np.float32, np.float16, BF16):
        assert ref.compressed_size(CODEC, count, dt) == expect
    # 3/4 byte per element + 4 bytes of scale per 256: 0.7656 bytes per element
    assert ref.compressed_size(CODEC, 1 << 20) == 16 + (1 << 20) * 3 // 4 + 4 * 4096


def test_codes_are_symmetric_and_round_half_even():
    # max|Z'| = 62 gives inv = 31 / 62 = 1/2: odd Z' land exactly on ties
    z = np.zeros(256, np.float32)
    z[0] = 62
    z[1:6] = [1, 3, -1, -3, 5]  # times 1/2: 0.5, 1.5, -0.5, -1.5, 2.5 -> 0, 2, -0, -2, 2
    wire = ref.compress(with_rotated_codes(z), CODEC)
    codes = ref._decode(ref._unpack_int6(wire[16:16 + 192].reshape(1, -1)), "int6").reshape(-1)
    assert list(codes[:6]) == [31, 0, 2, 0, -2, 2]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_block_is_nan_scale_and_zero_codes(bad):
    x = np.random.default_rng(2).laplace(size=768).astype(np.float32)
    x[300] = bad
    wire = ref.compress(x, CODEC)
    assert not wire[16 + 192:16 + 384].any()  # block 1: the format's NaN code, 0
    s = wire[16 + 576:16 + 576 + 12].view(np.uint32)
    assert s[1] == 0x7FC00000 and np.isfinite(s[[0, 2]].view(np.float32)).all()
    y = ref.decompress(wire, CODEC, x.size)
    assert np.isnan(y[256:512]).all() and np.isfinite(np.delete(y, np.arange(256, 512))).all()


def test_zero_and_tiny_blocks():
    z = np.zeros(1000, np.float32)
    assert np.all(ref.decompress(ref.compress(z, CODEC), CODEC, z.size) == 0)
    # below 2^-64 the block is lifted by 2^64 before quantising, exactly as int8-hadamard does
    x = np.random.default_rng(3).laplace(size=256).astype(np.float32) * np.float32(1e-25)
    y = ref.decompress(ref.compress(x, CODEC), CODEC, x.size)
    x64 = x.astype(np.float64)
    assert np.sum((y - x64) ** 2) / np.sum(x64 ** 2) < 3e-3
    # the same as int8-hadamard up to the code width: same scale except Qmax
    s6 = ref.compress(x, CODEC)[16 + 192:16 + 196].view(np.float32)[0]
    s8 = ref.compress(x, "int8-hadamard")[16 + 256:16 + 260].view(np.float32)[0]
    assert np.isclose(s6 * 31, s8 * 127, rtol=1e-6)


def test_error_about_16x_int8_hadamard():
    x = np.random.default_rng(4).laplace(size=1 << 16).astype(np.float32)

    def nmse(c):
        y = ref.decompress(ref.compress(x, c), c, x.size)
        return float(np.sum((y - x) ** 2) / np.sum(x ** 2))

    e6, e8 = nmse(CODEC), nmse("int8-hadamard")
    # two bits fewer: about 4^2 = 16x the error of int8-hadamard (uniform steps 127/31 wider)
    assert 10 * e8 < e6 < 25 * e8
    assert e6 < 1.5e-3

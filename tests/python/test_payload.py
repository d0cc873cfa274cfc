"""What a corrupted payload decodes to (docs/format.md, "What is checked, and what is not"): the
header is checked, the payload is not, and each kind of corruption has the documented effect,
confined to its block."""
from pathlib import Path

import numpy as np
import pytest

import taco
from taco import reference as ref

BLOCKED = [c for c in ref.CODECS if ref.codec_params(c)["block"]]
NB = 4  # blocks


def case(codec):
    B = ref.block_size(codec)
    x = np.random.default_rng(3).laplace(size=NB * B).astype(np.float32)
    wire = taco.compress(x, codec)
    c = ref._Codec(codec, None)
    scales_off = c.layout(x.size, np.float32)[2]
    return x, wire, B, scales_off, ref.codec_params(codec)["adaptive"]


def s_offset(scales_off, adaptive, blk):
    return scales_off + (8 * blk + 4 if adaptive else 4 * blk)


def decode(wire, codec, n):
    y = taco.decompress(wire, codec, n, "float32")
    assert np.array_equal(y, ref.decompress(wire, codec, n, np.float32), equal_nan=True)  # the spec agrees
    return y


@pytest.mark.parametrize("codec", BLOCKED)
def test_scale_of_0xff_bytes_is_a_nan_block_without_an_error(codec):
    x, wire, B, off, adaptive = case(codec)
    good = decode(wire, codec, x.size)
    w = wire.copy()
    w[s_offset(off, adaptive, 1):s_offset(off, adaptive, 1) + 4] = 0xFF
    y = decode(w, codec, x.size)
    assert np.isnan(y[B:2 * B]).all()
    assert np.array_equal(np.delete(y, np.s_[B:2 * B]), np.delete(good, np.s_[B:2 * B]))


@pytest.mark.parametrize("codec", BLOCKED)
def test_sign_bit_of_s_makes_a_wide_block(codec):
    x, wire, B, off, adaptive = case(codec)
    good = decode(wire, codec, x.size)
    w = wire.copy()
    w[s_offset(off, adaptive, 2) + 3] ^= 0x80
    y = decode(w, codec, x.size)
    assert np.array_equal(y[2 * B:3 * B], good[2 * B:3 * B] * np.float32(2.0 ** 64))
    assert np.array_equal(np.delete(y, np.s_[2 * B:3 * B]), np.delete(good, np.s_[2 * B:3 * B]))


@pytest.mark.parametrize("codec", BLOCKED)
def test_a_flipped_code_changes_its_element_or_its_block(codec):
    x, wire, B, off, adaptive = case(codec)
    good = decode(wire, codec, x.size)
    w = wire.copy()
    c = ref._Codec(codec, None)
    byte = 16 + ref._block_code_bytes(c.fmt, B) * 3 + 2  # a code byte of block 3
    w[byte] ^= 0x04
    y = decode(w, codec, x.size)
    changed = np.flatnonzero(y != good)
    assert changed.size > 0 and changed.min() >= 3 * B and changed.max() < 4 * B, changed
    if not c.rotate:
        assert changed.size <= 2  # one element (an INT4 byte holds two codes)


def test_the_format_page_says_what_is_checked():
    text = (Path(__file__).resolve().parents[2] / "docs" / "format.md").read_text()
    assert "## What is checked, and what is not" in text
    assert "no checksum" in text

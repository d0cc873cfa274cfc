"""Bad inputs to the codec functions: each gets an InvalidArgumentError naming the argument,
never a wrong result (docs/api.md, docs/format.md)."""
import ml_dtypes
import numpy as np
import pytest

import taco
from codec_sets import ALL as CODECS

BF16 = np.dtype(ml_dtypes.bfloat16)


def laplace(n, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32).astype(dtype)


# ---- byte order: libtaco reads native (little-endian) elements only


@pytest.mark.parametrize("dtype", [">f4", ">f2"])
def test_byte_swapped_input_is_refused(dtype):
    x = laplace(256).astype(dtype)
    with pytest.raises(taco.InvalidArgumentError, match=r"x: dtype '>f[24]' is not in native byte order"):
        taco.compress(x, "taco")


def test_byte_swapped_outputs_and_exact_are_refused():
    x = laplace(256)
    wire = taco.compress(x, "taco")
    with pytest.raises(taco.InvalidArgumentError, match="out: dtype '>f4' is not in native byte order"):
        taco.decompress(wire, "taco", x.size, "float32", out=np.empty(x.size, ">f4"))
    with pytest.raises(taco.InvalidArgumentError, match="exact: dtype '>f4' is not in native byte order"):
        taco.decompress_accumulate([wire], "taco", x.size, "float32", exact=x.astype(">f4"))
    with pytest.raises(taco.InvalidArgumentError, match="y: dtype '>f4' is not in native byte order"):
        taco.decompress_reduce_compress([wire], "taco", x.size, "float32", y=np.empty(x.size, ">f4"))


def test_byte_swapped_wire_is_refused():
    wire = taco.compress(laplace(256), "taco")
    swapped = wire.view("<u2").astype(">u2")  # the same bytes, read as big-endian 16-bit words
    with pytest.raises(taco.InvalidArgumentError, match="wire: dtype '>u2' is not in native byte order"):
        taco.decompress(swapped, "taco", 256, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"wires\[1\]: dtype '>u2'"):
        taco.decompress_accumulate([wire, swapped], "taco", 256, "float32")


def test_native_order_spelled_explicitly_is_accepted():
    x = laplace(256)
    assert np.array_equal(taco.compress(x.astype("<f4"), "taco"), taco.compress(x, "taco"))
    assert np.array_equal(taco.compress(x.astype("=f4"), "taco"), taco.compress(x, "taco"))


def test_a_byte_swapped_dtype_argument_is_refused():
    """np.dtype('>f4') named float32 and gave native output, while the string '>f4' was refused."""
    wire = taco.compress(laplace(256), "taco")
    with pytest.raises(taco.InvalidArgumentError, match=r"dtype dtype\('>f4'\) is not in native byte order"):
        taco.decompress(wire, "taco", 256, np.dtype(">f4"))
    with pytest.raises(taco.InvalidArgumentError, match="dtype '>f4' is not supported"):
        taco.decompress(wire, "taco", 256, ">f4")
    assert taco.decompress(wire, "taco", 256, np.dtype("<f4")).dtype == np.float32


def test_a_masked_array_is_refused():
    """Its mask would be dropped without a word (the device path refuses masks too)."""
    x = np.ma.masked_array(laplace(256), mask=np.arange(256) % 7 == 0)
    with pytest.raises(taco.InvalidArgumentError, match="x: is a masked array"):
        taco.compress(x, "taco")
    assert np.array_equal(taco.compress(x.filled(0), "taco"), taco.compress(np.where(x.mask, 0, x.data), "taco"))


# ---- outputs that overlap an input: the C entry points and the Python layer refuse them

N = 256                      # elements; taco, fp32: 16 + 256 + 16 bytes of wire
WIRE = 288


@pytest.fixture(scope="module")
def lib():
    return taco._lib.lib()


def arena(nbytes=1 << 14):
    """One host buffer that every view of a test is cut from (aligned: numpy allocates 64-byte aligned)."""
    return np.zeros(nbytes, np.uint8)


def floats(buf, at, n=N):
    return buf[at:at + 4 * n].view(np.float32)


def test_python_compress_into_a_view_of_its_input():
    buf = arena()
    x = floats(buf, 0)
    x[:] = laplace(N)
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps x"):
        taco.compress(x, "taco", out=buf[512:512 + WIRE])
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps x"):
        taco.compress(x, "taco", out=buf[1020:1020 + WIRE])  # one shared float
    good = taco.compress(x, "taco", out=buf[1024:1024 + WIRE])  # adjacent, no shared byte
    assert np.array_equal(good, taco.compress(laplace(N), "taco"))


def test_python_decompress_over_its_wire():
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N), "taco")
    wire = buf[:WIRE]
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps wire"):
        taco.decompress(wire, "taco", N, "float32", out=floats(buf, 16))
    y = taco.decompress(wire, "taco", N, "float32", out=floats(buf, WIRE))
    assert np.array_equal(y, taco.decompress(wire.copy(), "taco", N, "float32"))


def test_python_accumulate_outputs():
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N, seed=1), "taco")
    buf[WIRE:2 * WIRE] = taco.compress(laplace(N, seed=2), "taco")
    wires = [buf[:WIRE], buf[WIRE:2 * WIRE]]
    exact = floats(buf, 1024)
    exact[:] = laplace(N, seed=3)
    with pytest.raises(taco.InvalidArgumentError, match=r"out: overlaps wires\[1\]"):
        taco.decompress_accumulate(wires, "taco", N, "float32", out=floats(buf, WIRE + 16))
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps exact.*only out is exact is allowed"):
        taco.decompress_accumulate(wires, "taco", N, "float32", exact, out=floats(buf, 1024 + 4))
    want = taco.decompress_accumulate([w.copy() for w in wires], "taco", N, "float32", exact.copy())
    assert taco.decompress_accumulate(wires, "taco", N, "float32", exact, out=exact) is exact  # in place
    assert np.array_equal(exact, want)


def test_python_reduce_compress_outputs():
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N, seed=1), "taco")
    wires = [buf[:WIRE]]
    exact = floats(buf, 1024)
    exact[:] = laplace(N, seed=3)
    drc = taco.decompress_reduce_compress
    with pytest.raises(taco.InvalidArgumentError, match=r"out: overlaps wires\[0\]"):
        drc(wires, "taco", N, "float32", exact, out=buf[WIRE - 16:2 * WIRE - 16])
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps exact"):
        drc(wires, "taco", N, "float32", exact, out=buf[1024:1024 + WIRE])
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps y"):
        drc(wires, "taco", N, "float32", exact, out=buf[4096:4096 + WIRE], y=floats(buf, 4096 + 256))
    with pytest.raises(taco.InvalidArgumentError, match=r"y: overlaps wires\[0\]"):
        drc(wires, "taco", N, "float32", exact, out=buf[4096:4096 + WIRE], y=floats(buf, 0))
    with pytest.raises(taco.InvalidArgumentError, match="y: overlaps exact"):
        drc(wires, "taco", N, "float32", exact, out=buf[4096:4096 + WIRE], y=floats(buf, 1024 + 16))
    want_out, want_y = drc([wires[0].copy()], "taco", N, "float32", exact.copy(), return_decompressed=True)
    out, y = drc(wires, "taco", N, "float32", exact, out=buf[4096:4096 + WIRE], y=exact)  # y is exact: allowed
    assert y is exact and np.array_equal(out, want_out) and np.array_equal(y, want_y)


def _p(x):
    return taco._lib.ffi().cast("void*", x.ctypes.data)


def _ptrs(*ws):
    f = taco._lib.ffi()
    return f.new("const void*[]", [f.cast("const void*", w.ctypes.data) for w in ws])


def _expect_overlap(lib, rc, what):
    assert rc == lib.tacoInvalidArgument
    msg = taco._lib.ffi().string(lib.tacoGetLastError(taco._lib.ffi().NULL)).decode()
    assert what in msg, msg


def test_c_compress_and_decompress_check_byte_ranges(lib):
    c = taco.find_codec("taco")
    buf = arena()
    x = floats(buf, 0)
    x[:] = laplace(N)
    fp32 = lib.tacoFloat32
    _expect_overlap(lib, lib.tacoHostCompress(c, _p(x), N, fp32, _p(buf[1008:]), WIRE),
                    "tacoHostCompress: out argument")
    _expect_overlap(lib, lib.tacoHostCompress(c, _p(x), N, fp32, _p(buf[1008:]), WIRE), "overlaps x argument")
    # outBytes is a capacity: only the WIRE bytes written count, so a larger outBytes below x is fine
    assert lib.tacoHostCompress(c, _p(x), N, fp32, _p(buf[1024:]), 4096) == lib.tacoSuccess
    wire = buf[1024:1024 + WIRE]
    _expect_overlap(lib, lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 + WIRE - 4:]), N, fp32),
                    "y argument")
    _expect_overlap(lib, lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 - 1020:]), N, fp32),
                    "overlaps in argument")
    assert lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 - 1024:]), N, fp32) == lib.tacoSuccess


def two_wires_and_exact():
    """An arena holding two `taco` wires (at 0 and 512: they overlap, as the inputs may) and an
    exact fp32 input at 2048; returns the arena, the inputs' pointer array and the exact view."""
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N, seed=1), "taco")
    buf[512:512 + WIRE] = taco.compress(laplace(N, seed=2), "taco")
    exact = floats(buf, 2048)
    exact[:] = laplace(N, seed=3)
    return buf, _ptrs(buf[:WIRE], buf[512:512 + WIRE]), exact


def test_c_accumulate_checks_byte_ranges(lib):
    c = taco.find_codec("taco")
    f = taco._lib.ffi()
    fp32 = lib.tacoFloat32
    buf, ins, exact = two_wires_and_exact()
    acc = lib.tacoHostDecompressAccumulate
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[512 + 64:]), N, fp32),
                    "y argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[512 + 64:]), N, fp32),
                    "overlaps inputs[1] argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[2048 + 8:]), N, fp32),
                    "overlaps exact argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[2048 - 8:]), N, fp32),
                    "but is not in place (y == exact)")
    assert acc(c, ins, 2, WIRE, _p(exact), _p(exact), N, fp32) == lib.tacoSuccess  # in place
    assert acc(c, ins, 2, WIRE, f.NULL, _p(buf[4096:]), N, fp32) == lib.tacoSuccess


def test_c_reduce_compress_checks_byte_ranges(lib):
    c = taco.find_codec("taco")
    f = taco._lib.ffi()
    fp32 = lib.tacoFloat32
    buf, ins, exact = two_wires_and_exact()
    drc = lib.tacoHostDecompressReduceCompress
    out, y = _p(buf[4096:]), _p(buf[8192:])

    def rc(out, y, ex=_p(exact)):
        return drc(c, ins, 2, WIRE, ex, out, WIRE, y, N, fp32)

    _expect_overlap(lib, rc(_p(buf[512 + 16:]), y), "out argument")
    _expect_overlap(lib, rc(_p(buf[512 + 16:]), y), "overlaps inputs[1] argument")
    _expect_overlap(lib, rc(_p(buf[512:]), y), "overlaps inputs[1] argument")  # identical is an overlap too
    _expect_overlap(lib, rc(_p(buf[2048 + 1008:]), y), "overlaps exact argument")
    _expect_overlap(lib, rc(out, _p(buf[4096 + 272:])), "overlaps y argument")
    _expect_overlap(lib, rc(out, _p(buf[256:])), "y argument")
    _expect_overlap(lib, rc(out, _p(buf[256:])), "overlaps inputs[0] argument")
    _expect_overlap(lib, rc(out, _p(buf[2048 + 512:])), "overlaps exact argument")
    assert rc(out, y) == lib.tacoSuccess
    assert rc(out, f.NULL) == lib.tacoSuccess
    assert rc(out, _p(exact)) == lib.tacoSuccess  # y == exact: in place


# ---- codec specs and scalar arguments: one strict parser (tacoCodecFind), one error class


@pytest.mark.parametrize("spec", ["taco\0:block=999", "taco\0", "t\u00e4co", "taco:block=\u0662\u0665\u0666"])
def test_spec_with_nul_or_non_ascii_is_refused(spec):
    with pytest.raises(taco.InvalidArgumentError, match="codec: spec .* is not a codec spec"):
        taco.find_codec(spec)


@pytest.mark.parametrize("spec", ["taco:block=+256", "taco:block= 256", "taco:block=256 ", "taco:block=0x100",
                                  "taco:block=-256", "taco:block=", "taco:block=2.5e2"])
def test_block_in_a_spec_is_decimal_digits_only(spec):
    with pytest.raises(taco.InvalidArgumentError, match="block size is not a decimal number"):
        taco.find_codec(spec)


@pytest.mark.parametrize("spec", ["taco:block=64:block=128", "taco:block=256:block=256"])
def test_repeated_block_option_is_named_as_such(spec, lib):
    with pytest.raises(taco.InvalidArgumentError, match=f"^tacoInvalidArgument: codec: '{spec}': the block option "
                                                        "is given twice$"):
        taco.find_codec(spec)
    c = taco._lib.ffi().new("tacoCodec_t*")
    assert lib.tacoCodecFind(spec.encode(), c) == lib.tacoInvalidArgument
    msg = taco._lib.ffi().string(lib.tacoGetLastError(taco._lib.ffi().NULL)).decode()
    assert msg == f"tacoCodecFind: spec argument '{spec}': the block option is given twice", msg
    with pytest.raises(taco.InvalidArgumentError, match="unknown option 'size=4'"):
        taco.find_codec("taco:block=64:size=4")


@pytest.mark.parametrize("spec", ["taco:block=0", "taco:block=99999999999999999999", "taco:block=2048"])
def test_block_value_out_of_range_names_the_spec(spec):
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: codec: '.*': block size \d+ is not a "
                                                        r"power of two"):
        taco.find_codec(spec)


def test_spec_names():
    assert taco.find_codec("taco:block=0128").blockSize == 128  # decimal digits, leading zeros allowed
    with pytest.raises(taco.InvalidArgumentError, match="has no codec name"):
        taco.find_codec(":block=128")
    with pytest.raises(taco.InvalidArgumentError, match="unknown codec"):
        taco.find_codec("x" * 100)
    with pytest.raises(taco.InvalidArgumentError, match="unknown codec"):
        taco.find_codec(" taco")


def test_block_keyword_zero_is_refused_like_the_spec():
    with pytest.raises(taco.InvalidArgumentError, match="block: 0 is not a block size"):
        taco.find_codec("taco", block=0)
    with pytest.raises(taco.InvalidArgumentError, match="block: 0 is not a block size"):
        taco.compress(laplace(256), "taco", block=0)
    assert taco.find_codec("taco", block=None).blockSize == 256


@pytest.mark.parametrize("block", [1 << 40, -(1 << 40), 1 << 31])
def test_block_keyword_too_large_is_a_taco_error(block):
    with pytest.raises(taco.InvalidArgumentError, match="block: -?\\d+ is not a power of two"):
        taco.find_codec("taco", block=block)


@pytest.mark.parametrize("block", ["256", 256.0, True])
def test_block_keyword_must_be_an_integer(block):
    with pytest.raises(TypeError, match="block: expected an integer"):
        taco.find_codec("taco", block=block)


def test_codec_id_out_of_int_range_is_a_taco_error():
    with pytest.raises(taco.InvalidArgumentError, match="codec: id"):
        taco.find_codec(1 << 40)


@pytest.mark.parametrize("count", [-1, -(1 << 70), 1 << 64])
def test_count_out_of_range_is_a_taco_error(count):
    wire = taco.compress(laplace(256), "taco")
    with pytest.raises(taco.InvalidArgumentError, match="count: -?\\d+ (is negative|does not fit)"):
        taco.decompress(wire, "taco", count, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="count: "):
        taco.decompress_accumulate([wire], "taco", count, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="count: "):
        taco.decompress_reduce_compress([wire], "taco", count, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="count: "):
        taco.compressed_size("taco", count, "float32")


def test_count_too_large_for_the_byte_arithmetic(lib):
    # 2^62 elements would wrap size_t in the compressed size: refused, in the caller's words (the
    # Python argument `count`; the C function's name from C), so the wire check cannot pass with a
    # small buffer.
    msg = "^tacoInvalidArgument: count: 4611686018427387904 is larger than 2305843009213693951"
    with pytest.raises(taco.InvalidArgumentError, match=msg):
        taco.compressed_size("taco", 1 << 62, "float32")
    wire = taco.compress(laplace(256), "taco")
    for call in (lambda: taco.decompress(wire, "taco", 1 << 62, "float32"),
                 lambda: taco.decompress_accumulate([wire], "taco", 1 << 62, "float32"),
                 lambda: taco.decompress_reduce_compress([wire], "taco", 1 << 62, "float32")):
        with pytest.raises(taco.InvalidArgumentError, match=msg):
            call()
    f = taco._lib.ffi()
    y = np.empty(256, np.float32)
    rc = lib.tacoHostDecompress(taco.find_codec("taco"), _p(wire), wire.size, _p(y), (1 << 64) - 16,
                                lib.tacoFloat32)
    assert rc == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode().startswith(
        "tacoHostDecompress: count argument 18446744073709551600 is larger than")
    out = f.new("size_t*")
    assert lib.tacoCompressedSize(taco.find_codec("taco"), 1 << 62, lib.tacoFloat32, out) == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode().startswith("tacoCompressedSize: count argument")


@pytest.mark.parametrize("count", [1.0, "256", None])
def test_count_must_be_an_integer(count):
    with pytest.raises(TypeError, match="count: expected an integer"):
        taco.decompress(taco.compress(laplace(256), "taco"), "taco", count, "float32")


def test_zero_elements_one_rule(lib):
    """compress, decompress & co. and compressed_size all refuse 0 elements (a compressed buffer
    holds at least one), in Python and in C."""
    msg = r"^tacoInvalidArgument: count: 0 \(a compressed buffer holds at least one element\)$"
    wire = taco.compress(laplace(256), "taco")
    with pytest.raises(taco.InvalidArgumentError, match=msg):
        taco.decompress(wire, "taco", 0, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=msg):
        taco.decompress_accumulate([wire], "taco", 0, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=msg):
        taco.decompress_reduce_compress([wire], "taco", 0, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=msg):
        taco.compressed_size("taco", 0, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: x: is empty \(a compressed buffer "
                                                        r"holds at least one element\)$"):
        taco.compress(np.zeros(0, np.float32), "taco")
    f = taco._lib.ffi()
    out = f.new("size_t*")
    assert lib.tacoCompressedSize(taco.find_codec("taco"), 0, lib.tacoFloat32, out) == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode() == (
        "tacoCompressedSize: count argument is 0 (a compressed buffer holds at least one element)")


def test_the_numpy_spec_takes_counts_and_blocks_as_the_binding_does():
    """taco.reference refuses what the binding refuses: a count that is not a positive integer (a
    numpy uint64 count of 512 gave 17870283321406128672 bytes, -1 and 0 gave 16), a block keyword
    that is not an integer or disagrees with the spec's (it was ignored); its wire may be bytes."""
    from taco import reference as R
    assert R.compressed_size("taco", np.uint64(512)) == taco.compressed_size("taco", np.uint64(512), "float32")
    for count in (-1, 0):
        with pytest.raises(ValueError, match=f"count argument {count}: a compressed buffer holds at least one"):
            R.compressed_size("taco", count)
    for count in (512.0, True, "512"):
        with pytest.raises(TypeError, match="count argument: expected an integer"):
            R.compressed_size("taco", count)
    with pytest.raises(ValueError, match="is larger than 2305843009213693951, the largest count"):
        R.compressed_size("taco", 1 << 61)  # the library's limit (SIZE_MAX / 8)
    assert R.compressed_size("taco", (1 << 61) - 1) == taco.compressed_size("taco", (1 << 61) - 1, "float32")
    wire = R.compress(laplace(512), "taco")
    with pytest.raises(ValueError, match="count argument 0"):
        R.decompress(wire, "taco", 0)
    with pytest.raises(ValueError, match="count argument 0"):
        R.decompress_reduce_compress([wire], "taco", 0)
    assert np.array_equal(R.decompress(bytes(wire), "taco", 512), R.decompress(wire, "taco", 512))
    with pytest.raises(ValueError, match="'taco:block=256' and block argument 128 disagree on the block size"):
        R.codec_params("taco:block=256", 128)
    assert R.codec_params("taco:block=256", 256)["block"] == 256
    with pytest.raises(ValueError, match="block argument 0 is not a block size"):
        R.codec_params("taco:block=256", 0)
    for block in ("64", 64.0, True):
        with pytest.raises(TypeError, match="block argument: expected an integer or None"):
            R.codec_params("taco", block)
    assert R.codec_params("taco", np.int64(64))["block"] == 64


def test_errors_name_the_python_argument_and_the_c_function(lib):
    """Messages in the caller's words, not the library's internals: the Python argument
    (count, block, codec), the public C function, no space before a colon."""
    wire = taco.compress(laplace(4096), "taco")
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: count: 4095, but wire holds 4096 "
                                                        r"elements \(its header\)$"):
        taco.decompress(wire, "taco", 4095, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: count: 4095, but wires\[1\] holds"):
        taco.decompress_accumulate([taco.compress(laplace(4095), "taco"), wire], "taco", 4095, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: block: 7 is not a power of two in "
                                                        r"\[32, 1024\]$"):
        taco.compress(laplace(256), "taco", block=7)
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: block: codec 'none' has no block "
                                                        r"size$"):
        taco.compress(laplace(256), "none", block=64)
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: codec: 'tako': unknown codec"):
        taco.compress(laplace(256), "tako")
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: codec: id 99 is not a known codec"):
        taco.compress(laplace(256), 99)
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: codec: 'taco', but wire was "
                                                        r"compressed with codec 'fp8-block'$"):
        taco.decompress(taco.compress(laplace(256), "fp8-block"), "taco", 256, "float32")
    # the C functions: the public name, the argument, no " : "
    f = taco._lib.ffi()
    y = np.empty(4096, np.float32)
    assert lib.tacoHostDecompress(taco.find_codec("taco"), _p(wire), wire.size, _p(y), 4095,
                                  lib.tacoFloat32) == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode() == (
        "tacoHostDecompress: in argument holds 4096 elements, but the count argument is 4095")
    c = f.new("tacoCodec_t*")
    assert lib.tacoCodecFromId(2, 7, c) == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode().startswith(
        "tacoCodecFromId: blockSize argument 7 is not a power of two in [32, 1024]")
    bad = f.new("tacoCodec_t*")
    bad.id, bad.blockSize = 2, 7
    out = f.new("size_t*")
    assert lib.tacoCompressedSize(bad[0], 16, lib.tacoFloat32, out) == lib.tacoInvalidArgument
    assert f.string(lib.tacoGetLastError(f.NULL)).decode() == (
        "tacoCompressedSize: codec argument: block size 7 of codec 'taco' is not a power of two in [32, 1024]")


def test_no_message_has_a_space_before_its_colon():
    """Every message format string of the library: `tacoName: ...`, never `Name : ...`."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "libtaco"
    bad = []
    for p in root.rglob("*"):
        if p.suffix not in (".cc", ".cu", ".h", ".cuh"):
            continue
        for i, line in enumerate(p.read_text().splitlines(), 1):
            for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', line):
                if re.search(r"\w : ", lit) or lit.startswith("%s : "):
                    bad.append(f"{p.relative_to(root)}:{i}: {lit}")
    assert not bad, "\n".join(bad)


# ---- wires: a 1-D uint8 array (or bytes-like) of exactly the compressed size; a sane header


@pytest.mark.parametrize("codec", CODECS)
def test_header_datatype_byte_must_be_a_taco_datatype(codec):
    from taco import reference as ref

    x = laplace(256)
    wire = taco.compress(x, codec)
    for bad in (3, 99, 255):
        w = wire.copy()
        w[7] = bad
        with pytest.raises(taco.InvalidArgumentError, match=f"datatype byte {bad}, which is not a tacoDataType_t"):
            taco.decompress(w, codec, x.size, "float32")
        with pytest.raises(taco.InvalidArgumentError, match="not a tacoDataType_t"):
            taco.decompress_accumulate([wire, w], codec, x.size, "float32")
        with pytest.raises(taco.InvalidArgumentError, match="not a tacoDataType_t"):
            taco.decompress_reduce_compress([w], codec, x.size, "float32")
        with pytest.raises(ValueError, match="not a tacoDataType_t"):
            ref.decompress(w, codec, x.size, np.float32)


def test_wire_must_be_uint8():
    wire = taco.compress(laplace(256), "taco")
    for view, kind in ((wire.view(np.float32), "float32"), (wire.view(np.int8), "int8"),
                       (wire.view(np.uint16), "raw16")):
        with pytest.raises(taco.InvalidArgumentError, match=f"wire: element type {kind} is not a compressed buffer"):
            taco.decompress(view, "taco", 256, "float32")
        with pytest.raises(taco.InvalidArgumentError, match=rf"wires\[0\]: element type {kind}"):
            taco.decompress_accumulate([view], "taco", 256, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="out: element type float32 is not a compressed buffer"):
        taco.compress(laplace(256), "taco", out=np.empty(wire.size // 4, np.float32))


def test_wire_must_be_one_dimensional():
    wire = taco.compress(laplace(256), "taco")
    with pytest.raises(taco.InvalidArgumentError, match="wire: has 2 dimensions"):
        taco.decompress(wire.reshape(-1, 16), "taco", 256, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="wire: has 0 dimensions"):
        taco.decompress(np.array(0, np.uint8), "taco", 256, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"out: has 2 dimensions"):
        taco.compress(laplace(256), "taco", out=np.empty((wire.size // 16, 16), np.uint8))


def test_input_wire_is_exactly_the_compressed_size():
    x = laplace(256)
    wire = taco.compress(x, "taco")
    longer = np.concatenate([wire, np.zeros(16, np.uint8)])
    with pytest.raises(taco.InvalidArgumentError, match="wire: is 304 bytes, but 256 float32 elements of codec "
                                                        r"'taco' \(block 256\) compress to exactly 288"):
        taco.decompress(longer, "taco", x.size, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"wires\[1\]: is 304 bytes"):
        taco.decompress_accumulate([wire, longer], "taco", x.size, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"wires\[0\]: is 272 bytes"):
        taco.decompress_reduce_compress([wire[:-16]], "taco", x.size, "float32")
    # an output wire may be a larger capacity buffer: only the compressed size is written
    cap = np.full(wire.size + 32, 0xAB, np.uint8)
    assert taco.compress(x, "taco", out=cap) is cap
    assert np.array_equal(cap[:wire.size], wire) and np.all(cap[wire.size:] == 0xAB)


def test_bytes_like_wires():
    x = laplace(256)
    wire = taco.compress(x, "taco")
    y = taco.decompress(wire, "taco", x.size, "float32")
    for form in (wire.tobytes(), bytearray(wire.tobytes()), memoryview(wire.tobytes())):
        assert np.array_equal(taco.decompress(form, "taco", x.size, "float32"), y)
        assert np.array_equal(taco.decompress_accumulate([form], "taco", x.size, "float32"), y)
    out = bytearray(wire.size)
    assert taco.compress(x, "taco", out=out) is out and bytes(out) == wire.tobytes()
    with pytest.raises(taco.InvalidArgumentError, match="out: array is read-only"):
        taco.compress(x, "taco", out=bytes(wire.size))
    with pytest.raises(taco.InvalidArgumentError, match="wire: memoryview of format 'f'"):
        taco.decompress(memoryview(wire.view(np.float32)), "taco", x.size, "float32")
    with pytest.raises(TypeError, match="got one array"):
        taco.decompress_accumulate(wire.tobytes(), "taco", x.size, "float32")

"""Bad inputs to the codec functions: each gets an InvalidArgumentError naming the argument,
never a wrong result (docs/api.md, docs/format.md)."""
import ml_dtypes
import numpy as np
import pytest

import taco

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
                    "HostCompress : out argument")
    _expect_overlap(lib, lib.tacoHostCompress(c, _p(x), N, fp32, _p(buf[1008:]), WIRE), "overlaps x argument")
    # outBytes is a capacity: only the WIRE bytes written count, so a larger outBytes below x is fine
    assert lib.tacoHostCompress(c, _p(x), N, fp32, _p(buf[1024:]), 4096) == lib.tacoSuccess
    wire = buf[1024:1024 + WIRE]
    _expect_overlap(lib, lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 + WIRE - 4:]), N, fp32),
                    "y argument")
    _expect_overlap(lib, lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 - 1020:]), N, fp32),
                    "overlaps in argument")
    assert lib.tacoHostDecompress(c, _p(wire), WIRE, _p(buf[1024 - 1024:]), N, fp32) == lib.tacoSuccess


def test_c_accumulate_checks_byte_ranges(lib):
    c = taco.find_codec("taco")
    f = taco._lib.ffi()
    fp32 = lib.tacoFloat32
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N, seed=1), "taco")
    buf[512:512 + WIRE] = taco.compress(laplace(N, seed=2), "taco")
    ins = _ptrs(buf[:WIRE], buf[512:512 + WIRE])
    exact = floats(buf, 2048)
    exact[:] = laplace(N, seed=3)
    acc = lib.tacoHostDecompressAccumulate
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[512 + 64:]), N, fp32),
                    "y argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[512 + 64:]), N, fp32),
                    "overlaps inputs[1] argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[2048 + 8:]), N, fp32),
                    "partially overlaps exact argument")
    _expect_overlap(lib, acc(c, ins, 2, WIRE, _p(exact), _p(buf[2048 - 8:]), N, fp32),
                    "only y == exact is allowed")
    assert acc(c, ins, 2, WIRE, _p(exact), _p(exact), N, fp32) == lib.tacoSuccess  # in place
    assert acc(c, ins, 2, WIRE, f.NULL, _p(buf[4096:]), N, fp32) == lib.tacoSuccess


def test_c_reduce_compress_checks_byte_ranges(lib):
    c = taco.find_codec("taco")
    f = taco._lib.ffi()
    fp32 = lib.tacoFloat32
    buf = arena()
    buf[:WIRE] = taco.compress(laplace(N, seed=1), "taco")
    buf[512:512 + WIRE] = taco.compress(laplace(N, seed=2), "taco")
    ins = _ptrs(buf[:WIRE], buf[512:512 + WIRE])
    exact = floats(buf, 2048)
    exact[:] = laplace(N, seed=3)
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
    _expect_overlap(lib, rc(out, _p(buf[2048 + 512:])), "partially overlaps exact argument")
    assert rc(out, y) == lib.tacoSuccess
    assert rc(out, f.NULL) == lib.tacoSuccess
    assert rc(out, _p(exact)) == lib.tacoSuccess  # y == exact: in place

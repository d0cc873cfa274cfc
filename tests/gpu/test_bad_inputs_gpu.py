"""Device twins of tests/python/test_bad_inputs.py: outputs overlapping an input are refused
by the device entry points (C) and by the Python layer, on device memory."""
import numpy as np
import pytest

import taco
from codec_sets import ALL as CODECS
from loopback_world import cp  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

N = 256                      # elements; taco, fp32: 16 + 256 + 16 bytes of wire
WIRE = 288


@pytest.fixture(scope="module")
def lib():
    return taco._lib.lib()


def laplace(n, seed=0):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32)


def floats(buf, at, n=N):
    return buf[at:at + 4 * n].view("float32")


def test_python_outputs_overlapping_inputs_on_device(cp):
    buf = cp.zeros(1 << 14, cp.uint8)
    x = floats(buf, 0)
    x[:] = cp.asarray(laplace(N))
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps x"):
        taco.compress(x, "taco", out=buf[512:512 + WIRE])
    wire = taco.compress(x, "taco", out=buf[1024:1024 + WIRE])
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps wire"):
        taco.decompress(wire, "taco", N, "float32", out=floats(buf, 1024 + 16))
    with pytest.raises(taco.InvalidArgumentError, match=r"out: overlaps wires\[0\]"):
        taco.decompress_accumulate([wire], "taco", N, "float32", out=floats(buf, 1024 + 16))
    exact = floats(buf, 4096)
    exact[:] = cp.asarray(laplace(N, seed=3))
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps exact"):
        taco.decompress_accumulate([wire], "taco", N, "float32", exact, out=floats(buf, 4096 + 8))
    with pytest.raises(taco.InvalidArgumentError, match="out: overlaps exact"):
        taco.decompress_reduce_compress([wire], "taco", N, "float32", exact, out=buf[4096:4096 + WIRE])
    with pytest.raises(taco.InvalidArgumentError, match=r"y: overlaps wires\[0\]"):
        taco.decompress_reduce_compress([wire], "taco", N, "float32", exact, out=buf[8192:8192 + WIRE],
                                        y=floats(buf, 1024))
    want = taco.decompress_accumulate([wire], "taco", N, "float32", exact.copy())
    taco.decompress_accumulate([wire], "taco", N, "float32", exact, out=exact)  # in place: allowed
    cp.cuda.get_current_stream().synchronize()
    assert cp.array_equal(exact, want)


def test_c_device_entry_points_check_byte_ranges(cp, lib):
    f = taco._lib.ffi()
    c = taco.find_codec("taco")
    fp32 = lib.tacoFloat32
    buf = cp.zeros(1 << 14, cp.uint8)
    floats(buf, 0)[:] = cp.asarray(laplace(N))
    floats(buf, 4096)[:] = cp.asarray(laplace(N, seed=3))

    def p(off):
        return f.cast("void*", buf.data.ptr + off)

    def err(rc, what):
        assert rc == lib.tacoInvalidArgument
        msg = f.string(lib.tacoGetLastError(f.NULL)).decode()
        assert what in msg, msg

    s = f.NULL
    err(lib.tacoCompress(c, p(0), N, fp32, p(1008), WIRE, s), "tacoCompress: out argument")
    assert lib.tacoCompress(c, p(0), N, fp32, p(1024), WIRE, s) == lib.tacoSuccess
    err(lib.tacoDecompress(c, p(1024), WIRE, p(1024 + 16), N, fp32, s), "overlaps in argument")
    ins = f.new("const void*[]", [p(1024)])
    acc = lib.tacoDecompressAccumulate
    err(acc(c, ins, 1, WIRE, p(4096), p(1024 + 64), N, fp32, s), "overlaps inputs[0] argument")
    err(acc(c, ins, 1, WIRE, p(4096), p(4096 + 4), N, fp32, s), "overlaps exact argument")
    err(acc(c, ins, 1, WIRE, p(4096), p(4096 + 4), N, fp32, s), "but is not in place (y == exact)")
    assert acc(c, ins, 1, WIRE, p(4096), p(4096), N, fp32, s) == lib.tacoSuccess
    drc = lib.tacoDecompressReduceCompress
    err(drc(c, ins, 1, WIRE, p(4096), p(1024), WIRE, f.NULL, N, fp32, s), "overlaps inputs[0] argument")
    err(drc(c, ins, 1, WIRE, p(4096), p(4096 + 512), WIRE, f.NULL, N, fp32, s), "overlaps exact argument")
    err(drc(c, ins, 1, WIRE, p(4096), p(8192), WIRE, p(8192 + 128), N, fp32, s), "overlaps y argument")
    err(drc(c, ins, 1, WIRE, p(4096), p(8192), WIRE, p(1024 - 512), N, fp32, s), "overlaps inputs[0] argument")
    assert drc(c, ins, 1, WIRE, p(4096), p(8192), WIRE, p(4096), N, fp32, s) == lib.tacoSuccess
    cp.cuda.runtime.deviceSynchronize()


@pytest.mark.parametrize("codec", CODECS)
def test_header_datatype_byte_not_a_taco_datatype_decodes_to_nan(cp, codec):
    # The host functions refuse a header whose datatype byte is not a tacoDataType_t
    # (tests/python/test_bad_inputs.py); the kernels, which cannot return an error, must
    # write NaN over the output as for any other header mismatch (docs/format.md).
    x = laplace(4096 + 5)
    wire = taco.compress(x, codec)
    for bad in (3, 99):
        w = wire.copy()
        w[7] = bad
        y = cp.asnumpy(taco.decompress(cp.asarray(w), codec, x.size, "float32"))
        assert np.isnan(y).all(), f"datatype byte {bad} decoded"
        acc = cp.asnumpy(taco.decompress_accumulate([cp.asarray(wire), cp.asarray(w)], codec, x.size, "float32"))
        assert np.isnan(acc).all(), f"datatype byte {bad} accumulated"

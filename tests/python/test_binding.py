"""The cffi binding without a GPU: declarations from the header agree with the C
compiler, errors map to the right classes with the library's message, and the
host codec works through the Pythonic API (numpy and DLPack host objects).

Needs libtaco.so (TACO_LIBRARY or the packaged copy) and, for the ABI test, a
C compiler. Run: TACO_LIBRARY=build/libtaco.so pytest tests/python/test_binding.py
"""

import json
import os
import shutil
import re
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import taco
from taco import _lib, errors

ROOT = Path(__file__).resolve().parents[2]
DTYPES = ["float32", "float16", "bfloat16"]
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def laplace(n, dtype, seed=0):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32).astype(NP[dtype])


def nmse(x, y):
    x = x.astype(np.float64)
    d = y.astype(np.float64) - x
    return float(d @ d) / float(x @ x)


@pytest.fixture(scope="module")
def lib():
    return _lib.lib()  # fails (not skips) when the library cannot be found


# ---------------------------------------------------------------- header parsing


def test_parse_header_drops_what_cffi_cannot_take():
    text = r"""
/* comment with #define FAKE 1 inside */
#ifndef GUARD_H_
#define GUARD_H_
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
#define A 12   // trailing comment
#define B 0x10u
#define C ((size_t)-1)
#define D (-2147483647 - 1)
#define E (A * 2 + B)
#define F(x) ((x) + 1)
#define INIT \
  { sizeof(S), A, NULL }
typedef enum { kOne = 1, kTwo = 2 } E_t;
typedef struct { size_t size; int a; const char* p; } S;
int f(int x);
#ifdef __cplusplus
}
#else
int only_in_c(void);
#endif
#endif /* GUARD_H_ */
"""
    cdef, dropped = _lib.parse_header(text)
    assert "extern" not in cdef and "#include" not in cdef and "GUARD_H_" not in cdef
    assert "FAKE" not in cdef
    assert "#define A 12" in cdef and "#define B 0x10" in cdef
    assert "only_in_c" in cdef  # the #else branch of a C++ guard is C
    assert set(dropped) == {"C", "D", "E", "F", "INIT"}
    ev = _lib._Evaluator({"A": 12, "B": 16})
    assert ev(dropped["C"]) == 2**64 - 1
    assert ev(dropped["D"]) == -(2**31)
    assert ev(dropped["E"]) == 40
    import cffi

    f = cffi.FFI()
    f.cdef(cdef)  # cffi accepts what is left
    assert f.typeof("E_t").relements == {"kOne": 1, "kTwo": 2}


def test_enums_come_from_the_header():
    assert _lib.enum_values("tacoResult_t")["tacoSuccess"] == 0
    assert _lib.enum_values("tacoDataType_t")["tacoNumDataTypes"] == 3
    header = _lib.header_path().read_text()
    for name, value in _lib.enum_values("tacoCodecId_t").items():
        assert f"{name} = {value}" in header


def _compiler():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def test_ffi_matches_the_c_compiler(tmp_path):
    """Every enum value, integer macro, struct size and field offset the binding
    uses equals what a C compiler makes of taco.h; TACO_CONFIG_INITIALIZER too."""
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc, clang) to compare the ffi with")
    f = _lib.ffi()
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "taco.h"', "int main(void) {"]
    expect = {}
    for enum in ("tacoResult_t", "tacoDataType_t", "tacoRedOp_t", "tacoCodecId_t"):
        for name, value in _lib.enum_values(enum).items():
            lines.append(f'  printf("{name} %lld\\n", (long long){name});')
            expect[name] = value
    for name, value in _lib.constants().items():
        lines.append(f'  printf("{name} %llu\\n", (unsigned long long){name});')
        expect[name] = value % 2**64
    for struct in ("tacoCodec_t", "tacoCodecInfo_t", "tacoConfig_t", "tacoUniqueId"):
        lines.append(f'  printf("sizeof({struct}) %zu\\n", sizeof({struct}));')
        expect[f"sizeof({struct})"] = f.sizeof(struct)
        for field, _ in f.typeof(struct).fields:
            lines.append(f'  printf("offsetof({struct}.{field}) %zu\\n", offsetof({struct}, {field}));')
            expect[f"offsetof({struct}.{field})"] = f.offsetof(struct, field)
    lines.append("  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;")
    cfg = _lib.config_initializer()
    for field, ft in f.typeof("tacoConfig_t").fields:
        if ft.type.kind == "pointer":
            lines.append(f'  printf("cfg.{field} %d\\n", cfg.{field} == NULL);')
            expect[f"cfg.{field}"] = int(getattr(cfg, field) == f.NULL)
        else:
            lines.append(f'  printf("cfg.{field} %llu\\n", (unsigned long long)cfg.{field});')
            expect[f"cfg.{field}"] = getattr(cfg, field) % 2**64
    lines += ["  return 0;", "}"]
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "abi"
    subprocess.run([cc, "-I", str(_lib.header_path().parent), str(src), "-o", str(exe)], check=True)
    got = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        k, v = line.rsplit(" ", 1)
        got[k] = int(v)
    assert got == expect


def test_library_matches_the_header(lib):
    k = _lib.constants()
    assert lib.tacoGetVersion() // 100 == k["TACO_VERSION_CODE"] // 100  # same major.minor
    assert taco.__version__ == f"{k['TACO_MAJOR']}.{k['TACO_MINOR']}.{k['TACO_PATCH']}"
    names = taco.codecs()
    assert len(names) == lib.tacoNumCodecs
    for i, name in enumerate(names):
        assert taco.codec_info(name)["id"] == i
        assert taco.codec_info(i)["name"] == name
    with pytest.raises(taco.InvalidArgumentError):
        taco.codec_info(lib.tacoNumCodecs)
    # every tacoCodecId_t constant is its registry name in CamelCase ("taco-e5m2": tacoCodecTacoE5M2)
    ids = {k.lower(): v for k, v in _lib.enum_values("tacoCodecId_t").items() if k != "tacoNumCodecs"}
    assert {"tacocodec" + name.replace("-", "") for name in names} == set(ids)
    for name in names:
        assert taco.codec_info(name)["id"] == ids["tacocodec" + name.replace("-", "")], name
    f = _lib.ffi()
    for code in range(lib.tacoNumResults):
        assert f.string(lib.tacoGetErrorString(code))


def test_codec_info_fields(lib):
    info = taco.codec_info("taco")
    assert info["name"] == "taco" and info["block_size"] == 256 and info["rotated"]
    assert info["code_bits"] == 8 and isinstance(info["description"], str) and info["description"]
    assert taco.codec_info("taco:block=128")["block_size"] == 128
    assert taco.codec_info("taco", block=64)["block_size"] == 64
    with pytest.raises(taco.InvalidArgumentError):
        taco.codec_info("taco:block=128", block=64)  # disagreeing specs


# ---------------------------------------------------------------- errors


def test_error_classes_follow_the_enum_names(lib):
    expect = {
        "tacoUnhandledCudaError": errors.CudaError, "tacoSystemError": errors.TacoSystemError,
        "tacoInternalError": errors.InternalError, "tacoInvalidArgument": errors.InvalidArgumentError,
        "tacoInvalidUsage": errors.InvalidUsageError, "tacoRemoteError": errors.RemoteError,
        "tacoNcclError": errors.NcclError, "tacoNotSupported": errors.NotSupportedError,
        "tacoOutOfMemory": errors.OutOfMemoryError,
    }
    for name, value in _lib.enum_values("tacoResult_t").items():
        if name in ("tacoSuccess", "tacoNumResults"):
            continue
        assert errors.error_class(value) is expect[name]
        e = errors.make_error(value)
        assert isinstance(e, expect[name]) and isinstance(e, taco.TacoError)
        assert e.code == value and e.name == name and e.message
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.OutOfMemoryError, MemoryError)
    assert issubclass(errors.TacoSystemError, OSError) and not issubclass(errors.TacoSystemError, SystemError)
    assert not hasattr(taco, "SystemError_")
    assert not issubclass(errors.NotSupportedError, NotImplementedError)
    errors.check(lib.tacoSuccess)
    with pytest.raises(errors.RemoteError):
        errors.check(lib.tacoRemoteError)


def test_unknown_codec_raises_invalid_argument_with_the_library_message(lib):
    with pytest.raises(taco.InvalidArgumentError) as ei:
        taco.find_codec("nope")
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.code == lib.tacoInvalidArgument and e.name == "tacoInvalidArgument"
    f = _lib.ffi()
    # the library's message in the caller's words: the Python argument `codec`, not the C one
    c_message = f.string(lib.tacoGetLastError(f.NULL)).decode()
    assert c_message.startswith("tacoCodecFind: spec argument 'nope': unknown codec 'nope' (known: "), c_message
    assert e.message == "codec: " + c_message[len("tacoCodecFind: spec argument "):], e.message
    assert e.message in str(e)


@pytest.mark.parametrize("spec", ["taco:block=100", "taco:block=2048", "taco:block=16"])
def test_bad_block_size(lib, spec):
    with pytest.raises(taco.InvalidArgumentError) as ei:
        taco.find_codec(spec)
    assert "block" in ei.value.message.lower()


# ---------------------------------------------------------------- host codec


@pytest.mark.parametrize("dtype", DTYPES)
def test_host_round_trip_every_codec(lib, dtype):
    n = 4096 + 3
    x = laplace(n, dtype)
    for name in taco.codecs():
        info = taco.codec_info(name)
        try:
            wire = taco.compress(x, name)
        except taco.NotSupportedError:
            continue  # a codec may not apply to every dtype; the library says so explicitly
        assert isinstance(wire, np.ndarray) and wire.dtype == np.uint8 and wire.ndim == 1
        assert wire.nbytes == taco.compressed_size(name, n, dtype)
        assert np.array_equal(taco.compress(x, name), wire), "compression is deterministic"
        y = taco.decompress(wire, name, n, dtype)
        assert isinstance(y, np.ndarray) and y.dtype == x.dtype and y.shape == (n,)
        err = nmse(x, y)
        if name == "none" or (name == "bf16" and dtype == "bfloat16"):
            assert np.array_equal(y.view(np.uint8), x.view(np.uint8)), name
        else:
            bound = {16: 1e-4, 8: 1e-2, 6: 2e-2, 4: 0.1}[info["code_bits"]]
            assert 0 < err < bound, (name, dtype, err)


def test_host_compress_into_out_and_too_small_out(lib):
    x = laplace(1000, "float32")
    size = taco.compressed_size("taco", x.size, "float32")
    out = np.full(size, 0xAB, np.uint8)
    r = taco.compress(x, "taco", out=out)
    assert r is out and np.array_equal(out, taco.compress(x, "taco"))
    with pytest.raises(taco.InvalidArgumentError):
        taco.compress(x, "taco", out=np.empty(size - 16, np.uint8))
    ro = np.empty(size, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(taco.InvalidArgumentError, match="out"):
        taco.compress(x, "taco", out=ro)
    y = np.empty(x.size, np.float32)
    assert taco.decompress(out, "taco", x.size, "float32", out=y) is y
    with pytest.raises(taco.InvalidArgumentError, match="out"):
        taco.decompress(out, "taco", x.size, "float32", out=np.empty(x.size, np.float16))
    with pytest.raises(taco.InvalidArgumentError, match="out"):
        taco.decompress(out, "taco", x.size, "float32", out=np.empty(x.size + 1, np.float32))


def test_compressed_size(lib):
    for name in taco.codecs():
        sizes = []
        for n in (1, 255, 256, 257, 10**6 + 3):
            s = taco.compressed_size(name, n, "float32")
            assert s % 16 == 0 and s >= _lib.constants()["TACO_HEADER_BYTES"]
            assert s == taco.compressed_size(name, n, np.float32)  # a pure function
            sizes.append(s)
        assert sizes == sorted(sizes)
    n = 1 << 20
    assert taco.compressed_size("taco", n, "float32") < n * 4 / 3.5
    assert taco.compressed_size("taco", n, "bfloat16") < n * 2 / 1.8
    assert taco.compressed_size("taco:block=1024", n, "float32") < taco.compressed_size("taco:block=32", n, "float32")
    assert taco.compressed_size("taco", n, "bf16") == taco.compressed_size("taco", n, ml_dtypes.bfloat16)


def test_non_contiguous_input_rejected(lib):
    x = laplace(2048, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="x") as ei:
        taco.compress(x[::2], "taco")
    assert isinstance(ei.value, ValueError) and "contiguous" in str(ei.value)
    with pytest.raises(ValueError, match="contiguous"):
        taco.compress(np.asfortranarray(x.reshape(64, 32)), "taco")
    taco.compress(x.reshape(64, 32), "taco")  # C-contiguous 2-D is fine


@pytest.mark.parametrize("bad", [np.float64, np.int32, np.uint8])
def test_wrong_dtype_rejected(lib, bad):
    with pytest.raises(taco.InvalidArgumentError, match="x"):
        taco.compress(np.ones(256, bad), "taco")


def test_raw_uint16_needs_an_explicit_dtype(lib):
    x = laplace(777, "bfloat16")
    bits = x.view(np.uint16)
    with pytest.raises(taco.InvalidArgumentError, match="dtype"):
        taco.compress(bits, "taco")
    assert np.array_equal(taco.compress(bits, "taco", dtype="bfloat16"), taco.compress(x, "taco"))
    with pytest.raises(taco.InvalidArgumentError):
        taco.compress(x, "taco", dtype="float32")  # says fp32 but holds bf16
    with pytest.raises(TypeError):
        taco.compress([1.0, 2.0], "taco")


def test_stream_is_refused_for_host_arrays(lib):
    with pytest.raises(taco.InvalidArgumentError, match="stream"):
        taco.compress(laplace(256, "float32"), "taco", stream=0)


def test_codec_given_with_block_keyword(lib):
    x = laplace(1000, "float32")
    assert np.array_equal(taco.compress(x, "taco", block=128), taco.compress(x, "taco:block=128"))
    assert not np.array_equal(taco.compress(x, "taco", block=128), taco.compress(x, "taco"))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_host_decompress_accumulate(lib, dtype):
    n, k = 3000, 3
    xs = [laplace(n, dtype, seed=s) for s in range(k)]
    wires = [taco.compress(x, "taco") for x in xs]
    parts = [taco.decompress(w, "taco", n, dtype).astype(np.float32) for w in wires]
    exact = laplace(n, dtype, seed=99)
    ref = np.zeros(n, np.float32)
    for p in parts:
        ref += p
    y = taco.decompress_accumulate(wires, "taco", n, dtype)
    assert y.dtype == NP[dtype]
    tol = 1e-5 if dtype == "float32" else 1e-2
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=tol, atol=tol * np.abs(ref).max())
    y2 = taco.decompress_accumulate(wires, "taco", n, dtype, exact=exact)
    ref2 = ref + exact.astype(np.float32)
    np.testing.assert_allclose(y2.astype(np.float32), ref2, rtol=tol, atol=tol * np.abs(ref2).max())
    inplace = exact.copy()
    r = taco.decompress_accumulate(wires, "taco", n, dtype, exact=inplace, out=inplace)
    assert r is inplace and np.array_equal(inplace.view(np.uint8), y2.view(np.uint8))
    with pytest.raises(taco.InvalidArgumentError, match="wires"):
        taco.decompress_accumulate([wires[0], wires[1][:-16]], "taco", n, dtype)
    with pytest.raises(taco.InvalidArgumentError, match="wires"):
        taco.decompress_accumulate([], "taco", n, dtype)


def _drc_mismatches(n):
    """Codecs whose decompress_reduce_compress differs from compress(decompress_accumulate)."""
    xs = [laplace(n, "float32", seed=s) for s in range(4)]
    exact = laplace(n, "float32", seed=7)
    bad = []
    for name in taco.codecs():
        wires = [taco.compress(x, name) for x in xs]
        acc = taco.decompress_accumulate(wires, name, n, "float32", exact=exact)
        out, y = taco.decompress_reduce_compress(wires, name, n, "float32", exact=exact, return_decompressed=True)
        assert np.array_equal(y, taco.decompress(out, name, n, "float32")), name
        assert np.array_equal(out, taco.decompress_reduce_compress(wires, name, n, "float32", exact=exact))
        if not np.array_equal(out, taco.compress(acc, name)):
            bad.append(name)
    return bad


def test_host_decompress_reduce_compress(lib):
    assert _drc_mismatches(20 * 256) == []  # whole blocks


def test_host_decompress_reduce_compress_short_last_block(lib):
    assert _drc_mismatches(20 * 256 - 120) == []


# ---------------------------------------------------------------- DLPack on the host


class DLPackOnly:
    """Exposes only the DLPack protocol of a numpy array."""

    def __init__(self, a, versioned=True):
        self.a, self.versioned = a, versioned

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __dlpack__(self, stream=None, max_version=None, **kw):
        if not self.versioned and max_version is not None:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        if self.versioned and max_version is not None:
            return self.a.__dlpack__(stream=stream, max_version=max_version)
        return self.a.__dlpack__(stream=stream)


@pytest.mark.parametrize("versioned", [True, False])
def test_dlpack_host_objects(lib, versioned):
    x = laplace(1000, "float32")
    ref = taco.compress(x, "taco")
    wire = taco.compress(DLPackOnly(x, versioned), "taco")
    assert isinstance(wire, np.ndarray) and np.array_equal(wire, ref)
    out = np.empty_like(ref)
    taco.compress(DLPackOnly(x, versioned), "taco", out=DLPackOnly(out, versioned))
    assert np.array_equal(out, ref)
    with pytest.raises(taco.InvalidArgumentError, match="contiguous"):
        taco.compress(DLPackOnly(laplace(2000, "float32")[::2], versioned), "taco")


def test_dlpack_bfloat16_host(lib):
    x = laplace(512, "bfloat16")
    try:
        x.__dlpack__()
    except (BufferError, TypeError) as e:  # numpy cannot export ml_dtypes types
        wire = taco.compress(DLPackOnly(x.view(np.uint16)), "taco", dtype="bfloat16")
        assert np.array_equal(wire, taco.compress(x, "taco")), e
        return
    assert np.array_equal(taco.compress(DLPackOnly(x), "taco"), taco.compress(x, "taco"))


# ---------------------------------------------------------------- locating, CLI


def _env(**kw):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(taco.__file__).resolve().parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(kw)
    return env


def test_import_needs_no_library_and_errors_name_the_override():
    code = "import taco; import sys\ntry:\n taco.codecs()\nexcept ImportError as e:\n print('ERR', e)\n"
    r = subprocess.run([sys.executable, "-c", code], env=_env(TACO_LIBRARY="/nonexistent/libtaco.so"),
                       capture_output=True, text=True, check=True)
    assert "ERR" in r.stdout and "TACO_LIBRARY" in r.stdout


def test_taco_library_override_is_used(lib):
    path = _lib.library_path()
    code = "from taco import _lib; print(_lib.library_path()); print(_lib.lib().tacoGetVersion())"
    r = subprocess.run([sys.executable, "-c", code], env=_env(TACO_LIBRARY=path),
                       capture_output=True, text=True, check=True)
    assert r.stdout.split()[0] == str(Path(path).resolve())
    assert int(r.stdout.split()[1]) == lib.tacoGetVersion()


def test_cli_info(lib):
    r = subprocess.run([sys.executable, "-m", "taco", "info"], env=_env(TACO_LIBRARY=_lib.library_path(),
                                                                       TACO_DEBUG="WARN"),
                       capture_output=True, text=True, check=True)
    out = r.stdout
    assert str(Path(_lib.library_path()).resolve()) in out
    assert str(_lib.header_path()) in out
    assert "NCCL" in out and "GPU" in out
    for name in taco.codecs():
        assert f" {name} " in out
    assert re.search(r"TACO_DEBUG +WARN +\(set\)", out)       # the library's own table
    assert re.search(r"TACO_CHUNK_BYTES +67108864 +\(default\)", out)


def test_cli_bench_codec_host(lib, tmp_path):
    js = tmp_path / "bench.json"
    cmds = [[sys.executable, "-m", "taco", "bench", "codec", "--host", "--count", "4099", "--json", str(js)],
            [sys.executable, str(ROOT / "bench" / "codec_bench.py"), "--host", "--count", "2^12"]]
    r = subprocess.run(cmds[0], env=_env(TACO_LIBRARY=_lib.library_path()), capture_output=True, text=True,
                       check=True)
    res = json.loads(js.read_text())
    assert res["mode"] == "host" and res["count"] == 4099
    rows = [row for row in res["rows"] if row["supported"]]
    assert {(row["codec"], row["dtype"]) for row in res["rows"]} == {
        (c, d) for c in taco.codecs() for d in ("fp32", "bf16", "fp16")}
    for row in rows:
        assert 0 <= row["nmse"] < 0.1 and np.isfinite(row["max_err"])
        assert row["codec"] in r.stdout
    taco_fp32 = next(row for row in rows if row["codec"] == "taco" and row["dtype"] == "fp32")
    x = np.random.default_rng(0).laplace(size=4099).astype(np.float32)
    y = taco.decompress(taco.compress(x, "taco"), "taco", x.size, "float32")
    assert taco_fp32["nmse"] == pytest.approx(nmse(x, y), rel=1e-12)
    r2 = subprocess.run(cmds[1], env=_env(TACO_LIBRARY=_lib.library_path()), capture_output=True, text=True,
                        check=True)
    assert "taco" in r2.stdout and "nmse" in r2.stdout


# ---------------------------------------------------------------- array and stream plumbing (no GPU)


class FakeCAI:
    """A CUDA Array Interface description only: describe() reads it, nothing runs."""

    def __init__(self, shape=(4, 8), typestr="<f2", strides=None, stream=None, version=3, ptr=0x7000_0000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "version": version, "strides": strides, "stream": stream}


def test_describe_cai():
    from taco import _arrays

    b = _arrays.describe(FakeCAI(), "x")
    assert (b.ptr, b.count, b.nbytes, b.kind, b.framework) == (0x7000_0000, 32, 64, "float16", "cai")
    assert b.is_device and b.stream == 0  # no producer stream, no stream=: legacy default
    assert _arrays.describe(FakeCAI(stream=7), "x").stream == 7  # the producer's stream
    assert _arrays.describe(FakeCAI(stream=7, version=2), "x").stream == 0  # v2 has no stream field
    assert _arrays.describe(FakeCAI(strides=(16, 2)), "x").count == 32  # explicit C strides
    assert _arrays.describe(FakeCAI(shape=(4, 1), strides=(2, 99)), "x").count == 4  # size-1 dim
    with pytest.raises(taco.InvalidArgumentError, match="x: .*contiguous"):
        _arrays.describe(FakeCAI(strides=(2, 8)), "x")
    with pytest.raises(taco.InvalidArgumentError, match="stream 0"):
        _arrays.describe(FakeCAI(stream=0), "x")
    b = _arrays.describe(FakeCAI(typestr="<u2"), "x")
    assert _arrays.check_data(b, "x", "bf16") == "bfloat16"
    with pytest.raises(taco.InvalidArgumentError, match="dtype"):
        _arrays.check_data(b, "x")
    with pytest.raises(taco.InvalidArgumentError, match="float64"):
        _arrays.check_data(_arrays.describe(FakeCAI(typestr="<f8"), "x"), "x")


def test_stream_handles():
    from taco._arrays import stream_handle

    class CupyLike:
        ptr = 0x1234

    class TorchLike:
        cuda_stream = 0x5678

    class Protocol:
        def __cuda_stream__(self):
            return (0, 0x9ABC)

    assert stream_handle(None) is None and stream_handle(5) == 5 and stream_handle(np.int64(6)) == 6
    assert stream_handle(CupyLike()) == 0x1234 and stream_handle(TorchLike()) == 0x5678
    assert stream_handle(Protocol()) == 0x9ABC
    with pytest.raises(TypeError):
        stream_handle("default")


def test_dtype_names():
    from taco._arrays import dtype_name, taco_dtype

    for alias, name in [("fp32", "float32"), ("float", "float32"), (np.float32, "float32"),
                        ("half", "float16"), (np.dtype(np.float16), "float16"), ("bf16", "bfloat16"),
                        (ml_dtypes.bfloat16, "bfloat16"), ("torch.bfloat16", "bfloat16")]:
        assert dtype_name(alias) == name, alias
    for name, enum in [("float32", "tacoFloat32"), ("float16", "tacoFloat16"), ("bfloat16", "tacoBfloat16")]:
        assert taco_dtype(name) == _lib.enum_values("tacoDataType_t")[enum]
        assert dtype_name(taco_dtype(name)) == name
    for bad in ("float64", np.int8, 3, "fp8"):
        with pytest.raises(taco.InvalidArgumentError, match="dtype"):
            dtype_name(bad)


# ---------------------------------------------------------------- the TACO_* table


def test_param_info_lists_every_variable(lib, monkeypatch):
    f = taco._lib.ffi()
    name, dflt, meaning, value = (f.new("const char**") for _ in range(4))
    seen = {}
    i = 0
    while lib.tacoGetParamInfo(i, name, dflt, meaning, value) == lib.tacoSuccess:
        seen[f.string(name[0]).decode()] = f.string(dflt[0]).decode()
        assert f.string(meaning[0]).decode()
        i += 1
    assert {"TACO_CODEC", "TACO_CHUNK_BYTES", "TACO_FALLBACK_BYTES", "TACO_PIPELINE_DEPTH",
            "TACO_CHECK_CONSISTENCY", "TACO_CHECK_POINTERS", "TACO_NCCL_LIBRARY", "TACO_DEBUG"} <= set(seen)
    assert seen["TACO_CHUNK_BYTES"] == str(64 << 20) and seen["TACO_CODEC"] == "fp8-block"
    assert lib.tacoGetParamInfo(i, name, dflt, meaning, value) == lib.tacoInvalidArgument
    assert "index argument" in f.string(lib.tacoGetLastError(f.NULL)).decode()
    k = list(seen).index("TACO_CHUNK_BYTES")
    monkeypatch.setenv("TACO_CHUNK_BYTES", "32M")
    assert lib.tacoGetParamInfo(k, name, dflt, meaning, value) == lib.tacoSuccess
    assert f.string(value[0]).decode() == "32M"
    monkeypatch.delenv("TACO_CHUNK_BYTES")
    assert lib.tacoGetParamInfo(k, name, dflt, meaning, value) == lib.tacoSuccess
    assert value[0] == f.NULL


def test_default_codec_follows_taco_codec(monkeypatch):
    # the library's default (docs/accuracy.md: chosen from the training runs), read from its table
    monkeypatch.delenv("TACO_CODEC", raising=False)
    assert taco.default_codec() == "fp8-block"
    assert taco.codec_info()["name"] == "fp8-block"  # codec None: the default
    x = np.random.default_rng(0).laplace(size=1000).astype(np.float32)
    assert np.array_equal(taco.compress(x), taco.compress(x, "fp8-block"))
    monkeypatch.setenv("TACO_CODEC", "int8-hadamard")
    assert taco.default_codec() == "int8-hadamard" and taco.codec_info()["name"] == "int8-hadamard"
    # a bad TACO_CODEC is named as the variable, not as a codec argument the caller did not pass
    monkeypatch.setenv("TACO_CODEC", "bogus")
    with pytest.raises(taco.InvalidArgumentError, match=r"TACO_CODEC \(no codec given\): 'bogus'"):
        taco.compress(x)
    with pytest.raises(taco.InvalidArgumentError, match=r"^tacoInvalidArgument: codec: 'bogus'"):
        taco.compress(x, "bogus")

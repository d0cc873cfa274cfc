"""The Python binding on a GPU: CuPy arrays, torch tensors, CAI and DLPack objects
give the same bytes as the host codec, outputs come back in the caller's
framework, and work is ordered on the right stream (explicit stream=, the
framework's current stream, the CAI producer's stream).

Run on a GPU machine:  pytest -m gpu tests/gpu/test_python_gpu.py
CuPy and PyTorch are required there: a missing one is a failure, not a skip.
"""

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import taco
from taco import _lib
from loopback_world import cp, torch  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16"]
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
SPIN_CYCLES = 300_000_000  # ~0.15 s on an H200: long enough to lose any race


def laplace(n, dtype, seed=0):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32).astype(NP[dtype])


@pytest.fixture(scope="module")
def spin(cp):
    k = cp.RawKernel(r"""
extern "C" __global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}""", "spin")

    def run(stream):
        with stream:
            k((1,), (1,), (np.int64(SPIN_CYCLES),))

    return run


# ---- helpers: host <-> device in each framework, bf16 carried as uint16 in CuPy


def to_cupy(cp, x):
    return cp.asarray(x.view(np.uint16) if x.dtype == ml_dtypes.bfloat16 else x)


def to_torch(torch, x):
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(x).cuda()


def torch_to_numpy(torch, t, dtype):
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    return t.cpu().numpy()


def dt_kw(dtype):
    return {"dtype": "bfloat16"} if dtype == "bfloat16" else {}


def bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


class CAIOnly:
    """Exposes only a __cuda_array_interface__ (optionally with a producer stream)."""

    def __init__(self, arr, stream=None, typestr=None):
        self.arr = arr
        cai = dict(arr.__cuda_array_interface__)
        cai["version"] = 3
        cai["stream"] = stream
        if typestr:
            cai["typestr"] = typestr
        self.__cuda_array_interface__ = cai


class DLPackOnly:
    """Exposes only the DLPack protocol; records the stream the consumer asked for."""

    def __init__(self, arr):
        self.arr, self.streams = arr, []

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()

    def __dlpack__(self, stream=None, **kw):
        self.streams.append(stream)
        return self.arr.__dlpack__(stream=stream, **kw)


# ---------------------------------------------------------------- same bytes as the host


@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_matches_host(cp, dtype):
    n = (1 << 16) + 5
    x = laplace(n, dtype)
    xd = to_cupy(cp, x)
    for name in taco.codecs():
        try:
            ref = taco.compress(x, name)
        except taco.NotSupportedError:
            with pytest.raises(taco.NotSupportedError):
                taco.compress(xd, name, **dt_kw(dtype))
            continue
        wd = taco.compress(xd, name, **dt_kw(dtype))
        assert isinstance(wd, cp.ndarray) and wd.dtype == np.uint8
        assert np.array_equal(cp.asnumpy(wd), ref), name
        yd = taco.decompress(wd, name, n, dtype)
        assert isinstance(yd, cp.ndarray)
        assert np.array_equal(bits(cp.asnumpy(yd)), bits(taco.decompress(ref, name, n, dtype))), name


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_matches_host(torch, dtype):
    n = (1 << 16) + 5
    x = laplace(n, dtype)
    xt = to_torch(torch, x)
    for name in taco.codecs():
        try:
            ref = taco.compress(x, name)
        except taco.NotSupportedError:
            continue
        wt = taco.compress(xt, name)
        assert isinstance(wt, torch.Tensor) and wt.is_cuda and wt.dtype == torch.uint8
        assert np.array_equal(wt.cpu().numpy(), ref), name
        yt = taco.decompress(wt, name, n, dtype)
        assert isinstance(yt, torch.Tensor) and yt.is_cuda and yt.dtype == getattr(torch, dtype)
        assert np.array_equal(bits(torch_to_numpy(torch, yt, dtype)),
                              bits(taco.decompress(ref, name, n, dtype))), name


def test_torch_cpu_tensor_uses_the_host_codec(torch):
    x = laplace(3000, "bfloat16")
    t = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    w = taco.compress(t, "taco")
    assert isinstance(w, torch.Tensor) and not w.is_cuda
    assert np.array_equal(w.numpy(), taco.compress(x, "taco"))


def test_unaligned_device_pointers(cp):
    x = laplace(100_003, "float32")
    xd = to_cupy(cp, x)
    for off in (1, 3):
        assert np.array_equal(cp.asnumpy(taco.compress(xd[off:], "taco")), taco.compress(x[off:], "taco"))


def test_large_bf16_matches_host(cp):
    n = (1 << 24) + 3
    x = laplace(n, "bfloat16")
    wd = taco.compress(to_cupy(cp, x), "taco", dtype="bfloat16")
    assert np.array_equal(cp.asnumpy(wd), taco.compress(x, "taco"))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_accumulate_and_reduce_compress_match_host(cp, dtype):
    n, k = 50_001, 4
    xs = [laplace(n, dtype, seed=s) for s in range(k)]
    exact = laplace(n, dtype, seed=9)
    wires = [taco.compress(x, "taco") for x in xs]
    wd = [cp.asarray(w) for w in wires]
    ed = to_cupy(cp, exact)
    ref = taco.decompress_accumulate(wires, "taco", n, dtype, exact=exact)
    got = taco.decompress_accumulate(wd, "taco", n, dtype, exact=ed)
    assert np.array_equal(bits(cp.asnumpy(got)), bits(ref))
    ref_w, ref_y = taco.decompress_reduce_compress(wires, "taco", n, dtype, exact=exact, return_decompressed=True)
    got_w, got_y = taco.decompress_reduce_compress(wd, "taco", n, dtype, exact=ed, return_decompressed=True)
    assert np.array_equal(cp.asnumpy(got_w), ref_w)
    assert np.array_equal(bits(cp.asnumpy(got_y)), bits(ref_y))


# ---------------------------------------------------------------- CAI and DLPack objects


def test_cai_object_accepted_and_output_is_cupy(cp):
    x = laplace(10_001, "float16")
    w = taco.compress(CAIOnly(to_cupy(cp, x)), "taco")
    assert isinstance(w, cp.ndarray)
    assert np.array_equal(cp.asnumpy(w), taco.compress(x, "taco"))
    y = cp.empty(x.size, cp.float16)
    taco.decompress(CAIOnly(w), "taco", x.size, "float16", out=CAIOnly(y))
    assert np.array_equal(bits(cp.asnumpy(y)), bits(taco.decompress(taco.compress(x, "taco"), "taco", x.size,
                                                                    "float16")))


def test_cai_bf16_bits_need_dtype(cp):
    x = laplace(4096, "bfloat16")
    obj = CAIOnly(to_cupy(cp, x))
    with pytest.raises(taco.InvalidArgumentError, match="dtype"):
        taco.compress(obj, "taco")
    assert np.array_equal(cp.asnumpy(taco.compress(obj, "taco", dtype="bf16")), taco.compress(x, "taco"))


def test_dlpack_object_accepted(cp, torch):
    x = laplace(10_001, "bfloat16")
    obj = DLPackOnly(to_torch(torch, x))
    w = taco.compress(obj, "taco")
    assert np.array_equal(cp.asnumpy(w), taco.compress(x, "taco"))
    assert obj.streams == [1]  # no stream given: the legacy default stream, as DLPack spells it
    s = cp.cuda.Stream(non_blocking=True)
    taco.compress(obj, "taco", stream=s)
    assert obj.streams[-1] == s.ptr
    s.synchronize()


def test_non_contiguous_device_arrays_rejected(cp, torch):
    xd = cp.asarray(laplace(4096, "float32"))
    with pytest.raises(taco.InvalidArgumentError, match="contiguous"):
        taco.compress(xd[::2], "taco")
    with pytest.raises(taco.InvalidArgumentError, match="contiguous"):
        taco.compress(torch.as_tensor(xd, device="cuda")[::2], "taco")
    with pytest.raises(taco.InvalidArgumentError, match="contiguous"):
        taco.compress(CAIOnly(xd.reshape(64, 64).T), "taco")
    with pytest.raises(taco.InvalidArgumentError, match="contiguous"):
        taco.compress(DLPackOnly(torch.as_tensor(xd, device="cuda")[::2]), "taco")


def test_host_and_device_mixed_rejected(cp):
    xd = cp.asarray(laplace(1000, "float32"))
    out = np.empty(taco.compressed_size("taco", 1000, "float32"), np.uint8)
    with pytest.raises(taco.InvalidArgumentError, match="out"):
        taco.compress(xd, "taco", out=out)


# ---------------------------------------------------------------- streams


def _pending_write(cp, spin, stream, x_host):
    """A zero device array that `stream` fills with x_host only after a long spin:
    anything reading it on another stream without waiting sees zeros."""
    xd = cp.zeros(x_host.shape, dtype=to_cupy(cp, x_host[:1]).dtype)
    cp.cuda.Device().synchronize()
    src = to_cupy(cp, x_host)
    cp.cuda.Device().synchronize()
    spin(stream)
    with stream:
        xd[...] = src
    return xd, src


def test_explicit_stream_is_used(cp, spin):
    x = laplace(1 << 20, "float32")
    ref = taco.compress(x, "taco")
    s = cp.cuda.Stream(non_blocking=True)
    xd, _src = _pending_write(cp, spin, s, x)
    w = taco.compress(xd, "taco", stream=s)  # enqueued behind the spin and the write on s
    y = taco.decompress(w, "taco", x.size, "float32", stream=s.ptr)
    s.synchronize()
    assert np.array_equal(cp.asnumpy(w), ref)
    assert np.array_equal(cp.asnumpy(y), taco.decompress(ref, "taco", x.size, "float32"))


def test_cupy_current_stream_is_the_default(cp, spin):
    x = laplace(1 << 20, "float32")
    s = cp.cuda.Stream(non_blocking=True)
    xd, _src = _pending_write(cp, spin, s, x)
    with s:
        w = taco.compress(xd, "taco")
    s.synchronize()
    assert np.array_equal(cp.asnumpy(w), taco.compress(x, "taco"))


def test_torch_current_stream_is_the_default(torch):
    x = laplace(1 << 20, "bfloat16")
    src = to_torch(torch, x)
    xt = torch.zeros_like(src)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SPIN_CYCLES)
        xt.copy_(src)
        w = taco.compress(xt, "taco")  # no stream=: torch's current stream, s
        y = taco.decompress(w, "taco", x.size, "bfloat16")
    s.synchronize()
    ref = taco.compress(x, "taco")
    assert np.array_equal(w.cpu().numpy(), ref)
    assert np.array_equal(bits(torch_to_numpy(torch, y, "bfloat16")),
                          bits(taco.decompress(ref, "taco", x.size, "bfloat16")))


def test_torch_explicit_stream_object(torch):
    x = laplace(1 << 20, "float32")
    src = to_torch(torch, x)
    xt = torch.zeros_like(src)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SPIN_CYCLES)
        xt.copy_(src)
    w = taco.compress(xt, "taco", stream=s)  # outside the context: the explicit stream decides
    s.synchronize()
    assert np.array_equal(w.cpu().numpy(), taco.compress(x, "taco"))


def test_cai_producer_stream_is_honoured(cp, spin):
    x = laplace(1 << 20, "float32")
    ref = taco.compress(x, "taco")
    producer = cp.cuda.Stream(non_blocking=True)
    xd, _src = _pending_write(cp, spin, producer, x)
    # no stream=: run on the producer's stream
    w = taco.compress(CAIOnly(xd, stream=producer.ptr), "taco")
    producer.synchronize()
    assert np.array_equal(cp.asnumpy(w), ref)
    # stream= another stream: ours must wait for the producer's (an event); nothing else
    # orders the two non-blocking streams, so without the wait compress reads zeros
    consumer = cp.cuda.Stream(non_blocking=True)
    out = cp.zeros(ref.size, cp.uint8)
    xd2, _src2 = _pending_write(cp, spin, producer, x)  # synchronizes the device first
    taco.compress(CAIOnly(xd2, stream=producer.ptr), "taco", out=out, stream=consumer)
    consumer.synchronize()
    assert np.array_equal(cp.asnumpy(out), ref)
    producer.synchronize()


# ---------------------------------------------------------------- the benchmark on a GPU


def test_bench_codec_gpu(tmp_path):
    js = tmp_path / "b.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(taco.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
    env["TACO_LIBRARY"] = _lib.library_path()
    r = subprocess.run([sys.executable, "-m", "taco", "bench", "codec", "--count", "2^22", "--iters", "5",
                        "--codec", "taco,none", "--json", str(js)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(js.read_text())
    assert res["mode"] == "gpu" and res["count"] == 1 << 22
    assert set(res["memcpy"]) == {"fp32", "bf16", "fp16"}
    for row in res["rows"]:
        if row["supported"]:
            assert row["compress_vs_memcpy"] > 0 and row["decompress_vs_memcpy"] > 0
            assert 0 <= row["nmse"] < 0.01
    taco_bf16 = next(row for row in res["rows"] if row["codec"] == "taco" and row["dtype"] == "bf16")
    x = np.random.default_rng(0).laplace(size=1 << 22).astype(np.float32).astype(ml_dtypes.bfloat16)
    y = taco.decompress(taco.compress(x, "taco"), "taco", x.size, "bfloat16")
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    assert taco_bf16["nmse"] == pytest.approx(((yf - xf) ** 2).sum() / (xf ** 2).sum(), rel=1e-9)

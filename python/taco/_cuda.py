"""The little of CUDA the binding needs outside libtaco, through ctypes:
device discovery (driver API, always present with a GPU driver) and stream
ordering between a producer's stream and ours (runtime API, from the copy of
libcudart already loaded by CuPy/PyTorch when there is one).

Nothing here is imported eagerly by the binding: machines without CUDA never
load any of it.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os

# CUDA runtime constants (cuda_runtime_api.h; stable across versions)
cudaSuccess = 0
cudaEventDisableTiming = 0x2
cudaDevAttrComputeCapabilityMajor = 75
cudaDevAttrComputeCapabilityMinor = 76


class CudaUnavailable(RuntimeError):
    pass


# ------------------------------------------------------------------ driver


@functools.lru_cache(maxsize=None)
def _driver():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if cu.cuInit(0) != 0:
        return None
    return cu


def device_count() -> int:
    """Number of CUDA devices visible to this process (0 without a driver)."""
    cu = _driver()
    if cu is None:
        return 0
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0:
        return 0
    return n.value


def driver_version() -> int | None:
    cu = _driver()
    if cu is None:
        return None
    v = ctypes.c_int(0)
    return v.value if cu.cuDriverGetVersion(ctypes.byref(v)) == 0 else None


def devices() -> list[dict]:
    """[{index, name, memory_bytes, compute_capability}] via the driver API."""
    cu = _driver()
    out = []
    for i in range(device_count()):
        dev = ctypes.c_int(0)
        if cu.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        name = ctypes.create_string_buffer(256)
        cu.cuDeviceGetName(name, 256, dev)
        mem = ctypes.c_size_t(0)
        cu.cuDeviceTotalMem_v2(ctypes.byref(mem), dev)
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        cu.cuDeviceGetAttribute(ctypes.byref(major), cudaDevAttrComputeCapabilityMajor, dev)
        cu.cuDeviceGetAttribute(ctypes.byref(minor), cudaDevAttrComputeCapabilityMinor, dev)
        out.append({
            "index": i,
            "name": name.value.decode(errors="replace"),
            "memory_bytes": mem.value,
            "compute_capability": f"{major.value}.{minor.value}",
        })
    return out


# ------------------------------------------------------------------ runtime


def _loaded_cudart_paths() -> list[str]:
    """libcudart copies already mapped into this process (CuPy's, PyTorch's)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart.so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _cudart_candidates() -> list[str]:
    cands = _loaded_cudart_paths()
    cands += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for mod in ("nvidia.cu13", "nvidia.cuda_runtime"):
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec and spec.submodule_search_locations:
            for d in spec.submodule_search_locations:
                cands += sorted(glob.glob(os.path.join(d, "lib", "libcudart.so*")))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            cands += sorted(glob.glob(os.path.join(os.environ[env], "lib64", "libcudart.so*")))
    cands += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))
    return cands


@functools.lru_cache(maxsize=None)
def cudart():
    """A CUDA runtime library handle (ctypes), or raise CudaUnavailable."""
    for c in _cudart_candidates():
        try:
            rt = ctypes.CDLL(c)
        except OSError:
            continue
        rt.cudaGetErrorString.restype = ctypes.c_char_p
        return rt
    raise CudaUnavailable("no CUDA runtime library (libcudart) could be loaded")


def _rt_check(err: int, what: str) -> None:
    if err != cudaSuccess:
        msg = cudart().cudaGetErrorString(err)
        raise CudaUnavailable(f"{what} failed: CUDA error {err} ({msg.decode() if msg else '?'})")


def stream_wait_stream(consumer: int, producer: int) -> None:
    """Make `consumer` wait for the work enqueued so far on `producer`.

    The CUDA Array Interface v3 contract: the consumer synchronises with the
    producer's stream before touching the data.
    """
    if consumer == producer:
        return
    try:
        rt = cudart()
    except CudaUnavailable:
        _stream_wait_via_framework(consumer, producer)
        return
    ev = ctypes.c_void_p()
    _rt_check(rt.cudaEventCreateWithFlags(ctypes.byref(ev), cudaEventDisableTiming),
              "cudaEventCreateWithFlags")
    try:
        _rt_check(rt.cudaEventRecord(ev, ctypes.c_void_p(producer)), "cudaEventRecord")
        _rt_check(rt.cudaStreamWaitEvent(ctypes.c_void_p(consumer), ev, 0), "cudaStreamWaitEvent")
    finally:
        rt.cudaEventDestroy(ev)  # deferred by CUDA until the wait has resolved


class _StreamRef:
    """A raw cudaStream_t offered through the CUDA stream protocol (`__cuda_stream__`)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.ptr)


def cupy_stream(cupy, handle: int, device: int = -1):
    """A CuPy stream object for a raw cudaStream_t `handle` on `device` (-1: the current one).
    Make `device` current before using it: CuPy's `Stream.from_external` does not record the
    device. The legacy (0, 1) and per-thread (2) default streams map to CuPy's own; CuPy
    before 14, without `from_external`, gets `ExternalStream` (deprecated since CuPy 14)."""
    if handle in (0, 1):
        return cupy.cuda.Stream.null
    if handle == 2:
        return cupy.cuda.Stream.ptds
    from_external = getattr(cupy.cuda.Stream, "from_external", None)
    if from_external is not None:
        return from_external(_StreamRef(handle))
    return cupy.cuda.ExternalStream(handle, device)


def _stream_wait_via_framework(consumer: int, producer: int) -> None:
    """The same through CuPy or PyTorch, when no libcudart can be opened directly."""
    try:
        import cupy

        ev = cupy.cuda.Event(disable_timing=True)
        ev.record(cupy_stream(cupy, producer))
        cupy_stream(cupy, consumer).wait_event(ev)
        return
    except ImportError:
        pass
    try:
        import torch

        ev = torch.cuda.Event()
        ev.record(torch.cuda.ExternalStream(producer))
        torch.cuda.ExternalStream(consumer).wait_event(ev)
        return
    except ImportError:
        pass
    raise CudaUnavailable("cannot order streams: no libcudart, CuPy or PyTorch")


def runtime_version() -> int | None:
    try:
        rt = cudart()
    except CudaUnavailable:
        return None
    v = ctypes.c_int(0)
    return v.value if rt.cudaRuntimeGetVersion(ctypes.byref(v)) == 0 else None

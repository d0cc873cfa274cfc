"""Turning user arrays into what the C API takes: (pointer, count, dtype, where, stream).

Accepted: numpy arrays (host), PyTorch tensors (CPU or CUDA), CuPy arrays, any
object with `__cuda_array_interface__` (v3, honouring its `stream`), and any
object with `__dlpack__` / `__dlpack_device__` (the consumer's stream is passed
to `__dlpack__`, per the DLPack protocol). Arrays must be C-contiguous.

Streams: an explicit `stream=` (int handle, CuPy Stream, torch Stream, or an
object with `__cuda_stream__`) wins. Otherwise the call runs on the producer's
stream: torch's current stream for torch tensors, CuPy's current stream for CuPy
arrays, the CAI `stream` field when present, and the legacy default stream
otherwise. When both are given for a CAI object, our stream waits for the
producer's (an event), as the CAI v3 contract asks of consumers.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import numbers
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cffi import FFI

from . import _lib

# ------------------------------------------------------------------ dtypes

# canonical names of the taco dtypes, keyed by their tacoDataType_t enum name
_TACO_DTYPE_ENUM = {"float32": "tacoFloat32", "float16": "tacoFloat16", "bfloat16": "tacoBfloat16"}
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
_ALIASES = {
    "float32": "float32", "fp32": "float32", "f32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "f16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
}


def _invalid(msg: str) -> Exception:
    from .errors import InvalidArgumentError

    code = _lib.enum_values("tacoResult_t")["tacoInvalidArgument"]
    return InvalidArgumentError(code, msg, "tacoInvalidArgument")


def dtype_name(dtype: Any) -> str:
    """Canonical taco dtype name ("float32", "float16", "bfloat16") of `dtype`:
    a string alias, a numpy / ml_dtypes / torch dtype, or a tacoDataType_t value."""
    if isinstance(dtype, str):
        key = dtype.lower().replace("torch.", "")
        if key in _ALIASES:
            return _ALIASES[key]
    elif isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        for name, enum in _TACO_DTYPE_ENUM.items():
            if _lib.enum_values("tacoDataType_t")[enum] == int(dtype):
                return name
    else:
        s = str(dtype).replace("torch.", "")
        if s in _ALIASES:
            return _ALIASES[s]
        try:
            nd = np.dtype(dtype)
        except TypeError:
            nd = None
        if nd is not None and nd.name in _ALIASES:
            if not nd.isnative:  # as the string '>f4' is refused: outputs are native
                raise _invalid(f"dtype {dtype!r} is not in native byte order")
            return _ALIASES[nd.name]
    raise _invalid(f"dtype {dtype!r} is not supported (float32, float16 or bfloat16)")


def taco_dtype(dtype: Any) -> int:
    """The tacoDataType_t value of `dtype` (see dtype_name)."""
    return _lib.enum_values("tacoDataType_t")[_TACO_DTYPE_ENUM[dtype_name(dtype)]]


def itemsize(dtype: Any) -> int:
    return _ITEMSIZE[dtype_name(dtype)]


def numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


# element kinds we recognise on arrays: a taco dtype name, "raw16" (a 16-bit
# integer that may carry bf16/fp16 bits when dtype= says so), "uint8", or other
def _kind_from_numpy(dt: np.dtype) -> str:
    if dt.name in ("float32", "float16", "bfloat16"):
        return dt.name
    if dt.kind in "iuV" and dt.itemsize == 2:
        return "raw16"
    return dt.name


def _kind_from_torch(dt: Any) -> str:
    s = str(dt).replace("torch.", "")
    if s in ("float32", "float16", "bfloat16", "uint8"):
        return s
    if s in ("int16", "uint16"):
        return "raw16"
    return s


# ------------------------------------------------------------------ streams

LEGACY_STREAM = 0  # NULL: the legacy default stream (cudaStreamLegacy is 1)


def stream_handle(stream: Any) -> int | None:
    """An integer cudaStream_t from an int, a CuPy or torch Stream, or an object
    implementing `__cuda_stream__`. None stays None."""
    if stream is None:
        return None
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
        return int(stream)
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream / ExternalStream
        return int(stream.cuda_stream)
    if hasattr(stream, "ptr"):  # cupy.cuda.Stream
        return int(stream.ptr)
    handle = getattr(stream, "handle", None)  # numba: a ctypes c_void_p
    if handle is not None:
        return int(getattr(handle, "value", handle) or 0)
    raise TypeError(f"stream: expected an int handle, a CuPy or torch stream, got {type(stream).__name__}")


def _same_stream(a: int, b: int) -> bool:
    legacy = (0, 1)
    return a == b or (a in legacy and b in legacy)


# ------------------------------------------------------------------ DLPack

_DLPACK_CDEF = """
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor; void* manager_ctx; void (*deleter)(struct DLManagedTensor*);
} DLManagedTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned*); uint64_t flags; DLTensor dl_tensor;
} DLManagedTensorVersioned;
"""
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat = 0, 1, 2, 4
DLPACK_FLAG_BITMASK_READ_ONLY = 1


@functools.lru_cache(maxsize=None)
def _dlffi() -> FFI:
    f = FFI()
    f.cdef(_DLPACK_CDEF)
    return f


@functools.lru_cache(maxsize=None)
def _capsule_api():
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    return api


def _kind_from_dl(code: int, bits: int, lanes: int) -> str:
    if lanes != 1:
        return f"dlpack(code={code},bits={bits},lanes={lanes})"
    if code == kDLFloat and bits in (32, 16):
        return "float32" if bits == 32 else "float16"
    if code == kDLBfloat and bits == 16:
        return "bfloat16"
    if code in (kDLInt, kDLUInt) and bits == 16:
        return "raw16"
    if code == kDLUInt and bits == 8:
        return "uint8"
    return f"dlpack(code={code},bits={bits})"


def _c_contiguous(shape, strides_elems) -> bool:
    if strides_elems is None:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides_elems)):
        if n == 0:
            return True
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


# ------------------------------------------------------------------ the buffer


@dataclass
class Buf:
    """A user array seen by the C API."""

    obj: Any                 # the user's object
    ptr: int                 # address of the first element
    nbytes: int
    count: int               # elements (== nbytes for byte buffers)
    kind: str                # element kind (see _kind_from_numpy)
    device: int | None       # CUDA device index; None: host memory
    framework: str           # "numpy", "torch", "cupy", "cai", "dlpack"
    stream: int | None = None  # the stream the call runs on (device only)
    readonly: bool = False
    keepalive: list = field(default_factory=list)
    ndim: int = 1

    @property
    def is_device(self) -> bool:
        return self.device is not None


def _framework(x: Any) -> str | None:
    mod = type(x).__module__ or ""
    if isinstance(x, np.ndarray):
        return "numpy"
    # A subclass of torch.Tensor (defined anywhere) is a tensor too: taken as a DLPack object it
    # lost torch's outputs, stream and autograd checks (an overwritten saved tensor, a wrong
    # gradient). torch is loaded if x is one.
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(x, torch.Tensor)) or (mod.startswith("torch") and hasattr(x, "data_ptr")):
        return "torch"
    if mod.startswith("cupy") and hasattr(x, "data") and hasattr(x, "device"):
        return "cupy"
    if hasattr(x, "__cuda_array_interface__"):
        return "cai"
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return "dlpack"
    return None


def _check_byte_order(dt: np.dtype, name: str) -> None:
    """libtaco reads and writes native (little-endian) elements. A byte-swapped array is
    refused rather than converted: a converted copy could not serve as an output, and a
    silent copy of an input would hide a cost the caller did not ask for."""
    if not dt.isnative:
        raise _invalid(f"{name}: dtype {dt.str!r} is not in native byte order "
                       f"(convert with .astype({dt.newbyteorder('=').str!r}))")


def describe(x: Any, name: str, *, stream: int | None = None) -> Buf:
    """Read pointer, size, element kind, location and stream off `x`.

    `stream`: the consumer stream if already decided (explicit `stream=`, or the
    stream of the call's first array); None lets the producer's stream decide.
    Raises TypeError for objects that are not arrays, InvalidArgumentError (a
    ValueError) for non-contiguous ones.
    """
    fw = _framework(x)
    if fw is None:
        raise TypeError(
            f"{name}: expected a numpy array, CuPy array, torch tensor, or an object with "
            f"__cuda_array_interface__ or __dlpack__; got {type(x).__name__}"
        )
    if fw == "numpy":
        if isinstance(x, np.ma.MaskedArray):
            raise _invalid(f"{name}: is a masked array: libtaco would read its data and ignore the mask "
                           f"(pass x.filled(value), or x.data)")
        if not x.flags.c_contiguous:
            raise _invalid(f"{name}: array is not C-contiguous (use numpy.ascontiguousarray)")
        _check_byte_order(x.dtype, name)
        b = Buf(x, x.__array_interface__["data"][0], x.nbytes, x.size, _kind_from_numpy(x.dtype),
                None, fw, readonly=not x.flags.writeable, ndim=x.ndim)
    elif fw == "torch":
        where = x.device.type
        if where not in ("cpu", "cuda"):  # meta has no memory; mps, xpu, ... are not host memory
            raise _invalid(f"{name}: tensor is on device {x.device}; libtaco takes CPU and CUDA tensors")
        if not x.is_contiguous():
            raise _invalid(f"{name}: tensor is not contiguous (use .contiguous())")
        # A lazily negated view (the imaginary part of a conjugated tensor) holds its values
        # without the sign: its memory is not what it reads as.
        if getattr(x, "is_neg", None) is not None and x.is_neg():
            raise _invalid(f"{name}: tensor has its negative bit set (a lazy negation: its memory holds "
                           f"the values without the sign); use .resolve_neg()")
        dev = x.device.index if where == "cuda" else None
        if where == "cuda" and dev is None:
            import torch

            dev = torch.cuda.current_device()
        b = Buf(x, x.data_ptr(), x.numel() * x.element_size(), x.numel(), _kind_from_torch(x.dtype),
                dev, fw, ndim=x.dim())
        if b.is_device and stream is None:
            import torch

            stream = torch.cuda.current_stream(x.device).cuda_stream
    elif fw == "cupy":
        if not x.flags.c_contiguous:
            raise _invalid(f"{name}: array is not C-contiguous (use cupy.ascontiguousarray)")
        b = Buf(x, x.data.ptr, x.nbytes, x.size, _kind_from_numpy(x.dtype), x.device.id, fw, ndim=x.ndim)
        if stream is None:
            import cupy

            with x.device:
                stream = cupy.cuda.get_current_stream().ptr
    elif fw == "cai":
        b, stream = _describe_cai(x, name, stream)
    else:
        b, stream = _describe_dlpack(x, name, stream)
    if b.is_device:
        b.stream = LEGACY_STREAM if stream is None else stream
    return b


def describe_wire(x: Any, name: str, *, stream: int | None = None) -> Buf:
    """A compressed buffer: a 1-D uint8 array (any framework `describe` takes), or a bytes-like
    object (bytes, bytearray, a 1-D memoryview of bytes) in host memory. Any other element type
    or shape is refused by name: a float32 or 2-D view of wire bytes is a mistake, not a wire."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        m = memoryview(x)
        if m.format not in ("B", "b", "c") or m.ndim != 1:
            raise _invalid(f"{name}: memoryview of format {m.format!r} and {m.ndim} dimensions is not a "
                           f"compressed buffer (1-D bytes)")
        if not m.contiguous:
            raise _invalid(f"{name}: memoryview is not contiguous")
        b = describe(np.frombuffer(m, np.uint8), name, stream=stream)  # a view, writable when m is
        b.keepalive.append(b.obj)
        b.obj = x
        return b
    b = describe(x, name, stream=stream)
    if b.kind != "uint8":
        raise _invalid(f"{name}: element type {b.kind} is not a compressed buffer (a 1-D uint8 array or a "
                       f"bytes-like object)")
    if b.ndim != 1:
        raise _invalid(f"{name}: has {b.ndim} dimensions; a compressed buffer is a 1-D uint8 array")
    return b


def check_count(count: Any, name: str = "count", minimum: int = 1) -> int:
    """`count` as an int in [minimum, 2^64): an element count for the C API (size_t)."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(f"{name}: expected an integer, got {type(count).__name__}")
    n = int(count)
    if n < minimum:
        raise _invalid(f"{name}: {n} is " + ("negative" if n < 0 else f"less than {minimum}"))
    if n >= 1 << 64:
        raise _invalid(f"{name}: {n} does not fit in size_t")
    return n


def _describe_cai(x: Any, name: str, stream: int | None) -> tuple[Buf, int | None]:
    cai = x.__cuda_array_interface__
    shape = tuple(cai["shape"])
    dt = np.dtype(cai["typestr"])
    _check_byte_order(dt, name)
    strides = cai.get("strides")
    if cai.get("mask") is not None:
        raise _invalid(f"{name}: masked CUDA arrays are not supported")
    if strides is not None:  # bytes -> elements; a stride that is no multiple can only be fine on a size-1 dim
        strides = tuple(s // dt.itemsize if s % dt.itemsize == 0 else -1 for s in strides)
    if not _c_contiguous(shape, strides):
        raise _invalid(f"{name}: array is not C-contiguous (strides {cai.get('strides')})")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    ptr, readonly = cai["data"]
    b = Buf(x, int(ptr or 0), count * dt.itemsize, count, _kind_from_numpy(dt), _current_device(),
            "cai", readonly=bool(readonly), ndim=len(shape))
    producer = cai.get("stream") if cai.get("version", 0) >= 3 else None
    if producer is not None:
        if producer == 0:
            raise _invalid(f"{name}: __cuda_array_interface__ stream 0 is disallowed by the CAI spec")
        if stream is None:
            stream = int(producer)  # run on the producer's stream: ordered by construction
        elif not _same_stream(stream, producer):
            from . import _cuda

            _cuda.stream_wait_stream(stream, int(producer))
    return b, stream


def _describe_dlpack(x: Any, name: str, stream: int | None) -> tuple[Buf, int | None]:
    dev_type, dev_id = x.__dlpack_device__()
    dev_type, dev_id = int(dev_type), int(dev_id)
    on_device = dev_type in (kDLCUDA, kDLCUDAManaged)
    if not on_device and dev_type not in (kDLCPU, kDLCUDAHost):
        raise _invalid(f"{name}: DLPack device type {dev_type} is not CPU or CUDA")
    if on_device:
        if stream is None:
            stream = LEGACY_STREAM
        # DLPack: 1 is the legacy default stream, 0 is disallowed for CUDA
        consumer = 1 if stream == 0 else stream
        kwargs = {"stream": consumer}
    else:
        kwargs = {"stream": None}
    try:
        capsule = x.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # producer predates DLPack 1.0's max_version
        capsule = x.__dlpack__(**kwargs)
    api = _capsule_api()
    cname = api.PyCapsule_GetName(capsule)
    f = _dlffi()
    if cname == b"dltensor_versioned":
        m = f.cast("DLManagedTensorVersioned*", api.PyCapsule_GetPointer(capsule, cname))
        t = m.dl_tensor
        readonly = bool(m.flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    elif cname == b"dltensor":
        m = f.cast("DLManagedTensor*", api.PyCapsule_GetPointer(capsule, cname))
        t = m.dl_tensor
        readonly = False
    else:
        raise _invalid(f"{name}: __dlpack__ returned a capsule named {cname!r}")
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    strides = None if t.strides == f.NULL else tuple(t.strides[i] for i in range(ndim))
    if not _c_contiguous(shape, strides):
        raise _invalid(f"{name}: array is not C-contiguous (strides {strides})")
    kind = _kind_from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    count = 1
    for n in shape:
        count *= n
    isz = (t.dtype.bits * t.dtype.lanes + 7) // 8
    ptr = int(f.cast("uintptr_t", t.data)) + int(t.byte_offset)
    b = Buf(x, ptr, count * isz, count, kind, dev_id if on_device else None, "dlpack",
            readonly=readonly, keepalive=[capsule], ndim=ndim)  # the capsule owns the memory view
    return b, stream


def _current_device() -> int:
    """The current CUDA device of this thread (for CAI objects, which do not say)."""
    from . import _cuda

    try:
        rt = _cuda.cudart()
    except _cuda.CudaUnavailable:
        return 0
    d = ctypes.c_int(0)
    return d.value if rt.cudaGetDevice(ctypes.byref(d)) == 0 else 0


# ------------------------------------------------------------------ checks


def check_data(b: Buf, name: str, dtype: Any = None) -> str:
    """The taco dtype name of data array `b`; `dtype` (optional) is what the caller
    said it holds, required for raw 16-bit integer arrays (bf16 bits in CuPy)."""
    if dtype is not None:
        want = dtype_name(dtype)
        if b.kind == want or (b.kind == "raw16" and _ITEMSIZE[want] == 2):
            return want
        raise _invalid(f"{name}: element type {b.kind} does not hold {want} data")
    if b.kind in _ITEMSIZE:
        return b.kind
    if b.kind == "raw16":
        raise _invalid(f"{name}: 16-bit integer array: pass dtype='bfloat16' (or 'float16') to "
                       f"say what its bits are")
    raise _invalid(f"{name}: element type {b.kind} is not supported (float32, float16 or bfloat16)")


def check_writable(b: Buf, name: str) -> None:
    if b.readonly:
        raise _invalid(f"{name}: array is read-only")
    if b.framework == "torch":
        check_grad_write(b.obj, name)


def check_grad_write(t: Any, name: str) -> None:
    """Refuse to write into torch tensor `t` in place where torch would: a leaf that requires grad,
    or a view of one, with grad mode on (the write goes through its pointer, which autograd cannot
    see)."""
    if not t.requires_grad:
        return
    import torch

    if not torch.is_grad_enabled():
        return
    if t.is_leaf:
        raise _invalid(f"{name}: is a leaf tensor that requires grad; it cannot be written in place "
                       f"(use torch.no_grad(), or pass a tensor that does not require grad)")
    if leaf_view(t):
        raise _invalid(f"{name}: is a view of a leaf tensor that requires grad; it cannot be written in place "
                       f"(use torch.no_grad(), or pass a tensor that does not require grad)")


def leaf_view(t: Any) -> bool:
    """Torch tensor `t` is a view of a leaf that requires grad (torch refuses it as an in-place target)."""
    b = getattr(t, "_base", None)
    return b is not None and b.is_leaf and b.requires_grad


def mark_written(b: Buf | None) -> None:
    """Tell autograd that torch tensor b was written in place (see bump_version)."""
    if b is not None and b.framework == "torch":
        bump_version(b.obj)


def bump_version(t: Any) -> None:
    """Increment torch tensor t's version counter, as torch's own in-place operations do, so that a
    backward that saved t refuses to use what libtaco wrote into it through its pointer."""
    if not t.is_inference():  # an inference tensor has no version counter
        _increment_version()(t)


@functools.lru_cache(maxsize=None)
def _increment_version():
    import torch

    inc = getattr(torch.autograd.graph, "increment_version", None)  # torch >= 2.1
    if inc is None:
        inc = getattr(torch._C, "_increment_version", None)  # older torch: one tensor
    return inc if inc is not None else (lambda t: None)


def check_same_place(bufs: list[tuple[str, Buf]]) -> bool:
    """All host or all device (same device); returns True for device."""
    first_name, first = bufs[0]
    for name, b in bufs[1:]:
        if b.is_device != first.is_device:
            where = lambda z: "device" if z.is_device else "host"  # noqa: E731
            raise _invalid(f"{name}: is in {where(b)} memory but {first_name} is in {where(first)} memory")
        if b.is_device and b.device != first.device:
            raise _invalid(f"{name}: is on CUDA device {b.device} but {first_name} is on {first.device}")
    return first.is_device


def check_no_overlap(out_name: str, out: Buf, out_bytes: int, in_name: str, other: Buf | None,
                     other_bytes: int, *, same_ok: bool = False) -> None:
    """Output `out` must share no byte with `other` (the first `*_bytes` of each are what the
    call touches); `same_ok`: the two may be the very same range (in-place accumulation).
    The C functions check this too; checking here names the Python arguments."""
    if other is None or out_bytes == 0 or other_bytes == 0:
        return
    if same_ok and out.ptr == other.ptr and out_bytes == other_bytes:
        return
    if out.ptr < other.ptr + other_bytes and other.ptr < out.ptr + out_bytes:
        raise _invalid(f"{out_name}: overlaps {in_name} (bytes [{out.ptr:#x}, +{out_bytes}) and "
                       f"[{other.ptr:#x}, +{other_bytes}))" + (f"; only {out_name} is {in_name} is allowed"
                                                                 if same_ok else ""))


# ------------------------------------------------------------------ allocation


def _importable(module: str):
    try:
        return __import__(module)
    except ImportError:
        return None


def _torch_stream(torch, handle: int, dev):
    if handle in (0, 1):
        return torch.cuda.default_stream(dev)  # torch's default stream is the legacy NULL stream
    return torch.cuda.ExternalStream(handle, device=dev)


def alloc(like: Buf, count: int, dtype: str | None, name: str) -> Any:
    """A new C-contiguous 1-D array of `count` elements (`dtype` a taco dtype name,
    None for uint8 bytes) in the framework and place of `like`: numpy for numpy,
    torch for torch, CuPy for CuPy, and CuPy (else torch) for CAI/DLPack objects.
    Device arrays are allocated on `like.stream`, so that the caching allocators
    order any reuse of the memory after our kernel. CuPy has no bfloat16: bf16
    outputs are uint16 arrays holding the bits."""
    if not like.is_device:
        if like.framework == "torch":
            import torch

            return torch.empty(count, dtype=torch.uint8 if dtype is None else getattr(torch, dtype))
        return np.empty(count, dtype=np.uint8 if dtype is None else numpy_dtype(dtype))
    order = {"torch": ("torch",), "cupy": ("cupy",)}.get(like.framework, ("cupy", "torch"))
    for fw in order:
        mod = _importable(fw)
        if mod is None:
            continue
        if fw == "torch":
            dev = mod.device("cuda", like.device)
            tdt = mod.uint8 if dtype is None else getattr(mod, dtype)
            with mod.cuda.stream(_torch_stream(mod, like.stream or 0, dev)):
                return mod.empty(count, dtype=tdt, device=dev)
        from ._cuda import cupy_stream

        ndt = np.uint8 if dtype is None else (np.uint16 if dtype == "bfloat16" else np.dtype(dtype))
        with mod.cuda.Device(like.device), cupy_stream(mod, like.stream or 0, like.device):
            return mod.empty(count, dtype=ndt)
    raise _invalid(f"{name}: cannot allocate a device output without CuPy or PyTorch: pass out=")


@contextlib.contextmanager
def device_of(b: Buf):
    """Make b's device current for the duration (a no-op on host or when it already is)."""
    if not b.is_device:
        yield
        return
    from . import _cuda

    try:
        rt = _cuda.cudart()
    except _cuda.CudaUnavailable:
        yield
        return
    cur = ctypes.c_int(0)
    rt.cudaGetDevice(ctypes.byref(cur))
    if cur.value == b.device:
        yield
        return
    rt.cudaSetDevice(b.device)
    try:
        yield
    finally:
        rt.cudaSetDevice(cur.value)

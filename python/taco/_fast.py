"""The per-call fast path of the collectives for torch tensors and CuPy arrays.

`Communicator.allreduce` and friends first try `call` here. For a C-contiguous CUDA torch
tensor or CuPy array on the current device it reads the pointer, size and dtype straight off
the array, takes the framework's current stream (or `stream=` when `out` is given), allocates
the output with the framework's allocator only when `out` is not given, and calls libtaco
through cffi functions whose pointer arguments are declared as integers, so no cffi cast,
DLPack capsule or ctypes call happens per call. Anything else (host arrays, other devices,
another dtype, a size the collective refuses, a closed communicator, other array types)
returns SLOW, and the general path in comm.py handles it, with its error messages.

The integer declarations are derived from taco.h's own (`_lib.ffi()`): every pointer
argument becomes uintptr_t and every enum int, which the C calling convention passes the
same way on the 64-bit platforms libtaco builds for.
"""
from __future__ import annotations

import functools
import sys

import cffi
import numpy as np

from . import _lib
from ._arrays import leaf_view

SLOW = object()  # "not handled here": the caller takes the general path

# collective kinds, indexing _FUNCS; the first two take a tacoRedOp_t
ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL = 0, 1, 2, 3
_FUNCS = ("tacoAllReduce", "tacoReduceScatter", "tacoAllGather", "tacoAlltoAll")


def _int_decl(ffi, name: str) -> str:
    """`name`'s declaration from taco.h with pointers as uintptr_t and enums as int."""
    t = ffi.typeof(getattr(_lib.lib(), name))
    args = []
    for a in t.args:
        if a.kind == "pointer":
            args.append("uintptr_t")
        elif a.kind == "enum":
            args.append("int")
        elif a.kind == "primitive":
            args.append(a.cname)
        else:
            raise RuntimeError(f"{name}: argument type {a.cname} has no integer form")
    if t.result.kind not in ("enum", "primitive"):
        raise RuntimeError(f"{name}: result type {t.result.cname} has no integer form")
    return f"int {name}({', '.join(args)});"


@functools.lru_cache(maxsize=None)
def int_functions() -> tuple:
    """(tacoAllReduce, tacoReduceScatter, tacoAllGather, tacoAlltoAll) taking integers for
    every pointer and enum, from the same loaded libtaco."""
    decls = "\n".join(_int_decl(_lib.ffi(), n) for n in _FUNCS)
    f = cffi.FFI()
    f.cdef(decls)
    lib = f.dlopen(_lib.library_path())
    _KEEP.append((f, lib))  # the functions live as long as their FFI and library
    return tuple(getattr(lib, n) for n in _FUNCS)


_KEEP: list = []


@functools.lru_cache(maxsize=None)
def _consts() -> tuple:
    dt = _lib.enum_values("tacoDataType_t")
    return dt["tacoFloat32"], dt["tacoFloat16"], dt["tacoBfloat16"], _lib.enum_values("tacoRedOp_t")["tacoSum"]


def _handle_int(comm) -> int:
    """The communicator's tacoComm_t as an int, cached on it (a live handle never changes)."""
    h = comm.__dict__.get("_fast_handle")
    if h is None:
        h = int(_lib.ffi().cast("uintptr_t", comm._h))
        comm._fast_handle = h
    return h


def _nranks(comm) -> int:
    p = comm.__dict__.get("_fast_nranks")
    if p is None:
        p = comm._fast_nranks = comm.size
    return p


_DTYPE_ARGS: dict = {}


def _dtype_arg(dtype) -> int | None:
    """The tacoDataType_t of a `dtype=` argument, None when it names no taco dtype."""
    if isinstance(dtype, bool):  # True == 1 as a dict key: never confuse it with tacoDataType_t 1
        return None
    try:
        return _DTYPE_ARGS[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable: the general path says what is wrong with it
        return None
    from ._arrays import taco_dtype

    try:
        dt = taco_dtype(dtype)
    except Exception:  # noqa: BLE001 - the general path raises the error with its message
        return None
    if len(_DTYPE_ARGS) < 256:
        _DTYPE_ARGS[dtype] = dt
    return dt


def _out_shape(kind: int, shape: tuple, n: int, P: int) -> tuple:
    if kind == ALLGATHER:
        return (P, *shape)
    if kind == REDUCE_SCATTER:
        return (n // P,)
    return shape


def _result(kind: int, out, shape, P: int):
    """What the collective returns for an `out` the caller gave: `out`, viewed with the shape the
    general path gives (x's shape; (P, *x.shape) for an all-gather) when its own differs."""
    want = (P, *shape) if kind == ALLGATHER else shape
    if out.shape == want:
        return out
    try:
        return out.reshape(want)
    except Exception:  # noqa: BLE001 - a shape out cannot take: returned as given, like the general path
        return out


# ------------------------------------------------------------------ torch


class _Torch:
    """What the fast path needs from torch, looked up once."""

    def __init__(self, torch):
        f32, f16, bf16, self.op_sum = _consts()
        self.dt = {torch.float32: f32, torch.float16: f16, torch.bfloat16: bf16}
        C = torch._C
        self.get_device = getattr(C, "_cuda_getDevice", None) or torch.cuda.current_device
        raw = getattr(C, "_cuda_getCurrentRawStream", None)
        self.raw_stream = raw if raw is not None else (lambda d: torch.cuda.current_stream(d).cuda_stream)
        self.empty_like = torch.empty_like
        self.grad_enabled = torch.is_grad_enabled
        from ._arrays import bump_version

        self.bump_version = bump_version


class _Cupy:
    def __init__(self, cupy):
        f32, f16, bf16, self.op_sum = _consts()
        self.dt = {np.dtype(np.float32): f32, np.dtype(np.float16): f16}
        self.raw16 = (np.dtype(np.uint16), np.dtype(np.int16))
        self.f32 = f32
        # CuPy has no bfloat16: bf16 outputs are uint16 arrays holding the bits (as _arrays.alloc)
        self.out_dtype = {f32: np.dtype(np.float32), f16: np.dtype(np.float16), bf16: np.dtype(np.uint16)}
        self.get_device = cupy.cuda.runtime.getDevice
        self.current_stream = cupy.cuda.get_current_stream
        self.empty = cupy.empty

    def holds(self, array_dtype, dt: int) -> bool:
        """Whether an array of `array_dtype` holds taco dtype `dt` (given as dtype=)."""
        return self.dt.get(array_dtype) == dt or (array_dtype in self.raw16 and dt != self.f32)


# Made at the first call that needs them (module globals: a per-call lookup costs ~0.1 us).
_T: _Torch | None = None
_C: _Cupy | None = None
_FNS: tuple | None = None


def _torch_env() -> _Torch:
    global _T
    if _T is None:
        _T = _Torch(sys.modules["torch"])
    return _T


def _cupy_env() -> _Cupy:
    global _C
    if _C is None:
        _C = _Cupy(sys.modules["cupy"])
    return _C


def _fns() -> tuple:
    global _FNS
    if _FNS is None:
        _FNS = int_functions()
    return _FNS


def _sizes(comm, kind: int, n: int):
    """(P, output elements, the C call's count), or None when P does not divide n."""
    if kind == ALLREDUCE:
        return 1, n, n
    P = comm.__dict__.get("_fast_nranks") or _nranks(comm)
    if kind == ALLGATHER:
        return P, n * P, n
    if n % P:
        return None  # the general path says why
    return P, (n // P if kind == REDUCE_SCATTER else n), n // P


def _torch_call(comm, kind, x, out, dtype, stream):
    h = comm._h
    if h is None or not x.is_cuda or not x.is_contiguous() or x.is_neg():  # (the general path refuses
        return SLOW                                                          # a lazily negated view)
    dev = x.get_device()
    T = _T or _torch_env()
    xdt = x.dtype
    dt = T.dt.get(xdt)
    if dt is None or (dtype is not None and _dtype_arg(dtype) != dt) or dev != T.get_device():
        return SLOW
    n = x.numel()
    sizes = _sizes(comm, kind, n)
    if sizes is None:
        return SLOW
    P, on, count = sizes
    fresh = out is None
    if fresh:
        if stream is not None:
            return SLOW  # allocating on another stream: the general path orders the allocator
        out = T.empty_like(x) if kind in (ALLREDUCE, ALLTOALL) else x.new_empty(_out_shape(kind, x.shape, n, P))
    else:
        if ((out is not x or kind == ALLGATHER or kind == REDUCE_SCATTER)  # x as out has the size only where x's is
                and (out.numel() != on or out.dtype is not xdt or not out.is_cuda or out.get_device() != dev
                     or not out.is_contiguous() or _handler(type(out)) is not _torch_call)):
            return SLOW
        if out.requires_grad and T.grad_enabled() and (out.is_leaf or leaf_view(out)) or out.is_neg():
            return SLOW  # the general path refuses it, naming out
    if stream is None:
        s = T.raw_stream(dev)
    else:
        s = _stream_int(stream)
        if s is None:
            return SLOW
    fn = (_FNS or _fns())[kind]
    hp = comm.__dict__.get("_fast_handle") or _handle_int(comm)
    if kind <= REDUCE_SCATTER:
        rc = fn(x.data_ptr(), out.data_ptr(), count, dt, T.op_sum, hp, s)
    else:
        rc = fn(x.data_ptr(), out.data_ptr(), count, dt, hp, s)
    if rc:
        from .errors import check

        check(rc, h)
    if fresh:
        return out
    T.bump_version(out)  # written through its pointer: autograd must see the in-place write
    if out is x or kind == REDUCE_SCATTER:
        return out
    return _result(kind, out, x.shape, P)


def _cupy_call(comm, kind, x, out, dtype, stream):
    h = comm._h
    if h is None or not x._c_contiguous:
        return SLOW
    C = _C or _cupy_env()
    xdt = x.dtype
    if dtype is None:
        dt = C.dt.get(xdt)
    else:
        dt = _dtype_arg(dtype)
        if dt is not None and not C.holds(xdt, dt):
            dt = None
    if dt is None:
        return SLOW
    mp = x.data
    dev = mp.device_id
    if dev != C.get_device():
        return SLOW
    n = x.size
    sizes = _sizes(comm, kind, n)
    if sizes is None:
        return SLOW
    P, on, count = sizes
    fresh = out is None
    if fresh:
        if stream is not None:
            return SLOW  # allocating on another stream: the general path orders the allocator
        out = C.empty(_out_shape(kind, x.shape, n, P), dtype=xdt if dtype is None else C.out_dtype[dt])
    elif out is not x or kind == ALLGATHER or kind == REDUCE_SCATTER:  # x as out has the size only where x's is
        if (out.size != on or not out._c_contiguous or out.data.device_id != dev
                or not (out.dtype == xdt if dtype is None else C.holds(out.dtype, dt))
                or _handler(type(out)) is not _cupy_call):
            return SLOW
    if stream is None:
        s = C.current_stream().ptr
    else:
        s = _stream_int(stream)
        if s is None:
            return SLOW
    fn = (_FNS or _fns())[kind]
    hp = comm.__dict__.get("_fast_handle") or _handle_int(comm)
    if kind <= REDUCE_SCATTER:
        rc = fn(mp.ptr, out.data.ptr, count, dt, C.op_sum, hp, s)
    else:
        rc = fn(mp.ptr, out.data.ptr, count, dt, hp, s)
    if rc:
        from .errors import check

        check(rc, h)
    if fresh or out is x or kind == REDUCE_SCATTER:
        return out
    return _result(kind, out, x.shape, P)


# ------------------------------------------------------------------ dispatch

_KINDS: dict = {}  # array type -> handler (or None: not handled here)


def _classify(tp):
    handler = None
    torch = sys.modules.get("torch")
    if torch is not None and tp in (torch.Tensor, torch.nn.Parameter):
        handler = _torch_call
    cupy = sys.modules.get("cupy")
    if cupy is not None and tp is cupy.ndarray:
        handler = _cupy_call
    _KINDS[tp] = handler
    return handler


def _stream_int(stream) -> int | None:
    if type(stream) is int:
        return stream
    try:
        from ._arrays import stream_handle

        return stream_handle(stream)
    except Exception:  # noqa: BLE001 - the general path raises the error
        return None


def _handler(tp):
    return _KINDS[tp] if tp in _KINDS else _classify(tp)


def call(comm, kind: int, x, out, dtype, stream):
    """Run collective `kind` on the fast path, or return SLOW."""
    tp = type(x)
    handler = _KINDS[tp] if tp in _KINDS else _classify(tp)
    if handler is None:
        return SLOW
    return handler(comm, kind, x, out, dtype, stream)

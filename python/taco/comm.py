"""Communicators and collectives (libtaco's tacoComm* / tacoAllReduce ... API).

    import taco, cupy as cp
    comms = taco.loopback(4, codec="taco")          # 4 ranks on this GPU
    xs = [cp.random.standard_normal(1 << 20, dtype=cp.float32) for _ in comms]
    with taco.group():                               # one call per rank, launched together
        outs = [c.allreduce(x) for c, x in zip(comms, xs)]

    comm = taco.Communicator.from_mpi()              # one rank per process (mpi4py)
    y = comm.allreduce(x)                            # CuPy, torch or DLPack, on x's stream

`dtype=` says what 16-bit integer arrays hold (CuPy has no bfloat16). Collectives take device arrays (C-contiguous CuPy arrays, torch tensors, objects with
__cuda_array_interface__ or __dlpack__), run on `stream=` or the producer's stream,
and return `out` (allocated in x's framework when not given). Configuration keywords
(codec, chunk_bytes, fallback_bytes, pipeline_depth, check_consistency, algo) left out
take their TACO_* environment variables (docs/tuning.md). `algo` is the AllReduce
algorithm, one of ALGOS (the library's names, tacoAlgoName): "auto" lets the library pick
per call (`allreduce_algo` says which), the others force one (docs/collectives.md).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import numbers
import operator
import weakref
from typing import Any

from . import _fast, _lib
from ._arrays import (_invalid, alloc, check_data, check_writable, describe, device_of, mark_written, stream_handle,
                      taco_dtype)
from .codec import _spec_bytes, find_codec
from .errors import InvalidUsageError, check, error_name_and_class

__all__ = ["ALGOS", "Communicator", "get_unique_id", "loopback", "group", "register", "lookup"]

_CONFIG_FIELDS = {
    "codec": "codec",
    "chunk_bytes": "chunkBytes",
    "fallback_bytes": "fallbackBytes",
    "pipeline_depth": "pipelineDepth",
    "check_consistency": "checkConsistency",
    "algo": "algo",
}

@functools.lru_cache(maxsize=None)
def _algo_names() -> tuple[str, ...]:
    """The AllReduce algorithms by the library's names for them (tacoAlgoName, the names TACO_ALGO
    takes), in tacoAlgo_t order: the name of value v is _algo_names()[v]."""
    lib, f = _lib.lib(), _lib.ffi()
    return tuple(f.string(lib.tacoAlgoName(v)).decode() for v in range(lib.tacoNumAlgos))


def __getattr__(name: str) -> Any:
    # ALGOS is read from the library when first asked for, so importing taco loads nothing.
    if name == "ALGOS":
        return _algo_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _algo_value(name: Any) -> int:
    """The tacoAlgo_t value of an algorithm name (config `algo`)."""
    names = _algo_names()
    if not isinstance(name, str):
        raise TypeError(f"algo: expected an algorithm name ({', '.join(names)}), got {type(name).__name__}")
    if name not in names:
        raise _invalid(f"algo: unknown AllReduce algorithm {name!r}; expected one of {', '.join(names)}")
    return names.index(name)


def _algo_name(value: int) -> str:
    """The name of a tacoAlgo_t value."""
    names = _algo_names()
    if not 0 <= int(value) < len(names):
        raise RuntimeError(f"libtaco returned AllReduce algorithm {value}, which it has no name for")
    return names[int(value)]


_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_SIZE_MAX = (1 << 64) - 1

# The integer keywords: (smallest, largest) value of the field's C type, and its "unset" value
# (TACO_CONFIG_UNDEF_SIZE, TACO_CONFIG_UNDEF_INT), which a number given must not mean: unset is None.
_INT_FIELDS = {
    "chunk_bytes": (0, _SIZE_MAX, _SIZE_MAX),
    "fallback_bytes": (0, _SIZE_MAX, _SIZE_MAX),
    "pipeline_depth": (_INT_MIN, _INT_MAX, _INT_MIN),
    "check_consistency": (_INT_MIN, _INT_MAX, _INT_MIN),
}


# The values the library takes (tacoCommInit*: chunkBytes 1..2^48, pipelineDepth 1..16), checked
# here too so that taco.c10d.Options and init() refuse them when they are given, naming the keyword.
_VALID = {"chunk_bytes": (1, 1 << 48), "pipeline_depth": (1, 16)}


def _int_arg(value: Any, name: str, lo: int, hi: int, *, bools: bool = False) -> int:
    """`value` as an int in [lo, hi]; a float, a string or a bool (unless `bools`) is refused
    rather than truncated or parsed, naming `name`."""
    if isinstance(value, bool) and not bools:
        raise _invalid(f"{name}: expected an integer, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise _invalid(f"{name}: expected an integer, got {type(value).__name__} {value!r}") from None
    if not lo <= n <= hi:
        raise _invalid(f"{name}: {n} is outside [{lo}, {hi}]")
    return n


def _config(config: dict):
    """(tacoConfig_t*, keepalive) from keyword arguments."""
    unknown = set(config) - set(_CONFIG_FIELDS)
    if unknown:
        raise TypeError(f"unknown communicator option(s) {sorted(unknown)}; expected {sorted(_CONFIG_FIELDS)}")
    cfg = _lib.config_initializer()
    keep = []
    for key, value in config.items():
        if value is None:
            continue
        if key == "codec":
            if not isinstance(value, str):
                raise TypeError(f"codec: expected a codec spec string, got {type(value).__name__}")
            find_codec(value)  # an unknown name or block size fails here, naming codec (taco.c10d.Options too)
            s = _lib.ffi().new("char[]", _spec_bytes(value))
            keep.append(s)
            cfg.codec = s
        elif key == "algo":
            cfg.algo = _algo_value(value)
        else:
            if isinstance(value, str) and key.endswith("_bytes"):
                raise _invalid(f"{key}: expected a number of bytes (an integer), got {value!r}; suffixes such as "
                               f"'M' are for the TACO_* environment variables")
            lo, hi, unset = _INT_FIELDS[key]
            n = _int_arg(value, key, lo, hi, bools=key == "check_consistency")
            if n == unset:
                raise _invalid(f"{key}: {n} is the C API's 'unset' value; leave {key} out (or None) for the "
                               f"environment's or the library's default")
            if key in _VALID and not _VALID[key][0] <= n <= _VALID[key][1]:
                raise _invalid(f"{key}: {n} is outside [{_VALID[key][0]}, {_VALID[key][1]}]")
            setattr(cfg, _CONFIG_FIELDS[key], n)
    return cfg, keep


def _config_dict(cfg) -> dict:
    """The keyword form of a resolved tacoConfig_t (every field defined), as _config takes it."""
    return {
        "codec": _lib.ffi().string(cfg.codec).decode(),
        "chunk_bytes": int(cfg.chunkBytes),
        "fallback_bytes": int(cfg.fallbackBytes),
        "pipeline_depth": int(cfg.pipelineDepth),
        "check_consistency": int(cfg.checkConsistency),
        "algo": _algo_name(cfg.algo),
    }


# Names -> communicators (and taco.torch.TPGroups), so that code which can carry only a string,
# such as a torch operator (torch.ops.taco.*), can find them. Weak: a name does not keep its
# object alive.
_names: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
_name_ids = itertools.count()


def register(obj: Any, name: str | None = None, *, prefix: str = "comm") -> str:
    """Give `obj` (a Communicator, or a taco.torch.TPGroup) the name `name`, or when None its
    current name or a new one `<prefix>-<n>`; sets `obj.group_name` and returns it. Every
    Communicator and TPGroup is registered when it is created. A name held by another object
    that is not closed raises InvalidArgumentError."""
    if name is None:
        current = getattr(obj, "group_name", "")
        if current and _names.get(current) is obj:
            return current
        name = f"{prefix}-{next(_name_ids)}"
        while _names.get(name) is not None and not getattr(_names[name], "closed", False):
            name = f"{prefix}-{next(_name_ids)}"  # a user took this one: a new name is never a collision
    elif not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty string, got {name!r}")
    other = _names.get(name)
    if other is not None and other is not obj and not getattr(other, "closed", False):
        raise _invalid(f"name: {name!r} is already the name of {other!r}")
    obj.group_name = name
    _names[name] = obj
    return name


def lookup(name: str) -> Any:
    """The object registered under `name` (see register); InvalidArgumentError if none is."""
    obj = _names.get(name) if isinstance(name, str) else None
    if obj is None:
        raise _invalid(f"no communicator is registered under the name {name!r} (taco.comm.register; a "
                       f"communicator that was garbage-collected loses its name)")
    return obj


def get_unique_id() -> bytes:
    """A new unique id (needs NCCL): create it on one rank and send it to the others."""
    f, lib = _lib.ffi(), _lib.lib()
    uid = f.new("tacoUniqueId*")
    check(lib.tacoGetUniqueId(uid))
    return bytes(f.buffer(uid))


# The loopback communicators the library created here that were garbage-collected without close(),
# as (handle, the library that made it). The collector only queues them: it may run anywhere, a
# CUDA graph capture included, where the destroy's synchronisation and frees would break the
# capture. They are destroyed at the next creation or close() (not abort(), which must not wait).
# Only loopback ones: a communicator of several processes must be destroyed after a barrier
# (docs/api.md), and one wrapping a caller's ncclComm_t may outlive that comm if collected late.
_unclosed: list = []


def _queue_unclosed(handle, lib) -> None:
    _unclosed.append((handle, lib))  # atomic: no lock, as the collector may run on any thread


def _destroy_unclosed() -> None:
    while _unclosed:
        try:
            h, lib = _unclosed.pop()
        except IndexError:  # another thread took the last one
            return
        lib.tacoCommDestroy(h)  # a failure (or a refusal: calls queued in an open group) leaves it to the process's end


class Communicator:
    """One rank of a group running collectives together. Create with
    `from_unique_id`, `from_mpi`, `from_nccl` or `taco.loopback`. close() (or `with`) frees it;
    a loopback one that is garbage-collected open is freed at the next creation or close() of a
    communicator in the process."""

    def __init__(self, handle, _origin: str = "") -> None:
        _destroy_unclosed()
        self._h = handle
        self._origin = _origin
        self._ended = ""  # "closed" or "aborted" once the handle is gone
        self.group_name = ""  # the name torch.ops.taco.* take (taco.comm.register)
        self._finalizer = None
        register(self, prefix=_origin or "comm")

    @classmethod
    def _created(cls, handle, origin: str) -> "Communicator":
        """A communicator the library has just created; a loopback one is destroyed when
        collected open (_unclosed says why only those)."""
        c = cls(handle, origin)
        if origin == "loopback":
            c._finalizer = weakref.finalize(c, _queue_unclosed, handle, _lib.lib())
            c._finalizer.atexit = False  # at exit the process's end frees it
        return c

    # ---------------------------------------------------------------- creation
    @classmethod
    def from_unique_id(cls, unique_id: bytes, nranks: int, rank: int, **config) -> "Communicator":
        """Rank `rank` of `nranks` over NCCL (collective: every rank calls it)."""
        f, lib = _lib.ffi(), _lib.lib()
        uid = f.new("tacoUniqueId*")
        # bytes-like only: bytes(128) is 128 zero bytes (an id no rank made), bytes("...") a TypeError
        # that does not name the argument.
        if isinstance(unique_id, (str, numbers.Integral)):
            raise TypeError(f"unique_id: expected the bytes of get_unique_id(), got {type(unique_id).__name__}")
        data = bytes(unique_id)
        if len(data) != f.sizeof("tacoUniqueId"):
            raise _invalid(f"unique_id: expected {f.sizeof('tacoUniqueId')} bytes, got {len(data)}")
        f.memmove(uid, data, len(data))
        nranks = _int_arg(nranks, "nranks", _INT_MIN, _INT_MAX)
        rank = _int_arg(rank, "rank", _INT_MIN, _INT_MAX)
        cfg, _keep = _config(config)
        out = f.new("tacoComm_t*")
        check(lib.tacoCommInitRank(out, nranks, uid[0], rank, cfg))
        return cls._created(out[0], "nccl")

    @classmethod
    def from_mpi(cls, comm: Any = None, **config) -> "Communicator":
        """One rank per process of an mpi4py communicator (default COMM_WORLD); the
        caller has selected this rank's GPU (e.g. cudaSetDevice(local rank))."""
        if comm is None:
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
        uid = get_unique_id() if comm.Get_rank() == 0 else None
        uid = comm.bcast(uid, root=0)
        return cls.from_unique_id(uid, comm.Get_size(), comm.Get_rank(), **config)

    @classmethod
    def from_nccl(cls, nccl_comm: int, **config) -> "Communicator":
        """Wrap an existing ncclComm_t (an integer address); libtaco never destroys it."""
        f, lib = _lib.ffi(), _lib.lib()
        nccl_comm = _int_arg(nccl_comm, "nccl_comm", 0, _SIZE_MAX)
        cfg, _keep = _config(config)
        out = f.new("tacoComm_t*")
        check(lib.tacoCommFromNccl(out, f.cast("void*", nccl_comm), cfg))
        return cls._created(out[0], "nccl-wrapped")

    # ---------------------------------------------------------------- queries
    def _handle(self):
        if self._h is None:
            code = _lib.enum_values("tacoResult_t")["tacoInvalidUsage"]
            if self._ended == "aborted":
                raise InvalidUsageError(code, "communicator was aborted (Communicator.abort): it can run nothing "
                                        "more; create a new one", "tacoInvalidUsage")
            raise InvalidUsageError(code, "communicator is closed", "tacoInvalidUsage")
        return self._h

    @property
    def rank(self) -> int:
        f, lib = _lib.ffi(), _lib.lib()
        r = f.new("int*")
        check(lib.tacoCommUserRank(self._handle(), r))
        return r[0]

    @property
    def size(self) -> int:
        f, lib = _lib.ffi(), _lib.lib()
        n = f.new("int*")
        check(lib.tacoCommCount(self._handle(), n))
        return n[0]

    @property
    def config(self) -> dict:
        """The resolved configuration (every field defined), in the keywords creation takes;
        "algo" is the configured algorithm's name ("auto" unless one was forced)."""
        cfg = _lib.config_initializer()
        check(_lib.lib().tacoCommGetConfig(self._handle(), cfg))
        return _config_dict(cfg)

    @property
    def workspace_bytes(self) -> int:
        f, lib = _lib.ffi(), _lib.lib()
        b = f.new("size_t*")
        check(lib.tacoCommWorkspaceBytes(self._handle(), b))
        return int(b[0])

    @property
    def handle(self) -> int:
        """The tacoComm_t as an integer (for C extensions)."""
        return int(_lib.ffi().cast("uintptr_t", self._handle()))

    def last_error(self) -> str:
        f, lib = _lib.ffi(), _lib.lib()
        return f.string(lib.tacoGetLastError(self._handle())).decode("utf-8", "replace")

    def allreduce_algo(self, count: int, dtype: Any) -> str:
        """The AllReduce algorithm an allreduce of `count` elements of `dtype` runs here (never
        "auto"): the library's selection, without running anything (tacoCommAllReduceAlgo).
        A forced algorithm this communicator cannot run raises InvalidUsageError."""
        if isinstance(count, bool) or not hasattr(count, "__index__") or not 0 <= operator.index(count) < 1 << 64:
            raise _invalid(f"count: expected a number of elements >= 0 (and below 2^64), got {count!r}")
        f, lib = _lib.ffi(), _lib.lib()
        algo = f.new("int*")
        h = self._handle()
        # the thread's message: the query records only an in-use refusal on the communicator, whose
        # record may hold an older failure
        check(lib.tacoCommAllReduceAlgo(h, operator.index(count), taco_dtype(dtype), algo))
        return _algo_name(algo[0])

    def tune(self, dtype: Any, stream: Any = None) -> dict | None:
        """Measure this communicator's AllReduce table for `dtype` now (tacoCommTune; every rank
        calls it, outside any group): checked, timed, agreed across ranks, used by later calls
        and cached. Returns the table (tune_table), or None where there is nothing to measure.
        The ranks of a loopback world are measured together: taco.tune(comms, dtype)."""
        from .tuning import tune

        return tune(self, dtype, stream=stream)

    def tune_table(self, dtype: Any) -> dict | None:
        """The AllReduce table this communicator uses for `dtype` (tacoCommTuneTable), or None
        when the built-in model decides: "bytes" (the sizes), "algos" and "us" (each algorithm's
        time per size in microseconds, None where it cannot run), "demoted", "choice" (the
        algorithm each size takes), "model" (what the model alone would take), "source"
        ("measured" or "cache"), "key" (the fingerprint it is cached under). docs/tuning.md."""
        import json

        f, lib = _lib.ffi(), _lib.lib()
        out = f.new("const char**")
        h = self._handle()
        check(lib.tacoCommTuneTable(h, taco_dtype(dtype), out), h)
        return None if out[0] == f.NULL else json.loads(f.string(out[0]).decode())

    def async_error(self):
        """The first error that happened asynchronously on the device since creation (a
        peer-memory kernel that gave up waiting, TACO_WAIT_TIMEOUT_S, or saw an abort: a
        RemoteError; a peer-memory call whose kernels were launched in part: a CudaError), as
        the TacoError subclass instance; None when there is none. Never blocks
        (tacoCommGetAsyncError). After either the communicator must be closed."""
        f, lib = _lib.ffi(), _lib.lib()
        rc = f.new("tacoResult_t*")
        h = self._handle()
        check(lib.tacoCommGetAsyncError(h, rc), h)
        if rc[0] == lib.tacoSuccess:
            return None
        name, cls = error_name_and_class(rc[0])
        what = f.string(lib.tacoGetErrorString(rc[0])).decode("utf-8", "replace")
        return cls(int(rc[0]), f"asynchronous error on the device: {what}", name)

    # ---------------------------------------------------------------- collectives
    def _prep(self, x, out, stream, name: str, out_count, dtype=None, split: int = 1):
        """The checked buffers of a collective: (x, out, out as given or allocated, taco dtype).
        `split`: x's size must divide into that many blocks (one per rank)."""
        self._handle()  # a closed or aborted communicator fails before anything is allocated
        s = stream_handle(stream)
        xb = describe(x, "x", stream=s)
        if not xb.is_device:
            raise _invalid(f"{name}: x must be a device array (CuPy, torch CUDA tensor, DLPack); "
                           f"use taco.reference for numpy")
        if xb.count % split:
            raise _invalid(f"{name}: x has a size not divisible by the {split} ranks")
        dname = check_data(xb, "x", dtype)
        count = out_count(xb.count)
        if out is None:
            out = alloc(xb, count, dname, "out")
        ob = describe(out, "out", stream=xb.stream)
        check_data(ob, "out", dname)
        check_writable(ob, "out")
        if ob.count != count:
            raise _invalid(f"{name}: out has {ob.count} elements, expected {count}")
        if not ob.is_device:
            raise _invalid(f"{name}: out is in host memory, x on device {xb.device}")
        if ob.device != xb.device:
            raise _invalid(f"{name}: out is on device {ob.device}, x on device {xb.device}")
        return xb, ob, out, taco_dtype(dname)

    def _call(self, fn, xb, ob, *args):
        f = _lib.ffi()
        h = self._handle()
        with device_of(xb):
            rc = fn(f.cast("void*", xb.ptr), *args, h, f.cast("tacoStream_t", xb.stream or 0))
        check(rc, h)
        mark_written(ob)

    def allreduce(self, x, out=None, stream=None, dtype=None):
        """Sum of x over all ranks (compressed two-shot; bit-identical on every rank).
        `out` may be x (in place). Returns out, shaped like x where possible."""
        r = _fast.call(self, _fast.ALLREDUCE, x, out, dtype, stream)
        if r is not _fast.SLOW:
            return r
        xb, ob, out, dt = self._prep(x, out, stream, "allreduce", dtype=dtype, out_count=lambda n: n)
        f, lib = _lib.ffi(), _lib.lib()
        self._call(lambda s, *a: lib.tacoAllReduce(s, f.cast("void*", ob.ptr), xb.count, dt, lib.tacoSum, *a), xb, ob)
        return _shaped(out, x)

    def reduce_scatter(self, x, out=None, stream=None, dtype=None):
        """Rank r gets the sum over ranks of x's r-th 1/P slice (x.size divisible by P)."""
        r = _fast.call(self, _fast.REDUCE_SCATTER, x, out, dtype, stream)
        if r is not _fast.SLOW:
            return r
        P = self.size
        xb, ob, out, dt = self._prep(x, out, stream, "reduce_scatter", dtype=dtype, out_count=lambda n: n // P,
                                     split=P)
        f, lib = _lib.ffi(), _lib.lib()
        self._call(lambda s, *a: lib.tacoReduceScatter(s, f.cast("void*", ob.ptr), ob.count, dt, lib.tacoSum, *a),
                   xb, ob)
        return out

    def allgather(self, x, out=None, stream=None, dtype=None):
        """Every rank's x, in rank order: shape (P, *x.shape) where possible."""
        r = _fast.call(self, _fast.ALLGATHER, x, out, dtype, stream)
        if r is not _fast.SLOW:
            return r
        P = self.size
        xb, ob, out, dt = self._prep(x, out, stream, "allgather", dtype=dtype, out_count=lambda n: n * P)
        f, lib = _lib.ffi(), _lib.lib()
        self._call(lambda s, *a: lib.tacoAllGather(s, f.cast("void*", ob.ptr), xb.count, dt, *a), xb, ob)
        shape = getattr(x, "shape", None)
        if shape is not None and hasattr(out, "reshape") and ob.obj is not x:
            try:
                return out.reshape((P,) + tuple(shape))
            except Exception:  # noqa: BLE001 - DLPack objects without reshape semantics
                return out
        return out

    def alltoall(self, x, out=None, stream=None, dtype=None):
        """Block j of x (x.size / P elements) goes to rank j, landing at block r there."""
        r = _fast.call(self, _fast.ALLTOALL, x, out, dtype, stream)
        if r is not _fast.SLOW:
            return r
        P = self.size
        xb, ob, out, dt = self._prep(x, out, stream, "alltoall", dtype=dtype, out_count=lambda n: n, split=P)
        f, lib = _lib.ffi(), _lib.lib()
        self._call(lambda s, *a: lib.tacoAlltoAll(s, f.cast("void*", ob.ptr), xb.count // P, dt, *a), xb, ob)
        return _shaped(out, x)

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Wait for this rank's work on the communicator and free it (idempotent; nothing after
        abort). It does not synchronize the ranks: between processes, barrier first (docs/api.md)."""
        _destroy_unclosed()
        if self._h is not None:
            lib = _lib.lib()
            rc = lib.tacoCommDestroy(self._h)
            if rc == lib.tacoInvalidUsage:  # work queued in an open group: nothing was freed
                check(rc)
            self._h, self._ended = None, "closed"
            if self._finalizer is not None:
                self._finalizer.detach()
            check(rc)  # the communicator is freed even on failure: the message is the thread's

    def abort(self) -> None:
        """Free without waiting (tacoCommAbort: aborts work in flight). Every later call on
        the communicator raises InvalidUsageError saying it was aborted; close() and abort()
        do nothing."""
        if self._h is not None:
            lib = _lib.lib()
            # Cleared first, so that no other thread of this process uses the handle while it is
            # freed; restored below if the library refused (another thread's call holds it).
            h, self._h, self._ended = self._h, None, "aborted"
            rc = lib.tacoCommAbort(h)
            if rc == lib.tacoInvalidUsage:  # another thread is using it: nothing was freed
                self._h, self._ended = h, ""
            elif self._finalizer is not None:
                self._finalizer.detach()
            check(rc)

    @property
    def closed(self) -> bool:
        """True after close() or abort()."""
        return self._h is None

    @property
    def aborted(self) -> bool:
        return self._ended == "aborted"

    def __enter__(self) -> "Communicator":
        return self

    # A communicator is a handle on one library object: a copy is the same communicator (two
    # Python objects would close, or be collected and destroy, one handle twice).
    def __copy__(self) -> "Communicator":
        return self

    def __deepcopy__(self, memo) -> "Communicator":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        if self._h is None:
            return f"<taco.Communicator {self._ended or 'closed'}>"
        return f"<taco.Communicator rank {self.rank}/{self.size} {self._origin} codec {self.config['codec']!r}>"


def _shaped(out, like):
    shape = getattr(like, "shape", None)
    if shape is None or not hasattr(out, "reshape") or out is like or getattr(out, "shape", None) == shape:
        return out
    try:
        return out.reshape(shape)
    except Exception:  # noqa: BLE001
        return out


def loopback(n: int, **config) -> list:
    """`n` communicators living in this process on the current GPU (the loopback
    transport). Drive them inside `with taco.group():`, one call per rank."""
    f, lib = _lib.ffi(), _lib.lib()
    n = _int_arg(n, "n", _INT_MIN, _INT_MAX)
    cfg, _keep = _config(config)
    arr = f.new("tacoComm_t[]", max(n, 1))  # the library refuses n outside its range, naming nranks
    check(lib.tacoCommInitLoopback(arr, n, cfg))
    comms = [Communicator._created(arr[i], "loopback") for i in range(n)]
    world = object()  # the world they share (taco.torch.TPGroup takes ranks of one world only)
    for c in comms:
        c._loopback_world = world
    return comms


@contextlib.contextmanager
def group():
    """tacoGroupStart() ... tacoGroupEnd(): collectives issued inside are launched
    together at the end (required for several loopback ranks from one thread)."""
    lib = _lib.lib()
    check(lib.tacoGroupStart())
    try:
        yield
    finally:
        rc = lib.tacoGroupEnd()
        import sys

        if sys.exc_info()[0] is None:
            check(rc)

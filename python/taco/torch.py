"""PyTorch integration: communicators from process groups, an in-place
compressed all_reduce, and Megatron-style tensor-parallel (TP) layers.

    import torch.distributed as dist, taco.torch as tt
    dist.init_process_group("nccl")                       # torchrun, one GPU per rank
    tt.all_reduce(grad)                                   # in place, current stream, the default codec

    tp = tt.TPGroup.from_process_group()                  # one rank per process
    tp = tt.TPGroup.loopback(4, fallback_bytes=0)         # or: 4 ranks emulated on this GPU
    fc1 = tt.ColumnParallelLinear(1024, 4096, tp)         # weight split on the output dim
    fc2 = tt.RowParallelLinear(4096, 1024, tp)            # weight split on the input dim
    h = [torch.nn.functional.gelu(t) for t in fc1(x)]     # one tensor per local rank
    y = fc2(h)                                            # replicated output (compressed AllReduce)

Parallel activations (the output of a column-parallel layer, the input of a
row-parallel one) are lists with one tensor per rank living in this process:
one element under torchrun, P under loopback. Replicated tensors are plain
tensors. So the same model code runs both ways; under loopback every
collective of the P shards is issued inside one `taco.group()`.

Collectives run on torch's current stream, do no host synchronisation and no
allocation inside libtaco, so forward and backward can be captured in a CUDA
graph (torch.cuda.graph). The glue here allocates outputs through torch's
caching allocator (graph-safe) and never calls .item() or synchronises.

Importing this module defines the torch operators torch.ops.taco.* (python/taco/_ops.py),
which the TP layers call, so torch.compile(fullgraph=True) traces them and CUDA graphs
capture them, and registers the c10d backend "taco" (python/taco/c10d.py):
dist.new_group(ranks, backend="taco") runs all_reduce, reduce_scatter_tensor and
all_gather_into_tensor through libtaco and everything else through NCCL.

torch is imported when this module is imported; `import taco` does not need it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from . import _ops  # noqa: F401 - defines torch.ops.taco.*
from ._arrays import _invalid, bump_version, check_grad_write
from .comm import Communicator, group as _taco_group, loopback as _loopback, lookup as _lookup, register as _register

__all__ = [
    "register_communicator",
    "communicator_from_process_group",
    "destroy_communicators",
    "all_reduce",
    "TPGroup",
    "copy_to_tp_region",
    "reduce_from_tp_region",
    "ColumnParallelLinear",
    "RowParallelLinear",
]

log = logging.getLogger("taco.torch")

# --------------------------------------------------------------- communicators

_cache: dict[tuple, tuple[Any, Communicator]] = {}
_cache_lock = threading.Lock()


def _debug(msg: str) -> None:
    """Debug log: the `taco.torch` logger at DEBUG, and stderr under TACO_DEBUG=INFO."""
    log.debug(msg)
    if os.environ.get("TACO_DEBUG", "").upper() in ("INFO", "TRACE"):
        import sys

        print(f"taco.torch INFO {msg}", file=sys.stderr, flush=True)


def _loaded_nccl_files() -> set[str]:
    """Real paths of every libnccl*.so* mapped into this process."""
    out = set()
    try:
        with open("/proc/self/maps") as fh:
            for ln in fh:
                p = ln.split()[-1] if ln.strip() else ""
                if "libnccl" in os.path.basename(p) and p.startswith("/"):
                    out.add(os.path.realpath(p))
    except OSError:
        pass
    return out


def _backend_comm_ptr(backend) -> tuple[int | None, str]:
    """(ncclComm_t address, "") of a ProcessGroupNCCL backend, or (None, why not)."""
    getter = getattr(backend, "_comm_ptr", None)
    if getter is None:
        return None, f"{type(backend).__name__} has no _comm_ptr() (needs a recent PyTorch with ProcessGroupNCCL)"
    try:
        ptr = int(getter() if callable(getter) else getter)
    except Exception as e:  # noqa: BLE001
        return None, f"_comm_ptr() failed ({e})"
    if ptr == 0:
        return None, "_comm_ptr() returned NULL"
    return ptr, ""


def _from_unique_id(group, dist, **config) -> Communicator:
    from .comm import get_unique_id

    rank, size = dist.get_rank(group), dist.get_world_size(group)
    obj = [get_unique_id() if rank == 0 else None]
    src = dist.get_global_rank(group, 0) if group is not None and group is not dist.group.WORLD else 0
    dist.broadcast_object_list(obj, src=src, group=group)
    return Communicator.from_unique_id(obj[0], size, rank, **config)


def _share_nccl_comm(backend, cfg: dict) -> tuple[Communicator | None, str]:
    """(a Communicator wrapping a ProcessGroupNCCL backend's ncclComm_t, "") when exactly one
    libnccl is loaded, else (None, why not)."""
    ptr, why = _backend_comm_ptr(backend)
    before = _loaded_nccl_files()
    if ptr is not None and len(before) != 1:
        why = (f"{len(before)} NCCL libraries are loaded ({sorted(before)}): cannot tell which one "
               f"created the process group's communicator")
        ptr = None
    if ptr is None:
        return None, why
    if "TACO_NCCL_LIBRARY" not in os.environ:
        os.environ["TACO_NCCL_LIBRARY"] = next(iter(before))  # in case libtaco has not opened NCCL yet
    comm = Communicator.from_nccl(ptr, **cfg)
    after = _loaded_nccl_files()
    if after != before:  # libtaco opened another libnccl: that one must not touch torch's comm
        comm.abort()
        raise RuntimeError(f"taco.torch: libtaco loaded {sorted(after - before)} beside PyTorch's "
                           f"{sorted(before)}; set TACO_NCCL_LIBRARY={next(iter(before))}")
    comm.torch_path = f"shared ncclComm_t {ptr:#x} of the process group ({next(iter(before))})"
    comm._origin = "torch-shared-nccl"
    return comm, ""


def communicator_from_process_group(group=None, codec: str | None = None, *, share_nccl: bool | None = None,
                                    **config) -> Communicator:
    """A taco.Communicator over the ranks of a torch.distributed process group
    (default: the world), cached per (group, codec, config).

    Reuses the group's own ncclComm_t when PyTorch exposes it
    (ProcessGroupNCCL._comm_ptr()) and exactly one libnccl is loaded in the
    process, so libtaco and PyTorch share one NCCL library and communicator.
    Otherwise a new libtaco communicator is created from a unique id broadcast
    over the group. `share_nccl`: None tries sharing and falls back, True
    requires it (raises if impossible), False never shares. The path taken is
    logged (logger "taco.torch" at DEBUG, or stderr with TACO_DEBUG=INFO) and
    kept in `comm.torch_path`.

    Collective: every rank of the group calls it (the first time). Call
    `destroy_communicators()` before `dist.destroy_process_group()`.

    A "taco" group (taco.c10d) gives its own communicator, made with its pg_options: `codec`
    must then be its codec (or None) and no other option may be given.
    """
    import torch.distributed as dist

    if share_nccl is not None and not isinstance(share_nccl, bool):  # "no" would read as True: require
        raise TypeError(f"share_nccl: expected True, False or None, got {type(share_nccl).__name__} {share_nccl!r}")
    # A "taco" group has a communicator of its own, made with the group's options: a second one here
    # would compress with other settings than dist.all_reduce on the same group does.
    if _c10d is not None and isinstance(group, _c10d.ProcessGroupTaco):
        if config or share_nccl is not None:
            raise ValueError(f"a 'taco' process group's communicator has the group's options (pg_options="
                             f"taco.c10d.Options(...)); {sorted(config) + (['share_nccl'] if share_nccl is not None else [])}"
                             f" cannot change them here")
        comm = group.communicator()
        _same_codec(comm, codec)
        return comm
    if not dist.is_initialized():
        raise RuntimeError("taco.torch: torch.distributed is not initialised (dist.init_process_group)")
    pg = group if group is not None else dist.group.WORLD
    key = (id(pg), str(codec), tuple(sorted(config.items())), share_nccl)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] is pg and not hit[1].closed:
            return hit[1]
    cfg = dict(config, codec=codec)
    comm, why = None, ""
    if share_nccl is not False:
        # Make sure the NCCL communicator exists (ProcessGroupNCCL creates it lazily).
        dev = torch.device("cuda", torch.cuda.current_device())
        dist.all_reduce(torch.zeros(1, device=dev), group=group)
        try:
            backend = pg._get_backend(torch.device("cuda"))
        except Exception as e:  # noqa: BLE001 - private API: any failure means "not available"
            why = f"no CUDA backend on the process group ({e})"
        else:
            comm, why = _share_nccl_comm(backend, cfg)
    if comm is None:
        if share_nccl:
            raise RuntimeError(f"taco.torch: cannot share the process group's NCCL communicator: {why}")
        comm = _from_unique_id(group, dist, **cfg)
        comm.torch_path = (f"new NCCL communicator from a unique id broadcast over the process group"
                           + (f" (not shared: {why})" if why else ""))
        comm._origin = "torch-unique-id"
    _debug(f"communicator for group {getattr(pg, 'group_name', pg)!r} codec {codec!r}: {comm.torch_path}")
    with _cache_lock:
        _cache[key] = (pg, comm)
    return comm


def destroy_communicators() -> None:
    """Close every cached communicator and the libtaco communicators of "taco" process
    groups (before dist.destroy_process_group; after torch.cuda.synchronize() and
    dist.barrier(), as it does not synchronize the ranks: docs/api.md, tacoCommDestroy)."""
    with _cache_lock:
        items = list(_cache.values())
        _cache.clear()
    for _, c in items:
        c.close()
    if _c10d is not None:
        _c10d.close_communicators()


def register_communicator(comm, name: str | None = None) -> str:
    """Name `comm` (a taco.Communicator or a TPGroup) for the torch operators, which take a
    communicator by name: torch.ops.taco.all_reduce(x, "sum", name). Every Communicator and
    TPGroup already has one (`comm.group_name`); this gives it one of your choosing, or
    registers an object whose class did not (a TPGroup subclass that skips TPGroup.__init__).
    Returns the name."""
    return _register(comm, name, prefix="tp" if isinstance(comm, TPGroup) else "comm")


def _same_codec(comm: Communicator, codec) -> None:
    """A communicator's codec is fixed at creation: `codec` given with one must be the one it has."""
    if codec is None:
        return
    if torch.compiler.is_compiling():
        raise RuntimeError("taco.torch.all_reduce under torch.compile: leave codec out when group= names a "
                           "communicator (its codec is fixed when it is created, and cannot be read while tracing)")
    from .codec import find_codec

    want, have = find_codec(codec), find_codec(comm.config["codec"])
    if (want.id, want.blockSize) != (have.id, have.blockSize):
        raise _invalid(f"codec: {codec!r}, but group's communicator {comm.group_name!r} compresses with "
                       f"{comm.config['codec']!r} (fixed when it was created; leave codec out, or pass a "
                       f"communicator created with it)")


def _resolve_comm(group, codec) -> Communicator:
    if isinstance(group, str):
        group = _lookup(group)
    if isinstance(group, Communicator):
        _same_codec(group, codec)
        return group
    if isinstance(group, TPGroup):
        if len(group.comms) != 1:
            raise ValueError("all_reduce: a loopback TPGroup has several ranks here: use TPGroup.all_reduce_")
        _same_codec(group.comms[0], codec)
        return group.comms[0]
    if torch.compiler.is_compiling():
        raise RuntimeError("taco.torch.all_reduce under torch.compile: pass group= a taco.Communicator, a TPGroup "
                           "or a communicator's name; communicator_from_process_group(group) creates "
                           "communicators and runs outside compiled code")
    return communicator_from_process_group(group, codec)


def all_reduce(tensor: torch.Tensor, group=None, codec: str | None = None) -> torch.Tensor:
    """Sum `tensor` over the ranks of `group` in place (like dist.all_reduce),
    compressed with `codec`, on torch's current stream; returns `tensor`.
    `group`: a torch process group (default: the world), a taco.Communicator, or a
    communicator's name. Under torch.compile this is torch.ops.taco.all_reduce_ (pass a
    Communicator or a name there); in eager mode it calls the communicator directly,
    skipping the dispatcher (the same libtaco call)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor: expected a torch.Tensor, got {type(tensor).__name__}")
    comm = _resolve_comm(group, codec)
    if torch.compiler.is_compiling():
        torch.ops.taco.all_reduce_(tensor, "sum", comm.group_name)
        return tensor
    check_grad_write(tensor, "tensor")
    if tensor.is_contiguous():
        comm.allreduce(tensor, out=tensor)
        bump_version(tensor)  # a Communicator does too; a stand-in registered as one may not
    else:
        tmp = tensor.contiguous()
        comm.allreduce(tmp, out=tmp)
        tensor.copy_(tmp)
    return tensor


# --------------------------------------------------------------- TP group


class TPGroup:
    """The tensor-parallel ranks this process drives: one communicator per
    process (torchrun / MPI), or all P loopback communicators of an emulated
    TP group on one GPU. `local_ranks` lists the TP ranks living here."""

    def __init__(self, comms: Sequence[Communicator]):
        self.comms = list(comms)
        if not self.comms:
            raise ValueError("TPGroup: no communicators")
        self.size = self.comms[0].size
        self.local_ranks = [c.rank for c in self.comms]
        if len(self.comms) > 1 and sorted(self.local_ranks) != list(range(self.size)):
            raise ValueError(f"TPGroup: several communicators must be all {self.size} ranks of one group, "
                             f"got ranks {self.local_ranks}")
        worlds = {id(getattr(c, "_loopback_world", None)) for c in self.comms}
        if len(worlds) > 1:  # their grouped launch would pair ranks that never meet
            raise ValueError(f"TPGroup: the communicators are ranks of {len(worlds)} different worlds; several "
                             f"must be the ranks of one taco.loopback() world")
        self.group_name = ""  # the name torch.ops.taco.all_reduce_local takes (taco.comm.register)
        _register(self, prefix="tp")

    @classmethod
    def loopback(cls, n: int, codec: str | None = None, **config) -> "TPGroup":
        """`n` TP ranks emulated on the current GPU (the loopback transport)."""
        return cls(_loopback(n, codec=codec, **config))

    @classmethod
    def from_process_group(cls, group=None, codec: str | None = None, **config) -> "TPGroup":
        """This process's rank of a torch.distributed group (see communicator_from_process_group)."""
        return cls([communicator_from_process_group(group, codec, **config)])

    @property
    def num_local(self) -> int:
        return len(self.comms)

    def all_reduce_(self, tensors: Sequence[torch.Tensor], outs: Sequence[torch.Tensor] | None = None) -> list:
        """Sum over the TP ranks: tensors[i] is local rank i's contribution; the
        sums go to outs (default: in place). One grouped launch for loopback."""
        tensors = list(tensors)
        outs = tensors if outs is None else list(outs)
        if len(tensors) != len(self.comms) or len(outs) != len(self.comms):
            raise ValueError(f"TPGroup.all_reduce_: expected {len(self.comms)} tensors and as many outs (one per "
                             f"local rank), got {len(tensors)} tensors and {len(outs)} outs")
        if len(self.comms) == 1:
            self.comms[0].allreduce(tensors[0], out=outs[0])
        else:
            with _taco_group():
                for c, t, o in zip(self.comms, tensors, outs):
                    c.allreduce(t, out=o)
        return outs

    def close(self) -> None:
        """Close loopback communicators (process-group ones are cached: destroy_communicators)."""
        for c in self.comms:
            if getattr(c, "_origin", "") == "loopback":
                c.close()

    def __repr__(self) -> str:
        return f"<taco.torch.TPGroup size {self.size}, local ranks {self.local_ranks}>"


def _as_tp(tp) -> TPGroup:
    if isinstance(tp, TPGroup):
        return tp
    if isinstance(tp, Communicator):
        return TPGroup([tp])
    if isinstance(tp, (list, tuple)) and tp and all(isinstance(c, Communicator) for c in tp):
        return TPGroup(tp)
    raise TypeError(f"tp: expected a TPGroup, a taco.Communicator or a list of loopback communicators, "
                    f"got {type(tp).__name__}")


def _name_of(tp: TPGroup) -> str:
    """The TPGroup's registered name (named at creation; a subclass that skips TPGroup.__init__
    is named here, on first use)."""
    name = getattr(tp, "group_name", "")
    return name if name else _register(tp, prefix="tp")


def _allreduce_new(group: str, xs: Sequence[torch.Tensor]) -> list:
    """Out-of-place sum over the TP ranks of the TPGroup named `group`: torch.ops.taco.all_reduce_local
    (new outputs from torch's allocator; one launch for every local rank)."""
    return torch.ops.taco.all_reduce_local(list(xs), "sum", group)


# --------------------------------------------------------------- autograd


class _CopyToTP(torch.autograd.Function):
    """Identity forward (the input is replicated on every TP rank), compressed
    AllReduce of the gradient backward. `shared`: one input tensor seen by every
    local rank (loopback: gradients are summed by the AllReduce, and every rank's
    result is bit-identical, so the input's gradient is rank 0's). `group` is the
    TPGroup's name and `n` its number of local ranks: strings and ints, so that
    torch.compile traces this without a Python object on ctx."""

    @staticmethod
    def forward(ctx, group, n, shared, *xs):
        ctx.group, ctx.shared = group, shared
        if shared:
            return tuple(xs[0].view_as(xs[0]) for _ in range(n))
        return tuple(x.view_as(x) for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        if any(g is None for g in grads):  # a local rank did not use its copy: it contributes zeros
            like = next(g for g in grads if g is not None)
            grads = [torch.zeros_like(like) if g is None else g for g in grads]
        outs = _allreduce_new(ctx.group, grads)
        if ctx.shared:
            return (None, None, None, outs[0])
        return (None, None, None, *outs)


class _ReduceFromTP(torch.autograd.Function):
    """Compressed AllReduce of the local partial sums forward, identity backward.
    `shared`: return one tensor standing for the replicated result of every
    local rank (loopback: all bit-identical); its gradient flows to every partial."""

    @staticmethod
    def forward(ctx, group, shared, *xs):
        ctx.shared, ctx.n = shared, len(xs)
        outs = _allreduce_new(group, xs)
        if shared:
            return outs[0]
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.shared:
            return (None, None, *([grads[0]] * ctx.n))
        return (None, None, *grads)


def copy_to_tp_region(x, tp) -> list:
    """Enter a TP region: identity forward, compressed AllReduce of the gradient
    backward (Megatron's copy_to_tensor_model_parallel_region).
    `x`: one tensor, replicated on every local rank, or a list with one tensor per
    local rank. `tp`: a TPGroup or a taco.Communicator. Returns a list with one
    tensor per local rank."""
    tp = _as_tp(tp)
    # Without a gradient to carry the forward is views alone, with no autograd Function: Dynamo
    # could not trace the Function there for a list (it set ctx fields on a constant).
    grad = torch.is_grad_enabled()
    if isinstance(x, torch.Tensor):
        if not (grad and x.requires_grad):
            return [x.view_as(x) for _ in range(tp.num_local)]
        return list(_CopyToTP.apply(_name_of(tp), tp.num_local, True, x))
    xs = list(x)
    if len(xs) != tp.num_local:
        raise ValueError(f"copy_to_tp_region: {len(xs)} tensors for {tp.num_local} local ranks")
    if not (grad and any(t.requires_grad for t in xs)):
        return [t.view_as(t) for t in xs]
    return list(_CopyToTP.apply(_name_of(tp), tp.num_local, False, *xs))


def reduce_from_tp_region(xs, tp, *, replicated: bool = True):
    """Leave a TP region: compressed AllReduce forward, identity backward
    (Megatron's reduce_from_tensor_model_parallel_region).
    `xs`: a list with one partial tensor per local rank (a bare tensor is taken
    as the single local rank's). Returns the replicated sum as one tensor
    (`replicated=True`: under loopback it stands for every rank's bit-identical
    copy, and its gradient goes to every rank), or a list with each local rank's
    copy (`replicated=False`)."""
    tp = _as_tp(tp)
    xs = [xs] if isinstance(xs, torch.Tensor) else list(xs)
    if len(xs) != tp.num_local:
        raise ValueError(f"reduce_from_tp_region: {len(xs)} tensors for {tp.num_local} local ranks")
    out = _ReduceFromTP.apply(_name_of(tp), replicated, *xs)
    return out if replicated else list(out)


# --------------------------------------------------------------- layers


def _split(n: int, parts: int, what: str) -> int:
    if n % parts:
        raise ValueError(f"{what} ({n}) is not divisible by the TP size ({parts})")
    return n // parts


class _TPLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, tp, device, dtype):
        super().__init__()
        self.tp = _as_tp(tp)
        self.in_features, self.out_features = in_features, out_features
        if device is None and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
        self._fk = dict(device=device, dtype=dtype)

    def _init_uniform(self, params, fan_in: int) -> None:
        # nn.Linear's default init, with the fan-in of the full (unsharded) layer
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        with torch.no_grad():
            for p in params:
                p.uniform_(-bound, bound)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, tp_size={self.tp.size}, "
                f"local_ranks={self.tp.local_ranks}, bias={self.has_bias}")


class ColumnParallelLinear(_TPLinear):
    """Y = X A^T + b with A (out x in) split along the output dim: TP rank r holds
    rows [r*out/P, (r+1)*out/P) of A and the same slice of b. The input goes
    through copy_to_tp_region (its gradient is AllReduced, compressed); the output
    stays parallel: a list with one (..., out/P) tensor per local rank.

    `weights[i]` / `biases[i]` are the shards of local rank tp.local_ranks[i]."""

    def __init__(self, in_features: int, out_features: int, tp, bias: bool = True, device=None, dtype=None):
        super().__init__(in_features, out_features, tp, device, dtype)
        self.out_per_rank = _split(out_features, self.tp.size, "ColumnParallelLinear: out_features")
        self.has_bias = bias
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.empty(self.out_per_rank, in_features, **self._fk)) for _ in self.tp.local_ranks])
        self.biases = nn.ParameterList(
            [nn.Parameter(torch.empty(self.out_per_rank, **self._fk)) for _ in self.tp.local_ranks] if bias else [])
        self._init_uniform(list(self.weights) + list(self.biases), in_features)

    @classmethod
    def from_linear(cls, linear: nn.Linear, tp) -> "ColumnParallelLinear":
        """The shards of a full nn.Linear (every rank holds the same full layer)."""
        tp = _as_tp(tp)
        m = cls(linear.in_features, linear.out_features, tp, linear.bias is not None,
                device=linear.weight.device, dtype=linear.weight.dtype)
        k = m.out_per_rank
        with torch.no_grad():
            for i, r in enumerate(tp.local_ranks):
                m.weights[i].copy_(linear.weight[r * k:(r + 1) * k])
                if linear.bias is not None:
                    m.biases[i].copy_(linear.bias[r * k:(r + 1) * k])
        return m

    def forward(self, x) -> list:
        # Under autocast F.linear casts its input after copy_to_tp_region, so the
        # backward AllReduce would carry fp32 gradients; cast first, as Megatron's
        # bf16 activations are, so the gradient crosses the wire in the autocast dtype.
        # x: one tensor, or a list of one per local rank (copy_to_tp_region takes both)
        def autocast(t):
            if torch.is_autocast_enabled(t.device.type) and t.is_floating_point():
                return t.to(torch.get_autocast_dtype(t.device.type))
            return t

        x = [autocast(t) for t in x] if isinstance(x, (list, tuple)) else autocast(x)
        xs = copy_to_tp_region(x, self.tp)
        return [F.linear(xi, w, self.biases[i] if self.has_bias else None)
                for i, (xi, w) in enumerate(zip(xs, self.weights))]


class RowParallelLinear(_TPLinear):
    """Y = X A^T + b with A (out x in) split along the input dim: TP rank r holds
    columns [r*in/P, (r+1)*in/P) of A. The input is parallel (a list with one
    (..., in/P) tensor per local rank, e.g. a ColumnParallelLinear's output); the
    partial products are summed by reduce_from_tp_region (compressed AllReduce)
    and the bias, replicated, is added after the reduction. Returns one
    replicated tensor."""

    def __init__(self, in_features: int, out_features: int, tp, bias: bool = True, device=None, dtype=None):
        super().__init__(in_features, out_features, tp, device, dtype)
        self.in_per_rank = _split(in_features, self.tp.size, "RowParallelLinear: in_features")
        self.has_bias = bias
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.empty(out_features, self.in_per_rank, **self._fk)) for _ in self.tp.local_ranks])
        self.bias = nn.Parameter(torch.empty(out_features, **self._fk)) if bias else None
        self._init_uniform(list(self.weights) + ([self.bias] if bias else []), in_features)

    @classmethod
    def from_linear(cls, linear: nn.Linear, tp) -> "RowParallelLinear":
        tp = _as_tp(tp)
        m = cls(linear.in_features, linear.out_features, tp, linear.bias is not None,
                device=linear.weight.device, dtype=linear.weight.dtype)
        k = m.in_per_rank
        with torch.no_grad():
            for i, r in enumerate(tp.local_ranks):
                m.weights[i].copy_(linear.weight[:, r * k:(r + 1) * k])
            if linear.bias is not None:
                m.bias.copy_(linear.bias)
        return m

    def forward(self, xs) -> torch.Tensor:
        xs = [xs] if isinstance(xs, torch.Tensor) else list(xs)
        if len(xs) != self.tp.num_local:
            raise ValueError(f"RowParallelLinear: {len(xs)} inputs for {self.tp.num_local} local ranks")
        partials = [F.linear(xi, w) for xi, w in zip(xs, self.weights)]
        y = reduce_from_tp_region(partials, self.tp)
        return y + self.bias if self.bias is not None else y


if torch.distributed.is_available():
    from . import c10d as _c10d  # registers the c10d backend "taco"
else:
    _c10d = None

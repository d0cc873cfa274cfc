"""libtaco's collectives as PyTorch operators: torch.ops.taco.* (imported by taco.torch).

After the conventions of torch's own `_c10d_functional` operators: a functional form that
returns a new tensor, and a form that writes into a tensor it is given; the communicator
travels as a string, its registered name (`Communicator.group_name`, taco.comm.register), so a
traced graph holds no Python object; reduce-scatter, all-gather and all-to-all take the group
size, so their output shapes are known without the communicator.

    all_reduce(Tensor input, str reduce_op, str comm) -> Tensor
    all_reduce_(Tensor(a!) input, str reduce_op, str comm) -> ()
    reduce_scatter(Tensor input, str reduce_op, int group_size, str comm) -> Tensor
    reduce_scatter_into(Tensor(a!) out, Tensor input, str reduce_op, str comm) -> ()
    all_gather(Tensor input, int group_size, str comm) -> Tensor
    all_gather_into(Tensor(a!) out, Tensor input, str comm) -> ()
    all_to_all(Tensor input, int group_size, str comm) -> Tensor
    all_to_all_into(Tensor(a!) out, Tensor input, str comm) -> ()
    all_reduce_local(Tensor[] inputs, str reduce_op, str group) -> Tensor[]

Shapes follow torch's: reduce_scatter splits dim 0 into group_size blocks (rank r keeps block
r), all_gather concatenates along dim 0 in rank order, all_to_all sends dim-0 block j to rank
j. reduce_op is "sum" or "avg" (the sum divided by the group size, after the collective).
`all_reduce_local` sums over a group whose ranks all live in this process (a loopback
taco.torch.TPGroup): one input per local rank, one launch for all of them.

Each functional form has a fake (meta) implementation, so torch.compile traces them, and an
autograd formula (the one torch.distributed.nn.functional uses): the gradient of an all-reduce
is the all-reduce of the gradient, of a reduce-scatter the all-gather of the gradient (divided
by the group size for "avg"), of an all-gather the sum reduce-scatter, of an all-to-all the
all-to-all. The `_`/`_into` forms mutate their first argument and have no gradient.

The fake implementations refuse a dtype libtaco does not reduce (float32, float16, bfloat16),
so torch.compile fails at trace time; in eager mode the communicator refuses it (and an
object registered as a stand-in, such as an exact float64 sum in a test, may take it).

The operators are defined with torch.library's low-level API (define + impl + register_fake +
register_autograd) rather than torch.library.custom_op: custom_op's Python wrapper costs 10-20
us per call in eager mode, the dispatcher kernel alone a few. Implementations are registered for
CPU and CUDA tensors; libtaco itself takes device memory, so a CPU tensor reaches the
communicator, which refuses it, unless `comm` names an object that takes CPU tensors.
"""
from __future__ import annotations

import contextlib

import torch

from . import _fast, comm as _comm
from ._arrays import bump_version, check_grad_write

LIB = torch.library.Library("taco", "DEF")

_SCHEMAS = {
    "all_reduce": "all_reduce(Tensor input, str reduce_op, str comm) -> Tensor",
    "all_reduce_": "all_reduce_(Tensor(a!) input, str reduce_op, str comm) -> ()",
    "reduce_scatter": "reduce_scatter(Tensor input, str reduce_op, int group_size, str comm) -> Tensor",
    "reduce_scatter_into": "reduce_scatter_into(Tensor(a!) out, Tensor input, str reduce_op, str comm) -> ()",
    "all_gather": "all_gather(Tensor input, int group_size, str comm) -> Tensor",
    "all_gather_into": "all_gather_into(Tensor(a!) out, Tensor input, str comm) -> ()",
    "all_to_all": "all_to_all(Tensor input, int group_size, str comm) -> Tensor",
    "all_to_all_into": "all_to_all_into(Tensor(a!) out, Tensor input, str comm) -> ()",
    "all_reduce_local": "all_reduce_local(Tensor[] inputs, str reduce_op, str group) -> Tensor[]",
}

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


# ------------------------------------------------------------------ checks


def _reduce_op(reduce_op: str, op: str) -> bool:
    """True for "avg", False for "sum"; anything else raises."""
    r = reduce_op.lower() if isinstance(reduce_op, str) else reduce_op
    if r == "sum":
        return False
    if r == "avg":
        return True
    raise ValueError(f"taco::{op}: reduce_op {reduce_op!r} is not supported (libtaco sums: 'sum' or 'avg')")


def _check_input(t: torch.Tensor, op: str, arg: str = "input") -> None:
    if t.dtype not in _DTYPES:
        raise ValueError(f"taco::{op}: {arg} has dtype {t.dtype}; libtaco's collectives take float32, "
                         f"float16 and bfloat16")


def _check_blocks(t: torch.Tensor, group_size: int, op: str) -> None:
    if group_size < 1:
        raise ValueError(f"taco::{op}: group_size {group_size} is not a number of ranks")
    if t.dim() < 1:
        raise ValueError(f"taco::{op}: input is 0-dimensional; dim 0 is split or concatenated across ranks")
    if not op.startswith("all_gather") and t.shape[0] % group_size:
        raise ValueError(f"taco::{op}: input's dim 0 ({t.shape[0]}) is not divisible by group_size "
                         f"({group_size})")


def _check_out(out: torch.Tensor, like: torch.Tensor, shape, op: str) -> None:
    if out.dtype != like.dtype:
        raise ValueError(f"taco::{op}: out has dtype {out.dtype}, input {like.dtype}")
    if out.numel() != _numel(shape):
        raise ValueError(f"taco::{op}: out has {out.numel()} elements, expected {_numel(shape)} "
                         f"(shape {tuple(shape)})")
    if out.device != like.device:
        raise ValueError(f"taco::{op}: out is on {out.device}, input on {like.device}")


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _communicator(name: str, op: str, group_size: int | None = None):
    obj = _comm.lookup(name)
    if not hasattr(obj, "allreduce"):
        raise ValueError(f"taco::{op}: {name!r} names a {type(obj).__name__}, not a communicator "
                         f"(all_reduce_local takes groups)")
    if group_size is not None and _fast._nranks(obj) != group_size:
        raise ValueError(f"taco::{op}: group_size is {group_size} but communicator {name!r} has "
                         f"{_fast._nranks(obj)} ranks")
    return obj


def _local_group(name: str, op: str):
    obj = _comm.lookup(name)
    if not hasattr(obj, "all_reduce_"):
        raise ValueError(f"taco::{op}: {name!r} names a {type(obj).__name__}, not a group of local ranks "
                         f"(a taco.torch.TPGroup)")
    return obj


def _contiguous_out(t: torch.Tensor, shape=None) -> torch.Tensor:
    """A new tensor of t's dtype and device, contiguous, of t's shape or `shape` (the fake
    implementations make the same, so their strides agree)."""
    if shape is None:
        return torch.empty_like(t, memory_format=torch.contiguous_format)
    return t.new_empty(shape)


# ------------------------------------------------------------------ implementations


def _all_reduce(input, reduce_op, comm):
    avg = _reduce_op(reduce_op, "all_reduce")
    c = _communicator(comm, "all_reduce")
    x = input.contiguous()
    out = _contiguous_out(x)
    c.allreduce(x, out=out)
    if avg:
        out.div_(_fast._nranks(c))
    return out


def _all_reduce_(input, reduce_op, comm):
    avg = _reduce_op(reduce_op, "all_reduce_")
    c = _communicator(comm, "all_reduce_")
    _check_grad_write(input, "all_reduce_", "input")
    with _untracked(avg or not input.is_contiguous()):
        _all_reduce_write(input, avg, c)
    bump_version(input)  # below autograd, torch's own writes here do not count either


def _untracked(torch_ops_run: bool):
    """no_grad where the mutating operators run torch ops (a division, a copy back), which autograd
    would record; nothing where they only call libtaco (no_grad costs a few microseconds)."""
    return torch.no_grad() if torch_ops_run else contextlib.nullcontext()


def _all_reduce_write(input, avg, c):
    if input.is_contiguous():
        c.allreduce(input, out=input)
        if avg:
            input.div_(_fast._nranks(c))
    else:
        tmp = input.contiguous()
        c.allreduce(tmp, out=tmp)
        if avg:
            tmp.div_(_fast._nranks(c))
        input.copy_(tmp)


def _rs_shape(input, group_size):
    return (input.shape[0] // group_size, *input.shape[1:])


def _ag_shape(input, group_size):
    return (input.shape[0] * group_size, *input.shape[1:])


def _reduce_scatter(input, reduce_op, group_size, comm):
    avg = _reduce_op(reduce_op, "reduce_scatter")
    _check_blocks(input, group_size, "reduce_scatter")
    c = _communicator(comm, "reduce_scatter", group_size)
    x = input.contiguous()
    out = _contiguous_out(x, _rs_shape(x, group_size))
    c.reduce_scatter(x, out=out)
    if avg:
        out.div_(group_size)
    return out


def _check_grad_write(t, op: str, arg: str) -> None:
    """The mutating operators have no autograd formula, and the dispatcher does not refuse a leaf
    that requires grad for them as it does for torch's own in-place operations: refused here."""
    check_grad_write(t, f"taco::{op}: {arg}")


def _into(out, fn, avg_by=None):
    """Run fn(out_or_contiguous_copy) and leave the result in `out`."""
    with _untracked(avg_by or not out.is_contiguous()):
        dst = out if out.is_contiguous() else out.new_empty(out.shape)
        fn(dst)
        if avg_by:
            dst.div_(avg_by)
        if dst is not out:
            out.copy_(dst)
    bump_version(out)  # below autograd, torch's own writes here do not count either


def _rs_into_checks(out, input, reduce_op, comm):
    """(avg, communicator, P) of reduce_scatter_into, checked (the fake runs the same checks)."""
    avg = _reduce_op(reduce_op, "reduce_scatter_into")
    c = _communicator(comm, "reduce_scatter_into")
    P = _fast._nranks(c)
    _check_blocks(input, P, "reduce_scatter_into")
    _check_out(out, input, _rs_shape(input, P), "reduce_scatter_into")
    return avg, c, P


def _reduce_scatter_into(out, input, reduce_op, comm):
    avg, c, P = _rs_into_checks(out, input, reduce_op, comm)
    _check_grad_write(out, "reduce_scatter_into", "out")
    x = input.contiguous()
    _into(out, lambda dst: c.reduce_scatter(x, out=dst), P if avg else None)


def _all_gather(input, group_size, comm):
    _check_blocks(input, group_size, "all_gather")
    c = _communicator(comm, "all_gather", group_size)
    x = input.contiguous()
    out = _contiguous_out(x, _ag_shape(x, group_size))
    c.allgather(x, out=out)
    return out


def _ag_into_checks(out, input, comm):
    c = _communicator(comm, "all_gather_into")
    P = _fast._nranks(c)
    _check_blocks(input, P, "all_gather_into")
    _check_out(out, input, _ag_shape(input, P), "all_gather_into")
    return c


def _all_gather_into(out, input, comm):
    c = _ag_into_checks(out, input, comm)
    _check_grad_write(out, "all_gather_into", "out")
    x = input.contiguous()
    _into(out, lambda dst: c.allgather(x, out=dst))


def _all_to_all(input, group_size, comm):
    _check_blocks(input, group_size, "all_to_all")
    c = _communicator(comm, "all_to_all", group_size)
    x = input.contiguous()
    out = _contiguous_out(x)
    c.alltoall(x, out=out)
    return out


def _a2a_into_checks(out, input, comm):
    c = _communicator(comm, "all_to_all_into")
    _check_blocks(input, _fast._nranks(c), "all_to_all_into")
    _check_out(out, input, input.shape, "all_to_all_into")
    return c


def _all_to_all_into(out, input, comm):
    c = _a2a_into_checks(out, input, comm)
    _check_grad_write(out, "all_to_all_into", "out")
    x = input.contiguous()
    _into(out, lambda dst: c.alltoall(x, out=dst))


def _check_local(inputs, op: str, dtypes: bool) -> None:
    if len(inputs) == 0:
        raise ValueError(f"taco::{op}: inputs is empty (one tensor per local rank)")
    first = inputs[0]
    for i, t in enumerate(inputs):
        if dtypes:
            _check_input(t, op, f"inputs[{i}]")
        if t.shape != first.shape or t.dtype != first.dtype or t.device != first.device:
            raise ValueError(f"taco::{op}: inputs[{i}] is {tuple(t.shape)} {t.dtype} on {t.device}, inputs[0] "
                             f"{tuple(first.shape)} {first.dtype} on {first.device}")


def _all_reduce_local(inputs, reduce_op, group):
    avg = _reduce_op(reduce_op, "all_reduce_local")
    _check_local(inputs, "all_reduce_local", dtypes=False)
    g = _local_group(group, "all_reduce_local")
    if len(inputs) != g.num_local:
        raise ValueError(f"taco::all_reduce_local: {len(inputs)} inputs for the {g.num_local} local ranks of "
                         f"{group!r}")
    xs = [t.contiguous() for t in inputs]
    outs = [_contiguous_out(x) for x in xs]
    g.all_reduce_(xs, outs)
    if avg:
        for o in outs:
            o.div_(g.size)
    return outs


_IMPLS = {
    "all_reduce": _all_reduce,
    "all_reduce_": _all_reduce_,
    "reduce_scatter": _reduce_scatter,
    "reduce_scatter_into": _reduce_scatter_into,
    "all_gather": _all_gather,
    "all_gather_into": _all_gather_into,
    "all_to_all": _all_to_all,
    "all_to_all_into": _all_to_all_into,
    "all_reduce_local": _all_reduce_local,
}

# ------------------------------------------------------------------ fake (meta) implementations


def _fake_all_reduce(input, reduce_op, comm):
    _reduce_op(reduce_op, "all_reduce")
    _check_input(input, "all_reduce")
    return _contiguous_out(input)


def _fake_all_reduce_(input, reduce_op, comm):
    _reduce_op(reduce_op, "all_reduce_")
    _check_input(input, "all_reduce_")


def _fake_reduce_scatter(input, reduce_op, group_size, comm):
    _reduce_op(reduce_op, "reduce_scatter")
    _check_input(input, "reduce_scatter")
    _check_blocks(input, group_size, "reduce_scatter")
    return input.new_empty(_rs_shape(input, group_size))


def _fake_into(op, checks):
    """The eager checks of an `_into` operator (out's size included: the communicator, looked up by
    name, gives the group size), so that a traced call refuses what an eager one does."""

    def fake(out, input, *rest):
        _check_input(input, op)
        if out.dtype != input.dtype:
            raise ValueError(f"taco::{op}: out has dtype {out.dtype}, input {input.dtype}")
        checks(out, input, *rest)

    return fake


def _fake_all_gather(input, group_size, comm):
    _check_input(input, "all_gather")
    _check_blocks(input, group_size, "all_gather")
    return input.new_empty(_ag_shape(input, group_size))


def _fake_all_to_all(input, group_size, comm):
    _check_input(input, "all_to_all")
    _check_blocks(input, group_size, "all_to_all")
    return _contiguous_out(input)


def _fake_all_reduce_local(inputs, reduce_op, group):
    _reduce_op(reduce_op, "all_reduce_local")
    _check_local(inputs, "all_reduce_local", dtypes=True)
    return [_contiguous_out(t) for t in inputs]


_FAKES = {
    "all_reduce": _fake_all_reduce,
    "all_reduce_": _fake_all_reduce_,
    "reduce_scatter": _fake_reduce_scatter,
    "reduce_scatter_into": _fake_into("reduce_scatter_into", _rs_into_checks),
    "all_gather": _fake_all_gather,
    "all_gather_into": _fake_into("all_gather_into", _ag_into_checks),
    "all_to_all": _fake_all_to_all,
    "all_to_all_into": _fake_into("all_to_all_into", _a2a_into_checks),
    "all_reduce_local": _fake_all_reduce_local,
}

# ------------------------------------------------------------------ autograd


def _setup_reduce(ctx, inputs, output):
    ctx.reduce_op, ctx.comm = inputs[1], inputs[2]


def _bwd_all_reduce(ctx, grad):
    return torch.ops.taco.all_reduce(grad, ctx.reduce_op, ctx.comm), None, None


def _setup_sized(ctx, inputs, output):
    if len(inputs) == 4:  # reduce_scatter(input, reduce_op, group_size, comm)
        ctx.reduce_op, ctx.group_size, ctx.comm = inputs[1], inputs[2], inputs[3]
    else:  # all_gather / all_to_all(input, group_size, comm)
        ctx.reduce_op, ctx.group_size, ctx.comm = None, inputs[1], inputs[2]


def _bwd_reduce_scatter(ctx, grad):
    g = torch.ops.taco.all_gather(grad, ctx.group_size, ctx.comm)
    if _reduce_op(ctx.reduce_op, "reduce_scatter"):
        g = g / ctx.group_size
    return g, None, None, None


def _bwd_all_gather(ctx, grad):
    return torch.ops.taco.reduce_scatter(grad, "sum", ctx.group_size, ctx.comm), None, None


def _bwd_all_to_all(ctx, grad):
    return torch.ops.taco.all_to_all(grad, ctx.group_size, ctx.comm), None, None


def _setup_local(ctx, inputs, output):
    ctx.reduce_op, ctx.group = inputs[1], inputs[2]


def _bwd_all_reduce_local(ctx, grads):
    grads = list(grads)
    like = next((g for g in grads if g is not None), None)
    if like is None:
        return None, None, None
    grads = [torch.zeros_like(like) if g is None else g for g in grads]
    return torch.ops.taco.all_reduce_local(grads, ctx.reduce_op, ctx.group), None, None


_AUTOGRAD = {
    "all_reduce": (_bwd_all_reduce, _setup_reduce),
    "reduce_scatter": (_bwd_reduce_scatter, _setup_sized),
    "all_gather": (_bwd_all_gather, _setup_sized),
    "all_to_all": (_bwd_all_to_all, _setup_sized),
    "all_reduce_local": (_bwd_all_reduce_local, _setup_local),
}


def _define() -> None:
    for name, schema in _SCHEMAS.items():
        LIB.define(schema)
        for key in ("CPU", "CUDA"):
            LIB.impl(name, _IMPLS[name], key)
        torch.library.register_fake(f"taco::{name}", _FAKES[name], lib=LIB)
    for name, (bwd, setup) in _AUTOGRAD.items():
        torch.library.register_autograd(f"taco::{name}", bwd, setup_context=setup, lib=LIB)


_define()

OPS = tuple(_SCHEMAS)

"""The one-line drop-in: a process-wide default communicator and module-level
collectives (docs/design.md §3; docs/api.md).

    import taco
    taco.init()                          # mpi4py's COMM_WORLD, or torchrun's process group
    y = taco.allreduce(x)                # x: CuPy array / torch tensor / DLPack buffer
    y = taco.allreduce(x, codec="int8-hadamard")

One rank per process; SPMD: every rank makes the same calls in the same order.
A codec other than the default's creates (collectively, on first use) a sibling
communicator over the same ranks, cached per codec. For N ranks in one process
use `taco.loopback(n)` and `taco.group()` instead.
"""
from __future__ import annotations

import os
from typing import Any, Callable

from ._arrays import _invalid
from .codec import default_codec
from .comm import Communicator, _config
from .errors import InvalidUsageError


def _usage(message: str) -> InvalidUsageError:
    return InvalidUsageError(5, message, "tacoInvalidUsage")  # the library's code for misuse

_state: dict = {"make": None, "comms": {}, "codec": None}
_SOURCES = (None, "mpi", "torch")


def _bootstrap(source: str | None) -> tuple[str, Callable[[str], Communicator]]:
    if source in (None, "mpi"):
        try:
            from mpi4py import MPI  # noqa: F401
        except ImportError:
            if source == "mpi":
                raise
        else:
            from mpi4py import MPI
            if source == "mpi" or MPI.COMM_WORLD.Get_size() > 1 or "OMPI_COMM_WORLD_SIZE" in os.environ \
                    or "PMI_SIZE" in os.environ:
                return "mpi", lambda codec, **cfg: Communicator.from_mpi(MPI.COMM_WORLD, codec=codec, **cfg)
    if source in (None, "torch"):
        try:
            import torch.distributed as dist
        except ImportError:
            dist = None
        if dist is not None and dist.is_available() and dist.is_initialized():
            from . import torch as taco_torch
            return "torch", lambda codec, **cfg: taco_torch.communicator_from_process_group(None, codec=codec, **cfg)
        if source == "torch":
            raise _usage("init(source='torch'): torch.distributed is not initialized")
    raise _usage("init(): no launcher found — run under mpirun (with mpi4py) or torchrun "
                               "(after torch.distributed.init_process_group), or pass a Communicator")


def init(comm: Communicator | None = None, *, source: str | None = None, codec: str | None = None,
         **config) -> Communicator:
    """Set the default communicator: `comm` itself, else one created from mpi4py
    (source="mpi") or torch.distributed (source="torch"); by default whichever is present.
    codec None: taco.default_codec() (TACO_CODEC, else the library's default). `config`: the
    other communicator keywords (algo=, chunk_bytes=, ...; taco.comm), for every sibling."""
    if source not in _SOURCES:
        raise _invalid(f"source: unknown source {source!r}; expected 'mpi', 'torch' or None (whichever is present)")
    _config(dict(config, codec=codec))  # bad keywords (an unknown algo, ...) fail here, before any launcher
    if comm is not None:
        given = [k for k, v in dict(config, source=source, codec=codec).items() if v is not None]
        if given:
            raise _invalid(f"init(): {', '.join(sorted(given))} cannot be combined with comm (a communicator's "
                           f"configuration is fixed when it is created)")
    if comm is not None:
        codec = comm.config["codec"]
        _finalize(keep=comm)  # given again, the current default stays open
        _state.update(make=None, codec=codec, comms={codec: comm})
        return comm
    # The launcher and the new communicator first: an init that fails leaves the current default
    # as it was. (A launcher may hand back a communicator it caches, maybe the current default.)
    _, make = _bootstrap(source)
    codec = codec or default_codec()
    made = make(codec, **config)
    _finalize(keep=made)
    _state.update(make=lambda c: make(c, **config), codec=codec, comms={codec: made})
    return made


def communicator(codec: str | None = None) -> Communicator:
    """The default communicator (or its sibling for `codec`)."""
    if _state["codec"] is None:
        raise _usage("taco.init() has not been called")
    codec = codec or _state["codec"]
    comms = _state["comms"]
    if codec not in comms:
        if _state["make"] is None:
            raise _usage(f"codec {codec!r}: the default communicator was given explicitly "
                                       "and cannot create siblings; pass comm= or call init() with a launcher")
        comms[codec] = _state["make"](codec)
    return comms[codec]


def finalize() -> None:
    """Close the default communicators (before the launcher shuts down; between processes, after
    a barrier, as close() does not synchronize the ranks)."""
    _finalize()


def _finalize(keep: Communicator | None = None) -> None:
    for c in _state["comms"].values():
        if c is not keep:
            c.close()
    _state.update(make=None, comms={}, codec=None)


def allreduce(x: Any, *, codec: str | None = None, out: Any = None, stream: Any = None) -> Any:
    return communicator(codec).allreduce(x, out=out, stream=stream)


def reduce_scatter(x: Any, *, codec: str | None = None, out: Any = None, stream: Any = None) -> Any:
    return communicator(codec).reduce_scatter(x, out=out, stream=stream)


def allgather(x: Any, *, codec: str | None = None, out: Any = None, stream: Any = None) -> Any:
    return communicator(codec).allgather(x, out=out, stream=stream)


def alltoall(x: Any, *, codec: str | None = None, out: Any = None, stream: Any = None) -> Any:
    return communicator(codec).alltoall(x, out=out, stream=stream)

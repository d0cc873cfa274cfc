"""The c10d backend "taco": torch.distributed process groups whose all_reduce,
reduce_scatter_tensor and all_gather_into_tensor run through libtaco (compressed with the
group's codec) while every other collective runs through NCCL, or gloo for CPU tensors.

    import torch.distributed as dist
    import taco.torch                                     # registers the backend "taco"
    dist.init_process_group("nccl")                       # torchrun
    tp = dist.new_group(ranks, backend="taco", pg_options=taco.c10d.Options(codec="fp8-block"))
    dist.all_reduce(x, group=tp)                          # libtaco, compressed
    dist.broadcast(x, 0, group=tp)                        # NCCL

Code written against torch.distributed (Megatron-style TP, DTensor over a DeviceMesh built
from such a group, torch's functional collectives) gets compression without changes.

What goes through libtaco: one CUDA tensor (or an input/output pair) of float32, float16 or
bfloat16, contiguous, on the current device, with ReduceOp.SUM or ReduceOp.AVG (the sum,
then divided by the group size on the same stream). Everything else is delegated to the
group's NCCL backend (gloo for CPU tensors), unchanged: another op (MAX, PREMUL_SUM, ...),
an integer dtype, a list of tensors, the coalesced variants, broadcast, all_to_all, barrier,
send/recv. A non-contiguous tensor is delegated too, so NCCL refuses it as it would on an NCCL
group. `routed` and `delegated` count the calls each way, by operation.

libtaco runs on the caller's current stream, so the returned Work is complete as far as
stream order goes: `wait()` makes the current stream wait for the one the call ran on when
they differ. The libtaco communicator is created at the group's first libtaco collective
(collective: every rank makes that call), sharing the group's ncclComm_t when PyTorch exposes
it (see taco.torch.communicator_from_process_group), else from a unique id exchanged through
the group's store. Creation allocates device memory, so make one such call, or call
`communicator()`, before capturing a CUDA graph. dist.destroy_process_group(group) closes it
(through `shutdown()`); taco.torch.destroy_communicators() closes those of every group. Neither
synchronizes the ranks: barrier first (docs/api.md, tacoCommDestroy).

One rank per process, as c10d has it: a loopback world (several ranks in one process) is not
a c10d group; use taco.torch.TPGroup.loopback for that.
"""
from __future__ import annotations

import collections
import weakref
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions  # not re-exported by torch.distributed

__all__ = ["Options", "ProcessGroupTaco", "BACKEND"]

BACKEND = "taco"

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_groups: "weakref.WeakSet[ProcessGroupTaco]" = weakref.WeakSet()


def close_communicators() -> None:
    """Close the libtaco communicator of every live "taco" group (taco.torch.destroy_communicators
    calls this); a group's next libtaco collective creates a new one."""
    for g in list(_groups):
        g.close_communicator()


class Options:
    """The libtaco side of a "taco" process group, passed as `pg_options=` to
    dist.new_group / dist.init_process_group. `codec` and the other keywords are those of a
    taco.Communicator (None: the TACO_* environment, then the library default);
    `share_nccl` as in taco.torch.communicator_from_process_group."""

    def __init__(self, codec: str | None = None, *, share_nccl: bool | None = None, **config):
        from .comm import _config

        _config(dict(config, codec=codec))  # unknown keywords and bad values fail here, not at the first call
        if share_nccl is not None and not isinstance(share_nccl, bool):  # "no" would read as True: require
            raise TypeError(f"share_nccl: expected True, False or None, got {type(share_nccl).__name__} "
                            f"{share_nccl!r}")
        self.codec, self.share_nccl, self.config = codec, share_nccl, dict(config)

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.config.items())
        return f"taco.c10d.Options(codec={self.codec!r}, share_nccl={self.share_nccl!r}{extra})"


class _Work(dist.Work):
    """A libtaco collective already enqueued on `stream` (a raw cudaStream_t of `device`)."""

    def __init__(self, result: list, device: torch.device, stream: int):
        super().__init__()
        self._result, self._device, self._stream = result, device, stream

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        if self._device.type == "cuda":
            cur = torch.cuda.current_stream(self._device)
            if cur.cuda_stream != self._stream:
                cur.wait_stream(torch.cuda.get_stream_from_external(self._stream, self._device))
        return True

    def is_completed(self) -> bool:
        """Whether the collective has run on the device: its stream has nothing left to run (that
        stream's later work too, so it may answer later than the collective ended, never early).
        The base class's answer was False for ever, so a loop polling it never ended."""
        if self._device.type != "cuda":
            return True
        return torch.cuda.get_stream_from_external(self._stream, self._device).query()

    def get_future(self) -> torch.futures.Future:
        fut = torch.futures.Future(devices=[self._device] if self._device.type == "cuda" else None)
        fut.set_result(self._result)
        return fut

    def result(self) -> list:
        return self._result


def _current_stream(device: torch.device) -> int:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device.index) if raw is not None else torch.cuda.current_stream(device).cuda_stream


class _Works(dist.Work):
    """Several backend Works as one (the coalesced variants on a backend without coalescing)."""

    def __init__(self, works: list, result: list):
        super().__init__()
        self._works, self._result = works, result

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        return all([w.wait(timeout) for w in self._works])

    def is_completed(self) -> bool:
        return all([w.is_completed() for w in self._works])

    def get_future(self) -> torch.futures.Future:
        result = self._result
        return torch.futures.collect_all([w.get_future() for w in self._works]).then(lambda _: result)

    def result(self) -> list:
        return self._result


def _some(op: str, tensors) -> None:
    """A collective's tensor list is not empty (an IndexError said nothing of it)."""
    if not tensors:
        raise ValueError(f"taco backend: {op}: tensors is an empty list")


class ProcessGroupTaco(dist.ProcessGroup):
    """A process group of the "taco" backend (see the module docstring). Created by
    dist.new_group(..., backend="taco") or dist.init_process_group("taco")."""

    def __init__(self, store, rank: int, size: int, timeout: timedelta, options: Options | None = None,
                 group_name: str = "", global_ranks: list | None = None):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._options = options if options is not None else Options()
        if not isinstance(self._options, Options):
            raise TypeError(f"pg_options: expected taco.c10d.Options for backend 'taco', got "
                            f"{type(self._options).__name__}")
        self._store = store
        self._comm = None
        self.routed: collections.Counter = collections.Counter()
        self.delegated: collections.Counter = collections.Counter()
        self._nccl = self._gloo = None
        BT = dist.ProcessGroup.BackendType
        if dist.is_nccl_available() and torch.cuda.is_available():
            opts = dist.ProcessGroupNCCL.Options()
            opts._timeout = timeout
            opts.is_high_priority_stream = False
            if global_ranks is not None:
                opts.global_ranks_in_group = list(global_ranks)
            opts.group_name = group_name
            self._nccl = dist.ProcessGroupNCCL(dist.PrefixStore("nccl/", store), rank, size, opts)
            self._register_backend(torch.device("cuda"), BT.NCCL, self._nccl)
        if dist.is_gloo_available():
            self._gloo = dist.ProcessGroupGloo(dist.PrefixStore("gloo/", store), rank, size, timeout)
            self._register_backend(torch.device("cpu"), BT.GLOO, self._gloo)
        if self._nccl is None and self._gloo is None:
            raise RuntimeError("taco backend: this PyTorch has neither NCCL nor gloo to delegate to")
        self._set_default_backend(BT.NCCL if self._nccl is not None else BT.GLOO)
        _groups.add(self)

    # ---------------------------------------------------------------- identity
    def getBackendName(self) -> str:
        return BACKEND

    def name(self) -> str:
        return BACKEND

    def __repr__(self) -> str:
        return f"<taco.c10d.ProcessGroupTaco rank {self._rank}/{self._size} codec {self._options.codec!r}>"

    # ---------------------------------------------------------------- libtaco
    def communicator(self):
        """The group's libtaco communicator, created on first use (collective)."""
        c = self._comm
        if c is None or c.closed:
            c = self._comm = self._create_communicator()
        return c

    def _create_communicator(self):
        from .comm import Communicator, get_unique_id
        from .torch import _share_nccl_comm, _debug

        if self._nccl is None:
            raise RuntimeError("taco backend: libtaco collectives need CUDA and NCCL")
        o = self._options
        cfg = dict(o.config, codec=o.codec)
        comm, why = None, ""
        if o.share_nccl is not False:
            dev = torch.device("cuda", torch.cuda.current_device())
            self._nccl.allreduce([torch.zeros(1, device=dev)]).wait()  # ProcessGroupNCCL creates its comm lazily
            comm, why = _share_nccl_comm(self._nccl, cfg)
        if comm is None:
            if o.share_nccl:
                raise RuntimeError(f"taco backend: cannot share the group's NCCL communicator: {why}")
            key = "taco/unique_id"
            if self._rank == 0:
                self._store.set(key, get_unique_id())
            uid = bytes(self._store.get(key))
            comm = Communicator.from_unique_id(uid, self._size, self._rank, **cfg)
            comm.torch_path = ("new NCCL communicator from a unique id exchanged through the group's store"
                               + (f" (not shared: {why})" if why else ""))
            comm._origin = "torch-unique-id"
        _debug(f"taco backend group of {self._size} codec {o.codec!r}: {comm.torch_path}")
        return comm

    def close_communicator(self) -> None:
        """Close the libtaco communicator; the group's next libtaco collective creates a new one."""
        c, self._comm = self._comm, None
        if c is not None:
            c.close()

    def shutdown(self) -> None:
        """Close the libtaco communicator, then the NCCL and gloo backends
        (dist.destroy_process_group calls this)."""
        self.close_communicator()
        base = getattr(dist.ProcessGroup, "shutdown", None)
        if base is not None:
            base(self)

    def _takes(self, t: torch.Tensor) -> bool:
        return t.is_cuda and t.dtype in _DTYPES and t.is_contiguous() and self._nccl is not None

    @staticmethod
    def _avg(op) -> bool | None:
        """False for SUM, True for AVG, None for any other ReduceOp (delegated)."""
        if op == dist.ReduceOp.SUM:
            return False
        if op == dist.ReduceOp.AVG:
            return True
        return None

    def _inner(self, t: torch.Tensor):
        b = self._nccl if t.is_cuda else self._gloo
        if b is None:
            raise RuntimeError(f"taco backend: no backend for {t.device} tensors in this PyTorch")
        return b

    def _delegate(self, op: str, t: torch.Tensor):
        """The backend that takes `t`'s collective `op` as it is (counted in `delegated`)."""
        self.delegated[op] += 1
        return self._inner(t)

    def _done(self, op: str, result: list, t: torch.Tensor) -> _Work:
        self.routed[op] += 1
        return _Work(result, t.device, _current_stream(t.device))

    # ---------------------------------------------------------------- collectives
    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceOptions()
        _some("allreduce", tensors)
        if len(tensors) == 1 and self._takes(tensors[0]):
            avg = self._avg(opts.reduceOp)
            if avg is not None:
                t = tensors[0]
                with torch.no_grad():  # as torch's backends: a collective is no autograd operation
                    self.communicator().allreduce(t, out=t)
                    if avg:  # (the average's division too: outside, autograd recorded it)
                        t.div_(self._size)
                return self._done("allreduce", tensors, t)
        return self._delegate("allreduce", tensors[0]).allreduce(tensors, opts)

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        if (self._takes(input) and self._takes(output) and output.dtype == input.dtype
                and output.device == input.device and input.numel() == output.numel() * self._size):
            avg = self._avg(opts.reduceOp)
            if avg is not None:
                with torch.no_grad():
                    self.communicator().reduce_scatter(input, out=output)
                    if avg:
                        output.div_(self._size)
                return self._done("reduce_scatter_tensor", [output], output)
        return self._delegate("reduce_scatter_tensor", input)._reduce_scatter_base(output, input, opts)

    def _allgather_base(self, output, input, opts=None):
        opts = opts if opts is not None else AllgatherOptions()
        if (self._takes(input) and self._takes(output) and output.dtype == input.dtype
                and output.device == input.device and output.numel() == input.numel() * self._size):
            with torch.no_grad():
                self.communicator().allgather(input, out=output)
            return self._done("all_gather_into_tensor", [output], output)
        return self._delegate("all_gather_into_tensor", input)._allgather_base(output, input, opts)

    # the names newer PyTorch versions call these by (their trampolines look them up by name)
    reduce_scatter_single = _reduce_scatter_base
    all_gather_single = _allgather_base

    # ---------------------------------------------------------------- delegated as they are
    # Every other collective that PyTorch's trampoline for Python process groups
    # (PyProcessGroup) dispatches is defined here, handed to the backend's binding. Left to
    # the trampoline, the base ProcessGroup's method runs with the GIL held, and a backend
    # thread can hold the lock that enqueueing takes while it waits for the GIL (to free a
    # Python tensor its last Work held): gloo's worker, NCCL's watchdog. The two then wait on
    # each other for good. Measured: 2 of 85 two-rank gloo worlds hung in broadcast or barrier
    # that way, none of 100 on a plain gloo group; the backends' bindings release the GIL.
    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else dist.BroadcastOptions()
        _some("broadcast", tensors)
        return self._delegate("broadcast", tensors[0]).broadcast(tensors, opts)

    def barrier(self, opts=None):
        opts = opts if opts is not None else dist.BarrierOptions()
        # as the base ProcessGroup picks the barrier's device: the one asked for, else the default backend's
        dev = getattr(opts, "device", None)  # (older PyTorch: device_ids only)
        if dev is None:
            dev = torch.device("cuda", opts.device_ids[0]) if opts.device_ids else (
                torch.device("cuda") if self._nccl is not None else torch.device("cpu"))
        b = self._nccl if dev.type == "cuda" else self._gloo
        if b is None:
            raise RuntimeError(f"taco backend: no backend for a barrier on {dev} in this PyTorch")
        self.delegated["barrier"] += 1
        return b.barrier(opts)

    def allgather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else AllgatherOptions()
        _some("allgather", input_tensors)
        return self._delegate("allgather", input_tensors[0]).allgather(output_tensors, input_tensors, opts)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        _some("allreduce_coalesced", tensors)
        return self._delegate("allreduce_coalesced", tensors[0]).allreduce_coalesced(tensors, opts)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        _some("reduce_scatter", output_tensors)
        return self._delegate("reduce_scatter", output_tensors[0]).reduce_scatter(output_tensors, input_tensors, opts)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = opts if opts is not None else dist.AllToAllOptions()
        return self._delegate("all_to_all_single", input).alltoall_base(output, input, output_split_sizes,
                                                                          input_split_sizes, opts)

    def send(self, tensors, dstRank, tag):  # noqa: N803 - the trampoline's keyword names
        _some("send", tensors)
        return self._delegate("send", tensors[0]).send(tensors, dstRank, tag)

    def recv(self, tensors, srcRank, tag):  # noqa: N803
        _some("recv", tensors)
        return self._delegate("recv", tensors[0]).recv(tensors, srcRank, tag)

    def _coalesced(self, op: str, single: str, outputs, inputs, opts):
        """outputs[i] from inputs[i] by the backend's `single` (_allgather_base or
        _reduce_scatter_base), as one group where the backend coalesces (NCCL)."""
        _some(op, inputs)
        b = self._delegate(op, inputs[0])
        if getattr(b, "supports_coalescing", False):
            b._start_coalescing()
            try:
                for o, i in zip(outputs, inputs):
                    getattr(b, single)(o, i, opts)
            finally:  # a refused op still closes the group
                work = b._end_coalescing()
            return work
        return _Works([getattr(b, single)(o, i, opts) for o, i in zip(outputs, inputs)], list(outputs))

    def all_gather_single_coalesced(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else AllgatherOptions()
        return self._coalesced("all_gather_single_coalesced", "_allgather_base", output_tensors, input_tensors, opts)

    def reduce_scatter_single_coalesced(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        return self._coalesced("reduce_scatter_single_coalesced", "_reduce_scatter_base", output_tensors,
                               input_tensors, opts)

    # the older names the trampoline falls back to
    alltoall_base = all_to_all_single
    allgather_into_tensor_coalesced = all_gather_single_coalesced
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced


def _create(dist_opts: Any, options: Any) -> ProcessGroupTaco:
    return ProcessGroupTaco(dist_opts.store, dist_opts.group_rank, dist_opts.group_size, dist_opts.timeout,
                            options, group_name=dist_opts.group_id,
                            global_ranks=getattr(dist_opts, "global_ranks_in_group", None))


def _register() -> None:
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])


_register()

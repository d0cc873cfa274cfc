"""Host time per collective call: libtaco's Python entry points against torch.distributed, in
one run, on a one-rank NCCL group (the call's own cost, with no peer to wait for).

    TACO_LIBRARY=build/libtaco.so PYTHONPATH=python python bench/host_cost.py

Every row enqueues the same AllReduce of --count elements of --dtype (default 4 KiB of bf16)
on the current stream, --iters times in a row, and reports the median over --reps repetitions
of the host time per call (the device is synchronised between repetitions, outside the timed
loop, so the launch queue never fills and blocks the host). Rows:

  torch.distributed.all_reduce          dist.all_reduce(x) on the NCCL group (in place)
  taco.torch.all_reduce                 in place through the fast path
  comm.allreduce(x, out=o)  torch       the fast path, output given
  comm.allreduce(x)         torch       the fast path, output allocated by torch
  comm.allreduce(x, out=o)  CuPy        the fast path (bf16 as uint16 with dtype=)
  comm.allreduce(x)         CuPy        the fast path, output allocated by CuPy
  comm.allreduce(x, out=o)  CAI object  the general path (DLPack/CAI objects, for comparison)
  torch.ops.taco.all_reduce_(x)         the custom op called eagerly (dispatcher + fast path)
  torch.ops.taco.all_reduce(x)          the functional custom op (allocates)
  dist.all_reduce on a "taco" group     the c10d backend (taco.c10d)
  tacoAllReduce (cffi)                  the C entry point alone, called through the integer
                                        cffi declaration the fast path uses

for each codec in --codecs (the communicator's codec; at 4 KiB every codec takes the
uncompressed path below fallback_bytes unless --fallback-bytes 0). The table is markdown;
--json writes the numbers. The C entry point checks both pointers with
cudaPointerGetAttributes (TACO_CHECK_POINTERS=1, the default); running the same command with
TACO_CHECK_POINTERS=0 shows what those checks cost.
"""
from __future__ import annotations

import argparse
import datetime
import json
import socket
import statistics
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _median_us(fn, iters: int, reps: int, sync) -> float:
    for _ in range(3):  # warm-up: caches, lazy initialisation
        for _ in range(iters):
            fn()
        sync()
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        per_call.append((time.perf_counter() - t0) / iters * 1e6)
        sync()
    return statistics.median(per_call)


class _CAI:
    """A bare __cuda_array_interface__ view of a torch tensor: libtaco's general path."""

    def __init__(self, t, typestr: str):
        self.__cuda_array_interface__ = {"shape": tuple(t.shape), "typestr": typestr,
                                         "data": (t.data_ptr(), False), "version": 2}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python bench/host_cost.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=2048, help="elements per call (default 2048: 4 KiB of bf16)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--codecs", default="fp8-block,none", help="comma-separated communicator codecs")
    p.add_argument("--fallback-bytes", type=int, default=None,
                   help="the communicators' fallback_bytes (default: the library's)")
    p.add_argument("--iters", type=int, default=200, help="calls per timed repetition")
    p.add_argument("--reps", type=int, default=50, help="repetitions (the median is reported)")
    p.add_argument("--json", default=None, help="write the results here")
    a = p.parse_args(argv)
    if a.count < 1 or a.iters < 1 or a.reps < 1:
        p.error("--count, --iters and --reps must be >= 1")

    import cupy as cp
    import torch
    import torch.distributed as dist

    import taco
    import taco._lib
    import taco.c10d
    import taco.torch as tt
    from taco import _fast
    from taco._arrays import taco_dtype

    if not torch.cuda.is_available():
        print("host_cost: needs a CUDA GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1,
                            device_id=dev)
    tdt = getattr(torch, a.dtype)
    n = a.count
    x = torch.randn(n, device=dev).to(tdt)
    o = torch.empty_like(x)
    cdt = {"bfloat16": cp.uint16, "float16": cp.float16, "float32": cp.float32}[a.dtype]
    xc = cp.asarray(x.view(torch.int16) if a.dtype == "bfloat16" else x).view(cdt)
    oc = cp.empty_like(xc)
    cai_typestr = {"bfloat16": "<u2", "float16": "<f2", "float32": "<f4"}[a.dtype]
    cdtype = a.dtype if a.dtype == "bfloat16" else None  # what CuPy's uint16 holds
    sync = torch.cuda.synchronize
    results: list[dict] = []

    def row(name: str, codec: str, fn, algo: str = "") -> None:
        us = _median_us(fn, a.iters, a.reps, sync)
        results.append({"call": name, "codec": codec, "algo": algo, "us": us})
        print(f"  {name:<40} {codec:<10} {us:8.2f} us", file=sys.stderr, flush=True)

    row("torch.distributed.all_reduce", "-", lambda: dist.all_reduce(x))
    taco_groups = []
    for codec in [c for c in a.codecs.split(",") if c]:
        cfg = {"fallback_bytes": a.fallback_bytes} if a.fallback_bytes is not None else {}
        comm = tt.communicator_from_process_group(codec=codec, **cfg)
        algo = comm.allreduce_algo(n, a.dtype)
        name = comm.group_name
        fns = _fast.int_functions()
        h = _fast._handle_int(comm)
        dt = taco_dtype(a.dtype)
        op_sum = taco._lib.enum_values("tacoRedOp_t")["tacoSum"]
        s = torch.cuda.current_stream().cuda_stream
        xp, op_ = x.data_ptr(), o.data_ptr()
        cai_x, cai_o = _CAI(x, cai_typestr), _CAI(o, cai_typestr)
        row("tacoAllReduce (cffi, C entry alone)", codec, lambda: fns[0](xp, op_, n, dt, op_sum, h, s), algo)
        row("comm.allreduce(x, out=o) torch", codec, lambda: comm.allreduce(x, out=o), algo)
        row("comm.allreduce(x) torch", codec, lambda: comm.allreduce(x), algo)
        row("taco.torch.all_reduce(x) in place", codec, lambda: tt.all_reduce(x, group=comm), algo)
        row("comm.allreduce(x, out=o) CuPy", codec, lambda: comm.allreduce(xc, out=oc, dtype=cdtype), algo)
        row("comm.allreduce(x) CuPy", codec, lambda: comm.allreduce(xc, dtype=cdtype), algo)
        row("comm.allreduce(x, out=o) CAI (general)", codec,
            lambda: comm.allreduce(cai_x, out=cai_o, dtype=a.dtype), algo)
        row("torch.ops.taco.all_reduce_(x)", codec, lambda: torch.ops.taco.all_reduce_(x, "sum", name), algo)
        row("torch.ops.taco.all_reduce(x)", codec, lambda: torch.ops.taco.all_reduce(x, "sum", name), algo)
        g = dist.new_group([0], backend="taco", pg_options=taco.c10d.Options(codec=codec, **cfg))
        taco_groups.append(g)
        dist.all_reduce(x, group=g)  # creates the group's libtaco communicator
        before = g.routed["allreduce"]
        row('dist.all_reduce on a "taco" group', codec, lambda: dist.all_reduce(x, group=g), algo)
        if g.routed["allreduce"] == before:
            raise RuntimeError("the taco group did not route its all_reduce through libtaco")
    sync()

    base = results[0]["us"]
    info = {
        "date": datetime.date.today().isoformat(),
        "gpu": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "cupy": cp.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "libtaco": taco.library_version(),
        "python": sys.version.split()[0],
        "count": n,
        "dtype": a.dtype,
        "bytes": n * x.element_size(),
        "iters": a.iters,
        "reps": a.reps,
    }
    print(f"Host time per call, one-rank NCCL group, {n} x {a.dtype} ({info['bytes']} B), "
          f"median of {a.reps} x {a.iters} calls; {info['gpu']}, torch {info['torch']}, CuPy {info['cupy']}, "
          f"NCCL {info['nccl']}, libtaco {info['libtaco']}, Python {info['python']}, {info['date']}")
    print()
    print("| call | codec | algorithm | µs / call | vs torch.distributed |")
    print("|---|---|---|---:|---:|")
    for r in results:
        print(f"| {r['call']} | {r['codec']} | {r['algo'] or '-'} | {r['us']:.2f} | {r['us'] / base:.2f}x |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"info": info, "results": results}, f, indent=1)
    tt.destroy_communicators()  # the "taco" groups' communicators too
    del taco_groups
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

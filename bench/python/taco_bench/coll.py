"""Collective benchmark in the style of nccl-tests, with the plain collective
and a do-it-yourself FP8 baseline measured in the same run.

    python -m taco bench coll --loopback 4 [-b 1K] [-e 1G] [-f 2] [-n 20] [-w 5] [-d fp32]
                              [--op allreduce,...] [--codec taco,fp8-block] [--algo auto] [-G 0]
                              [--plot out.png] [-J out.json]
    torchrun --nproc-per-node 8 -m taco bench coll ...        (one GPU per rank)
    mpirun -np 8 python -m taco bench coll ...                (mpi4py; one GPU per rank)

Per size and codec: size (bytes of the uncompressed buffer: the AllReduce
buffer, ReduceScatter's input, AllGather's output, AlltoAll's buffer), count
(elements of that buffer), type, algo (the AllReduce algorithm the call ran,
Communicator.allreduce_algo: --algo forces one for the codecs; "diy" for the DIY
baseline, "-" for the other collectives), time (us per call; the slowest rank),
algbw = size / time, busbw = algbw x NCCL's factor (AllReduce 2(n-1)/n, the
others (n-1)/n) on uncompressed bytes; the plain collective (codec "none",
algorithm plain: ncclAllReduce etc., or loopback copies) measured in the same
run; speedup = plain time / time; wire = uncompressed bytes over compressed
bytes (headers included) of the piece each rank sends, as taco_perf's wire
column: a piece is 1/P of the buffer, for AllReduce a shard on codec-block
boundaries; 1.00 when the call runs uncompressed (codec none, AllReduce
algorithm plain or oneshot-raw, the other collectives below the fallback
threshold); max_err = max|y-e|/max|e| and rms_err = sqrt(sum (y-e)^2 / sum e^2)
against the exact fp64 result e over every rank's output; #diff = ranks whose
output is not bit-identical to rank 0's (AllReduce and AllGather, where every
rank holds the same result).

DIY (AllReduce only, --diy, on by default): what a user writes without libtaco:
per-block (256) absmax FP8 E4M3 quantisation in PyTorch (torch.float8_e4m3fn,
fp32 scales), an all-gather of payloads and scales (torch.distributed
all_gather_into_tensor under torchrun; a libtaco AllGather with codec "none",
i.e. ncclAllGather or loopback copies, under mpirun and --loopback), then a
local dequantise and sum in rank order.

-G N captures N calls into one CUDA graph and times graph replays (removes the
Python launch overhead; nccl-tests' -G). Inputs are Laplace(0, 1), seeded per
rank. Needs PyTorch with CUDA.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

from taco.comm import ALGOS

from . import options
from .progress import Progress

OPS = ("allreduce", "reduce_scatter", "allgather", "alltoall")
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
DIY_BLOCK = 256
FP8_MAX = 448.0


def bus_factor(op: str, n: int) -> float:
    return 2.0 * (n - 1) / n if op == "allreduce" else (n - 1) / n


# ------------------------------------------------------------------ the world


class World:
    """Who runs: P loopback ranks in this process, or one rank per process
    (torchrun: torch.distributed; mpirun: mpi4py). `local` lists the global
    ranks that live in this process."""

    def __init__(self, loopback: int | None):
        import torch

        self.torch = torch
        self.pg = None
        self.mpi = None
        if loopback:
            self.mode, self.size, self.rank, self.local = "loopback", int(loopback), 0, list(range(int(loopback)))
            torch.cuda.set_device(torch.cuda.current_device())
        elif "TORCHELASTIC_RUN_ID" in os.environ or ("WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ):
            import torch.distributed as dist

            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dev = torch.device("cuda", torch.cuda.current_device())
            if not dist.is_initialized():
                dist.init_process_group("nccl", device_id=dev)
            self.mode, self.pg = "torchrun", dist
            self.size, self.rank = dist.get_world_size(), dist.get_rank()
            self.local = [self.rank]
        elif any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE")):
            from mpi4py import MPI

            self.mpi = MPI.COMM_WORLD
            lr = next((os.environ[k] for k in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                                "MV2_COMM_WORLD_LOCAL_RANK") if k in os.environ), None)
            ndev = torch.cuda.device_count()
            torch.cuda.set_device(int(lr) % ndev if lr is not None else self.mpi.Get_rank() % ndev)
            self.mode, self.size, self.rank = "mpi", self.mpi.Get_size(), self.mpi.Get_rank()
            self.local = [self.rank]
        else:
            self.mode, self.size, self.rank, self.local = "single", 1, 0, [0]
        self.device = torch.device("cuda", torch.cuda.current_device())
        self._comms: dict[str, list] = {}

    def comms(self, codec: str, config: dict) -> list:
        """The communicators (one per local rank) for `codec`, created once."""
        if codec not in self._comms:
            from taco import comm as _comm

            cfg = dict(config, codec=codec)
            if self.mode == "loopback":
                cs = _comm.loopback(self.size, **cfg)
            elif self.mode == "torchrun":
                from taco import torch as tt

                cs = [tt.communicator_from_process_group(None, **cfg)]
            elif self.mode == "mpi":
                cs = [_comm.Communicator.from_mpi(self.mpi, **cfg)]
            else:
                uid = _comm.get_unique_id()
                cs = [_comm.Communicator.from_unique_id(uid, 1, 0, **cfg)]
            self._comms[codec] = cs
        return self._comms[codec]

    def allgather_obj(self, obj) -> list:
        if self.mode == "torchrun":
            out = [None] * self.size
            self.pg.all_gather_object(out, obj)
            return out
        if self.mode == "mpi":
            return self.mpi.allgather(obj)
        return [obj]

    def barrier(self) -> None:
        self.torch.cuda.synchronize()
        if self.mode == "torchrun":
            self.pg.barrier()
        elif self.mode == "mpi":
            self.mpi.Barrier()

    def close(self) -> None:
        self.torch.cuda.synchronize()
        if self.mode == "torchrun":
            from taco import torch as tt

            tt.destroy_communicators()
        for cs in self._comms.values():
            for c in cs:
                if not c.closed:
                    c.close()
        self._comms.clear()
        if self.mode == "torchrun":
            self.pg.destroy_process_group()


# ------------------------------------------------------------------ data


def laplace(torch, count: int, rank: int, seed: int, dtype, device):
    """Laplace(0, 1) of `count` elements, a function of (seed, rank) only."""
    g = torch.Generator(device=device).manual_seed(seed * 1000003 + rank)
    u = torch.rand(count, generator=g, device=device, dtype=torch.float32) - 0.5
    a = u.abs().clamp_(max=0.5 - 2.0 ** -25)  # rand() can return 0: keep log1p(-2|u|) finite
    x = -torch.sign(u) * torch.log1p(-2.0 * a)
    return x.to(dtype)


def exact_result(torch, op: str, rank: int, P: int, count: int, gen) -> Any:
    """The exact fp64 result rank `rank` should hold; gen(j) is rank j's input."""
    if op == "allreduce":
        e = None
        for j in range(P):
            xj = gen(j).double()
            e = xj if e is None else e.add_(xj)
        return e
    if op == "reduce_scatter":
        m = count // P
        e = None
        for j in range(P):
            xj = gen(j)[rank * m:(rank + 1) * m].double()
            e = xj if e is None else e.add_(xj)
        return e
    if op == "allgather":
        return torch.cat([gen(j).double() for j in range(P)])
    m = count // P  # alltoall: block j of rank j's input lands at block j here
    return torch.cat([gen(j)[rank * m:(rank + 1) * m].double() for j in range(P)])


def fingerprint(torch, t) -> tuple[int, int]:
    b = t.contiguous().view(-1).view(torch.int16 if t.element_size() == 2 else torch.int32).to(torch.int64)
    w = torch.arange(b.numel(), device=b.device, dtype=torch.int64) % 1021 + 1
    return int(b.sum()), int((b * w).sum())


# ------------------------------------------------------------------ DIY baseline


class DiyAllReduce:
    """Per-block FP8 quantise (PyTorch) + all-gather of payload and scales + dequantise and sum."""

    def __init__(self, world: World, count: int, dtype, config: dict):
        torch = world.torch
        self.w, self.torch, self.count = world, torch, count
        self.nb = -(-count // DIY_BLOCK)
        self.padded = self.nb * DIY_BLOCK
        self.P = world.size
        self.none = None if world.mode == "torchrun" else world.comms("none", config)

    def wire_bytes(self) -> int:
        return self.padded + 4 * self.nb

    def _quantize(self, x):
        torch = self.torch
        xf = x.float()
        if self.padded != self.count:
            xf = torch.nn.functional.pad(xf, (0, self.padded - self.count))
        xb = xf.view(self.nb, DIY_BLOCK)
        scale = xb.abs().amax(dim=1, keepdim=True) / FP8_MAX
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = (xb / scale).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q.view(-1).view(torch.uint8), scale.view(-1)

    def _dequant_sum(self, q_all, s_all, out):
        torch = self.torch
        q = q_all.view(torch.float8_e4m3fn).view(self.P, self.nb, DIY_BLOCK).float()
        y = q * s_all.view(self.P, self.nb, 1)
        acc = y[0]
        for j in range(1, self.P):  # rank order, as a careful user would (deterministic)
            acc = acc + y[j]
        out.copy_(acc.view(-1)[:self.count].to(out.dtype))

    def __call__(self, xs, outs) -> None:
        torch = self.torch
        qs, ss = zip(*[self._quantize(x) for x in xs])
        if self.w.mode == "torchrun":
            q_all = torch.empty(self.P * self.padded, dtype=torch.uint8, device=xs[0].device)
            s_all = torch.empty(self.P * self.nb, dtype=torch.float32, device=xs[0].device)
            self.w.pg.all_gather_into_tensor(q_all, qs[0])
            self.w.pg.all_gather_into_tensor(s_all, ss[0])
            self._dequant_sum(q_all, s_all, outs[0])
            return
        from taco.comm import group

        q_alls = [torch.empty(self.P * self.padded, dtype=torch.uint8, device=x.device) for x in xs]
        s_alls = [torch.empty(self.P * self.nb, dtype=torch.float32, device=x.device) for x in xs]
        with group():  # payload bytes travel as float16 words through the uncompressed AllGather
            for c, q, qa, s, sa in zip(self.none, qs, q_alls, ss, s_alls):
                c.allgather(q.view(torch.float16), out=qa.view(torch.float16))
                c.allgather(s, out=sa)
        for qa, sa, o in zip(q_alls, s_alls, outs):
            self._dequant_sum(qa, sa, o)


# ------------------------------------------------------------------ measuring


def _launcher(op: str, comms: list, xs: list, outs: list):
    from taco.comm import group

    if len(comms) == 1:
        fn = getattr(comms[0], op)
        x, o = xs[0], outs[0]
        return lambda: fn(x, out=o)
    calls = [(getattr(c, op), x, o) for c, x, o in zip(comms, xs, outs)]

    def launch():
        with group():
            for fn, x, o in calls:
                fn(x, out=o)
    return launch


def time_us(world: World, launch, iters: int, warmup: int, graph_iters: int) -> float:
    """Microseconds per call on this rank (CUDA events on the current stream), slowest rank reported."""
    torch = world.torch
    stream = torch.cuda.current_stream()
    for _ in range(max(warmup, 1)):
        launch()
    if graph_iters > 0:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for _ in range(graph_iters):
                launch()
        reps = max(1, -(-iters // graph_iters))
        g.replay()
        run, n = (lambda: [g.replay() for _ in range(reps)]), reps * graph_iters
    else:
        run, n = (lambda: [launch() for _ in range(iters)]), iters
    world.barrier()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(stream)
    run()
    e1.record(stream)
    e1.synchronize()
    us = e0.elapsed_time(e1) * 1e3 / n
    return max(world.allgather_obj(us))


def check(world: World, op: str, count: int, outs: list, gen, dtype) -> tuple[float, float, Any]:
    """(max_err, rms_err, #diff) of outputs against the exact result, over every rank."""
    torch = world.torch
    torch.cuda.synchronize()
    num = den = mx_d = mx_e = 0.0
    for r, o in zip(world.local, outs):
        e = exact_result(torch, op, r, world.size, count, gen)
        d = o.reshape(-1).double() - e
        num += float((d * d).sum())
        den += float((e * e).sum())
        mx_d = max(mx_d, float(d.abs().max()))
        mx_e = max(mx_e, float(e.abs().max()))
        del e, d
    parts = world.allgather_obj((num, den, mx_d, mx_e, [fingerprint(torch, o) for o in outs]))
    num, den = sum(p[0] for p in parts), sum(p[1] for p in parts)
    mx_d, mx_e = max(p[2] for p in parts), max(p[3] for p in parts)
    fps = [fp for p in parts for fp in p[4]]
    ndiff = sum(fp != fps[0] for fp in fps) if op in ("allreduce", "allgather") else None
    return (mx_d / mx_e if mx_e > 0 else float("nan"),
            math.sqrt(num / den) if den > 0 else float("nan"), ndiff)


def wire_ratio(op: str, codec: str, count: int, P: int, dname: str, fallback: int, algo: str) -> float:
    """bench/perf/common.cc's wireRatio(): the uncompressed bytes of the piece each rank sends
    (for AllReduce the largest shard) over its compressed bytes (header included); 1.0 when the
    call runs uncompressed. AllReduce runs uncompressed with codec none or algorithm plain or
    oneshot-raw (the algorithm covers the fallback threshold), the other collectives with
    codec none, below the fallback threshold, or with more ranks than one accumulate kernel
    takes (TACO_MAX_ACCUM_INPUTS + 1)."""
    from taco import _lib, codec_info, compressed_size
    from taco._arrays import itemsize

    nbytes = count * itemsize(dname)
    if op == "allreduce":
        uncompressed = codec == "none" or algo in ("plain", "oneshot-raw")
    else:
        uncompressed = (codec == "none" or nbytes < fallback
                        or P - 1 > _lib.constants()["TACO_MAX_ACCUM_INPUTS"])
    if uncompressed:
        return 1.0
    piece = count // P
    if op == "allreduce":  # shards on codec-block boundaries (docs/collectives.md)
        B = codec_info(codec)["block_size"] or 256
        nblocks = -(-count // B)
        piece = min(count, -(-nblocks // P) * B)
    return piece * itemsize(dname) / compressed_size(codec, piece, dname)


def sizes(b: int, e: int, f: int) -> list[int]:
    out, s = [], b
    while s <= e:
        out.append(s)
        s = s * f if f > 1 else s + b
    return out


def run(args: argparse.Namespace) -> int:
    ops = args.op
    if args.minbytes > args.maxbytes:
        raise options.UsageError(f"argument -b/--minbytes: {args.minbytes} is more than -e/--maxbytes {args.maxbytes}")
    try:
        import torch
    except ImportError:
        print("python -m taco bench coll needs PyTorch with CUDA", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("python -m taco bench coll: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    codecs = [c for c in args.codec if c != "none"]
    dname = DTYPES[args.dtype]
    tdt = getattr(torch, dname)
    esz = torch.tensor([], dtype=tdt).element_size()
    config = {k: v for k, v in (("fallback_bytes", args.fallback_bytes), ("chunk_bytes", args.chunk_bytes),
                                ("algo", args.algo)) if v is not None}
    # the baseline is the transport's own collective whatever --algo or TACO_ALGO say
    plain_config = dict(config, algo="plain")

    world = World(args.loopback)
    # everything runs on one non-default stream (CUDA graphs cannot be captured on the default one)
    torch.cuda.set_stream(torch.cuda.Stream())
    P = world.size
    lead = world.rank == 0
    say = (lambda *a: print(*a, flush=True)) if lead else (lambda *a: None)
    fallback = world.comms("none", plain_config)[0].config["fallback_bytes"]
    say(f"# taco bench coll: {P} ranks ({world.mode}), {torch.cuda.get_device_name()}, type {args.dtype}, "
        f"iters {args.iters}, warmup {args.warmup}, graph {args.graph}, fallback {fallback} B"
        + (f", algo {args.algo}" if args.algo else "") + "; time = slowest rank, busbw on uncompressed bytes")
    hdr = (f"{'op':<14} {'size(B)':>12} {'count':>11} {'type':>5} {'codec':<14} {'algo':<11} {'time(us)':>10} "
           f"{'algbw':>7} {'busbw':>7} {'plain(us)':>10} {'p.busbw':>7} {'speedup':>7} {'wire':>5} "
           f"{'max_err':>9} {'rms_err':>9} {'#diff':>5}")
    say(hdr)
    rows = []
    cases = [(op, size) for op in ops for size in sizes(args.minbytes, args.maxbytes, args.stepfactor)
             if (size // esz) // P * P > 0]
    bar = Progress("bench coll", len(cases), "sizes", quiet=args.quiet or not lead)
    say = bar.print if lead else say
    with bar:
        for op, size in bar.each(cases, lambda case: f"{case[0]} {case[1]} B"):
            count = (size // esz) // P * P
            nbytes = count * esz
            in_count = count // P if op == "allgather" else count
            out_count = count // P if op == "reduce_scatter" else count

            def gen(j, _n=in_count):
                return laplace(torch, _n, j, args.seed, tdt, world.device)

            xs = [gen(r) for r in world.local]
            outs = [torch.empty(out_count, dtype=tdt, device=world.device) for _ in world.local]
            plain_us = time_us(world, _launcher(op, world.comms("none", plain_config), xs, outs),
                               args.iters, args.warmup, args.graph)
            entries = [("none", None)] + [(c, None) for c in codecs]
            if op == "allreduce" and args.diy:
                entries.append(("diy-fp8", DiyAllReduce(world, count, tdt, plain_config)))
            for name, diy in entries:
                if diy is None:
                    comms = world.comms(name, plain_config if name == "none" else config)
                    launch = _launcher(op, comms, xs, outs)
                    try:
                        algo = comms[0].allreduce_algo(count, dname) if op == "allreduce" else "-"
                        launch()
                    except Exception as e:  # noqa: BLE001 - e.g. a codec not defined for this dtype
                        say(f"{op:<14} {nbytes:>12} {count:>11} {args.dtype:>5} {name:<14} skipped: {e}")
                        continue
                    us = plain_us if name == "none" else time_us(world, launch, args.iters, args.warmup,
                                                                   args.graph)
                    wire = wire_ratio(op, name, count, P, dname, fallback, algo)
                else:
                    algo = "diy"
                    launch = lambda: diy(xs, outs)  # noqa: E731
                    launch()
                    us = time_us(world, launch, args.iters, args.warmup, args.graph)
                    plain_recv = (2.0 * (P - 1) / P if P > 1 else 1.0) * count * esz
                    diy_recv = (P - 1 if P > 1 else 1) * diy.wire_bytes()
                    wire = plain_recv / diy_recv
                if args.check:
                    for o in outs:
                        o.fill_(float("nan"))
                    launch()
                    mx, rms, ndiff = check(world, op, count, outs, gen, tdt)
                else:
                    mx = rms = float("nan")
                    ndiff = None
                algbw = nbytes / (us * 1e-6) / 1e9
                busbw = algbw * bus_factor(op, P)
                p_busbw = nbytes / (plain_us * 1e-6) / 1e9 * bus_factor(op, P)
                row = {"op": op, "size": nbytes, "count": count, "type": args.dtype, "codec": name,
                       "algo": algo, "time_us": us, "algbw": algbw, "busbw": busbw, "plain_time_us": plain_us,
                       "plain_busbw": p_busbw, "speedup": plain_us / us, "wire": wire,
                       "max_err": mx, "rms_err": rms, "ndiff": ndiff}
                rows.append(row)
                say(f"{op:<14} {nbytes:>12} {count:>11} {args.dtype:>5} {name:<14} {algo:<11} {us:>10.1f} "
                    f"{algbw:>7.2f} {busbw:>7.2f} {plain_us:>10.1f} {p_busbw:>7.2f} {plain_us / us:>7.2f} {wire:>5.2f} "
                    f"{mx:>9.2e} {rms:>9.2e} {'-' if ndiff is None else ndiff:>5}")
            del xs, outs
    bad_ranks = sum(r["ndiff"] or 0 for r in rows)
    say(f"# #diff total: {bad_ranks}")
    meta = {"ranks": P, "mode": world.mode, "device": torch.cuda.get_device_name(), "type": args.dtype,
            "iters": args.iters, "warmup": args.warmup, "graph": args.graph, "fallback_bytes": fallback,
            "algo": args.algo}
    if lead and args.json:
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=2)
        say(f"# wrote {args.json}")
    if lead and args.plot:
        plot(rows, meta, args.plot)
        say(f"# wrote {args.plot}")
    world.close()
    return 1 if bad_ranks else 0


def plot(rows: list[dict], meta: dict, path: str, bw_label: str = "busbw (GB/s, uncompressed bytes)") -> None:
    """busbw and speedup vs size: one line per codec, one for the plain collective."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [o for o in OPS if any(r["op"] == o for r in rows)]
    fig, axes = plt.subplots(len(ops), 2, figsize=(12, 4 * len(ops)), squeeze=False)
    for i, op in enumerate(ops):
        rs = [r for r in rows if r["op"] == op]
        names = list(dict.fromkeys(r["codec"] for r in rs))
        for name in names:
            pts = [r for r in rs if r["codec"] == name]
            label = "plain (codec none)" if name == "none" else name
            axes[i][0].plot([r["size"] for r in pts], [r["busbw"] for r in pts], marker="o", ms=3, label=label)
            axes[i][1].plot([r["size"] for r in pts], [r["speedup"] for r in pts], marker="o", ms=3, label=label)
        for ax, what in ((axes[i][0], bw_label), (axes[i][1], "speedup vs plain")):
            ax.set_xscale("log", base=2)
            if ax is axes[i][0]:
                ax.set_yscale("log")
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel(what)
            ax.set_title(f"{op}, {meta['ranks']} ranks ({meta['mode']}), {meta['type']}, {meta['device']}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        axes[i][1].axhline(1.0, color="k", lw=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--loopback", type=options.integer(1), default=None, metavar="N",
                   help="N ranks emulated on this GPU (default: torchrun / mpirun ranks, else 1)")
    p.add_argument("-b", "--minbytes", type=options.count(1), default=1 << 10,
                   help="smallest size (bytes; default 1K)")
    p.add_argument("-e", "--maxbytes", type=options.count(1), default=64 << 20,
                   help="largest size (bytes; default 64M)")
    p.add_argument("-f", "--stepfactor", type=options.integer(1), default=2,
                   help="size multiplier between steps (1: add minbytes at each step)")
    p.add_argument("-n", "--iters", type=options.integer(1), default=20, help="timed iterations per size")
    p.add_argument("-w", "--warmup", type=options.integer(0), default=5, help="untimed iterations first")
    p.add_argument("-c", "--check", type=options.integer(0), choices=(0, 1), default=1,
                   help="1: check results against the exact sum")
    p.add_argument("-d", "--dtype", type=options.choice(DTYPES, "dtype"), default="fp32", help="fp32, bf16 or fp16")
    p.add_argument("-G", "--graph", type=options.integer(0), default=0, metavar="N",
                   help="capture N calls into a CUDA graph and time replays (0: plain launches)")
    p.add_argument("--op", type=options.one_of(OPS, "collective"), default=["allreduce"],
                   help=f"comma list of {', '.join(OPS)} (default allreduce)")
    p.add_argument("--codec", type=options.codec_specs, default=["taco"],
                   help="comma list of codec specs (default taco; plain 'none' is always measured)")
    p.add_argument("--algo", type=options.choice(ALGOS, "AllReduce algorithm"), default=None, metavar="NAME",
                   help=f"AllReduce algorithm of the codecs' communicators: {', '.join(ALGOS)} (default: "
                        f"TACO_ALGO, else auto); the plain collective always runs plain")
    p.add_argument("--diy", dest="diy", action="store_true", default=True,
                   help="measure the do-it-yourself FP8 baseline (AllReduce; default on)")
    p.add_argument("--no-diy", dest="diy", action="store_false")
    p.add_argument("--fallback-bytes", type=options.count(0), default=None,
                   help="communicator fallback threshold (default: TACO_FALLBACK_BYTES or the library's)")
    p.add_argument("--chunk-bytes", type=options.count(1), default=None, help="pipeline chunk size")
    p.add_argument("--seed", type=options.integer(0), default=0)
    p.add_argument("--plot", default=None, metavar="PNG", help="write busbw and speedup vs size (matplotlib)")
    p.add_argument("-J", "--json", default=None, metavar="PATH", help="also write the rows as JSON")
    options.add_common(p)


def main(argv: list[str] | None = None, prog: str = "python -m taco_bench coll") -> int:
    p = options.Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return options.run_command(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())

"""The AllReduce table: measured on your own GPUs, cached, and used by every AllReduce
(docs/tuning.md, "The AllReduce table").

    import taco
    comms = taco.loopback(4)                    # every rank of a loopback world at once
    table = taco.tune(comms, "bfloat16")
    comm = taco.Communicator.from_mpi()         # one rank per process: every rank calls it
    table = comm.tune("bfloat16")
    comm.tune_table("bfloat16")                 # the table in use, or None (the built-in model)

With TACO_TUNE=auto (the default) the library measures by itself at the first eager
AllReduce of a dtype where no cached table fits; tune() measures now, and again.

    python -m taco tune --loopback 8 [--dtype bf16,fp32] [--codec fp8-block] [--plot tune.png]
    mpirun -np 8 python -m taco tune [...]          (mpi4py; one GPU per rank)
    torchrun --nproc-per-node 8 -m taco tune [...]  (one GPU per rank)

prints, per dtype, a table in the style of nccl-tests: the size, every algorithm's time
(us, the slowest rank's median; "-": it cannot run here, "demoted": it failed its check;
"fused-large": the fused two-shot with a scratch four times the chunk's, measured where a call
takes several launches with the communicator's own, and kept where the table takes it),
the choice and its speedup over plain (the transport's uncompressed AllReduce, NCCL's);
the lowest rank of each host writes the table to the cache (TACO_TUNE_FILE, else
$XDG_CACHE_HOME/taco/tune.json or ~/.cache/taco/tune.json).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from . import _lib
from ._arrays import stream_handle, taco_dtype
from .errors import check

__all__ = ["tune", "cache_path", "cached_tables", "format_table", "main"]

# The table's columns: the algorithms, the fused two-shot twice (at the communicator's chunk and
# with a scratch four times larger, "fused-large"; both run the algorithm "fused").
ALGO_COLUMNS = ("plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged")
_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
           "fp32": "float32", "float32": "float32"}


def tune(comms: Any, dtype: Any, stream: Any = None) -> dict | None:
    """Measure the AllReduce table of `dtype` (tacoCommTune): `comms` is one Communicator (an
    NCCL rank; every rank calls it) or every rank of one loopback world, in rank order
    (tacoCommTuneLoopback). Runs on `stream` (default: the legacy stream) of the current device
    and returns when done, with the table (Communicator.tune_table), or None where there is
    nothing to measure (one rank, or a single algorithm)."""
    from .comm import Communicator

    world = [comms] if isinstance(comms, Communicator) else list(comms) if isinstance(comms, (list, tuple)) else None
    if not world or not all(isinstance(c, Communicator) for c in world):
        raise TypeError(f"comms: expected a Communicator or a list of the ranks of one loopback world, "
                        f"got {type(comms).__name__}")
    dt = taco_dtype(dtype)
    f, lib = _lib.ffi(), _lib.lib()
    s = f.cast("tacoStream_t", stream_handle(stream) or 0)
    if len(world) == 1:
        h = world[0]._handle()
        check(lib.tacoCommTune(h, dt, s), h)
    else:
        handles = [c._handle() for c in world]
        arr = f.new("tacoComm_t[]", handles)
        check(lib.tacoCommTuneLoopback(arr, len(handles), dt, s), handles[0])
    return world[0].tune_table(dtype)


# ------------------------------------------------------------------ the cache


def cache_path() -> str:
    """The cache file the library uses (the rule of libtaco/core/params.cc): TACO_TUNE_FILE,
    else $XDG_CACHE_HOME/taco/tune.json (an absolute XDG_CACHE_HOME), else
    ~/.cache/taco/tune.json; "" when none applies."""
    if os.environ.get("TACO_TUNE_FILE"):
        return os.environ["TACO_TUNE_FILE"]
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "taco", "tune.json")
    home = os.environ.get("HOME", "")
    return os.path.join(home, ".cache", "taco", "tune.json") if home else ""


def key_fields(key: str) -> dict:
    """A table's fingerprint ("gpu=...;sms=...;...") as a dict."""
    return dict(part.split("=", 1) for part in key.split(";") if "=" in part)


def cached_tables(path: str | None = None) -> tuple[str, list[dict], str]:
    """(path, its tables, a problem or "") of the cache file; no file is no tables and no problem."""
    path = cache_path() if path is None else path
    if not path or not os.path.exists(path):
        return path, [], ""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return path, [], f"unreadable ({e}): the library ignores it and replaces it on its next write"
    if not isinstance(doc, dict) or doc.get("format") != "libtaco-tune-1" or not isinstance(doc.get("tables"), list):
        return path, [], "not a libtaco table cache: the library ignores it"
    return path, [t for t in doc["tables"] if isinstance(t, dict) and isinstance(t.get("key"), str)], ""


def _size(n: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def info_lines(gpu_names: list[str]) -> list[str]:
    """`python -m taco info`'s section: the cached tables of this machine's GPUs, with the
    algorithm each size picks (as the communicator that measured it chose)."""
    path, tables, problem = cached_tables()
    out = [f"AllReduce tables (TACO_TUNE={os.environ.get('TACO_TUNE', 'auto')}; cache {path or 'none: set HOME or TACO_TUNE_FILE'}):"]
    if problem:
        return out + [f"  {problem}"]
    mine = [t for t in tables if key_fields(t["key"]).get("gpu") in set(gpu_names)]
    if not tables:
        out.append("  none cached: the first eager AllReduce of each dtype measures one (TACO_TUNE=auto)")
    for t in mine:
        k = key_fields(t["key"])
        choice = t.get("choice") or []
        sizes = ", ".join(f"{_size(b)} {c}" for b, c in zip(t.get("bytes", []), choice))
        demoted = f"; demoted: {', '.join(t['demoted'])}" if t.get("demoted") else ""
        out.append(f"  {k.get('dtype', '?')}, {k.get('ranks', '?')} ranks ({k.get('per_host', '?')} per host), "
                   f"codec {k.get('codec', '?')}, peer memory {k.get('route', '?')}, chunk {_size(int(k.get('chunk', 0)))}"
                   f"{demoted}")
        out.append(f"    {sizes or '(no choices recorded)'}")
    others = len(tables) - len(mine)
    if others:
        out.append(f"  and {others} table(s) of other GPUs or machines")
    return out


# ------------------------------------------------------------------ the report


def _cell(v: Any, demoted: bool) -> str:
    if demoted:
        return "demoted"
    return "-" if v is None else f"{v:.2f}"


def format_table(table: dict) -> list[str]:
    """The table as nccl-tests-style lines: size, every algorithm's time, the choice, its
    speedup over plain."""
    k = key_fields(table.get("key", ""))
    cols = list(table.get("algos", ALGO_COLUMNS))
    demoted = set(table.get("demoted", []))
    ms = table.get("ms", 0)
    lines = [
        f"#  AllReduce table: {table.get('dtype', '?')}, {table.get('ranks', k.get('ranks', '?'))} ranks "
        f"({k.get('per_host', '?')} per host), codec {k.get('codec', '?')}, peer memory {k.get('route', '?')}, "
        f"{table.get('source', '?')}" + (f" in {ms / 1000:.2f} s" if table.get("source") == "measured" else ""),
        "#  times: us per call, the slowest rank's median; '-': cannot run here; 'demoted': failed its check",
        "#",
        "#" + f"{'size':>11}" + "".join(f"{c:>13}" for c in cols) + f"{'choice':>13}{'speedup':>9}",
        "#" + f"{'(B)':>11}" + "".join(f"{'(us)':>13}" for _ in cols) + f"{'':>13}{'vs plain':>9}",
    ]
    for i, b in enumerate(table.get("bytes", [])):
        row = table["us"][i]
        choice = table["choice"][i] if i < len(table.get("choice", [])) else "?"
        t = dict(zip(cols, row))
        plain, chosen = t.get("plain"), t.get(choice)
        speed = f"{plain / chosen:.2f}" if plain and chosen else "-"
        lines.append(f" {b:>11}" + "".join(f"{_cell(v, c in demoted):>13}" for c, v in zip(cols, row))
                     + f"{choice:>13}{speed:>9}")
    if table.get("notes"):
        lines.append(f"#  demoted: {table['notes']}")
    return lines


def plot(tables: list[dict], path: str) -> None:
    """Speedup over plain against size, one line per algorithm, one panel per dtype."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(6 * len(tables), 4.5), squeeze=False)
    for ax, t in zip(axes[0], tables):
        cols = list(t.get("algos", ALGO_COLUMNS))
        for j, name in enumerate(cols):
            pts = [(b, row[0] / row[j]) for b, row in zip(t["bytes"], t["us"]) if row[0] and row[j]]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=name)
        chosen = [(b, row[0] / row[cols.index(c)]) for b, row, c in zip(t["bytes"], t["us"], t.get("choice", []))
                  if c in cols and row[0] and row[cols.index(c)]]
        if chosen:
            ax.plot([p[0] for p in chosen], [p[1] for p in chosen], "k--", lw=1, label="choice")
        k = key_fields(t.get("key", ""))
        ax.set_xscale("log", base=2)
        ax.axhline(1.0, color="grey", lw=0.5)
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("speedup over plain")
        ax.set_title(f"{t.get('dtype')}, {k.get('ranks')} ranks, {k.get('codec')}, {k.get('route')}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# ------------------------------------------------------------------ python -m taco tune

_SIZE = re.compile(r"^(\d+)([KMG]?)$", re.I)


def _size_arg(s: str) -> int:
    m = _SIZE.match(s.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {s!r} (e.g. 65536, 64K, 256M, 1G)")
    v = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]
    if v < 4096:
        raise argparse.ArgumentTypeError(f"must be at least 4K (the smallest size measured), got {s!r}")
    return v


def _dtypes_arg(s: str) -> list[str]:
    out = []
    for item in s.split(","):
        if item.strip() not in _DTYPES:
            raise argparse.ArgumentTypeError(f"unknown dtype {item!r}: expected bf16, fp16 or fp32 (comma list)")
        out.append(_DTYPES[item.strip()])
    return out


def _loopback_arg(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 2:
        raise argparse.ArgumentTypeError(f"must be >= 2 (one rank has nothing to choose), got {s!r}")
    return v


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser(prog: str) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--loopback", type=_loopback_arg, default=None, metavar="N",
                   help="N ranks emulated on this GPU (a loopback world) instead of one rank per process")
    p.add_argument("--dtype", type=_dtypes_arg, default=["bfloat16"], metavar="LIST",
                   help="comma list of bf16, fp16, fp32 (default bf16)")
    p.add_argument("--codec", default=None, help="codec spec (default: TACO_CODEC, else the library's)")
    p.add_argument("--chunk-bytes", type=_size_arg, default=None, metavar="SIZE",
                   help="communicator chunk (default: TACO_CHUNK_BYTES, else the library's)")
    p.add_argument("--max-bytes", type=_size_arg, default=None, metavar="SIZE",
                   help="the largest size measured (sets TACO_TUNE_MAX_BYTES; default 256M)")
    p.add_argument("--file", default=None, metavar="PATH", help="the cache file (sets TACO_TUNE_FILE)")
    p.add_argument("--plot", default=None, metavar="PNG", help="draw speedup over plain against size (matplotlib)")
    p.add_argument("-J", "--json", default=None, metavar="PATH", help="also write the tables as JSON")
    p.add_argument("--debug", action="store_true",
                   help="show the traceback of a library error (also with TACO_DEBUG set)")
    return p


def _writable(path: str) -> bool:
    """Whether a file may be written at `path` (without creating it)."""
    if os.path.isdir(path):
        return False
    if os.path.exists(path):
        return os.access(path, os.W_OK)
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK | os.X_OK)


def _launcher() -> str:
    if "TORCHELASTIC_RUN_ID" in os.environ or ("WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ):
        return "torchrun"
    if any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE")):
        return "mpi"
    return ""


def _communicators(launcher: str, loopback: int | None, config: dict) -> tuple[list, int]:
    """(the communicators this process drives, its first rank)."""
    from . import _cuda
    from .comm import Communicator, loopback as make_loopback

    if loopback:
        return make_loopback(loopback, **config), 0
    if launcher == "torchrun":
        import torch
        import torch.distributed as dist

        from . import torch as taco_torch

        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        if not dist.is_initialized():
            dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
        return [taco_torch.communicator_from_process_group(None, **config)], dist.get_rank()
    from mpi4py import MPI

    local = next((os.environ[k] for k in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK")
                  if k in os.environ), None)
    rank = MPI.COMM_WORLD.Get_rank()
    ndev = _cuda.device_count()
    rt = _cuda.cudart()
    _cuda._rt_check(rt.cudaSetDevice(int(local) % ndev if local is not None else rank % ndev), "cudaSetDevice")
    return [Communicator.from_mpi(MPI.COMM_WORLD, **config)], rank


def main(argv: list[str] | None = None, prog: str = "python -m taco tune") -> int:
    args = _parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _main(args, prog)
    except Exception as e:  # the library's errors, and files: one line (a traceback with --debug)
        from .errors import TacoError

        if not isinstance(e, (TacoError, OSError)) or args.debug or os.environ.get("TACO_DEBUG"):
            raise
        print(f"{prog}: error: {e} (--debug shows the traceback)", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace, prog: str) -> int:
    if args.codec is not None:  # refused now, naming --codec, rather than by every rank's creation
        from .codec import find_codec

        try:
            find_codec(args.codec)
        except (ValueError, TypeError) as e:
            print(f"{prog}: error: --codec: {e}", file=sys.stderr)
            return 2
    for opt, path in (("-J", args.json), ("--plot", args.plot)):
        if path is not None and not _writable(path):  # written after the whole measurement
            print(f"{prog}: error: {opt}: cannot write '{path}'", file=sys.stderr)
            return 2
    launcher = _launcher()
    if not args.loopback and not launcher:
        print(f"{prog}: error: run one process per GPU under mpirun or torchrun, or pass --loopback N to emulate "
              f"N ranks on this GPU", file=sys.stderr)
        return 2
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"{prog}: error: --plot needs matplotlib, which is not installed (pip install matplotlib)",
                  file=sys.stderr)
            return 2
    from . import _cuda

    if _cuda.device_count() == 0:
        print(f"{prog}: error: no CUDA device: the tuner measures on this machine's GPUs", file=sys.stderr)
        return 1
    # Read once, when the library first looks: before any library call.
    if args.max_bytes is not None:
        os.environ["TACO_TUNE_MAX_BYTES"] = str(args.max_bytes)
    if args.file is not None:
        os.environ["TACO_TUNE_FILE"] = os.path.abspath(args.file)
    config = {"codec": args.codec, "chunk_bytes": args.chunk_bytes}
    comms, first = _communicators(launcher, args.loopback, {k: v for k, v in config.items() if v is not None})
    lead = first == 0
    tables = []
    try:
        for dt in args.dtype:
            table = tune(comms, dt)
            if table is None:
                if lead:
                    print(f"# {dt}: nothing to measure (one rank, or one algorithm this communicator can run)")
                continue
            tables.append(table)
            if lead:
                print("\n".join(format_table(table)), flush=True)
                print(f"#  cache: {cache_path()}", flush=True)
    finally:
        for c in comms:
            c.close()
    if lead and args.json:
        with open(args.json, "w") as f:
            json.dump(tables, f, indent=1)
        print(f"# wrote {args.json}")
    if lead and args.plot and tables:
        plot(tables, args.plot)
        print(f"# wrote {args.plot}")
    return 0

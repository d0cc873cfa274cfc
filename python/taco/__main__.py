"""python -m taco: information and benchmarks.

    python -m taco info                 library, header, NCCL, GPUs, codecs, TACO_* settings, cached tables
    python -m taco tune [...]           measure the AllReduce table on this machine's GPUs (see tune --help)
    python -m taco bench codec [...]    codec speed vs memcpy and accuracy (see --help)
    python -m taco bench coll [...]     collectives vs plain NCCL and a DIY FP8 baseline (see --help)
    python -m taco accuracy [...]       codec error on real tensor-parallel partial sums (see --help)
    python -m taco train [...]          tensor-parallel training benchmark of the codecs (see --help)

`info` and `tune` are the library's own; the others run the benchmark harness, the package taco_bench,
which the library's wheel leaves out: install it from the repository with
`pip install ./bench/python`. It is found through the entry point it declares (group taco.harness),
not by its name.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.metadata
import importlib.util
import os
import sys

from . import _cuda, _lib


def _nccl_candidates() -> list[tuple[str, str]]:
    """(where it came from, path) for every NCCL this process could use."""
    out: list[tuple[str, str]] = []
    env = os.environ.get("TACO_NCCL_LIBRARY")
    if env:
        out.append(("TACO_NCCL_LIBRARY", env))
    try:
        with open("/proc/self/maps") as f:
            loaded = sorted({ln.split()[-1] for ln in f if "libnccl.so" in ln})
        out += [("already loaded in this process", p) for p in loaded if p.startswith("/")]
    except OSError:
        pass
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        spec = None
    if spec and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            out += [("nvidia-nccl wheel", p) for p in sorted(glob.glob(os.path.join(d, "lib", "libnccl.so*")))]
    out.append(("system linker path", "libnccl.so.2"))
    return out


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _so_path(handle: ctypes.CDLL, symbol: str) -> str | None:
    """The file a loaded library's `symbol` lives in (dladdr)."""
    try:
        addr = ctypes.cast(getattr(handle, symbol), ctypes.c_void_p)
        for libname in (None, "libdl.so.2"):
            try:
                dladdr = ctypes.CDLL(libname).dladdr
                break
            except (OSError, AttributeError):
                continue
        else:
            return None
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (AttributeError, OSError):
        pass
    return None


def nccl_info() -> list[dict]:
    found, seen = [], set()
    for source, path in _nccl_candidates():
        try:
            h = ctypes.CDLL(path)
        except OSError as e:
            if source == "TACO_NCCL_LIBRARY":  # the user asked for this one: say why it fails
                found.append({"source": source, "path": path, "version": None, "error": str(e)})
            continue
        v = ctypes.c_int(0)
        try:
            rc = h.ncclGetVersion(ctypes.byref(v))
        except AttributeError:
            rc = -1
        real = _so_path(h, "ncclGetVersion") or path
        if real in seen:
            continue
        seen.add(real)
        code = v.value if rc == 0 else None
        ver = None
        if code is not None:
            # NCCL >= 2.9: MAJOR*10000 + MINOR*100 + PATCH; older: MAJOR*1000 + MINOR*100 + PATCH
            ver = (f"{code // 10000}.{code // 100 % 100}.{code % 100}" if code >= 20900
                   else f"{code // 1000}.{code // 100 % 10}.{code % 100}")
        found.append({"source": source, "path": real, "version": ver})
    return found


def info(out=sys.stdout) -> int:
    import taco

    p = lambda *a: print(*a, file=out)  # noqa: E731
    try:  # the header first: taco.__version__ is read from it
        header = _lib.header_path()
    except _lib.LibraryNotFoundError as e:
        p(f"taco (python)     at {os.path.dirname(taco.__file__)}")
        p(f"header            not found: {e}")
        return 1
    p(f"taco (python)     {taco.__version__} at {os.path.dirname(taco.__file__)}")
    p(f"header            {header}")
    rc = 0
    try:
        lib = _lib.lib()
        p(f"libtaco           {taco.library_version()} at {_lib.library_path()}")
    except _lib.LibraryNotFoundError as e:
        p(f"libtaco           not found: {e}")
        lib, rc = None, 1

    nccl = nccl_info()
    if not nccl:
        p("NCCL              not found (collectives unavailable; codecs work)")
    for i, n in enumerate(nccl):
        what = f"cannot load: {n['error']}" if n.get("error") else f"{n['version'] or '?'} at {n['path']}"
        p(f"{'NCCL' if i == 0 else '':<17} {what} ({n['source']})")

    dv, rv = _cuda.driver_version(), _cuda.runtime_version()
    if dv is None:
        p("CUDA driver       none")
    else:
        p(f"CUDA driver       {dv // 1000}.{dv % 1000 // 10}"
          + (f", runtime {rv // 1000}.{rv % 1000 // 10}" if rv else ""))
    gpus = _cuda.devices()
    if not gpus:
        p("GPUs              none")
    for g in gpus:
        p(f"GPU {g['index']:<13} {g['name']}, {g['memory_bytes'] / 2**30:.0f} GiB, "
          f"compute capability {g['compute_capability']}")

    if lib is not None:
        from .codec import _info

        p("")
        p(f"{'id':>2} {'codec':<14} {'block':>5} {'bits':>4} {'scales':>6} {'rot':>3} {'fmt':>3}  description")
        f = _lib.ffi()
        for i in range(lib.tacoNumCodecs):
            c = f.new("tacoCodec_t*")
            if lib.tacoCodecFromId(i, 0, c) != lib.tacoSuccess:
                continue
            d = _info(c[0])
            p(f"{d['id']:>2} {d['name']:<14} {d['block_size']:>5} {d['code_bits']:>4} "
              f"{d['scales_per_block']:>6} {'yes' if d['rotated'] else 'no':>3} "
              f"{d['format_version']:>3}  {d['description']}")

    p("")
    p("TACO_* environment (the library's table, tacoGetParamInfo; docs/tuning.md):")
    known = set()
    try:
        lib, ffi = _lib.lib(), _lib.ffi()
        name, dflt, meaning, value = (ffi.new("const char**") for _ in range(4))
        i = 0
        while lib.tacoGetParamInfo(i, name, dflt, meaning, value) == lib.tacoSuccess:
            n = ffi.string(name[0]).decode()
            known.add(n)
            v = ffi.string(value[0]).decode() if value[0] != ffi.NULL else None
            shown = f"{v}  (set)" if v is not None else f"{ffi.string(dflt[0]).decode() or '-'}  (default)"
            p(f"  {n:<24} {shown:<24} {ffi.string(meaning[0]).decode()}")
            i += 1
    except Exception as e:  # an older library without the table
        p(f"  (the library cannot list them: {e})")
    binding = {"TACO_LIBRARY": "Python binding: where libtaco.so is found",
               "TACO_INCLUDE": "Python binding: where taco.h is found"}
    for k, what in binding.items():
        p(f"  {k:<24} {os.environ.get(k, '-'):<24} {what}")
    for k, v in sorted(os.environ.items()):
        if k.startswith("TACO_") and k not in known and k not in binding:
            p(f"  {k}={v}   (not a libtaco variable: misspelt?)")
    p("")
    from .tuning import info_lines

    for line in info_lines([g["name"] for g in gpus]):
        p(line)
    return rc


# The harness's commands: (words on this command line) -> the taco_bench command they run.
_HARNESS = {("bench", "codec"): "codec", ("bench", "coll"): "coll", ("accuracy",): "accuracy", ("train",): "train"}
HARNESS_INSTALL = "pip install ./bench/python"
# The entry point group under which the harness declares its main(argv, prog) (bench/python's
# pyproject.toml): the library knows the group, not the package.
HARNESS_GROUP = "taco.harness"


def harness_entry_point() -> importlib.metadata.EntryPoint | None:
    """The installed harness's entry point (the first of group HARNESS_GROUP), or None."""
    try:
        found = importlib.metadata.entry_points(group=HARNESS_GROUP)
    except TypeError:  # Python 3.9: a dict of every group
        found = importlib.metadata.entry_points().get(HARNESS_GROUP, ())
    return next(iter(found), None)


def _harness(words: tuple, argv: list[str]) -> int:
    """Runs a harness command, or says how to install the harness (exit status 2)."""
    parent = " ".join(["python -m taco", *words[:-1]])  # the harness's main appends the command
    ep = harness_entry_point()
    if ep is None:
        print(f"{parent} {words[-1]}: the benchmark harness (package taco_bench, entry point group "
              f"{HARNESS_GROUP}) is not installed; from the libtaco repository: {HARNESS_INSTALL}", file=sys.stderr)
        return 2
    try:
        harness_main = ep.load()
    except ImportError as e:  # declared by an installed distribution whose package is gone or broken
        print(f"{parent} {words[-1]}: the benchmark harness's entry point {ep.value} cannot be loaded ({e}); "
              f"reinstall it from the libtaco repository: {HARNESS_INSTALL}", file=sys.stderr)
        return 2
    return harness_main([_HARNESS[words], *argv], prog=parent)


class _Parser(argparse.ArgumentParser):
    """Errors are one line, "python -m taco: error: ...", exit status 2 (argparse's), as the
    harness's commands print theirs."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for words in _HARNESS:
        if tuple(argv[:len(words)]) == words:
            return _harness(words, argv[len(words):])
    if argv[:1] == ["tune"]:
        from .tuning import main as tune_main

        return tune_main(argv[1:])
    parser = _Parser(prog="python -m taco", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", title="commands")
    sub.add_parser("info", help="library, header, NCCL, GPUs, codecs, TACO_* settings, cached AllReduce tables")
    bench = sub.add_parser("bench", help="benchmarks (taco_bench)")
    bsub = bench.add_subparsers(dest="benchmark", title="benchmarks")
    bsub.add_parser("codec", help="codec speed vs memcpy and accuracy (see codec --help)")
    bsub.add_parser("coll", help="collectives vs the plain collective and a DIY FP8 baseline (see coll --help)")
    sub.add_parser("accuracy",
                   help="codec error on real tensor-parallel partial sums (taco_bench; see accuracy --help)")
    sub.add_parser("train", help="tensor-parallel training benchmark of the codecs (taco_bench; see train --help)")
    sub.add_parser("tune", help="measure the AllReduce table on this machine's GPUs (see tune --help)")
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    if args.command == "bench":  # the harness's commands were dispatched above: no benchmark was named
        bench.error(f"choose a benchmark: {', '.join(bsub.choices)}")
    parser.error(f"choose a command: {', '.join(sub.choices)}")
    return 2


def cli(argv: list[str] | None = None) -> int:
    """main(), ending quietly when the reader of stdout goes away (`python -m taco info | head -1`):
    no traceback, exit status 141 (128 + SIGPIPE), as a shell tool killed by the signal."""
    try:
        rc = main(argv)
        sys.stdout.flush()  # inside the try: a closed pipe shows here, not at interpreter exit
        return rc
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush goes nowhere
        return 141


if __name__ == "__main__":
    sys.exit(cli())

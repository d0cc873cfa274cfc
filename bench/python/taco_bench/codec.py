"""python -m taco bench codec (taco_bench.codec): codec speed against the same run's device-to-device memcpy, and
accuracy (NMSE) on Laplace-distributed data.

    python -m taco bench codec [--count 2^28] [--dtype fp32,bf16,fp16] [--codec taco,...] [--block B]
                               [--iters 20] [--warmup 3] [--json out.json] [--host]

With a GPU (CuPy if importable, else PyTorch): for every codec x dtype, compress
and decompress are timed with CUDA events (warm-up, then the median of --iters
single-call timings). Bandwidth counts bytes read + bytes written:
  compress:   count*itemsize read + compressed bytes written
  decompress: compressed bytes read + count*itemsize written
  memcpy:     a cudaMemcpyAsync D2D of count*itemsize bytes, 2x that moved,
and each kernel's bandwidth is reported as a ratio to memcpy's, measured in
the same run on the same stream. Kernel calls go straight to the C entry points
with arguments prepared beforehand, so Python overhead is not timed.

Without a GPU (or with --host) the CPU codec (tacoHost*) runs on 2^20 elements
and the accuracy table is printed. Accuracy columns, both in float64:
  nmse     = sum((y - x)^2) / sum(x^2)
  max_err  = max|y - x| / max|x|   (max error relative to the largest input)
x is the input after rounding to the dtype, y its decompression.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import numpy as np

from taco import _arrays, _lib
from taco import codec as _codec
from taco.errors import NotSupportedError, TacoError, check

from . import options
from .progress import Progress

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
DEFAULT_GPU_COUNT = 1 << 28
DEFAULT_HOST_COUNT = 1 << 20


def laplace(count: int, seed: int = 0) -> np.ndarray:
    """numpy.random.default_rng(seed).laplace, float32, generated in chunks."""
    rng = np.random.default_rng(seed)
    x = np.empty(count, dtype=np.float32)
    step = 1 << 24
    for i in range(0, count, step):
        n = min(step, count - i)
        x[i:i + n] = rng.laplace(size=n)
    return x


def _errors(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    x64 = x.astype(np.float32).astype(np.float64)
    d = y.astype(np.float32).astype(np.float64) - x64
    den = float(np.dot(x64, x64))
    nmse = float(np.dot(d, d)) / den if den > 0 else float("nan")
    mx = float(np.max(np.abs(x64)))
    return nmse, (float(np.max(np.abs(d))) / mx if mx > 0 else float("nan"))


# ------------------------------------------------------------------ GPU backends


class _CupyBackend:
    name = "cupy"

    def __init__(self):
        import cupy as cp

        self.cp = cp
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.handle = self.stream.ptr
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def upload(self, x32: np.ndarray, dname: str):
        host = x32.astype(_arrays.numpy_dtype(dname))
        if dname == "bfloat16":
            host = host.view(np.uint16)  # CuPy has no bfloat16: carry the bits
        with self.stream:
            return self.cp.asarray(host)

    def empty(self, nbytes: int):
        with self.stream:
            return self.cp.empty(nbytes, dtype=np.uint8)

    def free_bytes(self) -> int:
        return int(self.cp.cuda.runtime.memGetInfo()[0])

    def to_host(self, a, dname: str) -> np.ndarray:
        self.stream.synchronize()
        h = self.cp.asnumpy(a)
        return h.view(_arrays.numpy_dtype(dname)) if dname == "bfloat16" else h

    def errors(self, x, y, dname: str) -> tuple[float, float]:
        cp = self.cp
        with self.stream:
            if dname == "bfloat16":
                xf = (x.astype(cp.uint32) << 16).view(cp.float32)
                yf = (y.astype(cp.uint32) << 16).view(cp.float32)
            else:
                xf, yf = x, y
            x64 = xf.astype(cp.float64)
            d = yf.astype(cp.float64) - x64
            den = float(cp.dot(x64, x64))
            num = float(cp.dot(d, d))
            mx = float(cp.abs(x64).max())
            md = float(cp.abs(d).max())
        return (num / den if den > 0 else float("nan")), (md / mx if mx > 0 else float("nan"))

    def memcpy(self, dst, src, nbytes: int):
        self.cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                         self.cp.cuda.runtime.memcpyDeviceToDevice, self.handle)

    def time_ms(self, fn, warmup: int, iters: int) -> float:
        cp = self.cp
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(iters):
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(self.stream)
            fn()
            e1.record(self.stream)
            e1.synchronize()
            times.append(cp.cuda.get_elapsed_time(e0, e1))
        return statistics.median(times)


class _TorchBackend:
    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch
        self.stream = torch.cuda.Stream()
        self.handle = self.stream.cuda_stream
        self.device_name = torch.cuda.get_device_name()

    def free_bytes(self) -> int:
        return int(self.torch.cuda.mem_get_info()[0])

    def upload(self, x32: np.ndarray, dname: str):
        t = self.torch
        with t.cuda.stream(self.stream):
            return t.from_numpy(x32).to("cuda", non_blocking=False).to(getattr(t, dname))

    def empty(self, nbytes: int):
        t = self.torch
        with t.cuda.stream(self.stream):
            return t.empty(nbytes, dtype=t.uint8, device="cuda")

    def to_host(self, a, dname: str) -> np.ndarray:
        self.stream.synchronize()
        if dname == "bfloat16":
            return a.view(self.torch.int16).cpu().numpy().view(_arrays.numpy_dtype(dname))
        return a.cpu().numpy()

    def errors(self, x, y, dname: str) -> tuple[float, float]:
        t = self.torch
        with t.cuda.stream(self.stream):
            x64 = x.double()
            d = y.double() - x64
            den = float(t.dot(x64, x64))
            num = float(t.dot(d, d))
            mx = float(x64.abs().max())
            md = float(d.abs().max())
        return (num / den if den > 0 else float("nan")), (md / mx if mx > 0 else float("nan"))

    def memcpy(self, dst, src, nbytes: int):
        # contiguous, same dtype and device: a cudaMemcpyAsync device-to-device
        with self.torch.cuda.stream(self.stream):
            dst[:nbytes].copy_(src.view(self.torch.uint8)[:nbytes], non_blocking=True)

    def time_ms(self, fn, warmup: int, iters: int) -> float:
        t = self.torch
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(iters):
            e0 = t.cuda.Event(enable_timing=True)
            e1 = t.cuda.Event(enable_timing=True)
            e0.record(self.stream)
            fn()
            e1.record(self.stream)
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        return statistics.median(times)


def gpu_backend() -> Any | None:
    """CuPy if importable, else torch; None without a usable GPU."""
    from taco import _cuda

    if _cuda.device_count() == 0:
        return None
    for cls, mod in ((_CupyBackend, "cupy"), (_TorchBackend, "torch")):
        try:
            __import__(mod)
        except ImportError:
            continue
        return cls()
    return None


# ------------------------------------------------------------------ runs


def codec_blocks(codecs: list[str] | None, block: int | None) -> dict[str, int | None]:
    """The block size each codec runs with (None: its own): `block` for the codecs that have
    blocks. `codecs` None means every codec, and then the blockless ones (none, bf16) keep
    theirs; a blockless codec named with a block, or a block the library refuses, is a
    UsageError naming --block."""
    named = codecs is not None
    out: dict[str, int | None] = {}
    for name in codecs if named else _codec.codecs():
        if block is not None and _codec.codec_info(name)["block_size"] == 0:
            if named:
                raise options.UsageError(f"argument --block: codec {name!r} has no blocks "
                                         f"(--block applies to block codecs only)")
            out[name] = None
            continue
        if block is not None:
            try:
                _codec.codec_info(name, block=block)
            except TacoError as e:
                raise options.UsageError(f"argument --block: {options.library_detail(e)}") from None
        out[name] = block
    return out


def _time_memcpy(be, nbytes: int, warmup: int, iters: int) -> float:
    """Median ms of a D2D cudaMemcpyAsync of `nbytes`, on the benchmark's stream."""
    dst, src = be.empty(nbytes), be.empty(nbytes)
    return be.time_ms(lambda: be.memcpy(dst, src, nbytes), warmup, iters)


def run_gpu(be, count: int, dtypes: list[str], codecs: dict[str, int | None],
            warmup: int, iters: int, log=print, progress: Progress | None = None) -> dict:
    """Every codec (name -> block size or None, codec_blocks) x dtype on the GPU backend `be`;
    `progress` counts the (codec, dtype) pairs."""
    bar = progress or Progress("bench codec", quiet=True)
    f, lib = _lib.ffi(), _lib.lib()
    x32 = laplace(count)
    rows, memcpy = [], {}
    stream = f.cast("tacoStream_t", be.handle)
    for dk in dtypes:
        dname = DTYPES[dk]
        dt = _arrays.taco_dtype(dname)
        esz = _arrays.itemsize(dname)
        in_bytes = count * esz
        x = be.upload(x32, dname)
        y = be.upload(np.zeros(count, np.float32), dname)
        xb = _arrays.describe(x, "x", stream=be.handle)
        yb = _arrays.describe(y, "y", stream=be.handle)
        ms = _time_memcpy(be, in_bytes, warmup, iters)
        memcpy[dk] = {"bytes": in_bytes, "ms": ms, "TBps": 2 * in_bytes / ms / 1e9}
        log(f"# memcpy D2D {dk}: {in_bytes} bytes in {ms:.3f} ms = {memcpy[dk]['TBps']:.3f} TB/s (read+write)")
        for name, block in bar.each(codecs.items(), lambda item: f"{item[0]} {dk}"):
            c = _codec.find_codec(name, block)
            try:
                wbytes = _codec.compressed_size(c, count, dname)
            except NotSupportedError:
                rows.append({"codec": name, "dtype": dk, "supported": False})
                continue
            wire = be.empty(wbytes)
            wb = _arrays.describe(wire, "wire", stream=be.handle)
            xp, yp, wp = (f.cast("void*", b.ptr) for b in (xb, yb, wb))

            def comp():
                check(lib.tacoCompress(c, xp, count, dt, wp, wbytes, stream))

            def decomp():
                check(lib.tacoDecompress(c, wp, wbytes, yp, count, dt, stream))

            try:
                comp()
            except NotSupportedError:
                rows.append({"codec": name, "dtype": dk, "supported": False})
                continue
            decomp()
            nmse, max_err = be.errors(x, y, dname)
            t_c = be.time_ms(comp, warmup, iters)
            t_d = be.time_ms(decomp, warmup, iters)
            bw_c = (in_bytes + wbytes) / t_c / 1e9
            bw_d = (in_bytes + wbytes) / t_d / 1e9
            info = _codec.codec_info(c)
            rows.append({
                "codec": name, "dtype": dk, "supported": True, "block": info["block_size"],
                "count": count, "in_bytes": in_bytes, "wire_bytes": wbytes,
                "ratio": in_bytes / wbytes,
                "compress_ms": t_c, "compress_TBps": bw_c, "compress_vs_memcpy": bw_c / memcpy[dk]["TBps"],
                "decompress_ms": t_d, "decompress_TBps": bw_d,
                "decompress_vs_memcpy": bw_d / memcpy[dk]["TBps"],
                "nmse": nmse, "max_err": max_err,
            })
            del wire
        del x, y
    return {"mode": "gpu", "backend": be.name, "device": be.device_name, "count": count,
            "iters": iters, "warmup": warmup, "memcpy": memcpy, "rows": rows}


def run_host(count: int, dtypes: list[str], codecs: dict[str, int | None],
             progress: Progress | None = None) -> dict:
    """Every codec (name -> block size or None, codec_blocks) x dtype through the host codec;
    `progress` counts the (codec, dtype) pairs."""
    bar = progress or Progress("bench codec", quiet=True)
    x32 = laplace(count)
    rows = []
    for dk in dtypes:
        dname = DTYPES[dk]
        x = x32.astype(_arrays.numpy_dtype(dname))
        for name, block in bar.each(codecs.items(), lambda item: f"{item[0]} {dk}"):
            try:
                t0 = time.perf_counter()
                wire = _codec.compress(x, name, block=block)
                t1 = time.perf_counter()
                y = _codec.decompress(wire, name, count, dname, block=block)
                t2 = time.perf_counter()
            except NotSupportedError:
                rows.append({"codec": name, "dtype": dk, "supported": False})
                continue
            nmse, max_err = _errors(x, y)
            rows.append({
                "codec": name, "dtype": dk, "supported": True,
                "block": _codec.codec_info(name, block=block)["block_size"], "count": count,
                "in_bytes": x.nbytes, "wire_bytes": int(wire.nbytes), "ratio": x.nbytes / wire.nbytes,
                "host_compress_ms": (t1 - t0) * 1e3, "host_decompress_ms": (t2 - t1) * 1e3,
                "nmse": nmse, "max_err": max_err,
            })
    return {"mode": "host", "count": count, "rows": rows}


def format_table(res: dict) -> str:
    out = []
    if res["mode"] == "gpu":
        out.append(f"# codec kernels on {res['device']} ({res['backend']}), {res['count']} elements, "
                   f"median of {res['iters']}; bandwidth = bytes read + written; "
                   f"x memcpy = ratio to the same run's D2D memcpy")
        hdr = (f"{'codec':<14} {'dtype':<5} {'block':>5} {'ratio':>6} {'comp ms':>9} {'TB/s':>6} "
               f"{'x memcpy':>8} {'decomp ms':>9} {'TB/s':>6} {'x memcpy':>8} {'nmse':>10} {'max_err':>9}")
    else:
        out.append(f"# host codec (CPU twin), {res['count']} Laplace elements; "
                   f"nmse = sum((y-x)^2)/sum(x^2), max_err = max|y-x|/max|x|")
        hdr = (f"{'codec':<14} {'dtype':<5} {'block':>5} {'ratio':>6} {'nmse':>10} {'max_err':>9} "
               f"{'comp ms':>9} {'decomp ms':>9}")
    out.append(hdr)
    for r in res["rows"]:
        if not r["supported"]:
            out.append(f"{r['codec']:<14} {r['dtype']:<5} {'':>5} not supported for this dtype")
            continue
        if res["mode"] == "gpu":
            out.append(f"{r['codec']:<14} {r['dtype']:<5} {r['block']:>5} {r['ratio']:>6.2f} "
                       f"{r['compress_ms']:>9.3f} {r['compress_TBps']:>6.2f} {r['compress_vs_memcpy']:>8.2f} "
                       f"{r['decompress_ms']:>9.3f} {r['decompress_TBps']:>6.2f} "
                       f"{r['decompress_vs_memcpy']:>8.2f} {r['nmse']:>10.3e} {r['max_err']:>9.2e}")
        else:
            out.append(f"{r['codec']:<14} {r['dtype']:<5} {r['block']:>5} {r['ratio']:>6.2f} "
                       f"{r['nmse']:>10.3e} {r['max_err']:>9.2e} {r['host_compress_ms']:>9.1f} "
                       f"{r['host_decompress_ms']:>9.1f}")
    return "\n".join(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count", type=options.count(1, _codec.MAX_COUNT), default=None,
                   help="elements (e.g. 2^28, 1<<20, 256M); default 2^28 on a GPU, 2^20 on the host")
    p.add_argument("--dtype", type=options.one_of(DTYPES, "dtype"), default=list(DTYPES),
                   help="comma list of fp32, bf16, fp16 (default all three)")
    p.add_argument("--codec", type=options.codec_specs, default=None,
                   help="comma list of codec specs, name[:block=N] (default: every codec)")
    p.add_argument("--block", type=options.integer(), default=None,
                   help="block size for the codecs that have blocks (a power of two in [32, 1024]; default: "
                        "each codec's); with the default codec list none and bf16 keep theirs, a blockless "
                        "codec named in --codec is an error")
    p.add_argument("--iters", type=options.integer(1), default=20, help="timed iterations (median reported)")
    p.add_argument("--warmup", type=options.integer(0), default=3, help="untimed iterations first")
    p.add_argument("--host", action="store_true", help="run the CPU codec even when a GPU exists")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    options.add_common(p)


# Bytes per element a run holds at its peak, beyond the codec's wire: the host run keeps the
# fp32 Laplace data, the input in its dtype, the output and the error's float64 temporaries;
# the GPU run the fp32 data and a converted copy on the host, and input, output, wire and
# the error's float64 temporaries on the device.
HOST_RUN_BYTES = 4 + 4 + 4 + 4 + 8 + 8 + 4
GPU_RUN_HOST_BYTES = 4 + 4 + 4
GPU_RUN_DEVICE_BYTES = 4 + 4 + 4 + 8 + 8  # input, output, wire, the error's float64 temporaries


def check_memory(count: int, gpu, value: str) -> None:
    """A --count whose buffers cannot fit is a usage error (exit 2) before any allocation."""
    options.check_fits("--count", value, count * (GPU_RUN_HOST_BYTES if gpu else HOST_RUN_BYTES),
                       options.available_host_memory(), "host")
    if gpu is not None:
        options.check_fits("--count", value, count * GPU_RUN_DEVICE_BYTES, gpu.free_bytes(), "device")


def run(args: argparse.Namespace) -> int:
    codecs = codec_blocks(args.codec, args.block)
    be = None if args.host else gpu_backend()
    count = (DEFAULT_HOST_COUNT if be is None else DEFAULT_GPU_COUNT) if args.count is None else args.count
    check_memory(count, be, f"{count} elements")
    with Progress("bench codec", len(codecs) * len(args.dtype), "codec x dtype", quiet=args.quiet) as bar:
        if be is None:
            if not args.host:
                print("# no GPU (or neither CuPy nor PyTorch): host codec accuracy table")
            res = run_host(count, args.dtype, codecs, progress=bar)
        else:
            res = run_gpu(be, count, args.dtype, codecs, args.warmup, args.iters, log=bar.print, progress=bar)
    res["library"] = _lib.library_path()
    res["library_version"] = _lib.lib().tacoGetVersion()
    print(format_table(res))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
        print(f"# wrote {args.json}")
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m taco_bench codec") -> int:
    p = options.Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return options.run_command(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())

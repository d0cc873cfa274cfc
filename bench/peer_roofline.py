"""How close does each AllReduce algorithm come to the HBM roofline on one GPU?
Loopback, P ranks on one GPU, every algorithm and the device-to-device memcpy measured
side by side in one run. On one GPU every "wire" byte is an HBM byte, so an algorithm's
roofline is the bytes it must move divided by memcpy's bandwidth (bytes read + written; the
fastest of three rounds of copies).

Bytes per rank for N elements of e bytes, w = compressed bytes per element (codes and
scales), P ranks (reads + writes, every pass over HBM counted once):
  fused two-shot: read the input (N e), write the P-1 pieces compressed into the owners'
                  scratch ((P-1)/P N w), read them back ((P-1)/P N w), write the reduced piece
                  (N/P w) and its decoding (N/P e), read the P-1 reduced pieces ((P-1)/P N w),
                  write the output ((P-1)/P N e)  ->  2 N e + N w (3 (P-1) + 1) / P
  one-shot:       read the input, write it compressed (N w), read all P (P N w), write N e
  raw one-shot:   the same with the input bytes as the wire (w = e)
  staged two-shot moves the fused path's bytes plus a device copy of every exchanged byte.
The model counts every byte as an HBM byte. In a loopback launch the P ranks read the same
scratch at about the same time, so some reads hit the 50 MB L2 instead: the one-shot's P reads
of every wire (62 % of its bytes at P = 8), the gather's reads of the reduced pieces. A fraction
can then exceed 1 (the raw one-shot at P = 8 in fp32 has), and the one-shot's fractions read
higher than the fused path's for the same HBM efficiency; Nsight Compute's dram__bytes says
what actually went to HBM.

    TACO_LIBRARY=build/libtaco.so python bench/peer_roofline.py [--ranks 4] [--mbytes 256]
    TACO_LIBRARY=build/libtaco.so python bench/peer_roofline.py --all [--algos fused,oneshot]
    TACO_LIBRARY=build/libtaco.so python bench/peer_roofline.py --all --sizes 5:128,6:128 --codecs fp8-block
"""
import argparse
import json
import sys

import torch

import taco.comm
from taco import codec as tcodec


def gpu_time(fn, iters, warmup=3):
    s = torch.cuda.current_stream()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(s)
    for _ in range(iters):
        fn()
    b.record(s)
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / iters


def phase_rows(a, xs, outs, P, N, e, w, bw):
    """The fused two-shot's three phases, each run as the standalone codec kernel over
    the same bytes (every rank's share, one launch per rank and piece, back to back):
    A compresses P-1 pieces per rank, B decompress-reduce-compresses P-1 wires with the
    exact piece and writes the decoded piece, C decompresses P-1 pieces per rank. Their
    sum against the fused time is the cost of fusing (barriers, tails, occupancy)."""
    n = N // P
    pieces = [x[i * n:(i + 1) * n] for x in xs for i in range(1, P)]
    wires = [tcodec.compress(pc, a.codec) for pc in pieces]
    exact = [x[:n] for x in xs]
    red = [tcodec.compress(pc, a.codec) for pc in exact]
    ys = [o[:n] for o in outs]
    dec = [o[i * n:(i + 1) * n] for o in outs for i in range(1, P)]
    def phase_a():
        for pc, wr in zip(pieces, wires):
            tcodec.compress(pc, a.codec, out=wr)
    def phase_b():
        for r in range(P):
            tcodec.decompress_reduce_compress(wires[r * (P - 1):(r + 1) * (P - 1)], a.codec, n, a.dtype,
                                              exact=exact[r], out=red[r], y=ys[r])
    def phase_c():
        for wr, d in zip(wires, dec):
            tcodec.decompress(wr, a.codec, n, a.dtype, out=d)
    moved = {"A": P * ((P - 1) * n * (e + w)), "B": P * ((P - 1) * n * w + n * e + n * w + n * e),
             "C": P * ((P - 1) * n * (w + e))}
    rows, total = [], 0.0
    for name, fn in (("A", phase_a), ("B", phase_b), ("C", phase_c)):
        t = gpu_time(fn, a.iters)
        total += t
        ratio = moved[name] / t / bw
        rows.append({"algo": f"phase {name}", "time_ms": t * 1e3, "bytes_moved": moved[name],
                     "roofline_ms": moved[name] / bw * 1e3, "of_memcpy": ratio})
        print(f"phase {name}      {t * 1e3:9.3f} ms   moves {moved[name] / 1e9:7.3f} GB   roofline "
              f"{moved[name] / bw * 1e3:8.3f} ms   {ratio:5.3f}x memcpy bandwidth (codec kernels, {P} ranks)")
    print(f"phases A+B+C  {total * 1e3:9.3f} ms")
    return rows


# Every codec with a block layout (the peer kernels' codecs), for --all.
BLOCK_CODECS = ["fp8-block", "taco", "taco-e5m2", "int8-block", "int8-hadamard", "int6-hadamard", "int4-block"]
# --all: the sizes of the targets (MiB per rank): 256 at P = 2 and 4, 64 at P = 8.
ALL_SIZES = {2: 256, 4: 256, 8: 64}


def bytes_model(P, N, e, w):
    """Bytes each algorithm must move per rank (see the module docstring)."""
    return {
        "fused": 2 * N * e + N * w * (3 * (P - 1) + 1) / P,
        "staged": 2 * N * e + N * w * (3 * (P - 1) + 1) / P + 2 * N * w * 2 * (P - 1) / P,
        "oneshot": 2 * N * e + N * w * (1 + P),
        "oneshot-raw": 2 * N * e + N * e * (1 + P),
    }


# memcpy, the roofline's denominator: the fastest of MEMCPY_ROUNDS rounds of at least MEMCPY_ITERS
# copies. One round of 5 copies (about 1 ms) measured 3.68-4.13 TB/s for the same 512 MiB on one
# H200 within minutes, and moved whole rows' fractions by up to 10 %; the best round is the rate
# the bytes can reach, so the fractions compare across runs.
MEMCPY_ROUNDS = 3
MEMCPY_ITERS = 20


def memcpy_bandwidth(P, N, e, iters):
    """Bytes read + written per second by a device copy of P inputs (P * N * e bytes)."""
    src = torch.empty(P * N * e, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_copy = min(gpu_time(lambda: dst.copy_(src), max(iters, MEMCPY_ITERS)) for _ in range(MEMCPY_ROUNDS))
    return 2 * src.numel() / t_copy


def time_algos(P, dtype, codec, algos, xs, outs, iters, bw, quiet=False):
    """One row per algorithm spec ("fused", "fused@256" = 256 MiB chunks): its time against its roofline."""
    tdt = getattr(torch, dtype)
    e = torch.tensor([], dtype=tdt).element_size()
    N = xs[0].numel()
    w = tcodec.compressed_size(codec, N, dtype) / N
    model = bytes_model(P, N, e, w)
    rows = []
    for spec in [s for s in algos if s]:
        algo, _, chunk = spec.partition("@")
        cfg = {"chunk_bytes": int(chunk) << 20} if chunk else {}
        comms = taco.comm.loopback(P, codec=codec, algo=algo, fallback_bytes=0, **cfg)
        try:
            def once():
                with taco.comm.group():
                    for c, x, o in zip(comms, xs, outs):
                        c.allreduce(x, out=o)
            t = gpu_time(once, iters)
        finally:
            for c in comms:
                c.close()
        need = P * model[algo]
        ratio = need / t / bw
        rows.append({"algo": spec, "codec": codec, "dtype": dtype, "P": P, "N": N, "time_ms": t * 1e3,
                     "bytes_moved": need, "roofline_ms": need / bw * 1e3, "of_memcpy": ratio})
        if not quiet:
            print(f"{spec:12s} {t * 1e3:9.3f} ms   moves {need / 1e9:7.3f} GB   roofline {need / bw * 1e3:8.3f} ms"
                  f"   {ratio:5.3f}x memcpy bandwidth")
    return rows


def run_all(a):
    """Every block codec x P in {2, 4, 8} x bf16 and fp32 x each peer algorithm, one table."""
    rows = []
    algos = [s for s in a.algos.split(",") if s and s != "oneshot-raw"]
    print(f"# {torch.cuda.get_device_name()}: the fraction of the HBM roofline (bytes model above, memcpy "
          f"measured per P and size in the same run); iters {a.iters}")
    print(f"{'P':>2} {'MiB':>4} {'dtype':8} {'codec':14} {'algo':12} {'ms':>9} {'roofline ms':>11} {'fraction':>8}")
    for P, mib in sizes_arg(a.sizes).items():
        for dtype in ("bfloat16", "float32"):
            tdt = getattr(torch, dtype)
            e = torch.tensor([], dtype=tdt).element_size()
            N = mib * (1 << 20) // e
            xs = [torch.randn(N, device="cuda").to(tdt) for _ in range(P)]
            outs = [torch.empty_like(x) for x in xs]
            bw = memcpy_bandwidth(P, N, e, a.iters)
            codecs = [c for c in BLOCK_CODECS if not a.codecs or c in a.codecs.split(",")]
            plan = [(c, algos) for c in codecs] + ([("none", ["oneshot-raw"])] if not a.codecs else [])
            for codec, specs in plan:
                for r in time_algos(P, dtype, codec, specs, xs, outs, a.iters, bw, quiet=True):
                    r["memcpy_TBps"] = bw / 1e12
                    rows.append(r)
                    print(f"{P:2d} {mib:4d} {dtype:8} {codec:14} {r['algo']:12} {r['time_ms']:9.3f} "
                          f"{r['roofline_ms']:11.3f} {r['of_memcpy']:8.3f}", flush=True)
            del xs, outs
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


def sizes_arg(text):
    """--sizes "P:MiB,...", e.g. "2:256,4:256,8:64", as {P: MiB per rank}."""
    sizes = {}
    for item in text.split(","):
        try:
            P, mib = (int(v) for v in item.split(":"))
        except ValueError:
            raise SystemExit(f"--sizes: '{item}' is not P:MiB (e.g. 8:64)")
        if P < 2 or mib < 1:
            raise SystemExit(f"--sizes: '{item}' needs P >= 2 and MiB >= 1")
        sizes[P] = mib
    return sizes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--mbytes", type=float, default=256, help="MiB of input per rank")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    p.add_argument("--codec", default="fp8-block")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--algos", default="staged,fused,oneshot",
                   help="algorithms, each optionally @chunk MiB (communicator chunkBytes), e.g. fused@256")
    p.add_argument("--phases", action="store_true",
                   help="also time each phase of the fused two-shot as the codec's own kernel on the same bytes")
    p.add_argument("--all", action="store_true",
                   help="every block codec x P in {2, 4, 8} (256, 256, 64 MiB per rank) x bf16 and fp32 x the "
                        "algorithms of --algos, and the raw one-shot; one table")
    p.add_argument("--sizes", default=",".join(f"{P}:{m}" for P, m in ALL_SIZES.items()),
                   help="with --all: the ranks and MiB per rank, as P:MiB,... (default %(default)s)")
    p.add_argument("--codecs", default=None,
                   help="with --all: only these block codecs (comma-separated), and no raw one-shot")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if a.all:
        return run_all(a)
    P = a.ranks
    tdt = getattr(torch, a.dtype)
    e = torch.tensor([], dtype=tdt).element_size()
    N = int(a.mbytes * (1 << 20)) // e
    w = tcodec.compressed_size(a.codec, N, a.dtype) / N
    xs = [torch.randn(N, device="cuda").to(tdt) for _ in range(P)]
    outs = [torch.empty_like(x) for x in xs]
    bw = memcpy_bandwidth(P, N, e, a.iters)
    print(f"# {torch.cuda.get_device_name()} P={P} N={N} {a.dtype} codec={a.codec} "
          f"w={w:.4f} B/elem; memcpy {bw / 1e12:.3f} TB/s (read + write)")
    rows = time_algos(P, a.dtype, a.codec, a.algos.split(","), xs, outs, a.iters, bw)
    if a.phases:
        rows += phase_rows(a, xs, outs, P, N, e, w, bw)
    by = {r["algo"]: r for r in rows}
    if "fused" in by and "staged" in by:
        print(f"fused / staged time: {by['fused']['time_ms'] / by['staged']['time_ms']:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"memcpy_TBps": bw / 1e12, "P": P, "N": N, "dtype": a.dtype, "codec": a.codec, "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

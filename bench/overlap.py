"""Is the chunk pipeline real? Loopback AllReduce, P ranks on one GPU, the same
bf16 buffer run chunked (pipelineDepth >= 2) and unpipelined (one chunk covering
the whole buffer, so compression cannot overlap communication), measured side by
side in one run. Prints both times and their ratio (target <= 0.8).

    TACO_LIBRARY=build/libtaco.so python bench/overlap.py [--ranks 4] [--mbytes 256]
"""
import argparse
import time

import torch

import taco.comm


def timed(comms, xs, outs, iters, warmup, graph):
    """Seconds per AllReduce of the whole loopback group. With `graph`, the group is
    captured once into a CUDA graph and replayed, so the time is the GPU's alone (the
    eager time of many small chunks is dominated by the host enqueueing launches)."""
    s = torch.cuda.Stream()

    def once():
        with taco.comm.group():
            for c, x, o in zip(comms, xs, outs):
                c.allreduce(x, out=o, stream=s)

    if graph:
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            once()
        step = g.replay
    else:
        step = once
    with torch.cuda.stream(s):
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--mbytes", type=int, default=256, help="buffer size per rank, MiB of bf16")
    ap.add_argument("--chunk-mbytes", type=int, default=32, help="chunk size of the pipelined run")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--codec", default="taco")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--eager", action="store_true", help="time eager calls instead of CUDA graph replays")
    a = ap.parse_args()
    count = (a.mbytes << 20) // 2
    g = torch.Generator(device="cuda").manual_seed(0)
    xs = [torch.randn(count, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(a.ranks)]
    outs = [torch.empty_like(x) for x in xs]
    whole = a.mbytes << 20
    piped = taco.comm.loopback(a.ranks, codec=a.codec, chunk_bytes=a.chunk_mbytes << 20,
                               pipeline_depth=a.depth, fallback_bytes=0)
    flat = taco.comm.loopback(a.ranks, codec=a.codec, chunk_bytes=whole, pipeline_depth=1, fallback_bytes=0)
    t_pipe, t_flat = [], []
    for _ in range(3):  # interleave the two so that clocks and caches treat them alike
        t_pipe.append(timed(piped, xs, outs, a.iters, a.warmup, not a.eager))
        t_flat.append(timed(flat, xs, outs, a.iters, a.warmup, not a.eager))
    tp, tf = min(t_pipe), min(t_flat)
    print(f"loopback P={a.ranks} {a.mbytes} MiB bf16 codec={a.codec} ({'eager' if a.eager else 'CUDA graph replay'})")
    print(f"  pipelined   chunk {a.chunk_mbytes} MiB depth {a.depth}: {tp * 1e3:8.2f} ms "
          f"(workspace {piped[0].workspace_bytes >> 20} MiB/rank)")
    print(f"  unpipelined one chunk, depth 1:        {tf * 1e3:8.2f} ms "
          f"(workspace {flat[0].workspace_bytes >> 20} MiB/rank)")
    print(f"  ratio pipelined/unpipelined = {tp / tf:.3f} (target <= 0.8)")
    for c in piped + flat:
        c.close()


if __name__ == "__main__":
    main()

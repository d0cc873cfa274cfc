"""Compressed AllReduce of CuPy arrays across MPI ranks (one GPU per rank).

    mpirun -np 4 python examples/cupy_mpi_allreduce.py [--count 16M] [--codec taco] [--dtype float32]

Each rank makes its own Laplace data, libtaco sums it (codec `--codec`, two-shot,
compressed on the wire), and every rank checks the result against the exact sum,
which it can compute because every rank's data is a function of its rank only.
"""
import argparse
import os
import sys

import cupy as cp
import numpy as np
from mpi4py import MPI

import taco.comm


def local_data(rank: int, count: int, dtype) -> cp.ndarray:
    rng = cp.random.default_rng(1234 + rank)
    u = rng.random(count, dtype=cp.float32) - 0.5
    a = cp.minimum(cp.abs(u), 0.5 - 2.0 ** -25)  # random() can return 0: keep the log finite
    return (-cp.sign(u) * cp.log1p(-2 * a)).astype(dtype)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", default="16M", help="elements per rank (K/M/G suffixes)")
    p.add_argument("--codec", default="taco")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    args = p.parse_args()
    count = int(args.count[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[args.count[-1].upper()] \
        if args.count[-1].isalpha() else int(args.count)

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    cp.cuda.Device(local_rank % cp.cuda.runtime.getDeviceCount()).use()

    with taco.comm.Communicator.from_mpi(world, codec=args.codec) as comm:
        x = local_data(rank, count, args.dtype)
        y = comm.allreduce(x)                      # on CuPy's current stream
        cp.cuda.get_current_stream().synchronize()

        exact = cp.zeros(count, dtype=cp.float64)
        for r in range(size):
            exact += local_data(r, count, args.dtype).astype(cp.float64)
        d = y.astype(cp.float64) - exact
        rms = float(cp.sqrt((d * d).sum() / (exact * exact).sum()))
        mx = float(cp.abs(d).max() / cp.abs(exact).max())
        digest = int(y.view(cp.uint16 if y.dtype.itemsize == 2 else cp.uint32).astype(cp.uint64).sum())
        digests = world.allgather(digest)
        same = all(dg == digests[0] for dg in digests)
        if rank == 0:
            print(f"{size} ranks, {count} x {args.dtype}, codec {comm.config['codec']}: rms error {rms:.3e}, "
                  f"max error {mx:.3e} (relative to max |sum|), every rank identical: {same}")
    bad = world.allreduce(0 if (same and np.isfinite(rms) and rms < 0.1) else 1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

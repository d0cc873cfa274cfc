"""The HBM bytes of one peer AllReduce call, from Nsight Compute's counters, against the bytes
model of bench/peer_roofline.py (which counts every modelled byte as an HBM byte, though in a
loopback launch some reads hit L2). Work in progress, for a run on a GPU machine (wip/README.md).

Run one call (under ncu; see wip/hbm_bytes.sh):   python3 wip/hbm_bytes.py run P ALGO CODEC DTYPE MIB
Sum ncu's CSV against the model:                  python3 wip/hbm_bytes.py sum CSV P ALGO CODEC DTYPE MIB
"""
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))

CALLS = int(os.environ.get("CALLS", "1"))  # calls per row; the sums are divided by it
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "gpu__time_duration.sum"]


def model_bytes(P, algo, codec, dtype, mib):
    """The model's bytes for the whole call (every rank), as peer_roofline.py computes them."""
    import torch
    from peer_roofline import bytes_model
    from taco import codec as tcodec

    e = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
    N = (mib << 20) // e
    w = tcodec.compressed_size(codec, N, dtype) / N
    return P * bytes_model(P, N, e, w)[algo]


def run(P, algo, codec, dtype, mib):
    import torch
    import taco.comm

    tdt = getattr(torch, dtype)
    n = (mib << 20) // torch.tensor([], dtype=tdt).element_size()
    xs = [torch.randn(n, device="cuda").to(tdt) for _ in range(P)]
    outs = [torch.empty_like(x) for x in xs]
    comms = taco.comm.loopback(P, codec=codec, algo=algo, fallback_bytes=0)
    for _ in range(CALLS):  # with CACHE=none the later calls count the write-back of the earlier ones
        with taco.comm.group():
            for c, x, o in zip(comms, xs, outs):
                c.allreduce(x, out=o)
    torch.cuda.synchronize()
    for c in comms:
        c.close()


def total(csv_path):
    """Per metric, the sum over the profiled kernels (ncu --csv --page raw --print-units base)."""
    with open(csv_path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    head = next(i for i, r in enumerate(rows) if "Kernel Name" in r and METRICS[0] in r)
    cols = {m: rows[head].index(m) for m in METRICS}
    sums, kernels = dict.fromkeys(METRICS, 0.0), 0
    for r in rows[head + 1:]:
        try:
            vals = {m: float(r[i].replace(",", "")) for m, i in cols.items()}
        except (ValueError, IndexError):
            continue  # the units row
        kernels += 1
        for m in METRICS:
            sums[m] += vals[m]
    return sums, kernels


def main(argv):
    if argv[0] == "run":
        P, algo, codec, dtype, mib = int(argv[1]), argv[2], argv[3], argv[4], int(argv[5])
        run(P, algo, codec, dtype, mib)
        return 0
    path, P, algo, codec, dtype, mib = argv[1], int(argv[2]), argv[3], argv[4], argv[5], int(argv[6])
    sums, kernels = total(path)
    sums = {k: v / CALLS for k, v in sums.items()}  # per call
    kernels //= CALLS
    model = model_bytes(P, algo, codec, dtype, mib)
    hbm = sums["dram__bytes_read.sum"] + sums["dram__bytes_write.sum"]
    print(f"P={P} {algo:11s} {codec:10s} {dtype:8s} {mib:4d} MiB/rank: {kernels} kernels, HBM {hbm / 1e9:7.3f} GB "
          f"(read {sums['dram__bytes_read.sum'] / 1e9:.3f}, write {sums['dram__bytes_write.sum'] / 1e9:.3f}), "
          f"L2 {sums['lts__t_bytes.sum'] / 1e9:7.3f} GB, model {model / 1e9:7.3f} GB, HBM/model {hbm / model:.3f}, "
          f"kernels {sums['gpu__time_duration.sum'] / 1e3:.1f} us, HBM {hbm / sums['gpu__time_duration.sum']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

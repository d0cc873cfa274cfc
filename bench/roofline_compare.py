"""Side by side: runs of `bench/peer_roofline.py --all --json` of two libraries (BASE and NEW), row by row.

    python bench/roofline_compare.py --base base-1.json base-2.json --new new-1.json new-2.json

Each row (P, dtype, codec, algorithm) prints the fraction of the HBM roofline of every BASE run,
then of every NEW run (in the order given: with alternating turns, turn by turn), the median time
of each side and NEW's median time over BASE's. Memcpy, the roofline's denominator, is measured in
each run, so a fraction can move with it while the time does not: the time ratio is the
comparison, the fractions are for the targets. Rows only one side has are listed apart. Last, a
summary of the time ratios: their geometric mean over all rows and per algorithm, the slowest and
the fastest row, and how many rows NEW made slower or faster by more than --noise (default 3 %).
"""
import argparse
import json
import math
import statistics
import sys

KEY = ("P", "dtype", "codec", "algo")


def load(path):
    """{(P, dtype, codec, algo): row} of one run."""
    with open(path) as f:
        data = json.load(f)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise SystemExit(f"{path}: not the JSON of bench/peer_roofline.py --json (no list 'rows')")
    out = {}
    for r in rows:
        missing = [k for k in KEY + ("time_ms", "of_memcpy") if k not in r]
        if missing:
            raise SystemExit(f"{path}: a row without {', '.join(missing)}: {r}")
        out[tuple(r[k] for k in KEY)] = r
    return out


def summary(ratios, noise):
    """The summary lines of {row key: NEW / BASE median time}."""
    def gmean(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs))

    def name(k):
        return f"P={k[0]} {k[1]} {k[2]} {k[3]}"

    if not ratios:
        return ["summary: no row on both sides"]
    algos = sorted({k[3] for k in ratios})
    per_algo = ", ".join(f"{a} {gmean([r for k, r in ratios.items() if k[3] == a]):.3f}" for a in algos)
    slow = max(ratios, key=ratios.get)
    fast = min(ratios, key=ratios.get)
    n_slower = sum(r > 1 + noise for r in ratios.values())
    n_faster = sum(r < 1 - noise for r in ratios.values())
    return [f"summary: {len(ratios)} rows, NEW/BASE time geometric mean {gmean(list(ratios.values())):.3f} "
            f"({per_algo})",
            f"summary: slowest {ratios[slow]:.3f} ({name(slow)}), fastest {ratios[fast]:.3f} ({name(fast)}); "
            f"{n_slower} rows slower and {n_faster} faster by more than {noise:.0%}"]


def compare(base_runs, new_runs, noise=0.03):
    """The table's lines: one per row both sides have, then the rows only one side has, then the
    summary."""
    def keys(runs):
        return set().union(*(r.keys() for r in runs))

    both = keys(base_runs) & keys(new_runs)
    lines = [f"{'P':>2} {'dtype':8} {'codec':14} {'algo':12} {'fraction BASE -> NEW':>32} "
             f"{'ms BASE':>9} {'ms NEW':>9} {'NEW/BASE':>8}"]
    order = {"bfloat16": 0, "float32": 1}
    ratios = {}
    for k in sorted(both, key=lambda k: (k[0], order.get(k[1], 2), k[2], k[3])):
        b = [r[k] for r in base_runs if k in r]
        n = [r[k] for r in new_runs if k in r]
        fb = "/".join(f"{r['of_memcpy']:.2f}" for r in b)
        fn = "/".join(f"{r['of_memcpy']:.2f}" for r in n)
        tb = statistics.median(r["time_ms"] for r in b)
        tn = statistics.median(r["time_ms"] for r in n)
        lines.append(f"{k[0]:2d} {k[1]:8} {k[2]:14} {k[3]:12} {fb + ' -> ' + fn:>32} "
                     f"{tb:9.3f} {tn:9.3f} {tn / tb:8.3f}")
        ratios[k] = tn / tb
    for side, runs, other in (("BASE", base_runs, new_runs), ("NEW", new_runs, base_runs)):
        for k in sorted(keys(runs) - keys(other), key=str):
            lines.append(f"only in {side}: P={k[0]} {k[1]} {k[2]} {k[3]}")
    return lines + summary(ratios, noise)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", nargs="+", required=True, help="JSON files of the BASE library's runs")
    p.add_argument("--new", nargs="+", required=True, help="JSON files of the NEW library's runs")
    p.add_argument("--noise", type=float, default=0.03,
                   help="a time ratio counts as slower or faster beyond 1 +- this (default 0.03)")
    a = p.parse_args(argv)
    print("\n".join(compare([load(f) for f in a.base], [load(f) for f in a.new], a.noise)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

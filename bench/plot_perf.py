#!/usr/bin/env python3
"""Plot a taco_perf JSON file (-J): busbw and speedup vs size, one line per codec,
one for the plain collective and one for the DIY baseline, per collective.

    python bench/plot_perf.py perf.json out.png [--op allreduce,allgather]
"""
import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# installed packages (pip install . and pip install ./bench/python), else this checkout's sources
for package, source in (("taco", ROOT / "python"), ("taco_bench", ROOT / "bench" / "python")):
    if importlib.util.find_spec(package) is None:
        sys.path.insert(0, str(source))

from taco_bench.coll import plot  # noqa: E402  (the same figure as `python -m taco bench coll --plot`)


def rows_of(doc: dict, ops: set | None) -> list[dict]:
    # busbw is 0 for one rank (NCCL's factor (n-1)/n): plot algbw there
    bw = "algbw" if doc["nranks"] == 1 else "busbw"
    rows, seen = [], set()
    for r in doc["results"]:
        op = r["collective"]
        if ops and op not in ops:
            continue
        rows.append({"op": op, "codec": r["codec"], "size": r["size_bytes"],
                     "busbw": r[f"{bw}_gbps"], "speedup": r["speedup"]})
        key = (op, r["type"], r["size_bytes"])
        if key not in seen:  # the plain and DIY measurements repeat on every codec's row
            seen.add(key)
            rows.append({"op": op, "codec": "none", "size": r["size_bytes"], "busbw": r[f"plain_{bw}_gbps"],
                         "speedup": 1.0})
            if r.get("diy_time_us"):
                rows.append({"op": op, "codec": "diy-fp8", "size": r["size_bytes"],
                             "busbw": r[f"diy_{bw}_gbps"], "speedup": r["diy_speedup"]})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("json")
    p.add_argument("png")
    p.add_argument("--op", default=None, help="comma list of collectives (default: all in the file)")
    a = p.parse_args(argv)
    doc = json.loads(Path(a.json).read_text())
    rows = rows_of(doc, set(a.op.split(",")) if a.op else None)
    if not rows:
        p.error(f"{a.json}: no rows" + (f" for --op {a.op}" if a.op else ""))
    types = sorted({r["type"] for r in doc["results"]})
    meta = {"ranks": doc["nranks"], "mode": doc["mode"], "type": ",".join(types), "device": doc["device"]}
    label = "algbw (GB/s, uncompressed bytes)" if doc["nranks"] == 1 else "busbw (GB/s, uncompressed bytes)"
    plot(rows, meta, a.png, bw_label=label)
    print(f"wrote {a.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

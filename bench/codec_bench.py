#!/usr/bin/env python3
"""Codec kernel benchmark: a thin wrapper of `python -m taco bench codec`.

    python bench/codec_bench.py [--count 2^28] [--dtype fp32,bf16,fp16] [--codec taco,...] [--json out.json]

See bench/python/taco_bench/codec.py (or --help) for what is measured and how.
"""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# installed packages (pip install . and pip install ./bench/python), else this checkout's sources
for package, source in (("taco", ROOT / "python"), ("taco_bench", ROOT / "bench" / "python")):
    if importlib.util.find_spec(package) is None:
        sys.path.insert(0, str(source))

from taco_bench.codec import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="python bench/codec_bench.py"))

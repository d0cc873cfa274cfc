#!/usr/bin/env python3
"""Codec kernel benchmark: a thin wrapper of `python -m taco bench codec`.

    python bench/codec_bench.py [--count 2^28] [--dtype fp32,bf16,fp16] [--codec taco,...] [--json out.json]

See python/taco/bench_codec.py (or --help) for what is measured and how.
"""
import sys
from pathlib import Path

try:
    import taco  # noqa: F401  (an installed package, or PYTHONPATH=python)
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from taco.bench_codec import main

if __name__ == "__main__":
    sys.exit(main())

"""`python -m taco bench coll` (taco_bench.coll): argument errors are reported clearly (exit 2) before any
GPU or PyTorch is needed, and --help documents the columns."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import taco


def _run(*args):
    # the taco this test imported (installed or python/); conftest put a source taco_bench on PYTHONPATH
    env = dict(os.environ, PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "taco", "bench", "coll", *args], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--op", "bogus"], "--op: unknown collective(s) ['bogus']"),
    (["-d", "fp64"], "-d/--dtype: unknown type 'fp64'"),
    (["-b", "2M", "-e", "1M"], "-b/-e: need 0 < minbytes <= maxbytes"),
    (["--loopback", "0"], "--loopback: need N >= 1"),
])
def test_argument_errors(args, message):
    p = _run(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert message in p.stderr


def test_unparseable_size():
    p = _run("-b", "lots")
    assert p.returncode == 2 and "-b/--minbytes" in p.stderr


def test_help_lists_columns():
    p = _run("--help")
    assert p.returncode == 0
    for word in ("busbw", "speedup", "wire", "max_err", "#diff", "--loopback", "--plot", "DIY"):
        assert word in p.stdout

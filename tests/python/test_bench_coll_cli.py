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
    (["--op", "bogus"], "argument --op: unknown collective 'bogus'"),
    (["-d", "fp64"], "argument -d/--dtype: unknown dtype 'fp64'"),
    (["-b", "2M", "-e", "1M"], "argument -b/--minbytes: 2097152 is more than -e/--maxbytes 1048576"),
    (["--loopback", "0"], "argument --loopback: must be >= 1"),
    (["--algo", "twoshot"], "argument --algo: unknown AllReduce algorithm 'twoshot' (choose from auto, plain"),
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
    for word in ("busbw", "speedup", "wire", "max_err", "#diff", "--loopback", "--plot", "DIY", "--algo",
                 "allreduce_algo", "oneshot-raw"):
        assert word in p.stdout


def test_wire_is_taco_perf_s_formula():
    """bench/perf/common.cc's wireRatio(): the uncompressed bytes of the piece a rank sends over
    its compressed bytes, for AllReduce the largest shard on codec-block boundaries; 1.0 when the
    call runs uncompressed. (It divided the 1/P share by the piece's compressed bytes, which differs
    where the shards are uneven: 0.889 against taco_perf's 1.778 at 1 KiB bf16 on 4 ranks.)"""
    from taco_bench.coll import wire_ratio

    count, P = 1000, 3  # 4 blocks of 256 for 3 ranks: AllReduce shards of 512, 488 and 0 elements
    shard = taco.compressed_size("taco", 512, "float32")
    assert wire_ratio("allreduce", "taco", count, P, "float32", 0, "staged") == 512 * 4 / shard
    assert wire_ratio("allreduce", "taco", count, P, "float32", 0, "fused") == 512 * 4 / shard
    block128 = taco.compressed_size("taco:block=128", 384, "float32")  # 8 blocks of 128: 3 per shard
    assert wire_ratio("allreduce", "taco:block=128", count, P, "float32", 0, "oneshot") == 384 * 4 / block128
    # 1 KiB of bf16 on 4 ranks: 2 blocks of 256, shards of 256, 256, 0, 0 elements
    assert wire_ratio("allreduce", "fp8-block", 512, 4, "bfloat16", 0, "staged") == (
        256 * 2 / taco.compressed_size("fp8-block", 256, "bfloat16"))
    for algo in ("plain", "oneshot-raw"):
        assert wire_ratio("allreduce", "taco", count, P, "float32", 0, algo) == 1.0
    assert wire_ratio("allreduce", "none", count, P, "float32", 0, "oneshot-raw") == 1.0
    # the other collectives: pieces of count / P, uncompressed below the fallback threshold
    piece = taco.compressed_size("fp8-block", 333, "bfloat16")
    assert wire_ratio("reduce_scatter", "fp8-block", 999, P, "bfloat16", 1998, "-") == 1998 / (3 * piece)
    assert wire_ratio("alltoall", "fp8-block", 999, P, "bfloat16", 1999, "-") == 1.0
    assert wire_ratio("allgather", "none", 999, P, "bfloat16", 0, "-") == 1.0

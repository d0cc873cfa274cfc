"""python -m taco accuracy --device gpu: the same tables through the CUDA kernels as through
the host codec (the kernels are bit-identical to it), end to end and per function.

Run on a GPU machine:  pytest -m gpu tests/gpu/test_accuracy_gpu.py
"""
import json

import ml_dtypes
import numpy as np
import pytest

import taco
from taco_bench import accuracy as acc

pytestmark = pytest.mark.gpu

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("codec", taco.codecs())
def test_gpu_allreduce_and_roundtrip_equal_the_host_codec(codec, dtype):
    rng = np.random.default_rng(3)
    parts = [rng.laplace(size=7 * 256 + 41).astype(np.float32).astype(dtype) for _ in range(4)]
    got = acc.allreduce_library(parts, codec, "gpu")
    want = acc.allreduce_library(parts, codec, "cpu")
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    rt_gpu = acc.roundtrip_library(parts[0], codec, "gpu")
    rt_cpu = acc.roundtrip_library(parts[0], codec, "cpu")
    assert rt_gpu.dtype == rt_cpu.dtype and np.array_equal(rt_gpu.view(np.uint8), rt_cpu.view(np.uint8))


def test_cli_tables_equal_on_gpu_and_cpu(tmp_path):
    from taco.__main__ import main

    docs = {}
    for dev in ("cpu", "gpu"):
        out = tmp_path / f"{dev}.json"
        assert main(["accuracy", "--quick", "--source", "synthetic", "--P", "2,8", "--device", dev,
                     "--json", str(out)]) == 0
        docs[dev] = json.loads(out.read_text())
    assert docs["gpu"]["info"]["device"] == "gpu"
    assert docs["gpu"]["summary"] == docs["cpu"]["summary"]  # every metric, exactly

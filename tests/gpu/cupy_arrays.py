"""What the GPU codec tests share (test_codec_gpu.py, test_codec_range_gpu.py,
test_overflow_gpu.py): the cupy fixture and copies between numpy and CuPy arrays, bf16 carried
as its uint16 bits (CuPy has no bfloat16). They compare bits with tests/codec_range.py's
same_bits. The fixture is imported by name into each test module (`# noqa: F401 (fixture)`).
"""
import numpy as np
import pytest

from codec_range import BF16


@pytest.fixture(scope="module")
def cupy():
    import cupy
    return cupy


def to_dev(cupy, x):
    """numpy -> cupy."""
    return cupy.asarray(x.view(np.uint16)) if x.dtype == BF16 else cupy.asarray(x)


def from_dev(cupy, y, dtype):
    """cupy -> numpy, as `dtype`."""
    h = cupy.asnumpy(y)
    return h.view(BF16) if np.dtype(dtype) == BF16 else h

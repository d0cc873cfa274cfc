"""Bad inputs to the codec functions: each gets an InvalidArgumentError naming the argument,
never a wrong result (docs/api.md, docs/format.md)."""
import ml_dtypes
import numpy as np
import pytest

import taco

BF16 = np.dtype(ml_dtypes.bfloat16)


def laplace(n, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).laplace(size=n).astype(np.float32).astype(dtype)


# ---- byte order: libtaco reads native (little-endian) elements only


@pytest.mark.parametrize("dtype", [">f4", ">f2"])
def test_byte_swapped_input_is_refused(dtype):
    x = laplace(256).astype(dtype)
    with pytest.raises(taco.InvalidArgumentError, match=r"x: dtype '>f[24]' is not in native byte order"):
        taco.compress(x, "taco")


def test_byte_swapped_outputs_and_exact_are_refused():
    x = laplace(256)
    wire = taco.compress(x, "taco")
    with pytest.raises(taco.InvalidArgumentError, match="out: dtype '>f4' is not in native byte order"):
        taco.decompress(wire, "taco", x.size, "float32", out=np.empty(x.size, ">f4"))
    with pytest.raises(taco.InvalidArgumentError, match="exact: dtype '>f4' is not in native byte order"):
        taco.decompress_accumulate([wire], "taco", x.size, "float32", exact=x.astype(">f4"))
    with pytest.raises(taco.InvalidArgumentError, match="y: dtype '>f4' is not in native byte order"):
        taco.decompress_reduce_compress([wire], "taco", x.size, "float32", y=np.empty(x.size, ">f4"))


def test_byte_swapped_wire_is_refused():
    wire = taco.compress(laplace(256), "taco")
    swapped = wire.view("<u2").astype(">u2")  # the same bytes, read as big-endian 16-bit words
    with pytest.raises(taco.InvalidArgumentError, match="wire: dtype '>u2' is not in native byte order"):
        taco.decompress(swapped, "taco", 256, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=r"wires\[1\]: dtype '>u2'"):
        taco.decompress_accumulate([wire, swapped], "taco", 256, "float32")


def test_native_order_spelled_explicitly_is_accepted():
    x = laplace(256)
    assert np.array_equal(taco.compress(x.astype("<f4"), "taco"), taco.compress(x, "taco"))
    assert np.array_equal(taco.compress(x.astype("=f4"), "taco"), taco.compress(x, "taco"))

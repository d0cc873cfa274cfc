"""The Communicator's Python side without a GPU: argument checks that run before any
collective reaches the library."""
import pytest

import taco
from taco import comm as comm_mod


class FakeCAI:
    """A device array description only (CUDA Array Interface): describe() reads it, nothing runs."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (0x7000_0000, False),
                                         "version": 3, "strides": None, "stream": None}


class FourRanks(taco.Communicator):
    size = 4  # what tacoCommCount would say; the checks below stop before any library call


@pytest.mark.parametrize("op", ["reduce_scatter", "alltoall"])
def test_per_rank_split_is_checked_once_and_named(op, monkeypatch):
    calls = []

    def counting_describe(x, name, **kw):
        calls.append(name)
        return describe(x, name, **kw)

    describe = comm_mod.describe
    monkeypatch.setattr(comm_mod, "describe", counting_describe)
    with pytest.raises(taco.InvalidArgumentError, match=f"{op}: x has a size not divisible by the 4 ranks"):
        getattr(FourRanks(object(), "test"), op)(FakeCAI(6))
    assert calls == ["x"]  # x is described once per call

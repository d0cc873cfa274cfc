"""The Communicator's Python side without a GPU: argument checks that run before any
collective reaches the library, the config (algo included) through tacoConfig_t, and the
algorithm, async-error and abort calls against a stand-in for the communicator entry points.
The same calls on real communicators: tests/gpu/test_collectives.py."""
import pytest

import taco
from taco import _lib
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


# ---------------------------------------------------------------- AllReduce algorithms


def test_algos_are_the_library_s_names_in_enum_order():
    """ALGOS is what tacoAlgoName gives for every tacoAlgo_t of the header, and nothing else."""
    lib, ffi = _lib.lib(), _lib.ffi()
    values = _lib.enum_values("tacoAlgo_t")
    assert len(comm_mod.ALGOS) == values["tacoNumAlgos"] == len(values) - 1
    assert comm_mod.ALGOS == tuple(ffi.string(lib.tacoAlgoName(v)).decode() for v in range(lib.tacoNumAlgos))
    assert comm_mod.ALGOS[values["tacoAlgoAuto"]] == "auto"
    assert comm_mod.ALGOS[values["tacoAlgoOneShotRaw"]] == "oneshot-raw"
    assert lib.tacoAlgoName(lib.tacoNumAlgos) == ffi.NULL and lib.tacoAlgoName(99) == ffi.NULL
    for v, name in enumerate(comm_mod.ALGOS):  # names parse back
        assert comm_mod._algo_value(name) == v and comm_mod._algo_name(v) == name
    from taco.comm import ALGOS  # the module attribute, as the harness imports it
    assert ALGOS is comm_mod.ALGOS


def test_algorithm_names_are_the_library_s():
    """The names TACO_ALGO takes, as the library's parameter table lists them (tacoGetParamInfo)."""
    lib, ffi = _lib.lib(), _lib.ffi()
    name, dflt, meaning, value = (ffi.new("const char**") for _ in range(4))
    i = 0
    while lib.tacoGetParamInfo(i, name, dflt, meaning, value) == lib.tacoSuccess:
        if ffi.string(name[0]) == b"TACO_ALGO":
            listed = ffi.string(meaning[0]).decode().split(":", 1)[1].replace(" or ", ", ")
            assert tuple(w.strip() for w in listed.split(",")) == comm_mod.ALGOS
            assert ffi.string(dflt[0]).decode() == "auto"
            return
        i += 1
    pytest.fail("the library's parameter table has no TACO_ALGO")


@pytest.mark.parametrize("algo", ["auto", "plain", "staged", "fused", "oneshot", "oneshot-raw"])
def test_config_round_trips_through_the_struct(algo):
    given = {"codec": "taco:block=128", "chunk_bytes": 1 << 20, "fallback_bytes": 4096, "pipeline_depth": 3,
             "check_consistency": 0, "algo": algo}
    cfg, _keep = comm_mod._config(given)
    assert cfg.algo == comm_mod.ALGOS.index(algo)
    assert comm_mod._config_dict(cfg) == given


def test_algo_left_out_is_left_to_the_library():
    cfg, _ = comm_mod._config({"codec": "taco", "algo": None})
    assert cfg.algo == _lib.constants()["TACO_CONFIG_UNDEF_INT"]  # TACO_ALGO, else auto


@pytest.mark.parametrize("create", [
    lambda: taco.loopback(2, codec="taco", algo="twoshot"),
    lambda: taco.Communicator.from_unique_id(bytes(128), 2, 0, algo="twoshot"),
    lambda: taco.init(algo="twoshot"),
], ids=["loopback", "from_unique_id", "init"])
def test_bad_algo_is_rejected_naming_it(create):
    with pytest.raises(taco.InvalidArgumentError) as e:
        create()
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert "algo" in msg and "'twoshot'" in msg and "oneshot-raw" in msg
    with pytest.raises(TypeError, match="algo"):
        comm_mod._config({"algo": 3})


class StubLib:
    """The real library, but for the communicator calls these tests answer themselves (there
    is no GPU, so no real communicator)."""

    def __init__(self, algo=0, async_error=0):
        self._real = _lib.lib()
        self.algo, self.async_error, self.calls = algo, async_error, []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def tacoCommAllReduceAlgo(self, comm, count, dtype, out):
        self.calls.append(("algo", count, dtype))
        out[0] = self.algo
        return self._real.tacoSuccess

    def tacoCommGetAsyncError(self, comm, out):
        out[0] = self.async_error
        return self._real.tacoSuccess

    def tacoCommAbort(self, comm):
        self.calls.append("abort")
        return self._real.tacoSuccess

    def tacoCommDestroy(self, comm):
        self.calls.append("destroy")
        return self._real.tacoSuccess


@pytest.fixture
def stub(monkeypatch):
    s = StubLib()
    monkeypatch.setattr(_lib, "lib", lambda: s)
    return s


def test_allreduce_algo_names_the_library_s_choice(stub):
    c = taco.Communicator(object(), "test")
    for name in comm_mod.ALGOS[1:]:
        stub.algo = comm_mod.ALGOS.index(name)
        assert c.allreduce_algo(1000, "bf16") == name
    assert stub.calls[-1] == ("algo", 1000, _lib.enum_values("tacoDataType_t")["tacoBfloat16"])
    stub.algo = 99
    with pytest.raises(RuntimeError, match="99"):
        c.allreduce_algo(1000, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="count"):
        c.allreduce_algo(-1, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="count: expected a number of elements"):  # not OverflowError
        c.allreduce_algo(1 << 64, "float32")
    with pytest.raises(taco.InvalidArgumentError, match="dtype"):
        c.allreduce_algo(10, "int8")


def test_async_error_is_none_or_the_error(stub):
    c = taco.Communicator(object(), "test")
    assert c.async_error() is None
    stub.async_error = _lib.lib().tacoRemoteError
    e = c.async_error()
    assert isinstance(e, taco.RemoteError) and e.code == stub.async_error and e.name == "tacoRemoteError"
    assert "asynchronous" in e.message


def test_after_abort_every_call_says_the_communicator_was_aborted(stub):
    c = taco.Communicator(object(), "test")
    c.abort()
    assert stub.calls == ["abort"] and c.closed and c.aborted
    for call in (lambda: c.rank, lambda: c.size, lambda: c.config, lambda: c.workspace_bytes,
                 lambda: c.allreduce_algo(10, "float32"), lambda: c.async_error(), lambda: c.last_error(),
                 lambda: c.allreduce(FakeCAI(8)), lambda: c.allgather(FakeCAI(8))):
        with pytest.raises(taco.InvalidUsageError, match="communicator was aborted"):
            call()
    c.abort()
    c.close()
    assert stub.calls == ["abort"] and "aborted" in repr(c)
    d = taco.Communicator(object(), "test")
    d.close()
    assert not d.aborted
    with pytest.raises(taco.InvalidUsageError, match="communicator is closed"):
        d.allreduce_algo(10, "float32")


# ---------------------------------------------------------------- communicators never closed


class HandleStub(StubLib):
    """Records which handle each destroy and abort was for; destroy answers `destroy_rc`."""

    def __init__(self):
        super().__init__()
        self.destroy_rc = self._real.tacoSuccess

    def tacoCommDestroy(self, comm):
        self.calls.append(("destroy", int(_lib.ffi().cast("uintptr_t", comm))))
        return self.destroy_rc

    def tacoCommAbort(self, comm):
        self.calls.append(("abort", int(_lib.ffi().cast("uintptr_t", comm))))
        return self._real.tacoSuccess


def _handle(address):
    return _lib.ffi().cast("tacoComm_t", address)


def test_a_loopback_communicator_collected_open_is_destroyed_at_the_next_creation_not_by_the_collector(monkeypatch):
    import gc

    s = HandleStub()
    monkeypatch.setattr(_lib, "lib", lambda: s)
    monkeypatch.setattr(comm_mod, "_unclosed", [])
    c = taco.Communicator._created(_handle(0x1000), "loopback")
    del c
    gc.collect()
    assert s.calls == []  # the collector only queued it: it may run during a graph capture
    d = taco.Communicator._created(_handle(0x2000), "loopback")
    assert s.calls == [("destroy", 0x1000)]
    # close() also destroys what was queued first, and a closed or aborted communicator is never
    # destroyed again when collected.
    e = taco.Communicator._created(_handle(0x3000), "loopback")
    del e
    gc.collect()
    d.close()
    assert s.calls[1:] == [("destroy", 0x3000), ("destroy", 0x2000)]
    f = taco.Communicator._created(_handle(0x4000), "loopback")
    f.abort()
    del d, f
    gc.collect()
    taco.Communicator(_handle(0x6000), "test")  # not created by the library here (a stand-in): never queued
    gc.collect()
    taco.Communicator(object(), "test")
    assert s.calls[3:] == [("abort", 0x4000)]


def test_a_close_the_library_refused_leaves_the_communicator_to_the_collector(monkeypatch):
    """tacoInvalidUsage (calls queued in an open group): nothing was freed, so the communicator
    stays open, and is destroyed once collected."""
    import gc

    s = HandleStub()
    monkeypatch.setattr(_lib, "lib", lambda: s)
    monkeypatch.setattr(comm_mod, "_unclosed", [])
    s.destroy_rc = s._real.tacoInvalidUsage
    c = taco.Communicator._created(_handle(0x5000), "loopback")
    with pytest.raises(taco.InvalidUsageError):
        c.close()
    assert not c.closed
    s.destroy_rc = s._real.tacoSuccess
    del c
    gc.collect()
    taco.Communicator(object(), "test")
    assert s.calls == [("destroy", 0x5000), ("destroy", 0x5000)]


def test_abort_never_waits_for_collected_communicators_and_other_origins_are_never_queued(monkeypatch):
    """abort() must not wait (a watchdog's abort ends a hang): it destroys nothing queued. A
    communicator of several processes (nccl) or wrapping a caller's ncclComm_t (nccl-wrapped) is
    never destroyed by collection: its destroy must follow a barrier, or precede the wrapped comm's."""
    import gc

    s = HandleStub()
    monkeypatch.setattr(_lib, "lib", lambda: s)
    monkeypatch.setattr(comm_mod, "_unclosed", [])
    for address, origin in ((0x7000, "nccl"), (0x8000, "nccl-wrapped")):
        c = taco.Communicator._created(_handle(address), origin)
        del c
    c = taco.Communicator._created(_handle(0x9000), "loopback")
    del c
    gc.collect()
    a = taco.Communicator(_handle(0xB000), "test")  # creation destroys the loopback one only
    assert s.calls == [("destroy", 0x9000)]
    d = taco.Communicator._created(_handle(0xA000), "loopback")
    del d
    gc.collect()
    a.abort()
    assert s.calls[1:] == [("abort", 0xB000)]  # 0xA000 still queued: abort did not wait for it
    taco.Communicator(object(), "test")
    assert s.calls[-1] == ("destroy", 0xA000)


def test_a_copy_of_a_communicator_is_the_communicator(monkeypatch):
    """copy.copy / deepcopy (a model deep-copied with its group) give the same object: a second
    object on the handle would destroy it when collected while the first still uses it."""
    import copy
    import gc

    s = HandleStub()
    monkeypatch.setattr(_lib, "lib", lambda: s)
    monkeypatch.setattr(comm_mod, "_unclosed", [])
    c = taco.Communicator._created(_handle(0xC000), "loopback")
    assert copy.copy(c) is c and copy.deepcopy(c) is c and copy.deepcopy({"g": c})["g"] is c
    d = copy.copy(c)
    del d
    gc.collect()
    taco.Communicator(object(), "test")
    assert s.calls == []  # c is alive: nothing was queued

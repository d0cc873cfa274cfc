"""The Python binding's own arguments, without a GPU: communicator keywords (no float truncated,
no string parsed, no NUL cutting a codec spec short, no C "unset" value passed as a number),
taco.init's arguments (none dropped), torch tensors on devices other than CPU and CUDA, and
writes into torch tensors (autograd sees them; a leaf that requires grad is refused). Each
mistake raises InvalidArgumentError naming the argument before anything reaches the library.
The same on a GPU: tests/gpu/test_python_inputs_gpu.py."""
import numpy as np
import pytest

import taco
from taco import comm as comm_mod

torch = pytest.importorskip("torch")

UNSET_SIZE, UNSET_INT = (1 << 64) - 1, -(1 << 31)


class FakeCAI:
    """A device array description only (CUDA Array Interface): describe() reads it, nothing runs."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (0x7000_0000, False),
                                         "version": 3, "strides": None, "stream": None}


# ---------------------------------------------------------------- communicator keywords


@pytest.mark.parametrize("config, message", [
    ({"codec": "taco\0:block=7"}, r"codec: spec 'taco\\x00:block=7' is not a codec spec"),
    ({"pipeline_depth": 2.9}, r"pipeline_depth: expected an integer, got float 2.9"),
    ({"check_consistency": 1.0}, r"check_consistency: expected an integer, got float 1.0"),
    ({"chunk_bytes": -1}, r"chunk_bytes: -1 is outside \[0, "),
    ({"chunk_bytes": "64M"}, r"chunk_bytes: expected a number of bytes \(an integer\), got '64M'"),
    ({"fallback_bytes": 1 << 64}, r"fallback_bytes: 18446744073709551616 is outside \[0, 18446744073709551615\]"),
    ({"pipeline_depth": 1 << 40}, r"pipeline_depth: 1099511627776 is outside"),
    ({"pipeline_depth": True}, r"pipeline_depth: expected an integer, got True"),
    ({"pipeline_depth": 17}, r"pipeline_depth: 17 is outside \[1, 16\]"),
    ({"chunk_bytes": 0}, r"chunk_bytes: 0 is outside \[1, 281474976710656\]"),
    ({"chunk_bytes": (1 << 48) + 1}, r"chunk_bytes: 281474976710657 is outside"),
    ({"chunk_bytes": UNSET_SIZE}, r"chunk_bytes: 18446744073709551615 is the C API's 'unset' value; leave "
                                  r"chunk_bytes out \(or None\)"),
    ({"fallback_bytes": UNSET_SIZE}, r"fallback_bytes: 18446744073709551615 is the C API's 'unset' value"),
    ({"pipeline_depth": UNSET_INT}, r"pipeline_depth: -2147483648 is the C API's 'unset' value"),
    ({"check_consistency": UNSET_INT}, r"check_consistency: -2147483648 is the C API's 'unset' value"),
])
@pytest.mark.parametrize("create", ["config", "loopback", "from_unique_id", "from_nccl"])
def test_bad_config_keywords_are_refused_naming_them(config, message, create):
    call = {
        "config": lambda: comm_mod._config(config),
        "loopback": lambda: taco.loopback(2, **config),
        "from_unique_id": lambda: taco.Communicator.from_unique_id(bytes(128), 2, 0, **config),
        "from_nccl": lambda: taco.Communicator.from_nccl(0x1000, **config),
    }[create]
    with pytest.raises(taco.InvalidArgumentError, match=message):
        call()


def test_integer_keywords_take_integers_of_any_kind():
    cfg, _ = comm_mod._config({"chunk_bytes": np.uint64(1 << 20), "fallback_bytes": 0, "pipeline_depth": np.int32(3),
                               "check_consistency": True})
    assert (cfg.chunkBytes, cfg.fallbackBytes, cfg.pipelineDepth, cfg.checkConsistency) == (1 << 20, 0, 3, 1)


def test_codec_keyword_is_a_spec_string():
    with pytest.raises(TypeError, match="codec: expected a codec spec string, got bytes"):
        comm_mod._config({"codec": b"taco"})
    with pytest.raises(TypeError, match="codec: expected a codec spec string, got int"):
        taco.loopback(2, codec=2)
    # parsed where it is given, naming codec (the C message named 'config codec' at creation)
    for spec, message in (("TACO", "codec: 'TACO': unknown codec"), ("fp8-block:block=48", "block size 48"),
                          ("", "codec: '' has no codec name")):
        with pytest.raises(taco.InvalidArgumentError, match=message):
            comm_mod._config({"codec": spec})
        with pytest.raises(taco.InvalidArgumentError, match=message):
            taco.loopback(2, codec=spec)


@pytest.mark.parametrize("call, message", [
    (lambda: taco.loopback(2.7), r"n: expected an integer, got float 2.7"),
    (lambda: taco.loopback("2"), r"n: expected an integer, got str '2'"),
    (lambda: taco.Communicator.from_unique_id(bytes(128), 2, 1.5), r"rank: expected an integer, got float 1.5"),
    (lambda: taco.Communicator.from_unique_id(bytes(128), 2.0, 0), r"nranks: expected an integer, got float 2.0"),
    (lambda: taco.Communicator.from_unique_id(bytes(128), 2, 1 << 40), r"rank: 1099511627776 is outside"),
    (lambda: taco.Communicator.from_nccl(4096.5), r"nccl_comm: expected an integer, got float 4096.5"),
])
def test_counts_and_ranks_are_not_truncated(call, message):
    with pytest.raises(taco.InvalidArgumentError, match=message):
        call()


# ---------------------------------------------------------------- taco.init


class Standing:
    """Stands in for a communicator given to taco.init."""

    config = {"codec": "taco"}
    closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("kw", [{"codec": "taco"}, {"chunk_bytes": 1 << 20}, {"source": "mpi"},
                                {"algo": "plain", "fallback_bytes": 0}])
def test_init_with_a_communicator_refuses_configuration(kw):
    taco.finalize()
    first = Standing()
    assert taco.init(first) is first
    try:
        with pytest.raises(taco.InvalidArgumentError, match=f"init\\(\\): {', '.join(sorted(kw))} cannot be "
                                                            f"combined with comm"):
            taco.init(Standing(), **kw)
        assert taco.communicator() is first and not first.closed  # the default is left as it was
    finally:
        taco.finalize()


@pytest.mark.parametrize("kw, error, message", [
    ({"codec": "TACO"}, taco.InvalidArgumentError, "codec: 'TACO': unknown codec"),
    ({"codec": ""}, taco.InvalidArgumentError, "codec: '' has no codec name"),
    ({}, taco.InvalidUsageError, "no launcher found"),
])
def test_an_init_that_fails_leaves_the_default_as_it_was(kw, error, message):
    """init() closed the current default before it looked for a launcher or parsed the codec, so
    a failed init left none; and init(c) with the default c closed c."""
    taco.finalize()
    first = Standing()
    taco.init(first)
    try:
        with pytest.raises(error, match=message):
            taco.init(**kw)
        assert taco.communicator() is first and not first.closed
        assert taco.init(first) is first and not first.closed  # given again: kept open
    finally:
        taco.finalize()
    assert first.closed


def test_an_init_whose_communicator_fails_leaves_the_default(monkeypatch):
    """The new communicator is made before the current default is closed; a launcher that hands
    back the current default (a cached one) keeps it open."""
    from taco import default as d

    taco.finalize()
    first = Standing()
    taco.init(first)

    def failing(codec, **cfg):
        raise RuntimeError("ncclCommInitRank failed (a stand-in)")

    try:
        monkeypatch.setattr(d, "_bootstrap", lambda source: ("mpi", failing))
        with pytest.raises(RuntimeError, match="a stand-in"):
            taco.init(codec="taco")
        assert taco.communicator() is first and not first.closed
        monkeypatch.setattr(d, "_bootstrap", lambda source: ("mpi", lambda codec, **cfg: first))
        assert taco.init(codec="taco") is first and not first.closed
        assert taco.communicator() is first
    finally:
        taco.finalize()
    assert first.closed


@pytest.mark.parametrize("unique_id", [128, 5, "abc", True])
def test_a_unique_id_is_bytes(unique_id):
    """bytes(128) is 128 zero bytes, an id no rank made; bytes("abc") fails without naming it."""
    with pytest.raises(TypeError, match=f"unique_id: expected the bytes of get_unique_id\\(\\), got "
                                        f"{type(unique_id).__name__}"):
        taco.Communicator.from_unique_id(unique_id, 2, 0)


@pytest.mark.parametrize("source", ["MPI", "torchrun", "", 1])
def test_init_refuses_an_unknown_source(source):
    with pytest.raises(taco.InvalidArgumentError, match=f"source: unknown source {source!r}; expected 'mpi', "
                                                        f"'torch' or None"):
        taco.init(source=source)


# ---------------------------------------------------------------- torch devices


@pytest.mark.parametrize("call, name", [
    (lambda t: taco.compress(t, "taco"), "x"),
    (lambda t: taco.decompress(taco.compress(np.ones(4, np.float32), "taco"), "taco", 4, "float32", out=t), "out"),
    (lambda t: taco.compress(np.ones(4, np.float32), "taco", out=t.to(torch.uint8)), "out"),
])
def test_tensors_on_other_devices_are_refused(call, name):
    """A meta tensor (no memory) or one on mps, xpu, ... is not host memory."""
    with pytest.raises(taco.InvalidArgumentError, match=f"{name}: tensor is on device meta; libtaco takes CPU "
                                                        f"and CUDA tensors"):
        call(torch.empty(4, device="meta"))


def test_a_communicator_refuses_tensors_on_other_devices():
    c = comm_mod.Communicator(object(), "test")
    with pytest.raises(taco.InvalidArgumentError, match="x: tensor is on device meta"):
        c.allreduce(torch.empty(4, device="meta"))
    with pytest.raises(taco.InvalidArgumentError, match="out: tensor is on device meta"):
        c.allreduce(FakeCAI(4), out=torch.empty(4, device="meta"))


# ---------------------------------------------------------------- the general path's out


def test_a_host_out_is_named_as_host_memory():
    c = comm_mod.Communicator(object(), "test")
    for out in (np.empty(8, np.float32), torch.empty(8)):
        with pytest.raises(taco.InvalidArgumentError, match="allreduce: out is in host memory, x on device 0"):
            c.allreduce(FakeCAI(8), out=out)


def test_the_general_path_refuses_a_leaf_that_requires_grad_as_out():
    c = comm_mod.Communicator(object(), "test")
    leaf = torch.zeros(8, requires_grad=True)
    with pytest.raises(taco.InvalidArgumentError, match="out: is a leaf tensor that requires grad"):
        c.allreduce(FakeCAI(8), out=leaf)
    with torch.no_grad(), pytest.raises(taco.InvalidArgumentError, match="out is in host memory"):
        c.allreduce(FakeCAI(8), out=leaf)  # past that check: the next one refuses the host tensor


# ---------------------------------------------------------------- codec outputs and autograd


def _wire(n=64):
    return taco.compress(np.linspace(-1, 1, n).astype(np.float32), "taco")


@pytest.mark.parametrize("call, name", [
    (lambda t: taco.decompress(_wire(), "taco", 64, "float32", out=t), "out"),
    (lambda t: taco.decompress_accumulate([_wire(), _wire()], "taco", 64, "float32", out=t), "out"),
    (lambda t: taco.decompress_reduce_compress([_wire()], "taco", 64, "float32", y=t), "y"),
])
def test_codec_outputs_bump_the_version_and_refuse_a_leaf(call, name):
    """libtaco writes through the pointer: autograd is told (a backward that saved the tensor
    refuses it), and a leaf that requires grad is refused, as torch's in-place operations do."""
    b = torch.randn(64, requires_grad=True)
    y = b * 1
    z = y.sin()  # saves y
    v = y._version
    call(y.detach())  # a detached view shares the version counter
    assert y._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    leaf = torch.zeros(64, requires_grad=True)
    with pytest.raises(taco.InvalidArgumentError, match=f"{name}: is a leaf tensor that requires grad"):
        call(leaf)
    assert not leaf.detach().any()
    with torch.no_grad():
        call(leaf)
    assert leaf.detach().any()


def test_a_compressed_output_tensor_is_marked_written():
    out = torch.zeros(taco.compressed_size("taco", 64, "float32"), dtype=torch.uint8)
    v = out._version
    taco.compress(np.ones(64, np.float32), "taco", out=out)
    assert out._version > v


class _MyTensor(torch.Tensor):
    """A user's subclass of torch.Tensor (defined outside torch)."""


def test_a_tensor_subclass_is_a_torch_tensor():
    """A subclass of torch.Tensor is taken as a tensor: its outputs are tensors, and one used as
    out is marked written, so that a backward which saved it refuses to run (taken as a plain
    DLPack object it ran and gave a wrong gradient), and a leaf that requires grad is refused."""
    x = torch.linspace(-1, 1, 64).as_subclass(_MyTensor)
    assert isinstance(taco.compress(x, "none"), torch.Tensor)
    a = torch.ones(64, requires_grad=True)
    b = torch.full((64,), 3.0).as_subclass(_MyTensor)
    loss = (a * b).sum()  # saves b
    taco.decompress(_wire(), "taco", 64, "float32", out=b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    leaf = torch.zeros(64).as_subclass(_MyTensor).requires_grad_()
    with pytest.raises(taco.InvalidArgumentError, match="out: is a leaf tensor that requires grad"):
        taco.decompress(_wire(), "taco", 64, "float32", out=leaf)


def test_a_lazily_negated_tensor_is_refused():
    """The imaginary part of a conjugated tensor reads negated while its memory holds the values
    without the sign: read through its pointer, it lost the sign. (One element: a longer one is
    strided, which is refused as not contiguous.)"""
    im = torch.tensor([1 + 2j], dtype=torch.complex64).conj().imag
    assert im.is_neg() and im.is_contiguous()
    with pytest.raises(taco.InvalidArgumentError, match=r"x: tensor has its negative bit set.*resolve_neg"):
        taco.compress(im, "none")
    back = taco.decompress(taco.compress(im.resolve_neg(), "none"), "none", 1, "float32")
    assert back.tolist() == [-2.0]


class _Rank(comm_mod.Communicator):
    """Rank `r` of a P-rank world `world` (a stand-in: no library communicator behind it)."""

    def __init__(self, r, P, world):
        super().__init__(None, "stand-in")
        self._r, self._P, self._loopback_world = r, P, world

    size = property(lambda self: self._P)
    rank = property(lambda self: self._r)
    closed = property(lambda self: False)


def test_a_tp_group_checks_its_ranks_and_tensors():
    import taco.torch as tt

    a, b = object(), object()
    with pytest.raises(ValueError, match="ranks of 2 different worlds"):
        tt.TPGroup([_Rank(0, 2, a), _Rank(1, 2, b)])
    g = tt.TPGroup([_Rank(0, 2, a), _Rank(1, 2, a)])
    with pytest.raises(ValueError, match="expected 2 tensors and as many outs .* got 2 tensors and 1 outs"):
        g.all_reduce_([torch.ones(2), torch.ones(2)], [torch.ones(2)])
    with pytest.raises(TypeError, match="tensor: expected a torch.Tensor, got ndarray"):
        tt.all_reduce(np.ones(4, np.float32), group=_Rank(0, 2, a))


# ---------------------------------------------------------------- names and first use


def test_an_automatic_name_skips_names_a_user_took():
    """register(obj) with no name never collides with a name the user registered first (which would
    make the constructor raise after the C communicator existed, leaking it)."""
    class Obj:
        closed = False

    nxt = next(comm_mod._name_ids) + 1  # the next automatic number
    held = [Obj() for _ in range(3)]  # kept alive: the registry holds its objects weakly
    for k, obj in zip(range(nxt, nxt + 3), held):
        comm_mod.register(obj, f"comm-{k}")
    fresh = Obj()
    name = comm_mod.register(fresh)
    assert name not in {f"comm-{k}" for k in range(nxt, nxt + 3)} and comm_mod.lookup(name) is fresh


def test_first_use_from_threads_loads_one_ffi_and_one_library():
    """Threads that make their first calls at once share one FFI and one library (cdata of two FFIs
    do not mix)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import threading, taco._lib as L
        seen, go = [], threading.Barrier(8)
        def first():
            go.wait()
            seen.append((id(L.ffi()), id(L.lib())))
        ts = [threading.Thread(target=first) for _ in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        print(len({a for a, _ in seen}), len({b for _, b in seen}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"], out.stdout

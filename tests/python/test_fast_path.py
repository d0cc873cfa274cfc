"""The collectives' fast path (python/taco/_fast.py) without a GPU: the integer declarations it
derives from taco.h reach the real libtaco, and what it passes to the C functions for each
collective, what it allocates and returns, and when it hands a call to the general path.

No CUDA tensor exists here, so a torch.Tensor subclass that reports device 0 stands in for one,
the framework lookups (current device, current stream) are replaced, and the C functions are
recorders. tests/gpu/test_torch_ops_gpu.py runs the same path on a GPU against the general path.
"""
import types

import pytest

torch = pytest.importorskip("torch")

import taco  # noqa: E402
from taco import _fast, _lib  # noqa: E402
from taco._arrays import bump_version  # noqa: E402
from taco.comm import Communicator  # noqa: E402

STREAM = 0x5000
HANDLE = 0xABC0


def test_integer_declarations_follow_the_header():
    f = _lib.ffi()
    assert _fast._int_decl(f, "tacoAllReduce") == \
        "int tacoAllReduce(uintptr_t, uintptr_t, size_t, int, int, uintptr_t, uintptr_t);"
    assert _fast._int_decl(f, "tacoReduceScatter") == \
        "int tacoReduceScatter(uintptr_t, uintptr_t, size_t, int, int, uintptr_t, uintptr_t);"
    assert _fast._int_decl(f, "tacoAllGather") == \
        "int tacoAllGather(uintptr_t, uintptr_t, size_t, int, uintptr_t, uintptr_t);"
    assert _fast._int_decl(f, "tacoAlltoAll") == \
        "int tacoAlltoAll(uintptr_t, uintptr_t, size_t, int, uintptr_t, uintptr_t);"


def test_integer_functions_call_the_real_library():
    """The C checks see what the integers say: a NULL communicator, then (with a count of 0 and an
    unknown datatype) the datatype check, each naming the operation."""
    lib = _lib.lib()
    ar, rs, ag, a2a = _fast.int_functions()
    bad = lib.tacoInvalidArgument
    for fn, args, op in [(ar, (8, 8, 4, 0, 0, 0, 0), "tacoAllReduce"), (rs, (8, 8, 4, 0, 0, 0, 0), "tacoReduceScatter"),
                         (ag, (8, 8, 4, 0, 0, 0), "tacoAllGather"), (a2a, (8, 8, 4, 0, 0, 0), "tacoAlltoAll")]:
        assert fn(*args) == bad
        assert _lib.ffi().string(lib.tacoGetLastError(_lib.ffi().NULL)).decode() == f"{op}: comm argument is NULL"


class DevTensor(torch.Tensor):
    """A CPU tensor that says it lives on CUDA device 0 (to the fast path; the general path, which
    reads it through DLPack, sees host memory)."""

    def get_device(self):
        return 0

    @property
    def is_cuda(self):
        return True

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("host memory")

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


class Recorder:
    def __init__(self, name, rc=0):
        self.name, self.rc, self.calls = name, rc, []

    def __call__(self, *args):
        self.calls.append(args)
        return self.rc


@pytest.fixture
def fake(monkeypatch):
    env = types.SimpleNamespace(dt={torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}, op_sum=0,
                                get_device=lambda: 0, raw_stream=lambda d: STREAM + d, empty_like=torch.empty_like,
                                grad_enabled=torch.is_grad_enabled, bump_version=bump_version)
    monkeypatch.setattr(_fast, "_T", env)
    recs = [Recorder(n) for n in _fast._FUNCS]
    monkeypatch.setattr(_fast, "_FNS", tuple(recs))
    monkeypatch.setitem(_fast._KINDS, DevTensor, _fast._torch_call)
    comm = Communicator(_lib.ffi().cast("tacoComm_t", 0), "fake")
    comm._fast_handle, comm._fast_nranks = HANDLE, 4
    return types.SimpleNamespace(comm=comm, ar=recs[0], rs=recs[1], ag=recs[2], a2a=recs[3])


def dev(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape).to(dtype).as_subclass(DevTensor)


def test_allreduce_allocating_and_with_out(fake):
    x = dev(6, 4)
    y = fake.comm.allreduce(x)
    assert type(y) is DevTensor and y.shape == x.shape and y.dtype == x.dtype and y.data_ptr() != x.data_ptr()
    assert fake.ar.calls == [(x.data_ptr(), y.data_ptr(), 24, 2, 0, HANDLE, STREAM)]
    o = dev(6, 4)
    assert fake.comm.allreduce(x, out=o) is o
    assert fake.comm.allreduce(x, out=x) is x  # in place
    assert fake.ar.calls[1:] == [(x.data_ptr(), o.data_ptr(), 24, 2, 0, HANDLE, STREAM),
                                 (x.data_ptr(), x.data_ptr(), 24, 2, 0, HANDLE, STREAM)]
    flat = dev(24)
    y = fake.comm.allreduce(x, out=flat)  # returned shaped like x, as the general path does
    assert y.shape == (6, 4) and y.data_ptr() == flat.data_ptr()
    assert fake.comm.allreduce(x, out=o, stream=77) is o  # explicit stream with an output: fast
    assert fake.ar.calls[-1][-1] == 77
    assert fake.comm.allreduce(x, dtype="bf16").dtype == torch.bfloat16  # dtype= naming x's own dtype


def test_the_other_collectives_pass_counts_per_rank(fake):
    x = dev(8, 3, dtype=torch.float32)
    y = fake.comm.reduce_scatter(x)
    assert y.shape == (6,) and fake.rs.calls == [(x.data_ptr(), y.data_ptr(), 6, 0, 0, HANDLE, STREAM)]
    y = fake.comm.allgather(x)
    assert y.shape == (4, 8, 3) and fake.ag.calls == [(x.data_ptr(), y.data_ptr(), 24, 0, HANDLE, STREAM)]
    y = fake.comm.alltoall(x)
    assert y.shape == (8, 3) and fake.a2a.calls == [(x.data_ptr(), y.data_ptr(), 6, 0, HANDLE, STREAM)]
    o = dev(96, dtype=torch.float32)
    y = fake.comm.allgather(x, out=o)
    assert y.shape == (4, 8, 3) and y.data_ptr() == o.data_ptr()


def test_a_c_error_raises_with_the_librarys_code(fake):
    fake.ar.rc = _lib.lib().tacoInvalidUsage
    with pytest.raises(taco.InvalidUsageError):
        fake.comm.allreduce(dev(4))


@pytest.mark.parametrize("case", [
    "non-contiguous", "int dtype", "dtype= mismatch", "out numel", "out dtype", "out non-contiguous",
    "out plain CPU", "indivisible", "stream without out", "other device", "closed",
])
def test_everything_else_takes_the_general_path(fake, monkeypatch, case):
    """Each of these leaves the fast path, so the general path decides (here it refuses: the
    tensors are host memory to it), and no C function was called."""
    x, out, kw, call = dev(8, 4), None, {}, fake.comm.allreduce
    if case == "non-contiguous":
        x = dev(4, 8).t()
    elif case == "int dtype":
        x = torch.ones(8, dtype=torch.int32).as_subclass(DevTensor)
    elif case == "dtype= mismatch":
        kw = {"dtype": "float16"}
    elif case == "out numel":
        out = dev(31)
    elif case == "out dtype":
        out = dev(8, 4, dtype=torch.float16)
    elif case == "out non-contiguous":
        out = dev(4, 8).t()
    elif case == "out plain CPU":
        out = torch.empty(8, 4, dtype=torch.bfloat16)
    elif case == "indivisible":
        x, call = dev(6), fake.comm.reduce_scatter
    elif case == "stream without out":
        kw = {"stream": 77}
    elif case == "other device":
        monkeypatch.setattr(_fast._torch_env(), "get_device", lambda: 1)
    elif case == "closed":
        fake.comm._h = None
    assert _fast.call(fake.comm, _fast.REDUCE_SCATTER if call == fake.comm.reduce_scatter else _fast.ALLREDUCE,
                      x, out, kw.get("dtype"), kw.get("stream")) is _fast.SLOW
    with pytest.raises((taco.InvalidArgumentError, taco.InvalidUsageError, TypeError)):
        call(x, out=out, **kw)
    assert not any(r.calls for r in (fake.ar, fake.rs, fake.ag, fake.a2a))


def test_plain_cpu_tensors_and_numpy_are_not_fast():
    import numpy as np

    c = Communicator(None, "x")
    assert _fast.call(c, _fast.ALLREDUCE, torch.ones(4), None, None, None) is _fast.SLOW
    assert _fast.call(c, _fast.ALLREDUCE, np.ones(4, np.float32), None, None, None) is _fast.SLOW


def test_host_cost_benchmark_parses_its_arguments():
    """bench/host_cost.py (run on a GPU machine) parses its options without a GPU."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "host_cost.py"
    p = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--codecs" in p.stdout and "--iters" in p.stdout, p.stderr
    p = subprocess.run([sys.executable, str(script), "--count", "0"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--count, --iters and --reps must be >= 1" in p.stderr


@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter"])
def test_x_as_the_output_of_a_gather_or_scatter_takes_the_general_path(fake, kind):
    """x has P times fewer (all-gather) or P times more (reduce-scatter) elements than the output:
    as `out` it is checked like any other, not passed to the C call, whose in-place rule would let
    rank 0 write P*n elements into x's n."""
    x = dev(8, 3, dtype=torch.float32)
    k = _fast.ALLGATHER if kind == "allgather" else _fast.REDUCE_SCATTER
    assert _fast.call(fake.comm, k, x, x, None, None) is _fast.SLOW
    with pytest.raises(taco.InvalidArgumentError):
        getattr(fake.comm, kind)(x, out=x)
    assert not any(r.calls for r in (fake.ar, fake.rs, fake.ag, fake.a2a))


def test_x_as_the_output_of_allreduce_and_alltoall_stays_fast(fake):
    x = dev(8, 3, dtype=torch.float32)
    assert fake.comm.alltoall(x, out=x) is x
    assert fake.a2a.calls == [(x.data_ptr(), x.data_ptr(), 6, 0, HANDLE, STREAM)]


def test_a_given_output_is_marked_written_for_autograd(fake):
    """libtaco writes through the pointer: the fast path bumps out's version counter, as torch's own
    in-place operations do, so a backward that saved the tensor refuses the new values."""
    x, o = dev(6, 4), dev(6, 4)
    v = o._version
    fake.comm.allreduce(x, out=o)
    assert o._version > v
    v = x._version
    fake.comm.allreduce(x, out=x)
    assert x._version > v
    a = torch.randn(24, requires_grad=True)
    y = (a * 1).as_subclass(DevTensor)
    z = y.sin()  # saves y
    assert fake.comm.allreduce(dev(24, dtype=torch.float32), out=y) is y
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_a_leaf_that_requires_grad_is_not_written_by_the_fast_path(fake):
    x, leaf = dev(6, 4), dev(6, 4).requires_grad_()
    assert _fast.call(fake.comm, _fast.ALLREDUCE, x, leaf, None, None) is _fast.SLOW
    assert _fast.call(fake.comm, _fast.ALLREDUCE, leaf, leaf, None, None) is _fast.SLOW
    assert not fake.ar.calls
    # a view of such a leaf too (torch refuses leaf[0].mul_(2) as well)
    root = torch.randn(6, 4).to(torch.bfloat16).requires_grad_()
    assert _fast.call(fake.comm, _fast.ALLREDUCE, x[0], root.as_subclass(DevTensor)[0], None, None) is _fast.SLOW
    assert not fake.ar.calls
    with torch.no_grad():  # as torch allows
        assert fake.comm.allreduce(x, out=leaf) is leaf
    assert len(fake.ar.calls) == 1


def test_a_tensor_on_another_accelerator_is_not_fast(fake):
    """An xpu:0 or mps:0 tensor reports device 0 too: only CUDA tensors take the fast path."""

    class OtherAccel(DevTensor):
        @property
        def is_cuda(self):
            return False

    x = dev(8).as_subclass(OtherAccel)
    _fast._KINDS[OtherAccel] = _fast._torch_call
    try:
        assert _fast.call(fake.comm, _fast.ALLREDUCE, x, None, None, None) is _fast.SLOW
        assert _fast.call(fake.comm, _fast.ALLREDUCE, dev(8), x, None, None) is _fast.SLOW
    finally:
        del _fast._KINDS[OtherAccel]
    assert not fake.ar.calls

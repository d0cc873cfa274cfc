"""The Python binding's checks on real device arrays (tests/python/test_python_inputs.py and
test_fast_path.py run them without a GPU): x given as the output of an all-gather or a
reduce-scatter is refused, not written past its end; writes into torch tensors are seen by
autograd, and a leaf that requires grad is refused; host outputs, tensors on other devices,
a too small compressed output and a codec the group does not have are named.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_python_inputs_gpu.py
PyTorch and CuPy are required there: a missing one is a failure, not a skip.
"""
import pytest

from nccl_world import world1  # noqa: F401 (fixture)
from loopback_world import cp, one, torch  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

N = 1024


class CAI:
    """A bare __cuda_array_interface__ object: the binding's general path (no fast path)."""

    def __init__(self, t):
        self.__cuda_array_interface__ = {"shape": tuple(t.shape), "typestr": "<f4", "data": (t.data_ptr(), False),
                                         "version": 2}


@pytest.fixture
def two(torch):
    import taco

    comms = taco.loopback(2, codec="taco", fallback_bytes=0)
    yield comms
    torch.cuda.synchronize()
    for c in comms:
        c.close()


# ------------------------------------------------------------------ x as out


@pytest.mark.parametrize("kind, want", [("allgather", 2 * N), ("reduce_scatter", N // 2)])
@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_x_as_out_of_a_gather_or_scatter_is_refused(torch, cp, two, framework, kind, want):
    """Each x is the first N elements of a buffer whose tail is a guard: refused before any C call,
    on rank 0 too (the C in-place rule would let it write 2N elements there)."""
    import taco

    if framework == "torch":
        bufs = [torch.full((2 * N,), 7.0, device="cuda") for _ in two]
    else:
        bufs = [cp.full((2 * N,), 7.0, dtype=cp.float32) for _ in two]
    xs = [b[:N] for b in bufs]
    with taco.group():
        for c, x in zip(two, xs):
            with pytest.raises(taco.InvalidArgumentError, match=f"{kind}: out has {N} elements, expected {want}"):
                getattr(c, kind)(x, out=x)
    torch.cuda.synchronize()
    cp.cuda.Device().synchronize()
    for b in bufs:
        assert float((b != 7.0).sum()) == 0  # neither x nor the guard was written


def test_x_as_out_through_the_module_functions_and_operators(torch, two):
    import taco
    import taco.torch  # noqa: F401 - defines torch.ops.taco.*

    x = torch.ones(N, device="cuda")
    name = two[0].group_name
    with pytest.raises(ValueError, match=rf"taco::all_gather_into: out has {N} elements, expected {2 * N}"):
        torch.ops.taco.all_gather_into(x, x, name)
    with pytest.raises(ValueError, match=rf"taco::reduce_scatter_into: out has {N} elements, expected {N // 2}"):
        torch.ops.taco.reduce_scatter_into(x, x, "sum", name)
    taco.init(two[0])
    try:
        with pytest.raises(taco.InvalidArgumentError, match=f"allgather: out has {N} elements, expected {2 * N}"):
            taco.allgather(x, out=x)
        with pytest.raises(taco.InvalidArgumentError, match=f"reduce_scatter: out has {N} elements"):
            taco.reduce_scatter(x, out=x)
    finally:
        taco.finalize()  # closes two[0]; the fixture's close is then a no-op
    torch.cuda.synchronize()
    assert bool((x == 1).all())


# ------------------------------------------------------------------ autograd


def test_writes_into_torch_tensors_bump_their_version(torch, one):
    import taco
    import taco.torch as tt

    x = torch.randn(N, device="cuda")
    writes = [
        ("fast path", lambda y: one.allreduce(x, out=y)),
        ("fast path, in place", lambda y: one.allreduce(y, out=y)),
        ("general path", lambda y: one.allreduce(CAI(x), out=y)),
        ("all_reduce_", lambda y: torch.ops.taco.all_reduce_(y, "sum", one.group_name)),
        ("taco.torch.all_reduce", lambda y: tt.all_reduce(y, group=one)),
        ("decompress", lambda y: taco.decompress(taco.compress(x, "taco"), "taco", N, "float32", out=y)),
    ]
    for what, write in writes:
        a = torch.randn(N, device="cuda", requires_grad=True)
        y = a * 1
        z = y.sin()  # saves y
        v = y._version
        write(y.detach() if what == "decompress" else y)
        assert y._version > v, what
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def test_a_leaf_that_requires_grad_is_not_written(torch, one):
    import taco
    import taco.torch as tt

    x = torch.randn(N, device="cuda")
    leaf = torch.zeros(N, device="cuda", requires_grad=True)
    for call, match in [
        (lambda: one.allreduce(x, out=leaf), "out: is a leaf tensor that requires grad"),
        (lambda: one.allreduce(leaf, out=leaf), "out: is a leaf tensor that requires grad"),
        (lambda: torch.ops.taco.all_reduce_(leaf, "sum", one.group_name), "taco::all_reduce_: input: is a leaf"),
        (lambda: tt.all_reduce(leaf, group=one), "tensor: is a leaf tensor that requires grad"),
    ]:
        with pytest.raises(taco.InvalidArgumentError, match=match):
            call()
    torch.cuda.synchronize()
    assert not bool(leaf.detach().any())
    with torch.no_grad():
        assert one.allreduce(x, out=leaf) is leaf
    torch.cuda.synchronize()
    assert bool(leaf.detach().any())


# ------------------------------------------------------------------ messages


def test_outputs_and_devices_are_named(torch, one):
    import taco
    import taco.torch as tt

    x = torch.randn(N, device="cuda")
    with pytest.raises(taco.InvalidArgumentError, match=r"allreduce: out is in host memory, x on device \d+"):
        one.allreduce(x, out=torch.empty(N))
    with pytest.raises(taco.InvalidArgumentError, match="x: tensor is on device meta"):
        one.allreduce(torch.empty(N, device="meta"))
    need = taco.compressed_size("taco", N, "float32")
    with pytest.raises(taco.InvalidArgumentError, match=f"out: has 10 bytes; the compressed buffer needs {need}"):
        taco.compress(x, "taco", out=torch.empty(10, dtype=torch.uint8, device="cuda"))
    with pytest.raises(taco.InvalidArgumentError, match="codec: 'fp8-block', but group's communicator"):
        tt.all_reduce(x, group=one, codec="fp8-block")
    tt.all_reduce(x, group=one, codec="taco")  # the codec it has


def test_c10d_backend_takes_a_parameter_as_torchs_backends_do(torch, world1):
    """dist.all_reduce(param) with grad mode on: torch's backends take it (a collective is no autograd
    operation), and so does the "taco" backend, though the binding refuses such a write elsewhere."""
    import taco.c10d
    import taco.torch  # noqa: F401 - registers the backend

    dist = world1
    g = dist.new_group([0], backend="taco", pg_options=taco.c10d.Options(codec="none", fallback_bytes=0))
    p = torch.nn.Parameter(torch.randn(4096, device="cuda"))
    want = p.detach().clone()
    dist.all_reduce(p, group=g)
    torch.cuda.synchronize()
    assert g.routed["allreduce"] == 1 and torch.equal(p.detach(), want)  # one rank, codec none: x itself

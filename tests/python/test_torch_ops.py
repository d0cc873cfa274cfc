"""torch.ops.taco.* on the CPU: registration, schemas, fake (meta) shapes and dtypes, errors,
torch.library.opcheck, autograd, and torch.compile(fullgraph=True) of the TP layers.

libtaco's collectives take device memory, so here the operators run against stand-ins
registered under a name, exactly as a Communicator is: `Mirror`, a world of P ranks that all
hold this process's input (an exact model: all-reduce gives P*x, all-gather P copies, ...),
and `ExactTP`, a TP group whose all-reduce is the exact sum of its local ranks' tensors. The
GPU tests (tests/gpu/test_torch_ops_gpu.py) run the same operators on libtaco itself.
"""
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import taco  # noqa: E402
import taco.torch as tt  # noqa: E402
from taco import _ops  # noqa: E402
from taco.comm import Communicator  # noqa: E402

from exact_tp import ExactTP  # noqa: E402

SCHEMAS = {
    "all_reduce": "taco::all_reduce(Tensor input, str reduce_op, str comm) -> Tensor",
    "all_reduce_": "taco::all_reduce_(Tensor(a!) input, str reduce_op, str comm) -> ()",
    "reduce_scatter": "taco::reduce_scatter(Tensor input, str reduce_op, int group_size, str comm) -> Tensor",
    "reduce_scatter_into": "taco::reduce_scatter_into(Tensor(a!) out, Tensor input, str reduce_op, str comm) -> ()",
    "all_gather": "taco::all_gather(Tensor input, int group_size, str comm) -> Tensor",
    "all_gather_into": "taco::all_gather_into(Tensor(a!) out, Tensor input, str comm) -> ()",
    "all_to_all": "taco::all_to_all(Tensor input, int group_size, str comm) -> Tensor",
    "all_to_all_into": "taco::all_to_all_into(Tensor(a!) out, Tensor input, str comm) -> ()",
    "all_reduce_local": "taco::all_reduce_local(Tensor[] inputs, str reduce_op, str group) -> Tensor[]",
}
DIFFERENTIABLE = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "all_reduce_local"]


class Mirror(Communicator):
    """P ranks that all hold this process's input: the collectives' exact results."""

    def __init__(self, P):
        super().__init__(None, "mirror")
        self._P = P
        self.calls = 0

    @property
    def size(self):
        return self._P

    @property
    def rank(self):
        return 0

    @property
    def closed(self):
        return False

    def allreduce(self, x, out=None, stream=None, dtype=None):
        self.calls += 1
        out.copy_(x * self._P)
        return out

    def reduce_scatter(self, x, out=None, stream=None, dtype=None):
        self.calls += 1
        m = x.numel() // self._P
        out.view(-1).copy_(x.reshape(-1)[:m] * self._P)
        return out

    def allgather(self, x, out=None, stream=None, dtype=None):
        self.calls += 1
        out.view(self._P, -1).copy_(x.reshape(1, -1).expand(self._P, -1))
        return out

    def alltoall(self, x, out=None, stream=None, dtype=None):
        self.calls += 1
        m = x.numel() // self._P
        out.view(self._P, -1).copy_(x.reshape(-1)[:m].expand(self._P, -1))
        return out


@pytest.fixture
def mirror():
    return Mirror(4)


# ------------------------------------------------------------------ registration


def test_every_op_is_registered_with_its_schema():
    assert set(_ops.OPS) == set(SCHEMAS)
    for name, schema in SCHEMAS.items():
        assert str(getattr(torch.ops.taco, name).default._schema) == schema


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_kernels_fake_and_autograd_are_registered(name):
    qual = f"taco::{name}"
    for key in ("CPU", "CUDA", "Meta"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(qual, key), (name, key)
    has_autograd = torch._C._dispatch_has_kernel_for_dispatch_key(qual, "Autograd")
    assert has_autograd == (name in DIFFERENTIABLE)


def test_communicators_and_groups_are_named():
    a, b = Mirror(2), Mirror(2)
    assert a.group_name.startswith("mirror-") and a.group_name != b.group_name
    assert taco.comm.lookup(a.group_name) is a
    tp = ExactTP(2)
    assert tp.group_name.startswith("tp-") and taco.comm.lookup(tp.group_name) is tp
    assert tt.register_communicator(a) == a.group_name  # already named: kept
    assert tt.register_communicator(a, "my-tp-comm") == "my-tp-comm" == a.group_name
    assert taco.comm.lookup("my-tp-comm") is a
    with pytest.raises(taco.InvalidArgumentError, match="'my-tp-comm' is already the name of"):
        tt.register_communicator(b, "my-tp-comm")
    with pytest.raises(TypeError, match="non-empty string"):
        tt.register_communicator(b, "")
    with pytest.raises(taco.InvalidArgumentError, match="no communicator is registered under the name 'nobody'"):
        taco.comm.lookup("nobody")


def test_a_closed_communicators_name_can_be_reused():
    class Closed(Mirror):
        @property
        def closed(self):
            return True

    old = Closed(2)
    tt.register_communicator(old, "reused-name")
    new = Mirror(2)
    assert tt.register_communicator(new, "reused-name") == "reused-name"
    assert taco.comm.lookup("reused-name") is new


# ------------------------------------------------------------------ fake tensors


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fake_shapes_and_dtypes(dtype):
    with FakeTensorMode():
        x = torch.empty(8, 3, 5, dtype=dtype)
        for op, args, shape in [
            ("all_reduce", (x, "sum", "c"), (8, 3, 5)),
            ("all_reduce", (x, "avg", "c"), (8, 3, 5)),
            ("reduce_scatter", (x, "sum", 4, "c"), (2, 3, 5)),
            ("all_gather", (x, 4, "c"), (32, 3, 5)),
            ("all_to_all", (x, 4, "c"), (8, 3, 5)),
        ]:
            y = getattr(torch.ops.taco, op)(*args)
            assert tuple(y.shape) == shape and y.dtype == dtype and y.is_contiguous(), op
        ys = torch.ops.taco.all_reduce_local([x, x.clone()], "sum", "g")
        assert len(ys) == 2 and all(tuple(y.shape) == (8, 3, 5) and y.dtype == dtype for y in ys)
        assert torch.ops.taco.all_reduce_(x, "sum", "c") is None
        # a non-contiguous input still gives a contiguous output of its shape
        y = torch.ops.taco.all_reduce(x.transpose(0, 1), "sum", "c")
        assert tuple(y.shape) == (3, 8, 5) and y.is_contiguous()


@pytest.mark.parametrize("call, message", [
    (lambda x: torch.ops.taco.all_reduce(x.long(), "sum", "c"),
     r"taco::all_reduce: input has dtype torch.int64; libtaco's collectives take float32, float16 and bfloat16"),
    (lambda x: torch.ops.taco.all_reduce(x.double(), "sum", "c"), r"taco::all_reduce: input has dtype torch.float64"),
    (lambda x: torch.ops.taco.all_reduce(x, "max", "c"),
     r"taco::all_reduce: reduce_op 'max' is not supported \(libtaco sums: 'sum' or 'avg'\)"),
    (lambda x: torch.ops.taco.reduce_scatter(x, "sum", 3, "c"),
     r"taco::reduce_scatter: input's dim 0 \(8\) is not divisible by group_size \(3\)"),
    (lambda x: torch.ops.taco.all_to_all(x, 3, "c"), r"taco::all_to_all: input's dim 0 \(8\) is not divisible"),
    (lambda x: torch.ops.taco.all_gather(x[0, 0], 2, "c"), r"taco::all_gather: input is 0-dimensional"),
    (lambda x: torch.ops.taco.all_gather(x, 0, "c"), r"taco::all_gather: group_size 0 is not a number of ranks"),
    (lambda x: torch.ops.taco.all_reduce_local([], "sum", "g"), r"taco::all_reduce_local: inputs is empty"),
    (lambda x: torch.ops.taco.all_reduce_local([x, x[:4]], "sum", "g"),
     r"taco::all_reduce_local: inputs\[1\] is \(4, 3\) torch.float32 on cpu, inputs\[0\] \(8, 3\)"),
    (lambda x: torch.ops.taco.all_gather_into(torch.empty(16, 3, dtype=torch.half), x, "c"),
     r"taco::all_gather_into: out has dtype torch.float16, input torch.float32"),
])
def test_fake_errors_name_the_op_and_argument(call, message):
    with FakeTensorMode():
        x = torch.empty(8, 3)
        with pytest.raises(ValueError, match=message):
            call(x)


# ------------------------------------------------------------------ values (eager, stand-ins)


def test_values_on_an_exact_world(mirror):
    P, g = 4, torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, generator=g)
    name = mirror.group_name
    assert torch.equal(torch.ops.taco.all_reduce(x, "sum", name), x * P)
    assert torch.equal(torch.ops.taco.all_reduce(x, "avg", name), x)
    assert torch.equal(torch.ops.taco.all_reduce(x, "SUM", name), x * P)  # like c10d, any case
    rs = torch.ops.taco.reduce_scatter(x, "sum", P, name)
    assert rs.shape == (2, 3) and torch.equal(rs, x[:2] * P)
    assert torch.equal(torch.ops.taco.reduce_scatter(x, "avg", P, name), x[:2])
    ag = torch.ops.taco.all_gather(x, P, name)
    assert ag.shape == (32, 3) and torch.equal(ag, torch.cat([x] * P))
    a2a = torch.ops.taco.all_to_all(x, P, name)
    assert a2a.shape == (8, 3) and torch.equal(a2a, torch.cat([x[:2]] * P))
    # NaN and Inf travel through
    bad = x.clone()
    bad[0, 0], bad[1, 1] = float("nan"), float("inf")
    y = torch.ops.taco.all_reduce(bad, "sum", name)
    assert torch.isnan(y[0, 0]) and torch.isinf(y[1, 1])


def test_in_place_and_into_forms_take_non_contiguous_tensors(mirror):
    P, name = 4, mirror.group_name
    base = torch.randn(3, 8)
    x = base.t()  # (8, 3), not contiguous
    want = x * P
    assert torch.ops.taco.all_reduce_(x, "sum", name) is None
    assert torch.equal(x, want) and torch.equal(base.t(), want)  # written through the view
    inp = torch.randn(8, 3)
    out_base = torch.zeros(3, 32)
    torch.ops.taco.all_gather_into(out_base.t(), inp, name)
    assert torch.equal(out_base.t(), torch.cat([inp] * P))
    rs = torch.zeros(2, 3)
    torch.ops.taco.reduce_scatter_into(rs, inp, "avg", name)
    assert torch.equal(rs, inp[:2])
    a2a = torch.zeros(8, 3)
    torch.ops.taco.all_to_all_into(a2a, inp, name)
    assert torch.equal(a2a, torch.cat([inp[:2]] * P))
    with pytest.raises(ValueError, match=r"taco::all_gather_into: out has 24 elements, expected 96"):
        torch.ops.taco.all_gather_into(torch.zeros(8, 3), inp, name)


def test_lookup_errors_name_the_op(mirror):
    x = torch.ones(8)
    with pytest.raises(taco.InvalidArgumentError, match="no communicator is registered under the name 'nope'"):
        torch.ops.taco.all_reduce(x, "sum", "nope")
    with pytest.raises(ValueError, match=r"taco::reduce_scatter: group_size is 2 but communicator 'mirror-\d+' has 4"):
        torch.ops.taco.reduce_scatter(x, "sum", 2, mirror.group_name)
    tp = ExactTP(2)
    with pytest.raises(ValueError, match=r"taco::all_reduce: 'tp-\d+' names a ExactTP, not a communicator"):
        torch.ops.taco.all_reduce(x, "sum", tp.group_name)
    with pytest.raises(ValueError, match=r"taco::all_reduce_local: 'mirror-\d+' names a Mirror, not a group of local"):
        torch.ops.taco.all_reduce_local([x], "sum", mirror.group_name)
    with pytest.raises(ValueError, match=r"taco::all_reduce_local: 1 inputs for the 2 local ranks"):
        torch.ops.taco.all_reduce_local([x], "sum", tp.group_name)


def test_a_real_communicator_refuses_cpu_tensors():
    """An operator reaches libtaco's binding, which takes device memory only (no GPU needed to see it)."""
    c = Communicator(None, "nccl")  # a closed communicator: the binding refuses before any C call

    with pytest.raises(taco.InvalidUsageError, match="communicator is closed"):
        torch.ops.taco.all_reduce(torch.ones(4), "sum", c.group_name)


# ------------------------------------------------------------------ opcheck and autograd


_KEEP = []


def _opcheck_cases(name):
    g = torch.Generator().manual_seed(1)

    def r(*shape, grad=False):
        return torch.randn(*shape, generator=g).requires_grad_(grad)

    tp = ExactTP(3)
    _KEEP.append(tp)  # names are weak references: keep the group alive until opcheck runs
    return [
        ("all_reduce", (r(8, 3), "sum", name)),
        ("all_reduce", (r(8, 3, grad=True), "avg", name)),
        ("all_reduce_", (r(8, 3), "sum", name)),
        ("reduce_scatter", (r(8, 3, grad=True), "sum", 4, name)),
        ("reduce_scatter_into", (torch.empty(2, 3), r(8, 3), "sum", name)),
        ("all_gather", (r(2, 3, grad=True), 4, name)),
        ("all_gather_into", (torch.empty(8, 3), r(2, 3), name)),
        ("all_to_all", (r(8, 3, grad=True), 4, name)),
        ("all_to_all_into", (torch.empty(8, 3), r(8, 3), name)),
        ("all_reduce_local", ([r(4, 5, grad=True) for _ in range(3)], "sum", tp.group_name)),
    ]


@pytest.mark.parametrize("case", range(10))
def test_opcheck(mirror, case):
    op, args = _opcheck_cases(mirror.group_name)[case]
    result = torch.library.opcheck(getattr(torch.ops.taco, op).default, args)
    assert set(result.values()) == {"SUCCESS"}, (op, result)


def test_gradients_are_the_collectives_of_the_gradient(mirror):
    """all_reduce and all_reduce_local: gradcheck against the true Jacobian (on these exact stand-ins
    the transpose rule, all-reduce of the gradient, is exact). The others: the formula's collectives."""
    name = mirror.group_name
    x = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.ops.taco.all_reduce(t, "sum", name), (x,))
    assert torch.autograd.gradcheck(lambda t: torch.ops.taco.all_reduce(t, "avg", name), (x,))
    tp = ExactTP(3)
    xs = [torch.randn(4, 2, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    assert torch.autograd.gradcheck(lambda *ts: tuple(torch.ops.taco.all_reduce_local(list(ts), "sum", tp.group_name)),
                                    tuple(xs))
    gy = torch.randn(2, 3, dtype=torch.float64)
    (gx,) = torch.autograd.grad(torch.ops.taco.reduce_scatter(x, "sum", 4, name), x, gy)
    assert torch.equal(gx, torch.cat([gy] * 4))  # the all-gather of the gradient
    (gx,) = torch.autograd.grad(torch.ops.taco.reduce_scatter(x, "avg", 4, name), x, gy)
    assert torch.equal(gx, torch.cat([gy] * 4) / 4)
    gy = torch.randn(32, 3, dtype=torch.float64)
    (gx,) = torch.autograd.grad(torch.ops.taco.all_gather(x, 4, name), x, gy)
    assert torch.equal(gx, gy[:8] * 4)  # the sum reduce-scatter: on the exact world, 4 x block 0
    gy = torch.randn(8, 3, dtype=torch.float64)
    (gx,) = torch.autograd.grad(torch.ops.taco.all_to_all(x, 4, name), x, gy)
    assert torch.equal(gx, torch.cat([gy[:2]] * 4))


# ------------------------------------------------------------------ torch.compile


def _tp_block(P, seed=0):
    torch.manual_seed(seed)
    tp = ExactTP(P)
    c1 = tt.ColumnParallelLinear(16, 32, tp, device="cpu")
    c2 = tt.RowParallelLinear(32, 16, tp, device="cpu")

    def block(x):
        return c2([F.gelu(h) for h in c1(x)])

    return tp, block, list(c1.parameters()) + list(c2.parameters())


def _recording_backend():
    """An AOT backend that keeps the forward and backward graphs it is given."""
    from torch._dynamo.backends.common import aot_autograd
    from functorch.compile import make_boxed_func

    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    return aot_autograd(fw_compiler=keep, bw_compiler=keep), graphs


def _taco_ops_in(gm):
    """The taco operators a graph calls, directly or (mutating ones) through auto_functionalized."""
    found = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        target = n.args[0] if "auto_functionalized" in str(n.target) and n.args else n.target
        if "taco" in str(target):
            found.append(target)
    return found


@pytest.mark.parametrize("P", [1, 4])
def test_compile_fullgraph_tp_block_matches_eager(P):
    torch._dynamo.reset()
    tp, block, params = _tp_block(P)
    x = torch.randn(8, 16, requires_grad=True)
    gy = torch.randn(8, 16)
    y = block(x)
    y.backward(gy)
    want = [x.grad.clone()] + [p.grad.clone() for p in params]
    x.grad = None
    for p in params:
        p.grad = None
    explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    backend, graphs = _recording_backend()
    calls = tp.calls
    yc = torch.compile(block, fullgraph=True, backend=backend)(x)
    yc.backward(gy)
    assert tp.calls == calls + 2  # the forward all-reduce and the backward one ran, once each
    assert torch.equal(yc, y)
    for a, b in zip([x.grad] + [p.grad for p in params], want):
        assert torch.equal(a, b)
    fw, bw = graphs
    assert _taco_ops_in(fw) == [torch.ops.taco.all_reduce_local.default]  # RowParallelLinear's forward
    assert _taco_ops_in(bw) == [torch.ops.taco.all_reduce_local.default]  # ColumnParallelLinear's backward


def test_compile_fullgraph_all_reduce_in_place(mirror):
    torch._dynamo.reset()

    def f(x):
        y = x * 2
        tt.all_reduce(y, group=mirror)
        return y + 1

    x = torch.randn(8)
    backend, graphs = _recording_backend()
    y = torch.compile(f, fullgraph=True, backend=backend)(x)
    assert torch.equal(y, x * 2 * 4 + 1)
    assert _taco_ops_in(graphs[0]) == [torch.ops.taco.all_reduce_.default], graphs[0].graph


def test_compile_refuses_a_process_group_lookup_with_a_clear_error():
    torch._dynamo.reset()

    def f(x):
        return tt.all_reduce(x)  # group=None: the world's process group, created on first use

    with pytest.raises(Exception, match="pass group= a taco.Communicator"):
        torch.compile(f, fullgraph=True, backend="eager")(torch.ones(4))


def test_a_tp_group_subclass_that_skips_init_is_named_on_first_use():
    class Unnamed(ExactTP):
        def __init__(self, P):  # neither TPGroup.__init__ nor register_communicator
            self.comms, self.size, self.local_ranks, self.calls = [None] * P, P, list(range(P)), 0

    tp = Unnamed(2)
    assert not hasattr(tp, "group_name")
    xs = [torch.ones(3), torch.full((3,), 2.0)]
    y = tt.reduce_from_tp_region(xs, tp)
    assert torch.equal(y, torch.full((3,), 3.0)) and tp.calls == 1
    assert tp.group_name.startswith("tp-") and taco.comm.lookup(tp.group_name) is tp


# ------------------------------------------------------------------ in-place writes and autograd


class RawMirror(Mirror):
    """Writes its results through the raw pointer, as libtaco does: torch sees no write."""

    def _raw(self, out, value):
        import ctypes

        v = value.detach().contiguous()
        ctypes.memmove(out.data_ptr(), v.data_ptr(), v.numel() * v.element_size())
        return out

    def allreduce(self, x, out=None, stream=None, dtype=None):
        return self._raw(out, x * self._P)

    def reduce_scatter(self, x, out=None, stream=None, dtype=None):
        return self._raw(out, x.reshape(-1)[:x.numel() // self._P] * self._P)

    def allgather(self, x, out=None, stream=None, dtype=None):
        return self._raw(out, torch.cat([x.reshape(-1)] * self._P))

    def alltoall(self, x, out=None, stream=None, dtype=None):
        return self._raw(out, torch.cat([x.reshape(-1)[:x.numel() // self._P]] * self._P))


def _in_place_calls(name):
    inp = torch.randn(8, 3)
    return [
        ("all_reduce_", (8, 3), lambda t: torch.ops.taco.all_reduce_(t, "sum", name)),
        ("reduce_scatter_into", (2, 3), lambda t: torch.ops.taco.reduce_scatter_into(t, inp, "sum", name)),
        ("all_gather_into", (32, 3), lambda t: torch.ops.taco.all_gather_into(t, inp, name)),
        ("all_to_all_into", (8, 3), lambda t: torch.ops.taco.all_to_all_into(t, inp, name)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_in_place_forms_bump_the_version_of_what_they_write(case):
    """The dispatcher does not count the mutating operators' writes (they run below autograd): the
    operators bump the version themselves, so a backward that saved the tensor refuses it."""
    m = RawMirror(4)
    op, shape, call = _in_place_calls(m.group_name)[case]
    a = torch.randn(*shape, requires_grad=True)
    y = a * 1
    z = y.sin()  # saves y
    v = y._version
    call(y)
    assert y._version > v, op
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("case", range(4))
def test_in_place_forms_refuse_a_leaf_that_requires_grad(case):
    m = RawMirror(4)
    op, shape, call = _in_place_calls(m.group_name)[case]
    arg = "input" if op == "all_reduce_" else "out"
    leaf = torch.ones(*shape, requires_grad=True)
    with pytest.raises(taco.InvalidArgumentError, match=f"taco::{op}: {arg}: is a leaf tensor that requires grad"):
        call(leaf)
    assert torch.equal(leaf.detach(), torch.ones(*shape))  # nothing was written
    # a view of such a leaf too, as torch refuses leaf[0].mul_(2) (with avg, torch's own division
    # refused it only after the write; with sum it went through)
    big = torch.ones(2, *shape, requires_grad=True)
    with pytest.raises(taco.InvalidArgumentError, match=f"taco::{op}: {arg}: is a view of a leaf tensor"):
        call(big[0])
    assert torch.equal(big.detach(), torch.ones(2, *shape))
    with torch.no_grad():  # as torch allows
        call(leaf)
    assert not torch.equal(leaf.detach(), torch.ones(*shape))


@pytest.mark.parametrize("op", ["sum", "avg"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_in_place_forms_record_nothing_in_autograd(op, contiguous):
    """The mutating operators have no gradient formula, and what flows back through a tensor they
    wrote does not depend on the op or the layout: PyTorch's fallback passes it to the earlier
    contents unchanged (not the collective's gradient: api.md says so). The average's division and
    the copy back into a non-contiguous tensor were recorded: the gradient was 1/P with avg (and 1
    in compiled code), and 0 through a non-contiguous reduce_scatter_into."""
    m = RawMirror(4)
    a = torch.ones(3, 2, requires_grad=True)
    y = a * 1 if contiguous else (a * 1).t()
    torch.ops.taco.all_reduce_(y, op, m.group_name)
    y.sum().backward()
    assert torch.equal(a.grad, torch.ones(3, 2))
    o = torch.zeros(2, 3, requires_grad=True)
    w = o * 1 if contiguous else (o * 1).t().contiguous().t()
    torch.ops.taco.reduce_scatter_into(w, torch.ones(8, 3), op, m.group_name)
    w.sum().backward()
    assert torch.equal(o.grad, torch.ones(2, 3))


def test_taco_torch_all_reduce_refuses_a_leaf_and_bumps_the_version():
    m = RawMirror(4)
    leaf = torch.ones(4, requires_grad=True)
    with pytest.raises(taco.InvalidArgumentError, match="tensor: is a leaf tensor that requires grad"):
        tt.all_reduce(leaf, group=m)
    assert torch.equal(leaf.detach(), torch.ones(4))
    y = torch.ones(4, requires_grad=True) * 1
    v = y._version
    tt.all_reduce(y, group=m)
    assert y._version > v and torch.equal(y.detach(), torch.full((4,), 4.0))


def test_into_errors_name_the_op_called(mirror):
    name = mirror.group_name
    with pytest.raises(ValueError, match=r"taco::all_gather_into: input is 0-dimensional"):
        torch.ops.taco.all_gather_into(torch.empty(4), torch.ones(()), name)
    with pytest.raises(ValueError, match=r"taco::all_to_all_into: input's dim 0 \(6\) is not divisible by "
                                         r"group_size \(4\)"):
        torch.ops.taco.all_to_all_into(torch.empty(6), torch.ones(6), name)


@pytest.mark.parametrize("op, out_shape, message", [
    ("reduce_scatter_into", (4, 3), r"taco::reduce_scatter_into: out has 12 elements, expected 6"),
    ("all_gather_into", (8, 3), r"taco::all_gather_into: out has 24 elements, expected 96"),
    ("all_to_all_into", (4, 3), r"taco::all_to_all_into: out has 12 elements, expected 24"),
])
def test_fake_into_checks_the_size_of_out_as_eager_does(mirror, op, out_shape, message):
    args = {"reduce_scatter_into": ("sum", mirror.group_name)}.get(op, (mirror.group_name,))
    fn = getattr(torch.ops.taco, op)
    with pytest.raises(ValueError, match=message):  # eager
        fn(torch.empty(out_shape), torch.ones(8, 3), *args)
    with FakeTensorMode():
        with pytest.raises(ValueError, match=message):
            fn(torch.empty(out_shape), torch.empty(8, 3), *args)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=message):  # traced: refused at trace time, not run with a wrong size
        torch.compile(lambda o, x: fn(o, x, *args), fullgraph=True, backend="eager")(
            torch.empty(out_shape), torch.ones(8, 3))


class CodecMirror(Mirror):
    @property
    def config(self):
        return {"codec": "taco"}


@pytest.mark.parametrize("as_group", ["communicator", "name", "tpgroup"])
def test_taco_torch_all_reduce_refuses_a_codec_its_group_does_not_have(as_group):
    m = CodecMirror(4)
    group = {"communicator": m, "name": m.group_name, "tpgroup": tt.TPGroup([m])}[as_group]
    x = torch.ones(4)
    with pytest.raises(taco.InvalidArgumentError, match=r"codec: 'fp8-block', but group's communicator "
                                                        r"'mirror-\d+' compresses with 'taco'"):
        tt.all_reduce(x, group=group, codec="fp8-block")
    assert torch.equal(x, torch.ones(4)) and m.calls == 0
    tt.all_reduce(x, group=group, codec="taco")  # the codec it has
    tt.all_reduce(x, group=group, codec=f"taco:block={taco.codec_info('taco')['block_size']}")
    assert m.calls == 2 and torch.equal(x, torch.full((4,), 16.0))


def test_taco_torch_all_reduce_under_compile_refuses_a_codec_with_a_communicator(mirror):
    torch._dynamo.reset()

    def f(x):
        tt.all_reduce(x, group=mirror, codec="taco")
        return x

    with pytest.raises(Exception, match="leave codec out when group= names a communicator"):
        torch.compile(f, fullgraph=True, backend="eager")(torch.ones(4))

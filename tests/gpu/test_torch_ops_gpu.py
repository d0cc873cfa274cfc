"""PyTorch-native libtaco on the GPU: the collectives' fast path against the general path, the
torch.ops.taco.* operators (opcheck, CUDA-graph capture, torch.compile with fullgraph and with
mode="reduce-overhead", autograd through the TP layers), and the c10d backend "taco" on a
one-rank NCCL group.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_torch_ops_gpu.py
PyTorch and CuPy are required there: a missing one is a failure, not a skip.
"""
import warnings

import pytest

from nccl_world import world1  # noqa: F401 (fixture)
from loopback_world import cp, one, torch  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

P = 4


@pytest.fixture(scope="module")
def tt(torch):
    import taco.torch as tt

    return tt


class CAI:
    """A bare __cuda_array_interface__ object: the binding's general path (no fast path)."""

    def __init__(self, cai: dict):
        self.__cuda_array_interface__ = dict(cai)


def cai_of(torch, t):
    typestr = {torch.float32: "<f4", torch.float16: "<f2", torch.bfloat16: "<u2"}[t.dtype]
    return CAI({"shape": tuple(t.shape), "typestr": typestr, "data": (t.data_ptr(), False), "version": 2})


def bits(torch, t):
    t = t.detach().contiguous().reshape(-1)
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def same_bits(torch, a, b) -> bool:
    return a.shape == b.shape and torch.equal(bits(torch, a), bits(torch, b))


def dtname(torch, dt):
    return {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[dt]


# ------------------------------------------------------------------ fast path = general path


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fast_path_matches_the_general_path_bit_for_bit(torch, dtype):
    import taco

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cpu").manual_seed(0)
    comms = taco.loopback(P, codec="taco", fallback_bytes=0)
    try:
        xs = [torch.randn(64, 96, generator=g).to(dt).cuda() for _ in range(P)]
        for kind, count in [("allreduce", 64 * 96), ("reduce_scatter", 64 * 96 // P), ("allgather", 64 * 96 * P),
                            ("alltoall", 64 * 96)]:
            with taco.group():
                fast = [getattr(c, kind)(x) for c, x in zip(comms, xs)]
            general = [torch.empty(count, dtype=dt, device="cuda") for _ in range(P)]
            with taco.group():
                for c, x, o in zip(comms, xs, general):
                    getattr(c, kind)(cai_of(torch, x), out=cai_of(torch, o), dtype=dtype)
            outs = [torch.empty(count, dtype=dt, device="cuda") for _ in range(P)]
            with taco.group():
                given = [getattr(c, kind)(x, out=o) for c, x, o in zip(comms, xs, outs)]
            torch.cuda.synchronize()
            want_shape = {"allreduce": (64, 96), "reduce_scatter": (count,), "allgather": (P, 64, 96),
                          "alltoall": (64, 96)}[kind]
            for r in range(P):
                assert type(fast[r]) is torch.Tensor and fast[r].dtype == dt and fast[r].is_cuda, kind
                assert tuple(fast[r].shape) == want_shape and tuple(given[r].shape) == want_shape, kind
                assert given[r].data_ptr() == outs[r].data_ptr(), kind
                assert torch.equal(bits(torch, fast[r]), bits(torch, general[r])), (kind, r)
                assert torch.equal(bits(torch, given[r]), bits(torch, general[r])), (kind, r)
        # in place
        ys = [x.clone() for x in xs]
        with taco.group():
            res = [c.allreduce(y, out=y) for c, y in zip(comms, ys)]
        with taco.group():
            want = [c.allreduce(x) for c, x in zip(comms, xs)]
        torch.cuda.synchronize()
        for r in range(P):
            assert res[r] is ys[r] and torch.equal(bits(torch, ys[r]), bits(torch, want[r]))
    finally:
        for c in comms:
            c.close()


def test_fast_path_never_reaches_the_general_path(torch, cp, monkeypatch):
    """torch tensors and CuPy arrays, with and without `out`, in place, every collective: no call
    goes through _arrays.describe / alloc (the DLPack, CAI and allocation machinery)."""
    import taco
    import taco.comm

    def refuse(*a, **k):
        raise AssertionError("the general path was taken")

    comm = taco.loopback(1, codec="taco", fallback_bytes=0)[0]
    try:
        monkeypatch.setattr(taco.comm, "describe", refuse)
        monkeypatch.setattr(taco.comm, "alloc", refuse)
        xt = torch.randn(4096, device="cuda").to(torch.bfloat16)
        xc = cp.asarray(torch.randn(4096).numpy())
        xb = cp.zeros(4096, dtype=cp.uint16)
        for kind in ("allreduce", "reduce_scatter", "allgather", "alltoall"):
            fn = getattr(comm, kind)
            fn(xt)
            fn(xt, out=torch.empty_like(xt))
            fn(xc)
            fn(xc, out=cp.empty_like(xc))
            fn(xb, dtype="bfloat16")
            fn(xt, out=torch.empty_like(xt), stream=torch.cuda.current_stream())
        comm.allreduce(xt, out=xt)
        comm.allreduce(xc, out=xc)
        torch.cuda.synchronize()
        monkeypatch.undo()
        with pytest.raises(taco.InvalidArgumentError, match="out has 4095 elements, expected 4096"):
            comm.allreduce(xt, out=torch.empty(4095, device="cuda", dtype=torch.bfloat16))  # the general path's check
    finally:
        comm.close()


def test_fast_path_propagates_nan_and_inf(torch):
    import taco

    comms = taco.loopback(P, codec="taco", fallback_bytes=0)
    try:
        xs = [torch.randn(8192, device="cuda") for _ in range(P)]
        xs[0][100] = float("nan")
        xs[2][5000] = float("inf")
        with taco.group():
            ys = [c.allreduce(x) for c, x in zip(comms, xs)]
        torch.cuda.synchronize()
        for y in ys:
            assert not torch.isfinite(y[100]) and not torch.isfinite(y[5000])
            assert torch.isfinite(y[2048:4096]).all()  # a block with no non-finite input stays finite
    finally:
        for c in comms:
            c.close()


def test_cupy_fast_path_matches_the_general_path(torch, cp):
    import taco

    comm = taco.loopback(1, codec="taco", fallback_bytes=0)[0]
    try:
        rng = cp.random.default_rng(1)
        x32 = rng.standard_normal(5000, dtype=cp.float32)
        xb = (x32.view(cp.uint32) >> 16).astype(cp.uint16)  # bf16 bits, as CuPy carries them
        for x, dtype in [(x32, None), (xb, "bfloat16")]:
            fast = comm.allreduce(x, dtype=dtype)
            assert type(fast) is cp.ndarray and fast.dtype == x.dtype and fast.shape == x.shape
            out = cp.empty_like(x)
            assert comm.allreduce(x, out=out, dtype=dtype) is out
            general = cp.empty_like(x)
            comm.allreduce(CAI(x.__cuda_array_interface__), out=CAI(general.__cuda_array_interface__),
                           dtype=dtype or "float32")
            cp.cuda.get_current_stream().synchronize()
            assert cp.array_equal(fast, general) and cp.array_equal(out, general)
        # an explicit stream without `out` allocates on that stream (the general path): CuPy 14 warns on
        # ExternalStream, the binding uses Stream.from_external
        s = cp.cuda.Stream(non_blocking=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            warnings.simplefilter("error", FutureWarning)
            y = comm.allreduce(x32, stream=s)
        s.synchronize()
        assert cp.array_equal(y, comm.allreduce(x32))
    finally:
        comm.close()


# ------------------------------------------------------------------ operators


def _opcheck_cases(torch, tt, name, keep):
    g = torch.Generator(device="cpu").manual_seed(2)

    def r(*shape, grad=False):
        return torch.randn(*shape, generator=g).cuda().requires_grad_(grad)

    tp = tt.TPGroup.loopback(2, codec="taco", fallback_bytes=0)
    keep.append(tp)
    return [
        ("all_reduce", (r(8, 256), "sum", name)),
        ("all_reduce", (r(8, 256, grad=True), "avg", name)),
        ("all_reduce_", (r(8, 256), "sum", name)),
        ("reduce_scatter", (r(8, 256, grad=True), "sum", 1, name)),
        ("reduce_scatter_into", (torch.empty(8, 256, device="cuda"), r(8, 256), "sum", name)),
        ("all_gather", (r(8, 256, grad=True), 1, name)),
        ("all_gather_into", (torch.empty(8, 256, device="cuda"), r(8, 256), name)),
        ("all_to_all", (r(8, 256, grad=True), 1, name)),
        ("all_to_all_into", (torch.empty(8, 256, device="cuda"), r(8, 256), name)),
        ("all_reduce_local", ([r(8, 256, grad=True) for _ in range(2)], "sum", tp.group_name)),
    ]


@pytest.mark.parametrize("case", range(10))
def test_opcheck_on_libtaco(torch, tt, one, case):
    keep = []
    op, args = _opcheck_cases(torch, tt, one.group_name, keep)[case]
    try:
        result = torch.library.opcheck(getattr(torch.ops.taco, op).default, args)
        assert set(result.values()) == {"SUCCESS"}, (op, result)
    finally:
        torch.cuda.synchronize()
        for tp in keep:
            tp.close()


def test_cuda_graph_capture_of_the_operators_replays_eager_bits(torch, tt, one):
    name = one.group_name
    x = torch.randn(8, 4096, device="cuda")

    def run():
        z = x.clone()
        torch.ops.taco.all_reduce_(z, "sum", name)
        return [torch.ops.taco.all_reduce(x, "sum", name), torch.ops.taco.reduce_scatter(x, "sum", 1, name),
                torch.ops.taco.all_gather(x, 1, name), torch.ops.taco.all_to_all(x, 1, name), z]

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        eager = [t.clone() for t in run()]
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=s):
        static = run()
    for _ in range(3):
        for t in static:
            t.zero_()
        graph.replay()
        torch.cuda.synchronize()
        for a, b in zip(static, eager):
            assert same_bits(torch, a, b)
    with torch.no_grad():
        x.mul_(2)  # the graph reads x: a replay sees the new values
    graph.replay()
    torch.cuda.synchronize()
    assert not same_bits(torch, static[0], eager[0])
    del graph


def _tp_block(torch, tt, tp, seed=0, D=512, H=2048):
    F = torch.nn.functional
    g = torch.Generator(device="cpu").manual_seed(seed)
    fc1, fc2 = torch.nn.Linear(D, H), torch.nn.Linear(H, D)
    with torch.no_grad():
        for p in list(fc1.parameters()) + list(fc2.parameters()):
            p.copy_(torch.empty(p.shape).uniform_(-1, 1, generator=g) / p.shape[-1] ** 0.5)
    c1 = tt.ColumnParallelLinear.from_linear(fc1.cuda(), tp)
    c2 = tt.RowParallelLinear.from_linear(fc2.cuda(), tp)

    def block(x):
        return c2([F.gelu(h) for h in c1(x)])

    block.c1, block.c2 = c1, c2
    x = torch.randn(64, D, generator=g).cuda()
    gy = torch.randn(64, D, generator=g).cuda()
    return block, list(c1.parameters()) + list(c2.parameters()), x, gy


class _Counting:
    """Counts a TPGroup's all-reduces (the operators reach the group through its all_reduce_)."""

    def __init__(self, tp):
        self.calls, self._inner = 0, tp.all_reduce_
        tp.all_reduce_ = self

    def __call__(self, *a, **k):
        self.calls += 1
        return self._inner(*a, **k)


def _step(torch, fn, x, gy, params):
    xr = x.detach().clone().requires_grad_()
    for p in params:
        p.grad = None
    y = fn(xr)
    y.backward(gy)
    torch.cuda.synchronize()
    return y.detach(), [xr.grad] + [p.grad.clone() for p in params]


def _rel(torch, a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_tp_layers_through_the_operators_equal_the_direct_collectives(torch, tt):
    """The TP layers (operators, autograd.Function) against the same computation written with the
    group's all_reduce_ called directly: identical bits forward and for the input gradient."""
    F = torch.nn.functional
    tp = tt.TPGroup.loopback(P, codec="taco", fallback_bytes=0)
    try:
        block, params, x, gy = _tp_block(torch, tt, tp)
        y, grads = _step(torch, block, x, gy, params)
        # by name: parameters() yields a module's own parameters before its lists'
        c1_w, c1_b = list(block.c1.weights), list(block.c1.biases)
        c2_w, c2_b = list(block.c2.weights), block.c2.bias
        xs = [x.detach().clone().requires_grad_() for _ in range(P)]
        partials = [F.linear(F.gelu(F.linear(xs[r], c1_w[r], c1_b[r])), c2_w[r]) for r in range(P)]
        sums = [torch.empty_like(p) for p in partials]
        tp.all_reduce_([p.detach() for p in partials], sums)
        torch.autograd.backward(partials, [gy] * P)  # RowParallel's backward is the identity
        gx = [torch.empty_like(x) for _ in range(P)]
        tp.all_reduce_([t.grad for t in xs], gx)  # ColumnParallel's backward: the all-reduce of the gradients
        torch.cuda.synchronize()
        assert same_bits(torch, y, sums[0] + c2_b.detach())
        assert same_bits(torch, grads[0], gx[0])
    finally:
        torch.cuda.synchronize()
        tp.close()


@pytest.mark.parametrize("codec", ["none", "taco"])
def test_compile_fullgraph_tp_block(torch, tt, codec):
    """torch.compile(fullgraph=True), inductor, of a TP MLP block on 4 loopback ranks: no graph
    break, both all-reduces run inside the compiled forward and backward, the result matches eager
    (exactly up to inductor's own rounding with codec none; within the codec's error with taco), and
    two compiled steps give the same bits."""
    import torch._dynamo

    tp = tt.TPGroup.loopback(P, codec=codec, fallback_bytes=0)
    count = _Counting(tp)  # before anything is traced, so no guard sees it change
    try:
        block, params, x, gy = _tp_block(torch, tt, tp, seed=3)
        y_e, g_e = _step(torch, block, x, gy, params)
        torch._dynamo.reset()
        explained = torch._dynamo.explain(block)(x)
        assert explained.graph_break_count == 0, explained.break_reasons
        torch._dynamo.reset()
        compiled = torch.compile(block, fullgraph=True)
        _step(torch, compiled, x, gy, params)  # compiles forward and backward
        before = count.calls
        y_c, g_c = _step(torch, compiled, x, gy, params)
        assert count.calls == before + 2  # the forward all-reduce and the backward one
        y_c2, g_c2 = _step(torch, compiled, x, gy, params)
        assert same_bits(torch, y_c, y_c2) and all(same_bits(torch, a, b) for a, b in zip(g_c, g_c2))
        tol = 1e-5 if codec == "none" else 5e-2
        assert _rel(torch, y_c, y_e) < tol
        for a, b in zip(g_c, g_e):
            assert _rel(torch, a, b) < tol
    finally:
        torch.cuda.synchronize()
        torch._dynamo.reset()
        tp.close()


def test_compile_reduce_overhead_replays_a_cuda_graph(torch, tt):
    """mode="reduce-overhead": the TP block's forward (4 loopback ranks, codec none) is captured
    into a CUDA graph by inductor (no cudagraph skip) and replayed: the output comes back in the
    same static buffer each step and equals eager within inductor's rounding."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    tp = tt.TPGroup.loopback(P, codec="none", fallback_bytes=0)
    count = _Counting(tp)
    try:
        block, params, x, gy = _tp_block(torch, tt, tp, seed=4)
        with torch.no_grad():
            y_e = block(x).clone()
        torch._dynamo.reset()
        counters.clear()
        f = torch.compile(block, mode="reduce-overhead", fullgraph=True)
        ptrs, outs = [], []
        with torch.no_grad():
            for _ in range(5):
                torch.compiler.cudagraph_mark_step_begin()
                y = f(x)
                ptrs.append(y.data_ptr())
                outs.append(y.clone())
        torch.cuda.synchronize()
        assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
        assert ptrs[3] == ptrs[4]  # replays write the graph's static output
        for y in outs[1:]:
            assert same_bits(torch, y, outs[0])
        assert _rel(torch, outs[-1], y_e) < 1e-5
        before = count.calls
        with torch.no_grad():
            torch.compiler.cudagraph_mark_step_begin()
            f(x)
        torch.cuda.synchronize()
        assert count.calls == before  # a replay runs the captured kernels: no Python call reaches the group
    finally:
        torch.cuda.synchronize()
        torch._dynamo.reset()
        tp.close()


# ------------------------------------------------------------------ c10d backend


def test_c10d_backend_on_a_one_rank_nccl_group(torch, tt, world1):
    import taco
    import taco.c10d
    import torch.distributed._functional_collectives as funcol

    dist = world1
    g = dist.new_group([0], backend="taco", pg_options=taco.c10d.Options(codec="none", fallback_bytes=0))
    assert isinstance(g, taco.c10d.ProcessGroupTaco) and dist.get_backend(g) == "taco"
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(4096, device="cuda", generator=gen).to(torch.bfloat16)

    # through libtaco: one rank, codec none: the sum is x itself
    y = x.clone()
    dist.all_reduce(y, group=g)
    assert g.routed["allreduce"] == 1 and torch.equal(bits(torch, y), bits(torch, x))
    assert g.communicator().size == 1
    dist.all_reduce(y, op=dist.ReduceOp.AVG, group=g)
    assert g.routed["allreduce"] == 2 and torch.equal(bits(torch, y), bits(torch, x))
    w = dist.all_reduce(y, group=g, async_op=True)
    assert w.wait() is True and g.routed["allreduce"] == 3
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    o = torch.empty_like(x)
    gather(o, x, group=g)
    assert g.routed["all_gather_into_tensor"] == 1 and torch.equal(bits(torch, o), bits(torch, x))
    o.zero_()
    scatter(o, x, group=g)
    assert g.routed["reduce_scatter_tensor"] == 1 and torch.equal(bits(torch, o), bits(torch, x))
    f = funcol.all_reduce(x, "sum", g)
    f = funcol.wait_tensor(f) if hasattr(funcol, "wait_tensor") else f
    assert g.routed["allreduce"] == 4 and torch.equal(bits(torch, f), bits(torch, x))

    # delegated to NCCL, unchanged: an integer dtype, another op, a non-contiguous tensor
    i = torch.arange(10, device="cuda", dtype=torch.int32)
    dist.all_reduce(i, group=g)
    assert torch.equal(i, torch.arange(10, device="cuda", dtype=torch.int32))
    m = x.float()
    dist.all_reduce(m, op=dist.ReduceOp.MAX, group=g)
    assert torch.equal(m, x.float())
    assert g.delegated["allreduce"] == 2 and g.routed["allreduce"] == 4
    b = torch.full((3,), 7.0, device="cuda")
    dist.broadcast(b, 0, group=g)
    dist.barrier(group=g)
    # the rest of what PyTorch's trampoline would run itself, delegated by taco.c10d; the
    # coalesced all-gather from C++ (the functional collectives) through NCCL's coalescing
    lst = [torch.empty(3, device="cuda")]
    dist.all_gather(lst, b, group=g)
    a2a = torch.empty(4, device="cuda")
    dist.all_to_all_single(a2a, torch.arange(4.0, device="cuda"), group=g)
    ag = funcol.all_gather_into_tensor_coalesced([b, 2 * b[:2]], g)
    ag = [funcol.wait_tensor(t) for t in ag]
    assert torch.equal(lst[0], b) and torch.equal(a2a, torch.arange(4.0, device="cuda"))
    assert torch.equal(ag[0], b) and torch.equal(ag[1], 2 * b[:2])
    assert {k: g.delegated[k] for k in ("broadcast", "barrier", "allgather", "all_to_all_single",
                                        "all_gather_single_coalesced")} == {
        "broadcast": 1, "barrier": 1, "allgather": 1, "all_to_all_single": 1, "all_gather_single_coalesced": 1}
    nc = torch.randn(16, 8, device="cuda").t()
    outcome = {}
    for name, grp in (("nccl", None), ("taco", g)):  # a non-contiguous tensor: whatever NCCL does
        try:
            dist.all_reduce(nc, group=grp)
            outcome[name] = "ok"
        except Exception as e:  # noqa: BLE001
            outcome[name] = type(e).__name__
    assert outcome["taco"] == outcome["nccl"], outcome
    assert g.delegated["allreduce"] == 3


def test_c10d_backend_compresses_with_the_groups_codec(torch, tt, world1):
    import taco
    import taco.c10d

    dist = world1
    g = dist.new_group([0], backend="taco", pg_options=taco.c10d.Options(codec="taco", fallback_bytes=0))
    x = torch.randn(1 << 20, device="cuda", generator=torch.Generator(device="cuda").manual_seed(6))
    y = x.clone()
    dist.all_reduce(y, group=g)
    torch.cuda.synchronize()
    assert g.routed["allreduce"] == 1
    c = g.communicator()
    assert c.config["codec"] == "taco" and c.config["fallback_bytes"] == 0
    err = float(((y.double() - x.double()) ** 2).sum())
    if c.allreduce_algo(x.numel(), "float32") in ("plain", "oneshot-raw"):
        assert err == 0  # the library sends one rank's data uncompressed: exact
    else:  # one rank: x through the codec once (the owner's shard is compressed once for the gather)
        w = taco.compress(x, "taco")
        rt = taco.decompress(w, "taco", x.numel(), x.dtype)
        pred = float(((rt.double() - x.double()) ** 2).sum())
        assert pred > 0 and 0.1 * pred <= err <= 3.0 * pred, err / pred
    tt.destroy_communicators()
    assert g._comm is None and c.closed
    z = x.clone()
    dist.all_reduce(z, group=g)  # a new communicator, created on use
    torch.cuda.synchronize()
    assert torch.equal(z, y) and g.routed["allreduce"] == 2

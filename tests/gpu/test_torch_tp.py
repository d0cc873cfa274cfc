"""taco.torch on the GPU: Megatron-style TP layers on the loopback transport
(P=4 ranks emulated on one GPU) against the unsharded single-GPU model, the same
step with and without a CUDA graph, and communicators from a torch process group.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_torch_tp.py

Error model (forward output and input gradient; both go through one compressed
AllReduce of P partial sums p_i with exact sum s): every partial is quantised
once on its way to the shard owner and the sum once on the way back, so
    E|err|^2 ~= sum_i |C(p_i) - p_i|^2 + |C(s) - s|^2   (=: predicted)
where C is the codec's round trip, measured here on the same tensors with
taco.compress/decompress. The owner's own partial is not quantised, so the
measured error sits a little below the prediction; it must be within
[0.1, 3] x predicted: above catches a wrong sum, below catches a collective
that did not compress at all. Weight gradients do not pass a collective and
match to fp32 rounding.
"""
import pytest

from nccl_world import world1  # noqa: F401 (fixture)

pytestmark = pytest.mark.gpu

P = 4
BATCH, D, H = 64, 1024, 4096


def _torch():
    """torch with a CUDA GPU: a missing torch, or one that sees no GPU, is a failure here (these
    tests run only where there is a GPU; tests/conftest.py)."""
    import torch

    assert torch.cuda.is_available(), "torch sees no CUDA GPU on a machine with one (a CPU-only torch?)"
    return torch


@pytest.fixture(scope="module")
def torch():
    return _torch()


@pytest.fixture(scope="module")
def tt(torch):
    import taco.torch as tt

    return tt


def _models(torch, seed=0, dtype=None):
    g = torch.Generator(device="cpu").manual_seed(seed)
    fc1 = torch.nn.Linear(D, H)
    fc2 = torch.nn.Linear(H, D)
    with torch.no_grad():
        for p in list(fc1.parameters()) + list(fc2.parameters()):
            p.copy_(torch.empty(p.shape).uniform_(-1, 1, generator=g) / p.shape[-1] ** 0.5)
    x = torch.randn(BATCH, D, generator=g)
    gy = torch.randn(BATCH, D, generator=g)
    dev = torch.device("cuda")
    return fc1.to(dev), fc2.to(dev), x.to(dev), gy.to(dev)


def _roundtrip_err2(torch, taco, t, codec):
    """|C(t) - t|^2 for the codec's round trip, in float64."""
    t = t.detach().contiguous()
    w = taco.compress(t, codec)
    y = taco.decompress(w, codec, t.numel(), t.dtype).view_as(t)
    return float(((y.double() - t.double()) ** 2).sum())


def _predicted(torch, taco, partials, codec):
    s = sum(p.double() for p in partials).float()
    return sum(_roundtrip_err2(torch, taco, p, codec) for p in partials) + _roundtrip_err2(torch, taco, s, codec)


def _run_tp(torch, tt, tp, fc1, fc2, x, gy):
    F = torch.nn.functional
    c1 = tt.ColumnParallelLinear.from_linear(fc1, tp)
    c2 = tt.RowParallelLinear.from_linear(fc2, tp)
    xt = x.detach().clone().requires_grad_()
    y = c2([F.gelu(h) for h in c1(xt)])
    y.backward(gy)
    torch.cuda.synchronize()
    return y.detach(), xt.grad, c1, c2


@pytest.mark.parametrize("codec", ["taco", "none"])
def test_tp_mlp_matches_single_gpu(torch, tt, codec):
    import taco

    F = torch.nn.functional
    fc1, fc2, x, gy = _models(torch)
    # the single-GPU reference (fp32, unsharded)
    xr = x.detach().clone().requires_grad_()
    zr = fc1(xr)
    zr.retain_grad()
    yr = fc2(F.gelu(zr))
    yr.backward(gy)

    tp = tt.TPGroup.loopback(P, codec=codec, fallback_bytes=0)
    try:
        y, dx, c1, c2 = _run_tp(torch, tt, tp, fc1, fc2, x, gy)
    finally:
        tp.close()

    # exact partial sums of the two AllReduces (forward output, input gradient)
    with torch.no_grad():
        h = F.gelu(fc1(x))
        k = H // P
        fwd_partials = [h[:, r * k:(r + 1) * k] @ fc2.weight[:, r * k:(r + 1) * k].t() for r in range(P)]
        gh = zr.grad  # gradient at fc1's output
        bwd_partials = [gh[:, r * k:(r + 1) * k] @ fc1.weight[r * k:(r + 1) * k] for r in range(P)]

    err_y = float(((y.double() - yr.detach().double()) ** 2).sum())
    err_dx = float(((dx.double() - xr.grad.double()) ** 2).sum())
    ref_y = float((yr.detach().double() ** 2).sum())
    ref_dx = float((xr.grad.double() ** 2).sum())
    if codec == "none":
        # plain sum: fp32 rounding only (different summation order)
        assert err_y <= 1e-10 * ref_y, (err_y, ref_y)
        assert err_dx <= 1e-10 * ref_dx, (err_dx, ref_dx)
    else:
        pred_y = _predicted(torch, taco, fwd_partials, codec)
        pred_dx = _predicted(torch, taco, bwd_partials, codec)
        assert pred_y > 1e-8 * ref_y  # the codec is lossy: the window below is meaningful
        assert 0.1 * pred_y <= err_y <= 3.0 * pred_y, (err_y / pred_y, err_y / ref_y)
        assert 0.1 * pred_dx <= err_dx <= 3.0 * pred_dx, (err_dx / pred_dx, err_dx / ref_dx)
        # and in plain words: a few 1e-2 relative at most for 8-bit codecs
        assert err_y / ref_y < 1e-2 and err_dx / ref_dx < 1e-2

    # weight and bias gradients: no collective on their path
    k = H // P

    def close(a, b):
        return float(((a.double() - b.double()) ** 2).sum()) <= 1e-10 * float((b.double() ** 2).sum()) + 1e-30

    for r in range(P):
        assert close(c1.weights[r].grad, fc1.weight.grad[r * k:(r + 1) * k])
        assert close(c1.biases[r].grad, fc1.bias.grad[r * k:(r + 1) * k])
        assert close(c2.weights[r].grad, fc2.weight.grad[:, r * k:(r + 1) * k])
    assert close(c2.bias.grad, fc2.bias.grad)


def _bits(torch, t):
    t = t.detach().contiguous().reshape(-1)
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_tp_mlp_cuda_graph_identical_bits(torch, tt, dtype):
    F = torch.nn.functional
    dt = getattr(torch, dtype)
    fc1, fc2, x, gy = _models(torch, seed=1)
    tp = tt.TPGroup.loopback(P, codec="taco", fallback_bytes=0)
    try:
        c1 = tt.ColumnParallelLinear.from_linear(fc1, tp).to(dt)
        c2 = tt.RowParallelLinear.from_linear(fc2, tp).to(dt)
        params = list(c1.parameters()) + list(c2.parameters())
        sx = x.to(dt).detach().clone().requires_grad_()
        sgy = gy.to(dt).clone()

        def step():
            y = c2([F.gelu(h) for h in c1(sx)])
            y.backward(sgy)
            return y

        def clear():
            sx.grad = None
            for p in params:
                p.grad = None

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):  # warm-up (cuBLAS handles, autograd) before capture, as torch requires
                clear()
                step()
            clear()
            y_eager = step().detach().clone()
            g_eager = [sx.grad.clone()] + [p.grad.clone() for p in params]
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()

        clear()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            y_static = step()
        for _ in range(2):  # replay twice: deterministic, and identical to the eager step
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(_bits(torch, y_static), _bits(torch, y_eager))
            g_graph = [sx.grad] + [p.grad for p in params]
            for a, b in zip(g_graph, g_eager):
                assert torch.equal(_bits(torch, a), _bits(torch, b))
        # the graph really ran: change the input in place, replay, the output changes
        with torch.no_grad():
            sx.mul_(2)
        graph.replay()
        torch.cuda.synchronize()
        assert not torch.equal(_bits(torch, y_static), _bits(torch, y_eager))
        del graph
    finally:
        torch.cuda.synchronize()
        tp.close()


def test_communicator_from_process_group(torch, tt, world1):
    import taco

    dist = world1
    shared = tt.communicator_from_process_group(codec="taco", fallback_bytes=0)
    assert shared.size == 1 and shared.rank == 0
    assert shared._origin == "torch-shared-nccl", shared.torch_path  # torch >= 2.4 exposes _comm_ptr
    assert tt.communicator_from_process_group(codec="taco", fallback_bytes=0) is shared  # cached
    own = tt.communicator_from_process_group(codec="taco", fallback_bytes=0, share_nccl=False)
    assert own is not shared and own._origin == "torch-unique-id"

    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(1 << 20, device="cuda", generator=g)
    for comm in (shared, own):
        y = x.clone()
        out = tt.all_reduce(y, group=comm)
        assert out is y
        # one rank: the sum is x itself, through the codec (at most a round trip)
        pred = _roundtrip_err2(torch, taco, x, "taco")
        err = float(((y.double() - x.double()) ** 2).sum())
        assert err <= 3.0 * pred + 1e-30
    # the process group's own NCCL still works after libtaco used its communicator
    z = torch.ones(8, device="cuda")
    dist.all_reduce(z)
    assert torch.equal(z, torch.ones(8, device="cuda"))
    # default group + codec keyword through the module-level call
    w = x.clone()
    tt.all_reduce(w, codec="none")
    assert torch.equal(w, x)

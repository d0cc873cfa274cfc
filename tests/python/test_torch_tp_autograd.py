"""taco.torch's TP autograd wiring on the CPU: ColumnParallelLinear/RowParallelLinear
with an exact (float64, uncompressed) stand-in for the AllReduce reproduce the unsharded
model's output and every gradient. Needs PyTorch (CPU is enough), not libtaco."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import taco.torch as tt  # noqa: E402

from exact_tp import ExactTP  # noqa: E402


@pytest.mark.parametrize("P", [1, 2, 4])
def test_tp_mlp_matches_unsharded(P):
    torch.manual_seed(0)
    D, H = 16, 32
    fc1 = torch.nn.Linear(D, H).double()
    fc2 = torch.nn.Linear(H, D).double()
    tp = ExactTP(P)
    c1 = tt.ColumnParallelLinear.from_linear(fc1, tp)
    c2 = tt.RowParallelLinear.from_linear(fc2, tp)
    x = torch.randn(8, D, dtype=torch.double, requires_grad=True)
    gy = torch.randn(8, D, dtype=torch.double)
    y = fc2(F.gelu(fc1(x)))
    y.backward(gy)
    x2 = x.detach().clone().requires_grad_()
    y2 = c2([F.gelu(h) for h in c1(x2)])
    y2.backward(gy)
    assert tp.calls == 2  # one AllReduce forward (row), one backward (column)
    torch.testing.assert_close(y2, y)
    torch.testing.assert_close(x2.grad, x.grad)
    k = H // P
    for r in range(P):
        torch.testing.assert_close(c1.weights[r].grad, fc1.weight.grad[r * k:(r + 1) * k])
        torch.testing.assert_close(c1.biases[r].grad, fc1.bias.grad[r * k:(r + 1) * k])
        torch.testing.assert_close(c2.weights[r].grad, fc2.weight.grad[:, r * k:(r + 1) * k])
    torch.testing.assert_close(c2.bias.grad, fc2.bias.grad)


def test_one_rank_of_many_takes_its_shard():
    """torchrun layout: this process is rank 2 of 4 and holds only its shards."""
    fc1 = torch.nn.Linear(8, 16)
    fc2 = torch.nn.Linear(16, 8)
    tp = ExactTP(4, local=[2])
    c1 = tt.ColumnParallelLinear.from_linear(fc1, tp)
    c2 = tt.RowParallelLinear.from_linear(fc2, tp)
    assert torch.equal(c1.weights[0], fc1.weight[8:12]) and torch.equal(c1.biases[0], fc1.bias[8:12])
    assert torch.equal(c2.weights[0], fc2.weight[:, 8:12]) and torch.equal(c2.bias, fc2.bias)


def test_shapes_must_divide():
    with pytest.raises(ValueError, match="not divisible by the TP size"):
        tt.ColumnParallelLinear(8, 10, ExactTP(4), device="cpu")
    with pytest.raises(ValueError, match="local ranks"):
        tt.RowParallelLinear(8, 8, ExactTP(2), device="cpu")([torch.zeros(1, 4)])


def test_column_parallel_takes_a_list_under_autocast_too():
    """ColumnParallelLinear takes one tensor per local rank (as copy_to_tp_region does; its
    autocast cast read x.device of the list); RowParallelLinear adds its fp32 bias after the
    autocast-dtype sum, so its output is fp32, as documented."""
    torch.manual_seed(0)
    tp = ExactTP(2)
    c1 = tt.ColumnParallelLinear(8, 16, tp, device="cpu")
    c2 = tt.RowParallelLinear(16, 8, tp, device="cpu")
    x = torch.randn(4, 8)
    ys = c1([x, x.clone()])
    torch.testing.assert_close(ys[0], c1(x)[0])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert c1(x)[0].dtype == torch.bfloat16
        assert c1([x, x])[1].dtype == torch.bfloat16
        assert c2(c1(x)).dtype == torch.float32
    with pytest.raises(TypeError, match="tp: expected a TPGroup"):
        tt.copy_to_tp_region(x, 3)


def test_a_list_into_the_tp_region_compiles_without_a_gradient():
    """With nothing to carry a gradient the copy into the TP region is views alone: Dynamo could not
    trace its autograd Function for a list input (it set ctx fields on a constant)."""
    tp = ExactTP(2)
    c1 = tt.ColumnParallelLinear(8, 16, tp, device="cpu")
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    with torch.no_grad():
        eager = c1([a, b])
        compiled = torch.compile(lambda a, b: c1([a, b]), fullgraph=True, backend="eager")(a, b)
    assert all(torch.equal(x, y) for x, y in zip(eager, compiled))
    xs = torch.compile(lambda a, b: tt.copy_to_tp_region([a, b], tp), fullgraph=True, backend="eager")(a, b)
    assert torch.equal(xs[0], a) and torch.equal(xs[1], b)

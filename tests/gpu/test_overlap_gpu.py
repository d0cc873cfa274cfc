"""One overlap rule for every collective (api/argcheck, checkOverlap; docs/api.md, "Conventions"):
an output that partly overlaps its input is refused, naming both; NCCL's in-place arrangements run.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_overlap_gpu.py
"""
import numpy as np
import pytest

from loopback_world import assert_same, close_all, parts_for, taco, to_dev, to_host, torch, world  # noqa: F401

pytestmark = pytest.mark.gpu

N = 4096


@pytest.mark.parametrize("op", ["allreduce", "alltoall", "reduce_scatter", "allgather"])
def test_partial_overlap_is_refused(taco, torch, op):
    P = 2
    comms = world(taco, P, "fp8-block")
    try:
        bufs = [torch.zeros(P * P * N + 64, device="cuda") for _ in range(P)]
        xs = [b[:P * N] for b in bufs]
        # an output starting 8 elements into the input (or the input 8 elements into the output)
        outs = {"allreduce": [b[8:8 + P * N] for b in bufs], "alltoall": [b[8:8 + P * N] for b in bufs],
                "reduce_scatter": [b[8:8 + N] for b in bufs], "allgather": [b[8:8 + P * P * N] for b in bufs]}[op]
        with pytest.raises(taco.InvalidArgumentError) as e:
            with taco.comm.group():
                for c, x, o in zip(comms, xs, outs):
                    getattr(c, op)(x, out=o)
        msg = str(e.value)
        assert "recvbuff argument" in msg and "overlaps sendbuff argument" in msg and "not in place" in msg, msg
    finally:
        close_all(comms)


@pytest.mark.parametrize("algo", ["staged", "fused", "oneshot"])
def test_allreduce_in_place_and_disjoint_run(taco, torch, algo):
    from taco import reference as ref

    P = 2
    parts = parts_for(P, N, np.float32, seed=4)
    comms = world(taco, P, "fp8-block", algo=algo)  # pinned: each algorithm has its own bits
    try:
        xs = [to_dev(torch, p) for p in parts]
        with taco.comm.group():
            outs = [c.allreduce(x, out=x) for c, x in zip(comms, xs)]  # in place: recvbuff == sendbuff
        torch.cuda.synchronize()
        want = ref.allreduce(parts, "fp8-block", algo="oneshot" if algo == "oneshot" else "twoshot")
        for r, o in enumerate(outs):
            assert_same(to_host(torch, o), want, f"rank {r}")
    finally:
        close_all(comms)

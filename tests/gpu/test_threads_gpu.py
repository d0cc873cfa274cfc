"""One communicator, two host threads (docs/api.md, "Threads"): a call on a communicator that
another thread is using (a call in progress, or collectives queued in its open group) is
refused with tacoInvalidUsage naming the communicator, never a hang or a wrong result; on a
loopback world and on a one-rank NCCL communicator.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_threads_gpu.py
"""
import threading

import numpy as np
import pytest

from loopback_world import assert_same, close_all, parts_for, taco, to_dev, to_host, torch, world  # noqa: F401

pytestmark = pytest.mark.gpu

IN_USE = "is in use by another host thread"


def in_thread(fn):
    """fn() on another thread; its exception (or None), with a deadline: never a hang."""
    box = []

    def run():
        try:
            fn()
            box.append(None)
        except Exception as e:  # noqa: BLE001 - handed to the test
            box.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive(), "the other thread hung"
    return box[0]


def refused(e, op="tacoAllReduce"):
    from taco import InvalidUsageError  # (the module name `taco` is the fixture here)

    assert e is not None, "the second thread's call was not refused"
    assert isinstance(e, InvalidUsageError), repr(e)
    assert f"{op}: comm argument" in str(e) and IN_USE in str(e), str(e)


def test_loopback_comm_held_by_another_threads_group(taco, torch):
    from taco import reference as ref

    P, n = 2, 4096
    parts = parts_for(P, n, np.float32, seed=5)
    comms = world(taco, P, "fp8-block", algo="staged")  # the model below is the staged two-shot
    try:
        xs = [to_dev(torch, p) for p in parts]
        spare = to_dev(torch, parts[0])
        with taco.comm.group():
            out0 = comms[0].allreduce(xs[0])  # queued: this thread holds comms[0] until the group ends
            refused(in_thread(lambda: comms[0].allreduce(spare)))
            refused(in_thread(lambda: comms[0].close()), "tacoCommDestroy")
            refused(in_thread(lambda: comms[0].abort()), "tacoCommAbort")
            refused(in_thread(lambda: comms[0].allreduce_algo(n, "float32")), "tacoCommAllReduceAlgo")
            assert not comms[0].closed
            out1 = comms[1].allreduce(xs[1])
        torch.cuda.synchronize()
        want = ref.allreduce(parts, "fp8-block")
        assert_same(to_host(torch, out0), want, "rank 0")
        assert_same(to_host(torch, out1), want, "rank 1")

        # the group has ended: the other thread may now drive the world (in a group of its own)
        box = []

        def drive():
            with taco.comm.group():
                box.extend(c.allreduce(x) for c, x in zip(comms, xs))
            torch.cuda.synchronize()

        assert in_thread(drive) is None
        for r, o in enumerate(box):
            assert_same(to_host(torch, o), want, f"rank {r}, from the other thread")
    finally:
        close_all(comms)


def one_rank(taco, codec="fp8-block"):
    return taco.comm.Communicator.from_unique_id(taco.comm.get_unique_id(), 1, 0, codec=codec, fallback_bytes=0)


def test_one_rank_nccl_comm_held_by_another_threads_group(taco, torch):
    x = to_dev(torch, parts_for(1, 1 << 16, np.float32, seed=7)[0])
    with one_rank(taco) as c:
        with taco.comm.group():
            y = c.allreduce(x)
            refused(in_thread(lambda: c.allreduce(x.clone())))
            refused(in_thread(lambda: c.reduce_scatter(x.clone())), "tacoReduceScatter")
        torch.cuda.synchronize()
        h, want = to_host(torch, y), to_host(torch, x)
        assert np.isfinite(h).all() and np.abs(h - want).max() <= 0.05 * np.abs(want).max()
        assert in_thread(lambda: c.allreduce(x)) is None  # free again after the group


@pytest.mark.parametrize("kind", ["loopback-1", "nccl-1"])
def test_two_threads_hammering_one_comm(taco, torch, kind):
    """Two threads call one communicator as fast as they can: each call runs (with the right
    result) or is refused with tacoInvalidUsage naming the communicator; nothing hangs."""
    comm = world(taco, 1, "fp8-block")[0] if kind == "loopback-1" else one_rank(taco)
    x = to_dev(torch, parts_for(1, 1 << 14, np.float32, seed=9)[0])
    want = to_host(torch, comm.allreduce(x))
    torch.cuda.synchronize()
    stats = []

    def hammer(seed):
        ok = refused_n = 0
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            mine = x.clone()
            for _ in range(300):
                try:
                    out = comm.allreduce(mine)
                    ok += 1
                except taco.InvalidUsageError as e:
                    assert IN_USE in str(e), str(e)
                    refused_n += 1
                    continue
                stream.synchronize()
                assert_same(to_host(torch, out), want, f"thread {seed}")
        stats.append((ok, refused_n))

    try:
        threads = [threading.Thread(target=hammer, args=(s,)) for s in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
            assert not t.is_alive(), "a thread hung"
        assert len(stats) == 2, "a thread failed (its assertion is above)"
        assert all(ok > 0 for ok, _ in stats), stats
    finally:
        comm.close()

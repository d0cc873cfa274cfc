"""The c10d backend "taco" (python/taco/c10d.py) without a GPU: registration, options, and
worlds of gloo processes on this machine, where a "taco" group hands every CPU-tensor
collective to its gloo backend (libtaco takes CUDA tensors; tests/gpu/test_torch_ops_gpu.py
covers those on a one-rank NCCL group). Each world runs in fresh processes, since
torch.distributed's state is per process."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

import taco  # noqa: E402
import taco.c10d as tc  # noqa: E402
import taco.torch  # noqa: E402,F401 - registers the backend

WORKER = textwrap.dedent(r"""
    import datetime, faulthandler, json, signal, sys, time
    faulthandler.dump_traceback_later(200, exit=True)  # a hung rank prints every thread's stack and exits
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent asks a surviving rank where it is
    import torch, torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    import taco.torch, taco.c10d as tc

    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    timeout = datetime.timedelta(seconds=120)  # a world takes seconds; a hang fails at this, with stacks
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timeout)
    out = {}
    try:
        dist.new_group(list(range(world)), backend="taco", pg_options="fp8-block")
    except TypeError as e:
        out["bad_options"] = str(e)
    g = dist.new_group(list(range(world)), backend="taco", pg_options=tc.Options(codec="taco"), timeout=timeout)
    out["type"] = type(g).__name__
    out["backend"] = str(dist.get_backend(g))
    out["group_name"] = g.group_name
    out["repr"] = repr(g)
    t = torch.full((4,), float(rank + 1))
    dist.all_reduce(t, group=g)
    out["sum"] = t.tolist()
    t = torch.full((4,), float(rank + 1))
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=g)
    out["max"] = t.tolist()
    w = dist.all_reduce(t, group=g, async_op=True)
    out["async_wait"] = w.wait()
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    o = torch.empty(2 * world)
    gather(o, torch.full((2,), float(rank)), group=g)
    out["gather"] = o.tolist()
    b = torch.tensor([float(rank) + 10])
    dist.broadcast(b, 0, group=g)
    out["broadcast"] = b.item()
    dist.barrier(group=g)
    # the rest of the collectives PyTorch's trampoline would run itself (python/taco/c10d.py)
    lst = [torch.empty(2) for _ in range(world)]
    dist.all_gather(lst, torch.full((2,), float(rank)), group=g)
    out["all_gather"] = [x.tolist() for x in lst]
    c = [torch.full((2,), 1.0), torch.full((3,), float(rank))]
    dist.all_reduce_coalesced(c, group=g)
    out["all_reduce_coalesced"] = [x.tolist() for x in c]
    rs = torch.empty(2)
    dist.reduce_scatter(rs, [torch.full((2,), float(q + rank)) for q in range(world)], group=g)
    out["reduce_scatter"] = rs.tolist()
    a2a = torch.empty(world)
    dist.all_to_all_single(a2a, torch.arange(world, dtype=torch.float32) + 10 * rank, group=g)
    out["all_to_all_single"] = a2a.tolist()
    if world == 2:
        p2p = torch.tensor([float(rank)])
        if rank == 0:
            dist.send(torch.tensor([42.0]), 1, group=g)
        else:
            dist.recv(p2p, 0, group=g)
        out["p2p"] = p2p.item()
    # C++ callers (the functional collectives' ops) reach the same methods through the trampoline
    ag_coalesced = getattr(funcol, "all_gather_single_coalesced", None) or funcol.all_gather_into_tensor_coalesced
    ag = ag_coalesced([torch.full((2,), float(rank)), torch.full((1,), 5.0)], g)
    out["ag_coalesced"] = [funcol.wait_tensor(x).tolist() for x in ag]
    before = g.delegated["allreduce"]
    y = funcol.all_reduce(torch.ones(3), "sum", g)
    out["functional"] = funcol.wait_tensor(y).tolist() if hasattr(funcol, "wait_tensor") else y.tolist()
    out["functional_reached_taco"] = g.delegated["allreduce"] == before + 1
    out["routed"] = dict(g.routed)
    out["delegated"] = dict(g.delegated)
    # Delegated collectives right after a tensor whose last reference the backend's worker
    # holds: through PyTorch's trampoline (the base method run with the GIL held) this hung
    # within a few hundred rounds; python/taco/c10d.py delegates them itself.
    for i in range(300):
        t = torch.ones(4)
        dist.all_reduce(t, group=g)
        del t
        dist.broadcast(b, 0, group=g)
        if i % 10 == 0:
            dist.barrier(group=g)
    dist.barrier(group=g)
    # gloo's workers free the last rounds' tensors (under the GIL) just after completing them; one
    # still doing so when the interpreter exits is ended mid-destructor (std::terminate)
    time.sleep(0.5)
    out["rounds"] = 300
    dist.destroy_process_group(g)
    dist.destroy_process_group()
    print("RESULT " + json.dumps(out), flush=True)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_world(tmp_path, world: int) -> list:
    """Each rank's RESULT. A rank writes to a file, not a pipe, so none can block on output the
    parent has not read; on a failure every rank's output is shown, with the stacks of those
    still running."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    # GLOO_SOCKET_IFNAME: gloo binds to loopback instead of resolving this machine's host name,
    # which can wait on an unreachable DNS server for minutes (the world lives on 127.0.0.1 anyway)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", GLOO_SOCKET_IFNAME="lo")
    logs = [tmp_path / f"rank{r}.log" for r in range(world)]
    procs = []
    for r in range(world):
        with open(logs[r], "w") as f:
            procs.append(subprocess.Popen([sys.executable, str(script), str(r), str(world), port], stdout=f,
                                          stderr=subprocess.STDOUT, env=env))
    deadline, failed_at = time.monotonic() + 240, None
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        if failed_at is None and any(p.returncode not in (None, 0) for p in procs):
            failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() > failed_at + 10:
            break  # a rank failed and the others did not follow within 10 s: they are waiting on it
        time.sleep(0.2)
    in_time = all(p.poll() is not None for p in procs)
    if not in_time:
        for p in procs:
            p.send_signal(signal.SIGUSR1)  # faulthandler prints the rank's stacks
        time.sleep(1)
        for p in procs:
            p.kill()
    for p in procs:
        p.wait()
    texts = [log.read_text() for log in logs]
    if not in_time or any(p.returncode != 0 for p in procs):
        pytest.fail(f"the world failed{'' if in_time else ' (a rank hung: killed)'}; every rank's output:\n"
                    + "\n".join(f"--- rank {r} (exit {p.returncode})\n{t}"
                                for r, (p, t) in enumerate(zip(procs, texts))))
    results = []
    for text in texts:
        line = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
        assert line, text
        results.append(json.loads(line[-1][len("RESULT "):]))
    return results


def test_registered_for_cpu_and_cuda():
    plugin = dist.Backend._plugins["TACO"]
    assert plugin.extended_api is True and plugin.creator_fn is tc._create
    assert dist.Backend.backend_capability["taco"] == ["cpu", "cuda"]
    assert dist.Backend("taco") == "taco"
    # registering did not take the default backend of either device
    assert dist.Backend.default_device_backend_map["cpu"] == "gloo"
    assert dist.Backend.default_device_backend_map["cuda"] == "nccl"


def test_options_check_the_communicator_keywords():
    o = tc.Options(codec="taco", fallback_bytes=0, share_nccl=False)
    assert (o.codec, o.share_nccl, o.config) == ("taco", False, {"fallback_bytes": 0})
    assert repr(o) == "taco.c10d.Options(codec='taco', share_nccl=False, fallback_bytes=0)"
    with pytest.raises(TypeError, match="unknown communicator option"):
        tc.Options(codec="taco", fallbak_bytes=0)
    with pytest.raises(taco.InvalidArgumentError, match="algo: unknown AllReduce algorithm 'fastest'"):
        tc.Options(algo="fastest")
    # The codec spec is parsed here too, not at the group's first collective.
    with pytest.raises(taco.InvalidArgumentError, match="codec: 'TACO': unknown codec 'TACO'"):
        tc.Options(codec="TACO")
    with pytest.raises(taco.InvalidArgumentError, match="codec: 'taco:block=7': block size 7"):
        tc.Options(codec="taco:block=7")
    # and the numbers' ranges (they failed when the group was made, naming the C field)
    with pytest.raises(taco.InvalidArgumentError, match=r"pipeline_depth: 17 is outside \[1, 16\]"):
        tc.Options(pipeline_depth=17)
    with pytest.raises(taco.InvalidArgumentError, match=r"chunk_bytes: 0 is outside"):
        tc.Options(chunk_bytes=0)
    # share_nccl is a bool or None: "no" would have read as True (sharing required).
    with pytest.raises(TypeError, match="share_nccl: expected True, False or None, got str 'no'"):
        tc.Options(share_nccl="no")


def test_every_collective_the_trampoline_dispatches_is_delegated_in_python():
    # PyTorch's trampoline for Python process groups (PyProcessGroup) runs the base method of
    # any of these the subclass does not define with the GIL held; see python/taco/c10d.py.
    for name in ("allreduce", "allreduce_coalesced", "allgather", "all_gather_single_coalesced",
                 "reduce_scatter", "reduce_scatter_single_coalesced", "all_to_all_single", "barrier",
                 "broadcast", "send", "recv", "alltoall_base", "allgather_into_tensor_coalesced",
                 "reduce_scatter_tensor_coalesced"):
        assert name in vars(tc.ProcessGroupTaco), name


@pytest.mark.parametrize("world", [1, 2])
def test_a_gloo_world_delegates_cpu_collectives(tmp_path, world):
    results = _run_world(tmp_path, world)
    total = world * (world + 1) / 2
    for rank, r in enumerate(results):
        assert r["bad_options"] == "pg_options: expected taco.c10d.Options for backend 'taco', got str"
        assert r["type"] == "ProcessGroupTaco" and r["backend"] == "taco" and r["group_name"]
        assert r["repr"] == f"<taco.c10d.ProcessGroupTaco rank {rank}/{world} codec 'taco'>"
        assert r["sum"] == [total] * 4
        assert r["max"] == [float(world)] * 4
        assert r["async_wait"] is True
        assert r["gather"] == [float(q) for q in range(world) for _ in range(2)]
        assert r["broadcast"] == 10.0
        assert r["functional"] == [float(world)] * 3
        assert r["functional_reached_taco"]  # torch's functional collectives call the group's allreduce
        assert r["routed"] == {}  # CPU tensors never reach libtaco
        assert r["all_gather"] == [[float(q)] * 2 for q in range(world)]
        assert r["all_reduce_coalesced"] == [[float(world)] * 2, [total - world] * 3]
        assert r["reduce_scatter"] == [float(sum(rank + q for q in range(world)))] * 2
        assert r["all_to_all_single"] == [10.0 * q + rank for q in range(world)]
        if world == 2:
            assert r["p2p"] == (0.0 if rank == 0 else 42.0)
        assert r["ag_coalesced"] == [[float(q) for q in range(world) for _ in range(2)], [5.0] * world]
        p2p = {} if world == 1 else ({"send": 1} if rank == 0 else {"recv": 1})
        assert r["rounds"] == 300
        assert r["delegated"] == {"allreduce": 4, "all_gather_into_tensor": 1, "broadcast": 1, "barrier": 1,
                                  "allgather": 1, "allreduce_coalesced": 1, "reduce_scatter": 1,
                                  "all_to_all_single": 1, "all_gather_single_coalesced": 1, **p2p}


def test_a_routed_work_reports_completion():
    """is_completed() was the base class's False for ever (a polling loop never ended): a CPU
    Work is complete; a CUDA one asks its stream (a GPU test's case)."""
    w = tc._Work([torch.ones(2)], torch.device("cpu"), 0)
    assert w.is_completed() and w.wait()
    assert tc._Works([w, tc._Work([], torch.device("cpu"), 0)], []).is_completed()


def test_taco_torch_uses_a_taco_groups_own_communicator(monkeypatch):
    """tt.all_reduce(x, group=g) and TPGroup.from_process_group(g) on a "taco" group take the
    group's communicator (made with its pg_options), not a second one made with codec=None."""
    import datetime

    import taco.torch as tt

    pg = tc.ProcessGroupTaco(dist.HashStore(), 0, 1, datetime.timedelta(seconds=30), tc.Options(codec="fp8-block"))

    class Own(taco.comm.Communicator):
        def __init__(self):
            super().__init__(None, "stand-in")

        config = property(lambda self: {"codec": "fp8-block"})
        closed = property(lambda self: False)
        size = property(lambda self: 1)
        rank = property(lambda self: 0)

    own = Own()
    monkeypatch.setattr(pg, "communicator", lambda: own)
    assert tt.communicator_from_process_group(pg) is own
    assert tt.communicator_from_process_group(pg, "fp8-block") is own
    assert tt.TPGroup.from_process_group(pg).comms == [own]
    with pytest.raises(ValueError, match="has the group's options"):
        tt.communicator_from_process_group(pg, chunk_bytes=1 << 20)
    with pytest.raises(taco.InvalidArgumentError, match="codec"):
        tt.communicator_from_process_group(pg, "taco")


def test_the_collectives_it_routes_run_outside_autograd(monkeypatch):
    """As torch's own backends: dist.all_reduce(param) on a leaf that requires grad is a collective,
    not an autograd operation, so the binding's refusal of such a write (grad mode on) must not
    apply. The routing itself is replaced here (libtaco takes CUDA tensors)."""
    import datetime

    pg = tc.ProcessGroupTaco(dist.HashStore(), 0, 1, datetime.timedelta(seconds=30), tc.Options())
    seen = []

    class Recording:
        def allreduce(self, x, out=None):
            seen.append(torch.is_grad_enabled())
            taco._arrays.check_grad_write(out, "out")  # what the binding checks before writing
            return out

        reduce_scatter = allgather = allreduce

    monkeypatch.setattr(pg, "_takes", lambda t: True)
    monkeypatch.setattr(pg, "communicator", lambda: Recording())
    monkeypatch.setattr(pg, "_done", lambda op, result, t: None)
    p = torch.nn.Parameter(torch.ones(4))
    pg.allreduce([p])
    pg._reduce_scatter_base(p, torch.ones(4))
    pg._allgather_base(p, torch.ones(4))
    assert seen == [False, False, False] and torch.is_grad_enabled()
    # The average's division too: outside no_grad it raised on such a leaf (after the sum was
    # written) and was recorded on any other tensor (DivBackward0).
    avg = dist.AllreduceOptions()
    avg.reduceOp = dist.ReduceOp.AVG
    pg.allreduce([p], avg)
    y = torch.ones(4, requires_grad=True) * 1
    g0 = y.grad_fn
    pg.allreduce([y], avg)
    assert y.grad_fn is g0
    rs = dist.ReduceScatterOptions()
    rs.reduceOp = dist.ReduceOp.AVG
    pg._reduce_scatter_base(p, torch.ones(4), rs)
    with pytest.raises(ValueError, match="taco backend: allreduce: tensors is an empty list"):
        pg.allreduce([])

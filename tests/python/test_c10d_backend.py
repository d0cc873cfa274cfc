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
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

import taco  # noqa: E402
import taco.c10d as tc  # noqa: E402
import taco.torch  # noqa: E402,F401 - registers the backend

WORKER = textwrap.dedent(r"""
    import datetime, faulthandler, json, signal, sys
    faulthandler.dump_traceback_later(200, exit=True)  # a hung rank prints every thread's stack and exits
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent asks a surviving rank where it is
    import torch, torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    import taco.torch, taco.c10d as tc

    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    timeout = datetime.timedelta(seconds=120)  # a loaded 2-core CI machine can stall a rank for a minute
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
    before = g.delegated["allreduce"]
    y = funcol.all_reduce(torch.ones(3), "sum", g)
    out["functional"] = funcol.wait_tensor(y).tolist() if hasattr(funcol, "wait_tensor") else y.tolist()
    out["functional_reached_taco"] = g.delegated["allreduce"] == before + 1
    out["routed"] = dict(g.routed)
    out["delegated"] = dict(g.delegated)
    dist.destroy_process_group(g)
    dist.destroy_process_group()
    print("RESULT " + json.dumps(out), flush=True)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# gloo's own words when a send or receive waited out the group's timeout for its peer
_GLOO_TRANSPORT_TIMEOUT = "Timed out waiting"


def _world_once(tmp_path, world: int, attempt: int) -> tuple[list, list, bool]:
    """Run one world; returns each rank's return code and output, and whether it finished in time.
    Each rank writes to a file, not a pipe, so no rank can block on output the parent has not read yet."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    # GLOO_SOCKET_IFNAME: gloo binds to loopback instead of resolving this machine's host name,
    # which can wait on an unreachable DNS server for minutes (the world lives on 127.0.0.1 anyway)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", GLOO_SOCKET_IFNAME="lo")
    logs = [tmp_path / f"attempt{attempt}_rank{r}.log" for r in range(world)]
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
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGUSR1)  # faulthandler prints the rank's stacks
    time.sleep(1)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    return [p.returncode for p in procs], [log.read_text() for log in logs], in_time


def _report(codes: list, texts: list) -> str:
    return "\n".join(f"--- rank {r} (exit {c})\n{t}" for r, (c, t) in enumerate(zip(codes, texts)))


def _run_world(tmp_path, world: int) -> list:
    for attempt in (1, 2):
        codes, texts, in_time = _world_once(tmp_path, world, attempt)
        ok = in_time and all(c == 0 for c in codes)
        if ok or attempt == 2 or not any(_GLOO_TRANSPORT_TIMEOUT in t for t in texts):
            break
        # gloo's transport waited out its timeout for a peer: seen on loaded 2-core CI machines, never
        # with a cause in this package (CPU tensors only pass through to gloo). One new world, no more.
        warnings.warn("gloo world timed out in its transport; running it once more. First attempt:\n"
                      + _report(codes, texts))
    if not ok:
        pytest.fail(f"the world failed{'' if in_time else ' (a rank hung: killed)'}; every rank's output:\n"
                    + _report(codes, texts))
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
        assert r["delegated"] == {"allreduce": 4, "all_gather_into_tensor": 1}

"""The c10d backend "taco" (python/taco/c10d.py) without a GPU: registration, options, and
worlds of gloo processes on this machine, where a "taco" group hands every CPU-tensor
collective to its gloo backend (libtaco takes CUDA tensors; tests/gpu/test_torch_ops_gpu.py
covers those on a one-rank NCCL group). Each world runs in fresh processes, since
torch.distributed's state is per process."""
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("this PyTorch has no torch.distributed with gloo", allow_module_level=True)

import taco  # noqa: E402
import taco.c10d as tc  # noqa: E402
import taco.torch  # noqa: E402,F401 - registers the backend

WORKER = textwrap.dedent(r"""
    import datetime, faulthandler, json, sys
    faulthandler.dump_traceback_later(200, exit=True)  # a hung rank prints every thread's stack and exits
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


def _run_world(tmp_path, world: int) -> list:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(_free_port())
    # GLOO_SOCKET_IFNAME: gloo binds to loopback instead of resolving this machine's host name,
    # which can wait on an unreachable DNS server for minutes (the world lives on 127.0.0.1 anyway)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", GLOO_SOCKET_IFNAME="lo")
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(world), port], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for r in range(world)]
    texts = []
    try:
        for p in procs:
            texts.append(p.communicate(timeout=240)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        texts += [p.communicate()[0] for p in procs[len(texts):]]
        pytest.fail("a rank hung past 240 s; every rank's output:\n"
                    + "\n".join(f"--- rank {r}\n{t}" for r, t in enumerate(texts)))
    results = []
    for p, text in zip(procs, texts):
        assert p.returncode == 0, text
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

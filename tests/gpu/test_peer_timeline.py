"""TACO_PEER_TIMELINE on the loopback transport: the peer kernels' phase timeline is printed
at destroy (and every N-th launch), every CTA of every rank reaches every event in order,
results stay bit-exact, and under CUDA graphs the summary is that of the launch that ran
last. The variable is read once per process, so each case runs in a subprocess.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_peer_timeline.py
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import torch, taco, taco.comm
    from taco import reference as ref
    mode, algo, P = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def world():
        return taco.comm.loopback(P, codec="taco", algo=algo, fallback_bytes=0)

    def call(comms, xs, outs, stream=None):
        with taco.comm.group():
            for c, x, o in zip(comms, xs, outs):
                c.allreduce(x, out=o, stream=stream)

    def inputs(n, seed):
        parts = [np.random.default_rng(seed + r).standard_normal(n).astype(np.float32) for r in range(P)]
        return parts, [torch.from_numpy(p).cuda() for p in parts]

    if mode in ("destroy", "every"):
        parts, xs = inputs(3 << 20, 1)
        outs = [torch.empty_like(x) for x in xs]
        comms = world()
        for _ in range(4):
            call(comms, xs, outs)
        torch.cuda.synchronize()
        want = ref.allreduce(parts, "taco", algo="twoshot" if algo == "fused" else algo)
        for o in outs:
            assert np.array_equal(o.cpu().numpy().view(np.uint32), want.view(np.uint32))
        for c in comms:
            c.close()
    elif mode == "graph":
        # World 1: a small eager call only. World 2: the same small call, then a large call
        # captured and replayed: its summary must be the replayed launch's (more CTAs).
        for w in range(2):
            comms = world()
            _, small = inputs(1 << 14, 2)
            so = [torch.empty_like(x) for x in small]
            call(comms, small, so)
            if w == 1:
                _, big = inputs(8 << 20, 3)
                bo = [torch.empty_like(x) for x in big]
                s = torch.cuda.Stream()
                g = torch.cuda.CUDAGraph()
                torch.cuda.synchronize()
                with torch.cuda.graph(g, stream=s):
                    call(comms, big, bo, stream=s)
                for _ in range(3):
                    g.replay()
            torch.cuda.synchronize()
            for c in comms:
                c.close()
    print("OK")
""")

_HEAD = re.compile(r"^TACO TIMELINE rank (\d+)/(\d+), (at destroy|launch \d+): the last (\S+) launch, P=(\d+), "
                   r"(\d+) rank\(s\) in the launch, (\d+) CTAs per rank; span ([\d.]+) us$")
_EVENT = re.compile(r"^TACO TIMELINE\s+(\d+)\s+(start|end \w+)\s+(\d+)/(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
_EVENTS = {"fused": ["start", "end A", "end wait0", "end B", "end wait1", "end C"],
           "oneshot": ["start", "end compress", "end wait", "end decode"]}
_EVENTS["oneshot-raw"] = _EVENTS["oneshot"]


def run(tmp_path, mode, algo, P, timeline):
    script = tmp_path / "timeline.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, TACO_PEER_TIMELINE=timeline)
    res = subprocess.run([sys.executable, str(script), mode, algo, str(P)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr
    return res.stderr


def summaries(stderr):
    """Each printed summary: its header's fields and, per rank, its events' (reached, ctas, min, median, max)."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("TACO TIMELINE"):
            continue
        h = _HEAD.match(line)
        if h:
            out.append({"when": h.group(3), "algo": h.group(4), "P": int(h.group(5)), "nLocal": int(h.group(6)),
                        "ctas": int(h.group(7)), "span": float(h.group(8)), "ranks": {}})
            continue
        e = _EVENT.match(line)
        if e and out:
            out[-1]["ranks"].setdefault(int(e.group(1)), []).append(
                (e.group(2), int(e.group(3)), int(e.group(4)), float(e.group(5)), float(e.group(6)), float(e.group(7))))
    return out


def check_complete(s, algo, P):
    """Every rank's every CTA reached every event, and the events are in order."""
    assert s["algo"] == algo and s["P"] == P and s["nLocal"] == P and s["ctas"] >= 1, s
    assert sorted(s["ranks"]) == list(range(P)), s
    for r, events in s["ranks"].items():
        assert [e[0] for e in events] == _EVENTS[algo], (r, events)
        last_median = 0.0
        for name, reached, ctas, mn, med, mx in events:
            assert reached == ctas == s["ctas"], (r, name, reached, ctas)
            assert mn <= med <= mx <= s["span"] + 0.01, (r, name, mn, med, mx)
            assert med >= last_median, (r, name, med, last_median)
            last_median = med
    assert s["span"] > 0


@pytest.mark.parametrize("algo", ["fused", "oneshot", "oneshot-raw"])
def test_timeline_printed_at_destroy(tmp_path, algo):
    import torch  # noqa: F401 (the script it runs needs it; missing, it is a failure)
    P = 4
    got = summaries(run(tmp_path, "destroy", algo, P, "1"))
    assert len(got) == 1, got  # one launch per group: the communicator that launched prints, the others stay quiet
    assert got[0]["when"] == "at destroy"
    check_complete(got[0], algo, P)


def test_timeline_every_nth_launch(tmp_path):
    import torch  # noqa: F401 (the script it runs needs it; missing, it is a failure)
    got = summaries(run(tmp_path, "every", "fused", 3, "2"))
    assert [s["when"] for s in got] == ["launch 2", "launch 4", "at destroy"], got
    for s in got:
        check_complete(s, "fused", 3)


def test_timeline_off_prints_nothing(tmp_path):
    import torch  # noqa: F401 (the script it runs needs it; missing, it is a failure)
    assert "TACO TIMELINE" not in run(tmp_path, "destroy", "fused", 2, "0")


@pytest.mark.parametrize("timeline", ["1", "2"])
def test_timeline_graph_replay_is_the_last_launch(tmp_path, timeline):
    """With N = 2 the second launch is the captured one: nothing is printed then, but a note."""
    import torch  # noqa: F401 (the script it runs needs it; missing, it is a failure)
    err = run(tmp_path, "graph", "fused", 4, timeline)
    got = summaries(err)
    assert [s["when"] for s in got] == ["at destroy", "at destroy"], got
    for s in got:
        check_complete(s, "fused", 4)
    assert got[1]["ctas"] > got[0]["ctas"], got  # the replayed large launch, not the eager small one
    assert ("prints nothing during a CUDA graph capture" in err) == (timeline == "2"), err

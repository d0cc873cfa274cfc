"""The AllReduce tuner on the GPU (docs/tuning.md, "The AllReduce table"), on loopback worlds:

* P = 2, 4, 8: tune, then in every size of the table the tuned default runs within 3 % of the
  best algorithm forced, measured in the same run (back-to-back calls timed with CUDA events,
  the median of rounds that interleave the worlds);
* an algorithm made wrong on purpose (TACO_TUNE_FAULT) is demoted, logged, and never chosen,
  even where the model would take it;
* the cache: a second communicator, in the same process and in another one, takes the table
  from the file and measures nothing; TACO_TUNE=force measures again, off reads nothing, a
  damaged file is ignored with a warning and replaced;
* CUDA-graph capture never measures and uses the table in use (else the model);
* two worlds tuning at once, from two threads, both keep their tables in the cache.

Every case runs in a process of its own: the library reads TACO_TUNE* once per process. The
cross-process case (CUDA IPC, peer memory as it comes by default) is the tune world of
tests/gpu/ipc_world.cc (tests/gpu/test_ipc_world.py).

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_tune.py
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

# tests/gpu on the script's path, for loopback_world's helpers.
PRELUDE = f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n" + textwrap.dedent("""
    import json, os, sys, threading, time
    import numpy as np
    import ml_dtypes
    import torch
    import taco, taco.comm
    from taco import reference as ref
    from loopback_world import capture_allreduce

    BF16 = np.dtype(ml_dtypes.bfloat16)

    def model_of(algo):  # the numpy model's name of an algorithm (plain on loopback: the rank-order sum)
        return {"staged": "twoshot", "fused": "twoshot"}.get(algo, algo)

    def want_of(parts, codec, algo):
        return ref.allreduce(parts, "none") if algo == "plain" else ref.allreduce(parts, codec, algo=model_of(algo))

    def parts_for(P, n, seed):
        rng = np.random.default_rng(seed)
        return [rng.laplace(size=n).astype(np.float32).astype(BF16) for _ in range(P)]

    def to_dev(a):
        return torch.from_numpy(a.view(np.int16).copy()).cuda().view(torch.bfloat16)

    def bits(t):
        return t.detach().reshape(-1).view(torch.int16).cpu().numpy()

    def allreduce(comms, xs, stream=None):
        with taco.comm.group():
            outs = [c.allreduce(x, stream=stream) for c, x in zip(comms, xs)]
        torch.cuda.synchronize()
        return outs

    def check_against_model(comms, codec, count, seed, what):
        parts = parts_for(len(comms), count, seed)
        outs = allreduce(comms, [to_dev(p) for p in parts])
        ran = comms[0].allreduce_algo(count, "bfloat16")  # after the call: its first call may have measured
        want = want_of(parts, codec, ran).view(np.int16)
        for r, o in enumerate(outs):
            assert np.array_equal(bits(o), want), f"{what}: rank {r} ran {ran} and differs from its model"
        return ran

    def close(comms):
        for c in comms:
            c.close()
""")


def run_script(tmp_path, body, *args, env=None, timeout=600):
    """Runs PRELUDE + body in a fresh process; its stdout, stderr. It must print OK last."""
    script = tmp_path / "case.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    # The settings each case depends on come from the case alone.
    full = {k: v for k, v in os.environ.items()
            if k not in ("TACO_TUNE_FAULT", "TACO_ALGO", "TACO_PEER_MEMORY", "TACO_CODEC", "TACO_CHUNK_BYTES",
                         "TACO_FALLBACK_BYTES", "TACO_PIPELINE_DEPTH", "TACO_FAULT_SKIP_RANK")}
    full.update({"TACO_TUNE_FILE": str(tmp_path / "tune.json")})
    full.update(env or {})
    res = subprocess.run([sys.executable, str(script), *map(str, args)], env=full, capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0 and res.stdout.rstrip().endswith("OK"), \
        f"exit {res.returncode}\nstdout:\n{res.stdout[-20000:]}\nstderr:\n{res.stderr[-20000:]}"
    return res.stdout, res.stderr


# ------------------------------------------------------------------ the tuned default against every algorithm

_DEFAULT_VS_FORCED = """
    P, budget = int(sys.argv[1]), 0.97
    cfg = dict(codec="fp8-block", chunk_bytes=16 << 20)
    tuned = taco.comm.loopback(P, **cfg)
    table = taco.tune(tuned, "bfloat16")
    assert table is not None and table["source"] == "measured", table
    print(f"measured in {table['ms']} ms:", json.dumps(table["choice"]))
    cols = table["algos"]
    # Every algorithm timed (the fused-large column runs the fused algorithm with a larger scratch:
    # at this chunk no size takes more than one launch, so it is not measured).
    runnable = [a for i, a in enumerate(cols) if a not in table["demoted"] and any(r[i] is not None for r in table["us"])]
    assert "fused-large" not in runnable, table
    assert len(runnable) >= 4, (runnable, table)   # plain, raw one-shot, one-shot, fused, staged on loopback
    assert not table["demoted"], table["notes"]
    forced = {a: taco.comm.loopback(P, algo=a, **cfg) for a in runnable}
    worlds = dict(forced, default=tuned)
    most = max(table["bytes"]) // 2
    s = torch.cuda.Stream()
    xs = [torch.randn(most, device="cuda").to(torch.bfloat16) for _ in range(P)]
    outs = [torch.empty_like(x) for x in xs]
    torch.cuda.synchronize()

    def per_call_ms(world, count, calls):
        # `calls` back-to-back calls of every rank, queued in one group and launched at its end; the
        # start event is recorded once the group is built, so the Python loop is not timed.
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with taco.comm.group():
            for _ in range(calls):
                for c, x, o in zip(world, xs, outs):
                    c.allreduce(x[:count], out=o[:count], stream=s)
            e0.record(s)
        e1.record(s)
        e1.synchronize()
        return e0.elapsed_time(e1) / calls

    def measure(count, rounds):
        calls = {}
        for name, w in worlds.items():  # warm-up, then enough calls per run for ~2 ms
            per_call_ms(w, count, 2)
            calls[name] = int(min(64, max(2, -(-2.0 // max(per_call_ms(w, count, 1), 1e-3)))))
        got = {n: [] for n in worlds}
        names = list(worlds)
        for r in range(rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                got[n].append(per_call_ms(worlds[n], count, calls[n]))
        return {n: sorted(v)[len(v) // 2] for n, v in got.items()}

    failures = []
    for b, nbytes in enumerate(table["bytes"]):
        count = nbytes // 2
        chosen = tuned[0].allreduce_algo(count, "bfloat16")
        assert chosen == table["choice"][b], (nbytes, chosen, table["choice"][b])  # never fused-large here
        # The default runs what the table says: the same bits as that algorithm forced.
        a = [o.clone() for o in allreduce(tuned, [x[:count] for x in xs])]
        f = allreduce(forced[chosen], [x[:count] for x in xs])
        assert all(torch.equal(p.view(torch.int16), q.view(torch.int16)) for p, q in zip(a, f)), (nbytes, chosen)
        for attempt, rounds in enumerate((5, 9, 9)):
            t = measure(count, rounds)
            best = min((n for n in forced), key=lambda n: t[n])
            ok = chosen == best or t[best] / t["default"] >= budget
            line = (f"{nbytes:>10} B  default {chosen:<12} {t['default'] * 1e3:9.1f} us   best {best:<12} "
                    f"{t[best] * 1e3:9.1f} us   ratio {t[best] / t['default']:.3f}" + ("" if ok else "  (again)"))
            print(line, flush=True)
            if ok:
                break
        else:
            failures.append(line)
    assert not failures, "the tuned default is slower than 0.97x the best forced algorithm:\\n" + "\\n".join(failures)
    for w in worlds.values():
        close(w)
    print("OK")
"""


@pytest.mark.parametrize("P", [2, 4, 8])
def test_tuned_default_within_3_percent_of_the_best_forced_algorithm(tmp_path, P):
    out, _ = run_script(tmp_path, _DEFAULT_VS_FORCED, P, env={"TACO_TUNE": "off", "TACO_TUNE_MAX_BYTES": "16M"})
    print(out)


# ------------------------------------------------------------------ demotion

_DEMOTED = """
    P = 4
    comms = taco.comm.loopback(P, codec="taco", fallback_bytes=0, chunk_bytes=8 << 20)
    table = taco.tune(comms, "bfloat16")
    assert table["demoted"] == ["oneshot"], table
    assert "[TACO_TUNE_FAULT]" in table["notes"] and "differs from the oracle" in table["notes"], table["notes"]
    col = table["algos"].index("oneshot")
    assert all(row[col] is None for row in table["us"]), table["us"]
    assert "oneshot" in table["model"], table["model"]      # the model would take it: the test can see a difference
    assert "oneshot" not in table["choice"], table["choice"]
    for nbytes in table["bytes"]:
        for count in (nbytes // 2, int(nbytes * 0.65), nbytes // 2 + 1):
            assert comms[0].allreduce_algo(count, "bfloat16") != "oneshot", (count, table["choice"])
    ran = check_against_model(comms, "taco", 40000, 1, "after the demotion")
    assert ran != "oneshot"
    # A demotion by TACO_TUNE_FAULT may not recur: the table is used by this process, not cached.
    path = os.environ["TACO_TUNE_FILE"]
    assert not os.path.exists(path) or all(t["key"] != table["key"] for t in json.load(open(path))["tables"])
    close(comms)
    print("OK")
"""


def test_candidate_made_wrong_is_demoted_and_never_chosen(tmp_path):
    _, err = run_script(tmp_path, _DEMOTED, env={"TACO_TUNE": "off", "TACO_TUNE_MAX_BYTES": "4M",
                                                  "TACO_TUNE_FAULT": "oneshot", "TACO_DEBUG": "WARN"})
    warned = [ln for ln in err.splitlines() if "tune: oneshot is demoted on this communicator" in ln]
    assert len(warned) == 1 and "[TACO_TUNE_FAULT]" in warned[0], err[-5000:]
    assert "fused is demoted" not in err and "oneshot-raw is demoted" not in err


# ------------------------------------------------------------------ the cache and TACO_TUNE

_FIRST = """
    P = 4
    cfg = dict(codec="fp8-block", chunk_bytes=8 << 20)
    a = taco.comm.loopback(P, **cfg)
    assert a[0].tune_table("bfloat16") is None             # nothing measured at creation
    check_against_model(a, "fp8-block", 5000, 2, "world a")  # the first eager AllReduce measures (auto)
    ta = a[0].tune_table("bfloat16")
    assert ta is not None and ta["source"] == "measured", ta
    assert a[3].tune_table("bfloat16")["hash"] == ta["hash"]  # every rank of the world
    assert a[0].tune_table("float32") is None                 # per dtype
    # A second world in this process: the table comes from the cache at creation; its calls measure nothing.
    b = taco.comm.loopback(P, **cfg)
    tb = b[0].tune_table("bfloat16")
    assert tb is not None and tb["source"] == "cache" and tb["hash"] == ta["hash"], tb
    check_against_model(b, "fp8-block", 70000, 3, "world b")
    assert b[0].tune_table("bfloat16")["source"] == "cache"
    # A forced algorithm never measures.
    f = taco.comm.loopback(P, algo="staged", **cfg)
    check_against_model(f, "fp8-block", 5000, 4, "forced")
    assert f[0].tune_table("float16") is None
    close(a), close(b), close(f)
    print("HASH", ta["hash"])
    print("OK")
"""

_SECOND = """
    P, mode = 4, sys.argv[1]
    c = taco.comm.loopback(P, codec="fp8-block", chunk_bytes=8 << 20)
    t0 = c[0].tune_table("bfloat16")
    check_against_model(c, "fp8-block", 5000, 5, mode)
    t1 = c[0].tune_table("bfloat16")
    print("BEFORE", json.dumps(t0 and {k: t0[k] for k in ("source", "hash")}))
    print("AFTER", json.dumps(t1 and {k: t1[k] for k in ("source", "hash")}))
    close(c)
    print("OK")
"""


def _line(out, word):
    m = re.search(rf"^{word} (.*)$", out, re.M)
    assert m, out
    return json.loads(m.group(1)) if word != "HASH" else m.group(1)


def _measured_lines(err):
    return [ln for ln in err.splitlines() if re.search(r"tune: rank 0/4 bfloat16, codec \S+: \d+ sizes", ln)]


def test_the_cache_spares_a_second_communicator_any_timing(tmp_path):
    env = {"TACO_TUNE": "auto", "TACO_TUNE_MAX_BYTES": "1M", "TACO_DEBUG": "INFO"}
    out, err = run_script(tmp_path, _FIRST, env=env)
    assert len(_measured_lines(err)) == 1, err[-8000:]  # world a measured; world b and the forced one did not
    h = _line(out, "HASH")
    assert "the table was written to" in err

    # Another process, the same machine and configuration: the cached table at creation, no timing.
    out, err = run_script(tmp_path, _SECOND, "auto", env=env)
    assert _line(out, "BEFORE") == {"source": "cache", "hash": h}
    assert _line(out, "AFTER") == {"source": "cache", "hash": h}
    assert not _measured_lines(err) and "the cached AllReduce table for bfloat16" in err, err[-8000:]

    # force: measures at the first eager call although the cache has a table.
    out, err = run_script(tmp_path, _SECOND, "force", env=dict(env, TACO_TUNE="force"))
    assert _line(out, "BEFORE") is None and _line(out, "AFTER")["source"] == "measured"
    assert len(_measured_lines(err)) == 1

    # off: no cache read, no measuring; the model decides.
    out, err = run_script(tmp_path, _SECOND, "off", env=dict(env, TACO_TUNE="off"))
    assert _line(out, "BEFORE") is None and _line(out, "AFTER") is None
    assert not _measured_lines(err)

    # A damaged file: a warning, ignored, measured again and replaced by a valid one.
    (tmp_path / "tune.json").write_text('{"format": "libtaco-tune-1", "tables": [{"key": ')
    out, err = run_script(tmp_path, _SECOND, "damaged", env=env)
    assert "is not used" in err and "not JSON" in err, err[-8000:]
    assert _line(out, "BEFORE") is None and _line(out, "AFTER")["source"] == "measured"
    assert json.loads((tmp_path / "tune.json").read_text())["format"] == "libtaco-tune-1"

    # A table from another machine (another GPU in its key): not used, no error, measured here.
    doc = json.loads((tmp_path / "tune.json").read_text())
    for t in doc["tables"]:
        t["key"] = re.sub(r"gpu=[^;]*", "gpu=Another GPU", t["key"])
    (tmp_path / "tune.json").write_text(json.dumps(doc))
    out, err = run_script(tmp_path, _SECOND, "other machine", env=env)
    assert _line(out, "BEFORE") is None and _line(out, "AFTER")["source"] == "measured"
    keys = [t["key"] for t in json.loads((tmp_path / "tune.json").read_text())["tables"]]
    assert len(keys) == 2 and any("gpu=Another GPU" in k for k in keys)  # the other machine's table is kept


# ------------------------------------------------------------------ the fused two-shot with a larger scratch

_LARGE = """
    P, codec = 4, "fp8-block"
    cfg = dict(codec=codec, chunk_bytes=1 << 20)   # a small chunk: calls above ~1 MiB take several launches
    tuned = taco.comm.loopback(P, **cfg)
    before = tuned[0].workspace_bytes
    table = taco.tune(tuned, "bfloat16")
    col = table["algos"].index("fused-large")
    fused = table["algos"].index("fused")
    assert "fused-large" not in table["demoted"], table["notes"]
    assert table["large_chunk_bytes"] == 4 << 20, table
    # Measured exactly where the communicator's own scratch takes several launches (above 1 MiB here),
    # and there next to the fused two-shot at its own chunk.
    for nbytes, row in zip(table["bytes"], table["us"]):
        assert (row[col] is not None) == (nbytes > 1 << 20), (nbytes, row)
        assert row[fused] is not None, (nbytes, row)
    kept = "fused-large" in table["choice"]
    after = tuned[0].workspace_bytes
    assert (after > before) == kept and table["scratch_bytes"] > 0, (before, after, table["choice"])
    assert all(c.workspace_bytes == after for c in tuned)
    for count in ((3 << 20) + 5, 1000, (1 << 22) + 777):  # several launches, one, several
        check_against_model(tuned, codec, count, count % 97, "tuned")
    # A second world of this configuration reads the table and takes the same scratch at creation.
    second = taco.comm.loopback(P, **cfg)
    t2 = second[0].tune_table("bfloat16")
    assert t2["source"] == "cache" and t2["hash"] == table["hash"] and t2["choice"] == table["choice"], t2
    assert second[0].workspace_bytes == after, (second[0].workspace_bytes, after)
    check_against_model(second, codec, (3 << 20) + 5, 11, "second")
    close(tuned), close(second)
    print("kept" if kept else "not kept", table["choice"])
    print("OK")
"""


def test_fused_two_shot_with_a_larger_scratch(tmp_path):
    run_script(tmp_path, _LARGE, env={"TACO_TUNE": "auto", "TACO_TUNE_MAX_BYTES": "8M"})


# ------------------------------------------------------------------ CUDA graphs

_GRAPH = """
    P, count, codec = 4, 1 << 17, "taco"
    comms = taco.comm.loopback(P, codec=codec, fallback_bytes=0, chunk_bytes=8 << 20)
    assert comms[0].allreduce_algo(count, "bfloat16") == "oneshot"   # the model's choice at this size
    parts = parts_for(P, count, 7)
    xs = [to_dev(p) for p in parts]
    s = torch.cuda.Stream()

    def capture():
        return capture_allreduce(taco, torch, comms, xs, s)

    def replay(g, outs):
        for o in outs:
            o.zero_()
        g.replay()
        torch.cuda.synchronize()
        return [bits(o) for o in outs]

    # 1. Captured before any eager call: no measuring inside the capture, the model's algorithm.
    g1, o1 = capture()
    assert comms[0].tune_table("bfloat16") is None
    oneshot = want_of(parts, codec, "oneshot").view(np.int16)
    assert all(np.array_equal(b, oneshot) for b in replay(g1, o1))
    # 2. The first eager call measures (auto); one-shot is made wrong, so the table takes another.
    allreduce(comms, xs)
    t = comms[0].tune_table("bfloat16")
    assert t is not None and t["source"] == "measured" and "oneshot" in t["demoted"], t
    chosen = comms[0].allreduce_algo(count, "bfloat16")
    assert chosen != "oneshot", chosen
    # 3. Captured now: the table's algorithm, replayed with its bits (not the model's one-shot ones).
    g2, o2 = capture()
    want = want_of(parts, codec, chosen).view(np.int16)
    assert not np.array_equal(want, oneshot)
    for i in range(3):
        assert all(np.array_equal(b, want) for b in replay(g2, o2)), (i, chosen)
    assert all(np.array_equal(b, oneshot) for b in replay(g1, o1))  # the first graph keeps what it captured
    close(comms)
    print("chosen", chosen)
    print("OK")
"""


def test_graph_capture_uses_the_table_and_never_measures(tmp_path):
    run_script(tmp_path, _GRAPH, env={"TACO_TUNE": "auto", "TACO_TUNE_MAX_BYTES": "2M", "TACO_TUNE_FAULT": "oneshot"})


# ------------------------------------------------------------------ two worlds at once

_TWO_AT_ONCE = """
    a = taco.comm.loopback(2, codec="fp8-block", chunk_bytes=8 << 20)
    b = taco.comm.loopback(4, codec="taco", chunk_bytes=8 << 20)
    start = threading.Barrier(2)
    tables, errors = {}, []

    def tune(name, world):
        try:
            torch.cuda.set_device(0)
            start.wait()
            tables[name] = taco.tune(world, "bfloat16", stream=torch.cuda.Stream())
        except Exception as e:  # reported below
            errors.append(f"{name}: {e!r}")

    threads = [threading.Thread(target=tune, args=(n, w)) for n, w in (("a", a), ("b", b))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors and not any(th.is_alive() for th in threads), errors
    assert tables["a"]["source"] == tables["b"]["source"] == "measured"
    assert tables["a"]["key"] != tables["b"]["key"]
    cached = {t["key"]: t["hash"] for t in json.load(open(os.environ["TACO_TUNE_FILE"]))["tables"]}
    assert cached == {tables["a"]["key"]: tables["a"]["hash"], tables["b"]["key"]: tables["b"]["hash"]}, cached
    for name, world, codec in (("a", a, "fp8-block"), ("b", b, "taco")):
        for count in (3000, 200000):
            check_against_model(world, codec, count, 9, f"world {name}")
    close(a), close(b)
    print("OK")
"""


def test_two_worlds_tuning_at_once(tmp_path):
    run_script(tmp_path, _TWO_AT_ONCE, env={"TACO_TUNE": "off", "TACO_TUNE_MAX_BYTES": "2M"})

"""python -m taco train (taco_bench.train) on the CPU: the tiny GPT built from taco.torch's TP
layers trains with the exact sum (cpu-exact) and with the numpy collective model (cpu-ref);
checkpoint/resume is exact; fp16 overflow propagates through the compressed AllReduce and
the GradScaler skips the step; the sweep summary math. No GPU, no libtaco GPU code."""
import argparse
import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")
import numpy as np  # noqa: E402

from taco_bench import ablations, options  # noqa: E402
from taco_bench import accuracy as acc  # noqa: E402
from taco_bench.train import collectives, config, data, loop, report  # noqa: E402
from taco_bench.train import cli as train_cli  # noqa: E402

# a 2-layer tiny model on the help-topics corpus: ~0.44M parameters, 8 x 64 tokens per step
SMALL = "--preset tiny --corpus pydoc --layers 2 --eval-batches 1 --warmup 2 --dtype fp32"


def cfg(extra=""):
    p = options.Parser()
    train_cli.add_arguments(p)
    a = p.parse_args((SMALL + " " + extra).split())
    if a.backend is None:
        a.backend = "cpu-exact"
    return config.make_config(a)


def run(extra="", out=None, **kw):
    kw.setdefault("eval_every", 5)
    return loop.train(cfg(extra), out, quiet=True, **kw)


def losses(lg):
    return [v for _, v in lg["train"]]


def test_tiny_preset_trains_and_loss_decreases():
    lg = run("--steps 30 --tp 4", eval_every=10)
    assert lg["finished"] and len(lg["train"]) == 30
    tr = losses(lg)
    assert all(math.isfinite(v) for v in tr)
    assert np.mean(tr[-5:]) < np.mean(tr[:5]) - 0.5  # from ~5.5 (uniform over bytes) down
    ev = [e["val"] for e in lg["evals"]]
    assert ev[-1] < ev[0] - 0.5
    # 2 layers x (2 forward row-parallel + 2 backward column-parallel) AllReduces per step
    assert lg["allreduce_per_step"]["calls"] == 8
    assert lg["allreduce_per_step"]["elements"] == 8 * 8 * 64 * 128


def test_same_model_at_every_tp_size():
    """The full weights are drawn once and sharded: TP=2 and TP=4 compute the same function."""
    a, b = run("--steps 1 --tp 2"), run("--steps 1 --tp 4")
    assert abs(a["evals"][0]["val"] - b["evals"][0]["val"]) < 1e-5
    assert abs(losses(a)[0] - losses(b)[0]) < 1e-5


def test_reference_none_vs_exact_sum():
    """cpu-ref with codec none is taco.reference's plain path: the fp32 sum in rank order
    0..P-1 (what libtaco's loopback kernel computes), rounded once to the dtype; cpu-exact
    is the fp64 sum rounded to the dtype. For P = 2 the two are the same number (the fp32
    sum of two fp32 values is correctly rounded), so the runs are bit-identical. For P = 4
    in fp32 they differ by rounding in about a third of the elements, so the losses agree
    only to fp rounding."""
    g = torch.Generator().manual_seed(0)
    for P, differs in ((2, False), (4, True)):
        ts = [torch.randn(4096, generator=g) for _ in range(P)]
        o1, o2 = torch.empty(4096), torch.empty(4096)
        collectives.exact_sum(ts, [o1])
        collectives.ref_reduce("exact")(ts, [o2])
        assert bool((o1 != o2).any()) == differs
        # rounding error of a sequential fp32 sum: at most (P - 1) u sum |t_i|, u = 2^-24
        bound = (P - 1) * 2.0 ** -24 * sum(t.abs().double() for t in ts) + 2.0 ** -24 * o1.abs().double()
        assert bool(((o1.double() - o2.double()).abs() <= bound).all())
    a, b = run("--steps 6 --tp 2"), run("--steps 6 --tp 2 --backend cpu-ref")
    assert losses(a) == losses(b)
    assert [e["val"] for e in a["evals"]] == [e["val"] for e in b["evals"]]
    a, b = run("--steps 6 --tp 4"), run("--steps 6 --tp 4 --backend cpu-ref")
    np.testing.assert_allclose(losses(a), losses(b), rtol=1e-5)


def test_reference_taco_differs_slightly():
    a = run("--steps 6 --tp 4")
    b = run("--steps 6 --tp 4 --backend cpu-ref --codec taco")
    assert b["collective"].startswith("cpu-ref") and "'taco'" in b["collective"]
    la, lb = np.array(losses(a)), np.array(losses(b))
    assert la[0] != lb[0]  # the first forward already goes through the codec
    assert np.max(np.abs(la - lb) / la) < 0.01
    # the eval through the exact sum of the same (taco-trained) weights differs from the compressed eval
    assert b["evals"][-1]["val"] != b["evals"][-1]["val_exact"]
    assert abs(b["evals"][-1]["val"] - b["evals"][-1]["val_exact"]) < 0.01


def test_emulated_pertensor_matches_numpy_ablation():
    """The torch emulation of the per-tensor FP8 ablations (the GPU path) against
    taco_bench.ablations' numpy model: same scheme, WHT as a matmul, so equal up to rounding."""
    g = torch.Generator().manual_seed(1)
    ts = [torch.randn(3000, generator=g) * torch.exp(torch.randn(3000, generator=g)) for _ in range(4)]
    exact = sum(t.double() for t in ts)
    for rotate in (False, True):
        o = torch.empty(3000)
        collectives.emulated_pertensor(rotate)(ts, [o])
        y = ablations.allreduce_pertensor([t.numpy() for t in ts], rotate)
        nm = float(((o.double() - torch.from_numpy(y).double()) ** 2).sum() / (exact ** 2).sum())
        err = float(((o.double() - exact) ** 2).sum() / (exact ** 2).sum())
        assert 1e-6 < err < 1e-2  # lossy
        assert nm < 0.05 * err    # and the two implementations agree far below their error


def test_checkpoint_resume_reproduces_uninterrupted(tmp_path):
    full = run("--steps 8 --tp 4", out=str(tmp_path / "a"), eval_every=4)
    b = str(tmp_path / "b")
    part = run("--steps 8 --tp 4", out=b, eval_every=4, stop_after=3)
    assert not part["finished"] and len(part["train"]) == 3
    ck = os.path.join(b, config.run_name(cfg("--steps 8 --tp 4")) + ".ckpt.pt")
    st = torch.load(ck, weights_only=False)
    assert st["step"] == 3 and st["data_position"] == 3 and "optimizer" in st and "rng_cpu" in st
    rest = run("--steps 8 --tp 4", out=b, eval_every=4, resume=True)
    assert rest["finished"]
    assert [(g["from_step"], g["to_step"], g["stopped"]) for g in rest["segments"]] == [
        (0, 3, "stop-after"), (3, 8, "finished")]
    assert losses(rest) == losses(full)
    assert [e["step"] for e in rest["evals"]] == [0, 3, 4, 8]
    fv = {e["step"]: e["val"] for e in full["evals"]}
    assert all(fv[e["step"]] == e["val"] for e in rest["evals"] if e["step"] in fv)
    with open(os.path.join(b, config.run_name(cfg("--steps 8 --tp 4")) + ".json")) as f:
        assert json.load(f)["finished"]
    with pytest.raises(SystemExit, match="different configuration"):
        run("--steps 8 --tp 4 --lr 0.5", out=b, resume=True)


@pytest.mark.parametrize("backend,codec", [("cpu-exact", "exact"), ("cpu-ref", "taco")])
def test_fp16_overflow_propagates_and_step_is_skipped(backend, codec):
    lg = run(f"--steps 6 --tp 4 --dtype fp16 --backend {backend} --codec {codec}", force_overflow_at=4)
    (rec,) = lg["overflow_checks"]
    assert rec["step"] == 4 and rec["skipped"] and rec["params_unchanged"]
    assert rec["calls_nonfinite_in"] > 0 and rec["calls_nonfinite_out"] == rec["calls_nonfinite_in"]
    assert rec["calls_nonfinite_lost"] == 0 and rec["propagated"]
    assert rec["scale_after"] == rec["scale_before"] / 2
    assert 4 in lg["skipped_steps"]
    assert all(math.isfinite(v) for v in losses(lg))  # the logged (unscaled) losses and the run go on
    assert lg["evals"][-1]["val"] < lg["evals"][0]["val"]


def test_sweep_summary_math():
    finals = {"exact": [3.00, 3.02, 3.01], "taco": [3.015], "int4-block": [3.10], "bf16": [2.99]}
    s = report.sweep_summary(finals)
    assert s["baseline_mean"] == pytest.approx(3.01)
    assert s["spread"] == pytest.approx(0.02)
    assert s["std"] == pytest.approx(0.01)
    rows = {r["codec"]: r for r in s["rows"]}
    assert rows["int4-block"]["delta"] == pytest.approx(0.09)
    assert rows["int4-block"]["rel"] == pytest.approx(0.09 / 3.01)
    assert rows["int4-block"]["ratio"] == pytest.approx(4.5)
    assert rows["taco"]["inside_floor"] and rows["bf16"]["inside_floor"] and not rows["int4-block"]["inside_floor"]
    assert rows["int4-block"]["sigmas"] == pytest.approx(9.0)
    assert rows["int4-block"]["above"] and not rows["taco"]["above"] and not rows["exact"]["above"]
    assert s["control_discriminates"] is True
    text = report.format_summary(s)
    assert "YES" in text and "4.50x spread, 9.0x std" in text and "worse than every baseline run: yes" in text
    s2 = report.sweep_summary(dict(finals, **{"int4-block": [3.05]}))  # 0.04 = 2x spread < 3x
    assert s2["control_discriminates"] is False and "NO" in report.format_summary(s2)
    assert report.sweep_summary({"exact": [1.0, 1.1], "int4-block": [float("nan")]})["control_discriminates"] is True
    assert report.sweep_summary({"exact": [1.0, 1.1]})["control_discriminates"] is None
    with pytest.raises(ValueError):
        report.sweep_summary({"exact": [1.0], "taco": [1.0]})


def test_sweep_end_to_end_cli(tmp_path, capsys):
    from taco.__main__ import main

    out = str(tmp_path)
    rc = main(["train", "--sweep", *SMALL.split(), "--steps", "3", "--tp", "2", "--eval-every", "3",
               "--backend", "cpu-exact", "--seeds", "0,1", "--codecs", "int4-block", "--out", out, "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "baseline (exact)" in text and "int4-block" in text and "control int4-block" in text
    logs = report.load_logs(out)
    assert sorted((lg["config"]["codec"], lg["config"]["seed"], lg["config"]["backend"]) for lg in logs) == [
        ("exact", 0, "cpu-exact"), ("exact", 1, "cpu-exact"), ("int4-block", 0, "cpu-ref")]
    rc = main(["train", "--summary", out])  # the same table from the logs alone
    assert rc == 0 and "[val_exact]" in capsys.readouterr().out


def test_resume_from_a_checkpoint_that_says_sessions(tmp_path):
    """A checkpoint written before the rename resumes, its record carried over as a segment."""
    b = str(tmp_path)
    run("--steps 6 --tp 2", out=b, eval_every=3, stop_after=2)
    ck = os.path.join(b, config.run_name(cfg("--steps 6 --tp 2")) + ".ckpt.pt")
    st = torch.load(ck, weights_only=False)
    st["log"]["sessions"] = st["log"].pop("segments")
    torch.save(st, ck)
    rest = run("--steps 6 --tp 2", out=b, eval_every=3, resume=True)
    assert rest["finished"] and "sessions" not in rest
    assert [(g["from_step"], g["to_step"]) for g in rest["segments"]] == [(0, 2), (2, 6)]


def test_old_logs_with_sessions_read_as_segments(tmp_path):
    """Logs written before `sessions` was renamed `segments` still load."""
    seg = [{"from_step": 0, "to_step": 5, "seconds": 1.0, "stopped": "finished"}]
    with open(tmp_path / "old.json", "w") as f:
        json.dump({"kind": "taco-train", "name": "old", "sessions": seg, "finished": True}, f)
    with open(tmp_path / "new.json", "w") as f:
        json.dump({"kind": "taco-train", "name": "new", "segments": seg, "finished": True}, f)
    logs = report.load_logs(str(tmp_path))
    assert [(lg["name"], lg["segments"], "sessions" in lg) for lg in logs] == [("new", seg, False),
                                                                                ("old", seg, False)]


def test_lr_schedule_and_offsets_are_pure():
    c = cfg("--steps 100")
    assert config.lr_at(c, 1) == pytest.approx(c["lr"] / 2)
    assert config.lr_at(c, 2) == pytest.approx(c["lr"])
    assert config.lr_at(c, 100) == pytest.approx(0.1 * c["lr"])
    a = data.batch_offsets(10000, 64, 8, seed=3, step=7)
    assert np.array_equal(a, data.batch_offsets(10000, 64, 8, seed=3, step=7))
    assert not np.array_equal(a, data.batch_offsets(10000, 64, 8, seed=4, step=7))
    assert a.max() < 10000 - 65


def test_codec_list_is_the_library_s_in_id_order():
    import taco

    names = config.library_codecs()
    assert names == [c for c in taco.codecs() if c != "none"]
    assert [taco.codec_info(c)["id"] for c in names] == list(range(1, len(names) + 1))
    assert config.all_codecs() == ["exact", *names, "pt-fp8", "rot-pt-fp8"]


def test_bad_arguments():
    with pytest.raises(SystemExit, match="codec must be"):
        run("--steps 1 --codec taco")  # cpu-exact cannot compress
    with pytest.raises(SystemExit, match="unknown codec"):
        cfg("--codec nope")
    with pytest.raises(SystemExit, match="heads"):
        run("--steps 1 --tp 4 --heads 6 --d-model 96")


def _fake_log(codec, seed, vals, finished=True):
    return {"kind": "taco-train", "name": f"{codec}-s{seed}", "finished": finished,
            "config": {"codec": codec, "seed": seed},
            "evals": [{"step": 100 * (i + 1), "val": v, "val_exact": v} for i, v in enumerate(vals)]}


def test_summary_at_step_tail_and_paired():
    logs = [_fake_log("exact", 0, [3.0, 2.0, 1.00]), _fake_log("exact", 1, [3.1, 2.2, 1.10]),
            _fake_log("taco", 0, [3.0, 2.1, 1.02]), _fake_log("taco", 1, [3.1, 2.3], finished=False),
            _fake_log("int4-block", 1, [3.5], finished=False)]
    # final values: unfinished runs are left out
    assert report.finals_from_logs(logs) == {"exact": [1.0, 1.1], "taco": [1.02]}
    # at a common step, every run that reached it counts; a run that did not is left out
    at = report.finals_from_logs(logs, at_step=200)
    assert at == {"exact": [2.0, 2.2], "taco": [2.1, 2.3]}
    assert report.run_value(logs[4], at_step=200) is None
    # tail: the mean of the last K evals up to the step
    assert report.finals_from_logs(logs, at_step=200, tail=2)["exact"] == [pytest.approx(2.5), pytest.approx(2.65)]
    # paired: codec minus the baseline run of the same seed
    pd = report.paired_from_logs(logs, at_step=200)
    assert pd["taco"] == [pytest.approx(0.1), pytest.approx(0.1)] and "int4-block" not in pd
    s = report.sweep_summary(at, paired=pd)
    row = next(r for r in s["rows"] if r["codec"] == "taco")
    assert row["paired_n"] == 2 and row["paired_rel"] == pytest.approx(0.1 / 2.1)
    assert "+4.762 (2)" in report.format_summary(s)


def test_capture_feeds_the_accuracy_tables(tmp_path):
    """--capture saves the partials every TP AllReduce of one step received; `python -m taco
    accuracy --capture` measures the codecs on exactly those tensors."""
    path = str(tmp_path / "cap.npz")
    run("--steps 3 --tp 4", capture=path, capture_step=2, capture_tokens=32)
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    assert meta["kind"] == "taco-capture" and meta["step"] == 2 and meta["rows"] == 32
    names = [s["name"] for s in meta["sites"]]
    assert names == ["L0.attn_out", "L0.mlp_down", "L1.attn_out", "L1.mlp_down",
                     "L1.mlp_up", "L1.qkv", "L0.mlp_up", "L0.qkv"]
    assert len(arrays) == 8 and all(a.shape == (4, 32, 128) and np.isfinite(a).all() for a in arrays.values())
    assert all(np.abs(a).max() > 0 for a in arrays.values())
    # the partials differ per rank (each is its own shard's contribution)
    assert not np.array_equal(arrays["site0"][0], arrays["site0"][1])

    out = str(tmp_path / "acc.json")
    assert acc.main(["--capture", path, "--codecs", "none,fp8-block,int4-block", "--json", out]) == 0
    with open(out) as f:
        doc = json.load(f)
    assert doc["info"]["source"] == "capture" and doc["info"]["P_captured"] == 4
    summ = {(s["direction"], s["P"], s["codec"]): s for s in doc["summary"]}
    assert {P for (_, P, _) in summ} == {2, 4} and {s["dtype"] for s in doc["summary"]} == {"fp32"}
    for d in ("forward", "backward"):
        assert summ[(d, 4, "none")]["nmse"] < 1e-12  # fp32 sum in rank order vs the fp64 sum
        assert 1e-5 < summ[(d, 4, "fp8-block")]["nmse"] < 1e-2
        assert summ[(d, 4, "int4-block")]["nmse"] > 3 * summ[(d, 4, "fp8-block")]["nmse"]
    with pytest.raises(SystemExit, match="--P"):
        acc.main(["--capture", path, "--P", "8", "--codecs", "none"])


def test_config_argv_round_trips():
    for extra in ("--steps 7 --tp 2", "--untied --lr 0.002 --seed 3 --codec int4-block --backend cpu-ref"):
        c = cfg(extra)
        p = argparse.ArgumentParser()
        train_cli.add_arguments(p)
        assert config.make_config(p.parse_args(config.config_argv(c))) == c


def test_parallel_sweep_runs_workers_and_summarizes(tmp_path, capsys):
    from taco.__main__ import main

    out = str(tmp_path)
    args = ["train", "--sweep", *SMALL.split(), "--steps", "3", "--tp", "2", "--eval-every", "3",
            "--backend", "cpu-exact", "--seeds", "0,1", "--codecs", "int4-block", "--out", out, "--parallel", "3"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.count("started ") == 3 and "control int4-block" in text
    logs = report.load_logs(out)
    assert sorted((lg["config"]["codec"], lg["config"]["seed"], lg["config"]["backend"], lg["finished"])
                  for lg in logs) == [("exact", 0, "cpu-exact", True), ("exact", 1, "cpu-exact", True),
                                      ("int4-block", 0, "cpu-ref", True)]
    assert all(os.path.exists(os.path.join(out, lg["name"] + ".log")) for lg in logs)
    # a finished sweep is not run again
    assert main(args) == 0
    assert capsys.readouterr().out.count("finished earlier, skipped") == 3
    with pytest.raises(SystemExit, match="--parallel"):
        main(args[:-1] + ["0"])

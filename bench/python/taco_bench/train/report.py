"""Sweep reports from the runs' JSON logs: the summary table against the baseline's seed
spread, and the validation curves (pure Python; matplotlib for the plot)."""

from __future__ import annotations

import glob
import json
import math
import os
import statistics

from .config import BASELINE, CONTROL


def sweep_summary(finals: dict, control: str = CONTROL, factor: float = 3.0, paired: dict | None = None) -> dict:
    """finals: {codec: [final val loss per seed]}, with BASELINE's list the baseline seeds.
    spread = max - min of the baseline (the seed-to-seed spread, conservative), std its
    sample standard deviation; each codec: delta = mean - baseline mean, rel = delta /
    baseline mean, ratio = delta / spread, sigmas = delta / std, above = every run of the
    codec is worse than every baseline run. The control discriminates when its delta is
    >= factor * spread (the range grows with the number of seeds, about 1.7 std for 3 and
    2.3 std for 5, so sigmas is printed beside it). paired: {codec: [codec - baseline of the
    same seed, ...]}, shown beside the unpaired delta (same init and data order)."""
    base = [float(v) for v in finals.get(BASELINE, [])]
    if len(base) < 2:
        raise ValueError(f"need >= 2 baseline ({BASELINE}) seeds for a spread, got {len(base)}")
    mean = statistics.fmean(base)
    spread = max(base) - min(base)
    std = statistics.stdev(base)
    rows = []
    for c, vals in finals.items():
        vals = [float(v) for v in vals]
        m = statistics.fmean(vals) if vals else float("nan")
        d = m - mean
        pd = (paired or {}).get(c, [])
        rows.append({"codec": c, "n": len(vals), "mean": m, "delta": d, "rel": d / mean,
                     "ratio": d / spread if spread > 0 else (math.inf if d > 0 else 0.0),
                     "sigmas": d / std if std > 0 else (math.inf if d > 0 else 0.0),
                     "above": bool(vals) and c != BASELINE and min(vals) > max(base),
                     "inside_floor": abs(d) <= spread,
                     "paired_rel": statistics.fmean(pd) / mean if pd else None, "paired_n": len(pd)})
    ctl = next((r for r in rows if r["codec"] == control), None)
    verdict = None
    if ctl is not None:
        verdict = bool(math.isfinite(ctl["delta"]) and ctl["delta"] >= factor * spread) or not math.isfinite(ctl["mean"])
    return {"baseline_mean": mean, "spread": spread, "std": std, "baseline_n": len(base), "rows": rows,
            "control": control, "factor": factor, "control_discriminates": verdict}


def format_summary(s: dict) -> str:
    out = [f"baseline ({BASELINE}) val loss: mean {s['baseline_mean']:.5f} over {s['baseline_n']} seeds, "
           f"spread (max-min) {s['spread']:.5f} = {100 * s['spread'] / s['baseline_mean']:.3f}%, "
           f"std {s['std']:.5f}",
           f"{'codec':<16}{'seeds':>6}{'val':>11}{'delta':>10}{'rel %':>9}{'x spread':>10}{'x std':>8}"
           f"  inside floor  paired rel % (pairs)"]
    for r in s["rows"]:
        pr = "" if r.get("paired_rel") is None else f"  {100 * r['paired_rel']:+.3f} ({r['paired_n']})"
        out.append(f"{r['codec']:<16}{r['n']:>6}{r['mean']:>11.5f}{r['delta']:>+10.5f}{100 * r['rel']:>+9.3f}"
                   f"{r['ratio']:>10.2f}{r['sigmas']:>8.1f}  {'yes' if r['inside_floor'] else 'no ':<12}{pr}")
    v = s["control_discriminates"]
    if v is None:
        out.append(f"control {s['control']}: not run")
    else:
        ctl = next(r for r in s["rows"] if r["codec"] == s["control"])
        out.append(f"control {s['control']} degrades by >= {s['factor']:g}x the baseline spread: "
                   f"{'YES (the benchmark discriminates)' if v else 'NO (the benchmark does not discriminate)'}"
                   f" [{ctl['ratio']:.2f}x spread, {ctl['sigmas']:.1f}x std; every control run worse than every "
                   f"baseline run: {'yes' if ctl['above'] else 'no'}]")
    return "\n".join(out)


def upgrade_log(lg: dict) -> dict:
    """A run's log in today's field names, in place: logs written before the rename call
    `segments` (one record per stretch of the run between a start or resume and its stop)
    `sessions`."""
    if "sessions" in lg and "segments" not in lg:
        lg["segments"] = lg.pop("sessions")
    return lg


def load_logs(d: str) -> list:
    logs = []
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "taco-train":
            logs.append(upgrade_log(doc))
    return logs


def run_value(lg: dict, key: str = "val", at_step: int | None = None, tail: int = 1):
    """The run's val loss: the mean of its last `tail` evals at or before `at_step` (default:
    the last eval); None when the run has not reached `at_step`."""
    ev = [e for e in lg["evals"] if e.get(key) is not None and (at_step is None or e["step"] <= at_step)]
    if not ev or (at_step is not None and ev[-1]["step"] != at_step):
        return None
    return statistics.fmean(e[key] for e in ev[-tail:])


def _run_values(logs: list, key: str, finished_only: bool, at_step: int | None, tail: int) -> list:
    """(codec, seed, value) of every run that counts: with at_step, each run that reached it
    (every run of a sweep shares one LR schedule, so equal steps compare); else the finished runs."""
    out = []
    for lg in logs:
        if finished_only and at_step is None and not lg.get("finished"):
            continue
        v = run_value(lg, key, at_step, tail)
        if v is not None:
            out.append((lg["config"]["codec"], lg["config"]["seed"], v))
    return out


def finals_from_logs(logs: list, key: str = "val", finished_only: bool = True, at_step: int | None = None,
                     tail: int = 1) -> dict:
    """{codec: [value per run]}."""
    finals: dict = {}
    for codec, _, v in _run_values(logs, key, finished_only, at_step, tail):
        finals.setdefault(codec, []).append(v)
    return finals


def paired_from_logs(logs: list, key: str = "val", finished_only: bool = True, at_step: int | None = None,
                     tail: int = 1) -> dict:
    """{codec: [value - baseline value of the same seed]} for the seeds that have both."""
    vals = {(codec, seed): v for codec, seed, v in _run_values(logs, key, finished_only, at_step, tail)}
    out: dict = {}
    for (c, seed), v in vals.items():
        if c != BASELINE and (BASELINE, seed) in vals:
            out.setdefault(c, []).append(v - vals[(BASELINE, seed)])
    return out


def plot_dir(d: str, path: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = load_logs(d)
    if not logs:
        raise SystemExit(f"--plot: no taco-train JSON logs in {d}")
    path = path or os.path.join(d, "val_curves.png")
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    codecs = list(dict.fromkeys(lg["config"]["codec"] for lg in logs))
    colors = {c: plt.cm.tab10(i % 10) for i, c in enumerate(c for c in codecs if c != BASELINE)}
    seen = set()
    for lg in logs:
        c = lg["config"]["codec"]
        ev = lg["evals"]
        col = "k" if c == BASELINE else colors[c]
        lab = None if c in seen else c
        seen.add(c)
        for ax in axes:
            ax.plot([e["step"] for e in ev], [e["val"] for e in ev], color=col, lw=1.0 if c == BASELINE else 1.4,
                    alpha=0.7 if c == BASELINE else 0.9, label=lab)
    cfg = logs[0]["config"]
    axes[0].set_title(f"validation loss: {cfg['preset']}, TP={cfg['tp']}, {cfg['dtype']} ({len(logs)} runs)")
    steps = [e["step"] for lg in logs for e in lg["evals"]]
    last = max(steps) if steps else 1
    tail = [e["val"] for lg in logs for e in lg["evals"] if e["step"] >= 0.5 * last]
    axes[1].set_xlim(0.5 * last, last * 1.01)
    if tail:
        lo, hi = min(tail), max(tail)
        axes[1].set_ylim(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9))
    axes[1].set_title("second half (zoom); black: exact baseline seeds")
    for ax in axes:
        ax.set_xlabel("step")
        ax.set_ylabel("val loss (nats/byte)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def print_summary(d: str, key: str = "val", at_step: int | None = None, tail: int = 1) -> int:
    """Prints the summary tables (val and val_exact) of the logs in `d`; 1 without a noise floor."""
    logs = load_logs(d)
    what = (f"at step {at_step}" if at_step else "final") + (f", mean of the last {tail} evals" if tail > 1 else "")
    for k in (key, "val_exact"):
        finals = finals_from_logs(logs, k, at_step=at_step, tail=tail)
        if len(finals.get(BASELINE, [])) < 2:
            print(f"{d}: need >= 2 {BASELINE} runs {what} for a noise floor (have {len(finals.get(BASELINE, []))})")
            return 1
        print(f"\n[{k}] " + ("forward through the run's collective" if k == "val" else
                              "same weights, forward through the exact sum") + f"; {what}")
        print(format_summary(sweep_summary(finals, paired=paired_from_logs(logs, k, at_step=at_step, tail=tail))))
    counted = {id(lg) for lg in logs if run_value(lg, key, at_step, tail) is not None
               and (at_step is not None or lg.get("finished"))}
    left = [lg["name"] for lg in logs if id(lg) not in counted]
    if left:
        print(f"not counted ({'did not reach step %d' % at_step if at_step else 'unfinished'}): {', '.join(left)}")
    return 0

"""The training benchmark's command line: one run, a sweep (in this process or as worker
processes), and the reports. torch is imported only when something trains."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .. import options
from ..progress import Progress
from .config import (ABLATIONS, BACKENDS, BASELINE, PRESETS, all_codecs, config_argv, library_codecs, make_config,
                     run_name)
from .report import plot_dir, print_summary


def _codec(s: str) -> str:
    """--codec: the baseline, an ablation, or a library codec (the library is loaded only for those)."""
    if s == BASELINE or s in ABLATIONS:
        return s
    return options.choice(all_codecs(), "codec")(s)


def _codecs(s: str) -> list | str:
    """--codecs: "all", or a comma list of --codec values."""
    return s if s == "all" else options.one_of(all_codecs(), "codec")(s)


def add_arguments(p: argparse.ArgumentParser) -> None:
    positive, natural = options.integer(1), options.integer(0)
    p.add_argument("--preset", type=options.choice(PRESETS, "preset"), default="tiny",
                   help=f"model/data size: {', '.join(PRESETS)} (default tiny)")
    p.add_argument("--tp", type=positive, default=4, help="tensor-parallel size (default 4; 8 for the study)")
    p.add_argument("--codec", type=_codec, default=BASELINE,
                   help=f"{BASELINE}, a library codec (python -m taco info lists them), {', '.join(ABLATIONS)} "
                        f"(default {BASELINE})")
    p.add_argument("--backend", type=options.choice(BACKENDS, "backend"), default=None,
                   help="taco (GPU, libtaco loopback; default when a GPU is present), cpu-exact, cpu-ref")
    p.add_argument("--dtype", type=options.choice(("bf16", "fp32", "fp16"), "dtype"), default="bf16",
                   help="compute/communication dtype: bf16, fp32, fp16 (autocast; fp32 master weights); "
                        "fp16 uses a GradScaler")
    p.add_argument("--seed", type=natural, default=0, help="model init and data order")
    p.add_argument("--steps", type=positive, default=None, help="total steps (the LR schedule's length)")
    p.add_argument("--batch", type=positive, default=None)
    p.add_argument("--seq", type=positive, default=None)
    p.add_argument("--lr", type=options.real(0.0, strict=True), default=None)
    p.add_argument("--warmup", type=natural, default=None)
    p.add_argument("--layers", type=positive, default=None)
    p.add_argument("--d-model", dest="d_model", type=positive, default=None)
    p.add_argument("--heads", type=positive, default=None)
    p.add_argument("--mlp", type=positive, default=None)
    p.add_argument("--untied", action="store_true", help="separate output head (default: tied to the embedding)")
    p.add_argument("--weight-decay", type=options.real(0.0), default=0.1)
    p.add_argument("--clip", type=options.real(0.0), default=1.0, help="grad-norm clip (0: none)")
    p.add_argument("--corpus", type=options.choice(("stdlib", "pydoc"), "corpus"), default="stdlib",
                   help="stdlib or pydoc (default stdlib)")
    p.add_argument("--eval-every", type=positive, default=100)
    p.add_argument("--eval-batches", type=positive, default=32,
                   help="validation windows = eval_batches x batch, fixed (default 32: 8 left a seed spread of 1.3-1.7%%)")
    p.add_argument("--no-eval-exact", action="store_true", help="skip val_exact (eval through the exact sum)")
    p.add_argument("--out", default=None, metavar="DIR", help="JSON logs (and checkpoints) go here")
    p.add_argument("--checkpoint-every", type=natural, default=0, metavar="N",
                   help="save model+optimizer+scaler+RNG+step to DIR/<run>.ckpt.pt every N steps and at the end")
    p.add_argument("--resume", action="store_true", help="continue DIR/<run>.ckpt.pt when it exists")
    p.add_argument("--stop-after", type=positive, default=None, metavar="N", help="stop (and checkpoint) after N steps")
    p.add_argument("--time-limit", type=options.real(0.0, strict=True), default=None, metavar="SEC",
                   help="stop (and checkpoint) once this invocation has run SEC seconds (sweep: in total)")
    p.add_argument("--force-overflow-at", type=positive, default=None, metavar="STEP",
                   help="multiply the loss by 1e30 at STEP (fp16: the GradScaler must skip it)")
    p.add_argument("--device", default=None, help="torch device (default: cuda for taco, cpu otherwise)")
    p.add_argument("--capture", default=None, metavar="FILE.npz",
                   help="save the partials of every TP AllReduce of one training step (for "
                        "`python -m taco_bench accuracy --capture FILE.npz`)")
    p.add_argument("--capture-step", type=positive, default=None, metavar="N",
                   help="the step to capture (default: the last)")
    p.add_argument("--capture-tokens", type=positive, default=512, metavar="K",
                   help="token rows kept per tensor (default 512)")
    p.add_argument("--quiet", action="store_true",
                   help="no per-eval lines (the progress of a run), no progress line of the parallel sweep")
    options.add_common(p, quiet=False)
    g = p.add_argument_group("sweep / reports")
    g.add_argument("--sweep", action="store_true", help="baseline seeds + every codec, then the summary")
    g.add_argument("--seeds", type=options.integers(0), default=[0, 1, 2], help="sweep: baseline seeds (default 0,1,2)")
    g.add_argument("--codec-seeds", type=options.integers(0), default=None,
                   help="sweep: seeds for the codecs (default: the first baseline seed)")
    g.add_argument("--codecs", type=_codecs, default="all",
                   help="sweep: comma list (default all: the library's codecs + ablations)")
    g.add_argument("--parallel", type=positive, default=1, metavar="N",
                   help="sweep: run N trainings at once, each in its own process (on one H200, 7 small TP=8 "
                        "runs train ~3x the steps/s of one; default 1)")
    g.add_argument("--gpus", type=options.integers(0), default=None, metavar="LIST",
                   help="sweep with --parallel: spread the runs round-robin over these CUDA devices (e.g. 0,1)")
    g.add_argument("--summary", type=options.existing_dir, default=None, metavar="DIR",
                   help="print the sweep summary of the logs in DIR")
    g.add_argument("--plot", type=options.existing_dir, default=None, metavar="DIR",
                   help="PNG of the validation curves of the logs in DIR")
    g.add_argument("--at-step", dest="at_step", type=natural, default=None, metavar="N",
                   help="summary: compare the runs at step N (unfinished runs that reached it count)")
    g.add_argument("--tail", type=positive, default=1, metavar="K",
                   help="summary: average each run's last K evals (smooths eval-to-eval noise; default 1)")


def check_arguments(args, cfg: dict) -> None:
    """The checks that take more than one option (UsageError), before anything trains."""
    if cfg["heads"] % cfg["tp"] or cfg["d_model"] % cfg["heads"]:
        raise options.UsageError(f"argument --heads: {cfg['heads']} heads must be a multiple of --tp {cfg['tp']} "
                                 f"and divide --d-model {cfg['d_model']}")
    if args.capture_step is not None and args.capture_step > cfg["steps"]:
        raise options.UsageError(f"argument --capture-step: step {args.capture_step} is past --steps {cfg['steps']}")
    if not args.out:
        for flag, given in (("--resume", args.resume), ("--checkpoint-every", args.checkpoint_every),
                            ("--sweep", args.sweep)):
            if given:
                raise options.UsageError(f"argument {flag}: needs --out DIR (where the logs and checkpoints go)")
    if args.sweep and args.capture:
        raise options.UsageError("argument --capture: one run at a time (not with --sweep)")
    if not args.sweep and cfg["backend"] == "cpu-exact" and cfg["codec"] != BASELINE:
        raise options.UsageError(f"argument --codec: {cfg['codec']} compresses, and --backend cpu-exact (the default "
                                 f"without a GPU) computes the exact sum: use --backend cpu-ref")
    if args.device is not None:
        import torch

        try:
            torch.device(args.device)
        except RuntimeError as e:
            raise options.UsageError(f"argument --device: {e}") from None


def run(args) -> int:
    if args.plot:
        print(plot_dir(args.plot))
        return 0
    if args.summary:
        return print_summary(args.summary, at_step=args.at_step, tail=args.tail)
    if args.backend is None:
        try:
            import torch

            args.backend = "taco" if torch.cuda.is_available() else "cpu-exact"
        except ImportError:
            args.backend = "cpu-exact"
    check_arguments(args, make_config(args))
    common = dict(eval_every=args.eval_every, checkpoint_every=args.checkpoint_every, resume=args.resume,
                  stop_after=args.stop_after, force_overflow_at=args.force_overflow_at,
                  eval_exact=not args.no_eval_exact, quiet=args.quiet, device=args.device)
    from .loop import train  # imports torch

    if not args.sweep:
        cfg = make_config(args)
        train(cfg, args.out, time_limit=args.time_limit, capture=args.capture, capture_step=args.capture_step,
              capture_tokens=args.capture_tokens, **common)
        return 0
    seeds = args.seeds
    cseeds = args.codec_seeds or seeds[:1]
    codecs = library_codecs() + ABLATIONS if args.codecs == "all" else args.codecs
    plan = [(BASELINE, s) for s in seeds] + [(c, s) for c in codecs if c != BASELINE for s in cseeds]
    if args.parallel > 1 or args.gpus:
        return _parallel_sweep(args, plan)
    t0 = time.time()
    for cfg in _pending_runs(args, plan):
        left = None if args.time_limit is None else args.time_limit - (time.time() - t0)
        if left is not None and left <= 0:
            print("sweep: time limit reached; rerun the same command with --resume to continue")
            return 3
        lg = train(cfg, args.out, time_limit=left, **dict(common, resume=True,
                                                          checkpoint_every=args.checkpoint_every or 500))
        if not lg["finished"]:
            print("sweep: time limit reached; rerun the same command to continue")
            return 3
    return print_summary(args.out)


def _sweep_config(args, codec: str, seed: int) -> dict:
    a = argparse.Namespace(**vars(args))
    a.codec, a.seed = codec, seed
    if args.backend == "cpu-exact" and codec != BASELINE:
        a.backend = "cpu-ref"
    return make_config(a)


def _pending_runs(args, plan: list) -> list:
    """The configs of the sweep's runs that have not finished (the finished ones are reported)."""
    todo = []
    for codec, seed in plan:
        cfg = _sweep_config(args, codec, seed)
        if _finished(os.path.join(args.out, run_name(cfg) + ".json")):
            print(f"{run_name(cfg)}: finished earlier, skipped")
            continue
        todo.append(cfg)
    return todo


def _parallel_sweep(args, plan: list) -> int:
    """The sweep's runs as worker processes (`python -m taco_bench train` with the run's own
    arguments, --resume, checkpointing), `--parallel` at a time, round-robin over `--gpus`;
    then the summary. Each worker's output goes to DIR/<run>.log; a progress line counts the
    finished runs on a terminal."""
    import subprocess

    gpus = [str(g) for g in args.gpus or []]
    todo = _pending_runs(args, plan)
    os.makedirs(args.out, exist_ok=True)
    t0, running, failed, k = time.time(), [], [], 0
    with Progress("train sweep", len(todo), "runs finished", quiet=args.quiet) as bar:
        while todo or running:
            while todo and len(running) < args.parallel:
                cfg = todo.pop(0)
                argv = [sys.executable, "-m", "taco_bench", "train", *config_argv(cfg), "--out", args.out, "--resume",
                        "--quiet", "--eval-every", str(args.eval_every),
                        "--checkpoint-every", str(args.checkpoint_every or 500)]
                if args.no_eval_exact:
                    argv.append("--no-eval-exact")
                if args.time_limit is not None:
                    argv += ["--time-limit", repr(max(1.0, args.time_limit - (time.time() - t0)))]
                env = dict(os.environ)
                if gpus:
                    env["CUDA_VISIBLE_DEVICES"] = gpus[k % len(gpus)]
                k += 1
                logf = open(os.path.join(args.out, run_name(cfg) + ".log"), "w")
                running.append((subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env), logf, cfg))
                bar.print(f"started {run_name(cfg)}" + (f" on GPU {env['CUDA_VISIBLE_DEVICES']}" if gpus else ""))
            time.sleep(0.2)
            bar.update(f"{len(running)} running")
            for job in list(running):
                proc, logf, cfg = job
                if proc.poll() is None:
                    continue
                running.remove(job)
                logf.close()
                bar.step()
                if proc.returncode != 0:
                    failed.append(run_name(cfg))
                    bar.print(f"{run_name(cfg)}: exit code {proc.returncode} (see {logf.name})")
    if failed:
        print(f"sweep: {len(failed)} run(s) failed: {', '.join(failed)}")
        return 1
    unfinished = [run_name(c) for c in (_sweep_config(args, c, s) for c, s in plan)
                  if not _finished(os.path.join(args.out, run_name(c) + ".json"))]
    if unfinished:
        print(f"sweep: time limit reached ({len(unfinished)} unfinished); rerun the same command to continue")
        return 3
    return print_summary(args.out)


def _finished(path: str) -> bool:
    try:
        with open(path) as f:
            return bool(json.load(f).get("finished"))
    except (OSError, ValueError):
        return False


def main(argv=None, prog: str = "python -m taco_bench train") -> int:
    from . import __doc__ as doc

    p = options.Parser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return options.run_command(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())


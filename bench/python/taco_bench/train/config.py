"""The training benchmark's configuration: presets, codec lists, backends, run names and
the learning-rate schedule (pure Python)."""

from __future__ import annotations

import math

from ..ablations import ABLATIONS

BASELINE = "exact"  # libtaco's codec none on the taco backend
CONTROL = "int4-block"
BACKENDS = ("taco", "cpu-exact", "cpu-ref")

# layers, d_model, heads, mlp hidden, seq, batch, lr, warmup, steps
PRESETS = {
    "tiny": dict(layers=4, d_model=128, heads=8, mlp=512, seq=64, batch=8, lr=3e-3, warmup=20, steps=200),
    "small": dict(layers=6, d_model=512, heads=8, mlp=2048, seq=256, batch=32, lr=1e-3, warmup=200, steps=3000),
    "base": dict(layers=12, d_model=768, heads=16, mlp=3072, seq=512, batch=32, lr=6e-4, warmup=500, steps=5000),
}
VOCAB = 256  # byte-level


def library_codecs() -> list[str]:
    """The library's compressing codecs (taco.codecs() without none) in id order, the order of
    the sweep and its reports (the library is loaded here, not on import)."""
    import taco

    return [c for c in taco.codecs() if c != "none"]


def all_codecs() -> list[str]:
    """Every --codec: the baseline, the library's codecs, the ablations."""
    return [BASELINE] + library_codecs() + ABLATIONS


CORE_KEYS = ("preset", "layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps", "tp",
             "codec", "backend", "dtype", "seed", "tied", "corpus", "weight_decay", "clip", "eval_batches")


def make_config(args) -> dict:
    if args.preset not in PRESETS:
        raise SystemExit(f"--preset: unknown preset {args.preset!r} ({', '.join(PRESETS)})")
    cfg = dict(PRESETS[args.preset])
    for k in ("layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps"):
        v = getattr(args, k, None)
        if v is not None:
            cfg[k] = v
    cfg.update(preset=args.preset, tp=args.tp, codec=args.codec, backend=args.backend, dtype=args.dtype,
               seed=args.seed, tied=not args.untied, corpus=args.corpus, weight_decay=args.weight_decay,
               clip=args.clip, eval_batches=args.eval_batches)
    if cfg["codec"] not in [BASELINE] + ABLATIONS and cfg["codec"] not in library_codecs():
        raise SystemExit(f"--codec: unknown codec {cfg['codec']!r} ({', '.join(all_codecs())})")
    if cfg["backend"] not in BACKENDS:
        raise SystemExit(f"--backend: {cfg['backend']!r} is not one of {', '.join(BACKENDS)}")
    return cfg


def config_argv(cfg: dict) -> list:
    """Command-line arguments that make_config turns back into `cfg` (for the sweep's workers)."""
    argv = ["--preset", cfg["preset"], "--tp", str(cfg["tp"]), "--codec", cfg["codec"], "--backend", cfg["backend"],
            "--dtype", cfg["dtype"], "--seed", str(cfg["seed"]), "--corpus", cfg["corpus"],
            "--weight-decay", repr(cfg["weight_decay"]), "--clip", repr(cfg["clip"]),
            "--eval-batches", str(cfg["eval_batches"])]
    for k in ("layers", "d_model", "heads", "mlp", "seq", "batch", "lr", "warmup", "steps"):
        argv += ["--" + k.replace("_", "-"), repr(cfg[k])]
    return argv + ([] if cfg["tied"] else ["--untied"])


def run_name(cfg: dict) -> str:
    return f"{cfg['preset']}-tp{cfg['tp']}-{cfg['dtype']}-{cfg['backend']}-{cfg['codec']}-s{cfg['seed']}"


def lr_at(cfg: dict, step: int) -> float:
    """Linear warmup to lr, then cosine to lr/10 at `steps` (step counts from 1)."""
    lr, w, n = cfg["lr"], cfg["warmup"], cfg["steps"]
    if step <= w:
        return lr * step / max(1, w)
    t = min(1.0, (step - w) / max(1, n - w))
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


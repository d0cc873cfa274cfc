"""One training run of the benchmark: model, optimizer, data, evals, checkpoints, and the
capture of one step's TP partials."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

from .collectives import make_tp, rank_order_sum
from .config import CORE_KEYS, lr_at, run_name
from .data import batch_offsets, get_corpus, val_offsets
from .model import GPT
from .report import upgrade_log

CKPT_VERSION = 1


def capture_sites(cfg: dict) -> list:
    """(name, direction) of the TP AllReduces of one training step, in call order: forward,
    each layer's attention output and MLP down projections (row-parallel partial outputs);
    backward, from the last layer down, its MLP up and QKV input gradients (column-parallel)."""
    L = cfg["layers"]
    fwd = [(f"L{i}.{n}", "forward") for i in range(L) for n in ("attn_out", "mlp_down")]
    bwd = [(f"L{i}.{n}", "backward") for i in reversed(range(L)) for n in ("mlp_up", "qkv")]
    return fwd + bwd


def save_capture(path: str, recorded: list, cfg: dict, step: int, tokens: int, dtype: str) -> None:
    """Writes the partials of one step's TP AllReduces as float32 arrays (P, rows, features),
    `tokens` token rows sampled once (the same rows at every site) to bound the file size."""
    sites = capture_sites(cfg)
    if len(recorded) != len(sites):
        raise RuntimeError(f"captured {len(recorded)} AllReduces, expected {len(sites)} for {cfg['layers']} layers")
    rows_total = recorded[0][0].shape[0]
    rows = np.sort(np.random.default_rng([int(cfg["seed"]), step, 0xCA]).choice(
        rows_total, size=min(tokens, rows_total), replace=False))
    arrays = {f"site{k}": np.stack([p[rows] for p in parts]) for k, parts in enumerate(recorded)}
    meta = {"kind": "taco-capture", "config": cfg, "step": step, "dtype": dtype, "rows": int(len(rows)),
            "rows_total": int(rows_total), "sites": [{"name": n, "direction": d} for n, d in sites]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def train(cfg: dict, out: str | None = None, *, eval_every: int = 100, checkpoint_every: int = 0,
          resume: bool = False, stop_after: int | None = None, time_limit: float | None = None,
          force_overflow_at: int | None = None, eval_exact: bool = True, quiet: bool = False,
          device: str | None = None, capture: str | None = None, capture_step: int | None = None,
          capture_tokens: int = 512) -> dict:
    """One run; returns its log (also written to out/<run>.json when `out`). With `capture`,
    the P partial tensors of every TP AllReduce of training step `capture_step` (default:
    the last step) are saved there (save_capture) for `python -m taco accuracy --source capture`."""
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    name = run_name(cfg)
    if device is None:
        device = "cuda" if cfg["backend"] == "taco" else "cpu"
    dev = torch.device(device)
    if cfg["backend"] == "taco" and dev.type != "cuda":
        raise SystemExit("--backend taco needs a CUDA GPU (use --backend cpu-exact / cpu-ref on the CPU)")
    if dev.type == "cuda":
        torch.cuda.set_device(dev.index or 0)
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 runs are fp32
        torch.backends.cudnn.allow_tf32 = False
    corpus = get_corpus(cfg["corpus"])
    P = cfg["tp"]
    tp, close_tp, note = make_tp(cfg["backend"], cfg["codec"], P)
    exact_red = rank_order_sum
    model = GPT(cfg, tp, dev, cfg["seed"])
    cdt = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    model.set_compute_dtype(cdt)
    decay = [p for n_, p in model.named_parameters() if p.dim() >= 2 and "wpe" not in n_]
    no_decay = [p for n_, p in model.named_parameters() if not (p.dim() >= 2 and "wpe" not in n_)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg["lr"], betas=(0.9, 0.95), eps=1e-8)
    scaler = torch.amp.GradScaler(dev.type, enabled=cfg["dtype"] == "fp16")
    if cfg["dtype"] == "fp16":
        tp.watch = True
    data_tr = torch.from_numpy(corpus.train.astype(np.int64)).to(dev)
    data_va = torch.from_numpy(corpus.val.astype(np.int64)).to(dev)
    S, B = cfg["seq"], cfg["batch"]
    ar = torch.arange(S + 1, device=dev)

    def windows(data, offs):
        idx = torch.from_numpy(np.asarray(offs, np.int64)).to(dev)[:, None] + ar[None, :]
        w = data[idx]
        return w[:, :-1], w[:, 1:]

    vo = val_offsets(corpus.val.size, S, cfg["eval_batches"] * B)

    def autocast():
        if cdt is None:
            return torch.autocast(dev.type, enabled=False)
        return torch.autocast(dev.type, dtype=cdt)

    @torch.no_grad()
    def evaluate(reduce=None):
        saved = tp.reduce
        if reduce is not None:
            tp.reduce = reduce
        try:
            tot = torch.zeros((), dtype=torch.float64, device=dev)
            for i in range(cfg["eval_batches"]):
                x, y = windows(data_va, vo[i * B:(i + 1) * B])
                with autocast():
                    tot += model(x, y).double()
            return float(tot / cfg["eval_batches"])
        finally:
            tp.reduce = saved

    nparams = sum(p.numel() for p in model.parameters())
    log = {"kind": "taco-train", "name": name, "config": cfg, "params": nparams,
           "params_nonembedding": nparams - model.wte.weight.numel() - model.wpe.weight.numel(),
           "corpus": corpus.info(), "collective": tp.name, "emulated": note == "emulated",
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "torch": torch.__version__, "train": [], "evals": [], "skipped_steps": [], "overflow_checks": [],
           "grad_norm": [], "segments": [], "finished": False}
    step = 0
    ckpt = os.path.join(out, name + ".ckpt.pt") if out else None
    if resume and ckpt and os.path.exists(ckpt):
        st = torch.load(ckpt, map_location=dev, weights_only=False)
        if st.get("version") != CKPT_VERSION:
            raise SystemExit(f"{ckpt}: checkpoint version {st.get('version')} != {CKPT_VERSION}")
        diff = {k: (st["config"].get(k), cfg.get(k)) for k in CORE_KEYS if st["config"].get(k) != cfg.get(k)}
        if diff:
            raise SystemExit(f"--resume: {ckpt} was written with a different configuration: {diff}")
        if st["log"]["corpus"]["sha256"] != corpus.sha256:
            raise SystemExit(f"--resume: corpus differs from the checkpoint's ({st['log']['corpus']} vs "
                             f"{corpus.info()}): a different Python stdlib? resume on the same machine image")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["optimizer"])
        scaler.load_state_dict(st["scaler"])
        # map_location moved every tensor to `dev`; RNG states must be CPU ByteTensors
        torch.set_rng_state(st["rng_cpu"].cpu())
        if dev.type == "cuda" and st.get("rng_cuda") is not None:
            torch.cuda.set_rng_state(st["rng_cuda"].cpu(), dev)
        step, log = st["step"], upgrade_log(st["log"])
        if st["data_position"] != step:
            raise SystemExit(f"{ckpt}: data position {st['data_position']} != step {step}")
        say(f"resumed {name} at step {step} from {ckpt}")

    def save_log():
        if out:
            tmp = os.path.join(out, name + ".json.tmp")
            with open(tmp, "w") as f:
                json.dump(log, f, indent=1)
            os.replace(tmp, os.path.join(out, name + ".json"))

    def save_ckpt():
        if not ckpt:
            return
        st = {"version": CKPT_VERSION, "config": cfg, "step": step, "data_position": step,
              "model": model.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
              "rng_cpu": torch.get_rng_state(),
              "rng_cuda": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None, "log": log}
        torch.save(st, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    if out:
        os.makedirs(out, exist_ok=True)
    say(f"{name}: {nparams / 1e6:.2f}M parameters ({log['params_nonembedding'] / 1e6:.2f}M non-embedding), "
        f"{cfg['layers']} layers, d={cfg['d_model']}, {cfg['heads']} heads, TP={P}, {cfg['dtype']}, "
        f"{B}x{S} tokens/step; collective: {tp.name}; corpus {corpus.name} "
        f"{corpus.train.size / 1e6:.2f} MB train / {corpus.val.size / 1e6:.2f} MB val")
    t_segment, start_step = time.time(), step
    pending = []  # device losses not yet read
    last_flush_t, last_flush_step = time.time(), step

    def flush():
        nonlocal pending, last_flush_t, last_flush_step
        if pending:
            vals = torch.stack([p[1] for p in pending]).tolist()
            gn = torch.stack([p[2] for p in pending]).tolist()
            log["train"] += [[s, v] for (s, _, _), v in zip(pending, vals)]
            log["grad_norm"] += [[s, v] for (s, _, _), v in zip(pending, gn)]
            pending = []
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        now = time.time()
        ms = 1000 * (now - last_flush_t) / max(1, step - last_flush_step)
        last_flush_t, last_flush_step = now, step
        return ms

    if step == 0 and not log["evals"]:
        v0 = evaluate()
        log["evals"].append({"step": 0, "val": v0, "val_exact": evaluate(exact_red) if eval_exact else None})
        say(f"step {0:6d}  val {v0:.4f}")
    stopped = "finished"
    while step < cfg["steps"]:
        step += 1
        for gp in opt.param_groups:
            gp["lr"] = lr_at(cfg, step)
        x, y = windows(data_tr, batch_offsets(corpus.train.size, S, B, cfg["seed"], step))
        c0, e0 = tp.calls, tp.elements
        capturing = capture is not None and step == (capture_step or cfg["steps"])
        if capturing:
            recorded, plain_reduce = [], tp.reduce

            def recording_reduce(tensors, outs):
                recorded.append([t.detach().float().cpu().numpy().reshape(-1, t.shape[-1]) for t in tensors])
                plain_reduce(tensors, outs)

            tp.reduce = recording_reduce
        with autocast():
            loss = model(x, y)
        forced = force_overflow_at is not None and step == force_overflow_at
        lb = loss * 1e30 if forced else loss
        if forced:
            before = [p.detach().clone() for p in model.parameters()]
            scale_before = scaler.get_scale() if scaler.is_enabled() else None
            tp.watch = True
            tp.read_nonfinite()
        opt.zero_grad(set_to_none=True)
        scaler.scale(lb).backward()
        scaler.unscale_(opt)
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"] if cfg["clip"] > 0 else float("inf"))
        if scaler.is_enabled():
            sc = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            if scaler.get_scale() < sc:
                log["skipped_steps"].append(step)
        else:
            if not forced or torch.isfinite(gnorm):
                opt.step()
        if capturing:
            tp.reduce = plain_reduce
            save_capture(capture, recorded, cfg, step, capture_tokens, str(cdt or "torch.float32"))
            say(f"step {step:6d}  captured the partials of {len(recorded)} TP AllReduces -> {capture}")
        if "allreduce_per_step" not in log:
            log["allreduce_per_step"] = {"calls": tp.calls - c0, "elements": tp.elements - e0,
                                         "bytes_uncompressed": (tp.elements - e0) * (4 if cdt is None else 2)}
        pending.append((step, loss.detach().float(), gnorm.detach().float()))
        if forced:
            nf = tp.read_nonfinite()
            tp.watch = cfg["dtype"] == "fp16"
            unchanged = all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
            rec = dict(step=step, **nf, grad_norm=float(gnorm), scale_before=scale_before,
                       scale_after=scaler.get_scale() if scaler.is_enabled() else None,
                       skipped=step in log["skipped_steps"] or (not scaler.is_enabled() and unchanged),
                       params_unchanged=unchanged, codec=cfg["codec"])
            rec["propagated"] = rec["calls_nonfinite_in"] > 0 and rec["calls_nonfinite_lost"] == 0
            log["overflow_checks"].append(rec)
            say(f"step {step:6d}  forced overflow (loss x 1e30): {nf['calls_nonfinite_in']} TP AllReduce calls had "
                f"non-finite inputs, {nf['calls_nonfinite_out']} non-finite outputs, {nf['calls_nonfinite_lost']} "
                f"lost them (non-finite in, finite out) through {cfg['codec']}; grad norm {rec['grad_norm']}; "
                f"scaler {scale_before} -> {rec['scale_after']}; step "
                f"{'SKIPPED' if rec['skipped'] else 'TAKEN'}, parameters {'unchanged' if unchanged else 'CHANGED'}")
        elif scaler.is_enabled() and tp.nf is not None and step % 50 == 0:
            tp.read_nonfinite()  # keep the counters bounded; overflow steps are in skipped_steps
        done = step == cfg["steps"]
        timeout = time_limit is not None and time.time() - t_segment > time_limit
        halt = done or timeout or (stop_after is not None and step - start_step >= stop_after)
        if step % eval_every == 0 or halt:
            ms = flush()
            v = evaluate()
            ve = evaluate(exact_red) if eval_exact else None
            log["evals"].append({"step": step, "val": v, "val_exact": ve, "ms_per_step": ms,
                                 "train": log["train"][-1][1]})
            say(f"step {step:6d}  train {log['train'][-1][1]:.4f}  val {v:.4f}"
                + (f"  val_exact {ve:.4f}" if ve is not None else "") + f"  {ms:.1f} ms/step")
            save_log()
        if checkpoint_every and (step % checkpoint_every == 0 or halt):
            flush()
            save_ckpt()
        if halt:
            stopped = "finished" if done else ("time limit" if timeout else "stop-after")
            break
    flush()
    log["finished"] = step >= cfg["steps"]
    log["segments"].append({"from_step": start_step, "to_step": step, "seconds": round(time.time() - t_segment, 1),
                            "stopped": stopped})
    save_log()
    if ckpt and (checkpoint_every or resume or not log["finished"]):
        save_ckpt()
    close_tp()
    say(f"{name}: {stopped} at step {step}" + (f" (checkpoint {ckpt})" if ckpt and os.path.exists(ckpt) else ""))
    return log


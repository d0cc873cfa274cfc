"""python -m taco train (taco_bench.train): a tensor-parallel training benchmark that
tells codecs apart.

A GPT-style decoder (pre-LN, causal attention, GELU MLP, learned positions, tied
byte embeddings) built from taco.torch's TP layers: per block, the attention QKV and
the MLP up-projection are ColumnParallelLinear (their input gradient is AllReduced
in backward), the attention output and the MLP down-projection are RowParallelLinear
(their partial outputs are AllReduced in forward); heads are split across TP ranks.
So every block issues 4 TP AllReduces per step (2 forward, 2 backward).

Backends (what sums the TP partials):
  taco       libtaco's compressed AllReduce on the loopback transport: the P TP ranks
             run on this one GPU (taco.torch.TPGroup.loopback, fallback_bytes=0 so
             every message is compressed). The real code path. Codec `exact` = libtaco's
             codec none (the plain loopback kernel: fp32 sum in rank order).
  cpu-exact  the exact sum on the CPU (fp64 sum of the P partials rounded to the dtype);
             no libtaco. Codec must be `exact`.
  cpu-ref    taco.reference.allreduce(parts, codec) on the CPU: the numpy model of the
             two-shot AllReduce, bit-exact with the GPU library. Slow; for tiny runs.

Codecs: `exact` (codec none), every library codec (taco.codecs(), in id order), and two
ablations of the paper that are not library codecs: pt-fp8 (per-tensor FP8 E4M3 scale) and
rot-pt-fp8 (Walsh-Hadamard rotation per 256-block, one scale per tensor). On cpu-ref these
are taco_bench.ablations' numpy models; on the taco backend they are torch emulations (not
libtaco) of the same two-shot scheme, flagged `emulated` in the log.

Data: bytes of real text available offline: Python's help topics (pydoc_data.topics)
then the stdlib's own .py/.txt files (sorted paths), one document each; every 20th
document is held out for validation. `--corpus pydoc` uses the help topics only.
Batches are drawn at random offsets from a generator seeded by (seed, step): the data
position is the step number, so checkpoint/resume is exact.

Logged (--out DIR, one DIR/<run>.json per run, rewritten at every eval): per-step train
loss, val loss at every eval (`val`: forward through the run's collective, as a
compressed TP deployment sees it; `val_exact`: the same weights through the exact
sum, which isolates what compression did to training), grad norm, skipped (fp16
overflow) steps, AllReduce calls/elements per step, ms/step.

    python -m taco train --preset small --tp 8 --codec taco --steps 3000 --out runs/
    python -m taco train --sweep --preset small --tp 8 --seeds 0,1,2 --out runs/
    python -m taco train --summary runs/          # the sweep table from the JSON logs
    python -m taco train --plot runs/             # runs/val_curves.png (needs matplotlib)
    python -m taco train --preset tiny --backend cpu-ref --codec taco --steps 20

Modules: config (presets, codec lists, run names), data (the byte corpus and batch
offsets), model (the GPT), collectives (the TP groups that sum the partials), loop (one
training run), report (sweep summaries and plots), cli (arguments, sweeps). Only model,
collectives and loop import torch; the CLI's --summary and --plot work without it.
"""

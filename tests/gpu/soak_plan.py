"""The plan and the model of the collectives soak (tests/gpu/test_soak.py), in plain Python and
numpy: no library, no GPU. The plan is a list of calls drawn from a fixed seed; `buffers` says
which slices of each rank's pools a call reads and writes (any sliceable 1-D arrays: torch tensors
on the GPU, numpy arrays in a check without one); `model` is what each rank must hold after the
call, from taco.reference (docs/collectives.md).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from taco import reference as ref

OPS = ("allreduce", "reduce_scatter", "allgather", "alltoall")
OP_WEIGHTS = (0.4, 0.2, 0.2, 0.2)  # AllReduce has six algorithms to cover, the others none
ALGOS = ("auto", "plain", "staged", "fused", "oneshot", "oneshot-raw")  # taco.comm.ALGOS
DTYPES = ("float32", "float16", "bfloat16")

MAX_ELEMS = 1 << 22  # the largest buffer of a call (x or out), about: 16 MiB of fp32 per rank
OFFSET_SPAN = 1 << 12  # buffers start anywhere in the first OFFSET_SPAN elements of a pool
POOL_ELEMS = MAX_ELEMS + OFFSET_SPAN + 64  # every rank's pool; 64: the P - 1 a rounded-up split adds


@dataclasses.dataclass(frozen=True)
class Call:
    index: int
    world: int  # index into the soak's worlds (one loopback size, one stream each)
    op: str  # one of OPS
    codec: str
    algo: str  # the communicator's config algo (AllReduce runs it; the others ignore it)
    dtype: str  # one of DTYPES
    n: int  # AllReduce count, ReduceScatter recvcount, AllGather sendcount, AlltoAll count per peer
    inplace: bool
    src_off: int  # where every rank's input starts in its source pool
    dst_off: int  # where its output starts in its output pool (in place: in its work pool)
    sampled: bool  # compared with the model bit for bit

    def describe(self, P: int) -> str:
        return (f"call {self.index} (world {self.world}, P = {P}): {self.op} codec={self.codec} algo={self.algo} "
                f"dtype={self.dtype} n={self.n} {'in place' if self.inplace else 'out of place'} "
                f"src_off={self.src_off} dst_off={self.dst_off}")


def block_of(codec: str) -> int:
    """The plan's granule: the codec's block, or 256 elements for codecs without blocks."""
    return ref.codec_params(codec)["block"] or ref.PLAIN_GRANULE


def unavailable(op: str, codec: str, algo: str) -> bool:
    """Whether the library must refuse the call (InvalidUsageError): a forced AllReduce algorithm
    the codec cannot run (docs/collectives.md): the staged two-shot, fused and one-shot compress
    (not codec none); fused and one-shot run the block codecs only (not bf16). The loopback worlds
    of the soak have peer memory, so everything else runs."""
    if op != "allreduce":
        return False
    params = ref.codec_params(codec)
    if params["id"] == 0:
        return algo in ("staged", "fused", "oneshot")
    if not params["block"]:
        return algo in ("fused", "oneshot")
    return False


def in_len(op: str, n: int, P: int) -> int:
    return n if op in ("allreduce", "allgather") else P * n


def out_len(op: str, n: int, P: int) -> int:
    return n if op in ("allreduce", "reduce_scatter") else P * n


def _log_uniform(rng, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, math.floor(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))))


def _total(rng, P: int, B: int) -> int:
    """Elements of a call's larger buffer: log-uniform in [1, MAX_ELEMS], so most are small and
    a few are large; a fifth whole multiples of P*B (every shard whole blocks), a tenth one off."""
    u = rng.random()
    if u < 0.3:
        total = _log_uniform(rng, 1, MAX_ELEMS // (P * B)) * P * B
        if u >= 0.2:
            total += 1 if rng.random() < 0.5 else -1
        return total
    return _log_uniform(rng, 1, MAX_ELEMS)


def _offset(rng) -> int:
    off = int(rng.integers(0, OFFSET_SPAN))
    return off - off % 256 if rng.random() < 0.5 else off  # half at 256-element boundaries, half anywhere


def make_plan(calls: int, seed: int, world_sizes, codecs, sample_every: int = 50) -> list:
    """`calls` random calls over the worlds (sizes P), codecs, algorithms and dtypes; about one
    in `sample_every` is sampled for the model."""
    rng = np.random.default_rng(seed)
    plan = []
    for i in range(calls):
        w = int(rng.integers(len(world_sizes)))
        P = world_sizes[w]
        op = OPS[int(rng.choice(len(OPS), p=OP_WEIGHTS))]
        codec = codecs[int(rng.integers(len(codecs)))]
        algo = ALGOS[int(rng.integers(len(ALGOS)))]
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        total = _total(rng, P, block_of(codec))
        n = total if op == "allreduce" else -(-total // P)
        inplace = bool(rng.random() < 0.5)
        src_off, dst_off = _offset(rng), _offset(rng)
        sampled = bool(rng.random() < 1.0 / sample_every)
        call = Call(i, w, op, codec, algo, dtype, n, inplace, src_off, dst_off, sampled)
        assert src_off + in_len(op, n, P) <= POOL_ELEMS and dst_off + out_len(op, n, P) <= POOL_ELEMS, call
        plan.append(call)
    return plan


def buffers(call: Call, P: int, src, dst, work):
    """(ins, xs, outs) of a call: rank r's input ins[r] (a slice of its read-only pool src[r]),
    the buffer it passes xs[r] and its output outs[r]. Out of place xs[r] is ins[r] and outs[r] a
    slice of dst[r]; in place both lie in work[r] by NCCL's conventions, and the caller copies
    ins[r] to xs[r] first."""
    a, d, n, op = call.src_off, call.dst_off, call.n, call.op
    ln_in, ln_out = in_len(op, n, P), out_len(op, n, P)
    ins = [src[r][a:a + ln_in] for r in range(P)]
    if not call.inplace:
        return ins, ins, [dst[r][d:d + ln_out] for r in range(P)]
    if op == "allgather":  # sendbuff = recvbuff + r*sendcount
        outs = [work[r][d:d + ln_out] for r in range(P)]
        return ins, [outs[r][r * n:(r + 1) * n] for r in range(P)], outs
    xs = [work[r][d:d + ln_in] for r in range(P)]
    if op == "reduce_scatter":  # recvbuff = sendbuff + r*recvcount
        return ins, xs, [xs[r][r * n:(r + 1) * n] for r in range(P)]
    return ins, xs, xs  # AllReduce, AlltoAll: recvbuff = sendbuff


def model_algo(ran: str) -> str:
    """taco.reference's name for the AllReduce algorithm that ran: staged and fused are the same
    bits (the two-shot); plain is the transport's sum, as the uncompressed one-shot computes it."""
    return {"staged": "twoshot", "fused": "twoshot", "oneshot": "oneshot", "oneshot-raw": "oneshot-raw",
            "plain": "oneshot-raw"}[ran]


def model(call: Call, parts, config: dict, ran: str | None = None) -> list:
    """What each rank's output holds after `call`, from its inputs `parts` (numpy, one per rank)
    on a communicator with resolved `config` (Communicator.config); `ran`: the AllReduce
    algorithm that ran (Communicator.allreduce_algo; AllReduce only)."""
    P, codec = len(parts), call.codec
    kw = dict(chunk_bytes=config["chunk_bytes"], fallback_bytes=config["fallback_bytes"])
    if call.op == "allreduce":
        # The algorithm decided the path (auto: fallback_bytes included), so the model does not apply it again.
        return ref.allreduce_ranks(parts, codec, chunk_bytes=kw["chunk_bytes"], algo=model_algo(ran))
    if call.op == "reduce_scatter":
        return ref.reduce_scatter(parts, codec, **kw)
    if call.op == "allgather":
        out = ref.allgather(parts, codec, **kw)
        return [out] * P
    return ref.alltoall(parts, codec, **kw)

"""Soak: 10,000 back-to-back collectives on two loopback worlds (P = 4 and P = 3) driven on two
CUDA streams at once, their groups interleaved. Every call draws (fixed seed, soak_plan.py) its
collective, codec (every registry codec), AllReduce algorithm (every one: a forced algorithm the
codec cannot run must raise InvalidUsageError), dtype, size (1 element to 4 Mi, log-uniform;
some whole multiples of P*block, some one off), in or out of place, and where its buffers start
in preallocated pools. About one call in 50 is compared with the numpy model on every rank, bit
for bit (NaN equal to NaN); the others must run without an error. The streams are synchronised
every 100 calls and the communicators' asynchronous errors read, so a failure surfaces near its
cause; at the end device memory must be where it was after the warm-up (no leak per call).
The memory check reads the whole GPU's free memory (CUDA has no per-process figure): run this
file with the GPU to itself. Beside other test processes it reads their allocations as a leak.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu -s tests/gpu/test_soak.py
TACO_SOAK_CALLS (default 10000) sets the number of calls, TACO_SOAK_SEED the seed,
TACO_SOAK_SYNC_EVERY (default 100) how often the streams are synchronised (1 pins a device
fault to its call).
"""
import os
import time
from collections import Counter

import pytest
from taco.errors import InvalidUsageError

from soak_plan import ALGOS, DTYPES, OPS, POOL_ELEMS, Call, buffers, make_plan, model, unavailable
from loopback_world import assert_same, taco, to_host, torch  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

CALLS = int(os.environ.get("TACO_SOAK_CALLS", "10000"))
SEED = int(os.environ.get("TACO_SOAK_SEED", "20250607"))
SYNC_EVERY = max(1, int(os.environ.get("TACO_SOAK_SYNC_EVERY", "100")))
SAMPLE_EVERY = 50
WORLDS = ((4, 1 << 20), (3, 4 << 20))  # (P, chunk_bytes): large calls run several chunks
AUTO_FALLBACK = 64 << 10  # auto: below this uncompressed (one-shot raw), above it compressed
MEMORY_SLACK = 64 << 20  # free device memory may drop this much from the warm-up to the end
SENTINEL = -12345.0  # fills sampled outputs first, so an element never written shows


class World:
    """One loopback size on its own stream, with every rank's pools: src (random inputs, one per
    dtype, never written), dst (outputs out of place) and work (in place), as fp32 storage that
    16-bit dtypes view."""

    def __init__(self, torch, index, P, chunk_bytes, seed):
        self.index, self.P, self.chunk_bytes = index, P, chunk_bytes
        self.stream = torch.cuda.Stream()
        tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.src = {d: [] for d in DTYPES}
        for _ in range(P):
            base = random_pool(torch, gen)
            for d in DTYPES:
                self.src[d].append(base.to(tdt[d]))
        dst = [torch.empty(POOL_ELEMS, device="cuda") for _ in range(P)]
        work = [torch.empty(POOL_ELEMS, device="cuda") for _ in range(P)]
        self.dst = {d: [b.view(tdt[d]) for b in dst] for d in DTYPES}
        self.work = {d: [b.view(tdt[d]) for b in work] for d in DTYPES}
        self.comm_sets = {}

    def comms(self, taco, codec, algo):
        """The world's communicators for (codec, algo), created on first use and kept."""
        key = (codec, algo)
        if key not in self.comm_sets:
            comms = taco.comm.loopback(self.P, codec=codec, algo=algo, chunk_bytes=self.chunk_bytes,
                                       fallback_bytes=AUTO_FALLBACK if algo == "auto" else 0)
            self.comm_sets[key] = (comms, comms[0].config)
        return self.comm_sets[key]

    def close(self):
        for comms, _ in self.comm_sets.values():
            for c in comms:
                c.close()


def random_pool(torch, gen):
    """fp32: normal values scaled by 10^[-3, 3] per 1024 elements (every range of block scales,
    fp16 subnormals), one all-zero stretch, and a NaN, +Inf and -Inf (they propagate)."""
    seg = 1024
    x = torch.randn(POOL_ELEMS, device="cuda", generator=gen)
    exponent = torch.rand(-(-POOL_ELEMS // seg), device="cuda", generator=gen) * 6 - 3
    x *= torch.pow(10.0, exponent).repeat_interleave(seg)[:POOL_ELEMS]
    zero = int(torch.randint(POOL_ELEMS // seg, (1,), generator=gen, device="cuda")) * seg
    x[zero:zero + seg] = 0
    spots = torch.randint(POOL_ELEMS, (3,), generator=gen, device="cuda")
    x[spots] = torch.tensor([float("nan"), float("inf"), -float("inf")], device="cuda")
    return x


def expect_refusal(fn, what):
    """fn() must raise InvalidUsageError saying the forced algorithm cannot run."""
    try:
        fn()
    except InvalidUsageError as e:
        assert "cannot run" in str(e), f"{what}: InvalidUsageError without the reason: {e}"
        return
    raise AssertionError(f"{what}: the forced algorithm cannot run with this codec, but no InvalidUsageError")


def issue(taco, torch, world, call, sentinel=False):
    """Enqueue `call` on its world's stream: every rank in one group. Returns (comms, config,
    ins, outs, the AllReduce algorithm it ran) or None when the call was (rightly) refused."""
    P, s = world.P, world.stream
    comms, config = world.comms(taco, call.codec, call.algo)
    ins, xs, outs = buffers(call, P, world.src[call.dtype], world.dst[call.dtype], world.work[call.dtype])
    ran = None
    if unavailable(call.op, call.codec, call.algo):
        what = call.describe(P)
        expect_refusal(lambda: comms[0].allreduce_algo(call.n, call.dtype), what + " (allreduce_algo)")
        with taco.comm.group():  # each rank is refused when it calls: the group ends empty
            for r, (c, x, o) in enumerate(zip(comms, xs, outs)):
                expect_refusal(lambda: c.allreduce(x, out=o, stream=s), f"{what} rank {r}")
        return None
    if call.op == "allreduce":
        ran = comms[0].allreduce_algo(call.n, call.dtype)
        assert ran in ALGOS and ran != "auto" and (call.algo == "auto" or ran == call.algo), \
            f"{call.describe(P)}: allreduce_algo says {ran!r}"
    with torch.cuda.stream(s):
        if sentinel and (not call.inplace or call.op == "allgather"):
            for o in outs:
                o.fill_(SENTINEL)
        if call.inplace:
            for x, i in zip(xs, ins):
                x.copy_(i)
    with taco.comm.group():
        for c, x, o in zip(comms, xs, outs):
            getattr(c, call.op)(x, out=o, stream=s)
    return comms, config, ins, outs, ran


def check_against_model(torch, world, call, issued):
    """Wait for the call, then compare every rank's output with the model bit for bit."""
    _, config, ins, outs, ran = issued
    world.stream.synchronize()
    parts = [to_host(torch, i) for i in ins]
    want = model(call, parts, config, ran)
    for r, o in enumerate(outs):
        assert_same(to_host(torch, o), want[r], f"{call.describe(world.P)}, algo run {ran}, rank {r}")


def sync_and_check(torch, worlds, touched, what):
    """Synchronise the device and read every touched communicator's asynchronous error."""
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a device fault: say which calls it happened in
        raise AssertionError(f"{what}: the device reported {type(e).__name__}: {e}") from e
    for w, key in sorted(touched):
        comms, _ = worlds[w].comm_sets[key]
        for r, c in enumerate(comms):
            err = c.async_error()
            assert err is None, f"{what}: world {w} codec={key[0]} algo={key[1]} rank {r}: {err}"
    touched.clear()


def free_device_memory(torch):
    """(free, total) device bytes with the allocators' caches emptied: torch's caching allocator
    and CuPy's pool keep freed blocks reserved, as much as a few hundred MiB depending on
    timing, which would read as a leak of the library's."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    except ImportError:
        pass
    return torch.cuda.mem_get_info()


def warm_up(taco, torch, worlds, codecs):
    """Create every communicator and run every collective on it once per dtype, small (below
    auto's fallback) and mid-sized, in and out of place: communicators, workspaces and the CUDA
    modules the soak needs are loaded before the memory baseline."""
    i = 0
    for w in worlds:
        for codec in codecs:
            for algo in ALGOS:
                for dtype in DTYPES:
                    for op in OPS:
                        for n, inplace in ((1000, False), (40001, True)):  # 40001 fp16: above AUTO_FALLBACK
                            n = n if op == "allreduce" else -(-n // w.P)
                            call = Call(-1 - i, w.index, op, codec, algo, dtype, n, inplace, 3, 5, False)
                            issue(taco, torch, w, call, sentinel=not inplace)
                            i += 1
    torch.cuda.synchronize()
    return i


def test_soak(taco, torch):
    from taco import reference as ref

    codecs = list(taco.codecs())
    assert set(codecs) <= set(ref.CODECS), f"codecs the model does not know: {set(codecs) - set(ref.CODECS)}"
    assert tuple(taco.comm.ALGOS) == ALGOS
    plan = make_plan(CALLS, SEED, [P for P, _ in WORLDS], codecs, SAMPLE_EVERY)
    worlds = [World(torch, w, P, chunk, SEED + w) for w, (P, chunk) in enumerate(WORLDS)]
    torch.cuda.synchronize()  # the pools, filled on the default stream, before the worlds' streams read them
    passed = False
    try:
        t0 = time.monotonic()
        warm = warm_up(taco, torch, worlds, codecs)
        free0, total = free_device_memory(torch)
        t1 = time.monotonic()
        print(f"\nsoak: warm-up {warm} calls on {sum(len(w.comm_sets) for w in worlds)} communicator sets in "
              f"{t1 - t0:.1f} s; free device memory {free0 / 2**20:.0f} MiB of {total / 2**20:.0f} MiB")

        counts, refused, sampled, model_s = Counter(), 0, 0, 0.0
        touched, first = set(), 0
        for call in plan:
            world = worlds[call.world]
            try:
                issued = issue(taco, torch, world, call, sentinel=call.sampled)
            except AssertionError:
                raise
            except Exception as e:  # noqa: BLE001 - name the call that raised
                raise AssertionError(f"{call.describe(world.P)}: {type(e).__name__}: {e}") from e
            counts[(call.op, call.algo if call.op == "allreduce" else "")] += 1
            touched.add((call.world, (call.codec, call.algo)))
            if issued is None:
                refused += 1
            elif call.sampled:
                tm = time.monotonic()
                check_against_model(torch, world, call, issued)
                model_s += time.monotonic() - tm
                sampled += 1
            if (call.index + 1) % SYNC_EVERY == 0:
                sync_and_check(torch, worlds, touched, f"calls {first}..{call.index}")
                first = call.index + 1
        sync_and_check(torch, worlds, touched, f"calls {first}..{len(plan) - 1}")
        for w in worlds:  # every communicator, touched or not
            sync_and_check(torch, worlds, {(w.index, key) for key in w.comm_sets}, "end of the soak")
        t2 = time.monotonic()
        free1, _ = free_device_memory(torch)

        per = ", ".join(f"{op}{'/' + algo if algo else ''} {k}" for (op, algo), k in sorted(counts.items()))
        print(f"soak: {len(plan)} calls in {t2 - t1:.1f} s ({model_s:.1f} s of it in {sampled} model checks), "
              f"{refused} refused as expected; {per}")
        print(f"soak: free device memory {free0 / 2**20:.0f} MiB after the warm-up, {free1 / 2**20:.0f} MiB at the end")
        assert sampled > 0 or len(plan) < SAMPLE_EVERY, "no call was compared with the model"
        assert free0 - free1 <= MEMORY_SLACK, \
            f"free device memory dropped by {(free0 - free1) / 2**20:.0f} MiB over {len(plan)} calls"
        passed = True
    finally:
        try:
            torch.cuda.synchronize()
            for w in worlds:
                w.close()
        except Exception:  # noqa: BLE001 - after a failure, the failure is the message
            if passed:
                raise

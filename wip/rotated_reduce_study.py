#!/usr/bin/env python3
"""Two-shot owner reduce for rotated codecs: today's (sum unrotated) vs the proposal (sum rotated).

Study script, standalone; reads the spec from the repository's python/taco/reference.py ("ref"),
loaded by file path (pure numpy + ml_dtypes, the compiled library is not needed).

today  = ref.decompress_reduce_compress (reference.py 453-473, via _accumulate 393-432 and
         _compress_blocks 259-297): R = sum_i q_i d_i (rotated), F = FWHT(R)          [WHT 1]
         T = unshift(F) + e; alpha from m0 = max|T| and the 10-bit energy of T;
         Z' = FWHT(alpha T)                                                              [WHT 2]
         quantise Z' with m = max|Z'|; owner output y = decompress(wire)                 [WHT 3]
proposal = reduce_rotated below: R = sum_i q_i d_i + 2^-K FWHT(e)/B                      [WHT 1']
         (FWHT(FWHT(v)) = B v, so FWHT(R) 2^K = T in exact arithmetic);
         alpha' from the rotated total (Parseval: mean(T^2) = 2^2K sum(R^2));
         Z' = FWHT(alpha' T) = (alpha' B 2^K) R  -- no transform; quantise Z' as the spec does;
         owner output y = decompress(wire)                                               [WHT 3]
Usage: python3 wip/rotated_reduce_study.py [--quick] [--seeds N] [--log2n 20]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import ml_dtypes
import numpy as np

_REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("taco_reference", str(_REPO / "python" / "taco" / "reference.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

F32 = np.float32
BF16 = ml_dtypes.bfloat16


# ------------------------------------------------------------------ the quantiser half of the spec
def quantize_rotated(c, v, lift, bad):
    """v = Z' (the unnormalised rotated, alpha- and lift-scaled block), (nblocks, B) fp32.
    COPIED from ref._compress_blocks, reference.py lines 283-296 (m = max|Z'| ... codes, NaN
    blocks), unchanged, so that both variants quantise with the spec's own arithmetic."""
    with np.errstate(all="ignore"):
        m = ref._magnitude(v).max(axis=1)
        q = F32(ref._QMAX[c.fmt])
        s_lifted = (m * c.c) / q
        s = s_lifted / lift
        inv = np.where(m > 0, q / np.where(m > 0, m, F32(1)), F32(0)).astype(F32)
        off = s * lift != s_lifted
        s = np.where(off & (s == np.inf), ref.FLT_MAX, np.where(off & (s * lift < s_lifted), ref._next_up(s), s))
        inv = np.where(off, c.c / np.where(off, s * lift, F32(1)), inv).astype(F32)
        codes = ref._encode(v * inv[:, None], c.fmt)
    codes = np.where(bad[:, None], np.uint8(ref._NAN_CODE[c.fmt]), codes).astype(np.uint8)
    s = np.where(bad, ref.CANONICAL_NAN, s).astype(F32)
    return codes, s


def energy_alpha(v, extra_exp):
    """alpha = tau / sqrt(mean_sq + eps) with the spec's order-free 10-bit fixed-point energy
    (reference.py 264-276) of the block v, but mean_sq = sum(v^2) * 2^extra_exp (no /B: the
    caller passes the Parseval factor). v finite."""
    with np.errstate(all="ignore"):
        m0 = ref._magnitude(v).max(axis=1)
        e = np.frexp(m0)[1].astype(np.int64)
        sh = 10 - e
        ha = np.trunc(sh / 2).astype(np.int64)
        k1 = np.ldexp(F32(1), ha).astype(F32)
        k2 = np.ldexp(F32(1), sh - ha).astype(F32)
        u = (np.abs(v) * k1[:, None]) * k2[:, None]
        r = (u + F32(2.0 ** 23)).astype(F32).view(np.int32).astype(np.int64) - 0x4B000000
        S = (r * r).sum(axis=1)
        mean_sq = np.ldexp(S.astype(np.float64), 2 * e - 20 + extra_exp)
        return (ref.TAU / np.sqrt(mean_sq + ref.EPS)).astype(F32)


# ------------------------------------------------------------------ the two reduces
def reduce_today(wires, codec, n, dt, exact):
    return ref.decompress_reduce_compress(wires, codec, n, dt, exact=exact)


def reduce_rotated(wires, codec, n, dt, exact, own_k=True, wide_fix=True, pad_exact=True):
    """The proposal. own_k: the own piece joins the choice of the decode shift K (else an own
    piece above ~2^100 beside small received ones overflows R). wide_fix: a block whose decode
    saturated at FLT_MAX is re-marked wide (codes unchanged, alpha*2^64, s negated) so the
    overflow reads +-Inf as the spec's 'Overflow' rule wants. pad_exact: the last block of a
    piece whose end is not on a block boundary takes today's path (the spec zeroes the positions
    past the end, which the rotated total cannot do without rotating back)."""
    c = ref._Codec(codec, None)
    unpacked = [ref._unpack(c, w, n, dt) for w in wires]
    scales = [sc for _, sc in unpacked]
    _, K, _ = ref._decode_scales(c, scales)                # reference.py 224-242
    E = ref._as_blocks(np.asarray(exact).reshape(-1), c)   # zero padded, fp32 (exact for bf16)
    with np.errstate(all="ignore"):
        if own_k:
            me = ref._magnitude(E).max(axis=1)
            Ke = np.where(me > ref.SHIFT_ABOVE, 64, np.where(me < ref.SHIFT_BELOW, -64, 0))
            K = np.maximum(K, Ke).astype(np.int64)
        shift = np.ldexp(F32(1), -K).astype(F32)
        # d_i exactly as reference.py 240, with this K
        ds = [((np.where(s < 0, -s, s * shift).astype(F32) * c.c) / a).astype(F32) for a, s in scales]
        R = unpacked[0][0] * ds[0][:, None]                 # reference.py 414-417, input order
        for (f, _), d in zip(unpacked[1:], ds[1:]):
            R = R + f * d[:, None]
        # own piece rotated: FWHT(e 2^-K)/B. The shift goes BEFORE the transform: the unnormalised
        # FWHT grows values up to B times, so FWHT(e) of an fp32 piece near 1e37 overflows.
        Er = ref._fwht(E * shift[:, None]) * F32(1.0 / c.B)
        R = (R + Er).astype(F32)
        mr = ref._magnitude(R).max(axis=1)
        bad = ~(mr <= ref.FLT_MAX)
        Rz = np.where(bad[:, None], F32(0), R)
        up = np.ldexp(F32(1), K).astype(F32)
        if c.adaptive:
            alpha = energy_alpha(Rz, 2 * K)                 # mean(T^2) = 2^2K sum(R^2)
            lift = np.ones(len(R), F32)
            v = (Rz * (alpha * F32(c.B))[:, None]) * up[:, None]
        else:  # int*-hadamard: alpha = 1; lift chosen on max|R| 2^K (<= max|T|) instead of max|T|
            alpha = np.ones(len(R), F32)
            lift = ref._lift(mr * up, False)
            # 2^K and the lift as ONE exact power of two (2^64 * 2^-64 = 1): applied one after
            # the other, 2^K first, B R 2^K overflows for sums near FLT_MAX
            lexp = np.where(lift > 1, 64, np.where(lift < 1, -64, 0))
            v = (Rz * F32(c.B)) * np.ldexp(F32(1), K + lexp).astype(F32)[:, None]
        codes, s = quantize_rotated(c, v, lift, bad)
        alpha = np.where(bad, ref.CANONICAL_NAN, alpha).astype(F32)
    if pad_exact and n % c.B:  # splice in today's last block (its codes and scales)
        f_t, (a_t, s_t) = ref._unpack(c, reduce_today(wires, codec, n, dt, exact)[0], n, dt)
        q_t = ref._encode(f_t[-1:], c.fmt)  # decoded code values -> code bytes (exact)
        codes[-1], alpha[-1], s[-1], bad[-1] = q_t[0], a_t[-1], s_t[-1], False
    wire = ref._pack(c, n, dt, codes, alpha if c.adaptive else None, s)
    if wide_fix:
        y32 = ref.decompress(wire, codec, n, np.float32).reshape(-1)
        yb = np.zeros(len(R) * c.B, F32)
        yb[:n] = y32
        sat = np.any(np.abs(yb.reshape(len(R), c.B)) == ref.FLT_MAX, axis=1) & ~bad
        if sat.any():  # wide: the same codes, the scales of the sum scaled by 2^-64, s negated
            if c.adaptive:
                alpha = np.where(sat, alpha * F32(2.0 ** 64), alpha).astype(F32)
                s = np.where(sat, -s, s).astype(F32)
            else:  # no alpha: |s| itself carries the 2^-64
                s = np.where(sat, -(s * F32(2.0 ** -64)), s).astype(F32)
            wire = ref._pack(c, n, dt, codes, alpha if c.adaptive else None, s)
    return wire, ref.decompress(wire, codec, n, dt)


# ------------------------------------------------------------------ the AllReduce model
def allreduce_both(parts, codec, reducers):
    """ref.allreduce_ranks (reference.py 563-589) with one chunk, every reducer fed the same
    compressed pieces. Returns {name: output every rank holds} (checked identical on ranks)."""
    parts = [np.asarray(p).reshape(-1) for p in parts]
    P, dt, count = len(parts), parts[0].dtype, parts[0].size
    B = ref._plan_block(codec, None)
    outs = {k: np.zeros(count, dt) for k in reducers}
    c = ref._Codec(codec, None)
    ndiff = ntot = 0
    for o, (off, n) in enumerate(ref.shard_plan(count, P, B)):
        if n == 0:
            continue
        wires = [ref.compress(parts[j][off:off + n], codec) for j in range(P) if j != o]
        codes = []
        for name, red in reducers.items():
            wire, y = red(wires, codec, n, dt, parts[o][off:off + n])
            codes.append(ref._unpack(c, wire, n, dt)[0])
            other = ref.decompress(wire, codec, n, dt)
            assert np.array_equal(y.view(np.uint8), other.view(np.uint8)), "owner != peers"
            outs[name][off:off + n] = y
        if len(codes) > 1:  # codes of the first two reducers' compressed totals
            ndiff += np.sum(codes[0] != codes[1])
            ntot += codes[0].size
    outs["codediff"] = ndiff / max(ntot, 1)
    return outs


# ------------------------------------------------------------------ data
def make(dist, P, N, rng):
    nb = N // 256
    if dist == "normal":
        xs = [rng.standard_normal(N) for _ in range(P)]
    elif dist == "outliers":  # 0.1 % of the values x100
        xs = []
        for _ in range(P):
            x = rng.standard_normal(N)
            idx = rng.choice(N, N // 1000, replace=False)
            x[idx] *= 100
            xs.append(x)
    elif dist == "blockscale":  # per-256-block magnitude 10^U(-3,3), the same pattern on every rank
        sc = np.repeat(10.0 ** rng.uniform(-3, 3, nb), 256)
        xs = [rng.standard_normal(N) * sc for _ in range(P)]
    elif dist == "blockscale-indep":  # ... drawn independently per rank
        xs = [rng.standard_normal(N) * np.repeat(10.0 ** rng.uniform(-3, 3, nb), 256) for _ in range(P)]
    elif dist == "student-t3":
        xs = [rng.standard_t(3, N) for _ in range(P)]
    else:
        raise ValueError(dist)
    return [x.astype(F32) for x in xs]


def bits(a):
    return np.asarray(a).view(np.uint16 if np.asarray(a).dtype.itemsize == 2 else np.uint32)


def metrics(y, ex):
    y64 = np.asarray(y).astype(np.float64)
    err = y64 - ex
    rms = np.sqrt(np.mean(ex * ex))
    return np.linalg.norm(err) / np.linalg.norm(ex), np.max(np.abs(err)) / rms


DISTS = ["normal", "outliers", "blockscale", "blockscale-indep", "student-t3"]


def accuracy(codecs, Ps, dtypes, seeds, N):
    print(f"{'codec':13} {'dist':16} {'dt':4} {'P':>2} | {'relL2 today':>11} {'relL2 prop':>11} | "
          f"{'max/rms tod':>11} {'max/rms prp':>11} | {'bitdiff':>7} {'codediff':>8} {'|t-p|/|x|':>9} {'(p-t)/t':>9}")
    for codec in codecs:
        for dist in DISTS:
            for dtn in dtypes:
                for P in Ps:
                    acc = []
                    for seed in range(seeds):
                        rng = np.random.default_rng([seed, P, DISTS.index(dist)])
                        xs = make(dist, P, N, rng)
                        if dtn == "bf16":
                            xs = [x.astype(BF16) for x in xs]
                        ex = np.sum([x.astype(np.float64) for x in xs], axis=0)
                        o = allreduce_both(xs, codec, {"today": reduce_today, "prop": reduce_rotated})
                        lt, mt = metrics(o["today"], ex)
                        lp, mp = metrics(o["prop"], ex)
                        diff = np.mean(bits(o["today"]) != bits(o["prop"]))
                        between = np.linalg.norm(o["today"].astype(np.float64) - o["prop"].astype(np.float64)) \
                            / np.linalg.norm(ex)
                        acc.append((lt, lp, mt, mp, diff, between, o["codediff"], (lp - lt) / lt))
                    a = np.array(acc)
                    mean = a.mean(axis=0)
                    mx = a[:, 2:4].max(axis=0)
                    print(f"{codec:13} {dist:16} {dtn:4} {P:2d} | {mean[0]:11.4e} {mean[1]:11.4e} | "
                          f"{mx[0]:11.3f} {mx[1]:11.3f} | {mean[4]:7.4f} {mean[6]:8.1e} {mean[5]:9.2e} {mean[7]:+9.1e}", flush=True)


# ------------------------------------------------------------------ checks
def self_checks():
    """(1) the copied quantiser + spec alpha + FWHT reproduces ref._compress_blocks bit for bit;
    (2) allreduce_both with today's reducer reproduces ref.allreduce bit for bit."""
    rng = np.random.default_rng(7)
    for codec in ("taco", "int6-hadamard"):
        c = ref._Codec(codec, None)
        x = (rng.standard_t(3, (512, 256)) * 10.0 ** rng.uniform(-3, 3, (512, 1))).astype(F32)
        codes, alpha, s = ref._compress_blocks(c, x)
        if c.adaptive:
            a2 = energy_alpha(x, -c.log2B)
            v = ref._fwht(x * a2[:, None])
        else:
            a2 = np.ones(len(x), F32)
            v = ref._fwht(x)
        c2, s2 = quantize_rotated(c, v, np.ones(len(x), F32), np.zeros(len(x), bool))
        assert np.array_equal(codes, c2) and np.array_equal(s, s2) and np.array_equal(alpha, a2), codec
        xs = [rng.standard_normal(3000).astype(F32) for _ in range(3)]
        o = allreduce_both(xs, codec, {"today": reduce_today})["today"]
        assert np.array_equal(bits(o), bits(ref.allreduce(xs, codec))), codec
    print("self-checks: copied quantiser == ref._compress_blocks; model == ref.allreduce (bit for bit)")


def special_cases(codecs):
    """Non-finite propagation and the range edges (K = +-64, overflow). P = 4, 4096 elements."""
    N, P = 4096, 4
    FM = float(np.finfo(np.float32).max)
    # owner of elements [0, 1024) is rank 0, [1024, 2048) rank 1, ...
    cases = {}

    def base(seed=0, scale=1.0):
        r = np.random.default_rng(seed)
        return [(r.standard_normal(N) * scale).astype(F32) for _ in range(P)]

    xs = base(); xs[2][10] = np.nan; cases["NaN in a peer's piece (el 10, owner 0)"] = xs
    xs = base(); xs[0][10] = np.inf; cases["+Inf in the owner's own piece (el 10)"] = xs
    xs = base(); xs[3][1500] = -np.inf; cases["-Inf in a peer's piece (el 1500, owner 1)"] = xs
    xs = base(); xs[0][10] = np.inf; xs[1][10] = -np.inf; cases["+Inf own & -Inf peer, same el"] = xs
    xs = base(); xs[0][20] = np.inf; xs[2][30] = np.inf; cases["+Inf own & +Inf peer, same block"] = xs
    xs = [np.full(N, 3e38, F32) for _ in range(P)]; cases["overflow: 4 ranks x 3e38 (spec: +Inf)"] = xs
    xs = base(scale=1e37); cases["large: N(0,1e37) (K=64, no overflow)"] = xs
    xs = base(scale=1e-36); cases["tiny: N(0,1e-36) (K=-64, subnormal out)"] = xs
    xs = base(scale=1e-33); xs[0] = (xs[0] * 1e33).astype(F32); cases["peers 1e-33, own piece N(0,1)"] = xs
    xs = base(); xs[0] = (xs[0] * 1e35).astype(F32); cases["peers N(0,1), own piece N(0,1e35)"] = xs
    xs = base(); xs[0] = (xs[0] * 1e37).astype(F32); cases["peers N(0,1), own piece N(0,1e37)"] = xs
    xs = base(); xs[0][:1024] = FM; xs[1][:1024] = -FM; cases["own +FLT_MAX, one peer -FLT_MAX (sum 0)"] = xs
    xs = base(); xs[0][:1024] = FM; cases["own piece FLT_MAX, peers N(0,1)"] = xs
    for codec in codecs:
        print(f"-- {codec}: special cases (fp32, P=4); output summary today | proposal "
              f"[| proposal without own-K / without wide fix]")
        for name, xs in cases.items():
            ex = np.sum([x.astype(np.float64) for x in xs], axis=0)
            o = allreduce_both(xs, codec, {
                "today": reduce_today, "prop": reduce_rotated,
                "noK": lambda *a: reduce_rotated(*a, own_k=False),
                "nowide": lambda *a: reduce_rotated(*a, wide_fix=False)})

            def summ(y):
                y = np.asarray(y)
                nan, pinf, ninf = np.isnan(y), np.isposinf(y), np.isneginf(y)
                fin = np.isfinite(y) & np.isfinite(ex)
                rel = (np.linalg.norm(y[fin] - ex[fin]) / max(np.linalg.norm(ex[fin]), 1e-300)) if fin.any() else 0
                return f"nan={nan.sum()} +inf={pinf.sum()} -inf={ninf.sum()} relL2(fin)={rel:.2e}"
            same = lambda a, b: "same" if np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(
                np.isinf(a), np.isinf(b)) else "NONFINITE-MASK-DIFFERS"
            line = f"  {name:42} today {summ(o['today'])} | prop {summ(o['prop'])} [{same(o['today'], o['prop'])}]"
            for alt in ("noK", "nowide"):
                if not np.array_equal(bits(o[alt]), bits(o["prop"])):
                    line += f" | {alt}: {summ(o[alt])}"
            print(line, flush=True)


def partial_blocks(codecs, seeds=20):
    """Pieces that end inside a block: error on the elements of the partial block, proposal with
    and without today's path for that block. P = 2, count = 256 + 37 (owner 1 holds 37 elements)."""
    for codec in codecs:
        acc = []
        for seed in range(seeds):
            r = np.random.default_rng(seed)
            xs = [r.standard_t(3, 256 + 37).astype(F32) for _ in range(2)]
            ex = np.sum([x.astype(np.float64) for x in xs], axis=0)[256:]
            o = allreduce_both(xs, codec, {"today": reduce_today, "prop": reduce_rotated,
                                           "nopad": lambda *a: reduce_rotated(*a, pad_exact=False)})
            acc.append([np.linalg.norm(o[k][256:] - ex) / np.linalg.norm(ex) for k in ("today", "prop", "nopad")])
        a = np.mean(acc, axis=0)
        print(f"-- {codec}: partial last block (37 of 256), relL2 over its elements, {seeds} seeds: "
              f"today {a[0]:.4f}  proposal {a[1]:.4f}  proposal w/o zeroed padding {a[2]:.4f}")


def scale_check(codecs):
    """Stored scales of the compressed total, today vs proposal (P = 4, Student-t3, 2^18)."""
    rng = np.random.default_rng(1)
    for codec in codecs:
        c = ref._Codec(codec, None)
        n = 1 << 18
        xs = [rng.standard_t(3, n).astype(F32) for _ in range(4)]
        wires = [ref.compress(x, codec) for x in xs[1:]]
        wt, _ = reduce_today(wires, codec, n, np.float32, xs[0])
        wp, _ = reduce_rotated(wires, codec, n, np.float32, xs[0])
        (ft, (at, st)), (fp, (ap, sp)) = ref._unpack(c, wt, n, np.float32), ref._unpack(c, wp, n, np.float32)
        print(f"-- {codec}: blocks whose alpha differs {np.mean(at != ap):.3f}, whose s differs {np.mean(st != sp):.3f}; "
              f"max |alpha'/alpha - 1| {np.max(np.abs(ap / at - 1)):.1e}; max rel. diff of s/alpha (the decode "
              f"factor) {np.max(np.abs((sp / ap) / (st / at) - 1)):.1e}; codes differing {np.mean(ft != fp):.1e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--codecs", default="taco,int6-hadamard")
    args = ap.parse_args()
    codecs = [c for c in args.codecs.split(",") if c in ref.CODECS]
    t0 = time.time()
    self_checks()
    special_cases(codecs)
    partial_blocks(codecs)
    scale_check(codecs)
    if args.quick:
        accuracy(codecs, [2, 4], ["fp32"], 1, 1 << 16)
    else:
        accuracy(codecs, [2, 4, 8], ["fp32", "bf16"], args.seeds, 1 << args.log2n)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()

"""The executable specification of libtaco's codecs (numpy + ml_dtypes).

The C host twin and the CUDA kernels match this file bit for bit on FP8/INT
codes, scales and decompressed values (NaN payload bits excepted: every NaN
the library writes is the canonical 0x7fc00000 for scales and 0x7f for FP8
codes; non-finite outputs are compared as NaN). The bf16 codec's wire, and codec
none's for 16-bit data, hold NaN as 0x7fff whatever the input NaN's sign and
payload, as here. See docs/codecs.md for the
math and docs/format.md for the wire layout.

Per block of B elements (fp32 arithmetic, each line one IEEE-rounded op):

    m0    = max |x|                         (NaN counts as +inf)
    bad   = m0 is not finite                -> scales NaN, codes = NaN code
    ASH:  E = frexp(m0).exponent;  r = round(|x| * 2^(10-E)) (two power-of-two steps, + 2^23 trick)
          S = sum(r * r) as int32;  alpha = float32(tau / sqrt(S * 2^(2E-20) / B + eps))   (fp64)
          x = x * alpha
    rot:  Z' = FWHT(x) with butterflies in ascending stride (unnormalised)
    m     = max |Z'|;  c = 1/sqrt(B) (rotation) else 1
    lift  = not ASH: 2^64 if m0 < 2^-64, 2^-64 if m0 >= 2^64;  else 1;  x = x * lift  (before the rotation)
    s     = ((m * c) / Qmax) / lift;  inv = Qmax / m  (0 if m == 0)
            if s * lift != (m * c) / Qmax (s subnormal or overflowed): s rounded up instead (the
            next float if it was rounded down, FLT_MAX if inf), inv = c / (s * lift)
    q     = encode(Z' * inv)                (FP8 satfinite RNE; INT round-half-even, clamped to +-Qmax)
    decode: t = s * c;  K = 64 if |t| > |alpha| 2^100, -64 if |t| < |alpha| 2^-100, else 0
            (a block of several inputs: the largest K);  d = ((s * 2^-K) * c) / alpha
            W = decode(q) * d;  y = FWHT(W) (rotation) else W;  then with K = 64: y = sat(y,
            +-FLT_MAX 2^-64) * 2^64, with K = -64: y = y * 2^-64   (docs/codecs.md, "Range")
    wide: a negative s (its sign bit set; compress never writes one) marks a block that holds a sum
            beyond FLT_MAX, scaled by 2^-64: it decodes with K = 64 and d = (|s| * c) / alpha, and
            without the saturation, so that the values past FLT_MAX come back as +-Inf
    bf16: round to nearest even; fp32 data saturates finite values at +-0x7F7F (16-bit data and
            sums of it round to Inf past bf16's range, as the output dtype would); NaN is 0x7FFF

Accumulation of k compressed inputs plus an optional exact input e, in order: R = W_0 + W_1 + ...
(in the rotated domain), F = FWHT(R); the saturation applies only to one input that is not wide
(sat); then y = unshift(F) + e, except at K = 64 with e, where
y = (F + e 2^-64) 2^64 for |F| > FLT_MAX 2^-64 (the sum overflows: +-Inf, or finite again with e)
and F 2^64 + e otherwise. A sum past FLT_MAX is +-Inf, as NCCL's fp32 sum (docs/codecs.md,
"Overflow"). Decompress-reduce-compress compresses a block of that sum that holds +-Inf as the
wide block y' = (K = 64 ? F : unshift(F) 2^-64) + e 2^-64 when y' is finite.
"""
from __future__ import annotations

import numbers
import operator
import struct

import ml_dtypes
import numpy as np

__all__ = [
    "CODECS", "codec_params", "block_size", "compressed_size",
    "compress", "decompress", "decompress_accumulate", "decompress_reduce_compress",
]

TAU = 1.0
EPS = 1e-60
MAGIC = 0x4F434154
HEADER_BYTES = 16
CANONICAL_NAN = np.uint32(0x7FC00000).view(np.float32)

# name -> (id, format, blocked, rotate, adaptive, default block, format version)
CODECS = {
    "none": (0, "raw", False, False, False, 0, 1),
    "bf16": (1, "bf16", False, False, False, 0, 1),
    "taco": (2, "e4m3", True, True, True, 256, 1),
    "taco-e5m2": (3, "e5m2", True, True, True, 256, 1),
    "fp8-block": (4, "e4m3", True, False, False, 256, 1),
    "int8-hadamard": (5, "int8", True, True, False, 256, 1),
    "int8-block": (6, "int8", True, False, False, 256, 1),
    "int4-block": (7, "int4", True, False, False, 32, 1),
    "int6-hadamard": (8, "int6", True, True, False, 256, 1),
}
_QMAX = {"e4m3": 448.0, "e5m2": 57344.0, "int8": 127.0, "int6": 31.0, "int4": 7.0}
_NAN_CODE = {"e4m3": 0x7F, "e5m2": 0x7F, "int8": 0, "int6": 0, "int4": 0}
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(ml_dtypes.bfloat16): 2}


MAX_COUNT = (1 << 61) - 1  # the library's largest count: SIZE_MAX / 8, so that its sizes in bytes fit


def _count(count) -> int:
    """`count` as the library takes it: an integer (not a bool or a float) from 1 to MAX_COUNT."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise TypeError(f"count argument: expected an integer, got {type(count).__name__}")
    n = operator.index(count)
    if n < 1:
        raise ValueError(f"count argument {n}: a compressed buffer holds at least one element")
    if n > MAX_COUNT:
        raise ValueError(f"count argument {n} is larger than {MAX_COUNT}, the largest count whose sizes in bytes "
                         f"fit in size_t")
    return n


class _Codec:
    def __init__(self, spec: str, block: int | None):
        if block is not None:
            if isinstance(block, bool) or not isinstance(block, numbers.Integral):
                raise TypeError(f"block argument: expected an integer or None, got {type(block).__name__}")
            block = operator.index(block)
            if block == 0:
                raise ValueError("block argument 0 is not a block size (None selects the default)")
        name, colon, rest = spec.partition(":")
        if name not in CODECS:
            raise ValueError(f"codec argument {spec!r}: unknown codec {name!r}")
        if colon:
            digits = rest[len("block="):]
            if not rest.startswith("block=") or not (digits.isascii() and digits.isdigit()):
                raise ValueError(f"codec argument {spec!r}: expected ':block=N' (N decimal digits)")
            if block is not None and block != int(digits):
                raise ValueError(f"codec argument {spec!r} and block argument {block} disagree on the block size")
            block = int(digits)
            if block == 0:
                raise ValueError(f"codec argument {spec!r}: block size 0 is not a power of two in [32, 1024]")
        (self.id, self.fmt, self.blocked, self.rotate, self.adaptive, dflt, self.version) = CODECS[name]
        self.name = name
        if not self.blocked:
            if block is not None:
                raise ValueError(f"codec {name!r} has no block size")
            self.B = 1
        else:
            self.B = int(block or dflt)
            if self.B < 32 or self.B > 1024 or self.B & (self.B - 1):
                raise ValueError(f"block size {self.B} is not a power of two in [32, 1024]")
        self.log2B = self.B.bit_length() - 1
        self.c = np.float32(1.0 / np.sqrt(float(self.B))) if self.rotate else np.float32(1.0)

    def layout(self, count: int, dtype: np.dtype):
        if not self.blocked:
            nblocks = 0
            codes = count * (2 if self.fmt == "bf16" else np.dtype(dtype).itemsize)
        else:
            nblocks = -(-count // self.B)
            codes = nblocks * _block_code_bytes(self.fmt, self.B)
        scales_off = HEADER_BYTES + _round16(codes)
        scales = nblocks * (8 if self.adaptive else 4)
        return nblocks, codes, scales_off, scales, scales_off + _round16(scales)


def _block_code_bytes(fmt: str, B: int) -> int:
    """Bytes of one block's codes: INT4 two codes per byte, INT6 four codes per three bytes."""
    return B // 2 if fmt == "int4" else (B // 4 * 3 if fmt == "int6" else B)


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


def codec_params(codec: str = "taco", block: int | None = None) -> dict:
    c = _Codec(codec, block)
    return {"name": c.name, "id": c.id, "format": c.fmt, "block": c.B if c.blocked else 0,
            "rotate": c.rotate, "adaptive": c.adaptive, "format_version": c.version}


def block_size(codec: str = "taco", block: int | None = None) -> int:
    c = _Codec(codec, block)
    return c.B if c.blocked else 1


def compressed_size(codec: str, count: int, dtype=np.float32, block: int | None = None) -> int:
    return _Codec(codec, block).layout(_count(count), np.dtype(dtype))[4]


def _dtype_code(dtype) -> int:
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise ValueError(f"dtype argument {dt}: expected float32, float16 or bfloat16")
    return _DTYPES[dt]


# ---------------------------------------------------------------- block math
def _fwht(v: np.ndarray) -> np.ndarray:
    """Unnormalised Walsh-Hadamard transform along axis 1, ascending strides."""
    n, B = v.shape
    h = 1
    while h < B:
        w = v.reshape(n, B // (2 * h), 2, h)
        a, b = w[:, :, 0, :], w[:, :, 1, :]
        v = np.stack([a + b, a - b], axis=2).reshape(n, B)
        h *= 2
    return v


def _magnitude(v: np.ndarray) -> np.ndarray:
    a = np.abs(v)
    return np.where(np.isnan(a), np.float32(np.inf), a).astype(np.float32)


def _encode(v: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "e4m3":
        return np.clip(v, -448.0, 448.0).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    if fmt == "e5m2":
        return np.clip(v, -57344.0, 57344.0).astype(np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)
    lim = _QMAX[fmt]
    r = np.clip(np.rint(v), -lim, lim).astype(np.int8)
    if fmt == "int8":
        return r.view(np.uint8)
    return r.view(np.uint8) & (0x3F if fmt == "int6" else 0xF)  # the low 6 or 4 bits, two's complement


def _decode(codes: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "e4m3":
        return codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    if fmt == "e5m2":
        return codes.view(ml_dtypes.float8_e5m2).astype(np.float32)
    if fmt == "int8":
        return codes.view(np.int8).astype(np.float32)
    if fmt == "int6":
        return ((codes.astype(np.uint8) << 2).view(np.int8) >> 2).astype(np.float32)  # sign-extend 6 bits
    return ((codes.astype(np.uint8) << 4).view(np.int8) >> 4).astype(np.float32)  # int4 nibble


def _pack_int6(codes: np.ndarray) -> np.ndarray:
    """(n, B) 6-bit codes -> (n, 3B/4) bytes: codes 4k..4k+3 as the little-endian 24-bit word
    c0 | c1 << 6 | c2 << 12 | c3 << 18 in bytes 3k..3k+2 (docs/format.md)."""
    c = codes.astype(np.uint32).reshape(codes.shape[0], -1, 4) & 0x3F
    w = c[..., 0] | (c[..., 1] << 6) | (c[..., 2] << 12) | (c[..., 3] << 18)
    return np.stack([w & 0xFF, (w >> 8) & 0xFF, w >> 16], axis=-1).astype(np.uint8).reshape(codes.shape[0], -1)


def _unpack_int6(packed: np.ndarray) -> np.ndarray:
    """The inverse of _pack_int6: (n, 3B/4) bytes -> (n, B) 6-bit codes."""
    b = packed.astype(np.uint32).reshape(packed.shape[0], -1, 3)
    w = b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16)
    return np.stack([(w >> s) & 0x3F for s in (0, 6, 12, 18)], axis=-1).astype(np.uint8).reshape(packed.shape[0], -1)


FLT_MAX = np.float32(np.finfo(np.float32).max)
LIFT_BELOW, LIFT_ABOVE = np.float32(2.0 ** -64), np.float32(2.0 ** 64)
SHIFT_BELOW, SHIFT_ABOVE = np.float32(2.0 ** -100), np.float32(2.0 ** 100)
TOP = np.float32(FLT_MAX * np.float32(2.0 ** -64))  # FLT_MAX 2^-64: the largest value a K = 64 decode keeps finite
DOWN, UP = np.float32(2.0 ** -64), np.float32(2.0 ** 64)


def _lift(m0: np.ndarray, adaptive: bool) -> np.ndarray:
    """Exact power of two applied before quantising by codecs without the adaptive scale:
    2^64 for blocks with max below 2^-64 (Qmax / m stays finite), 2^-64 for blocks with
    max at least 2^64 (the rotation cannot overflow), else 1."""
    if adaptive:
        return np.ones(m0.shape, np.float32)
    return np.where(m0 < LIFT_BELOW, LIFT_ABOVE,
                    np.where(m0 >= LIFT_ABOVE, LIFT_BELOW, np.float32(1.0))).astype(np.float32)


def _next_up(s: np.ndarray) -> np.ndarray:
    return np.nextafter(s, np.float32(np.inf)).astype(np.float32)


def _decode_scales(c: "_Codec", scales: list):
    """[(alpha, s)] per input (at least one) -> ([d per input], K, sat). K is the block's
    exponent shift: per input 64 when d = (s*c)/alpha is above 2^100 (the rotation back could
    overflow), -64 when below 2^-100 (code * d would lose bits to underflow),
    else 0 (the plain decode), told from t = s*c and alpha without the division; 64 for a wide
    input (s < 0: its values are |s|'s times 2^64); the block takes the largest. With K != 0
    every d is computed from s * 2^-K (a wide input's from |s|). sat: the block is one input
    that is not wide, whose decode saturates at +-FLT_MAX (a lone finite input never decodes to
    Inf); a sum of several does not (it overflows as NCCL's sum does)."""
    with np.errstate(all="ignore"):
        ks = []
        for a, s in scales:
            t, aa = np.abs(s * c.c), np.abs(a)
            ks.append(np.where(s < 0, 64, np.where(t > aa * SHIFT_ABOVE, 64, np.where(t < aa * SHIFT_BELOW, -64, 0))))
        K = np.max(ks, axis=0).astype(np.int64)
        shift = np.ldexp(np.float32(1), -K).astype(np.float32)
        ds = [((np.where(s < 0, -s, s * shift).astype(np.float32) * c.c) / a).astype(np.float32) for a, s in scales]
        sat = np.full(K.shape, len(scales) == 1) & ~(scales[0][1] < 0)
    return ds, K, sat


def _saturate(r: np.ndarray, sat: np.ndarray) -> np.ndarray:
    """r clamped at +-FLT_MAX 2^-64 in the blocks where sat holds."""
    return np.where(sat[:, None] & (np.abs(r) > TOP), np.copysign(TOP, r), r).astype(np.float32)


def _unshift(r: np.ndarray, K: np.ndarray, sat: np.ndarray) -> np.ndarray:
    """The decoded block back from 2^-K: saturated at +-FLT_MAX where sat holds, else +-Inf past
    it (K = 64), rounded once into the subnormal range (K = -64)."""
    with np.errstate(all="ignore"):
        up = _saturate(r, sat) * UP
        down = r * DOWN
        return np.where((K > 0)[:, None], up, np.where((K < 0)[:, None], down, r)).astype(np.float32)


def _compress_blocks(c: _Codec, v: np.ndarray):
    """v: (nblocks, B) float32 -> (codes uint8 (nblocks, B), alpha, s) all float32."""
    v = v.astype(np.float32, copy=True)
    with np.errstate(all="ignore"):
        m0 = _magnitude(v).max(axis=1)
        bad = ~(m0 <= np.finfo(np.float32).max)
        alpha = np.ones(len(v), np.float32)
        if c.adaptive:
            e = np.frexp(np.where(bad, np.float32(1), m0))[1].astype(np.int64)
            sh = 10 - e
            ha = np.trunc(sh / 2).astype(np.int64)  # C's truncating division
            k1 = np.ldexp(np.float32(1), ha).astype(np.float32)
            k2 = np.ldexp(np.float32(1), sh - ha).astype(np.float32)
            u = (np.abs(np.where(bad[:, None], np.float32(0), v)) * k1[:, None]) * k2[:, None]
            r = (u + np.float32(2.0 ** 23)).astype(np.float32).view(np.int32).astype(np.int64) - 0x4B000000
            S = (r * r).sum(axis=1)
            mean_sq = np.ldexp(S.astype(np.float64), 2 * e - 20 - c.log2B)
            alpha = (TAU / np.sqrt(mean_sq + EPS)).astype(np.float32)
            v = v * alpha[:, None]
        lift = _lift(m0, c.adaptive)
        v = v * lift[:, None]
        m = m0 * lift
        if c.rotate:
            v = _fwht(v)
            m = _magnitude(v).max(axis=1)
        q = np.float32(_QMAX[c.fmt])
        s_lifted = (m * c.c) / q
        s = s_lifted / lift
        inv = np.where(m > 0, q / np.where(m > 0, m, np.float32(1)), np.float32(0)).astype(np.float32)
        # the stored scale lost bits (subnormal) or overflowed: round it up (saturate at
        # FLT_MAX), and take the codes from the scale the decoder will see
        off = s * lift != s_lifted
        s = np.where(off & (s == np.inf), FLT_MAX, np.where(off & (s * lift < s_lifted), _next_up(s), s))
        inv = np.where(off, c.c / np.where(off, s * lift, np.float32(1)), inv).astype(np.float32)
        codes = _encode(v * inv[:, None], c.fmt)
    codes = np.where(bad[:, None], np.uint8(_NAN_CODE[c.fmt]), codes).astype(np.uint8)
    s = np.where(bad, CANONICAL_NAN, s).astype(np.float32)
    alpha = np.where(bad, CANONICAL_NAN, alpha).astype(np.float32)
    return codes, alpha, s


def _to_wire(c: _Codec, v: np.ndarray, dtype) -> np.ndarray:
    """Elementwise codecs: fp32 values -> wire elements. bf16 rounds to nearest even; for fp32
    data it saturates: a finite value beyond bf16's largest finite (it would round to Inf) becomes
    +-0x7F7F; NaN and Inf stay. 16-bit data cannot reach it, and a sum of it that does is Inf,
    as in the dtype itself. `none` is the dtype itself."""
    if c.fmt != "bf16":
        w = v.astype(np.dtype(dtype))
        if w.dtype == np.float32:
            return w
        # 16-bit data goes through fp32 in the library, whose conversion back writes every NaN as 0x7FFF
        return np.where(np.isnan(w), np.uint16(0x7FFF), w.view(np.uint16)).astype(np.uint16).view(w.dtype)
    v = v.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # NaN and values past bf16's range are meant
        if np.dtype(dtype) != np.float32:  # 16-bit data: a sum past bf16's range is Inf in the dtype too
            w = v.astype(ml_dtypes.bfloat16)
        else:
            u = v.view(np.uint32)
            over = ((u & np.uint32(0x7FFFFFFF)) - np.uint32(0x7F7F8000)) < np.uint32(0x8000)
            w = np.where(over, u - np.uint32(0x8000), u).astype(np.uint32).view(np.float32).astype(ml_dtypes.bfloat16)
    # every NaN as the library's conversion writes it (CUDA's canonical bf16 NaN), sign and payload dropped
    return np.where(np.isnan(v), np.uint16(0x7FFF), w.view(np.uint16)).astype(np.uint16).view(ml_dtypes.bfloat16)


def _as_blocks(x: np.ndarray, c: _Codec) -> np.ndarray:
    n = x.size
    nb = -(-n // c.B)
    v = np.zeros(nb * c.B, np.float32)
    v[:n] = x.astype(np.float32).reshape(-1)
    return v.reshape(nb, c.B)


def _header(c: _Codec, count: int, dtype) -> bytes:
    return struct.pack("<IBBBBQ", MAGIC, c.id, c.version, c.log2B if c.blocked else 0, _dtype_code(dtype), count)


def _pack(c: _Codec, count: int, dtype, codes: np.ndarray, alpha=None, s=None) -> np.ndarray:
    nblocks, ncodes, scales_off, nscales, total = c.layout(count, np.dtype(dtype))
    wire = np.zeros(total, np.uint8)
    wire[:HEADER_BYTES] = np.frombuffer(_header(c, count, dtype), np.uint8)
    if c.fmt == "int4":
        codes = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    elif c.fmt == "int6":
        codes = _pack_int6(codes)
    flat = np.ascontiguousarray(codes).reshape(-1).view(np.uint8)
    wire[HEADER_BYTES:HEADER_BYTES + ncodes] = flat[:ncodes]
    if c.blocked:
        sc = np.stack([alpha, s], axis=1).reshape(-1) if c.adaptive else s
        wire[scales_off:scales_off + nscales] = sc.astype(np.float32).view(np.uint8)
    return wire


def _unpack(c: _Codec, wire: np.ndarray, count: int, dtype):
    if isinstance(wire, (bytes, bytearray, memoryview)):  # the wire's bytes as compress() returns them
        wire = np.frombuffer(wire, np.uint8)
    wire = np.asarray(wire, dtype=np.uint8).reshape(-1)
    nblocks, ncodes, scales_off, nscales, total = c.layout(count, np.dtype(dtype))
    if wire.size < total:
        raise ValueError(f"wire argument is {wire.size} bytes, {total} needed")
    magic, cid, ver, log2b, dt, cnt = struct.unpack("<IBBBBQ", wire[:HEADER_BYTES].tobytes())
    if magic != MAGIC or cid != c.id or ver != c.version or log2b != (c.log2B if c.blocked else 0) or cnt != count:
        raise ValueError(f"wire argument: header (codec {cid}, count {cnt}) does not match codec {c.name!r}, "
                         f"count {count}")
    if dt not in _DTYPES.values():
        raise ValueError(f"wire argument: header datatype byte {dt} is not a tacoDataType_t")
    if c.fmt == "raw" and dt != _dtype_code(dtype):
        raise ValueError("wire argument of codec 'none' holds another datatype")
    payload = wire[HEADER_BYTES:HEADER_BYTES + ncodes]
    if not c.blocked:
        wt = ml_dtypes.bfloat16 if c.fmt == "bf16" else np.dtype(dtype)
        return payload.view(wt).astype(np.float32), None
    if c.fmt == "int4":
        packed = payload.reshape(nblocks, c.B // 2)
        codes = np.empty((nblocks, c.B), np.uint8)
        codes[:, 0::2] = packed & 0xF
        codes[:, 1::2] = packed >> 4
    elif c.fmt == "int6":
        codes = _unpack_int6(payload.reshape(nblocks, c.B // 4 * 3))
    else:
        codes = payload.reshape(nblocks, c.B)
    sc = wire[scales_off:scales_off + nscales].view(np.float32)
    if c.adaptive:
        alpha, s = sc[0::2], sc[1::2]
    else:
        alpha, s = np.ones(nblocks, np.float32), sc
    return _decode(codes, c.fmt), (alpha, s)


# ---------------------------------------------------------------- public API
def compress(x: np.ndarray, codec: str = "taco", block: int | None = None) -> np.ndarray:
    """The wire bytes of x (float32, float16 or bfloat16) under `codec`."""
    x = np.asarray(x)
    _dtype_code(x.dtype)
    if x.size == 0:
        raise ValueError("x argument is empty")
    c = _Codec(codec, block)
    flat = x.reshape(-1)
    if not c.blocked:
        codes = _to_wire(c, flat.astype(np.float32), x.dtype).view(np.uint8).reshape(1, -1)
        return _pack(c, x.size, x.dtype, codes)
    codes, alpha, s = _compress_blocks(c, _as_blocks(flat, c))
    return _pack(c, x.size, x.dtype, codes, alpha, s)


def _accumulate(c: _Codec, wires, count: int, dtype, exact):
    """(y, wide): the fp32 sum of the decoded inputs (+ exact), padded to whole blocks (nblocks, B)
    or flat, and for block codecs the same sum scaled by 2^-64 (the wide block that
    decompress_reduce_compress writes where y overflowed; None for the others)."""
    unpacked = [_unpack(c, w, count, dtype) for w in wires]
    shape = (count,) if not c.blocked else (-(-count // c.B), c.B)
    parts = [f for f, _ in unpacked]
    ex = None
    if exact is not None:
        e = np.asarray(exact).reshape(-1)
        if e.size != count or e.dtype != np.dtype(dtype):
            raise ValueError("exact argument must have count elements of dtype")
        ex = e.astype(np.float32) if not c.blocked else _as_blocks(e, c)
    with np.errstate(all="ignore"):
        if not c.blocked:
            r = np.zeros(shape, np.float32) if not parts else parts[0].copy()
            for p in parts[1:]:
                r = r + p
            return (r if ex is None else r + ex), None
        if unpacked:
            ds, K, sat = _decode_scales(c, [sc for _, sc in unpacked])
            parts = [f * d[:, None] for f, d in zip(parts, ds)]
            F = parts[0].copy()
            for p in parts[1:]:
                F = F + p
        else:
            K, sat = np.zeros(shape[0], np.int64), np.zeros(shape[0], bool)
            F = np.zeros(shape, np.float32)
        if c.rotate:
            F = _fwht(F)
        y = _unshift(F, K, sat)
        top = (K > 0)[:, None]
        Fs = _saturate(F, sat)
        wide = np.where(top, Fs, y * DOWN).astype(np.float32)
        if ex is not None:
            # at K = 64 the exact input joins the sum scaled where F alone is past FLT_MAX
            y_top = np.where(np.abs(Fs) > TOP, (Fs + ex * DOWN) * UP, Fs * UP + ex).astype(np.float32)
            y = np.where(top, y_top, y + ex).astype(np.float32)
            wide = (wide + ex * DOWN).astype(np.float32)
    return y, wide


def _finish(r: np.ndarray, count: int, dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # beyond a 16-bit dtype's range: Inf, as IEEE rounding gives
        return r.reshape(-1)[:count].astype(np.dtype(dtype))


def decompress(wire, codec: str, count: int, dtype=np.float32, block: int | None = None) -> np.ndarray:
    """Decompress `count` elements of `dtype` from wire bytes."""
    return decompress_accumulate([wire], codec, count, dtype, block=block)


def decompress_accumulate(wires, codec: str, count: int, dtype=np.float32, exact=None,
                          block: int | None = None) -> np.ndarray:
    """Sum of the decompressed inputs plus `exact`, in fp32, rounded once to dtype."""
    c = _Codec(codec, block)
    _dtype_code(dtype)
    count = _count(count)
    return _finish(_accumulate(c, list(wires), count, dtype, exact)[0], count, dtype)


def decompress_reduce_compress(wires, codec: str, count: int, dtype=np.float32, exact=None,
                               block: int | None = None):
    """(wire, y): the fp32 sum (not rounded to dtype) compressed exactly as compress() would
    compress it, and the decompression of that wire rounded to dtype. A block of the sum that
    overflowed (holds +-Inf, while its scaled version is finite) is written wide: the scaled
    sum compressed, s stored negated."""
    c = _Codec(codec, block)
    _dtype_code(dtype)
    count = _count(count)
    r, wide = _accumulate(c, list(wires), count, dtype, exact)
    if not c.blocked:
        codes = _to_wire(c, r, dtype).view(np.uint8).reshape(1, -1)
        wire = _pack(c, count, dtype, codes)
    else:
        r, wide = r.copy(), wide.copy()
        r.reshape(-1)[count:] = 0.0  # the sum is compressed as compress() would: zero padding
        wide.reshape(-1)[count:] = 0.0
        use = ~np.all(np.isfinite(r), axis=1) & np.all(np.isfinite(wide), axis=1)
        codes, alpha, s = _compress_blocks(c, np.where(use[:, None], wide, r).astype(np.float32))
        s = np.where(use, -s, s).astype(np.float32)
        wire = _pack(c, count, dtype, codes, alpha, s)
    return wire, decompress(wire, codec, count, dtype, block=block)


# ---- collective model (collectives helper) ----
# A numpy model of libtaco's compressed collectives, bit for bit (docs/collectives.md),
# built only from the codec functions above. `parts[r]` is rank r's input; outputs are
# what every rank holds (AllReduce, AllGather: one array, identical on every rank) or
# what each rank holds (ReduceScatter, AlltoAll: a list indexed by rank).
# `chunk_bytes` mirrors the communicator's chunkBytes (None: one chunk) and never
# changes the result; `fallback_bytes` mirrors fallbackBytes (messages smaller than it
# take the plain, exact path); codec "none" is always the plain path.

PLAIN_GRANULE = 256  # plan granularity for codecs without blocks (coll/plan.h kPlainGranule)


def _plan_block(codec: str, block: int | None) -> int:
    return codec_params(codec, block)["block"] or PLAIN_GRANULE


def shard_plan(count: int, P: int, block: int) -> list:
    """[(offset, length)] of the P AllReduce shards: whole blocks, balanced, the first
    (nblocks % P) shards one block longer; empty shards sit at `count` (coll/plan.cc)."""
    nblocks = -(-count // block)
    base, rem = divmod(nblocks, P)
    out, blk = [], 0
    for r in range(P):
        nb = base + (1 if r < rem else 0)
        off, end = min(blk * block, count), min((blk + nb) * block, count)
        out.append((off, end - off))
        blk += nb
    return out


def piece_elems(chunk_bytes: int | None, P: int, itemsize: int, block: int, longest: int) -> int:
    """Elements each shard gives to one chunk: chunk_bytes / P rounded down to whole
    blocks, at least one block (None: the longest shard, i.e. one chunk)."""
    if chunk_bytes is None:
        return max(block, -(-longest // block) * block)
    return max(1, (chunk_bytes // P) // (itemsize * block)) * block


def _pieces(shard: tuple, pe: int):
    off, n = shard
    for start in range(0, n, pe):
        yield off + start, min(pe, n - start)


def _check_parts(parts, per_rank=None):
    parts = [np.asarray(p).reshape(-1) for p in parts]
    if not parts:
        raise ValueError("parts argument is empty")
    dt = parts[0].dtype
    _dtype_code(dt)
    n = parts[0].size
    for r, p in enumerate(parts):
        if p.dtype != dt or p.size != n:
            raise ValueError(f"parts[{r}] has {p.size} x {p.dtype}, parts[0] has {n} x {dt}")
    if per_rank is not None and n % len(parts):
        raise ValueError(f"parts have {n} elements, not a multiple of P = {len(parts)}")
    return parts, dt, n


def _plain_sum(arrays, dt):
    s = arrays[0].astype(np.float32)
    with np.errstate(all="ignore"):
        for a in arrays[1:]:
            s = s + a.astype(np.float32)
    return s.astype(dt)


def _is_plain(codec, nbytes, fallback_bytes):
    return codec_params(codec)["id"] == 0 or nbytes < fallback_bytes


ALGOS = ("twoshot", "oneshot", "oneshot-raw")


def allreduce_oneshot(parts, codec: str = "taco", block: int | None = None) -> np.ndarray:
    """One-shot AllReduce: every rank decodes every rank's compressed input and sums them
    in fp32 in rank order 0..P-1, its own input through the codec too, so every rank holds
    the same bits. One quantization per partial (two-shot has two). Chunking cannot
    change the bits: chunks are whole blocks. Codec `none` is the uncompressed one-shot
    (fp32 sum in rank order, rounded once)."""
    parts, dt, count = _check_parts(parts)
    if codec_params(codec)["id"] == 0:
        return _plain_sum(parts, dt)
    wires = [compress(p, codec, block=block) for p in parts]
    return decompress_accumulate(wires, codec, count, dt, block=block)


def allreduce_ranks(parts, codec: str = "taco", block: int | None = None, chunk_bytes: int | None = None,
                    fallback_bytes: int = 0, algo: str = "twoshot") -> list:
    """What each rank holds after the AllReduce. `algo`: "twoshot" (staged or fused: the
    same bits; the owner takes its piece from the reduce kernel's own decompression (y),
    the others decompress the gathered bytes), "oneshot", or "oneshot-raw" (the
    uncompressed one-shot, whatever `codec`)."""
    if algo not in ALGOS:
        raise ValueError(f"algo argument {algo!r} is not one of {ALGOS}")
    if algo != "twoshot":
        out = allreduce_oneshot(parts, "none" if algo == "oneshot-raw" else codec, block)
        return [out.copy() for _ in parts]
    parts, dt, count = _check_parts(parts)
    P = len(parts)
    if _is_plain(codec, count * dt.itemsize, fallback_bytes):
        s = _plain_sum(parts, dt)
        return [s.copy() for _ in range(P)]
    B = _plan_block(codec, block)
    shards = shard_plan(count, P, B)
    pe = piece_elems(chunk_bytes, P, dt.itemsize, B, max(n for _, n in shards))
    outs = [np.zeros(count, dt) for _ in range(P)]
    for o in range(P):  # owner
        for off, n in _pieces(shards[o], pe):
            wires = [compress(parts[j][off:off + n], codec, block=block) for j in range(P) if j != o]
            wire, y = decompress_reduce_compress(wires, codec, n, dt, exact=parts[o][off:off + n], block=block)
            for r in range(P):
                outs[r][off:off + n] = y if r == o else decompress(wire, codec, n, dt, block=block)
    return outs


def allreduce(parts, codec: str = "taco", block: int | None = None, chunk_bytes: int | None = None,
              fallback_bytes: int = 0, algo: str = "twoshot") -> np.ndarray:
    """The sum every rank holds after tacoAllReduce (bit-identical on every rank)."""
    return allreduce_ranks(parts, codec, block, chunk_bytes, fallback_bytes, algo)[0]


def reduce_scatter(parts, codec: str = "taco", block: int | None = None, chunk_bytes: int | None = None,
                   fallback_bytes: int = 0) -> list:
    """out[r] = rank r's recvbuff after tacoReduceScatter; parts[j] has P * recvcount elements.
    Others' partials are quantized once, the own partial is exact, fp32 sum rounded once."""
    parts, dt, total = _check_parts(parts, per_rank=True)
    P = len(parts)
    n = total // P
    if _is_plain(codec, total * dt.itemsize, fallback_bytes):
        return [_plain_sum([p[r * n:(r + 1) * n] for p in parts], dt) for r in range(P)]
    B = _plan_block(codec, block)
    pe = piece_elems(chunk_bytes, P, dt.itemsize, B, n)
    outs = []
    for r in range(P):
        out = np.zeros(n, dt)
        for po, ln in _pieces((0, n), pe):
            lo = r * n + po
            wires = [compress(parts[j][lo:lo + ln], codec, block=block) for j in range(P) if j != r]
            out[po:po + ln] = decompress_accumulate(wires, codec, ln, dt, exact=parts[r][lo:lo + ln], block=block)
        outs.append(out)
    return outs


def allgather(parts, codec: str = "taco", block: int | None = None, chunk_bytes: int | None = None,
              fallback_bytes: int = 0) -> np.ndarray:
    """What every rank holds after tacoAllGather: block j = decompress(compress(parts[j])),
    the own block included (bit-identical on every rank)."""
    parts, dt, n = _check_parts(parts)
    P = len(parts)
    if _is_plain(codec, n * P * dt.itemsize, fallback_bytes):
        return np.concatenate(parts)
    B = _plan_block(codec, block)
    pe = piece_elems(chunk_bytes, P, dt.itemsize, B, n)
    out = np.zeros(n * P, dt)
    for j in range(P):
        for po, ln in _pieces((0, n), pe):
            wire = compress(parts[j][po:po + ln], codec, block=block)
            out[j * n + po:j * n + po + ln] = decompress(wire, codec, ln, dt, block=block)
    return out


def alltoall(parts, codec: str = "taco", block: int | None = None, chunk_bytes: int | None = None,
             fallback_bytes: int = 0) -> list:
    """out[r] = rank r's recvbuff after tacoAlltoAll: block j = decompress(compress(block r
    of parts[j])); the own block goes through the codec too (one quantization everywhere)."""
    parts, dt, total = _check_parts(parts, per_rank=True)
    P = len(parts)
    n = total // P
    if _is_plain(codec, total * dt.itemsize, fallback_bytes):
        return [np.concatenate([parts[j][r * n:(r + 1) * n] for j in range(P)]) for r in range(P)]
    B = _plan_block(codec, block)
    pe = piece_elems(chunk_bytes, P, dt.itemsize, B, n)
    outs = []
    for r in range(P):
        out = np.zeros(n * P, dt)
        for j in range(P):
            for po, ln in _pieces((0, n), pe):
                lo = r * n + po
                wire = compress(parts[j][lo:lo + ln], codec, block=block)
                out[j * n + po:j * n + po + ln] = decompress(wire, codec, ln, dt, block=block)
        outs.append(out)
    return outs

"""Fuzzing the host codec and the spec parser with a fixed seed, in bounded time (~20 s in all).

Random bytes, valid headers with random payloads, mutated wires (bit flips, header fields) and
truncated wires go through decompress, decompress-accumulate and decompress-reduce-compress, in
Python and straight through the C entry points; random spec strings go through tacoCodecFind and
taco.find_codec. The only outcomes allowed are a taco error (InvalidArgumentError) or well-formed
output: the right shape and dtype (NaN and Inf are fine: random bits are random numbers). A crash
or any other exception fails.
"""
import re
import struct
import time

import ml_dtypes
import numpy as np
import pytest

import taco
from taco import reference as ref

SEED = 20240611
DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
          "bfloat16": np.dtype(ml_dtypes.bfloat16)}
BLOCKS = [32, 64, 128, 256, 512, 1024]
MAGIC = 0x4F434154
SECONDS = 4.0  # per test; five tests


@pytest.fixture(scope="module")
def lib():
    return taco._lib.lib()


def budget(seconds=SECONDS):
    """Iterate until the time is spent (at least 50 rounds, so a slow machine still fuzzes)."""
    end = time.monotonic() + seconds
    i = 0
    while i < 50 or time.monotonic() < end:
        yield i
        i += 1


def random_codec(rng):
    """(spec, codec) for a random codec and block size."""
    name = taco.codecs()[rng.integers(len(taco.codecs()))]
    info = taco.codec_info(name)
    spec = name if info["block_size"] == 0 or rng.random() < 0.3 else f"{name}:block={rng.choice(BLOCKS)}"
    return spec, taco.find_codec(spec)


def random_case(rng):
    spec, c = random_codec(rng)
    count = int(rng.integers(1, 700))
    dname = list(DTYPES)[rng.integers(3)]
    return spec, c, count, dname


def header(c, count, dname, change=None):
    f = dict(magic=MAGIC, id=c.id, version=1, log2b=c.blockSize.bit_length() - 1 if c.blockSize else 0,
             dtype=list(DTYPES).index(dname), count=count)
    f.update(change or {})
    return np.frombuffer(struct.pack("<IBBBBQ", *f.values()), np.uint8)


def valid_header_random_payload(rng, c, count, dname):
    w = rng.integers(0, 256, taco.compressed_size(c, count, dname), dtype=np.uint8)
    w[:16] = header(c, count, dname)
    return w


def mutate(rng, wire, c, count, dname):
    """A random mutation of a wire: bit flips anywhere, a changed header field, or a truncation."""
    w = wire.copy()
    kind = rng.integers(4)
    if kind == 0:
        for _ in range(int(rng.integers(1, 8))):
            pos = int(rng.integers(w.size))
            w[pos] ^= np.uint8(1 << int(rng.integers(8)))
    elif kind == 1:
        field = ["magic", "id", "version", "log2b", "dtype", "count"][rng.integers(6)]
        top = {"magic": 1 << 32, "count": 1 << 64}.get(field, 256)
        w[:16] = header(c, count, dname, {field: int(rng.integers(0, top, dtype=np.uint64))})
    elif kind == 2:
        w = w[:int(rng.integers(0, w.size))]
    else:
        w[16:] = rng.integers(0, 256, w.size - 16, dtype=np.uint8)
    return w


def well_formed(y, count, dname):
    assert isinstance(y, np.ndarray) and y.shape == (count,) and y.dtype == DTYPES[dname]


def run_all(rng, spec, count, dname, wires):
    """Each of the three operations on `wires`: a taco error or well-formed output."""
    try:
        well_formed(taco.decompress(wires[0], spec, count, dname), count, dname)
    except taco.InvalidArgumentError:
        pass
    exact = rng.standard_normal(count).astype(DTYPES[dname]) if rng.random() < 0.5 else None
    try:
        well_formed(taco.decompress_accumulate(wires, spec, count, dname, exact), count, dname)
    except taco.InvalidArgumentError:
        pass
    try:
        out, y = taco.decompress_reduce_compress(wires, spec, count, dname, exact, return_decompressed=True)
        assert out.dtype == np.uint8 and out.shape == (taco.compressed_size(spec, count, dname),)
        well_formed(y, count, dname)
        well_formed(taco.decompress(out, spec, count, dname), count, dname)  # what it wrote is a valid wire
    except taco.InvalidArgumentError:
        pass


def test_fuzz_random_bytes():
    rng = np.random.default_rng(SEED)
    for _ in budget():
        spec, c, count, dname = random_case(rng)
        n = taco.compressed_size(c, count, dname) if rng.random() < 0.7 else int(rng.integers(0, 4096))
        w = rng.integers(0, 256, n, dtype=np.uint8)
        if rng.random() < 0.3 and n >= 4:
            w[:4] = np.frombuffer(struct.pack("<I", MAGIC), np.uint8)  # get past the magic
        run_all(rng, spec, count, dname, [w])


def test_fuzz_valid_headers_with_random_payloads():
    rng = np.random.default_rng(SEED + 1)
    for _ in budget():
        spec, c, count, dname = random_case(rng)
        wires = [valid_header_random_payload(rng, c, count, dname) for _ in range(int(rng.integers(1, 4)))]
        # every one of these is a valid wire: all three operations must succeed
        well_formed(taco.decompress(wires[0], spec, count, dname), count, dname)
        well_formed(taco.decompress_accumulate(wires, spec, count, dname), count, dname)
        out, y = taco.decompress_reduce_compress(wires, spec, count, dname, return_decompressed=True)
        well_formed(y, count, dname)


def test_fuzz_mutated_and_truncated_wires():
    rng = np.random.default_rng(SEED + 2)
    for _ in budget():
        spec, c, count, dname = random_case(rng)
        with np.errstate(over="ignore"):  # fp16 and bf16 overflow to Inf: an input like any other
            x = (rng.laplace(size=count) * 10.0 ** rng.integers(-20, 20)).astype(np.float32).astype(DTYPES[dname])
        wire = taco.compress(x, spec)
        wires = [mutate(rng, wire, c, count, dname) if rng.random() < 0.7 else wire
                 for _ in range(int(rng.integers(1, 4)))]
        run_all(rng, spec, count, dname, wires)


def test_fuzz_c_entry_points(lib):
    """The C functions themselves, with the byte counts and input counts Python would refuse."""
    rng = np.random.default_rng(SEED + 3)
    f = taco._lib.ffi()
    for _ in budget():
        spec, c, count, dname = random_case(rng)
        dt = taco._arrays.taco_dtype(dname)
        need = taco.compressed_size(c, count, dname)
        base = taco.compress(rng.standard_normal(count).astype(DTYPES[dname]), spec)
        k = int(rng.integers(0, 5))
        wires = [mutate(rng, base, c, count, dname) for _ in range(k)]
        arena = np.zeros(need + 64, np.uint8)  # inBytes may claim more than a mutated wire holds: copy into room
        copies = []
        for w in wires:
            a = arena.copy()
            a[:w.size] = w
            copies.append(a)
        in_bytes = need if rng.random() < 0.6 else int(rng.integers(0, need + 64))
        n_inputs = k if rng.random() < 0.9 else int(rng.choice([-1, 65, 1 << 20]))
        ptrs = f.new("const void*[]", [f.cast("const void*", a.ctypes.data) for a in copies] or [f.NULL])
        y = np.empty(count, DTYPES[dname])
        out = np.empty(need, np.uint8)
        vp = lambda a: f.cast("void*", a.ctypes.data)  # noqa: E731
        calls = [
            lambda: lib.tacoHostDecompress(c, ptrs[0], in_bytes, vp(y), count, dt),
            lambda: lib.tacoHostDecompressAccumulate(c, ptrs, n_inputs, in_bytes, f.NULL, vp(y), count, dt),
            lambda: lib.tacoHostDecompressReduceCompress(c, ptrs, n_inputs, in_bytes, f.NULL, vp(out), need,
                                                         vp(y), count, dt),
        ]
        for call in calls:
            rc = call()
            assert rc in (lib.tacoSuccess, lib.tacoInvalidArgument), rc
            if rc != lib.tacoSuccess:
                assert f.string(lib.tacoGetLastError(f.NULL)), "a failure without a message"


SPEC_RE = re.compile(r"(?P<name>[a-z0-9-]+)(:block=(?P<block>[0-9]+))?")


def expected_codec(spec: str):
    """What a strict parser must make of `spec`: (id, block) or None (refused)."""
    m = SPEC_RE.fullmatch(spec)
    if m is None or m["name"] not in taco.codecs():
        return None
    info = taco.codec_info(m["name"])
    if m["block"] is None:
        return info["id"], info["block_size"]
    b = int(m["block"])
    if info["block_size"] == 0 or b not in BLOCKS:
        return None
    return info["id"], b


def random_spec(rng):
    pieces = taco.codecs() + [":", "block", "=", ":block=", "0", "1", "2", "3", "5", "6", "8", "256", "1024",
                              "+", "-", " ", "\t", "\0", "x", "A", ".", "e", "\u00e4", "\ud800", "\u0662"]
    if rng.random() < 0.5:  # a valid spec, then mutated
        name = taco.codecs()[rng.integers(8)]
        s = list(name + (f":block={rng.choice(BLOCKS)}" if rng.random() < 0.6 else ""))
        for _ in range(int(rng.integers(0, 3))):
            op, pos = rng.integers(3), int(rng.integers(len(s) + 1))
            if op == 0 and s:
                del s[min(pos, len(s) - 1)]
            elif op == 1:
                s.insert(pos, str(rng.choice(pieces)))
            elif s:
                s[min(pos, len(s) - 1)] = chr(int(rng.integers(1, 128)))
        return "".join(s)
    return "".join(str(rng.choice(pieces)) for _ in range(int(rng.integers(0, 6))))


def test_fuzz_spec_strings(lib):
    rng = np.random.default_rng(SEED + 4)
    f = taco._lib.ffi()
    out = f.new("tacoCodec_t*")
    for _ in budget():
        spec = random_spec(rng)
        want = expected_codec(spec)
        try:
            c = taco.find_codec(spec)
            got = (c.id, c.blockSize)
        except taco.InvalidArgumentError:
            got = None
        assert got == want, f"taco.find_codec({spec!r}) gave {got}, the grammar says {want}"
        # the C parser alone, on the bytes up to the first NUL (what a C caller passes)
        raw = spec.encode("utf-8", "surrogatepass")
        rc = lib.tacoCodecFind(raw, out)
        cut = raw.split(b"\0")[0].decode("utf-8", "replace")
        want_c = expected_codec(cut)
        assert (rc == lib.tacoSuccess) == (want_c is not None), f"tacoCodecFind({raw!r}) returned {rc}"
        assert rc in (lib.tacoSuccess, lib.tacoInvalidArgument)
        if rc == lib.tacoSuccess:
            assert (out.id, out.blockSize) == want_c
        # the numpy spec's parser agrees on what is a spec
        try:
            ref_ok = ref.codec_params(spec) is not None
        except ValueError:
            ref_ok = False
        assert ref_ok == (want is not None), f"reference parser on {spec!r}"

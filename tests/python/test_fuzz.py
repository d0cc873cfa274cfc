"""Fuzzing the host codec and the spec parser: a fixed number of cases per test, drawn with a
fixed seed (the same cases on every machine), codecs from taco.codecs().

Valid wires, random payloads under valid headers, payload bit flips, changed header fields,
random bytes and truncated wires (tests/fuzz_cases.py) go through decompress,
decompress-accumulate and decompress-reduce-compress, in Python and straight through the C
entry points; random spec strings go through tacoCodecFind and taco.find_codec. Each case's
outcome is the one the format says (fuzz_cases.refusal): a valid input gives well-formed output
(NaN and Inf are fine: random bits are random numbers), an invalid one exactly the refusal the
spec names, with its message; and at least fuzz_cases.ACCEPTED_SHARE of the cases are accepted.
"""
import re

import numpy as np
import pytest

import taco
from taco import reference as ref
import fuzz_cases as fz
from fuzz_cases import BLOCKS, DTYPES

SEED = 20240611
CASES = 150  # per test


@pytest.fixture(scope="module")
def lib():
    return taco._lib.lib()


def random_case(rng):
    spec, c = fz.random_codec(rng)
    count = int(rng.integers(1, 700))
    dname = list(DTYPES)[int(rng.integers(3))]
    return spec, c, count, dname


def well_formed(y, count, dname):
    assert isinstance(y, np.ndarray) and y.shape == (count,) and y.dtype == DTYPES[dname]


def expect(call, want, what):
    """call() under the spec's verdict `want`: None (it must succeed; its result is returned) or
    the message its InvalidArgumentError must contain."""
    if want is None:
        return call()
    with pytest.raises(taco.InvalidArgumentError) as e:
        call()
    assert want in str(e.value), f"{what}: refused with {str(e.value)!r}, the spec says {want!r}"
    return None


def run_all(rng, spec, c, count, dname, wires, what):
    """The three operations on `wires`, each with the outcome the spec gives; True if accepted."""
    first = fz.refusal(wires[:1], c, count, dname)
    want = None if first is None else fz.py_message(first[1], "wire", wires[0], count, dname)
    y = expect(lambda: taco.decompress(wires[0], spec, count, dname), want, what + " decompress")
    if y is not None:
        well_formed(y, count, dname)
    bad = fz.refusal(wires, c, count, dname)
    want = None if bad is None else fz.py_message(bad[1], f"wires[{bad[0]}]", wires[bad[0]], count, dname)
    exact = rng.standard_normal(count).astype(DTYPES[dname]) if rng.random() < 0.5 else None
    acc = expect(lambda: taco.decompress_accumulate(wires, spec, count, dname, exact), want, what + " accumulate")
    if acc is not None:
        well_formed(acc, count, dname)
    res = expect(lambda: taco.decompress_reduce_compress(wires, spec, count, dname, exact, return_decompressed=True),
                 want, what + " reduce-compress")
    if res is not None:
        out, y2 = res
        assert out.dtype == np.uint8 and out.shape == (taco.compressed_size(spec, count, dname),)
        well_formed(y2, count, dname)
        well_formed(taco.decompress(out, spec, count, dname), count, dname)  # what it wrote is a valid wire
    return bad is None


def fuzz(seed, kinds, n_wires=(1, 4)):
    """CASES cases of wires of the given kinds; asserts the accepted share over them."""
    rng = np.random.default_rng(seed)
    accepted = 0
    for i in range(CASES):
        spec, c, count, dname = random_case(rng)
        ks = [kinds[int(rng.integers(len(kinds)))] for _ in range(int(rng.integers(*n_wires)))]
        wires = [fz.make_wire(rng, k, c, spec, count, dname) for k in ks]
        accepted += run_all(rng, spec, c, count, dname, wires, f"case {i}: {spec} count={count} {dname} {ks}")
    return accepted


def test_fuzz_every_kind_of_wire():
    # one wire per case: an accepted kind half the time
    accepted = fuzz(SEED, fz.KINDS, (1, 2))
    assert accepted >= fz.ACCEPTED_SHARE * CASES, f"only {accepted} of {CASES} cases were accepted"


def test_fuzz_valid_headers_with_random_payloads():
    # every one of these is a valid wire: all three operations must succeed
    assert fuzz(SEED + 1, ("payload",)) == CASES


def test_fuzz_mutated_and_truncated_wires():
    accepted = fuzz(SEED + 2, ("valid", "bitflip", "header", "truncated"))
    assert accepted >= 0.1 * CASES, f"only {accepted} of {CASES} cases were accepted"
    assert accepted < CASES, "no case was refused: the mutations are not reaching the checks"


def c_expectation(c, count, dname, arenas, in_bytes, n_inputs, op):
    """The spec's verdict for a C host call on `arenas` (wire copies with room behind them):
    None or the message its failure must contain. `op`: "decompress", "accumulate" or
    "reduce-compress"."""
    need = taco.compressed_size(c, count, dname)
    name = {"decompress": "tacoHostDecompress", "accumulate": "tacoHostDecompressAccumulate",
            "reduce-compress": "tacoHostDecompressReduceCompress"}[op]
    if op == "decompress":
        if not arenas:
            return f"{name}: in argument is NULL"
        if in_bytes < need:
            return f"{name}: inBytes argument is {in_bytes}, but in needs {need} bytes"
        why = fz.header_refusal(arenas[0], c, count, dname)
        return None if why is None else f"{name}: " + fz.c_message(why, "in")
    if not 0 <= n_inputs <= 64:
        return f"{name}: nInputs argument {n_inputs} is not in [0, 64]"
    if n_inputs > 0 and in_bytes < need:
        return f"{name}: inBytes argument is {in_bytes}, but inputs[0] needs {need} bytes"
    for q, a in enumerate(arenas):
        why = fz.header_refusal(a, c, count, dname)
        if why is not None:
            return f"{name}: " + fz.c_message(why, f"inputs[{q}]")
    return None


def test_fuzz_c_entry_points(lib):
    """The C functions themselves, with the byte counts and input counts Python would refuse."""
    rng = np.random.default_rng(SEED + 3)
    f = taco._lib.ffi()
    accepted = 0
    for i in range(CASES):
        spec, c, count, dname = random_case(rng)
        dt = taco._arrays.taco_dtype(dname)
        need = taco.compressed_size(c, count, dname)
        k = int(rng.integers(0, 5))
        wires = [fz.make_wire(rng, ("valid", "bitflip", "header", "truncated")[int(rng.integers(4))], c, spec,
                              count, dname) for _ in range(k)]
        arenas = []  # inBytes may claim more than a truncated wire holds: each is copied into room
        for w in wires:
            a = np.zeros(need + 64, np.uint8)
            a[:w.size] = w
            arenas.append(a)
        in_bytes = need if rng.random() < 0.6 else int(rng.integers(0, need + 64))
        n_inputs = k if rng.random() < 0.9 else int(rng.choice([-1, 65, 1 << 20]))
        ptrs = f.new("const void*[]", [f.cast("const void*", a.ctypes.data) for a in arenas] or [f.NULL])
        y = np.empty(count, DTYPES[dname])
        out = np.empty(need, np.uint8)
        vp = lambda a: f.cast("void*", a.ctypes.data)  # noqa: E731
        calls = {
            "decompress": lambda: lib.tacoHostDecompress(c, ptrs[0], in_bytes, vp(y), count, dt),
            "accumulate": lambda: lib.tacoHostDecompressAccumulate(c, ptrs, n_inputs, in_bytes, f.NULL, vp(y), count,
                                                                   dt),
            "reduce-compress": lambda: lib.tacoHostDecompressReduceCompress(c, ptrs, n_inputs, in_bytes, f.NULL,
                                                                            vp(out), need, vp(y), count, dt),
        }
        for op, call in calls.items():
            want = c_expectation(c, count, dname, arenas, in_bytes, n_inputs, op)
            rc = call()
            msg = f.string(lib.tacoGetLastError(f.NULL)).decode()
            what = f"case {i}: {op} {spec} count={count} {dname} k={k} inBytes={in_bytes} nInputs={n_inputs}"
            if want is None:
                assert rc == lib.tacoSuccess, f"{what}: refused ({msg}), the spec accepts it"
                accepted += 1
            else:
                assert rc == lib.tacoInvalidArgument, f"{what}: returned {rc}, the spec says {want!r}"
                assert want in msg, f"{what}: refused with {msg!r}, the spec says {want!r}"
    assert accepted >= fz.ACCEPTED_SHARE * 3 * CASES, f"only {accepted} of {3 * CASES} calls were accepted"


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
        name = taco.codecs()[int(rng.integers(len(taco.codecs())))]
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
    accepted = 0
    for _ in range(4 * CASES):
        spec = random_spec(rng)
        want = expected_codec(spec)
        try:
            c = taco.find_codec(spec)
            got = (c.id, c.blockSize)
        except taco.InvalidArgumentError as e:
            got = None
            assert "codec: " in str(e) and " : " not in str(e), e  # in the caller's words
        assert got == want, f"taco.find_codec({spec!r}) gave {got}, the grammar says {want}"
        accepted += got is not None
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
    assert accepted >= 0.15 * 4 * CASES, f"only {accepted} of {4 * CASES} specs parsed"

"""The codec fuzzers' cases and what the spec says of each, shared by tests/python/test_fuzz.py
(the host codec, through Python and the C entry points) and tests/gpu/test_fuzz_gpu.py (the
kernels against the host twin).

A case is a fixed kind of wire, drawn with a seeded generator: a valid wire, one with a random
payload under a valid header, one with bit flips in the payload, one with one header field
changed, random bytes, or a truncated wire. For each wire the expected outcome is computed here
from the format (docs/format.md), not from the library: accepted (None), or refused for one
reason, in the order the checks run (the size of the buffer, then the header: magic, codec id,
format version, block size, datatype byte, count, and for codec `none` the datatype). The tests
assert that every refusal is the expected one, with its message, and that a stated share of the
cases was accepted and compared.
"""
import struct

import ml_dtypes
import numpy as np

import taco

DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
          "bfloat16": np.dtype(ml_dtypes.bfloat16)}
BLOCKS = [32, 64, 128, 256, 512, 1024]
MAGIC = 0x4F434154
FIELDS = ["magic", "id", "version", "log2b", "dtype", "count"]

# Kinds of wire, and whether the spec accepts them. Half the kinds are valid wires, so that at
# least ACCEPTED_SHARE of the cases are accepted and compared (the tests assert it).
ACCEPTED_KINDS = ("valid", "payload", "bitflip")
REFUSED_KINDS = ("header", "random", "truncated")
KINDS = ACCEPTED_KINDS + REFUSED_KINDS
ACCEPTED_SHARE = 0.35

# The message (a substring) of each refusal, in Python's words (taco.decompress & co., the
# argument `name` of the wire) and in the C host functions' (tacoHost*, argument `arg`).
PY_MESSAGE = {
    "size": "{name}: is {size} bytes, but",
    "magic": "{name}: is not a libtaco compressed buffer",
    "id": "but {name} was compressed with codec",
    "version": "{name}: has wire format version",
    "log2b": "was compressed with block size",
    "dtype": "{name}: header datatype byte",
    "count": "count: {count}, but {name} holds",
    "raw-dtype": "dtype: {dname}, but {name} (codec 'none') holds",
}
C_MESSAGE = {
    "magic": "{arg} argument is not a libtaco buffer (bad magic",
    "id": "{arg} argument was compressed with codec id",
    "version": "{arg} argument has wire format version",
    "log2b": "{arg} argument's header has log2 block size",
    "dtype": "{arg} argument has datatype byte",
    "count": "{arg} argument holds",
    "raw-dtype": "{arg} argument of codec 'none' holds datatype",
}


def random_codec(rng):
    """(spec, codec): any codec of taco.codecs(), a blocked one at a random block size 70 % of
    the time."""
    names = taco.codecs()
    name = names[int(rng.integers(len(names)))]
    blocked = taco.codec_info(name)["block_size"] > 0
    spec = f"{name}:block={int(rng.choice(BLOCKS))}" if blocked and rng.random() < 0.7 else name
    return spec, taco.find_codec(spec)


def header(c, count, dname, change=None):
    f = dict(magic=MAGIC, id=c.id, version=taco.codec_info(c)["format_version"],
             log2b=c.blockSize.bit_length() - 1 if c.blockSize else 0, dtype=list(DTYPES).index(dname), count=count)
    f.update(change or {})
    return np.frombuffer(struct.pack("<IBBBBQ", *f.values()), np.uint8)


def changed_field(rng, c, count, dname):
    """One header field set to a different value: {field: value}."""
    field = FIELDS[int(rng.integers(len(FIELDS)))]
    now = dict(zip(FIELDS, struct.unpack("<IBBBBQ", header(c, count, dname).tobytes())))[field]
    top = {"magic": 1 << 32, "count": 1 << 64}.get(field, 256)
    while True:
        v = int(rng.integers(0, top, dtype=np.uint64))
        if v != now:
            return {field: v}


def make_wire(rng, kind, c, spec, count, dname):
    """A wire of `kind` for `count` elements of `dname` under codec c."""
    n = taco.compressed_size(c, count, dname)
    if kind == "random":
        return rng.integers(0, 256, n, dtype=np.uint8)
    if kind == "payload":
        w = rng.integers(0, 256, n, dtype=np.uint8)
        w[:16] = header(c, count, dname)
        return w
    with np.errstate(over="ignore"):  # fp16 and bf16 overflow to Inf: an input like any other
        x = (rng.laplace(size=count) * 10.0 ** rng.integers(-20, 20)).astype(np.float32).astype(DTYPES[dname])
    w = taco.compress(x, spec)
    if kind == "bitflip":  # in the payload only: the header stays valid
        for _ in range(int(rng.integers(1, 8))):
            pos = int(rng.integers(16, w.size))
            w[pos] ^= np.uint8(1 << int(rng.integers(8)))
    elif kind == "header":
        w[:16] = header(c, count, dname, changed_field(rng, c, count, dname))
    elif kind == "truncated":
        w = w[:int(rng.integers(0, w.size))]
    return w


def header_refusal(wire, c, count, dname):
    """Why the spec refuses a wire whose size is right: a key of PY_MESSAGE, or None."""
    magic, cid, ver, log2b, dt, cnt = struct.unpack("<IBBBBQ", np.asarray(wire, np.uint8)[:16].tobytes())
    info = taco.codec_info(c)
    block = info["block_size"]
    if magic != MAGIC:
        return "magic"
    if cid != info["id"]:
        return "id"
    if ver != info["format_version"]:
        return "version"
    if log2b != (block.bit_length() - 1 if block else 0):
        return "log2b"
    if dt >= len(DTYPES):
        return "dtype"
    if cnt != count:
        return "count"
    if info["code_bits"] == 0 and dt != list(DTYPES).index(dname):
        return "raw-dtype"
    return None


def refusal(wires, c, count, dname):
    """(index, reason) of the first wire the spec refuses, in the order the Python checks run
    (each wire's size, then its header), or None when every wire is accepted."""
    need = taco.compressed_size(c, count, dname)
    for i, w in enumerate(wires):
        if np.asarray(w).size != need:
            return i, "size"
        why = header_refusal(w, c, count, dname)
        if why is not None:
            return i, why
    return None


def py_message(reason, name, wire, count, dname):
    return PY_MESSAGE[reason].format(name=name, size=np.asarray(wire).size, count=count, dname=dname)


def c_message(reason, arg):
    return C_MESSAGE[reason].format(arg=arg)

"""Fuzzing the device codec kernels (fixed seed, bounded time): mutated, random and
valid-header-random-payload wires go through decompress, decompress-accumulate and
decompress-reduce-compress on CuPy arrays. After every call the stream must finish within a
deadline (no hang) and synchronise without error (no fault); the output must be well formed.
Where the host twin accepts the same wires, the device output must equal it bit for bit (NaN
equal to NaN), as docs/api.md promises."""
import struct
import time

import ml_dtypes
import numpy as np
import pytest

import taco

pytestmark = pytest.mark.gpu

SEED = 20240612
DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
          "bfloat16": np.dtype(ml_dtypes.bfloat16)}
BLOCKS = [32, 64, 128, 256, 512, 1024]
MAGIC = 0x4F434154
SECONDS = 20.0
HANG_S = 30.0


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def finish(cp, what):
    """Wait for the current stream with a deadline, then synchronise (raises on a fault)."""
    s = cp.cuda.get_current_stream()
    ev = cp.cuda.Event()
    ev.record(s)
    end = time.monotonic() + HANG_S
    while not ev.done:
        assert time.monotonic() < end, f"{what}: the kernel did not finish in {HANG_S} s"
        time.sleep(0.001)
    s.synchronize()


def same(dev, host, dname):
    """Bitwise equality of a device result (CuPy: bf16 as uint16 bits) and the host one, any
    NaN equal to any NaN."""
    bits = np.uint32 if dname == "float32" else np.uint16
    d, h = np.asarray(dev).view(bits), np.asarray(host).view(bits)
    nan = np.isnan(d.view(DTYPES[dname]).astype(np.float32)) & np.isnan(h.view(DTYPES[dname]).astype(np.float32))
    return bool(np.all((d == h) | nan))


def wires_same(dev, host, spec, dname):
    """Equal wires; for the element codecs (none, bf16) the payload is values, compared as
    `same` does: a NaN's payload bits are not part of the contract (the GPU writes the
    canonical NaN, the CPU propagates an operand's payload)."""
    if np.array_equal(dev, host):
        return True
    name = spec.split(":")[0]
    if name not in ("none", "bf16") or dev.size != host.size or not np.array_equal(dev[:16], host[:16]):
        return False
    pdt = "bfloat16" if name == "bf16" else dname
    width = DTYPES[pdt].itemsize
    n = (dev.size - 16) // width * width
    return same(dev[16:16 + n], host[16:16 + n], pdt)


def header(c, count, dname, change=None):
    f = dict(magic=MAGIC, id=c.id, version=1, log2b=c.blockSize.bit_length() - 1 if c.blockSize else 0,
             dtype=list(DTYPES).index(dname), count=count)
    f.update(change or {})
    return np.frombuffer(struct.pack("<IBBBBQ", *f.values()), np.uint8)


def wire_for(rng, c, spec, count, dname):
    n = taco.compressed_size(c, count, dname)
    kind = rng.integers(4)
    if kind == 0:  # random bytes
        return rng.integers(0, 256, n, dtype=np.uint8)
    if kind == 1:  # a valid header, random payload
        w = rng.integers(0, 256, n, dtype=np.uint8)
        w[:16] = header(c, count, dname)
        return w
    with np.errstate(over="ignore"):  # fp16 overflows to Inf: an input like any other
        x = (rng.laplace(size=count) * 10.0 ** rng.integers(-8, 8)).astype(np.float32).astype(DTYPES[dname])
    w = taco.compress(x, spec)
    if kind == 2:  # bit flips
        for _ in range(int(rng.integers(1, 8))):
            pos = int(rng.integers(w.size))
            w[pos] ^= np.uint8(1 << int(rng.integers(8)))
    else:  # a changed header field
        field = ["magic", "id", "version", "log2b", "dtype", "count"][rng.integers(6)]
        top = {"magic": 1 << 32, "count": 1 << 64}.get(field, 256)
        w[:16] = header(c, count, dname, {field: int(rng.integers(0, top, dtype=np.uint64))})
    return w


def test_fuzz_device_kernels(cp):
    rng = np.random.default_rng(SEED)
    end = time.monotonic() + SECONDS
    i = 0
    while i < 50 or time.monotonic() < end:
        i += 1
        name = taco.codecs()[rng.integers(8)]
        blocked = taco.codec_info(name)["block_size"] > 0
        spec = f"{name}:block={rng.choice(BLOCKS)}" if blocked and rng.random() < 0.7 else name
        c = taco.find_codec(spec)
        count = int(rng.integers(1, 5000))
        dname = list(DTYPES)[rng.integers(3)]
        wires = [wire_for(rng, c, spec, count, dname) for _ in range(int(rng.integers(1, 4)))]
        dwires = [cp.asarray(w) for w in wires]
        what = f"case {i}: {spec} count={count} {dname}"

        y = taco.decompress(dwires[0], spec, count, dname)
        finish(cp, what + " decompress")
        assert y.shape == (count,) and y.dtype.itemsize == DTYPES[dname].itemsize
        try:
            yh = taco.decompress(wires[0], spec, count, dname)
            assert same(cp.asnumpy(y), yh, dname), what + ": decompress differs from the host twin"
        except taco.InvalidArgumentError:
            pass

        acc = taco.decompress_accumulate(dwires, spec, count, dname)
        finish(cp, what + " decompress_accumulate")
        assert acc.shape == (count,)
        out, y2 = taco.decompress_reduce_compress(dwires, spec, count, dname, return_decompressed=True)
        finish(cp, what + " decompress_reduce_compress")
        assert out.shape == (taco.compressed_size(spec, count, dname),) and y2.shape == (count,)
        try:
            acch = taco.decompress_accumulate(wires, spec, count, dname)
            assert same(cp.asnumpy(acc), acch, dname), what + ": accumulate differs from the host twin"
            outh = taco.decompress_reduce_compress(wires, spec, count, dname)
            assert wires_same(cp.asnumpy(out), outh, spec, dname), what + ": reduce-compress differs from the host twin"
        except taco.InvalidArgumentError:
            pass

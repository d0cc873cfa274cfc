"""Fuzzing the device codec kernels: a fixed number of cases, drawn with a fixed seed, codecs
from taco.codecs() (tests/fuzz_cases.py). Valid, random-payload, bit-flipped, header-changed,
random and truncated wires go through decompress, decompress-accumulate and
decompress-reduce-compress on CuPy arrays. After every call the stream must finish within a
deadline (no hang) and synchronise without error (no fault). Each case's outcome is the one the
spec gives (fuzz_cases.refusal):
- accepted: the device output equals the host twin's bit for bit (NaN equal to NaN), as
  docs/api.md promises;
- a wrong size: refused in Python with the message the spec names, for device and host alike;
- a header the spec refuses: the host twin refuses it with the message the spec names, and the
  kernels, which cannot report an error, write NaN over the whole output (docs/api.md).
Every case is one of these, counted; at least fuzz_cases.ACCEPTED_SHARE are accepted and
compared, and some of each refusal are seen."""
import time

import numpy as np
import pytest

import taco
import fuzz_cases as fz
from fuzz_cases import DTYPES
from loopback_world import cp  # noqa: F401 (fixtures)

pytestmark = pytest.mark.gpu

SEED = 20240612
CASES = 400
HANG_S = 30.0


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


def all_nan(dev, dname):
    """Every element of a device result (CuPy; bf16 as uint16 bits) is NaN."""
    bits = np.uint32 if dname == "float32" else np.uint16
    return bool(np.all(np.isnan(np.asarray(dev).view(bits).view(DTYPES[dname]).astype(np.float32))))


def test_fuzz_device_kernels(cp):
    rng = np.random.default_rng(SEED)
    seen = {"accepted": 0, "size": 0, "header": 0}
    for i in range(CASES):
        spec, c = fz.random_codec(rng)
        count = int(rng.integers(1, 5000))
        dname = list(DTYPES)[int(rng.integers(3))]
        kinds = [fz.KINDS[int(rng.integers(len(fz.KINDS)))] for _ in range(int(rng.integers(1, 4)))]
        if rng.random() < 0.5:
            kinds = ["valid"] + [k if k in fz.ACCEPTED_KINDS else "valid" for k in kinds[1:]]
        wires = [fz.make_wire(rng, k, c, spec, count, dname) for k in kinds]
        dwires = [cp.asarray(w) for w in wires]
        what = f"case {i}: {spec} count={count} {dname} {kinds}"

        bad = fz.refusal(wires, c, count, dname)  # in the host's order: each wire's size, then its header
        need = taco.compressed_size(c, count, dname)
        short = next((j for j, w in enumerate(wires) if w.size != need), None)
        if short is not None:  # Python checks every size, of device wires too; headers only on the host
            seen["size"] += 1
            for arrays, (j, why) in ((dwires, (short, "size")), (wires, bad)):
                with pytest.raises(taco.InvalidArgumentError) as e:
                    taco.decompress_accumulate(arrays, spec, count, dname)
                want = fz.py_message(why, f"wires[{j}]", wires[j], count, dname)
                assert want in str(e.value), f"{what}: refused with {e.value}, the spec says {want!r}"
            continue

        first = fz.refusal(wires[:1], c, count, dname)
        y = taco.decompress(dwires[0], spec, count, dname)
        finish(cp, what + " decompress")
        assert y.shape == (count,) and y.dtype.itemsize == DTYPES[dname].itemsize
        if first is None:
            assert same(cp.asnumpy(y), taco.decompress(wires[0], spec, count, dname), dname), \
                what + ": decompress differs from the host twin"
        else:
            assert all_nan(cp.asnumpy(y), dname), what + ": a refused header did not give NaN"
            with pytest.raises(taco.InvalidArgumentError) as e:
                taco.decompress(wires[0], spec, count, dname)
            assert fz.py_message(first[1], "wire", wires[0], count, dname) in str(e.value), f"{what}: {e.value}"

        acc = taco.decompress_accumulate(dwires, spec, count, dname)
        finish(cp, what + " decompress_accumulate")
        out, y2 = taco.decompress_reduce_compress(dwires, spec, count, dname, return_decompressed=True)
        finish(cp, what + " decompress_reduce_compress")
        assert acc.shape == (count,) and y2.shape == (count,)
        assert out.shape == (taco.compressed_size(spec, count, dname),)
        if bad is None:
            seen["accepted"] += 1
            acch = taco.decompress_accumulate(wires, spec, count, dname)
            assert same(cp.asnumpy(acc), acch, dname), what + ": accumulate differs from the host twin"
            outh, y2h = taco.decompress_reduce_compress(wires, spec, count, dname, return_decompressed=True)
            assert wires_same(cp.asnumpy(out), outh, spec, dname), what + ": reduce-compress differs from the host twin"
            assert same(cp.asnumpy(y2), y2h, dname), what + ": reduce-compress's y differs from the host twin"
        else:
            seen["header"] += 1
            want = fz.py_message(bad[1], f"wires[{bad[0]}]", wires[bad[0]], count, dname)
            for call in (lambda: taco.decompress_accumulate(wires, spec, count, dname),
                         lambda: taco.decompress_reduce_compress(wires, spec, count, dname)):
                with pytest.raises(taco.InvalidArgumentError) as e:
                    call()
                assert want in str(e.value), f"{what}: the host twin refused with {e.value}, the spec says {want!r}"
            assert all_nan(cp.asnumpy(acc), dname), what + ": accumulate of a refused header did not give NaN"
            assert all_nan(cp.asnumpy(y2), dname), what + ": reduce-compress of a refused header did not give NaN"
            assert all_nan(taco.decompress(cp.asnumpy(out), spec, count, dname).view(
                np.uint16 if dname != "float32" else np.uint32), dname), what + ": its wire does not decode to NaN"
    assert seen["accepted"] >= fz.ACCEPTED_SHARE * CASES, seen
    assert seen["size"] >= 10 and seen["header"] >= 10, seen
    assert sum(seen.values()) == CASES, seen

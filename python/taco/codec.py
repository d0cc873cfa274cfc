"""The codec API on arrays: compress, decompress, decompress-accumulate and
decompress-reduce-compress, on host arrays (numpy, CPU torch tensors: the CPU
twin, tacoHost*) and on device arrays (CuPy, torch, CAI, DLPack: one fused
kernel each, stream-ordered).

A codec is a spec string ("taco", "fp8-block", "taco:block=128"), optionally
with block=; a codec id (int) is accepted too. Compressed buffers are flat
uint8 arrays whose size is compressed_size(codec, count, dtype).
"""

from __future__ import annotations

import numbers
import struct
from typing import Any, Sequence

from . import _lib
from ._arrays import (
    Buf,
    alloc,
    check_count,
    check_data,
    check_no_overlap,
    check_same_place,
    check_writable,
    describe,
    describe_wire,
    device_of,
    dtype_name,
    mark_written,
    stream_handle,
    taco_dtype,
    _invalid,
)
from .errors import InvalidArgumentError, check, make_error

__all__ = [
    "compress",
    "decompress",
    "decompress_accumulate",
    "decompress_reduce_compress",
    "compressed_size",
    "codec_info",
    "codecs",
    "default_codec",
    "find_codec",
]


# ------------------------------------------------------------------ codecs

# The largest element count the codec functions take (SIZE_MAX / 8 in the library: every
# size in bytes of that many elements fits in size_t).
MAX_COUNT = (1 << 64) // 8 - 1
_MAGIC = 0x4F434154  # "TACO", the first 4 bytes of every compressed buffer (docs/format.md)


def _codec_count(count: Any) -> int:
    """`count` of a codec call: an integer in [1, MAX_COUNT]. 0 elements is refused by every
    codec function, compressed_size included: a compressed buffer holds at least one."""
    n = check_count(count, minimum=0)
    if n == 0:
        raise _invalid("count: 0 (a compressed buffer holds at least one element)")
    if n > MAX_COUNT:
        raise _invalid(f"count: {n} is larger than {MAX_COUNT}, the largest count whose sizes in bytes fit in size_t")
    return n

def default_codec() -> str:
    """The codec used when none is named: TACO_CODEC if set, else the library's default
    (`fp8-block`; docs/accuracy.md says why), read from the library's parameter table."""
    lib, ffi = _lib.lib(), _lib.ffi()
    name, dflt, meaning, value = (ffi.new("const char**") for _ in range(4))
    i = 0
    while lib.tacoGetParamInfo(i, name, dflt, meaning, value) == lib.tacoSuccess:
        if ffi.string(name[0]) == b"TACO_CODEC":
            return ffi.string(value[0] if value[0] != ffi.NULL else dflt[0]).decode()
        i += 1
    raise RuntimeError("libtaco's parameter table has no TACO_CODEC")  # cannot happen with a matching library


def _check_block(block: Any) -> int | None:
    """`block=`: None (the spec's or the codec's default) or a block size. 0 is refused, as
    ':block=0' is in a spec; the C function validates the value itself."""
    if block is None:
        return None
    if isinstance(block, bool) or not isinstance(block, numbers.Integral):
        raise TypeError(f"block: expected an integer or None, got {type(block).__name__}")
    b = int(block)
    if b == 0:
        raise _invalid("block: 0 is not a block size (leave block out, or pass None, for the default)")
    if not (32 <= b <= 1024 and b & (b - 1) == 0):
        raise _invalid(f"block: {b} is not a power of two in [32, 1024]")
    return b


def _spec_bytes(spec: str) -> bytes:
    """The spec as the C string tacoCodecFind parses. A NUL would end that string early
    ("taco<NUL>:block=999" would read as "taco"), so it is refused, as is non-ASCII text."""
    if "\0" in spec or not spec.isascii():
        raise _invalid(f"codec: spec {spec!r} is not a codec spec (ASCII name[:block=N], no NUL)")
    return spec.encode("ascii")


def find_codec(codec: Any = None, block: int | None = None):
    """The tacoCodec_t (a cffi struct, by value) for a spec string, a codec id,
    or an existing tacoCodec_t (None: default_codec()); `block` overrides the block size."""
    f, lib = _lib.ffi(), _lib.lib()
    c = f.new("tacoCodec_t*")
    block = _check_block(block)
    named = "codec"  # where the spec came from, for the message
    if codec is None:
        codec, named = default_codec(), "TACO_CODEC (no codec given)"
    if isinstance(codec, str):
        rc = lib.tacoCodecFind(_spec_bytes(codec), c)
        if rc != lib.tacoSuccess:
            err = make_error(rc)
            prefix = "tacoCodecFind: spec argument "
            if isinstance(err, InvalidArgumentError) and err.message.startswith(prefix):
                raise _invalid(f"{named}: " + err.message[len(prefix):]) from None  # in the caller's words
            raise err
        if block is not None and ":block=" in codec and block != c.blockSize:
            raise _invalid(f"codec: spec {codec!r} and block={block} disagree on the block size")
    elif isinstance(codec, f.CData) and f.typeof(codec) is f.typeof("tacoCodec_t"):
        c[0] = codec
    elif isinstance(codec, numbers.Integral) and not isinstance(codec, bool):
        if not 0 <= int(codec) < lib.tacoNumCodecs:
            raise _invalid(f"codec: id {int(codec)} is not a known codec (0..{lib.tacoNumCodecs - 1})")
        check(lib.tacoCodecFromId(int(codec), 0, c))
    else:
        raise TypeError(f"codec: expected a spec string or a codec id, got {type(codec).__name__}")
    if block is not None:
        if c.blockSize == 0:
            raise _invalid(f"block: codec '{_info(c[0])['name']}' has no block size")
        check(lib.tacoCodecFromId(c.id, block, c))
    return c[0]


def _info(c) -> dict:
    f, lib = _lib.ffi(), _lib.lib()
    info = f.new("tacoCodecInfo_t*")
    check(lib.tacoCodecGetInfo(c, info))
    return {
        "name": f.string(info.name).decode(),
        "description": f.string(info.description).decode(),
        "id": info.id,
        "block_size": info.blockSize,
        "code_bits": info.codeBits,
        "scales_per_block": info.scalesPerBlock,
        "rotated": bool(info.rotated),
        "format_version": info.formatVersion,
    }


def codec_info(codec: Any = None, *, block: int | None = None) -> dict:
    """What a codec is: name, description, id, block_size, code_bits,
    scales_per_block, rotated, format_version."""
    return _info(find_codec(codec, block))


def codecs() -> list[str]:
    """Registry names of every codec, in id order."""
    lib = _lib.lib()
    f = _lib.ffi()
    names = []
    for i in range(lib.tacoNumCodecs):
        c = f.new("tacoCodec_t*")
        check(lib.tacoCodecFromId(i, 0, c))
        names.append(_info(c[0])["name"])
    return names


def compressed_size(codec: Any, count: int, dtype: Any, *, block: int | None = None) -> int:
    """Bytes that compressing `count` elements of `dtype` takes, header included."""
    f, lib = _lib.ffi(), _lib.lib()
    out = f.new("size_t*")
    check(lib.tacoCompressedSize(find_codec(codec, block), _codec_count(count), taco_dtype(dtype), out))
    return int(out[0])


# ------------------------------------------------------------------ helpers


def _vp(b: Buf | None):
    f = _lib.ffi()
    return f.NULL if b is None else f.cast("void*", b.ptr)


def _stream(b: Buf):
    return _lib.ffi().cast("tacoStream_t", b.stream or 0)


def _resolve_stream(first: Buf, stream: int | None, name: str) -> None:
    if stream is not None and not first.is_device:
        raise _invalid(f"stream: given, but {name} is in host memory (host calls are synchronous)")


def _data_out(out: Any, like: Buf, count: int, dname: str, name: str = "out") -> tuple[Any, Buf]:
    """Allocate (or validate the user's) data output of `count` elements of `dname`."""
    if out is None:
        out = alloc(like, count, dname, name)
    ob = describe(out, name, stream=like.stream)
    check_data(ob, name, dname)
    check_writable(ob, name)
    if ob.count != count:
        raise _invalid(f"{name}: has {ob.count} elements, expected count={count}")
    return out, ob


def _wire_out(out: Any, like: Buf, nbytes: int, name: str = "out") -> tuple[Any, Buf]:
    """Allocate (or validate the user's) compressed output of at least `nbytes` (a larger
    `out` is a capacity: only its first `nbytes` are written)."""
    if out is None:
        out = alloc(like, nbytes, None, name)
    ob = describe_wire(out, name, stream=like.stream)
    check_writable(ob, name)
    if ob.nbytes < nbytes:
        raise _invalid(f"{name}: has {ob.nbytes} bytes; the compressed buffer needs {nbytes}")
    return out, ob


def _check_wire_size(b: Buf, name: str, c, count: int, dname: str) -> None:
    """An input wire is exactly compressed_size bytes: trailing bytes would mean the caller
    holds something other than what it names (another count, codec or a concatenation)."""
    need = compressed_size(c, count, dname)
    if b.nbytes != need:
        raise _invalid(f"{name}: is {b.nbytes} bytes, but {count} {dname} elements of codec "
                       f"'{_info(c)['name']}' (block {c.blockSize}) compress to exactly {need}")
    if not b.is_device:
        _check_header(b, name, c, count, dname)


def _check_header(b: Buf, name: str, c, count: int, dname: str) -> None:
    """The 16-byte header of host wire `b` against codec, count and dtype, named in the caller's
    words (the library checks it too, naming its own arguments). A device wire's header is
    checked by the kernels, which cannot report: they write NaN (docs/api.md)."""
    f, lib = _lib.ffi(), _lib.lib()
    magic, cid, ver, log2b, dt, cnt = struct.unpack("<IBBBBQ", bytes(f.buffer(f.cast("char*", b.ptr), 16)))
    info = _info(c)
    if magic != _MAGIC:
        raise _invalid(f"{name}: is not a libtaco compressed buffer (its first 4 bytes are 0x{magic:08x}, "
                       f"not 0x{_MAGIC:08x})")
    if cid != info["id"]:
        what = f"codec id {cid}" if cid >= lib.tacoNumCodecs else f"codec '{codecs()[cid]}'"
        raise _invalid(f"codec: '{info['name']}', but {name} was compressed with {what}")
    if ver != info["format_version"]:
        raise _invalid(f"{name}: has wire format version {ver}, but codec '{info['name']}' writes "
                       f"{info['format_version']}")
    block = info["block_size"]
    if log2b != (block.bit_length() - 1 if block else 0):
        if not block:
            raise _invalid(f"{name}: was compressed with block size {1 << log2b}, but codec '{info['name']}' "
                           f"has no blocks")
        raise _invalid(f"block: {block}, but {name} was compressed with block size {1 << log2b}")
    dtypes = _lib.enum_values("tacoDataType_t")
    if dt not in [dtypes[k] for k in ("tacoFloat32", "tacoFloat16", "tacoBfloat16")]:
        raise _invalid(f"{name}: header datatype byte {dt}, which is not a tacoDataType_t")
    if cnt != count:
        raise _invalid(f"count: {count}, but {name} holds {cnt} elements (its header)")
    if info["code_bits"] == 0 and dt != taco_dtype(dname):
        raise _invalid(f"dtype: {dname}, but {name} (codec 'none') holds {dtype_name(dt)} elements")


def _inputs(wires: Sequence[Any], stream: int | None, c, count: int, dname: str) -> list[Buf]:
    if (hasattr(wires, "__cuda_array_interface__") or hasattr(wires, "__dlpack__")
            or hasattr(wires, "__array_interface__") or isinstance(wires, (bytes, bytearray, memoryview))):
        raise TypeError("wires: expected a sequence of compressed buffers (e.g. a list), got one array")
    wires = list(wires)
    if not wires:
        raise _invalid("wires: no compressed inputs given")
    bufs = [describe_wire(wires[0], "wires[0]", stream=stream)]
    bufs += [describe_wire(w, f"wires[{i}]", stream=bufs[0].stream) for i, w in enumerate(wires[1:], 1)]
    for i, b in enumerate(bufs):
        _check_wire_size(b, f"wires[{i}]", c, count, dname)
    return bufs


def _pointer_array(bufs: list[Buf]):
    f = _lib.ffi()
    return f.new("const void*[]", [f.cast("const void*", b.ptr) for b in bufs])


# ------------------------------------------------------------------ operations


def compress(x: Any, codec: Any = None, *, block: int | None = None, dtype: Any = None,
             out: Any = None, stream: Any = None) -> Any:
    """Compress array `x` (float32, float16 or bfloat16; C-contiguous) with `codec`.

    Returns a flat uint8 array of compressed_size(codec, x.size, dtype) bytes:
    numpy for numpy input (the CPU codec), a device array of x's framework for
    device input (CuPy for CAI/DLPack objects), or `out` if given. `dtype` is
    needed only for 16-bit integer arrays carrying bf16/fp16 bits (CuPy has no
    bfloat16). Device work is enqueued on `stream`, else on x's producer stream.
    """
    lib = _lib.lib()
    c = find_codec(codec, block)
    s = stream_handle(stream)
    xb = describe(x, "x", stream=s)
    _resolve_stream(xb, s, "x")
    dname = check_data(xb, "x", dtype)
    dt = taco_dtype(dname)
    if xb.count == 0:
        raise _invalid("x: is empty (a compressed buffer holds at least one element)")
    nbytes = compressed_size(c, xb.count, dt)
    out, ob = _wire_out(out, xb, nbytes)
    on_device = check_same_place([("x", xb), ("out", ob)])
    check_no_overlap("out", ob, nbytes, "x", xb, xb.nbytes)
    if on_device:
        with device_of(xb):
            check(lib.tacoCompress(c, _vp(xb), xb.count, dt, _vp(ob), ob.nbytes, _stream(xb)))
    else:
        check(lib.tacoHostCompress(c, _vp(xb), xb.count, dt, _vp(ob), ob.nbytes))
    mark_written(ob)
    return out


def decompress(wire: Any, codec: Any, count: int, dtype: Any, *, block: int | None = None,
               out: Any = None, stream: Any = None) -> Any:
    """Decompress `count` elements of `dtype` from compressed buffer `wire`.

    Returns a 1-D array of the wire's framework and place (CuPy bfloat16 output
    is a uint16 array of the bits), or `out` if given (exactly `count` elements).
    """
    lib = _lib.lib()
    c = find_codec(codec, block)
    s = stream_handle(stream)
    count = _codec_count(count)
    dname = dtype_name(dtype)
    dt = taco_dtype(dname)
    wb = describe_wire(wire, "wire", stream=s)
    _resolve_stream(wb, s, "wire")
    _check_wire_size(wb, "wire", c, count, dname)
    out, ob = _data_out(out, wb, count, dname)
    on_device = check_same_place([("wire", wb), ("out", ob)])
    check_no_overlap("out", ob, ob.nbytes, "wire", wb, wb.nbytes)
    if on_device:
        with device_of(wb):
            check(lib.tacoDecompress(c, _vp(wb), wb.nbytes, _vp(ob), ob.count, dt, _stream(wb)))
    else:
        check(lib.tacoHostDecompress(c, _vp(wb), wb.nbytes, _vp(ob), ob.count, dt))
    mark_written(ob)
    return out


def _exact(exact: Any, like: Buf, count: int, dname: str) -> Buf | None:
    if exact is None:
        return None
    eb = describe(exact, "exact", stream=like.stream)
    check_data(eb, "exact", dname)
    if eb.count != count:
        raise _invalid(f"exact: has {eb.count} elements, expected count={count}")
    return eb


def _sum_inputs(wires, codec, block, count, dtype, exact, stream) -> tuple:
    """The checked arguments shared by decompress_accumulate and decompress_reduce_compress:
    (codec, wire buffers, dtype name, taco dtype, count, exact buffer or None)."""
    c = find_codec(codec, block)
    s = stream_handle(stream)
    count = _codec_count(count)
    dname = dtype_name(dtype)
    ins = _inputs(wires, s, c, count, dname)
    _resolve_stream(ins[0], s, "wires[0]")
    return c, ins, dname, taco_dtype(dname), count, _exact(exact, ins[0], count, dname)


def _check_outputs_disjoint(ins: list[Buf], eb: Buf | None, outs: list[tuple[str, Buf, int, bool]]) -> None:
    """Each output (name, buffer, bytes written, may be exact) shares no byte with the wires,
    exact or another output; the data output may be `exact` itself (in-place accumulation)."""
    for k, (name, ob, nbytes, may_be_exact) in enumerate(outs):
        for i, b in enumerate(ins):
            check_no_overlap(name, ob, nbytes, f"wires[{i}]", b, b.nbytes)
        if eb is not None:
            check_no_overlap(name, ob, nbytes, "exact", eb, eb.nbytes, same_ok=may_be_exact)
        for other, b2, n2, _ in outs[k + 1:]:
            check_no_overlap(name, ob, nbytes, other, b2, n2)


def decompress_accumulate(wires: Sequence[Any], codec: Any, count: int, dtype: Any,
                          exact: Any = None, *, block: int | None = None, out: Any = None,
                          stream: Any = None) -> Any:
    """out = sum of the decompressed `wires` (+ `exact`, optional, of `dtype`),
    summed in fp32 in a fixed order and rounded once to `dtype`. `out` may be
    `exact` (in-place accumulation). Returns `out` (allocated when not given)."""
    lib = _lib.lib()
    c, ins, dname, dt, count, eb = _sum_inputs(wires, codec, block, count, dtype, exact, stream)
    out, ob = _data_out(out, ins[0], count, dname)
    places = [(f"wires[{i}]", b) for i, b in enumerate(ins)] + [("out", ob)]
    if eb is not None:
        places.append(("exact", eb))
    on_device = check_same_place(places)
    _check_outputs_disjoint(ins, eb, [("out", ob, ob.nbytes, True)])
    ptrs = _pointer_array(ins)
    if on_device:
        with device_of(ins[0]):
            check(lib.tacoDecompressAccumulate(c, ptrs, len(ins), ins[0].nbytes, _vp(eb), _vp(ob),
                                               count, dt, _stream(ins[0])))
    else:
        check(lib.tacoHostDecompressAccumulate(c, ptrs, len(ins), ins[0].nbytes, _vp(eb), _vp(ob),
                                               count, dt))
    mark_written(ob)
    return out


def decompress_reduce_compress(wires: Sequence[Any], codec: Any, count: int, dtype: Any,
                               exact: Any = None, *, block: int | None = None, out: Any = None,
                               y: Any = None, return_decompressed: bool = False,
                               stream: Any = None) -> Any:
    """The middle of a two-shot AllReduce in one call: the sum as in
    decompress_accumulate, compressed into `out`. With `y` (an array of `count`
    elements of `dtype`) or return_decompressed=True, also writes the
    decompression of `out` to y and returns (out, y); otherwise returns out."""
    lib = _lib.lib()
    c, ins, dname, dt, count, eb = _sum_inputs(wires, codec, block, count, dtype, exact, stream)
    nbytes = compressed_size(c, count, dt)
    out, ob = _wire_out(out, ins[0], nbytes)
    yb = None
    if y is not None or return_decompressed:
        y, yb = _data_out(y, ins[0], count, dname, "y")
    places = [(f"wires[{i}]", b) for i, b in enumerate(ins)] + [("out", ob)]
    places += [(n, b) for n, b in (("exact", eb), ("y", yb)) if b is not None]
    on_device = check_same_place(places)
    outs = [("out", ob, nbytes, False)] + ([("y", yb, yb.nbytes, True)] if yb is not None else [])
    _check_outputs_disjoint(ins, eb, outs)
    ptrs = _pointer_array(ins)
    if on_device:
        with device_of(ins[0]):
            check(lib.tacoDecompressReduceCompress(c, ptrs, len(ins), ins[0].nbytes, _vp(eb), _vp(ob),
                                                   ob.nbytes, _vp(yb), count, dt, _stream(ins[0])))
    else:
        check(lib.tacoHostDecompressReduceCompress(c, ptrs, len(ins), ins[0].nbytes, _vp(eb),
                                                   _vp(ob), ob.nbytes, _vp(yb), count, dt))
    mark_written(ob)
    mark_written(yb)
    return (out, y) if yb is not None else out

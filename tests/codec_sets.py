"""The codecs the tests run over, from the library's registry (taco.codecs()) and what
taco.codec_info says of each: a new codec joins every test that applies to it by itself.
A test that needs a subset takes one of these, or selects by the codec's attributes."""
import taco

ALL = taco.codecs()
INFO = {c: taco.codec_info(c) for c in ALL}
BLOCKED = [c for c in ALL if INFO[c]["block_size"]]          # per-block scales
ELEMENTWISE = [c for c in ALL if not INFO[c]["block_size"]]  # bf16, none
ROTATED = [c for c in BLOCKED if INFO[c]["rotated"]]         # Walsh-Hadamard rotation
BYTE_CODES = [c for c in BLOCKED if INFO[c]["code_bits"] == 8]  # a byte per code: the staged pipelines

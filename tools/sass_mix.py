#!/usr/bin/env python3
"""The instruction mix of each kernel in a built file (libtaco.so, an object, a cubin): registers,
stack and spills (cuobjdump -res-usage), instructions, and the most frequent opcodes, grouped
by the pipe they mostly issue to on sm_90. A look at a kernel's compiled code before spending
GPU time on it (a static count: loops run their bodies many times, this counts them once).

    python3 tools/sass_mix.py build/libtaco.so 'peerFusedKernel<__nv_bfloat16, 2, true, 1>'
    python3 tools/sass_mix.py some.cubin --top 20

KERNEL is a regular expression matched against the demangled name (default: every kernel).
Needs cuobjdump and c++filt on PATH (cuobjdump: the CUDA toolkit's, or pip install --target DIR
nvidia-cuda-cuobjdump and put DIR/nvidia/cu13/bin on PATH).
"""
import argparse
import collections
import re
import shutil
import subprocess
import sys

# Opcode (before the first dot) -> the group it is counted in. What each pipe issues is the
# architecture's; these groups are the ones this library's kernels are reasoned about by:
# conversions issue at an eighth of FP32's rate on sm_90, integer/logic at half.
GROUPS = {
    "fp32": {"FADD", "FMUL", "FFMA", "FMNMX", "FSETP", "FSEL", "FCHK", "FSWZADD", "HADD2", "HMUL2", "HFMA2"},
    "integer/logic": {"IADD3", "IMAD", "LOP3", "SHF", "PRMT", "ISETP", "SEL", "LEA", "IMNMX", "FLO", "POPC",
                      "BREV", "SGXT", "BMSK", "IABS", "VIADD", "VIMNMX", "LEA.HI", "I2IP"},
    "conversion": {"I2F", "F2I", "F2F", "FRND", "F2FP", "I2I"},
    "memory (global/local)": {"LDG", "STG", "LD", "ST", "LDL", "STL", "LDGSTS", "RED", "ATOM", "ATOMG",
                              "LDGDEPBAR", "CCTL", "MEMBAR", "FENCE"},
    "shared": {"LDS", "STS", "LDSM", "ATOMS"},
    "shuffle/vote": {"SHFL", "VOTE", "MATCH", "REDUX"},
    "move/uniform": {"MOV", "LDC", "ULDC", "S2R", "S2UR", "CS2R", "UMOV", "R2UR", "UIADD3", "ULOP3", "USHF", "UIMAD",
                     "ULEA", "USEL", "UISETP", "UPRMT", "PLOP3", "P2R", "R2P", "VOTEU", "UFLO", "UPOPC", "USGXT"},
    "control": {"BRA", "BSSY", "BSYNC", "WARPSYNC", "EXIT", "RET", "CALL", "BAR", "NOP", "YIELD", "BPT",
                "ENDCOLLECTIVE", "ELECT", "DEPBAR"},
}
_GROUP_OF = {op: g for g, ops in GROUPS.items() for op in ops}

_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")
_RES = re.compile(r"Function\s+(\S+):\s*\n\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def opcode(insn: str) -> str:
    """The opcode of one SASS instruction, without its predicate and modifiers: '@!P0 LDG.E.128 R4, ...' -> 'LDG'."""
    words = insn.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def parse_sass(text: str) -> dict:
    """{mangled kernel name: Counter of opcodes} of a `cuobjdump -sass` listing."""
    out, name = {}, None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            name = m.group(1)
            out[name] = collections.Counter()
            continue
        m = _INSN.match(line)
        if m and name is not None:
            out[name][opcode(m.group(1))] += 1
    return out


def parse_res_usage(text: str) -> dict:
    """{mangled kernel name: (registers, stack bytes, static shared bytes, local bytes)} of `cuobjdump -res-usage`."""
    return {m.group(1): tuple(int(m.group(i)) for i in range(2, 6)) for m in _RES.finditer(text)}


def grouped(ops: collections.Counter) -> dict:
    """Instructions per group (GROUPS), 'other' for opcodes in none."""
    g = collections.Counter()
    for op, n in ops.items():
        g[_GROUP_OF.get(op, "other")] += n
    return g


def report(name: str, ops: collections.Counter, res, top: int) -> str:
    total = sum(ops.values())
    head = f"{name}\n  {total} instructions"
    if res is not None:
        head += f"; {res[0]} registers, stack {res[1]} B, shared {res[2]} B, local {res[3]} B"
    g = grouped(ops)
    groups = ", ".join(f"{k} {v}" for k, v in g.most_common())
    common = ", ".join(f"{k} {v}" for k, v in ops.most_common(top))
    return f"{head}\n  by group: {groups}\n  opcodes: {common}"


def demangle(names: list) -> list:
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.split("\n")[:len(names)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", help="libtaco.so, an object or a cubin with device code")
    p.add_argument("kernel", nargs="?", default=".", help="regular expression on the demangled kernel name")
    p.add_argument("--top", type=int, default=12, help="opcodes listed per kernel")
    a = p.parse_args(argv)
    for tool in ("cuobjdump", "c++filt"):
        if shutil.which(tool) is None:
            sys.exit(f"sass_mix.py: {tool} not found on PATH (see the docstring)")
    sass = subprocess.run(["cuobjdump", "-sass", a.file], capture_output=True, text=True)
    if sass.returncode != 0:
        sys.exit(f"sass_mix.py: cuobjdump -sass {a.file}: {sass.stderr.strip()}")
    res = subprocess.run(["cuobjdump", "-res-usage", a.file], capture_output=True, text=True).stdout
    kernels, usage = parse_sass(sass.stdout), parse_res_usage(res)
    pattern = re.compile(a.kernel)
    shown = 0
    for mangled, readable in zip(kernels, demangle(list(kernels))):
        if pattern.search(readable):
            print(report(readable, kernels[mangled], usage.get(mangled), a.top))
            shown += 1
    if not shown:
        sys.exit(f"sass_mix.py: no kernel of {a.file} matches {a.kernel!r} ({len(kernels)} kernels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

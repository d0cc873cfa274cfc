"""tools/sass_mix.py's reading of cuobjdump's listings (canned text: no CUDA toolkit needed)."""
import collections
import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "tools" / "sass_mix.py"
_spec = importlib.util.spec_from_file_location("sass_mix", _PATH)
sm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sm)

SASS = """
Fatbin elf code:
================
arch = sm_90
	code for sm_90
		Function : _Z1kPKfPf
	.headerflags	@"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                /* 0x00000a00ff017b82 */
                                                                         /* 0x000fe20000000800 */
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;     /* 0x0000000402047981 */
        /*0020*/                   PRMT R6, R4, 0x7540, R5 ;            /* 0x0000754004067816 */
        /*0030*/                   FADD R7, R6, -8.38861600000000000e+06 ;
        /*0040*/                   FADD.FTZ R8, R7, R7 ;
        /*0050*/                   I2F.S8 R9, R4 ;
        /*0060*/                   EXIT ;
		Function : _Z2k2v
        /*0000*/                   SHFL.BFLY PT, R0, R1, 0x1, 0x1f ;
"""
RES = """
Resource usage:
 Common:
  GLOBAL:0
 Function _Z1kPKfPf:
  REG:40 STACK:8 SHARED:0 LOCAL:16 CONSTANT[0]:544 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z2k2v:
  REG:8 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:528 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_opcodes_without_predicates_and_modifiers():
    assert sm.opcode("@!P0 LDG.E.128 R4, desc[UR4][R2.64]") == "LDG"
    assert sm.opcode("FADD.FTZ R8, R7, R7") == "FADD"
    assert sm.opcode("EXIT") == "EXIT"


def test_kernels_and_resources_of_a_listing():
    k = sm.parse_sass(SASS)
    assert list(k) == ["_Z1kPKfPf", "_Z2k2v"]
    assert k["_Z1kPKfPf"] == collections.Counter({"FADD": 2, "LDC": 1, "LDG": 1, "PRMT": 1, "I2F": 1, "EXIT": 1})
    assert k["_Z2k2v"] == collections.Counter({"SHFL": 1})
    assert sm.parse_res_usage(RES) == {"_Z1kPKfPf": (40, 8, 0, 16), "_Z2k2v": (8, 0, 1024, 0)}
    g = sm.grouped(k["_Z1kPKfPf"])
    assert g == collections.Counter({"fp32": 2, "move/uniform": 1, "memory (global/local)": 1, "integer/logic": 1,
                                     "conversion": 1, "control": 1})


def test_report_names_registers_spills_and_groups():
    k = sm.parse_sass(SASS)
    text = sm.report("k(float const*, float*)", k["_Z1kPKfPf"], (40, 8, 0, 16), top=2)
    assert text.splitlines() == [
        "k(float const*, float*)",
        "  7 instructions; 40 registers, stack 8 B, shared 0 B, local 16 B",
        "  by group: fp32 2, move/uniform 1, memory (global/local) 1, integer/logic 1, conversion 1, control 1",
        "  opcodes: FADD 2, LDC 1"]

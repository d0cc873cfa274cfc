"""The peer-memory AllReduce across processes through CUDA IPC, every process on one GPU:
tests/gpu/ipc_world.cc forks P ranks, runs the fused, one-shot and raw one-shot kernels on the
cuda-ipc route (every codec of the peer kernels, bf16 / fp32 / fp16, counts from 1 to 2^24 + 5,
in and out of place), a CUDA graph replayed 50 times, bursts of 60 calls back to back with no
synchronisation between them (calls of one chunk and of three in turn), and a rank that never
arrives (timeout, abort), and checks every rank's output bit for bit against a loopback world's. Its tune world runs
the AllReduce tuner (tacoCommTune) with peer memory as it comes by default (it must be cuda-ipc)
and one algorithm made wrong on rank 0 only: every rank must demote it and hold the same table.

The program is built with the tests (TACO_BUILD_TESTS, on by default) next to libtaco.so. Run on
a GPU machine:
  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_ipc_world.py
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 900  # the program bounds each of its own waits; this bounds the whole run


def ipc_world_binary() -> Path:
    """TACO_IPC_WORLD, else ipc_world next to TACO_LIBRARY, else in tools/test.sh's build folder."""
    if os.environ.get("TACO_IPC_WORLD"):
        candidates = [Path(os.environ["TACO_IPC_WORLD"])]
    else:
        candidates = []
        if os.environ.get("TACO_LIBRARY"):
            candidates.append(Path(os.environ["TACO_LIBRARY"]).resolve().parent / "ipc_world")
        candidates.append(Path(os.environ.get("TACO_BUILD_DIR", ROOT / "build-ci")) / "ipc_world")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    # Where a GPU is, the program is always built: its absence is a failure, not a skip.
    pytest.fail(f"ipc_world not found (looked at {', '.join(map(str, candidates))}): build with the tests "
                "(cmake -DTACO_BUILD_TESTS=ON, the default) and set TACO_LIBRARY to the libtaco.so beside it, "
                "or TACO_IPC_WORLD to the program")


def _text(out) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


@pytest.mark.parametrize("P", [2, 3, 4, 8])
def test_ipc_world(P):
    exe = ipc_world_binary()
    env = {k: v for k, v in os.environ.items() if k not in ("TACO_FAULT_SKIP_RANK", "TACO_PEER_MEMORY")}
    try:
        res = subprocess.run([str(exe), str(P)], capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ipc_world {P} did not finish in {TIMEOUT_S} s; its output so far:\n"
                    f"{_text(e.stdout)[-20000:]}\n{_text(e.stderr)[-5000:]}")
    out = res.stdout + res.stderr
    failures = [line for line in res.stdout.splitlines() if line.startswith("FAIL")]
    summary = re.search(r"^ipc_world P=(\d+): (\d+) passed, (\d+) failed", res.stdout, re.M)
    assert summary is not None, f"no summary line (exit {res.returncode}):\n{out[-20000:]}"
    assert res.returncode == 0 and not failures, "\n".join(failures[:50]) + f"\n\nexit {res.returncode}:\n{out[-20000:]}"
    assert int(summary.group(1)) == P
    assert int(summary.group(2)) > 0 and int(summary.group(3)) == 0, summary.group(0)
    tuned = [line for line in res.stdout.splitlines() if line.startswith(f"ok    P={P} tune with the default peer memory")]
    assert len(tuned) == 1, f"the tune world's case did not pass:\n{out[-20000:]}"
    print(tuned[0])  # the table's hash and choices, for the record (pytest -s)

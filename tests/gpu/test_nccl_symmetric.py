"""The nccl-symmetric peer-memory route on one GPU: a one-rank NCCL communicator with
TACO_PEER_MEMORY=nccl runs the route's whole chain (version, symbols, ncclMemAlloc, window,
device communicator), which NCCL refuses on one GPU; the refusal is logged with the step
that refused, creation succeeds, the AllReduce works, and destroy releases the partial
chain. The route itself (several GPUs) is exercised by tests/mpi.

Run on a GPU machine:  TACO_LIBRARY=build/libtaco.so pytest -m gpu tests/gpu/test_nccl_symmetric.py
"""
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

# Every step of the chain names itself in the refusal (libtaco/transport/peer_memory_nccl.cc).
STEPS = ("version:", "symbol missing:", "ncclMemAlloc", "ncclCommWindowRegister", "NULL window",
         "ncclDevCommCreate", "LSA team", "ncclGetLsaPointer", "real write")

_SCRIPT = textwrap.dedent("""
    import numpy as np
    import taco, taco.comm
    from taco import reference as ref
    comm = taco.comm.Communicator.from_unique_id(taco.comm.get_unique_id(), 1, 0, codec="taco", fallback_bytes=0)
    import torch  # after the communicator: libtaco has loaded the NCCL it was pointed at
    x = np.random.default_rng(3).standard_normal(5000).astype(np.float32)
    y = comm.allreduce(torch.from_numpy(x).cuda())
    torch.cuda.synchronize()
    want = ref.allreduce([x], "taco")
    assert np.array_equal(y.cpu().numpy().view(np.uint32), want.view(np.uint32))
    comm.close()
    print("OK")
""")


def _wheel_nccl():
    """libnccl.so.2 of the NCCL wheel whose headers a default build compiles against
    (cmake/find_nccl_wheel.py's first choice), or None."""
    for name in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if str(f).replace("\\", "/").endswith("lib/libnccl.so.2"):
                return str(Path(dist.locate_file(f)).resolve())
    return None


def test_one_rank_logs_refusal_and_allreduce_works(tmp_path):
    import torch  # noqa: F401 (the script it runs needs it; missing, it is a failure)
    script = tmp_path / "one_rank.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, TACO_PEER_MEMORY="nccl", TACO_DEBUG="INFO")
    lib = _wheel_nccl()
    if lib is not None:
        env["TACO_NCCL_LIBRARY"] = lib
    res = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr
    closed = [ln for ln in res.stderr.splitlines() if "peer memory: nccl-symmetric closed" in ln]
    released = [ln for ln in res.stderr.splitlines() if "nccl-symmetric works at one rank; released" in ln]
    print("\n".join(closed + released))  # which step refused, for the record (pytest -s)
    assert len(closed) + len(released) == 1, res.stderr
    if released:
        return  # an NCCL that gives one rank symmetric memory: the chain passed, nothing kept
    line = closed[0]
    assert "closed on rank 0: " in line, line
    assert any(step in line for step in STEPS), line
    m = re.search(r"version: NCCL (\S+) loaded from .*, headers (\S+):", line)
    if m:  # the version step refuses only versions that differ
        assert m.group(1) != m.group(2), line

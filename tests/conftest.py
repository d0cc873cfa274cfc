"""Shared pytest setup for tests/python, tests/gpu and tests/mpi.

Markers:
  gpu  needs a CUDA device; skipped, with the reason, where there is none.
       On a machine with a GPU these tests run (`pytest -m gpu`): a GPU test that
       skips there is a failure of the setup, so no other skip applies to them.
  mpi  multi-process tests, run under mpirun.

The taco package is imported from python/ in this checkout unless one is
installed, and the benchmark harness taco_bench from bench/python likewise; a
source directory used is also put on PYTHONPATH, so the subprocesses the tests
start import the same packages. The library is found as taco._lib describes
(TACO_LIBRARY first).
"""

import ctypes
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The collective tests pin what each call runs (a forced algorithm, or the built-in model's
# choice, against the numpy model of that algorithm). The AllReduce tuner would replace the
# model's choices with measured ones, and write to the user's cache: it is off here unless the
# environment says otherwise. tests/gpu/test_tune.py runs its cases in processes of their own
# with TACO_TUNE and TACO_TUNE_FILE set (the library reads the environment once).
os.environ.setdefault("TACO_TUNE", "off")

for _package, _source in (("taco", ROOT / "python"), ("taco_bench", ROOT / "bench" / "python")):
    if importlib.util.find_spec(_package) is None:
        sys.path.insert(0, str(_source))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_source), os.environ.get("PYTHONPATH")]))


def cuda_device_count() -> int:
    """CUDA devices visible through the driver API (0 without a driver)."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    n = ctypes.c_int(0)
    if cu.cuInit(0) != 0 or cu.cuDeviceGetCount(ctypes.byref(n)) != 0:
        return 0
    return n.value


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped with a reason without one)")
    config.addinivalue_line("markers", "mpi: multi-process test, run under mpirun")


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    if cuda_device_count() > 0:
        return
    skip = pytest.mark.skip(reason="no CUDA device (libcuda.so.1 absent or reports 0 devices)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

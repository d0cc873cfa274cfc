"""Shared pytest setup for tests/python, tests/gpu and tests/mpi.

Markers:
  gpu  needs a CUDA device; skipped, with the reason, where there is none.
       On a machine with a GPU these tests run (`pytest -m gpu`): a GPU test that
       skips there, or is marked xfail, is reported as a failure (a missing package
       included), so a run that passes ran every GPU test.
  mpi  multi-process tests, run under mpirun.

The taco package is imported from python/ in this checkout unless one is
installed, and the benchmark harness taco_bench from bench/python likewise; a
source directory used is also put on PYTHONPATH, so the subprocesses the tests
start import the same packages. A harness imported from bench/python also gets
the entry points pip would install with it (`python -m taco bench` finds the
harness through them). The library is found as taco._lib describes
(TACO_LIBRARY first).
"""

import atexit
import ctypes
import functools
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The collective tests pin what each call runs (a forced algorithm, or the built-in model's
# choice, against the numpy model of that algorithm). The AllReduce tuner would replace the
# model's choices with measured ones, and write to the user's cache: it is off here unless the
# environment says otherwise. tests/gpu/test_tune.py runs its cases in processes of their own
# with TACO_TUNE and TACO_TUNE_FILE set (the library reads the environment once).
os.environ.setdefault("TACO_TUNE", "off")



def _put_on_path(directory: Path) -> None:
    """First on sys.path, and on PYTHONPATH for the subprocesses."""
    sys.path.insert(0, str(directory))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")]))


def _declare_source_harness() -> None:
    """Entry points are read from installed metadata, which a package imported from its source
    directory lacks. When taco_bench comes from bench/python, write the dist-info pip would
    install with it (name, version, the entry points of its pyproject.toml) into a directory of
    its own, first on the path, so that it shadows any other installed copy's."""
    spec = importlib.util.find_spec("taco_bench")
    source = ROOT / "bench" / "python"
    if spec is None or spec.origin is None or source not in Path(spec.origin).resolve().parents:
        return
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    with open(source / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    meta = Path(tempfile.mkdtemp(prefix="taco-bench-source-"))
    atexit.register(shutil.rmtree, meta, True)
    info = meta / f"taco_bench-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
        for group, points in project.get("entry-points", {}).items()))
    _put_on_path(meta)


for _package, _source in (("taco", ROOT / "python"), ("taco_bench", ROOT / "bench" / "python")):
    if importlib.util.find_spec(_package) is None:
        _put_on_path(_source)
_declare_source_harness()


@functools.lru_cache(maxsize=None)
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a machine with a GPU, a GPU test that skipped (pytest.skip, a skip marker) or that is
    an xfail (failed as expected, or passed) is a failure: such a check cannot fail, so it checks
    nothing."""
    outcome = yield
    rep = outcome.get_result()
    if "gpu" not in item.keywords or cuda_device_count() == 0:
        return
    if hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        rep.longrepr = f"a GPU test marked xfail on a machine with a GPU ({rep.wasxfail or 'no reason'})"
        del rep.wasxfail
    elif rep.skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
        rep.outcome = "failed"
        rep.longrepr = f"a GPU test skipped on a machine with a GPU: {reason}"

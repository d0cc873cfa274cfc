"""The examples build and run against an installed libtaco.

examples/cpp is configured with find_package(taco) against `cmake --install` of the
CMake build tree ($TACO_BUILD_DIR, default build-ci/, as tools/setup.sh builds it) into a
temporary prefix, built, and run: with a GPU it runs a loopback AllReduce of 2 ranks,
without one it checks the host codec and exits 0. The Python examples are compiled
and their --help (argument parsing, no GPU) is exercised.
"""
import os
import py_compile
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _build_dir() -> Path:
    d = Path(os.environ.get("TACO_BUILD_DIR", ROOT / "build-ci"))
    return d if d.is_absolute() else ROOT / d


def _run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p


def test_cpp_example_builds_against_install(tmp_path):
    build = _build_dir()
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        pytest.skip(f"no CMake build of libtaco at {build} (run tools/setup.sh or set TACO_BUILD_DIR)")
    cmake = shutil.which("cmake")
    assert cmake, "cmake not on PATH"
    text = cache.read_text(errors="replace")
    gen = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", text, re.M)
    cxx = re.search(r"^CMAKE_CXX_COMPILER:[A-Z]+=(.*)$", text, re.M)
    cuda = re.search(r"^CMAKE_CUDA_COMPILER:[A-Z]+=(.*)$", text, re.M)

    prefix = tmp_path / "prefix"
    _run([cmake, "--install", build, "--prefix", prefix])
    assert list(prefix.glob("**/tacoConfig.cmake")), "the install has no tacoConfig.cmake"

    conf = [cmake, "-S", EXAMPLES / "cpp", "-B", tmp_path / "example", f"-DCMAKE_PREFIX_PATH={prefix}",
            "-DCMAKE_BUILD_TYPE=Release"]
    if gen:
        conf += ["-G", gen.group(1)]
    if cxx and cxx.group(1):
        conf.append(f"-DCMAKE_CXX_COMPILER={cxx.group(1)}")
    if cuda and cuda.group(1):  # the same toolkit libtaco was built with (FindCUDAToolkit looks beside nvcc)
        conf.append(f"-DCUDAToolkit_ROOT={Path(cuda.group(1)).resolve().parent.parent}")
    _run(conf)
    _run([cmake, "--build", tmp_path / "example"])
    exe = tmp_path / "example" / "taco_allreduce"
    assert exe.is_file()
    env = dict(os.environ)
    env.pop("TACO_LIBRARY", None)  # the example links the installed library (RPATH / taco::taco)
    p = _run([exe, "65536"], env=env, timeout=300)
    assert "libtaco" in p.stdout
    assert ("host codec taco" in p.stdout) or ("bit-identical" in p.stdout), p.stdout


@pytest.mark.parametrize("script", ["cupy_mpi_allreduce.py", "torch_tp_train.py", "torch_c10d_backend.py"])
def test_python_examples_compile(script, tmp_path):
    path = EXAMPLES / script
    assert path.is_file()
    py_compile.compile(str(path), cfile=str(tmp_path / (script + "c")), doraise=True)


@pytest.mark.parametrize("script, option", [("torch_tp_train.py", "--loopback"), ("torch_c10d_backend.py", "--backend")])
def test_torch_example_help(script, option):
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = _run([sys.executable, EXAMPLES / script, "--help"], env=env, timeout=120)
    assert option in p.stdout

"""The benchmark harness is its own package (taco_bench, bench/python): `python -m taco
bench|accuracy|train` runs it when it is installed and says how to install it when not;
`python -m taco_bench` runs the same commands; the library's package holds none of it."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import taco
from taco import _lib
from taco.__main__ import HARNESS_INSTALL, main


@pytest.mark.parametrize("argv", [["bench", "codec", "--host"], ["bench", "coll"], ["accuracy"], ["train"]])
def test_without_the_harness_one_line_says_how_to_install_it(argv, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "taco_bench", None)  # as if not installed: find_spec() gives None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and HARNESS_INSTALL in err and err.startswith("python -m taco " + " ".join(argv[:2]))
    assert (Path(__file__).resolve().parents[2] / HARNESS_INSTALL.split()[-1] / "pyproject.toml").is_file()


def test_info_stays_in_the_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "taco_bench", None)
    with pytest.raises(SystemExit) as e:  # parsed by the library's own parser, harness or not
        main(["info", "--help"])
    assert e.value.code == 0


def test_the_library_package_has_no_harness_modules():
    for name in ("accuracy", "train_bench", "bench_coll", "bench_codec"):
        assert importlib.util.find_spec(f"taco.{name}") is None, name


def test_taco_bench_runs_directly():
    env = dict(os.environ, TACO_LIBRARY=_lib.library_path(),
               PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "taco_bench", "codec", "--host", "--count", "1000", "--codec", "taco"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "taco" in r.stdout and "nmse" in r.stdout
    r = subprocess.run([sys.executable, "-m", "taco_bench", "nope"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "invalid choice: 'nope'" in r.stderr

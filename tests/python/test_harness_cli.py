"""The benchmark harness is its own package (taco_bench, bench/python): `python -m taco
bench|accuracy|train` finds it through the entry point it declares, runs it when it is installed
and says how to install it when not; `python -m taco_bench` runs the same commands; the library's
package holds none of it and never imports it by name."""
import ast
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import taco
from taco import _lib
from taco.__main__ import HARNESS_GROUP, HARNESS_INSTALL, harness_entry_point, main

ROOT = Path(__file__).resolve().parents[2]


def _no_entry_points(group=None):
    return importlib.metadata.EntryPoints(()) if hasattr(importlib.metadata, "EntryPoints") else {}


@pytest.mark.parametrize("argv", [["bench", "codec", "--host"], ["bench", "coll"], ["accuracy"], ["train"]])
def test_without_the_harness_one_line_says_how_to_install_it(argv, monkeypatch, capsys):
    monkeypatch.setattr(importlib.metadata, "entry_points", _no_entry_points)  # as if not installed
    assert harness_entry_point() is None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and HARNESS_INSTALL in err and err.startswith("python -m taco " + " ".join(argv[:2]))
    assert "not installed" in err and HARNESS_GROUP in err
    assert (ROOT / HARNESS_INSTALL.split()[-1] / "pyproject.toml").is_file()


def test_a_declared_harness_that_cannot_load_says_so(monkeypatch, capsys):
    for module in ("taco_bench", "taco_bench.cli"):  # the entry point is declared, its package is gone
        monkeypatch.setitem(sys.modules, module, None)
    assert main(["bench", "codec", "--host"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be loaded" in err and HARNESS_INSTALL in err


def test_the_harness_is_found_through_its_entry_point():
    """bench/python's pyproject.toml declares main(argv, prog) under HARNESS_GROUP; the installed
    harness (or, for a source checkout, what tests/conftest.py declares for it) is found by it."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    with open(ROOT / "bench" / "python" / "pyproject.toml", "rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"][HARNESS_GROUP]
    ep = harness_entry_point()
    assert ep is not None and ep.group == HARNESS_GROUP and (ep.name, ep.value) in declared.items()
    from taco_bench.cli import main as harness_main

    assert ep.load() is harness_main


def test_the_library_never_imports_the_harness_by_name():
    for source in (ROOT / "python" / "taco").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "taco_bench" for n in names), f"{source.name} imports {names}"


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

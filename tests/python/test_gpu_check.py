"""The GPU checks can fail: tools/gpu_check.sh's verdict fails on a ctest failure and on any
skipped, xfailed or xpassed GPU test, and tests/conftest.py reports a GPU test that skips or is
an xfail on a machine with a GPU as a failure (shown here with the device count faked)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gpu_check.sh"


def verdict(tmp_path, ctest_rc, pytest_rc, summary):
    log = tmp_path / "gpu_tests.txt"
    log.write_text("...\n" + summary + "\n")
    return subprocess.run(["bash", str(SCRIPT), "--verdict", str(ctest_rc), str(pytest_rc), str(log)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("ctest_rc, pytest_rc, summary, ok", [
    (0, 0, "1898 passed in 812.31s (0:13:32)", True),
    (0, 0, "1898 passed, 12 deselected in 812.31s (0:13:32)", True),
    (8, 0, "1898 passed in 812.31s (0:13:32)", False),           # a host C test failed
    (0, 0, "1890 passed, 8 skipped in 812.31s (0:13:32)", False),  # a skip on the GPU machine
    (0, 0, "1897 passed, 1 xfailed in 812.31s (0:13:32)", False),
    (0, 0, "1897 passed, 1 xpassed in 812.31s (0:13:32)", False),
    (0, 1, "1 failed, 1897 passed in 812.31s (0:13:32)", False),
    (0, 0, "12 deselected in 0.31s", False),                       # nothing ran
    (0, 5, "no tests ran in 0.31s", False),
])
def test_verdict(tmp_path, ctest_rc, pytest_rc, summary, ok):
    p = verdict(tmp_path, ctest_rc, pytest_rc, summary)
    assert (p.returncode == 0) == ok, p.stdout + p.stderr
    assert p.stdout.startswith("OK" if ok else "FAIL"), p.stdout


def test_ctest_status_is_kept():
    """ctest's exit status reaches the verdict: nothing pipes it away."""
    text = SCRIPT.read_text()
    line = next(ln for ln in text.splitlines() if "ctest" in ln and not ln.lstrip().startswith("#")
                and "verdict" not in ln and "echo" not in ln)
    assert "|" not in line, line
    assert "ctest_rc=$?" in text


CONFTEST_PROBE = """
import tests_conftest
from tests_conftest import *  # noqa: F401,F403 (the hooks)
tests_conftest.cuda_device_count = lambda: {devices}
"""

PROBE_TESTS = """
import pytest

pytestmark = pytest.mark.gpu


def test_skips():
    pytest.skip("torch is not installed")


@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False


def test_passes():
    pass
"""


@pytest.mark.parametrize("devices", [1, 0])
def test_conftest_turns_gpu_skips_into_failures(tmp_path, devices):
    # the repository's conftest, imported under another name beside a probe conftest that fakes
    # the device count (with 0 it skips every GPU test itself, as on this machine)
    (tmp_path / "tests_conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "conftest.py").write_text(CONFTEST_PROBE.format(devices=devices))
    (tmp_path / "test_probe.py").write_text(textwrap.dedent(PROBE_TESTS))
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    last = p.stdout.strip().splitlines()[-1]
    if devices:
        assert p.returncode == 1, p.stdout
        assert "2 failed, 1 passed" in last, p.stdout
        assert "skipped on a machine with a GPU: torch is not installed" in p.stdout
        assert "marked xfail on a machine with a GPU (known bug)" in p.stdout
    else:
        assert p.returncode == 0, p.stdout
        assert "3 skipped" in last, p.stdout


def test_verdict_over_groups(tmp_path):
    """--groups: the verdict reads every group's log; one skip or one group without a pass fails."""
    logs = []
    for i, summary in enumerate(["687 passed in 263.36s", "4 passed in 111.36s", "8 passed in 64.61s"]):
        log = tmp_path / f"g{i}.txt"
        log.write_text("...\n" + summary + "\n")
        logs.append(str(log))
    run = lambda *a: subprocess.run(["bash", str(SCRIPT), "--verdict", *map(str, a)], capture_output=True,
                                    text=True, timeout=60)
    p = run(0, 0, *logs)
    assert p.returncode == 0 and "699 passed in 3 groups" in p.stdout, p.stdout
    (tmp_path / "g1.txt").write_text("3 passed, 1 skipped in 100.0s\n")
    p = run(0, 0, *logs)
    assert p.returncode == 1 and "g1.txt" in p.stdout, p.stdout
    (tmp_path / "g1.txt").write_text("no tests ran in 0.01s\n")
    assert run(0, 0, *logs).returncode == 1


def test_every_gpu_test_file_in_one_group():
    p = subprocess.run(["bash", str(SCRIPT), "--list-groups"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    groups = {ln.split()[0]: ln.split()[1:] for ln in p.stdout.splitlines()}
    listed = [f for fs in groups.values() for f in fs]
    on_disk = sorted(f"tests/gpu/{f.name}" for f in (ROOT / "tests" / "gpu").glob("test_*.py"))
    assert sorted(listed) == on_disk  # each file once
    assert groups["alone_tune"] == ["tests/gpu/test_tune.py"] and groups["alone_soak"] == ["tests/gpu/test_soak.py"]


FAKE_PYTHON = """#!/usr/bin/env bash
# a stand-in interpreter: pip does nothing; pytest prints a summary per file list and fails in the
# group named by FAIL_FILE
case "$*" in
  *"-m pip"*) exit 0 ;;
  *"-m pytest"*)
    n=0; for a in "$@"; do case $a in tests/gpu/*.py) n=$((n + 1)) ;; esac; done
    if [ -n "${FAIL_FILE:-}" ] && [[ "$*" == *"$FAIL_FILE"* ]]; then echo "1 failed, $n passed in 1.00s"; exit 1; fi
    echo "$((10 * n)) passed in 1.00s"; exit 0 ;;
esac
exit 0
"""


@pytest.mark.parametrize("fail_file", ["", "test_peer_timeline.py", "test_soak.py"])
def test_groups_mode_end_to_end(tmp_path, fail_file):
    """--groups with stand-ins for cmake, ctest and python: every group's log, the verdict over
    all of them, and the archive of the logs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"cmake": 'mkdir -p "$BUILD_DIR"; exit 0', "ctest": "echo '100% tests passed'; exit 0",
                       "nvidia-smi": "echo 'GPU 0: fake'"}.items():
        (bin_dir / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    py = bin_dir / "python3-fake"
    py.write_text(FAKE_PYTHON)
    py.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHON=str(py), OUT=str(out),
               FAIL_FILE=fail_file, BUILD_DIR=str(tmp_path / "build"))
    p = subprocess.run(["bash", str(SCRIPT), "--groups"], capture_output=True, text=True, env=env, timeout=120)
    n_files = len(list((ROOT / "tests" / "gpu").glob("test_*.py")))
    if fail_file:
        assert p.returncode == 1, p.stdout + p.stderr
        assert "FAIL: the GPU tests failed" in p.stdout, p.stdout
    else:
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"GPU tests: {10 * n_files} passed in 8 groups" in p.stdout, p.stdout
    assert len(list(out.glob("gpu_tests_*.txt"))) == 8
    assert (out / "gpu-check.tgz").stat().st_size > 0

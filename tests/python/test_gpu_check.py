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

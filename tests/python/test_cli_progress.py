"""Long harness commands draw a progress line on stderr while it is a terminal, and nothing
when it is not (logs, CI, pipes) or with --quiet."""
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import taco
from taco.__main__ import main
from taco_bench.progress import Progress


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_line_is_drawn_rewritten_and_cleared():
    term = FakeTerminal()
    with Progress("work", 3, "things", stream=term, interval=0) as bar:
        bar.step(note="a")
        assert term.getvalue() == "\rwork: 1/3 things (a), 0 s, about 0 s left"
        bar.step(note="b")
        bar.step()
    out = term.getvalue()
    assert "\rwork: 2/3 things (b)" in out and "\rwork: 3/3 things (b), 0 s" in out
    last = out.rsplit("\r", 2)
    assert last[-1] == "" and last[-2].strip() == ""  # cleared on the way out: blanks, then back to column 0


def test_print_clears_the_line_first(capsys):
    term = FakeTerminal()
    bar = Progress("work", 2, "things", stream=term, interval=0)
    bar.step()
    before = len(term.getvalue())
    bar.print("a row")
    assert capsys.readouterr().out == "a row\n"
    drawn = term.getvalue()[before:]
    assert drawn.startswith("\r" + " " * (before - 1) + "\r")
    assert drawn.endswith("work: 1/2 things, 0 s, about 0 s left")
    bar.clear()


def test_each_counts_bodies_that_continue():
    term = FakeTerminal()
    bar = Progress("work", 4, stream=term, interval=0)
    seen = []
    for i in bar.each(range(4), lambda i: f"item {i}"):
        if i % 2:
            continue
        seen.append(i)
    assert seen == [0, 2] and bar.done == 4 and "(item 3)" in term.getvalue()


@pytest.mark.parametrize("stream, quiet", [(io.StringIO(), False), (FakeTerminal(), True)])
def test_nothing_without_a_terminal_or_with_quiet(stream, quiet):
    with Progress("work", 2, "things", stream=stream, quiet=quiet, interval=0) as bar:
        bar.step(note="a")
        bar.print("row", file=io.StringIO())
        bar.step()
    assert stream.getvalue() == ""


ACCURACY = ["accuracy", "--quick", "--source", "synthetic", "--P", "2,4", "--dtypes", "fp32", "--codecs", "none,taco"]


def test_accuracy_shows_progress_on_a_terminal(monkeypatch, capsys):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(ACCURACY) == 0
    err = term.getvalue()
    assert "\raccuracy: 0/8 tensors (L0.attn_out P=2 fp32: none)" in err  # 4 sites x 2 P x 1 dtype
    assert "\raccuracy: 8/8 tensors" in err
    assert err.endswith("\r") and err.rsplit("\r", 2)[-2].strip() == ""  # cleared at the end
    out = capsys.readouterr().out
    assert "\r" not in out and "AR P=4" in out


def test_accuracy_quiet_and_not_a_terminal(monkeypatch, capsys):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(ACCURACY + ["--quiet"]) == 0
    assert term.getvalue() == ""
    monkeypatch.undo()
    assert main(ACCURACY) == 0
    assert capsys.readouterr().err == ""  # pytest's capture is not a terminal


def test_bench_codec_shows_progress_on_a_terminal(monkeypatch, capsys):
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["bench", "codec", "--host", "--count", "4096", "--dtype", "fp32,bf16", "--codec", "none,taco"]) == 0
    err = term.getvalue()
    assert "\rbench codec: 0/4 codec x dtype (none fp32)" in err and "\rbench codec: 4/4 codec x dtype" in err
    assert "\r" not in capsys.readouterr().out


def test_a_pipe_gets_no_control_characters():
    env = dict(os.environ, PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "taco", *ACCURACY], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "" and "\r" not in p.stdout

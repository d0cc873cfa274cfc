"""Bad command lines get one line on stderr naming the option and exit status 2, never a
traceback; a library error during a run is one line and exit status 1 (the traceback with
--debug or TACO_DEBUG)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import taco
from taco.__main__ import main
from taco.errors import InvalidArgumentError
from taco_bench import options


def _cli(*args):
    # the taco this test imported (installed or python/); conftest put a source taco_bench on PYTHONPATH
    env = dict(os.environ, PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    env.pop("TACO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "taco", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# the invocations that ended in a traceback, or ran something else than asked
@pytest.mark.parametrize("args, prog, message", [
    (["bench", "codec", "--host", "--codec", "none,taco", "--block", "64"], "python -m taco bench codec",
     "argument --block: codec 'none' has no blocks"),
    (["bench", "codec", "--host", "--codec", "bogus"], "python -m taco bench codec",
     "argument --codec: unknown codec 'bogus' (known: none"),
    (["bench", "codec", "--host", "--codec", "taco:block=100"], "python -m taco bench codec",
     "argument --codec: 'taco:block=100': block size 100 is not a power of two in [32, 1024]"),
    (["bench", "codec", "--host", "--count", "-5"], "python -m taco bench codec", "argument --count: must be >= 1"),
    (["bench", "codec", "--host", "--count", "0"], "python -m taco bench codec", "argument --count: must be >= 1"),
    ([], "python -m taco", "choose a command: info, bench, accuracy, train"),
    (["bench"], "python -m taco bench", "choose a benchmark: codec, coll"),
    (["accuracy", "--P", "0"], "python -m taco accuracy", "argument --P: must be >= 2, got '0'"),
    (["train", "--tp", "0"], "python -m taco train", "argument --tp: must be >= 1, got '0'"),
    # the tuner refuses what it would only meet after (or during) the measurement, on every rank
    (["tune", "--loopback", "2", "--codec", "nope"], "python -m taco tune", "--codec: tacoInvalidArgument: codec: "
                                                                            "'nope': unknown codec"),
    (["tune", "--loopback", "2", "-J", "/nonexistent-dir/t.json"], "python -m taco tune",
     "-J: cannot write '/nonexistent-dir/t.json'"),
])
def test_bad_command_line_in_a_subprocess(args, prog, message):
    p = _cli(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert _one_line(p.stderr).startswith(f"{prog}: error: ") and message in p.stderr, p.stderr
    assert p.stdout == ""


def test_taco_bench_without_a_command():
    env = dict(os.environ, PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "taco_bench"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2
    assert _one_line(p.stderr) == "python -m taco_bench: error: choose a command: codec, coll, accuracy, train\n"


BAD = [
    # bench codec
    (["bench", "codec", "--block", "100"], "argument --block: 100 is not a power of two in [32, 1024]"),
    (["bench", "codec", "--codec", "taco:block=128", "--block", "64"], "argument --block: spec 'taco:block=128'"),
    (["bench", "codec", "--count", "2^-1"], "argument --count: not a count: '2^-1'"),
    # beyond the library's largest count, and too large for the memory (before any allocation)
    (["bench", "codec", "--host", "--count", "2^70"],
     "argument --count: must be <= 2305843009213693951, got '2^70' = 1180591620717411303424"),
    (["bench", "codec", "--host", "--count", "2^36"],
     "argument --count: 68719476736 elements needs about 2304.0 GiB of host memory"),
    (["bench", "codec", "--host", "--count", "9" * 400], "argument --count: must be <= 2305843009213693951"),
    (["bench", "codec", "--count", "lots"], "argument --count: not a count: 'lots' (e.g. 2^28"),
    (["bench", "codec", "--dtype", "fp32,fp64"],
     "argument --dtype: unknown dtype 'fp64' (choose from fp32, bf16, fp16)"),
    (["bench", "codec", "--codec", "taco,,none"], "argument --codec: not a comma-separated list"),
    (["bench", "codec", "--iters", "0"], "argument --iters: must be >= 1"),
    (["bench", "codec", "--warmup", "-1"], "argument --warmup: must be >= 0"),
    (["bench", "codec", "--host", "--bogus"], "unrecognized arguments: --bogus"),
    # bench coll (checked before PyTorch or a GPU is needed)
    (["bench", "coll", "--codec", "bogus"], "argument --codec: unknown codec 'bogus'"),
    (["bench", "coll", "--codec", "taco:block=100"], "argument --codec: 'taco:block=100': block size 100"),
    (["bench", "coll", "-d", "fp64"], "argument -d/--dtype: unknown dtype 'fp64'"),
    (["bench", "coll", "--op", "allreduce,bogus"], "argument --op: unknown collective 'bogus'"),
    (["bench", "coll", "--algo", "twoshot"], "argument --algo: unknown AllReduce algorithm 'twoshot'"),
    (["bench", "coll", "-b", "0"], "argument -b/--minbytes: must be >= 1"),
    (["bench", "coll", "-b", "2M", "-e", "1M"], "argument -b/--minbytes: 2097152 is more than -e/--maxbytes"),
    (["bench", "coll", "-e", "-1"], "argument -e/--maxbytes: must be >= 1"),
    (["bench", "coll", "-f", "0"], "argument -f/--stepfactor: must be >= 1"),
    (["bench", "coll", "-n", "0"], "argument -n/--iters: must be >= 1"),
    (["bench", "coll", "-w", "-1"], "argument -w/--warmup: must be >= 0"),
    (["bench", "coll", "-c", "2"], "argument -c/--check"),
    (["bench", "coll", "-G", "-1"], "argument -G/--graph: must be >= 0"),
    (["bench", "coll", "--loopback", "0"], "argument --loopback: must be >= 1"),
    (["bench", "coll", "--fallback-bytes", "-1"], "argument --fallback-bytes: must be >= 0"),
    (["bench", "coll", "--chunk-bytes", "0"], "argument --chunk-bytes: must be >= 1"),
    # accuracy
    (["accuracy", "--P", "x"], "argument --P: not an integer: 'x'"),
    (["accuracy", "--P", "1"], "argument --P: must be >= 2, got '1'"),
    (["accuracy", "--P", "2,5", "--source", "synthetic", "--quick"], "argument --P: site L0.attn_out: 384 features"),
    (["accuracy", "--tokens", "-1"], "argument --tokens: must be >= 1"),
    (["accuracy", "--codecs", "taco,bogus"], "argument --codecs: unknown codec 'bogus'"),
    (["accuracy", "--dtypes", "fp16"], "argument --dtypes: unknown dtype 'fp16' (choose from fp32, bf16)"),
    (["accuracy", "--layers", "-1"], "argument --layers: must be >= 0"),
    (["accuracy", "--seed", "-1"], "argument --seed: must be >= 0"),
    (["accuracy", "--source", "capture"], "argument --source: capture needs --capture FILE.npz"),
    (["accuracy", "--capture", "/nonexistent/cap.npz"], "argument --capture: no such file"),
    (["accuracy", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
    # train
    (["train", "--tp", "-2"], "argument --tp: must be >= 1"),
    (["train", "--codec", "bogus"], "argument --codec: unknown codec 'bogus' (choose from exact, "),
    (["train", "--codec", "taco", "--backend", "cpu-exact"], "argument --codec: taco compresses"),
    (["train", "--preset", "huge"], "argument --preset: unknown preset 'huge' (choose from tiny, small, base)"),
    (["train", "--backend", "gpu"], "argument --backend: unknown backend 'gpu'"),
    (["train", "--dtype", "fp64"], "argument --dtype: unknown dtype 'fp64'"),
    (["train", "--steps", "0"], "argument --steps: must be >= 1"),
    (["train", "--lr", "nan"], "argument --lr: must be a finite number > 0"),
    (["train", "--warmup", "-1"], "argument --warmup: must be >= 0"),
    (["train", "--heads", "6"], "argument --heads: 6 heads must be a multiple of --tp 4"),
    (["train", "--clip", "-1"], "argument --clip: must be a finite number >= 0"),
    (["train", "--time-limit", "0"], "argument --time-limit: must be a finite number > 0"),
    (["train", "--capture-step", "500"], "argument --capture-step: step 500 is past --steps 200"),
    (["train", "--resume"], "argument --resume: needs --out DIR"),
    (["train", "--sweep"], "argument --sweep: needs --out DIR"),
    (["train", "--sweep", "--out", "x", "--capture", "c.npz"], "argument --capture: one run at a time"),
    (["train", "--sweep", "--out", "x", "--seeds", "0,x"], "argument --seeds: not an integer: 'x'"),
    (["train", "--sweep", "--out", "x", "--codecs", "bogus"], "argument --codecs: unknown codec 'bogus'"),
    (["train", "--parallel", "0"], "argument --parallel: must be >= 1"),
    (["train", "--gpus", "a"], "argument --gpus: not an integer: 'a'"),
    (["train", "--summary", "/nonexistent/logs"], "argument --summary: no such directory"),
    (["train", "--tail", "0"], "argument --tail: must be >= 1"),
    # the library's own parser
    (["nope"], "argument command: invalid choice: 'nope'"),
    (["bench", "nope"], "argument benchmark: invalid choice: 'nope'"),
    (["info", "extra"], "unrecognized arguments: extra"),
]


def _prog(args):
    """The command line an error names: the command's, or the parser's that refused the word."""
    if args[:1] == ["bench"]:
        return "python -m taco bench" + (f" {args[1]}" if args[1] in ("codec", "coll") else "")
    return "python -m taco" + (f" {args[0]}" if args[0] in ("accuracy", "train") else "")


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_value_is_one_line_and_status_2(args, message, capsys, monkeypatch):
    monkeypatch.delenv("TACO_DEBUG", raising=False)
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert _one_line(err).startswith(f"{_prog(args)}: error: ") and message in err, err
    assert out == ""


def test_train_device_is_checked_before_training(capsys):
    pytest.importorskip("torch")
    with pytest.raises(SystemExit) as e:
        main(["train", "--backend", "cpu-exact", "--device", "bogus"])
    assert e.value.code == 2
    assert "argument --device: " in _one_line(capsys.readouterr().err)


def test_block_applies_to_the_block_codecs_of_the_default_list(tmp_path, capsys):
    out = tmp_path / "codec.json"
    assert main(["bench", "codec", "--host", "--count", "4096", "--dtype", "fp32", "--block", "64",
                 "--json", str(out)]) == 0
    rows = {r["codec"]: r["block"] for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == set(taco.codecs())
    for name, block in rows.items():
        assert block == (0 if taco.codec_info(name)["block_size"] == 0 else 64), name
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["bench", "codec", "--help"])
    assert e.value.code == 0
    assert "codecs that have blocks" in capsys.readouterr().out


def test_count_zero_is_not_the_default(capsys):
    with pytest.raises(SystemExit) as e:
        main(["bench", "codec", "--host", "--count", "0", "--codec", "taco"])
    assert e.value.code == 2 and "--count" in capsys.readouterr().err


# ------------------------------------------------------------------ errors during a run


def _failing_parser():
    p = options.Parser(prog="prog")
    options.add_common(p)

    def run(args):
        raise InvalidArgumentError(4, "tacoCodecFind: spec argument 'x': unknown codec 'x'", "tacoInvalidArgument")
    return p, run


def test_library_error_is_one_line_and_status_1(capsys, monkeypatch):
    monkeypatch.delenv("TACO_DEBUG", raising=False)
    p, run = _failing_parser()
    assert options.run_command(p, run, []) == 1
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("prog: error: tacoInvalidArgument: ") and "--debug" in err


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.delenv("TACO_DEBUG", raising=False)
    p, run = _failing_parser()
    with pytest.raises(InvalidArgumentError):
        options.run_command(p, run, ["--debug"])
    monkeypatch.setenv("TACO_DEBUG", "INFO")
    with pytest.raises(InvalidArgumentError):
        options.run_command(p, run, [])


def test_a_bug_is_not_hidden(monkeypatch):
    monkeypatch.delenv("TACO_DEBUG", raising=False)
    p = options.Parser(prog="prog")
    with pytest.raises(ZeroDivisionError):  # not a library, file or package error: the traceback stays
        options.run_command(p, lambda args: 1 // 0, [])


def test_usage_error_carries_its_message():
    e = options.UsageError("argument --x: bad")
    assert isinstance(e, SystemExit) and e.code == 2 and str(e) == "argument --x: bad"


@pytest.mark.parametrize("text, value", [("268435456", 1 << 28), ("2^28", 1 << 28), ("1<<20", 1 << 20),
                                         ("256M", 256 << 20), ("64k", 64 << 10), ("1G", 1 << 30)])
def test_count_forms(text, value):
    assert options.count(1)(text) == value


def test_closed_pipe_ends_quietly():
    """`python -m taco info | head -1`: the reader goes away; no traceback, status 141."""
    env = dict(os.environ, PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "taco", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    p.stdout.close()  # before the first line is written: the write fails with EPIPE
    rc = p.wait(timeout=120)
    err = p.stderr.read().decode()
    p.stderr.close()
    assert err == "", err
    assert rc == 141
    # and through a shell, as a user types it
    sh = subprocess.run(["bash", "-c", f"'{sys.executable}' -m taco info | head -1"], capture_output=True, text=True,
                        env=env, timeout=120)
    assert sh.returncode == 0 and sh.stdout.startswith("taco (python)") and sh.stderr == "", sh
    # the benchmark harness too (its error handler took the broken pipe for a file error: status 1)
    p = subprocess.Popen([sys.executable, "-m", "taco", "bench", "codec", "--host", "--count", "1024"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    rc = p.wait(timeout=300)
    err = p.stderr.read().decode()
    p.stderr.close()
    assert (rc, err) == (141, ""), (rc, err)


def test_info_without_the_header_is_one_line_of_it():
    """taco.__version__ is read from the header: `info` read it before looking for the header, and a
    missing one was a traceback."""
    env = dict(os.environ, TACO_INCLUDE="/nonexistent", PYTHONPATH=str(Path(taco.__file__).resolve().parent.parent)
               + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "taco", "info"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "header            not found: TACO_INCLUDE='/nonexistent'" in p.stdout, p.stdout


def test_out_of_memory_during_a_run_is_one_line(monkeypatch, capsys):
    """A MemoryError the size check did not foresee is one line and status 1, not a traceback."""
    from taco_bench import codec as bench_codec

    def no_memory(*a, **k):
        raise MemoryError("Unable to allocate 512. GiB for an array with shape (137438953472,) and data type float32")

    monkeypatch.delenv("TACO_DEBUG", raising=False)
    monkeypatch.setattr(bench_codec, "laplace", no_memory)
    assert main(["bench", "codec", "--host", "--count", "1024", "--codec", "taco", "--dtype", "fp32"]) == 1
    out, err = capsys.readouterr()
    assert _one_line(err) == ("python -m taco bench codec: error: out of memory: Unable to allocate 512. GiB for an "
                              "array with shape (137438953472,) and data type float32 (--debug shows the traceback)\n")

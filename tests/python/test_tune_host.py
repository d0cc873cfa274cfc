"""The tuner's Python side without a GPU: taco.tune and Communicator.tune / tune_table against
a stubbed library (what reaches the C API, and the JSON coming back), the C entry points'
argument errors, the table report, `python -m taco info`'s cached tables, and the CLI's
errors (`python -m taco tune`)."""
import json
import os
import subprocess
import sys

import pytest

import taco
from taco import _lib, tuning
from taco import comm as comm_mod

TABLE = {
    "dtype": "bfloat16", "source": "measured", "ms": 1234, "ranks": 4,
    "key": "gpu=NVIDIA H200;sms=132;ranks=4;per_host=4;route=loopback;nccl=0;taco=100;"
           "codec=fp8-block:block=256;dtype=bfloat16;chunk=67108864;depth=2;early=1;claims=0",
    "bytes": [4096, 8192],
    "algos": ["plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged"],
    "us": [[10.0, 5.0, None, 30.0, None, 40.0], [12.0, 6.0, None, 8.0, 7.5, 44.0]],
    "demoted": ["oneshot"],
    "notes": "oneshot at 6149 elements: rank 0's output differs from the oracle",
    "hash": "0123456789abcdef",
    "model": ["oneshot-raw", "oneshot-raw"],
    "choice": ["oneshot-raw", "fused"],
}


class StubLib:
    """The real library, but for the tuner's calls, which these tests answer themselves."""

    def __init__(self, table=None):
        self._real = _lib.lib()
        self.calls = []
        self.table = table
        self._keep = None

    def __getattr__(self, name):
        return getattr(self._real, name)

    def tacoCommTune(self, comm, dtype, stream):
        self.calls.append(("tune", comm, dtype, int(_lib.ffi().cast("uintptr_t", stream))))
        return self._real.tacoSuccess

    def tacoCommTuneLoopback(self, comms, n, dtype, stream):
        self.calls.append(("tune_loopback", [comms[i] for i in range(n)], n, dtype))
        return self._real.tacoSuccess

    def tacoCommTuneTable(self, comm, dtype, out):
        self.calls.append(("table", comm, dtype))
        if self.table is None:
            out[0] = _lib.ffi().NULL
        else:
            self._keep = _lib.ffi().new("char[]", json.dumps(self.table).encode())
            out[0] = self._keep
        return self._real.tacoSuccess


@pytest.fixture
def stub(monkeypatch):
    s = StubLib(TABLE)
    monkeypatch.setattr(_lib, "lib", lambda: s)
    return s


def _handle(i):
    return _lib.ffi().cast("tacoComm_t", 0x1000 + 16 * i)


def test_tune_one_communicator_calls_comm_tune_and_returns_the_table(stub):
    c = taco.Communicator(_handle(0), "test")
    got = c.tune("bf16", stream=7)
    bf16 = _lib.enum_values("tacoDataType_t")["tacoBfloat16"]
    assert stub.calls[0] == ("tune", _handle(0), bf16, 7)
    assert stub.calls[1][0] == "table" and stub.calls[1][2] == bf16
    assert got == TABLE
    assert taco.tune(c, "float32") == TABLE  # the module-level form takes one communicator too
    assert stub.calls[-2][0] == "tune"


def test_tune_a_loopback_world_passes_every_rank_in_order(stub):
    comms = [taco.Communicator(_handle(i), "loopback") for i in range(4)]
    assert taco.tune(comms, "float16") == TABLE
    kind, handles, n, dtype = stub.calls[0]
    assert kind == "tune_loopback" and n == 4 and dtype == _lib.enum_values("tacoDataType_t")["tacoFloat16"]
    assert handles == [_handle(i) for i in range(4)]
    assert stub.calls[1][1] == _handle(0)  # the table of rank 0


def test_tune_table_is_none_without_a_table(stub):
    stub.table = None
    assert taco.Communicator(_handle(0), "test").tune_table("bfloat16") is None


def test_tune_rejects_what_is_not_a_world(stub):
    for bad in (None, [], "comm", [object()], 3):
        with pytest.raises(TypeError, match="comms"):
            taco.tune(bad, "bf16")
    with pytest.raises(taco.InvalidArgumentError, match="dtype"):
        taco.tune(taco.Communicator(_handle(0), "test"), "int8")
    assert stub.calls == []
    c = taco.Communicator(_handle(0), "test")
    c._h, c._ended = None, "closed"
    with pytest.raises(taco.InvalidUsageError, match="closed"):
        c.tune("bf16")


def test_c_entry_points_name_the_bad_argument():
    lib, ffi = _lib.lib(), _lib.ffi()
    assert lib.tacoCommTune(ffi.NULL, 0, ffi.NULL) == lib.tacoInvalidArgument
    assert "tacoCommTune: comm argument is NULL" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()
    assert lib.tacoCommTuneLoopback(ffi.NULL, 2, 0, ffi.NULL) == lib.tacoInvalidArgument
    assert "tacoCommTuneLoopback: comms argument is NULL" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()
    arr = ffi.new("tacoComm_t[]", 2)
    assert lib.tacoCommTuneLoopback(arr, 2, 0, ffi.NULL) == lib.tacoInvalidArgument
    assert "comms[0] is NULL" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()
    out = ffi.new("const char**")
    assert lib.tacoCommTuneTable(ffi.NULL, 0, out) == lib.tacoInvalidArgument
    assert "tacoCommTuneTable: comm" in ffi.string(lib.tacoGetLastError(ffi.NULL)).decode()


def test_format_table_is_nccl_tests_style():
    lines = tuning.format_table(TABLE)
    text = "\n".join(lines)
    header = next(ln for ln in lines if "size" in ln and "choice" in ln)
    for col in ("plain", "oneshot-raw", "oneshot", "fused", "fused-large", "staged", "choice", "speedup"):
        assert col in header
    assert "bfloat16, 4 ranks (4 per host), codec fp8-block:block=256, peer memory loopback, measured in 1.23 s" in text
    rows = [ln.split() for ln in lines if not ln.startswith("#")]
    assert rows[0] == ["4096", "10.00", "5.00", "demoted", "30.00", "-", "40.00", "oneshot-raw", "2.00"]
    assert rows[1] == ["8192", "12.00", "6.00", "demoted", "8.00", "7.50", "44.00", "fused", "1.50"]
    assert "output differs" in lines[-1]


def _cache(tmp_path, tables, fmt="libtaco-tune-1"):
    path = tmp_path / "tune.json"
    path.write_text(json.dumps({"format": fmt, "tables": tables}))
    return str(path)


def test_info_lines_show_this_machine_s_tables(tmp_path, monkeypatch):
    other = dict(TABLE, key=TABLE["key"].replace("NVIDIA H200", "NVIDIA B200"))
    monkeypatch.setenv("TACO_TUNE_FILE", _cache(tmp_path, [TABLE, other]))
    lines = tuning.info_lines(["NVIDIA H200"])
    text = "\n".join(lines)
    assert str(tmp_path) in lines[0]
    assert "bfloat16, 4 ranks (4 per host), codec fp8-block:block=256, peer memory loopback, chunk 64M" in text
    assert "demoted: oneshot" in text and "4K oneshot-raw, 8K fused" in text
    assert "1 table(s) of other GPUs or machines" in text
    assert "B200" not in text
    # Another machine only: counted, not shown.
    assert "NVIDIA H200" not in "\n".join(tuning.info_lines(["NVIDIA B200"]))


def test_info_lines_say_when_the_cache_is_absent_or_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("TACO_TUNE_FILE", str(tmp_path / "absent.json"))
    assert "none cached" in "\n".join(tuning.info_lines(["NVIDIA H200"]))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    monkeypatch.setenv("TACO_TUNE_FILE", str(bad))
    assert "unreadable" in "\n".join(tuning.info_lines(["NVIDIA H200"]))
    monkeypatch.setenv("TACO_TUNE_FILE", _cache(tmp_path, [], fmt="other"))
    assert "not a libtaco table cache" in "\n".join(tuning.info_lines([]))


def test_cache_path_follows_the_library_s_rule(monkeypatch):
    monkeypatch.delenv("TACO_TUNE_FILE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert tuning.cache_path() == "/xdg/taco/tune.json"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    monkeypatch.setenv("HOME", "/home/u")
    assert tuning.cache_path() == "/home/u/.cache/taco/tune.json"
    monkeypatch.setenv("TACO_TUNE_FILE", "/x/t.json")
    assert tuning.cache_path() == "/x/t.json"


def test_info_cli_lists_the_cached_tables(tmp_path):
    env = dict(os.environ, TACO_TUNE_FILE=_cache(tmp_path, [TABLE]))
    res = subprocess.run([sys.executable, "-m", "taco", "info"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode in (0, 1), res.stderr  # 1: no library found in this environment
    assert "AllReduce tables" in res.stdout and str(tmp_path) in res.stdout


@pytest.mark.parametrize("argv,message", [
    ([], "run one process per GPU under mpirun or torchrun, or pass --loopback N"),
    (["--loopback", "1"], "argument --loopback: must be >= 2"),
    (["--loopback", "x"], "argument --loopback: not an integer"),
    (["--loopback", "2", "--dtype", "int8"], "argument --dtype: unknown dtype 'int8'"),
    (["--loopback", "2", "--max-bytes", "1K"], "argument --max-bytes: must be at least 4K"),
    (["--loopback", "2", "--max-bytes", "lots"], "argument --max-bytes: not a size"),
])
def test_tune_cli_errors(argv, message, capsys, monkeypatch):
    for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
              "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(SystemExit) if argv else _no_exit():
        rc = tuning.main(argv)
        assert rc == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("python -m taco tune: error: ")


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_tune_cli_plot_needs_matplotlib(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # importing it raises ImportError
    assert tuning.main(["--loopback", "2", "--plot", "x.png"]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_tune_cli_without_a_gpu_says_so(capsys, monkeypatch):
    from taco import _cuda

    monkeypatch.setattr(_cuda, "device_count", lambda: 0)
    assert tuning.main(["--loopback", "2"]) == 1
    assert "no CUDA device" in capsys.readouterr().err


def test_main_dispatches_tune(capsys):
    from taco.__main__ import main

    with pytest.raises(SystemExit):
        main(["tune", "--loopback", "0"])
    assert "python -m taco tune: error: argument --loopback" in capsys.readouterr().err


def test_algo_columns_match_the_library():
    # The table's columns are the library's algorithms but auto, and the fused two-shot with the
    # larger scratch; the C library writes the same names (tests/host/test_tune_cache.cc).
    assert set(tuning.ALGO_COLUMNS) - {"fused-large"} == set(comm_mod.ALGOS) - {"auto"}

"""bench/roofline_compare.py (the A/B table of tools/peer_ab.sh) on runs written as
bench/peer_roofline.py --all --json writes them."""
import importlib.util
import json
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "bench" / "roofline_compare.py"
_spec = importlib.util.spec_from_file_location("roofline_compare", _PATH)
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)


def _run(tmp_path, name, rows):
    p = tmp_path / name
    p.write_text(json.dumps({"device": "test", "rows": [
        {"algo": a, "codec": c, "dtype": d, "P": P, "N": 1 << 20, "time_ms": t, "bytes_moved": 1.0,
         "roofline_ms": 1.0, "of_memcpy": f, "memcpy_TBps": 4.0} for (P, d, c, a, t, f) in rows]}))
    return str(p)


def test_rows_side_by_side_with_the_median_time_ratio(tmp_path, capsys):
    b1 = _run(tmp_path, "b1.json", [(2, "float32", "taco", "fused", 2.0, 0.40),
                                    (2, "bfloat16", "taco", "fused", 1.0, 0.50),
                                    (8, "bfloat16", "int4-block", "oneshot", 3.0, 0.30)])
    b2 = _run(tmp_path, "b2.json", [(2, "float32", "taco", "fused", 2.2, 0.38),
                                    (2, "bfloat16", "taco", "fused", 1.2, 0.45)])
    n1 = _run(tmp_path, "n1.json", [(2, "float32", "taco", "fused", 1.0, 0.80),
                                    (2, "bfloat16", "taco", "fused", 0.9, 0.56),
                                    (4, "bfloat16", "fp8-block", "fused", 1.0, 0.8)])
    assert rc.main(["--base", b1, b2, "--new", n1]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["P", "dtype", "codec", "algo"]
    # bf16 before fp32 at the same P; fractions per run in the order given; medians; NEW / BASE
    assert lines[1].split() == ["2", "bfloat16", "taco", "fused", "0.50/0.45", "->", "0.56", "1.100", "0.900", "0.818"]
    assert lines[2].split() == ["2", "float32", "taco", "fused", "0.40/0.38", "->", "0.80", "2.100", "1.000", "0.476"]
    assert lines[3:5] == ["only in BASE: P=8 bfloat16 int4-block oneshot", "only in NEW: P=4 bfloat16 fp8-block fused"]
    # the summary: geometric mean of 0.9 / 1.1 and 1.0 / 2.1, per algorithm; slowest and fastest rows
    g = (0.9 / 1.1 * 1.0 / 2.1) ** 0.5
    assert lines[5] == f"summary: 2 rows, NEW/BASE time geometric mean {g:.3f} (fused {g:.3f})"
    assert lines[6] == ("summary: slowest 0.818 (P=2 bfloat16 taco fused), fastest 0.476 (P=2 float32 taco fused); "
                        "0 rows slower and 2 faster by more than 3%")


def test_summary_counts_rows_beyond_the_noise(tmp_path, capsys):
    rows = [(2, "bfloat16", "taco", "fused"), (2, "bfloat16", "taco", "oneshot"), (4, "bfloat16", "taco", "fused")]
    b = _run(tmp_path, "b.json", [r + (1.00, 0.5) for r in rows])
    n = _run(tmp_path, "n.json", [r + (t, 0.5) for r, t in zip(rows, (1.05, 1.02, 0.90))])
    assert rc.main(["--base", b, "--new", n, "--noise", "0.04"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith("1 rows slower and 1 faster by more than 4%"), last
    assert "slowest 1.050 (P=2 bfloat16 taco fused)" in last and "fastest 0.900 (P=4 bfloat16 taco fused)" in last


def test_a_file_that_is_not_a_roofline_run_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"P": 2, "dtype": "float32", "codec": "taco"}]}))
    with pytest.raises(SystemExit, match="a row without algo, time_ms, of_memcpy"):
        rc.load(str(bad))
    other = tmp_path / "other.json"
    other.write_text(json.dumps([1, 2]))
    with pytest.raises(SystemExit, match="not the JSON of bench/peer_roofline.py"):
        rc.load(str(other))

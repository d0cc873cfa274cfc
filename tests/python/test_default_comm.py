"""The module-level drop-in (taco.init / taco.allreduce) without a launcher."""
import pytest

import taco


def test_allreduce_before_init_is_invalid_usage():
    taco.finalize()
    with pytest.raises(taco.InvalidUsageError, match=r"taco.init\(\) has not been called"):
        taco.allreduce(None)


def test_init_without_launcher_says_what_to_do(monkeypatch):
    for v in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"):
        monkeypatch.delenv(v, raising=False)
    try:
        import mpi4py  # noqa: F401
        pytest.skip("mpi4py is installed: init() would bootstrap from COMM_WORLD")  # never in CI's venv
    except ImportError:
        pass
    with pytest.raises(taco.InvalidUsageError, match="no launcher found"):
        taco.init()

"""taco.init with an explicit communicator, and the module-level collectives."""
import numpy as np
import pytest

import taco
from taco import reference as ref

pytestmark = pytest.mark.gpu


def test_module_level_allreduce_uses_the_default_communicator():
    import cupy

    comm = taco.loopback(1, codec="fp8-block", fallback_bytes=0)[0]
    try:
        taco.init(comm)
        x = np.random.default_rng(3).laplace(size=5000).astype(np.float32)
        y = taco.allreduce(cupy.asarray(x))
        assert np.array_equal(cupy.asnumpy(y), ref.allreduce([x], "fp8-block"))
        with pytest.raises(taco.InvalidUsageError, match="cannot create siblings"):
            taco.allreduce(cupy.asarray(x), codec="taco")
    finally:
        taco.finalize()
    assert comm.closed

"""libtaco: compression-aware collectives on NCCL — Python binding.

    import taco, numpy as np
    x = np.random.default_rng(0).laplace(size=1 << 20).astype(np.float32)
    wire = taco.compress(x, "taco")                 # uint8 bytes (CPU codec for numpy)
    y = taco.decompress(wire, "taco", x.size, x.dtype)

Device arrays (CuPy, torch, `__cuda_array_interface__`, `__dlpack__`) run the
fused GPU kernels, stream-ordered, on `stream=` or the producer's stream.
The library is found through $TACO_LIBRARY, the copy in this package, or the
system (see taco._lib). Importing taco loads nothing: the library is opened on
first use, so `taco.reference` works without it.
"""

from __future__ import annotations

from .codec import (
    codec_info,
    codecs,
    compress,
    compressed_size,
    decompress,
    decompress_accumulate,
    decompress_reduce_compress,
    default_codec,
    find_codec,
)
from .comm import Communicator, get_unique_id, group, loopback
from .default import allgather, allreduce, alltoall, communicator, finalize, init, reduce_scatter
from .tuning import tune
from . import codec as _codec
from . import errors as _errors
from .errors import (
    CudaError,
    InternalError,
    InvalidArgumentError,
    InvalidUsageError,
    NcclError,
    NotSupportedError,
    OutOfMemoryError,
    RemoteError,
    TacoError,
    TacoSystemError,
)

__all__ = [
    "Communicator",
    "get_unique_id",
    "group",
    "loopback",
    "init",
    "finalize",
    "communicator",
    "allreduce",
    "reduce_scatter",
    "allgather",
    "alltoall",
    "tune",
    *_codec.__all__,  # compress, decompress, ..., find_codec
    "library_version",
    *[_name for _name in _errors.__all__ if _name != "check"],  # the exception classes
]


def library_version() -> str:
    """Version of the loaded libtaco.so, "MAJOR.MINOR.PATCH" (tacoGetVersion)."""
    from . import _lib

    v = _lib.lib().tacoGetVersion()
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def __getattr__(name: str):
    # __version__: the version of the header this package was built against.
    if name == "__version__":
        from . import _lib

        k = _lib.constants()
        return f"{k['TACO_MAJOR']}.{k['TACO_MINOR']}.{k['TACO_PATCH']}"
    raise AttributeError(f"module 'taco' has no attribute {name!r}")

"""libtaco result codes as Python exceptions.

`check(rc)` turns a tacoResult_t into an exception carrying the code, its name,
and the library's detailed message (tacoGetLastError). The mapping is by enum
*name*, read from taco.h, so it cannot drift from the C values.
"""

from __future__ import annotations

from . import _lib

__all__ = [
    "TacoError",
    "CudaError",
    "TacoSystemError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidUsageError",
    "RemoteError",
    "NcclError",
    "NotSupportedError",
    "OutOfMemoryError",
    "check",
]


class TacoError(Exception):
    """A libtaco call failed.

    Attributes:
      code:    the tacoResult_t value (int)
      name:    its enum name, e.g. "tacoInvalidArgument"
      message: the library's detailed message (tacoGetLastError), or the
               generic text of the code when the library recorded none
    """

    def __init__(self, code: int, message: str, name: str | None = None):
        self.code = int(code)
        self.name = name or f"tacoResult({code})"
        self.message = message
        super().__init__(f"{self.name}: {message}")


class CudaError(TacoError):
    """tacoUnhandledCudaError: a CUDA call failed (or there is no CUDA device)."""


class TacoSystemError(TacoError, OSError):
    """tacoSystemError: the OS failed (dlopen, host memory). An OSError; not the builtin
    SystemError, which is the interpreter's own."""


class InternalError(TacoError):
    """tacoInternalError: a bug in libtaco."""


class InvalidArgumentError(TacoError, ValueError):
    """tacoInvalidArgument: a bad argument; the message names it."""


class InvalidUsageError(TacoError):
    """tacoInvalidUsage: a valid call at the wrong time."""


class RemoteError(TacoError):
    """tacoRemoteError: another rank failed or disagreed."""


class NcclError(TacoError):
    """tacoNcclError: NCCL returned an error, or is not available."""


class NotSupportedError(TacoError):
    """tacoNotSupported: valid, but not supported by this build or codec."""


class OutOfMemoryError(TacoError, MemoryError):
    """tacoOutOfMemory: device or pinned memory allocation failed."""


# enum name in taco.h -> exception class
_BY_NAME = {
    "tacoUnhandledCudaError": CudaError,
    "tacoSystemError": TacoSystemError,
    "tacoInternalError": InternalError,
    "tacoInvalidArgument": InvalidArgumentError,
    "tacoInvalidUsage": InvalidUsageError,
    "tacoRemoteError": RemoteError,
    "tacoNcclError": NcclError,
    "tacoNotSupported": NotSupportedError,
    "tacoOutOfMemory": OutOfMemoryError,
}

_table: dict[int, tuple[str, type]] | None = None


def _code_table() -> dict[int, tuple[str, type]]:
    global _table
    if _table is None:
        names = _lib.ffi().typeof("tacoResult_t").elements  # {value: name}
        _table = {v: (n, _BY_NAME.get(n, TacoError)) for v, n in names.items()}
    return _table


def error_name_and_class(code: int) -> tuple[str | None, type]:
    """The enum name and exception class of a tacoResult_t value."""
    return _code_table().get(int(code), (None, TacoError))


def error_class(code: int) -> type:
    """The exception class for a tacoResult_t value."""
    return error_name_and_class(code)[1]


def make_error(code: int, comm=None) -> TacoError:
    """The exception for a failed call, with the library's last message: the communicator's
    when `comm` (a tacoComm_t) is given, else the calling thread's."""
    f, lib = _lib.ffi(), _lib.lib()
    name, cls = error_name_and_class(code)
    msg = f.string(lib.tacoGetLastError(f.NULL if comm is None else comm)).decode("utf-8", "replace")
    if not msg:
        msg = f.string(lib.tacoGetErrorString(int(code))).decode("utf-8", "replace")
    return cls(code, msg, name)


def check(rc: int, comm=None) -> None:
    """Raise the TacoError subclass for `rc` unless it is tacoSuccess (make_error)."""
    if rc != _lib.lib().tacoSuccess:
        raise make_error(rc, comm)

"""Exceptions: one class per baracuda StatusCode, carrying the plan's message."""
from . import _C


class Error(Exception):
    """A baracuda call failed. ``code`` names the StatusCode; ``message`` is the
    plan's message (it starts with the plan's name, e.g. ``"ReducePlan: ..."``)."""

    code = "Error"

    def __init__(self, message=""):
        super().__init__(message)
        self.message = message
        self.needed = None  # BufferTooSmall / WorkspaceTooSmall: elements / bytes needed
        self.got = None     # ... and given


class InvalidProblemError(Error, ValueError):
    """The arguments describe an invalid problem (wrong shape, dtype mismatch, bad option)."""

    code = "InvalidProblem"


class UnsupportedError(Error):
    """A valid problem that no backend here implements (dtype, layout, device)."""

    code = "Unsupported"


class BufferTooSmallError(Error, ValueError):
    code = "BufferTooSmall"


class WorkspaceTooSmallError(Error, ValueError):
    code = "WorkspaceTooSmall"


class CudaError(Error, RuntimeError):
    code = "CudaError"


class LibraryError(Error, RuntimeError):
    code = "LibraryError"


# StatusCode values (include/baracuda/core/status.hpp): Ok = 0, then these.
_C._register_errors({
    1: InvalidProblemError,
    2: UnsupportedError,
    3: BufferTooSmallError,
    4: WorkspaceTooSmallError,
    5: CudaError,
    6: LibraryError,
})

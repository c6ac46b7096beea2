"""baracuda: CUDA kernels with PyTorch semantics, from Python.

Two layers (docs/PYTHON.md):

* ``baracuda.plans``: the plans themselves (descriptors, ``select``,
  ``workspace_size``, ``sku``, ``run``) for callers that select once and run
  many times;
* functional ops with PyTorch names (``baracuda.sum``, ``baracuda.add``,
  ``baracuda.linear``, ``baracuda.softmax``, ``baracuda.layer_norm``,
  ``baracuda.cross_entropy``, ...) that select and cache plans by problem key.

Inputs are any objects with ``__dlpack__`` (torch, NumPy, JAX, CuPy,
``baracuda.Array``); outputs are ``baracuda.Array`` (exported zero-copy with
``torch.from_dlpack`` / ``np.from_dlpack``) unless ``out=`` is given.
``baracuda.torch`` (imported explicitly) has autograd drop-ins. This module
never imports torch.
"""
from . import _C
from ._errors import (
    Error,
    InvalidProblemError,
    UnsupportedError,
    BufferTooSmallError,
    WorkspaceTooSmallError,
    CudaError,
    LibraryError,
)
from ._C import Array, Stream, empty, full, cuda_available, cuda_device_count, empty_cache
from . import plans
from .functional import *  # noqa: F401,F403
from .functional import __all__ as _functional_all, clear_plan_cache, plan_cache_size
from ._functional_b import *  # noqa: F401,F403  (part B)
from ._functional_b import __all__ as _functional_b_all



def _array_numpy(self):
    """A NumPy view of a CPU array (zero-copy; np.from_dlpack)."""
    if self.device != "cpu":
        raise TypeError(f"numpy(): the array is on {self.device}; NumPy reads host memory only")
    import numpy as np
    return np.from_dlpack(self)


def _array_array(self, dtype=None, copy=None):
    a = _array_numpy(self)
    if dtype is not None:
        a = a.astype(dtype)
    return a.copy() if copy else a


Array.numpy = _array_numpy
Array.__array__ = _array_array
Array.tolist = lambda self: _array_numpy(self).tolist()

__version__ = _C.version()
WITH_CUDA = _C.WITH_CUDA

__all__ = [
    "Array", "Stream", "empty", "full", "zeros", "cuda_available", "cuda_device_count", "empty_cache", "plans",
    "Error", "InvalidProblemError", "UnsupportedError", "BufferTooSmallError", "WorkspaceTooSmallError",
    "CudaError", "LibraryError", "clear_plan_cache", "plan_cache_size", "WITH_CUDA",
] + list(_functional_all) + list(_functional_b_all)

"""PyTorch drop-ins: autograd-aware ops and nn.Modules on baracuda's kernels.

Only this submodule imports torch (``import baracuda.torch``). The ops are
registered with ``torch.library.custom_op`` (namespace ``baracuda``), so
``torch.compile`` sees opaque ops with fake (meta) implementations instead of
breaking the graph, and ``torch.autograd`` differentiates them through
``register_autograd``. Tensors go to baracuda zero-copy through DLPack; the
outputs baracuda allocates come back with ``torch.from_dlpack`` (zero-copy),
on torch's current stream. This slice has LayerNorm and RMSNorm
(docs/PYTHON.md lists what comes next).
"""
import math
from typing import List, Optional, Tuple

import torch
from torch import Tensor

import baracuda as _bc

__all__ = ["layer_norm", "rms_norm", "LayerNorm", "RMSNorm"]


def _t(a):
    return torch.from_dlpack(a)


def _d(t):
    """What baracuda reads: detached (torch refuses to export a tensor that
    requires grad; autograd is handled here), contiguous (the CUDA kernels
    need unit-stride rows)."""
    return None if t is None else t.detach().contiguous()


def _stats_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _rows(x, k):
    return math.prod(x.shape[: x.dim() - k])


# ---- rms_norm ------------------------------------------------------------------------------------
@torch.library.custom_op("baracuda::rms_norm_fwd", mutates_args=())
def _rms_norm_fwd(x: Tensor, weight: Optional[Tensor], normalized_dims: int, eps: float) -> Tuple[Tensor, Tensor]:
    x = _d(x)
    y, rstd = _bc.rms_norm(x, tuple(x.shape[x.dim() - normalized_dims:]), _d(weight), eps, return_stats=True)
    return _t(y), _t(rstd)


@_rms_norm_fwd.register_fake
def _(x, weight, normalized_dims, eps):
    return x.new_empty(x.shape), x.new_empty((_rows(x, normalized_dims),), dtype=_stats_dtype(x))


@torch.library.custom_op("baracuda::rms_norm_bwd", mutates_args=())
def _rms_norm_bwd(dy: Tensor, x: Tensor, weight: Optional[Tensor], rstd: Tensor,
                  normalized_dims: int) -> Tuple[Tensor, Tensor]:
    x = _d(x)
    dx, dw = _bc.rms_norm_backward(_d(dy), x, tuple(x.shape[x.dim() - normalized_dims:]), _d(rstd), _d(weight))
    return _t(dx), (_t(dw) if dw is not None else x.new_empty((0,)))


@_rms_norm_bwd.register_fake
def _(dy, x, weight, rstd, normalized_dims):
    return x.new_empty(x.shape), (weight.new_empty(weight.shape) if weight is not None else x.new_empty((0,)))


def _rms_setup(ctx, inputs, output):
    x, weight, normalized_dims, eps = inputs
    ctx.save_for_backward(x, weight, output[1])
    ctx.normalized_dims = normalized_dims


def _rms_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _rms_norm_bwd(dy, x, weight, rstd, ctx.normalized_dims)
    return dx, (dw if weight is not None else None), None, None


_rms_norm_fwd.register_autograd(_rms_backward, setup_context=_rms_setup)


def rms_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """torch.nn.functional.rms_norm on baracuda (eps None: torch.finfo(dtype).eps)."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if eps is None:
        eps = torch.finfo(input.dtype).eps
    return _rms_norm_fwd(input, weight, len(ns), float(eps))[0]


# ---- layer_norm -------------------------------------------------------------------------------------
@torch.library.custom_op("baracuda::layer_norm_fwd", mutates_args=())
def _layer_norm_fwd(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], normalized_dims: int,
                    eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    x = _d(x)
    y, mean, rstd = _bc.layer_norm(x, tuple(x.shape[x.dim() - normalized_dims:]), _d(weight), _d(bias), eps,
                                   return_stats=True)
    return _t(y), _t(mean), _t(rstd)


@_layer_norm_fwd.register_fake
def _(x, weight, bias, normalized_dims, eps):
    r = _rows(x, normalized_dims)
    sd = _stats_dtype(x)
    return x.new_empty(x.shape), x.new_empty((r,), dtype=sd), x.new_empty((r,), dtype=sd)


@torch.library.custom_op("baracuda::layer_norm_bwd", mutates_args=())
def _layer_norm_bwd(dy: Tensor, x: Tensor, weight: Optional[Tensor], has_bias: bool, mean: Tensor, rstd: Tensor,
                    normalized_dims: int) -> Tuple[Tensor, Tensor, Tensor]:
    x = _d(x)
    ns = tuple(x.shape[x.dim() - normalized_dims:])
    dx, dw, db = _bc.layer_norm_backward(_d(dy), x, ns, _d(mean), _d(rstd), _d(weight), has_bias)
    return (_t(dx), (_t(dw) if dw is not None else x.new_empty((0,))),
            (_t(db) if db is not None else x.new_empty((0,))))


@_layer_norm_bwd.register_fake
def _(dy, x, weight, has_bias, mean, rstd, normalized_dims):
    ns = tuple(x.shape[x.dim() - normalized_dims:])
    return (x.new_empty(x.shape), x.new_empty(ns if weight is not None else (0,)),
            x.new_empty(ns if has_bias else (0,)))


def _ln_setup(ctx, inputs, output):
    x, weight, bias, normalized_dims, eps = inputs
    ctx.save_for_backward(x, weight, output[1], output[2])
    ctx.normalized_dims = normalized_dims
    ctx.has_bias = bias is not None


def _ln_backward(ctx, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = _layer_norm_bwd(dy, x, weight, ctx.has_bias, mean, rstd, ctx.normalized_dims)
    return dx, (dw if weight is not None else None), (db if ctx.has_bias else None), None, None


_layer_norm_fwd.register_autograd(_ln_backward, setup_context=_ln_setup)


def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """torch.nn.functional.layer_norm on baracuda."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return _layer_norm_fwd(input, weight, bias, len(ns), float(eps))[0]


# ---- modules ------------------------------------------------------------------------------------------
class RMSNorm(torch.nn.Module):
    """Drop-in for torch.nn.RMSNorm (same arguments, parameters and state_dict keys)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape = ns
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(ns, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LayerNorm(torch.nn.Module):
    """Drop-in for torch.nn.LayerNorm (same arguments, parameters and state_dict keys)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape = ns
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.ones(ns, device=device, dtype=dtype))
            self.bias = torch.nn.Parameter(torch.zeros(ns, device=device, dtype=dtype)) if bias else None
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"

"""PyTorch drop-ins: autograd-aware ops and nn.Modules on baracuda's kernels.

Only this submodule imports torch (``import baracuda.torch``). The ops are
registered with ``torch.library.custom_op`` (namespace ``baracuda``), so
``torch.compile`` sees opaque ops with fake (meta) implementations instead of
breaking the graph, and ``torch.autograd`` differentiates them through
``register_autograd``. Tensors go to baracuda zero-copy through DLPack; the
outputs baracuda allocates come back with ``torch.from_dlpack`` (zero-copy),
on torch's current stream. This slice has LayerNorm, RMSNorm, Linear
with a fused activation, CrossEntropyLoss, fused linear cross-entropy,
flash attention, rotary embeddings and AdamW (docs/PYTHON.md lists what
comes next).
"""
import math
from typing import List, Optional, Tuple

import torch
from torch import Tensor

import baracuda as _bc

__all__ = ["layer_norm", "rms_norm", "linear", "cross_entropy", "flash_attention", "rope", "LayerNorm", "RMSNorm",
           "Linear", "CrossEntropyLoss", "AdamW", "linear_cross_entropy", "LinearCrossEntropyLoss"]


_from_capsule = getattr(torch._C, "_from_dlpack", None)


def _t(a):
    """A baracuda result as a torch tensor, zero-copy. The results here were
    made on torch's current stream (the ops take torch tensors), so the
    capsule is taken with stream=-1 (no ordering needed) straight into torch:
    torch.from_dlpack's Python wrapper looks up the current stream and the
    device on every call, which measured 24 us per result on the H100."""
    if _from_capsule is not None and isinstance(a, _bc.Array):
        return _from_capsule(a.__dlpack__(stream=None if a.device == "cpu" else -1))
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


# ---- how the ops are called ----------------------------------------------------------------------
# Each op is a torch.library custom op (opaque to torch.compile, with a fake
# implementation and registered autograd). Calling a custom op from eager code
# costs torch's Python dispatch: ~40 us per call measured (CPU, torch 2.5.1),
# 100-140 us per linear forward / backward on the H100 with torch 2.11 - more
# than the GEMM of a small layer. So eager calls on plain tensors run the same
# implementation through a torch.autograd.Function built from the same forward,
# setup_context and backward (~10 us), and torch.compile (or any tensor
# subclass: fake / functional tensors while tracing) gets the custom op.
def _custom_op(name):
    def deco(fn):
        op = torch.library.custom_op(name, mutates_args=())(fn)
        op._baracuda_impl = fn
        op._baracuda_eager = None
        return op
    return deco


def _autograd(op, backward, setup_context):
    op.register_autograd(backward, setup_context=setup_context)
    impl = op._baracuda_impl

    def forward(*args):
        return impl(*args)

    def setup(ctx, inputs, output):
        ctx._bc_tensor_inputs = tuple(isinstance(i, torch.Tensor) for i in inputs)
        setup_context(ctx, inputs, output)

    def backward_(ctx, *grads):
        # The custom-op API takes a list of gradients for a List[Tensor] input;
        # autograd.Function wants None for every input that is not a tensor.
        g = backward(ctx, *grads)
        if not isinstance(g, tuple):
            g = (g,)
        return tuple(gi if t else None for gi, t in zip(g, ctx._bc_tensor_inputs))

    # Named at creation: autograd names the node class after it (grad_fn <linear_fwd_eagerBackward>).
    name = getattr(op, "_name", "op") + "_eager"
    op._baracuda_eager = type(name, (torch.autograd.Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_)})


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _call(op, *args):
    if not torch.compiler.is_compiling() and all(type(a) in _PLAIN for a in args if isinstance(a, torch.Tensor)):
        eager = op._baracuda_eager
        return eager.apply(*args) if eager is not None else op._baracuda_impl(*args)
    return op(*args)


# ---- rms_norm ------------------------------------------------------------------------------------
@_custom_op("baracuda::rms_norm_fwd")
def _rms_norm_fwd(x: Tensor, weight: Optional[Tensor], normalized_dims: int, eps: float) -> Tuple[Tensor, Tensor]:
    x = _d(x)
    y, rstd = _bc.rms_norm(x, tuple(x.shape[x.dim() - normalized_dims:]), _d(weight), eps, return_stats=True)
    return _t(y), _t(rstd)


@_rms_norm_fwd.register_fake
def _(x, weight, normalized_dims, eps):
    return x.new_empty(x.shape), x.new_empty((_rows(x, normalized_dims),), dtype=_stats_dtype(x))


@_custom_op("baracuda::rms_norm_bwd")
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
    dx, dw = _call(_rms_norm_bwd, dy, x, weight, rstd, ctx.normalized_dims)
    return dx, (dw if weight is not None else None), None, None


_autograd(_rms_norm_fwd, _rms_backward, _rms_setup)


def rms_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """torch.nn.functional.rms_norm on baracuda (eps None: torch.finfo(dtype).eps)."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if eps is None:
        eps = torch.finfo(input.dtype).eps
    return _call(_rms_norm_fwd, input, weight, len(ns), float(eps))[0]


# ---- layer_norm -------------------------------------------------------------------------------------
@_custom_op("baracuda::layer_norm_fwd")
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


@_custom_op("baracuda::layer_norm_bwd")
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
    dx, dw, db = _call(_layer_norm_bwd, dy, x, weight, ctx.has_bias, mean, rstd, ctx.normalized_dims)
    return dx, (dw if weight is not None else None), (db if ctx.has_bias else None), None, None


_autograd(_layer_norm_fwd, _ln_backward, _ln_setup)


def layer_norm(input: Tensor, normalized_shape: List[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """torch.nn.functional.layer_norm on baracuda."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return _call(_layer_norm_fwd, input, weight, bias, len(ns), float(eps))[0]


# ---- linear with a fused activation --------------------------------------------------------------
_ACTS = ("none", "relu", "gelu", "gelu_tanh")


@_custom_op("baracuda::linear_fwd")
def _linear_fwd(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str) -> Tuple[Tensor, Tensor]:
    act = None if activation == "none" else activation
    if activation in ("gelu", "gelu_tanh"):
        y, aux = _bc.linear(_d(x), _d(weight), _d(bias), activation=act, return_aux=True)
        return _t(y), _t(aux)
    return _t(_bc.linear(_d(x), _d(weight), _d(bias), activation=act)), x.new_empty((0,))


@_linear_fwd.register_fake
def _(x, weight, bias, activation):
    y = x.new_empty((*x.shape[:-1], weight.shape[0]))
    return y, (x.new_empty(y.shape) if activation in ("gelu", "gelu_tanh") else x.new_empty((0,)))


@_custom_op("baracuda::linear_bwd")
def _linear_bwd(dy: Tensor, x: Tensor, weight: Tensor, aux: Tensor, has_bias: bool, activation: str,
                need_dx: bool, need_dw: bool) -> Tuple[Tensor, Tensor, Tensor]:
    act = None if activation == "none" else activation
    dx, dw, db = _bc.linear_backward(_d(dy), _d(x), _d(weight), has_bias=has_bias, activation=act,
                                     aux=_d(aux) if activation != "none" else None,
                                     output_mask=(need_dx, need_dw, has_bias))
    return (_t(dx) if dx is not None else x.new_empty((0,)), _t(dw) if dw is not None else x.new_empty((0,)),
            _t(db) if db is not None else x.new_empty((0,)))


@_linear_bwd.register_fake
def _(dy, x, weight, aux, has_bias, activation, need_dx, need_dw):
    return (x.new_empty(x.shape if need_dx else (0,)), x.new_empty(weight.shape if need_dw else (0,)),
            x.new_empty((weight.shape[0],) if has_bias else (0,)))


def _linear_setup(ctx, inputs, output):
    x, weight, bias, activation = inputs
    y, aux = output
    saved = y if activation == "relu" else aux  # relu's backward reads its output
    ctx.save_for_backward(x, weight, saved)
    ctx.has_bias = bias is not None
    ctx.activation = activation


def _linear_backward(ctx, dy, _daux):
    x, weight, saved = ctx.saved_tensors
    need_dx, need_dw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    if not (need_dx or need_dw or ctx.has_bias):
        return None, None, None, None
    dx, dw, db = _call(_linear_bwd, dy, x, weight, saved, ctx.has_bias, ctx.activation, need_dx, need_dw)
    return (dx if need_dx else None), (dw if need_dw else None), (db if ctx.has_bias else None), None


_autograd(_linear_fwd, _linear_backward, _linear_setup)


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, activation: Optional[str] = None) -> Tensor:
    """act(input @ weight.T + bias) in one GEMM with a fused epilogue; activation
    None, 'relu', 'gelu' (erf) or 'gelu_tanh'."""
    act = "none" if activation is None else activation
    if act not in _ACTS:
        raise ValueError(f"linear: activation must be None, 'relu', 'gelu' or 'gelu_tanh', got {activation!r}")
    return _call(_linear_fwd, input, weight, bias, act)[0]


# ---- cross-entropy ---------------------------------------------------------------------------------
@_custom_op("baracuda::cross_entropy_fwd")
def _ce_fwd(x: Tensor, target: Tensor, weight: Optional[Tensor], ignore_index: int, reduction: str,
            label_smoothing: float) -> Tuple[Tensor, Tensor]:
    loss, lse = _bc.cross_entropy(_d(x), _d(target), _d(weight), ignore_index, reduction, label_smoothing,
                                  return_lse=True)
    return _t(loss), _t(lse)


@_ce_fwd.register_fake
def _(x, target, weight, ignore_index, reduction, label_smoothing):
    loss = x.new_empty((x.shape[0],) if reduction == "none" else ())
    return loss, x.new_empty((x.shape[0],), dtype=_stats_dtype(x))


@_custom_op("baracuda::cross_entropy_bwd")
def _ce_bwd(dloss: Tensor, x: Tensor, target: Tensor, lse: Tensor, weight: Optional[Tensor], ignore_index: int,
            reduction: str, label_smoothing: float) -> Tensor:
    return _t(_bc.cross_entropy_backward(_d(dloss), _d(x), _d(target), _d(lse), _d(weight), ignore_index,
                                         reduction, label_smoothing))


@_ce_bwd.register_fake
def _(dloss, x, target, lse, weight, ignore_index, reduction, label_smoothing):
    return x.new_empty(x.shape)


def _ce_setup(ctx, inputs, output):
    x, target, weight, ignore_index, reduction, label_smoothing = inputs
    ctx.save_for_backward(x, target, output[1], weight)
    ctx.opts = (ignore_index, reduction, label_smoothing)


def _ce_backward(ctx, dloss, _dlse):
    x, target, lse, weight = ctx.saved_tensors
    dx = _call(_ce_bwd, dloss, x, target, lse, weight, *ctx.opts)
    return dx, None, None, None, None, None


_autograd(_ce_fwd, _ce_backward, _ce_setup)


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """torch.nn.functional.cross_entropy for input [N, C] (class-index or
    probability targets); the gradient flows to input only (not to weight or
    probability targets)."""
    if input.dim() != 2:
        raise _bc.UnsupportedError(f"cross_entropy: input must be 2-D [N, C], got shape {tuple(input.shape)}")
    return _call(_ce_fwd, input, target, weight, int(ignore_index), reduction, float(label_smoothing))[0]


# ---- fused linear + cross-entropy ---------------------------------------------------------------------
@_custom_op("baracuda::linear_cross_entropy")
def _lce(h: Tensor, w: Tensor, bias: Optional[Tensor], target: Tensor, ignore_index: int, reduction: str,
         label_smoothing: float, need_dh: bool, need_dw: bool, need_db: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    grads = need_dh or need_dw or need_db
    r = _bc.linear_cross_entropy(_d(h), _d(w), _d(target), _d(bias), None, ignore_index, reduction, label_smoothing,
                                 loss_dtype=None, return_grads=grads)
    if not grads:
        return _t(r), h.new_empty((0,)), h.new_empty((0,)), h.new_empty((0,))
    loss, dh, dw, db = r
    return (_t(loss), _t(dh) if need_dh else h.new_empty((0,)), _t(dw) if need_dw else h.new_empty((0,)),
            _t(db) if (need_db and db is not None) else h.new_empty((0,)))


@_lce.register_fake
def _(h, w, bias, target, ignore_index, reduction, label_smoothing, need_dh, need_dw, need_db):
    return (h.new_empty(()), h.new_empty(h.shape if need_dh else (0,)), h.new_empty(w.shape if need_dw else (0,)),
            h.new_empty((w.shape[0],) if need_db else (0,)))


def _lce_setup(ctx, inputs, output):
    ctx.save_for_backward(output[1], output[2], output[3])
    ctx.flags = inputs[7:10]


def _lce_backward(ctx, dloss, _a, _b, _c):
    dh, dw, db = ctx.saved_tensors
    need_dh, need_dw, need_db = ctx.flags
    return ((dh * dloss) if need_dh else None, (dw * dloss) if need_dw else None, (db * dloss) if need_db else None,
            None, None, None, None, None, None, None)


_autograd(_lce, _lce_backward, _lce_setup)


def linear_cross_entropy(input: Tensor, weight: Tensor, target: Tensor, bias: Optional[Tensor] = None,
                         ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """cross_entropy(linear(input, weight, bias), target) without the [N, V]
    logits (an LM head): input [N, D], weight [V, D]. The gradients are
    computed in the forward (with d loss = 1) and scaled by the upstream
    gradient in the backward, so only 'mean' and 'sum' reductions."""
    if reduction not in ("mean", "sum"):
        raise _bc.UnsupportedError("linear_cross_entropy: reduction must be 'mean' or 'sum' (the gradients are "
                                   "formed in the forward)")
    g = torch.is_grad_enabled()
    need_dh = g and input.requires_grad
    need_dw = g and weight.requires_grad
    need_db = g and bias is not None and bias.requires_grad
    return _call(_lce, input, weight, bias, target, int(ignore_index), reduction, float(label_smoothing), need_dh, need_dw,
                need_db)[0]


# ---- flash attention ---------------------------------------------------------------------------------
def _rows_view(t):
    """Detached; copied only when the last axis is not unit-stride (the flash
    kernels read [B, S, H, D] storage through its [B, H, S, D] view in place)."""
    t = t.detach()
    return t if t.stride(-1) == 1 else t.contiguous()


@_custom_op("baracuda::flash_attention_fwd")
def _flash_fwd(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: Optional[float],
               window_left: int, window_right: int) -> Tuple[Tensor, Tensor]:
    y, lse = _bc.flash_attention(_rows_view(q), _rows_view(k), _rows_view(v), causal, scale,
                                 window=(window_left, window_right), return_lse=True)
    return _t(y), _t(lse)


@_flash_fwd.register_fake
def _(q, k, v, causal, scale, window_left, window_right):
    return q.new_empty(q.shape), q.new_empty(q.shape[:3], dtype=torch.float32)


@_custom_op("baracuda::flash_attention_bwd")
def _flash_bwd(dy: Tensor, q: Tensor, k: Tensor, v: Tensor, y: Tensor, lse: Tensor, causal: bool,
               scale: Optional[float], window_left: int, window_right: int) -> Tuple[Tensor, Tensor, Tensor]:
    dq, dk, dv = _bc.flash_attention_backward(_rows_view(dy), _rows_view(q), _rows_view(k), _rows_view(v),
                                              _rows_view(y), _d(lse), causal, scale,
                                              window=(window_left, window_right))
    return _t(dq), _t(dk), _t(dv)


@_flash_bwd.register_fake
def _(dy, q, k, v, y, lse, causal, scale, window_left, window_right):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _flash_setup(ctx, inputs, output):
    q, k, v, causal, scale, wl, wr = inputs
    ctx.save_for_backward(q, k, v, output[0], output[1])
    ctx.opts = (causal, scale, wl, wr)


def _flash_backward(ctx, dy, _dlse):
    q, k, v, y, lse = ctx.saved_tensors
    dq, dk, dv = _call(_flash_bwd, dy, q, k, v, y, lse, *ctx.opts)
    return dq, dk, dv, None, None, None, None


_autograd(_flash_fwd, _flash_backward, _flash_setup)


def flash_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = False, scale: Optional[float] = None,
                    window: Optional[Tuple[int, int]] = None) -> Tensor:
    """torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
    scale=scale, enable_gqa=True) without dropout or mask, on baracuda's flash
    kernels: q [B, H, Q, D], k / v [B, Hk, K, D] (D in 32..256, a multiple of
    8); window=(left, right) a sliding window. A row with no allowed key gives 0."""
    wl, wr = (-1, -1) if window is None else (int(window[0]), int(window[1]))
    return _call(_flash_fwd, q, k, v, bool(causal), None if scale is None else float(scale), wl, wr)[0]


# ---- rotary embeddings -------------------------------------------------------------------------------
@_custom_op("baracuda::rope_fwd")
def _rope_fwd(q: Tensor, k: Tensor, positions: Optional[Tensor], theta: float, rotary_dim: int,
              interleaved: bool) -> Tuple[Tensor, Tensor]:
    qo, ko = _bc.rope(_d(q), _d(k), positions=_d(positions), theta=theta,
                      rotary_dim=None if rotary_dim < 0 else rotary_dim, interleaved=interleaved)
    return _t(qo), _t(ko)


@_rope_fwd.register_fake
def _(q, k, positions, theta, rotary_dim, interleaved):
    return q.new_empty(q.shape), k.new_empty(k.shape)


@_custom_op("baracuda::rope_bwd")
def _rope_bwd(dq: Tensor, dk: Tensor, positions: Optional[Tensor], theta: float, rotary_dim: int,
              interleaved: bool) -> Tuple[Tensor, Tensor]:
    gq, gk = _bc.rope_backward(_d(dq), _d(dk), positions=_d(positions), theta=theta,
                               rotary_dim=None if rotary_dim < 0 else rotary_dim, interleaved=interleaved)
    return _t(gq), _t(gk)


@_rope_bwd.register_fake
def _(dq, dk, positions, theta, rotary_dim, interleaved):
    return dq.new_empty(dq.shape), dk.new_empty(dk.shape)


def _rope_setup(ctx, inputs, output):
    q, k, positions, theta, rotary_dim, interleaved = inputs
    ctx.save_for_backward(positions)
    ctx.opts = (theta, rotary_dim, interleaved)


def _rope_backward(ctx, dqo, dko):
    (positions,) = ctx.saved_tensors
    dq, dk = _call(_rope_bwd, dqo, dko, positions, *ctx.opts)
    return dq, dk, None, None, None, None


_autograd(_rope_fwd, _rope_backward, _rope_setup)


def rope(q: Tensor, k: Tensor, positions: Optional[Tensor] = None, theta: float = 10000.0,
         rotary_dim: Optional[int] = None, interleaved: bool = False) -> Tuple[Tensor, Tensor]:
    """Rotary embeddings of q [B, H, S, D] and k [B, Hk, S, D] (Hugging Face's
    rotate_half convention; interleaved=True: GPT-J's pairs). Returns (q, k)."""
    return _call(_rope_fwd, q, k, positions, float(theta), -1 if rotary_dim is None else int(rotary_dim),
                     bool(interleaved))


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


class Linear(torch.nn.Linear):
    """Drop-in for torch.nn.Linear (same parameters and state_dict keys) with
    an optional fused activation: act(x @ W.T + b) in one GEMM epilogue."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, activation=None):
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if (activation or "none") not in _ACTS:
            raise ValueError(f"Linear: activation must be None, 'relu', 'gelu' or 'gelu_tanh', got {activation!r}")
        self.activation = activation

    def forward(self, x):
        return linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self):
        return super().extra_repr() + f", activation={self.activation}"


class CrossEntropyLoss(torch.nn.Module):
    """Drop-in for torch.nn.CrossEntropyLoss for [N, C] inputs."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class LinearCrossEntropyLoss(torch.nn.Module):
    """An LM head's loss without the logits: forward(input, weight, target,
    bias=None) = CrossEntropyLoss()(linear(input, weight, bias), target)."""

    def __init__(self, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing

    def forward(self, input, weight, target, bias=None):
        return linear_cross_entropy(input, weight, target, bias, self.ignore_index, self.reduction,
                                    self.label_smoothing)


class AdamW(torch.optim.Optimizer):
    """Drop-in for torch.optim.AdamW (and Adam with decoupled_weight_decay=False)
    on baracuda's multi-tensor AdamPlan: one launch per (device, dtype, step)
    bucket of a parameter group. Same arguments and param-group / state_dict
    layout (state: step, exp_avg, exp_avg_sq, max_exp_avg_sq), except that
    the moments are kept in float32 whatever the parameters' dtype (torch: the
    parameter's dtype; a loaded lower-precision state is widened). Parameters
    and gradients must be dense and contiguous (sparse gradients are refused).
    Host scalars: lr and the step count are passed per call (no device
    scalars / graph capture through this class; the plan layer has them)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, decoupled_weight_decay=True):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid betas: {betas}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        self._plans = {}

    def _plan(self, group, shapes, dtype, device):
        key = (tuple(shapes), dtype, device, group["amsgrad"], group["maximize"], float(group["weight_decay"]),
               tuple(group["betas"]), float(group["eps"]), group["decoupled_weight_decay"])
        p = self._plans.get(key)
        if p is None:
            P = _bc.plans
            d = P.AdamDescriptor(shapes=list(shapes), param_dtype=str(dtype)[6:], amsgrad=group["amsgrad"],
                                 maximize=group["maximize"], weight_decay=float(group["weight_decay"]),
                                 beta1=float(group["betas"][0]), beta2=float(group["betas"][1]),
                                 eps=float(group["eps"]), decoupled_weight_decay=group["decoupled_weight_decay"])
            stream = None if device.type == "cpu" else torch.cuda.current_stream(device)
            p = P.AdamPlan.select(d, stream=stream)
            self._plans[key] = p
        return p

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            buckets = {}
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("baracuda.torch.AdamW does not support sparse gradients")
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = torch.tensor(0.0)
                    st["exp_avg"] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.contiguous_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32,
                                                        memory_format=torch.contiguous_format)
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32,
                                                                memory_format=torch.contiguous_format)
                for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                    if name in st and st[name].dtype != torch.float32:
                        st[name] = st[name].float()
                st["step"] += 1
                buckets.setdefault((p.device, p.dtype, int(st["step"].item())), []).append(p)
            for (device, dtype, step), ps in buckets.items():
                plan = self._plan(group, [tuple(p.shape) for p in ps], dtype, device)
                sts = [self.state[p] for p in ps]
                plan.run(params=[p.detach() for p in ps], grads=[p.grad.detach() for p in ps],
                         exp_avg=[s["exp_avg"] for s in sts], exp_avg_sq=[s["exp_avg_sq"] for s in sts],
                         max_exp_avg_sq=[s["max_exp_avg_sq"] for s in sts] if group["amsgrad"] else None,
                         lr=float(group["lr"]), step=step)
        return loss


# ==== part B: embedding, the indexing ops, rotary / attention modules ==================================
# Each op is a custom_op pair (or a forward whose backward composes other forward
# ops of this block) in the `baracuda` namespace, as above. Index tensors are
# never differentiated. Bad indices: on the CPU the forward raises
# InvalidProblemError; on CUDA nothing is checked on the host (the functional
# layer's rule: the row / element is 0, the contribution skipped).
__all__ += ["embedding", "Embedding", "gather", "scatter_add", "scatter_reduce", "index_select", "index_add", "take",
            "put", "masked_select", "masked_scatter", "index_get", "index_put", "RotaryEmbedding", "FlashAttention"]


def _dims_of(x, dim):
    return dim + x.dim() if dim < 0 else dim


# ---- embedding ----------------------------------------------------------------------------------------
@_custom_op("baracuda::embedding_fwd")
def _embedding_fwd(weight: Tensor, indices: Tensor, padding_idx: Optional[int]) -> Tensor:
    return _t(_bc.embedding(_d(indices), _d(weight), padding_idx))


@_embedding_fwd.register_fake
def _(weight, indices, padding_idx):
    return weight.new_empty((*indices.shape, weight.shape[1]))


@_custom_op("baracuda::embedding_bwd")
def _embedding_bwd(dout: Tensor, indices: Tensor, num_embeddings: int, padding_idx: Optional[int]) -> Tensor:
    return _t(_bc.embedding_backward(_d(dout), _d(indices), num_embeddings, padding_idx))


@_embedding_bwd.register_fake
def _(dout, indices, num_embeddings, padding_idx):
    return dout.new_empty((num_embeddings, dout.shape[-1]))


def _emb_setup(ctx, inputs, output):
    weight, indices, padding_idx = inputs
    ctx.save_for_backward(indices)
    ctx.num_embeddings = weight.shape[0]
    ctx.padding_idx = padding_idx


def _embedding_backward(ctx, dout):
    (indices,) = ctx.saved_tensors
    if not ctx.needs_input_grad[0]:
        return None, None, None
    return _call(_embedding_bwd, dout, indices, ctx.num_embeddings, ctx.padding_idx), None, None


_autograd(_embedding_fwd, _embedding_backward, _emb_setup)


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """torch.nn.functional.embedding on baracuda (a dense, deterministic weight gradient:
    rows summed in index order; padding_idx's row gets none). max_norm,
    scale_grad_by_freq and sparse raise UnsupportedError."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise _bc.UnsupportedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    return _call(_embedding_fwd, weight, input, None if padding_idx is None else int(padding_idx))


class Embedding(torch.nn.Embedding):
    """Drop-in for torch.nn.Embedding (same arguments, parameter and state_dict keys) on
    EmbeddingPlan / EmbeddingBackwardPlan: a dense weight gradient, deterministic. max_norm,
    scale_grad_by_freq and sparse are refused (UnsupportedError)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise _bc.UnsupportedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                         _weight, _freeze, device, dtype)

    def forward(self, input):
        return embedding(input, self.weight, self.padding_idx)


# ---- gather / scatter_add / scatter_reduce --------------------------------------------------------------
@_custom_op("baracuda::gather_fwd")
def _gather_fwd(x: Tensor, dim: int, index: Tensor) -> Tensor:
    return _t(_bc.gather(_d(x), dim, _d(index)))


@_gather_fwd.register_fake
def _(x, dim, index):
    return x.new_empty(index.shape)


def _gather_setup(ctx, inputs, output):
    x, dim, index = inputs
    ctx.save_for_backward(index)
    ctx.dim, ctx.shape = dim, x.shape


def _gather_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    z = dy.new_zeros(ctx.shape)
    return _call(_scatter_add_fwd, z, ctx.dim, index, dy), None, None


_autograd(_gather_fwd, _gather_backward, _gather_setup)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.gather on baracuda; the gradient is a scatter_add (summed in order: deterministic)."""
    return _call(_gather_fwd, input, int(dim), index)


@_custom_op("baracuda::scatter_add_fwd")
def _scatter_add_fwd(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return _t(_bc.scatter_add(_d(x), dim, _d(index), _d(src)))


@_scatter_add_fwd.register_fake
def _(x, dim, index, src):
    return x.new_empty(x.shape)


def _scatter_add_setup(ctx, inputs, output):
    x, dim, index, src = inputs
    ctx.save_for_backward(index)
    ctx.dim = dim


def _scatter_add_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    dsrc = _call(_gather_fwd, dy, ctx.dim, index) if ctx.needs_input_grad[3] else None
    return dy, None, None, dsrc


_autograd(_scatter_add_fwd, _scatter_add_backward, _scatter_add_setup)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """torch.scatter_add on baracuda (deterministic: summed in position order)."""
    return _call(_scatter_add_fwd, input, int(dim), index, src)


@_custom_op("baracuda::scatter_reduce_fwd")
def _scatter_reduce_fwd(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool) -> Tensor:
    return _t(_bc.scatter_reduce(_d(x), dim, _d(index), _d(src), reduce, include_self=include_self))


@_scatter_reduce_fwd.register_fake
def _(x, dim, index, src, reduce, include_self):
    return x.new_empty(x.shape)


@_custom_op("baracuda::scatter_reduce_bwd")
def _scatter_reduce_bwd(grad: Tensor, x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                        result: Tensor, include_self: bool, need_x: bool,
                        need_src: bool) -> Tuple[Tensor, Tensor]:
    gx, gs = _bc.scatter_reduce_backward(_d(grad), _d(x), dim, _d(index), _d(src), reduce, _d(result),
                                         include_self=include_self, grad_input=need_x, grad_src=need_src)
    return (_t(gx) if gx is not None else x.new_empty((0,)), _t(gs) if gs is not None else x.new_empty((0,)))


@_scatter_reduce_bwd.register_fake
def _(grad, x, dim, index, src, reduce, result, include_self, need_x, need_src):
    return x.new_empty(x.shape if need_x else (0,)), src.new_empty(src.shape if need_src else (0,))


def _scatter_reduce_setup(ctx, inputs, output):
    x, dim, index, src, reduce, include_self = inputs
    ctx.save_for_backward(x, index, src, output)
    ctx.opts = (dim, reduce, include_self)


def _scatter_reduce_backward(ctx, grad):
    x, index, src, result = ctx.saved_tensors
    dim, reduce, include_self = ctx.opts
    nx, ns = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
    if not (nx or ns):
        return None, None, None, None, None, None
    gx, gs = _call(_scatter_reduce_bwd, grad, x, dim, index, src, reduce, result, include_self, nx, ns)
    return (gx if nx else None), None, None, (gs if ns else None), None, None


_autograd(_scatter_reduce_fwd, _scatter_reduce_backward, _scatter_reduce_setup)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool = True) -> Tensor:
    """torch.scatter_reduce on baracuda ('sum', 'prod', 'mean', 'amax', 'amin'); the backward
    is ScatterReduceBackwardPlan (torch's formulas: ties of amax / amin share the gradient)."""
    return _call(_scatter_reduce_fwd, input, int(dim), index, src, str(reduce), bool(include_self))


# ---- index_select / index_add -------------------------------------------------------------------------
@_custom_op("baracuda::index_select_fwd")
def _index_select_fwd(x: Tensor, dim: int, index: Tensor) -> Tensor:
    return _t(_bc.index_select(_d(x), dim, _d(index)))


@_index_select_fwd.register_fake
def _(x, dim, index):
    shape = list(x.shape)
    shape[_dims_of(x, dim)] = index.numel()
    return x.new_empty(shape)


def _index_select_setup(ctx, inputs, output):
    x, dim, index = inputs
    ctx.save_for_backward(index)
    ctx.dim, ctx.shape = dim, x.shape


def _index_select_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    return _call(_index_add_fwd, dy.new_zeros(ctx.shape), ctx.dim, index.reshape(-1), dy, 1.0), None, None


_autograd(_index_select_fwd, _index_select_backward, _index_select_setup)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.index_select on baracuda; the gradient is an index_add (deterministic)."""
    return _call(_index_select_fwd, input, int(dim), index)


@_custom_op("baracuda::index_add_fwd")
def _index_add_fwd(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float) -> Tensor:
    return _t(_bc.index_add(_d(x), dim, _d(index), _d(source), alpha=alpha))


@_index_add_fwd.register_fake
def _(x, dim, index, source, alpha):
    return x.new_empty(x.shape)


def _index_add_setup(ctx, inputs, output):
    x, dim, index, source, alpha = inputs
    ctx.save_for_backward(index)
    ctx.dim, ctx.alpha = dim, alpha


def _index_add_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    ds = None
    if ctx.needs_input_grad[3]:
        ds = _call(_index_select_fwd, dy, ctx.dim, index)
        if ctx.alpha != 1.0:
            ds = ds * ctx.alpha
    return dy, None, None, ds, None


_autograd(_index_add_fwd, _index_add_backward, _index_add_setup)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float = 1.0) -> Tensor:
    """torch.index_add on baracuda (deterministic: duplicates summed in order)."""
    return _call(_index_add_fwd, input, int(dim), index, source, float(alpha))


# ---- take / put -----------------------------------------------------------------------------------------
@_custom_op("baracuda::take_fwd")
def _take_fwd(x: Tensor, index: Tensor) -> Tensor:
    return _t(_bc.take(_d(x), _d(index)))


@_take_fwd.register_fake
def _(x, index):
    return x.new_empty(index.shape)


def _take_setup(ctx, inputs, output):
    x, index = inputs
    ctx.save_for_backward(index)
    ctx.shape = x.shape


def _take_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    return _call(_put_fwd, dy.new_zeros(ctx.shape), index, dy, True), None


_autograd(_take_fwd, _take_backward, _take_setup)


def take(input: Tensor, index: Tensor) -> Tensor:
    """torch.take on baracuda; the gradient is put(accumulate=True) (deterministic)."""
    return _call(_take_fwd, input, index)


@_custom_op("baracuda::put_fwd")
def _put_fwd(x: Tensor, index: Tensor, source: Tensor, accumulate: bool) -> Tensor:
    return _t(_bc.put(_d(x), _d(index), _d(source), accumulate))


@_put_fwd.register_fake
def _(x, index, source, accumulate):
    return x.new_empty(x.shape)


def _put_setup(ctx, inputs, output):
    x, index, source, accumulate = inputs
    ctx.save_for_backward(index)
    ctx.accumulate = accumulate


def _put_backward(ctx, dy):
    (index,) = ctx.saved_tensors
    dx = dy if ctx.accumulate else _call(_put_fwd, dy, index, dy.new_zeros(index.shape), False)
    ds = _call(_take_fwd, dy, index) if ctx.needs_input_grad[2] else None
    return dx, None, ds, None


_autograd(_put_fwd, _put_backward, _put_setup)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """torch.put on baracuda (duplicates without accumulate: the last position wins)."""
    return _call(_put_fwd, input, index, source, bool(accumulate))


# ---- masked_select / masked_scatter ---------------------------------------------------------------------
@_custom_op("baracuda::masked_select_fwd")
def _masked_select_fwd(x: Tensor, mask: Tensor) -> Tensor:
    return _t(_bc.masked_select(_d(x), _d(mask)))  # the exact length: a host sync on CUDA (as torch)


@_masked_select_fwd.register_fake
def _(x, mask):
    n = torch.library.get_ctx().new_dynamic_size()
    return x.new_empty((n,))


def _masked_select_setup(ctx, inputs, output):
    x, mask = inputs
    ctx.save_for_backward(mask)
    ctx.shape = x.shape


def _masked_select_backward(ctx, dy):
    (mask,) = ctx.saved_tensors
    full = torch.broadcast_shapes(ctx.shape, mask.shape)
    dx = _call(_masked_scatter_fwd, dy.new_zeros(full), mask, dy)
    if tuple(full) != tuple(ctx.shape):
        dx = dx.sum_to_size(ctx.shape)
    return dx, None


_autograd(_masked_select_fwd, _masked_select_backward, _masked_select_setup)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """torch.masked_select on baracuda (a host sync on CUDA for the length, as torch); the
    gradient is a masked_scatter into zeros (summed over broadcast dims)."""
    return _call(_masked_select_fwd, input, mask)


@_custom_op("baracuda::masked_scatter_fwd")
def _masked_scatter_fwd(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    return _t(_bc.masked_scatter(_d(x), _d(mask), _d(source)))


@_masked_scatter_fwd.register_fake
def _(x, mask, source):
    return x.new_empty(x.shape)


def _masked_scatter_setup(ctx, inputs, output):
    x, mask, source = inputs
    ctx.save_for_backward(mask)
    ctx.source_shape = source.shape


def _masked_scatter_backward(ctx, dy):
    (mask,) = ctx.saved_tensors
    dx = dy.masked_fill(mask, 0)
    ds = None
    if ctx.needs_input_grad[2]:
        sel = _call(_masked_select_fwd, dy, mask)
        n = math.prod(ctx.source_shape)
        ds = torch.cat([sel, sel.new_zeros(n - sel.numel())]).reshape(ctx.source_shape)
    return dx, None, ds


_autograd(_masked_scatter_fwd, _masked_scatter_backward, _masked_scatter_setup)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Tensor.masked_scatter on baracuda (mask broadcast to input's shape)."""
    return _call(_masked_scatter_fwd, input, mask, source)


# ---- advanced indexing: x[i, :, j] and index_put ----------------------------------------------------
def _index_list(x, indices):
    if isinstance(indices, Tensor):
        indices = [indices]
    out = []
    for e in indices:
        if isinstance(e, int) and not isinstance(e, bool):
            e = torch.tensor(e, device=x.device)
        out.append(e)
    return out


def _no_index_grads(indices):
    # The "gradient" of the index list, in the structure torch.library's autograd
    # flattening expects: a list of tensors is flattened (one None each), a list
    # holding None is one leaf (one None).
    return None if any(i is None for i in indices) else [None] * len(indices)


@_custom_op("baracuda::index_get_fwd")
def _index_get_fwd(x: Tensor, indices: List[Optional[Tensor]]) -> Tensor:
    return _t(_bc.index_get(_d(x), [_d(i) for i in indices]))


@_index_get_fwd.register_fake
def _(x, indices):
    return torch.ops.aten.index(x, indices)


def _index_get_setup(ctx, inputs, output):
    x, indices = inputs
    ctx.indices = indices
    ctx.shape = x.shape


def _index_get_backward(ctx, dy):
    return _call(_index_put_fwd, dy.new_zeros(ctx.shape), ctx.indices, dy, True), _no_index_grads(ctx.indices)


_autograd(_index_get_fwd, _index_get_backward, _index_get_setup)


def index_get(input: Tensor, indices) -> Tensor:
    """aten::index on baracuda: indices a list (one entry per leading dim: None = a full
    slice, an integer or bool tensor, a Python int); bt.index_get(x, [i, None, j]) is
    x[i, :, j]. The gradient is index_put(accumulate=True) into zeros (deterministic)."""
    return _call(_index_get_fwd, input, _index_list(input, indices))


@_custom_op("baracuda::index_put_fwd")
def _index_put_fwd(x: Tensor, indices: List[Optional[Tensor]], values: Tensor, accumulate: bool) -> Tensor:
    return _t(_bc.index_put(_d(x), [_d(i) for i in indices], _d(values), accumulate))


@_index_put_fwd.register_fake
def _(x, indices, values, accumulate):
    return x.new_empty(x.shape)


def _index_put_setup(ctx, inputs, output):
    x, indices, values, accumulate = inputs
    ctx.indices = indices
    ctx.accumulate = accumulate
    ctx.values_shape = values.shape


def _index_put_backward(ctx, dy):
    dx = None
    if ctx.needs_input_grad[0]:
        dx = dy if ctx.accumulate else _call(_index_put_fwd, dy, ctx.indices, dy.new_zeros(()), False)
    dv = None
    if ctx.needs_input_grad[2]:
        dv = _call(_index_get_fwd, dy, ctx.indices)
        if tuple(dv.shape) != tuple(ctx.values_shape):
            dv = dv.sum_to_size(ctx.values_shape) if len(ctx.values_shape) else dv.sum()
    return dx, _no_index_grads(ctx.indices), dv, None


_autograd(_index_put_fwd, _index_put_backward, _index_put_setup)


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """torch.index_put on baracuda (out of place; indices as index_get's). Duplicates
    without accumulate: the last position wins (deterministic); accumulate sums in order."""
    if not isinstance(values, Tensor):
        values = torch.tensor(values, dtype=input.dtype, device=input.device)
    return _call(_index_put_fwd, input, _index_list(input, indices), values, bool(accumulate))


# ---- modules: rotary embedding, flash attention -------------------------------------------------------
class RotaryEmbedding(torch.nn.Module):
    """Rotary position embedding as a module: forward(q, k, positions=None) returns the
    rotated (q, k) ([B, H, S, D] / [B, Hk, S, D]; positions None = 0..S-1, [S] or [B, S]).
    dim: the rotated features (rotary_dim, default all of D); base: theta. No parameters
    or buffers (the angles are computed in the kernel)."""

    def __init__(self, dim=None, base=10000.0, interleaved=False):
        super().__init__()
        self.dim, self.base, self.interleaved = dim, float(base), bool(interleaved)

    def forward(self, q, k, positions=None):
        return rope(q, k, positions, self.base, self.dim, self.interleaved)

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, interleaved={self.interleaved}"


class FlashAttention(torch.nn.Module):
    """scaled_dot_product_attention as a module on the flash kernels: forward(q, k, v) with
    q [B, H, Q, D], k / v [B, Hk, K, D] (grouped-query when Hk < H); causal, scale (None:
    1/sqrt(D)) and window=(left, right) fixed at construction. No parameters."""

    def __init__(self, causal=False, scale=None, window=None):
        super().__init__()
        self.causal, self.scale, self.window = bool(causal), scale, window

    def forward(self, q, k, v):
        return flash_attention(q, k, v, self.causal, self.scale, self.window)

    def extra_repr(self):
        return f"causal={self.causal}, scale={self.scale}, window={self.window}"


# ---- grouped linear (mixture of experts) ------------------------------------------------------------
__all__ += ["grouped_linear"]


def _host_offsets(offsets):
    if isinstance(offsets, Tensor):
        return offsets.detach().to("cpu", torch.int64)
    return torch.tensor([int(o) for o in offsets], dtype=torch.int64)


@_custom_op("baracuda::grouped_linear_fwd")
def _grouped_fwd(x: Tensor, weight: Tensor, bias: Optional[Tensor], offsets: Tensor,
                 activation: str) -> Tuple[Tensor, Tensor]:
    act = None if activation == "none" else activation
    gelu = activation in ("gelu", "gelu_tanh")
    r = _bc.grouped_linear(_d(x), _d(weight), _d(offsets), _d(bias), activation=act, return_aux=gelu)
    y, aux = (_t(r[0]), _t(r[1])) if gelu else (_t(r), x.new_empty((0,)))
    end = int(offsets[-1])
    y[end:] = 0  # the unused capacity: defined (zeros) for torch
    if gelu:
        aux[end:] = 0
    return y, aux


@_grouped_fwd.register_fake
def _(x, weight, bias, offsets, activation):
    y = x.new_empty((x.shape[0], weight.shape[-2]))
    return y, (x.new_empty(y.shape) if activation in ("gelu", "gelu_tanh") else x.new_empty((0,)))


@_custom_op("baracuda::grouped_linear_bwd")
def _grouped_bwd(dy: Tensor, x: Tensor, weight: Tensor, offsets: Tensor, saved: Tensor, has_bias: bool,
                 activation: str, need_dx: bool, need_dw: bool) -> Tuple[Tensor, Tensor, Tensor]:
    act = None if activation == "none" else activation
    dx, dw, db = _bc.grouped_linear_backward(_d(dy), _d(x), _d(weight), _d(offsets), has_bias=has_bias,
                                             activation=act, aux=_d(saved) if act else None,
                                             output_mask=(need_dx, need_dw, has_bias))
    dx = _t(dx) if dx is not None else x.new_empty((0,))
    if need_dx:
        dx[int(offsets[-1]):] = 0
    return (dx, _t(dw) if dw is not None else x.new_empty((0,)), _t(db) if db is not None else x.new_empty((0,)))


@_grouped_bwd.register_fake
def _(dy, x, weight, offsets, saved, has_bias, activation, need_dx, need_dw):
    nb = weight.shape[:-1]
    return (x.new_empty(x.shape if need_dx else (0,)), x.new_empty(weight.shape if need_dw else (0,)),
            x.new_empty(nb if has_bias else (0,)))


def _grouped_setup(ctx, inputs, output):
    x, weight, bias, offsets, activation = inputs
    y, aux = output
    ctx.save_for_backward(x, weight, offsets, y if activation == "relu" else aux)
    ctx.has_bias = bias is not None
    ctx.activation = activation


def _grouped_backward(ctx, dy, _daux):
    x, weight, offsets, saved = ctx.saved_tensors
    need_dx, need_dw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    need_db = ctx.has_bias and ctx.needs_input_grad[2]
    if not (need_dx or need_dw or need_db):
        return None, None, None, None, None
    dx, dw, db = _call(_grouped_bwd, dy, x, weight, offsets, saved, ctx.has_bias, ctx.activation, need_dx, need_dw)
    return (dx if need_dx else None), (dw if need_dw else None), (db if need_db else None), None, None


_autograd(_grouped_fwd, _grouped_backward, _grouped_setup)


def grouped_linear(input: Tensor, weight: Tensor, offsets, bias: Optional[Tensor] = None,
                   activation: Optional[str] = None) -> Tensor:
    """The experts of a mixture-of-experts layer: rows offsets[g]:offsets[g+1] of input [T, K]
    through weight[g] [N, K] (+ bias[g]) and the fused activation (None / 'relu' / 'gelu' /
    'gelu_tanh'); a 2-D weight is shared. offsets: G + 1 ints (a list or a tensor; read on the
    host). Rows past offsets[-1] are zeros in the output and get zero gradient."""
    act = "none" if activation is None else str(activation)
    return _call(_grouped_fwd, input, weight, bias, _host_offsets(offsets), act)[0]


# ---- part A (issue 16): SGD, Lion, Adafactor, clip_grad_norm_ ------------------------------------
# Optimizers on the multi-tensor plans through the functional layer
# (baracuda.sgd_ / lion_ / adafactor_: plans cached by the bucket's shapes);
# one launch per (device, dtype[, step / first-step]) bucket of a group.
__all__ += ["SGD", "Lion", "Adafactor", "clip_grad_norm_"]


def _opt_grads(name, group):
    out = []
    for p in group["params"]:
        if p.grad is None:
            continue
        if p.grad.is_sparse:
            raise RuntimeError(f"baracuda.torch.{name} does not support sparse gradients")
        out.append(p)
    return out


def _f32_state(st, name, like, shape=None):
    t = st.get(name)
    if t is None:
        t = torch.zeros(like.shape if shape is None else shape, dtype=torch.float32, device=like.device)
        st[name] = t
    elif t.dtype != torch.float32 or not t.is_contiguous():
        t = st[name] = t.float().contiguous()
    return t


def _amp_scalars(opt, device):
    """torch.amp.GradScaler's attributes for optimizers with _step_supports_amp_scaling
    (grad_scale: grads are divided by it, or None; found_inf: nonzero skips the step),
    as float32 0-d tensors on `device` (no host sync)."""
    def conv(t):
        if t is None:
            return None
        if not isinstance(t, Tensor):
            t = torch.tensor(float(t))
        return t.detach().to(device=device, dtype=torch.float32).reshape(())
    return conv(getattr(opt, "grad_scale", None)), conv(getattr(opt, "found_inf", None))


class SGD(torch.optim.Optimizer):
    """Drop-in for torch.optim.SGD (momentum, dampening, nesterov, weight
    decay, maximize) on baracuda's multi-tensor SgdPlan. Same arguments and
    state_dict keys (state: momentum_buffer), except that the momentum buffer
    is float32 whatever the parameters' dtype (a loaded lower-precision
    buffer is widened). Dense, contiguous parameters and gradients.
    torch.amp.GradScaler hands it grad_scale / found_inf (as to torch's fused
    optimizers): the unscale and the skip happen in the kernel, no host sync
    (a skipped first step leaves a zero momentum buffer)."""

    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, *,
                 maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            buckets = {}
            for p in _opt_grads("SGD", g):
                st = self.state[p]
                init = st.get("momentum_buffer") is not None
                if g["momentum"] != 0:
                    _f32_state(st, "momentum_buffer", p)
                buckets.setdefault((p.device, p.dtype, init), []).append(p)
            for (dev, _dt, init), ps in buckets.items():
                bufs = [self.state[p]["momentum_buffer"] for p in ps] if g["momentum"] != 0 else None
                gs, fi = _amp_scalars(self, dev)
                _bc.sgd_([p.detach() for p in ps], [p.grad.detach() for p in ps], bufs, lr=float(g["lr"]),
                         momentum=g["momentum"], dampening=g["dampening"], weight_decay=g["weight_decay"],
                         nesterov=g["nesterov"], maximize=g["maximize"], buffers_initialized=init, grad_scale=gs,
                         found_inf=fi)
        return loss


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023; torch has none) on baracuda's LionPlan:
    c = b1 m + (1 - b1) g; p *= 1 - lr wd; p -= lr sign(c); m = b2 m + (1 - b2) g.
    State: exp_avg (float32). Takes torch.amp.GradScaler's grad_scale /
    found_inf as SGD does."""

    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not (0.0 <= betas[0] <= 1.0 and 0.0 <= betas[1] <= 1.0):
            raise ValueError(f"Invalid betas: {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            buckets = {}
            for p in _opt_grads("Lion", g):
                _f32_state(self.state[p], "exp_avg", p)
                buckets.setdefault((p.device, p.dtype), []).append(p)
            for (dev, _dt), ps in buckets.items():
                gs, fi = _amp_scalars(self, dev)
                _bc.lion_([p.detach() for p in ps], [p.grad.detach() for p in ps],
                          [self.state[p]["exp_avg"] for p in ps], lr=float(g["lr"]), betas=tuple(g["betas"]),
                          weight_decay=g["weight_decay"], maximize=g["maximize"], grad_scale=gs, found_inf=fi)
        return loss


class Adafactor(torch.optim.Optimizer):
    """Drop-in for torch.optim.Adafactor (torch >= 2.5) on baracuda's
    AdafactorPlan. Same arguments and state_dict keys (step, row_var,
    col_var, variance; torch's shapes), except that the state is float32
    whatever the parameters' dtype and a bf16 / f16 step is computed in f32
    and rounded once (include/baracuda/ops/optim_adafactor.hpp)."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for g in self.param_groups:
            buckets = {}
            for p in _opt_grads("Adafactor", g):
                st = self.state[p]
                if "step" not in st:
                    st["step"] = torch.tensor(0.0)
                if p.dim() >= 2:
                    rs, cs = list(p.shape), list(p.shape)
                    rs[-1] = 1
                    cs[-2] = 1
                    _f32_state(st, "row_var", p, rs)
                    _f32_state(st, "col_var", p, cs)
                else:
                    _f32_state(st, "variance", p)
                st["step"] += 1
                buckets.setdefault((p.device, p.dtype, int(st["step"].item())), []).append(p)
            for (_dev, _dt, step), ps in buckets.items():
                sts = [self.state[p] for p in ps]
                _bc.adafactor_([p.detach() for p in ps], [p.grad.detach() for p in ps],
                               [s.get("row_var") for s in sts], [s.get("col_var") for s in sts],
                               [s.get("variance") for s in sts], step=step, lr=float(g["lr"]),
                               beta2_decay=g["beta2_decay"], eps=tuple(g["eps"]), d=g["d"],
                               weight_decay=g["weight_decay"], maximize=g["maximize"])
        return loss


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_ (norm_type 2 or inf) on baracuda's
    multi-tensor plans: one ClipGradNormPlan launch when the gradients share
    a device and dtype, else a GlobalNormPlan per (device, dtype) bucket,
    the norms combined by torch and the scale applied by MultiTensorScalePlan
    (a device scalar: no host sync). Returns the total norm as a float32
    tensor (torch: the gradients' dtype). error_if_nonfinite reads the norm
    on the host (a sync, as torch)."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    buckets = {}
    for t in grads:
        buckets.setdefault((t.device, t.dtype), []).append(t)
    inf = _bc._functional_a._norm_type("clip_grad_norm_", norm_type) == "Inf"
    if len(buckets) == 1 and not error_if_nonfinite:
        return _t(_bc.clip_grad_norm_(grads, max_norm, norm_type))
    first = grads[0].device
    norms = [_t(_bc.global_norm(ts, norm_type)).to(first) for ts in buckets.values()]
    stacked = torch.stack(norms)
    total = stacked.amax() if inf else torch.sqrt((stacked.double() ** 2).sum()).float()
    if error_if_nonfinite and not torch.isfinite(total):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and scale the gradients by "
                           "the non-finite norm anyway, set `error_if_nonfinite=False`")
    coef = torch.clamp(float(max_norm) / (total + 1e-6), max=1.0).float()
    for (dev, _dt), ts in buckets.items():
        _bc.foreach_mul_(ts, coef.to(dev))
    return total


# ---- ternary ops with autograd: where, clamp, lerp, addcmul, addcdiv ------------------------------
# One custom-op pair for the five ops (TernaryPlan / TernaryBackwardPlan):
# operands b and c are tensors or numbers (a number is a `Scalar?`), absent
# for clamp's missing bounds; a is a tensor (where: the condition).
from typing import Union  # noqa: E402

__all__ += ["where", "clamp", "lerp", "addcmul", "addcdiv"]

_TORCH_TERNARY = {
    "where": lambda a, b, c, v: torch.where(a, b, c),
    "clamp": lambda a, b, c, v: torch.clamp(a, b, c),
    "lerp": lambda a, b, c, v: torch.lerp(a, b, c),
    "addcmul": lambda a, b, c, v: torch.addcmul(a, b, c, value=v),
    "addcdiv": lambda a, b, c, v: torch.addcdiv(a, b, c, value=v),
}


def _operand(t, v):
    return _d(t) if t is not None else v


@_custom_op("baracuda::ternary_fwd")
def _ternary_fwd(op: str, a: Tensor, b: Optional[Tensor], c: Optional[Tensor], b_value: Optional[Union[int, float, bool]],
                 c_value: Optional[Union[int, float, bool]], value: Optional[float]) -> Tensor:
    from baracuda._functional_a import _ternary
    return _t(_ternary(op, _d(a), _operand(b, b_value), _operand(c, c_value), None, None, value))


@_ternary_fwd.register_fake
def _(op, a, b, c, b_value, c_value, value):
    bb = b if b is not None else b_value
    cc = c if c is not None else c_value
    if op == "clamp" and (isinstance(bb, Tensor) != isinstance(cc, Tensor)) and bb is not None and cc is not None:
        y = torch.clamp(torch.clamp(a, min=bb), max=cc)  # torch.clamp takes two tensors or two numbers
    else:
        y = _TORCH_TERNARY[op](a, bb, cc, 1 if value is None else value)
    return torch.empty_like(y, memory_format=torch.contiguous_format)


@_custom_op("baracuda::ternary_bwd")
def _ternary_bwd(op: str, dy: Tensor, a: Tensor, b: Optional[Tensor], c: Optional[Tensor],
                 b_value: Optional[Union[int, float, bool]], c_value: Optional[Union[int, float, bool]],
                 value: Optional[float], need_a: bool, need_b: bool, need_c: bool) -> Tuple[Tensor, Tensor, Tensor]:
    g = _bc.ternary_backward(op, _d(dy), _d(a), _operand(b, b_value), _operand(c, c_value), value=value,
                             output_mask=(need_a, need_b, need_c))
    return tuple(_t(x) if x is not None else a.new_empty((0,)) for x in g)


@_ternary_bwd.register_fake
def _(op, dy, a, b, c, b_value, c_value, value, need_a, need_b, need_c):
    def one(t, need):
        return t.new_empty(t.shape) if (need and t is not None) else a.new_empty((0,))
    return one(a, need_a and op != "where"), one(b, need_b), one(c, need_c)


def _ternary_setup(ctx, inputs, output):
    op, a, b, c, b_value, c_value, value = inputs
    ctx.save_for_backward(a, b, c)
    ctx.op, ctx.b_value, ctx.c_value, ctx.value = op, b_value, c_value, value


def _ternary_backward(ctx, dy):
    a, b, c = ctx.saved_tensors
    na, nb, nc = ctx.needs_input_grad[1:4]
    na = na and ctx.op != "where"
    if not (na or nb or nc):
        return None, None, None, None, None, None, None
    da, db, dc = _call(_ternary_bwd, ctx.op, dy, a, b, c, ctx.b_value, ctx.c_value, ctx.value, na, nb, nc)
    return None, (da if na else None), (db if nb else None), (dc if nc else None), None, None, None


_autograd(_ternary_fwd, _ternary_backward, _ternary_setup)


def _split(x):
    return (x, None) if isinstance(x, Tensor) or x is None else (None, x)


def _ternary_call(op, a, b, c, value=None):
    (bt_, bv), (ct, cv) = _split(b), _split(c)
    return _call(_ternary_fwd, op, a, bt_, ct, bv, cv, value)


def where(condition: Tensor, input, other) -> Tensor:
    """torch.where(condition, input, other) with autograd (input / other tensors or numbers)."""
    return _ternary_call("where", condition, input, other)


def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """torch.clamp(input, min, max) with autograd (bounds tensors, numbers or None; torch's gradient rule:
    the gradient goes to max where min > max)."""
    return _ternary_call("clamp", input, min, max)


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """torch.lerp(input, end, weight) with autograd (weight a tensor or a number)."""
    return _ternary_call("lerp", input, end, weight)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """torch.addcmul with autograd."""
    return _ternary_call("addcmul", input, tensor1, tensor2, float(value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """torch.addcdiv with autograd."""
    return _ternary_call("addcdiv", input, tensor1, tensor2, float(value))

"""The functional layer: PyTorch names and argument conventions.

Every op does the same four steps: ``_C.prepare`` imports the tensors
(DLPack) and decides the stream; ``_plan`` (the one select-and-cache helper)
looks the plan up by its problem key (plan class, descriptor fields,
device) or selects it once; the outputs are allocated on the call's stream
(unless ``out=``); ``plan.run`` runs it, allocating the workspace
stream-ordered when the plan needs one (docs/PYTHON.md).

The elementwise ops, reductions, softmax, the norms, matmul and linear first try their C++
fast path (``_C._fast_*``: the same four steps in one C++ call, with its own
plan cache), which hands back (None) any call it does not take.
"""
import numbers as _numbers
import operator as _op

from . import _C

__all__ = [
    # elementwise
    "add", "sub", "mul", "div", "maximum", "minimum", "pow",
    "exp", "log", "tanh", "sigmoid", "relu", "gelu", "silu", "neg", "abs", "sqrt", "rsqrt", "to",
    "unary_backward", "binary_backward",
    # reductions
    "sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "argmax", "argmin",
    # matmul
    "matmul", "linear", "linear_backward",
    # softmax
    "softmax", "log_softmax", "softmax_backward", "log_softmax_backward",
    # norms
    "layer_norm", "rms_norm", "layer_norm_backward", "rms_norm_backward",
    # loss
    "cross_entropy", "cross_entropy_backward", "linear_cross_entropy",
    # attention, rotary embeddings
    "flash_attention", "flash_attention_backward", "flash_attention_varlen", "flash_attention_varlen_backward",
    "scaled_dot_product_attention", "scaled_dot_product_attention_backward", "paged_attention", "paged_kv_append_",
    "rope", "rope_backward",
    # random numbers, dropout (explicit seeds)
    "uniform", "normal", "dropout", "dropout_backward",
    "zeros",
    # indexing
    "gather", "scatter", "scatter_add", "scatter_reduce", "scatter_reduce_backward", "index_select", "index_add",
    "index_copy", "index_fill", "index_reduce", "take", "put", "one_hot", "nonzero", "argwhere", "masked_select",
    "masked_scatter",
]

# ---- the plan cache -------------------------------------------------------------------
_cache = {}
_CACHE_LIMIT = 4096  # plans; the cache is emptied when it grows past this


def clear_plan_cache():
    """Forget every cached plan (they are selected again on their next use)."""
    _cache.clear()
    _C._fast_cache_clear()


def plan_cache_size():
    """Cached plans: this module's dict plus the C++ fast paths' caches."""
    return len(_cache) + _C._fast_cache_size()


def _plan(cls, key, make_desc, stream):
    """The plan of class ``cls`` for problem ``key`` on ``stream``'s device:
    selected once (``make_desc()`` builds the descriptor) and cached."""
    k = (cls, key, stream.device)
    p = _cache.get(k)
    if p is None:
        p = cls.select(make_desc(), stream=stream)
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[k] = p
    return p


# The C++ fast paths (python/src/fast.cpp): the whole call of an elementwise,
# reduce or softmax op in one C++ function with its own plan cache. They
# return None for a call they do not handle (other operand types, ...), which
# then takes the general path below.
_fast_binary = _C._fast_binary
_fast_unary = _C._fast_unary
_fast_reduce = _C._fast_reduce
_fast_softmax = _C._fast_softmax
_fast_norm = _C._fast_norm
_fast_matmul = _C._fast_matmul
_fast_linear = _C._fast_linear


def _result(out, y):
    return y if out is None else out


def _out(out, view, shape, dtype, stream):
    return view if out is not None else _C.empty(shape, dtype, stream)


def _is_number(x):
    """A host scalar operand: Python / NumPy bools, integers and reals (a 0-d
    tensor stays a tensor)."""
    return isinstance(x, (bool, int, float, _numbers.Real)) or _is_numpy_bool(x)


def _is_numpy_bool(x):
    return type(x).__module__ == "numpy" and type(x).__name__ in ("bool", "bool_")


def _py_scalar(x):
    if isinstance(x, bool) or _is_numpy_bool(x):
        return bool(x)
    if isinstance(x, _numbers.Integral):
        return int(x)
    return float(x)


def _scalar_dtype(x):
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int64"
    return "float64"  # x is a _py_scalar


def zeros(shape, dtype="float32", *, stream=None):
    """torch.zeros on the stream's device (default: the CPU)."""
    return _C.full(shape, 0, dtype, stream)


# ---- elementwise ---------------------------------------------------------------------------
_P = None  # the plans module, bound lazily (import order)


def _plans():
    global _P
    if _P is None:
        from . import plans as p
        _P = p
    return _P


def _unary(op, x, out, stream, params=None, out_dtype=None):
    if not params:
        r = _fast_unary(op, x, out_dtype, out, stream)  # the C++ fast path (None: not handled there)
        if r is not None:
            return r
    return _unary_general(op, x, out, stream, params, out_dtype)


# The general paths live in functions of their own: a function with closures
# creates its cells on entry, which the fast paths need not pay for.
def _unary_general(op, x, out, stream, params, out_dtype):
    P = _plans()
    s, (xv, ov) = _C.prepare((x, out), stream)
    if xv is None:
        raise TypeError(f"{op}: expected a tensor, got None")
    params = params or {}
    key = (op, xv.dtype, xv.shape, out_dtype, tuple(sorted(params.items())))

    def make():
        return P.UnaryDescriptor(op=op, x=P.ElementwiseOperand.tensor(xv.dtype, xv.shape), out_dtype=out_dtype,
                                 **params)

    plan = _plan(P.UnaryPlan, key, make, s)
    y = _out(out, ov, plan.output_shape, plan.out_dtype, s)
    plan.run(stream=s, x=xv, y=y)
    return _result(out, y)


def _binary(op, a, b, out, stream, alpha=None):
    r = _fast_binary(op, a, b, alpha, out, stream)  # the C++ fast path (None: not handled there)
    if r is not None:
        return r
    return _binary_general(op, a, b, out, stream, alpha)


def _binary_general(op, a, b, out, stream, alpha):
    P = _plans()
    a_num, b_num = _is_number(a), _is_number(b)
    if a_num and b_num:
        raise TypeError(f"{op}: at least one operand must be a tensor")
    if a_num:
        a = _py_scalar(a)
    if b_num:
        b = _py_scalar(b)
    s, (av, bv, ov) = _C.prepare((None if a_num else a, None if b_num else b, out), stream)
    if (av is None and not a_num) or (bv is None and not b_num):
        raise TypeError(f"{op}: expected a tensor or a Python number, got None")
    ka = ("s", _scalar_dtype(a)) if a_num else (av.dtype, av.shape)
    kb = ("s", _scalar_dtype(b)) if b_num else (bv.dtype, bv.shape)
    key = (op, ka, kb, alpha)

    def operand(num, x, v):
        return P.ElementwiseOperand.scalar(_scalar_dtype(x)) if num else P.ElementwiseOperand.tensor(v.dtype, v.shape)

    def make():
        return P.BinaryDescriptor(op=op, a=operand(a_num, a, av), b=operand(b_num, b, bv), alpha=alpha)

    plan = _plan(P.BinaryPlan, key, make, s)
    y = _out(out, ov, plan.output_shape, plan.out_dtype, s)
    plan.run(stream=s, a=av, b=bv, a_value=a if a_num else None, b_value=b if b_num else None, out=y)
    return _result(out, y)


# ---- elementwise backward -----------------------------------------------------------------------------
def unary_backward(op, grad_output, input=None, *, output=None, alpha=None, beta=None, gamma=None, stream=None):
    """dx = dy * f'(x) of unary op ``op`` (UnaryBackwardPlan; PyTorch's values at
    the kinks: relu'(0) = 0, ...). Give the forward's ``input``, or only its
    ``output`` where the derivative is exact from it (sigmoid, tanh, exp, expm1,
    sqrt, reciprocal, relu); alpha / beta / gamma: the forward's parameters."""
    P = _plans()
    if (input is None) == (output is None):
        raise TypeError(f"unary_backward: give exactly one of input= and output= (op {op!r})")
    s, (dyv, xv, yv) = _C.prepare((grad_output, input, output), stream)
    _need("unary_backward", grad_output=dyv)
    src = xv if xv is not None else yv
    params = {k: float(v) for k, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)) if v is not None}
    key = ("unary_backward", op, dyv.dtype, src.dtype, src.shape, yv is not None, tuple(sorted(params.items())))

    def make():
        fwd = P.UnaryDescriptor(op=op, x=P.ElementwiseOperand.tensor(src.dtype, src.shape), **params)
        return P.UnaryBackwardDescriptor(forward=fwd, from_output=yv is not None)

    plan = _plan(P.UnaryBackwardPlan, key, make, s)
    dx = _C.empty(src.shape, src.dtype, s)
    plan.run(stream=s, dy=dyv, x=xv, y=yv, dx=dx)
    return dx


# Which operands each gradient of a binary op reads (BinaryBackwardPlan takes
# exactly those): (da's, db's); ops not listed read both for both.
_BINARY_READS = {
    "add": ((), ()), "sub": ((), ()), "div_floor": ((), ()), "div_trunc": ((), ()),
    "mul": (("b",), ("a",)), "div": (("b",), ("a", "b")),
    "remainder": ((), ("a", "b")), "fmod": ((), ("a", "b")),
    "copysign": (("a", "b"), ()),
}


def binary_backward(op, grad_output, a, b, *, alpha=None, output_mask=(True, True), stream=None):
    """The gradients (da, db) of binary op ``op`` (a, b: the forward's operands,
    tensors or Python numbers; alpha: add / sub's) from ``grad_output`` (the
    broadcast shape, the forward's output dtype). A gradient comes back for a
    tensor operand whose output_mask entry is set, else None; a broadcast
    operand's gradient is summed down to its shape (torch's sum_to_size),
    deterministically (BinaryBackwardPlan; PyTorch's derivative formulas)."""
    P = _plans()
    a_num, b_num = _is_number(a), _is_number(b)
    need_a = bool(output_mask[0]) and not a_num
    need_b = bool(output_mask[1]) and not b_num
    if not (need_a or need_b):
        return None, None
    reads_a, reads_b = _BINARY_READS.get(op, (("a", "b"), ("a", "b")))
    reads = set(reads_a if need_a else ()) | set(reads_b if need_b else ())
    s, (dyv, av, bv) = _C.prepare((grad_output, None if a_num else a, None if b_num else b), stream)
    _need("binary_backward", grad_output=dyv)
    ka = ("s", _scalar_dtype(a)) if a_num else (av.dtype, av.shape)
    kb = ("s", _scalar_dtype(b)) if b_num else (bv.dtype, bv.shape)
    alpha = None if alpha is None else float(alpha)
    key = ("binary_backward", op, ka, kb, alpha, need_a, need_b)

    def operand(num, x, v):
        return P.ElementwiseOperand.scalar(_scalar_dtype(x)) if num else P.ElementwiseOperand.tensor(v.dtype, v.shape)

    def make():
        fwd = P.BinaryDescriptor(op=op, a=operand(a_num, a, av), b=operand(b_num, b, bv), alpha=alpha)
        return P.BinaryBackwardDescriptor(forward=fwd, need_a=need_a, need_b=need_b)

    plan = _plan(P.BinaryBackwardPlan, key, make, s)
    da = _C.empty(av.shape, av.dtype, s) if need_a else None
    db = _C.empty(bv.shape, bv.dtype, s) if need_b else None
    plan.run(stream=s, dy=dyv, a=av if "a" in reads and not a_num else None,
             b=bv if "b" in reads and not b_num else None,
             a_value=_py_scalar(a) if a_num and "a" in reads else None,
             b_value=_py_scalar(b) if b_num and "b" in reads else None, da=da, db=db)
    return da, db


def add(input, other, *, alpha=1, out=None, stream=None):
    """torch.add: input + alpha * other (broadcasting; Python numbers allowed)."""
    alpha = None if alpha == 1 else float(alpha)
    r = _fast_binary("add", input, other, alpha, out, stream)  # the hottest ops call the fast path directly
    return r if r is not None else _binary_general("add", input, other, out, stream, alpha)


def sub(input, other, *, alpha=1, out=None, stream=None):
    """torch.sub: input - alpha * other."""
    alpha = None if alpha == 1 else float(alpha)
    r = _fast_binary("sub", input, other, alpha, out, stream)
    return r if r is not None else _binary_general("sub", input, other, out, stream, alpha)


def mul(input, other, *, out=None, stream=None):
    r = _fast_binary("mul", input, other, None, out, stream)
    return r if r is not None else _binary_general("mul", input, other, out, stream, None)


def div(input, other, *, rounding_mode=None, out=None, stream=None):
    """torch.div: true division (integers give float32); rounding_mode 'floor' / 'trunc'."""
    op = {None: "div", "floor": "div_floor", "trunc": "div_trunc"}.get(rounding_mode)
    if op is None:
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")
    return _binary(op, input, other, out, stream)


def maximum(input, other, *, out=None, stream=None):
    return _binary("maximum", input, other, out, stream)


def minimum(input, other, *, out=None, stream=None):
    return _binary("minimum", input, other, out, stream)


def pow(input, exponent, *, out=None, stream=None):
    return _binary("pow", input, exponent, out, stream)


def exp(input, *, out=None, stream=None):
    return _unary("exp", input, out, stream)


def log(input, *, out=None, stream=None):
    return _unary("log", input, out, stream)


def tanh(input, *, out=None, stream=None):
    return _unary("tanh", input, out, stream)


def sigmoid(input, *, out=None, stream=None):
    return _unary("sigmoid", input, out, stream)


def relu(input, *, out=None, stream=None):
    return _unary("relu", input, out, stream)


def gelu(input, approximate="none", *, out=None, stream=None):
    """torch.nn.functional.gelu: approximate 'none' (erf) or 'tanh'."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary("gelu" if approximate == "none" else "gelu_tanh", input, out, stream)


def silu(input, *, out=None, stream=None):
    return _unary("silu", input, out, stream)


def neg(input, *, out=None, stream=None):
    return _unary("neg", input, out, stream)


def abs(input, *, out=None, stream=None):
    return _unary("abs", input, out, stream)


def sqrt(input, *, out=None, stream=None):
    return _unary("sqrt", input, out, stream)


def rsqrt(input, *, out=None, stream=None):
    return _unary("rsqrt", input, out, stream)


def to(input, dtype, *, out=None, stream=None):
    """Tensor.to(dtype): a converted copy (PyTorch's conversion rules)."""
    return _unary("copy", input, out, stream, out_dtype=_dtype_name(dtype))


def _dtype_name(dtype):
    if dtype is None:
        return None
    s = str(dtype)
    return s[6:] if s.startswith("torch.") else s


# ---- reductions ---------------------------------------------------------------------------
def _axes(dim):
    if dim is None:
        return ()
    try:
        return (_op.index(dim),)
    except TypeError:
        return tuple(_op.index(d) for d in dim)


def _reduce(kind, x, dim, keepdim, out, stream, dtype=None, correction=1):
    if dtype is not None:
        x = to(x, dtype, stream=stream)
    r = _fast_reduce(kind, x, dim, bool(keepdim), correction, out, stream)
    if r is not None:
        return r
    return _reduce_general(kind, x, dim, keepdim, out, stream, correction)


def _reduce_general(kind, x, dim, keepdim, out, stream, correction):
    P = _plans()
    s, (xv, ov) = _C.prepare((x, out), stream)
    if xv is None:
        raise TypeError(f"{kind}: expected a tensor, got None")
    axes = _axes(dim)
    key = (kind, xv.dtype, xv.shape, axes, bool(keepdim), correction)

    def make():
        return P.ReduceDescriptor(kind=kind, dtype=xv.dtype, shape=xv.shape, axes=axes, keepdim=bool(keepdim),
                                  correction=correction)

    plan = _plan(P.ReducePlan, key, make, s)
    y = _out(out, ov, plan.output_shape, plan.output_dtype, s)
    plan.run(stream=s, x=xv, y=y)
    return _result(out, y)


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):
    """torch.sum: integers (and bool) sum into int64; dtype= converts the input first."""
    return _reduce("sum", input, dim, keepdim, out, stream, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):
    return _reduce("mean", input, dim, keepdim, out, stream, dtype)


def amax(input, dim=(), keepdim=False, *, out=None, stream=None):
    return _reduce("max", input, dim, keepdim, out, stream)


def amin(input, dim=(), keepdim=False, *, out=None, stream=None):
    return _reduce("min", input, dim, keepdim, out, stream)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None, stream=None):
    return _reduce("prod", input, dim, keepdim, out, stream, dtype)


def logsumexp(input, dim=None, keepdim=False, *, out=None, stream=None):
    return _reduce("logsumexp", input, dim, keepdim, out, stream)


def var(input, dim=None, *, correction=1, keepdim=False, out=None, stream=None):
    return _reduce("var", input, dim, keepdim, out, stream, correction=int(correction))


def std(input, dim=None, *, correction=1, keepdim=False, out=None, stream=None):
    return _reduce("std", input, dim, keepdim, out, stream, correction=int(correction))


def argmax(input, dim=None, keepdim=False, *, out=None, stream=None):
    """torch.argmax: int64 indices; dim=None gives the index into the flattened input."""
    return _reduce("argmax", input, dim, keepdim, out, stream)


def argmin(input, dim=None, keepdim=False, *, out=None, stream=None):
    return _reduce("argmin", input, dim, keepdim, out, stream)


# ---- matmul / linear ------------------------------------------------------------------------
_ACTIVATIONS = {None: "none", "none": "none", "relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh"}


def _activation(a):
    if a not in _ACTIVATIONS:
        raise ValueError(f"activation must be None, 'relu', 'gelu' or 'gelu_tanh', got {a!r}")
    return _ACTIVATIONS[a]


def matmul(input, other, *, out=None, stream=None):
    """torch.matmul (1-D operands, batch broadcasting)."""
    r = _fast_matmul(input, other, out, stream)
    if r is not None:
        return r
    return _matmul_general(input, other, out, stream)


def _matmul_general(input, other, out, stream):
    P = _plans()
    s, (av, bv, ov) = _C.prepare((input, other, out), stream)
    if av is None or bv is None:
        raise TypeError("matmul: expected two tensors")
    if av.dtype != bv.dtype:
        raise _dtype_error("matmul", av.dtype, bv.dtype)
    key = (av.dtype, av.shape, bv.shape)

    def make():
        return P.MatmulDescriptor(dtype=av.dtype, a_shape=av.shape, b_shape=bv.shape)

    plan = _plan(P.MatmulPlan, key, make, s)
    y = _out(out, ov, plan.out_shape, av.dtype, s)
    plan.run(stream=s, a=av, b=bv, out=y)
    return _result(out, y)


def _dtype_error(op, a, b):
    from ._errors import InvalidProblemError
    return InvalidProblemError(f"{op}: the operands' dtypes differ ({a} and {b}); convert one with baracuda.to")


def linear(input, weight, bias=None, activation=None, *, out=None, return_aux=False, stream=None):
    """torch.nn.functional.linear with a fused activation: act(x @ weight.T + bias).

    activation: None, 'relu', 'gelu' (erf) or 'gelu_tanh'. return_aux=True
    (gelu / gelu_tanh) also returns the pre-activation, which linear_backward needs."""
    act = _activation(activation)
    r = _fast_linear(input, weight, bias, act, bool(return_aux), out, stream)
    if r is not None:
        return r
    return _linear_general(input, weight, bias, act, out, return_aux, stream)


def _linear_general(input, weight, bias, act, out, return_aux, stream):
    P = _plans()
    s, (xv, wv, bv, ov) = _C.prepare((input, weight, bias, out), stream)
    if xv is None or wv is None:
        raise TypeError("linear: expected tensors for input and weight")
    if len(wv.shape) != 2:
        from ._errors import InvalidProblemError
        raise InvalidProblemError(f"linear: weight must be 2-D [out_features, in_features], got shape {wv.shape}")
    key = (xv.dtype, xv.shape, wv.shape[0], bv is not None, act, bool(return_aux))

    def make():
        return P.LinearDescriptor(dtype=xv.dtype, x_shape=xv.shape, out_features=wv.shape[0],
                                  has_bias=bv is not None, activation=act, save_aux=bool(return_aux))

    plan = _plan(P.LinearPlan, key, make, s)
    y = _out(out, ov, plan.y_shape, xv.dtype, s)
    aux = _C.empty(plan.y_shape, xv.dtype, s) if return_aux else None
    plan.run(stream=s, x=xv, weight=wv, bias=bv, y=y, aux=aux)
    y = _result(out, y)
    return (y, aux) if return_aux else y


def linear_backward(grad_output, input, weight, *, has_bias=True, activation=None, aux=None,
                    output_mask=(True, True, True), stream=None):
    """The gradients (dx, dweight, dbias) of linear(input, weight, bias, activation);
    aux: the pre-activation (gelu / gelu_tanh) or the forward's output (relu).
    An output whose output_mask entry is False (or dbias without a bias) is None."""
    P = _plans()
    act = _activation(activation)
    need_dx, need_dw, need_db = (bool(m) for m in output_mask)
    need_db = need_db and has_bias
    s, (dyv, xv, wv, auxv) = _C.prepare((grad_output, input, weight, aux), stream)
    key = (xv.dtype, xv.shape, wv.shape[0], bool(has_bias), act, need_dx, need_dw, need_db)

    def make():
        fwd = P.LinearDescriptor(dtype=xv.dtype, x_shape=xv.shape, out_features=wv.shape[0],
                                 has_bias=bool(has_bias), activation=act)
        return P.LinearBackwardDescriptor(forward=fwd, need_dx=need_dx, need_dw=need_dw, need_db=need_db)

    plan = _plan(P.LinearBackwardPlan, key, make, s)
    dx = _C.empty(xv.shape, xv.dtype, s) if need_dx else None
    dw = _C.empty(wv.shape, xv.dtype, s) if need_dw else None
    db = _C.empty((wv.shape[0],), xv.dtype, s) if need_db else None
    plan.run(stream=s, dy=dyv, x=xv if need_dw else None, weight=wv if need_dx else None, aux=auxv,
             dx=dx, dw=dw, db=db)
    return dx, dw, db


# ---- softmax ------------------------------------------------------------------------------------
def _softmax(x, dim, log, scale, dtype, out, stream):
    if dtype is not None:
        x = to(x, dtype, stream=stream)
    r = _fast_softmax(x, dim, log, scale, out, stream)
    if r is not None:
        return r
    return _softmax_general(x, dim, log, scale, out, stream)


def _softmax_general(x, dim, log, scale, out, stream):
    P = _plans()
    s, (xv, ov) = _C.prepare((x, out), stream)
    if xv is None:
        raise TypeError("softmax: expected a tensor, got None")
    dim = _op.index(dim)
    key = (xv.dtype, xv.shape, dim, log, scale)

    def make():
        return P.SoftmaxDescriptor(dtype=xv.dtype, shape=xv.shape, axis=dim, log=log, scale=scale)

    plan = _plan(P.SoftmaxPlan, key, make, s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    plan.run(stream=s, x=xv, y=y)
    return _result(out, y)


def softmax(input, dim=-1, *, dtype=None, scale=1.0, out=None, stream=None):
    """torch.softmax(input, dim) of scale * input. A row of only -inf gives 0 (PyTorch: NaN)."""
    return _softmax(input, dim, False, float(scale), dtype, out, stream)


def log_softmax(input, dim=-1, *, dtype=None, scale=1.0, out=None, stream=None):
    return _softmax(input, dim, True, float(scale), dtype, out, stream)


def _softmax_bwd(dy, y, dim, log, scale, out, stream):
    P = _plans()
    s, (dyv, yv, ov) = _C.prepare((dy, y, out), stream)
    dim = _op.index(dim)
    key = (yv.dtype, yv.shape, dim, log, scale)

    def make():
        return P.SoftmaxBackwardDescriptor(dtype=yv.dtype, shape=yv.shape, axis=dim, log=log, scale=scale)

    plan = _plan(P.SoftmaxBackwardPlan, key, make, s)
    dx = _out(out, ov, yv.shape, yv.dtype, s)
    plan.run(stream=s, y=yv, dy=dyv, dx=dx)
    return _result(out, dx)


def softmax_backward(grad_output, output, dim=-1, *, scale=1.0, out=None, stream=None):
    """The gradient of softmax from its output (torch's _softmax_backward_data)."""
    return _softmax_bwd(grad_output, output, dim, False, float(scale), out, stream)


def log_softmax_backward(grad_output, output, dim=-1, *, scale=1.0, out=None, stream=None):
    return _softmax_bwd(grad_output, output, dim, True, float(scale), out, stream)


# ---- norms -----------------------------------------------------------------------------------------
_FINFO_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16,
              "float16": 0.0009765625, "bfloat16": 0.0078125}


def _normalized_dims(xv, normalized_shape):
    try:
        ns = (_op.index(normalized_shape),)
    except TypeError:
        ns = tuple(_op.index(d) for d in normalized_shape)
    if len(ns) == 0 or len(ns) > len(xv.shape) or tuple(xv.shape[len(xv.shape) - len(ns):]) != ns:
        from ._errors import InvalidProblemError
        raise InvalidProblemError(f"normalized_shape {ns} must be a non-empty suffix of the input's shape {xv.shape}")
    return len(ns)


def _norm(kind, x, normalized_shape, weight, bias, eps, return_stats, out, stream):
    r = _fast_norm(kind, x, normalized_shape, weight, bias, eps, bool(return_stats), out, stream)
    if r is not None:
        return r
    return _norm_general(kind, x, normalized_shape, weight, bias, eps, return_stats, out, stream)


def _norm_general(kind, x, normalized_shape, weight, bias, eps, return_stats, out, stream):
    P = _plans()
    s, (xv, wv, bv, ov) = _C.prepare((x, weight, bias, out), stream)
    if xv is None:
        raise TypeError(f"{kind}: expected a tensor, got None")
    k = _normalized_dims(xv, normalized_shape)
    if eps is None:
        eps = _FINFO_EPS.get(xv.dtype, 1e-5)
    key = (kind, xv.dtype, xv.shape, k, wv is not None, bv is not None, float(eps))

    def make():
        return P.NormDescriptor(kind=kind, dtype=xv.dtype, shape=xv.shape, normalized_dims=k,
                                has_weight=wv is not None, has_bias=bv is not None, eps=float(eps),
                                save_stats=True)

    plan = _plan(P.NormPlan, key, make, s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    rstd = _C.empty(plan.stats_shape, plan.stats_dtype, s)
    mean = _C.empty(plan.stats_shape, plan.stats_dtype, s) if kind == "layer_norm" else None
    plan.run(stream=s, x=xv, weight=wv, bias=bv, y=y, mean=mean, rstd=rstd)
    y = _result(out, y)
    if not return_stats:
        return y
    return (y, mean, rstd) if kind == "layer_norm" else (y, rstd)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *, return_stats=False, out=None,
               stream=None):
    """torch.nn.functional.layer_norm (biased variance). return_stats=True returns
    (y, mean, rstd) (f32 stats; f64 for f64), what layer_norm_backward needs."""
    return _norm("layer_norm", input, normalized_shape, weight, bias, eps, return_stats, out, stream)


def rms_norm(input, normalized_shape, weight=None, eps=None, *, return_stats=False, out=None, stream=None):
    """torch.nn.functional.rms_norm (eps=None: torch.finfo(dtype).eps).
    return_stats=True returns (y, rstd)."""
    return _norm("rms_norm", input, normalized_shape, weight, None, eps, return_stats, out, stream)


def _norm_bwd(kind, dy, x, normalized_shape, mean, rstd, weight, has_bias, mask, stream):
    P = _plans()
    s, (dyv, xv, mv, rv, wv) = _C.prepare((dy, x, mean, rstd, weight), stream)
    k = _normalized_dims(xv, normalized_shape)
    need_dx, need_dw, need_db = mask
    need_dw = need_dw and wv is not None
    need_db = need_db and has_bias
    key = (kind, xv.dtype, xv.shape, k, wv is not None, has_bias, need_dx, need_dw, need_db)

    def make():
        fwd = P.NormDescriptor(kind=kind, dtype=xv.dtype, shape=xv.shape, normalized_dims=k,
                               has_weight=wv is not None, has_bias=has_bias, save_stats=True)
        return P.NormBackwardDescriptor(forward=fwd, need_dx=need_dx, need_dweight=need_dw, need_dbias=need_db)

    plan = _plan(P.NormBackwardPlan, key, make, s)
    wshape = tuple(xv.shape[len(xv.shape) - k:])
    dx = _C.empty(xv.shape, xv.dtype, s) if need_dx else None
    dw = _C.empty(wshape, xv.dtype, s) if need_dw else None
    db = _C.empty(wshape, xv.dtype, s) if need_db else None
    plan.run(stream=s, dy=dyv, x=xv, weight=wv if need_dx else None, mean=mv, rstd=rv, dx=dx, dweight=dw,
             dbias=db)
    return dx, dw, db


def layer_norm_backward(grad_output, input, normalized_shape, mean, rstd, weight=None, bias=None,
                        output_mask=(True, True, True), *, stream=None):
    """torch.native_layer_norm_backward: (dx, dweight, dbias); an entry whose
    output_mask is False, or that has no parameter, is None. `bias` only says
    whether the forward had one (a tensor or a bool; its values are not read)."""
    has_bias = bias is not None and bias is not False
    return _norm_bwd("layer_norm", grad_output, input, normalized_shape, mean, rstd, weight, has_bias,
                     tuple(bool(m) for m in output_mask), stream)


def rms_norm_backward(grad_output, input, normalized_shape, rstd, weight=None, output_mask=(True, True), *,
                      stream=None):
    """(dx, dweight) of rms_norm from its saved rstd."""
    dx, dw, _ = _norm_bwd("rms_norm", grad_output, input, normalized_shape, None, rstd, weight, False,
                          (bool(output_mask[0]), bool(output_mask[1]), False), stream)
    return dx, dw


# ---- cross-entropy ----------------------------------------------------------------------------------------
_REDUCTIONS = ("none", "mean", "sum")


def _ce_desc(P, lv, tv, has_weight, ignore_index, reduction, label_smoothing, z_loss, loss_dtype):
    probs = tv.dtype not in ("int32", "int64")
    return P.CrossEntropyDescriptor(
        dtype=lv.dtype, rows=lv.shape[0], classes=lv.shape[1], target="probs" if probs else "index",
        index_dtype="int64" if probs else tv.dtype, ignore_index=ignore_index, label_smoothing=label_smoothing,
        has_weight=has_weight, reduction=reduction, z_loss=z_loss, loss_dtype=loss_dtype)


def _ce_check(lv, tv, reduction):
    from ._errors import InvalidProblemError, UnsupportedError
    if lv is None or tv is None:
        raise TypeError("cross_entropy: expected tensors for input and target")
    if len(lv.shape) != 2:
        raise UnsupportedError(f"cross_entropy: input must be 2-D [N, C] (got shape {lv.shape}); flatten the "
                               "leading axes (class axis last)")
    if reduction not in _REDUCTIONS:
        raise InvalidProblemError(f"cross_entropy: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, *,
                  z_loss=0.0, loss_dtype=None, return_lse=False, out=None, stream=None):
    """torch.nn.functional.cross_entropy for input [N, C] and class-index targets
    [N] (int32 / int64) or probability targets [N, C]; plus PaLM's z_loss. The
    loss has the input's dtype (PyTorch's rule; accumulated in f32 / f64
    either way) unless loss_dtype="float32". return_lse=True also returns the
    per-row log-sum-exp [N] (float32; float64 for float64 input) that
    cross_entropy_backward needs."""
    P = _plans()
    s, (lv, tv, wv, ov) = _C.prepare((input, target, weight, out), stream)
    _ce_check(lv, tv, reduction)
    ld = _dtype_name(loss_dtype) or lv.dtype
    key = (lv.dtype, lv.shape, tv.dtype, wv is not None, int(ignore_index), reduction, float(label_smoothing),
           float(z_loss), ld)
    plan = _plan(P.CrossEntropyPlan, key,
                 lambda: _ce_desc(P, lv, tv, wv is not None, int(ignore_index), reduction, float(label_smoothing),
                                  float(z_loss), ld), s)
    loss = _out(out, ov, plan.loss_shape, ld, s)
    lse = _C.empty((lv.shape[0],), plan.lse_dtype, s) if return_lse else None
    plan.run(stream=s, logits=lv, target=tv, weight=wv, loss=loss, lse=lse)
    loss = _result(out, loss)
    return (loss, lse) if return_lse else loss


def cross_entropy_backward(grad_loss, input, target, lse, weight=None, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0, *, z_loss=0.0, loss_dtype=None, out=None, stream=None):
    """d(loss)/d(input) of cross_entropy from its saved lse. grad_loss: the loss's
    gradient (the loss's shape and dtype) or a Python number for mean / sum."""
    P = _plans()
    s0, (lv,) = _C.prepare((input,), stream)
    ld = _dtype_name(loss_dtype) or lv.dtype
    if _is_number(grad_loss):
        if reduction == "none":
            from ._errors import InvalidProblemError
            raise InvalidProblemError("cross_entropy_backward: reduction 'none' needs a grad_loss tensor [N]")
        grad_loss = _C.full((), float(grad_loss), ld, s0)
    s, (lv, tv, lsev, wv, dv, ov) = _C.prepare((lv, target, lse, weight, grad_loss, out), stream)
    _ce_check(lv, tv, reduction)
    key = (lv.dtype, lv.shape, tv.dtype, wv is not None, int(ignore_index), reduction, float(label_smoothing),
           float(z_loss), ld)
    plan = _plan(P.CrossEntropyBackwardPlan, key,
                 lambda: P.CrossEntropyBackwardDescriptor(forward=_ce_desc(
                     P, lv, tv, wv is not None, int(ignore_index), reduction, float(label_smoothing),
                     float(z_loss), ld)), s)
    dlogits = _out(out, ov, lv.shape, lv.dtype, s)
    plan.run(stream=s, logits=lv, target=tv, weight=wv, lse=lsev, dloss=dv, dlogits=dlogits)
    return _result(out, dlogits)


def linear_cross_entropy(hidden, weight, target, bias=None, class_weight=None, ignore_index=-100,
                         reduction="mean", label_smoothing=0.0, *, z_loss=0.0, loss_dtype=None,
                         return_grads=False, grad_loss=1.0, stream=None):
    """cross_entropy(hidden @ weight.T + bias, target) without materializing the
    [N, V] logits (row chunks): hidden [N, D], weight [V, D], bias [V],
    target [N] int32 / int64 class ids, class_weight [V].

    return_grads=True also returns (dhidden, dweight, dbias) of the loss
    scaled by grad_loss (a Python number: the upstream gradient of a mean /
    sum loss; 1.0 = d loss), computed in the same pass — the LM-head fusion:
    call it once in the forward with the seed gradient, then scale. dbias is
    None without a bias. reduction 'none' with return_grads needs grad_loss
    as a tensor [N]. The loss has the inputs' dtype (as cross_entropy), or
    loss_dtype="float32"."""
    P = _plans()
    s, (hv, wv, tv, bv, cv) = _C.prepare((hidden, weight, target, bias, class_weight), stream)
    from ._errors import InvalidProblemError
    if hv is None or wv is None or tv is None:
        raise TypeError("linear_cross_entropy: expected tensors for hidden, weight and target")
    if len(hv.shape) != 2 or len(wv.shape) != 2:
        raise InvalidProblemError(f"linear_cross_entropy: hidden must be [N, D] and weight [V, D], got {hv.shape} "
                                  f"and {wv.shape} (flatten leading axes)")
    if reduction not in _REDUCTIONS:
        raise InvalidProblemError(f"linear_cross_entropy: reduction must be 'none', 'mean' or 'sum', got "
                                  f"{reduction!r}")
    ld = _dtype_name(loss_dtype) or hv.dtype
    grads = bool(return_grads)
    key = (hv.dtype, hv.shape, wv.shape, tv.dtype, bv is not None, cv is not None, int(ignore_index), reduction,
           float(label_smoothing), float(z_loss), ld, grads)

    def make():
        return P.FusedLinearCrossEntropyDescriptor(
            dtype=hv.dtype, rows=hv.shape[0], in_features=hv.shape[1], classes=wv.shape[0], has_bias=bv is not None,
            index_dtype=tv.dtype, ignore_index=int(ignore_index), label_smoothing=float(label_smoothing),
            has_weight=cv is not None, reduction=reduction, z_loss=float(z_loss), loss_dtype=ld, need_dh=grads,
            need_dw=grads, need_db=grads and bv is not None)

    plan = _plan(P.FusedLinearCrossEntropyPlan, key, make, s)
    loss = _C.empty(plan.loss_shape, ld, s)
    dloss = dh = dw = db = None
    if grads:
        if _is_number(grad_loss):
            if reduction == "none":
                raise InvalidProblemError("linear_cross_entropy: reduction 'none' needs grad_loss as a tensor [N]")
            dloss = _C.full((), float(grad_loss), ld, s)
        else:
            dloss = grad_loss
        dh = _C.empty(hv.shape, hv.dtype, s)
        dw = _C.empty(wv.shape, hv.dtype, s)
        db = _C.empty((wv.shape[0],), hv.dtype, s) if bv is not None else None
    plan.run(stream=s, hidden=hv, weight=wv, bias=bv, target=tv, class_weight=cv, dloss=dloss, loss=loss,
             dhidden=dh, dweight=dw, dbias=db)
    return (loss, dh, dw, db) if grads else loss


# ---- flash attention ------------------------------------------------------------------------------------
def _alibi_mode(P, av):
    if av is None:
        return P.AlibiMode.None_
    return P.AlibiMode.PerHead if len(av.shape) == 1 else P.AlibiMode.PerBatchHead


def _flash_desc(P, qv, kv, causal, scale, window, softcap, align, save_lse, mv=None, av=None):
    from ._errors import InvalidProblemError
    if len(qv.shape) != 4 or len(kv.shape) != 4:
        raise InvalidProblemError(f"flash_attention: q, k, v must be 4-D [B, H, S, D] (got {qv.shape} and "
                                  f"{kv.shape}); a [B, S, H, D] tensor's .transpose(1, 2) view works as it is")
    B, H, Q, D = qv.shape
    wl, wr = (-1, -1) if window is None else (int(window[0]), int(window[1]))
    return P.FlashSdpaDescriptor(dtype=qv.dtype, batch=B, heads=H, kv_heads=kv.shape[1], q_len=Q,
                                 kv_len=kv.shape[2], head_dim=D, scale=scale, causal=bool(causal), align=align,
                                 window_left=wl, window_right=wr, softcap=float(softcap), save_lse=save_lse,
                                 has_mask=mv is not None, alibi=_alibi_mode(P, av))


def flash_attention(q, k, v, causal=False, scale=None, *, window=None, softcap=0.0, align="top_left",
                    attn_mask=None, alibi_slopes=None, return_lse=False, out=None, stream=None):
    """softmax(q k^T * scale [+ causal mask]) v without materializing the scores.

    q [B, H, Q, D], k and v [B, Hk, K, D] (torch's SDPA layout, any strides;
    H % Hk == 0 is grouped-query attention); D in 32..256, a multiple of 8.
    scale: 1/sqrt(D) by default. causal with align 'top_left' (torch's
    is_causal) or 'bottom_right' (FlashAttention's, for KV-cache decoding);
    window=(left, right) a sliding window (-1: unbounded); softcap > 0:
    s = softcap * tanh(s / softcap). attn_mask: an additive float32 mask
    [B, H, Q, K] (broadcast extents as stride-0 views, e.g. torch's
    mask.expand(B, H, Q, K)). alibi_slopes: float32 [H] or [B, H], adds
    -slope * |i + off - j| to the scores. A row with no allowed key gives 0
    (PyTorch: NaN). return_lse=True also returns the row log-sum-exp
    [B, H, Q] (float32), which flash_attention_backward needs."""
    P = _plans()
    s, (qv, kv, vv, mv, av, ov) = _C.prepare((q, k, v, attn_mask, alibi_slopes, out), stream)
    if qv is None or kv is None or vv is None:
        raise TypeError("flash_attention: expected tensors for q, k and v")
    key = (qv.dtype, qv.shape, kv.shape, bool(causal), scale, window, float(softcap), align, bool(return_lse),
           mv is not None, None if av is None else len(av.shape))
    plan = _plan(P.FlashSdpaPlan, key,
                 lambda: _flash_desc(P, qv, kv, causal, scale, window, softcap, align, bool(return_lse), mv, av), s)
    y = _out(out, ov, plan.y_shape, qv.dtype, s)
    lse = _C.empty(plan.lse_shape, "float32", s) if return_lse else None
    plan.run(stream=s, q=qv, k=kv, v=vv, mask=mv, alibi_slopes=av, y=y, lse=lse)
    y = _result(out, y)
    return (y, lse) if return_lse else y


def flash_attention_backward(grad_out, q, k, v, out, lse, causal=False, scale=None, *, window=None, softcap=0.0,
                             align="top_left", attn_mask=None, alibi_slopes=None, stream=None):
    """(dq, dk, dv) of flash_attention from its output and lse (same options)."""
    P = _plans()
    s, (dyv, qv, kv, vv, yv, lv, mv, av) = _C.prepare((grad_out, q, k, v, out, lse, attn_mask, alibi_slopes), stream)
    key = (qv.dtype, qv.shape, kv.shape, bool(causal), scale, window, float(softcap), align,
           mv is not None, None if av is None else len(av.shape))
    plan = _plan(P.FlashSdpaBackwardPlan, key,
                 lambda: _flash_desc(P, qv, kv, causal, scale, window, softcap, align, True, mv, av), s)
    dq = _C.empty(qv.shape, qv.dtype, s)
    dk = _C.empty(kv.shape, qv.dtype, s)
    dv = _C.empty(vv.shape, qv.dtype, s)
    plan.run(stream=s, dy=dyv, q=qv, k=kv, v=vv, y=yv, lse=lv, mask=mv, alibi_slopes=av, dq=dq, dk=dk, dv=dv)
    return dq, dk, dv


def _varlen_desc(P, qv, kv, max_q, max_k, causal, scale, window, softcap, align, save_lse, av, batch):
    from ._errors import InvalidProblemError
    if len(qv.shape) != 3 or len(kv.shape) != 3:
        raise InvalidProblemError(f"flash_attention_varlen: q must be [total_q, H, D] and k, v [total_k, Hk, D] "
                                  f"(got {qv.shape} and {kv.shape})")
    wl, wr = (-1, -1) if window is None else (int(window[0]), int(window[1]))
    return P.FlashSdpaDescriptor(dtype=qv.dtype, batch=batch, heads=qv.shape[1], kv_heads=kv.shape[1],
                                 q_len=int(max_q), kv_len=int(max_k), head_dim=qv.shape[2], scale=scale,
                                 causal=bool(causal), align=align, window_left=wl, window_right=wr,
                                 softcap=float(softcap), save_lse=save_lse, alibi=_alibi_mode(P, av), varlen=True,
                                 total_q=qv.shape[0], total_kv=kv.shape[0])


def flash_attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                           scale=None, *, window=None, softcap=0.0, align="top_left", alibi_slopes=None,
                           return_lse=False, out=None, stream=None):
    """FlashAttention's variable-length API: packed sequences, q [total_q, H, D],
    k and v [total_k, Hk, D], sequence b owning rows cu_seqlens_q[b] ..
    cu_seqlens_q[b + 1] (int32 [B + 1], starting at 0; likewise cu_seqlens_k);
    max_seqlen_q / max_seqlen_k bound every sequence's length (they size the
    launch: give the true maxima). The other options as flash_attention's,
    applied per sequence (no attn_mask). lse: [H, total_q] float32. The CPU
    checks the offsets (InvalidProblemError); CUDA kernels clamp them to the
    tensors (a bad array gives wrong numbers, never out-of-bounds accesses)."""
    P = _plans()
    s, (qv, kv, vv, cq, ck, av, ov) = _C.prepare((q, k, v, cu_seqlens_q, cu_seqlens_k, alibi_slopes, out), stream)
    if qv is None or kv is None or vv is None or cq is None or ck is None:
        raise TypeError("flash_attention_varlen: expected tensors for q, k, v, cu_seqlens_q and cu_seqlens_k")
    batch = cq.shape[0] - 1 if len(cq.shape) == 1 else -1
    key = ("varlen", qv.dtype, qv.shape, kv.shape, batch, int(max_seqlen_q), int(max_seqlen_k), bool(causal), scale,
           window, float(softcap), align, bool(return_lse), None if av is None else len(av.shape))
    plan = _plan(P.FlashSdpaPlan, key,
                 lambda: _varlen_desc(P, qv, kv, max_seqlen_q, max_seqlen_k, causal, scale, window, softcap, align,
                                      bool(return_lse), av, batch), s)
    y = _out(out, ov, plan.y_shape, qv.dtype, s)
    lse = _C.empty(plan.lse_shape, "float32", s) if return_lse else None
    plan.run(stream=s, q=qv, k=kv, v=vv, alibi_slopes=av, cu_seqlens_q=cq, cu_seqlens_kv=ck, y=y, lse=lse)
    y = _result(out, y)
    return (y, lse) if return_lse else y


def flash_attention_varlen_backward(grad_out, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                    max_seqlen_k, causal=False, scale=None, *, window=None, softcap=0.0,
                                    align="top_left", alibi_slopes=None, stream=None):
    """(dq, dk, dv) of flash_attention_varlen from its output and lse (same options)."""
    P = _plans()
    s, (dyv, qv, kv, vv, yv, lv, cq, ck, av) = _C.prepare(
        (grad_out, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, alibi_slopes), stream)
    batch = cq.shape[0] - 1 if len(cq.shape) == 1 else -1
    key = ("varlen", qv.dtype, qv.shape, kv.shape, batch, int(max_seqlen_q), int(max_seqlen_k), bool(causal), scale,
           window, float(softcap), align, None if av is None else len(av.shape))
    plan = _plan(P.FlashSdpaBackwardPlan, key,
                 lambda: _varlen_desc(P, qv, kv, max_seqlen_q, max_seqlen_k, causal, scale, window, softcap, align,
                                      True, av, batch), s)
    dq = _C.empty(qv.shape, qv.dtype, s)
    dk = _C.empty(kv.shape, qv.dtype, s)
    dv = _C.empty(vv.shape, qv.dtype, s)
    plan.run(stream=s, dy=dyv, q=qv, k=kv, v=vv, y=yv, lse=lv, alibi_slopes=av, cu_seqlens_q=cq, cu_seqlens_kv=ck,
             dq=dq, dk=dk, dv=dv)
    return dq, dk, dv


# ---- paged KV cache --------------------------------------------------------------------------------------
def paged_attention(q, k_pages, v_pages, block_table, seq_lens, *, causal=True, scale=None, softcap=0.0,
                    return_lse=False, out=None, stream=None):
    """Attention of q [B, Hq, Lq, D] over a paged KV cache (PagedAttentionPlan,
    vLLM / FlashInfer's layout): k_pages / v_pages [num_pages, page_size, Hkv, D],
    block_table int32 [B, max_pages] (sequence b's key j lives in page
    block_table[b, j // page_size], slot j % page_size), seq_lens int32 [B]
    (valid keys, including the Lq new ones). causal: query i sees keys
    j <= seq_lens[b] - Lq + i (bottom-right; decode is Lq = 1). GQA when
    Hq % Hkv == 0. A query with no visible key gives 0 (lse -inf)."""
    P = _plans()
    s, (qv, kv, vv, tv, lv, ov) = _C.prepare((q, k_pages, v_pages, block_table, seq_lens, out), stream)
    _need("paged_attention", q=qv, k_pages=kv, v_pages=vv, block_table=tv, seq_lens=lv)
    from ._errors import InvalidProblemError
    if len(qv.shape) != 4 or len(kv.shape) != 4 or len(tv.shape) != 2:
        raise InvalidProblemError(f"paged_attention: q [B, Hq, Lq, D], pages [num_pages, page_size, Hkv, D] and "
                                  f"block_table [B, max_pages] expected, got {qv.shape}, {kv.shape}, {tv.shape}")
    B, H, L, D = qv.shape
    key = ("paged", qv.dtype, qv.shape, kv.shape, tv.shape, bool(causal), scale, float(softcap), bool(return_lse))

    def make():
        return P.PagedAttentionDescriptor(dtype=qv.dtype, batch=B, heads=H, kv_heads=kv.shape[2], q_len=L,
                                          head_dim=D, num_pages=kv.shape[0], page_size=kv.shape[1],
                                          max_pages=tv.shape[1], scale=scale, causal=bool(causal),
                                          softcap=float(softcap), save_lse=bool(return_lse))

    plan = _plan(P.PagedAttentionPlan, key, make, s)
    y = _out(out, ov, plan.q_shape, qv.dtype, s)
    lse = _C.empty(plan.lse_shape, "float32", s) if return_lse else None
    plan.run(stream=s, q=qv, k_pages=kv, v_pages=vv, block_table=tv, seq_lens=lv, out=y, lse=lse)
    y = _result(out, y)
    return (y, lse) if return_lse else y


def paged_kv_append_(k_pages, v_pages, k_new, v_new, block_table, seq_lens, *, stream=None):
    """Writes k_new / v_new [B, Hkv, Lnew, D] into the pages at positions
    seq_lens[b] .. seq_lens[b] + Lnew - 1 of each sequence (PagedKvAppendPlan;
    seq_lens are the lengths BEFORE the append and are not updated). In place;
    returns (k_pages, v_pages)."""
    P = _plans()
    s, (kp, vp, kn, vn, tv, lv) = _C.prepare((k_pages, v_pages, k_new, v_new, block_table, seq_lens), stream)
    _need("paged_kv_append_", k_pages=kp, v_pages=vp, k_new=kn, v_new=vn, block_table=tv, seq_lens=lv)
    key = ("paged_append", kn.dtype, kn.shape, kp.shape, tv.shape)

    def make():
        B, Hk, L, D = kn.shape
        return P.PagedKvAppendDescriptor(dtype=kn.dtype, batch=B, kv_heads=Hk, new_len=L, head_dim=D,
                                         num_pages=kp.shape[0], page_size=kp.shape[1], max_pages=tv.shape[1])

    plan = _plan(P.PagedKvAppendPlan, key, make, s)
    plan.run(stream=s, k_new=kn, v_new=vn, block_table=tv, seq_lens=lv, k_pages=kp, v_pages=vp)
    return k_pages, v_pages


# ---- materialized attention ------------------------------------------------------------------------------
def _sdpa_desc(P, qv, kv, vv, is_causal, scale, align, has_mask):
    from ._errors import InvalidProblemError
    if len(qv.shape) != 4 or len(kv.shape) != 4 or len(vv.shape) != 4:
        raise InvalidProblemError(f"scaled_dot_product_attention: q, k, v must be 4-D [B, H, S, D] (got {qv.shape}, "
                                  f"{kv.shape}, {vv.shape})")
    B, H, Q, D = qv.shape
    return P.SdpaDescriptor(dtype=qv.dtype, batch=B, heads=H, kv_heads=kv.shape[1], q_len=Q, kv_len=kv.shape[2],
                            head_dim=D, head_dim_v=vv.shape[3], scale=scale, causal=bool(is_causal), align=align,
                            has_mask=has_mask)


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None, *, align="top_left",
                                 return_probs=False, out=None, stream=None):
    """Materialized attention (SdpaPlan): the probabilities [B, H, Q, K] are
    formed (float32 for 16/32-bit inputs, float64 for float64), so any head
    dims (Dv may differ from Dk) and float64 work; flash_attention is the fast
    path. attn_mask: additive float32 [B, H, Q, K] (stride-0 broadcast views);
    a row with no allowed key gives 0 (PyTorch: NaN). return_probs=True also
    returns the probabilities, which scaled_dot_product_attention_backward needs."""
    P = _plans()
    s, (qv, kv, vv, mv, ov) = _C.prepare((q, k, v, attn_mask, out), stream)
    if qv is None or kv is None or vv is None:
        raise TypeError("scaled_dot_product_attention: expected tensors for q, k and v")
    key = (qv.dtype, qv.shape, kv.shape, vv.shape, bool(is_causal), scale, align, mv is not None)
    plan = _plan(P.SdpaPlan, key, lambda: _sdpa_desc(P, qv, kv, vv, is_causal, scale, align, mv is not None), s)
    y = _out(out, ov, plan.y_shape, qv.dtype, s)
    probs = _C.empty(plan.probs_shape, plan.probs_dtype, s)
    plan.run(stream=s, q=qv, k=kv, v=vv, mask=mv, y=y, probs=probs)
    y = _result(out, y)
    return (y, probs) if return_probs else y


def scaled_dot_product_attention_backward(grad_out, q, k, v, probs, is_causal=False, scale=None, *,
                                          align="top_left", stream=None):
    """(dq, dk, dv) of scaled_dot_product_attention from its probabilities
    (the mask and the causal rule are already in them)."""
    P = _plans()
    s, (dyv, qv, kv, vv, pv) = _C.prepare((grad_out, q, k, v, probs), stream)
    key = (qv.dtype, qv.shape, kv.shape, vv.shape, bool(is_causal), scale, align)
    plan = _plan(P.SdpaBackwardPlan, key, lambda: _sdpa_desc(P, qv, kv, vv, is_causal, scale, align, False), s)
    dq = _C.empty(qv.shape, qv.dtype, s)
    dk = _C.empty(kv.shape, qv.dtype, s)
    dv = _C.empty(vv.shape, qv.dtype, s)
    plan.run(stream=s, dy=dyv, q=qv, k=kv, v=vv, probs=pv, dq=dq, dk=dk, dv=dv)
    return dq, dk, dv


# ---- rotary embeddings -------------------------------------------------------------------------------------
def _rope_desc(P, qv, kv, pv, theta, rotary_dim, interleaved):
    from ._errors import InvalidProblemError
    if len(qv.shape) != 4 or (kv is not None and len(kv.shape) != 4):
        raise InvalidProblemError(f"rope: q (and k) must be 4-D [B, H, S, D], got {qv.shape}")
    B, H, S, D = qv.shape
    positions = "none" if pv is None else ("per_sequence" if len(pv.shape) == 1 else "per_batch")
    return P.RopeDescriptor(dtype=qv.dtype, batch=B, heads=H, kv_heads=kv.shape[1] if kv is not None else 1,
                            seq_len=S, head_dim=D, rotary_dim=-1 if rotary_dim is None else int(rotary_dim),
                            has_k=kv is not None, pairs="interleaved" if interleaved else "half_split",
                            theta=float(theta), positions=positions,
                            position_dtype=pv.dtype if pv is not None else "int32")


def rope(q, k=None, *, positions=None, theta=10000.0, rotary_dim=None, interleaved=False, stream=None):
    """Rotary position embeddings of q (and k) [B, H, S, D]: pairs (i, i + R/2)
    (GPT-NeoX / Hugging Face; interleaved=True: (2i, 2i+1)) rotated by
    pos * theta^(-2i/R); R = rotary_dim (default D; the rest passes through).
    positions: None (0..S-1), [S] or [B, S] int32 / int64. Returns q_out, or
    (q_out, k_out) when k is given."""
    P = _plans()
    s, (qv, kv, pv) = _C.prepare((q, k, positions), stream)
    key = (qv.dtype, qv.shape, None if kv is None else kv.shape, None if pv is None else (pv.dtype, pv.shape),
           float(theta), rotary_dim, bool(interleaved))
    plan = _plan(P.RopePlan, key, lambda: _rope_desc(P, qv, kv, pv, theta, rotary_dim, interleaved), s)
    qo = _C.empty(qv.shape, qv.dtype, s)
    ko = _C.empty(kv.shape, kv.dtype, s) if kv is not None else None
    plan.run(stream=s, q=qv, k=kv, positions=pv, q_out=qo, k_out=ko)
    return qo if kv is None else (qo, ko)


def rope_backward(grad_q, grad_k=None, *, positions=None, theta=10000.0, rotary_dim=None, interleaved=False,
                  stream=None):
    """The gradients of rope's inputs from its outputs' (the inverse rotation)."""
    P = _plans()
    s, (qv, kv, pv) = _C.prepare((grad_q, grad_k, positions), stream)
    key = (qv.dtype, qv.shape, None if kv is None else kv.shape, None if pv is None else (pv.dtype, pv.shape),
           float(theta), rotary_dim, bool(interleaved))
    plan = _plan(P.RopeBackwardPlan, key, lambda: _rope_desc(P, qv, kv, pv, theta, rotary_dim, interleaved), s)
    dq = _C.empty(qv.shape, qv.dtype, s)
    dk = _C.empty(kv.shape, kv.dtype, s) if kv is not None else None
    plan.run(stream=s, dy_q=qv, dy_k=kv, positions=pv, dq=dq, dk=dk)
    return dq if kv is None else (dq, dk)


# ---- random numbers and dropout ------------------------------------------------------------------------------
# No global generator: every call takes its Philox key `seed` and counter
# `offset` (the same bits on the CPU and on CUDA for the same seed / offset).
def _random(dist, shape, dtype, seed, offset, stream, **params):
    P = _plans()
    s = _C.Stream.from_py(stream) if stream is not None else _C.Stream.cpu()
    shape = _axes(shape) if not isinstance(shape, tuple) else tuple(_op.index(d) for d in shape)
    dtype = _dtype_name(dtype)
    key = (dist, shape, dtype, tuple(sorted(params.items())))
    plan = _plan(P.RandomPlan, key, lambda: P.RandomDescriptor(distribution=dist, dtype=dtype, shape=shape, **params), s)
    out = _C.empty(shape, dtype, s)
    plan.run(stream=s, seed=(int(seed), int(offset)), out=out)
    return out


def uniform(shape, low=0.0, high=1.0, *, seed, offset=0, dtype="float32", stream=None):
    """Uniform [low, high) samples (torch.rand / Tensor.uniform_), Philox
    keyed by (seed, offset); on the stream's device (default: the CPU)."""
    return _random("uniform", shape, dtype, seed, offset, stream, low=float(low), high=float(high))


def normal(shape, mean=0.0, std=1.0, *, seed, offset=0, dtype="float32", stream=None):
    """Normal(mean, std) samples (torch.randn / Tensor.normal_), as uniform."""
    return _random("normal", shape, dtype, seed, offset, stream, mean=float(mean), std=float(std))


def dropout(input, p=0.5, training=True, *, seed, offset=0, return_mask=False, out=None, stream=None):
    """torch.nn.functional.dropout: zero each element with probability p and
    scale the kept ones by 1 / (1 - p); the keep decisions are Philox(seed,
    offset), so dropout_backward regenerates them from the same (seed,
    offset) — or reads the 1-bit mask (return_mask=True: (out, mask), mask
    uint8 [ceil(numel / 8)]). training=False returns the input unchanged."""
    if not training or p == 0:
        return (input, None) if return_mask else input
    P = _plans()
    s, (xv, ov) = _C.prepare((input, out), stream)
    if xv is None:
        raise TypeError("dropout: expected a tensor, got None")
    key = (xv.dtype, xv.shape, float(p), bool(return_mask))
    plan = _plan(P.DropoutPlan, key, lambda: P.DropoutDescriptor(dtype=xv.dtype, shape=xv.shape, p=float(p),
                                                                 save_mask=bool(return_mask)), s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    mask = _C.empty(plan.mask_shape, "uint8", s) if return_mask else None
    plan.run(stream=s, seed=(int(seed), int(offset)), x=xv, out=y, mask=mask)
    y = _result(out, y)
    return (y, mask) if return_mask else y


def dropout_backward(grad_output, p=0.5, *, seed=None, offset=0, mask=None, out=None, stream=None):
    """The gradient of dropout: from the forward's (seed, offset), or from its
    mask (then seed is not needed)."""
    from ._errors import InvalidProblemError
    P = _plans()
    s, (dyv, mv, ov) = _C.prepare((grad_output, mask, out), stream)
    if mv is None and seed is None:
        raise InvalidProblemError("dropout_backward: give the forward's seed (and offset) or its mask")
    key = (dyv.dtype, dyv.shape, float(p), mv is not None)
    plan = _plan(P.DropoutBackwardPlan, key, lambda: P.DropoutBackwardDescriptor(
        dtype=dyv.dtype, shape=dyv.shape, p=float(p), use_mask=mv is not None), s)
    dx = _out(out, ov, dyv.shape, dyv.dtype, s)
    plan.run(stream=s, seed=(int(seed or 0), int(offset)), dy=dyv, mask=mv, dx=dx)
    return _result(out, dx)


# ---- indexing: gather / scatter, index_*, take / put, one_hot, masked, nonzero ---------------------------
# Indices are int32 or int64 (torch: int64 only). Bad indices: on the CPU the
# call raises InvalidProblemError naming the first bad position before writing
# anything; on CUDA nothing is read or written out of bounds (the element is
# zero / the contribution skipped) and the plan's check_indices(workspace)
# reports it — the functional layer does not sync to check (docs/PYTHON.md).
def _need(op, **tensors):
    for name, v in tensors.items():
        if v is None:
            raise TypeError(f"{op}: expected a tensor for {name}")


def gather(input, dim, index, *, out=None, stream=None):
    """torch.gather: out[i][j][k] = input[index[i][j][k]][j][k] (dim = 0), out has index's shape."""
    P = _plans()
    s, (xv, iv, ov) = _C.prepare((input, index, out), stream)
    _need("gather", input=xv, index=iv)
    key = (xv.dtype, xv.shape, iv.dtype, iv.shape, int(dim))
    plan = _plan(P.GatherPlan, key, lambda: P.GatherDescriptor(dtype=xv.dtype, index_dtype=iv.dtype, x_shape=xv.shape,
                                                               index_shape=iv.shape, dim=int(dim)), s)
    y = _out(out, ov, plan.out_shape, xv.dtype, s)
    plan.run(stream=s, x=xv, index=iv, out=y)
    return _result(out, y)


_SCATTER_REDUCE = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}


def _scatter(op, input, dim, index, src, value, reduce, include_self, out, stream):
    from ._errors import InvalidProblemError
    P = _plans()
    use_value = src is None or _is_number(src)
    if use_value:
        if src is not None:
            value = src
        if value is None:
            raise TypeError(f"{op}: give src (a tensor) or value (a number)")
        s, (xv, iv, ov) = _C.prepare((input, index, out), stream)
        sv = None
    else:
        if value is not None:
            raise InvalidProblemError(f"{op}: give src or value, not both")
        s, (xv, iv, sv, ov) = _C.prepare((input, index, src, out), stream)
    _need(op, input=xv, index=iv)
    key = (xv.dtype, xv.shape, iv.dtype, iv.shape, None if sv is None else sv.shape, int(dim), reduce,
           bool(include_self), use_value, float(value) if use_value else 0.0)
    plan = _plan(P.ScatterPlan, key, lambda: P.ScatterDescriptor(
        dtype=xv.dtype, index_dtype=iv.dtype, self_shape=xv.shape, index_shape=iv.shape,
        src_shape=iv.shape if sv is None else sv.shape, dim=int(dim), reduce=reduce, include_self=bool(include_self),
        use_value=use_value, value=float(value) if use_value else 0.0), s)
    y = _out(out, ov, plan.out_shape, xv.dtype, s)
    plan.run(stream=s, input=xv, index=iv, src=sv, out=y)
    return _result(out, y)


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None, stream=None):
    """torch.scatter: out = input, then out[index[i][j]][j] = src[i][j] (dim = 0); src a tensor
    or a number (or value=). Duplicate destinations: the last position in row-major order
    wins (deterministic; torch leaves it undefined). reduce='add' / 'multiply' (torch's
    older scatter reduce) is scatter_reduce's 'sum' / 'prod' with include_self=True.
    out=input works in place (Tensor.scatter_)."""
    from ._errors import InvalidProblemError
    modes = {None: "none", "add": "sum", "multiply": "prod"}
    if reduce not in modes:
        raise InvalidProblemError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    return _scatter("scatter", input, dim, index, src, value, modes[reduce], True, out, stream)


def scatter_add(input, dim, index, src, *, out=None, stream=None):
    """torch.scatter_add: out = input, then out[index[i][j]][j] += src[i][j] (dim = 0); summed
    in position order (deterministic)."""
    return _scatter("scatter_add", input, dim, index, src, None, "sum", True, out, stream)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None, stream=None):
    """torch.scatter_reduce: reduce in 'sum', 'prod', 'mean', 'amax', 'amin'."""
    from ._errors import InvalidProblemError
    if reduce not in _SCATTER_REDUCE:
        raise InvalidProblemError(f"scatter_reduce: reduce must be one of {sorted(_SCATTER_REDUCE)}, got {reduce!r}")
    if src is None or _is_number(src):
        raise TypeError("scatter_reduce: src must be a tensor")
    return _scatter("scatter_reduce", input, dim, index, src, None, reduce, include_self, out, stream)


def scatter_reduce_backward(grad, input, dim, index, src, reduce, result=None, *, include_self=True,
                            grad_input=True, grad_src=True, stream=None):
    """(grad_input, grad_src) of scatter_reduce from the output's gradient `grad` (torch's
    formulas); result (the forward's output) is needed for 'amax' / 'amin' and for 'prod'
    with grad_src. grad_input / grad_src=False leaves that gradient out (None)."""
    from ._errors import InvalidProblemError
    P = _plans()
    if reduce not in _SCATTER_REDUCE:
        raise InvalidProblemError(f"scatter_reduce_backward: reduce must be one of {sorted(_SCATTER_REDUCE)}, "
                                  f"got {reduce!r}")
    s, (gv, xv, iv, sv, rv) = _C.prepare((grad, input, index, src, result), stream)
    _need("scatter_reduce_backward", grad=gv, input=xv, index=iv, src=sv)
    key = (gv.dtype, xv.shape, iv.dtype, iv.shape, sv.shape, int(dim), reduce, bool(include_self), bool(grad_input),
           bool(grad_src))
    plan = _plan(P.ScatterReduceBackwardPlan, key, lambda: P.ScatterReduceBackwardDescriptor(
        dtype=gv.dtype, index_dtype=iv.dtype, self_shape=xv.shape, index_shape=iv.shape, src_shape=sv.shape,
        dim=int(dim), reduce=reduce, include_self=bool(include_self), compute_grad_self=bool(grad_input),
        compute_grad_src=bool(grad_src)), s)
    gs = _C.empty(xv.shape, gv.dtype, s) if grad_input else None
    gr = _C.empty(sv.shape, gv.dtype, s) if grad_src else None
    ns = plan.needs_self
    plan.run(stream=s, grad=gv, index=iv, input=xv if ns else None, src=sv if ns else None,
             result=rv if plan.needs_result else None, grad_self=gs, grad_src=gr)
    return gs, gr


def index_select(input, dim, index, *, out=None, stream=None):
    """torch.index_select: the slices of input at `index` (0-d or 1-D) along dim."""
    P = _plans()
    s, (xv, iv, ov) = _C.prepare((input, index, out), stream)
    _need("index_select", input=xv, index=iv)
    key = (xv.dtype, xv.shape, iv.dtype, iv.shape, int(dim))
    plan = _plan(P.IndexSelectPlan, key, lambda: P.IndexSelectDescriptor(
        dtype=xv.dtype, index_dtype=iv.dtype, self_shape=xv.shape, dim=int(dim), index_shape=iv.shape), s)
    y = _out(out, ov, plan.out_shape, xv.dtype, s)
    plan.run(stream=s, input=xv, index=iv, out=y)
    return _result(out, y)


def _index_update(op, mode, input, dim, index, source, out, stream, alpha=1.0, value=0.0, include_self=True):
    P = _plans()
    s, (xv, iv, sv, ov) = _C.prepare((input, index, source, out), stream)
    _need(op, input=xv, index=iv)
    if mode != "Fill":
        _need(op, source=sv)
    key = (mode, xv.dtype, xv.shape, iv.dtype, iv.shape, int(dim), float(alpha), float(value), bool(include_self))
    plan = _plan(P.IndexUpdatePlan, key, lambda: P.IndexUpdateDescriptor(
        mode=mode, dtype=xv.dtype, index_dtype=iv.dtype, self_shape=xv.shape, dim=int(dim), index_shape=iv.shape,
        alpha=float(alpha), value=float(value), include_self=bool(include_self)), s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    plan.run(stream=s, input=xv, index=iv, source=sv, out=y)
    return _result(out, y)


def index_add(input, dim, index, source, *, alpha=1, out=None, stream=None):
    """torch.index_add: out = input, then out[..., index[i], ...] += alpha * source[..., i, ...]
    (duplicates summed in order: deterministic). out=input: in place (index_add_)."""
    return _index_update("index_add", "Add", input, dim, index, source, out, stream, alpha=alpha)


def index_copy(input, dim, index, source, *, out=None, stream=None):
    """torch.index_copy (duplicate indices: the last one wins, deterministically)."""
    return _index_update("index_copy", "Copy", input, dim, index, source, out, stream)


def index_fill(input, dim, index, value, *, out=None, stream=None):
    """torch.index_fill: value a Python number."""
    if not _is_number(value):
        raise TypeError("index_fill: value must be a Python number")
    return _index_update("index_fill", "Fill", input, dim, index, None, out, stream, value=_py_scalar(value))


_INDEX_REDUCE = {"prod": "Prod", "mean": "Mean", "amax": "Amax", "amin": "Amin"}


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None, stream=None):
    """torch.index_reduce: reduce in 'prod', 'mean', 'amax', 'amin'."""
    from ._errors import InvalidProblemError
    if reduce not in _INDEX_REDUCE:
        raise InvalidProblemError(f"index_reduce: reduce must be one of {sorted(_INDEX_REDUCE)}, got {reduce!r}")
    return _index_update("index_reduce", _INDEX_REDUCE[reduce], input, dim, index, source, out, stream,
                         include_self=include_self)


def take(input, index, *, out=None, stream=None):
    """torch.take: input read as its row-major flattening; out has index's shape; negative
    indices count from the end."""
    P = _plans()
    s, (xv, iv, ov) = _C.prepare((input, index, out), stream)
    _need("take", input=xv, index=iv)
    key = (xv.dtype, xv.shape, iv.dtype, iv.shape)
    plan = _plan(P.TakePlan, key, lambda: P.TakeDescriptor(dtype=xv.dtype, index_dtype=iv.dtype, x_shape=xv.shape,
                                                           index_shape=iv.shape), s)
    y = _out(out, ov, iv.shape, xv.dtype, s)
    plan.run(stream=s, x=xv, index=iv, out=y)
    return _result(out, y)


def put(input, index, source, accumulate=False, *, out=None, stream=None):
    """torch.put (Tensor.put_ with out=input): flat(out)[index[k]] = source[k]; duplicates
    without accumulate: the last position wins (deterministic); accumulate sums in order."""
    P = _plans()
    s, (xv, iv, sv, ov) = _C.prepare((input, index, source, out), stream)
    _need("put", input=xv, index=iv, source=sv)
    key = (xv.dtype, xv.shape, iv.dtype, iv.shape, sv.shape, bool(accumulate))
    plan = _plan(P.PutPlan, key, lambda: P.PutDescriptor(dtype=xv.dtype, index_dtype=iv.dtype, self_shape=xv.shape,
                                                         index_shape=iv.shape, source_shape=sv.shape,
                                                         accumulate=bool(accumulate)), s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    plan.run(stream=s, input=xv, index=iv, source=sv, out=y)
    return _result(out, y)


def one_hot(tensor, num_classes=-1, *, dtype="int64", out=None, stream=None):
    """torch.nn.functional.one_hot (any output dtype; int32 indices too). num_classes=-1
    infers max(tensor) + 1: a reduction and a host read (a sync on CUDA), as torch."""
    from ._errors import InvalidProblemError
    P = _plans()
    s, (iv, ov) = _C.prepare((tensor, out), stream)
    _need("one_hot", tensor=iv)
    C = int(num_classes)
    if C == -1:
        n = 1
        for e in iv.shape:
            n *= e
        if n == 0:
            raise InvalidProblemError("one_hot: can not infer the number of classes from an empty tensor")
        C = _C._read_i64(to(amax(iv, stream=s), "int64", stream=s), s) + 1
    dt = _dtype_name(dtype)
    key = (iv.dtype, iv.shape, C, dt)
    plan = _plan(P.OneHotPlan, key, lambda: P.OneHotDescriptor(index_dtype=iv.dtype, index_shape=iv.shape,
                                                               num_classes=C, dtype=dt), s)
    y = _out(out, ov, plan.out_shape, dt, s)
    plan.run(stream=s, indices=iv, out=y)
    return _result(out, y)


def nonzero(input, *, as_tuple=False, size=None, fill_value=0, return_count=False, stream=None):
    """torch.nonzero: [n, ndim] int64 coordinates of the nonzero elements in row-major
    order. size=None gives torch's exact shape: a first pass counts (a host sync on
    CUDA), a second writes. size=m (jnp.nonzero's size=): [m, ndim] with rows past the
    count filled with fill_value, no host sync; return_count=True also returns the
    true count (0-d int64 on the device). as_tuple=True: a tuple of ndim [n] strided
    views of the columns (no copy; a 0-d input counts as 1-d, as torch)."""
    P = _plans()
    s, (xv,) = _C.prepare((input,), stream)
    _need("nonzero", input=xv)

    def run(m, with_count):
        key = (xv.dtype, xv.shape, int(m), int(fill_value), with_count)
        plan = _plan(P.NonzeroPlan, key, lambda: P.NonzeroDescriptor(
            dtype=xv.dtype, shape=xv.shape, capacity=int(m), fill_value=int(fill_value), has_count=with_count), s)
        y = _C.empty(plan.out_shape, "int64", s)
        c = _C.empty((), "int64", s) if with_count else None
        plan.run(stream=s, x=xv, out=y, count=c)
        return y, c

    if size is None:
        _, c = run(0, True)
        y, c = run(_C._read_i64(c, s), False)
    else:
        y, c = run(size, True)
    if as_tuple:
        # torch treats a 0-d input as 1-d here: one [n] tensor of zeros
        y = tuple(_columns(y, s)) if len(xv.shape) > 0 else (_C.full((y.shape[0],), fill_value=0, dtype="int64",
                                                                        stream=s),)
    return (y, c) if return_count else y


def _columns(y, s):
    """The columns of an [n, r] int64 array as r strided [n] views (no copy)."""
    return [_C._column(y, d) for d in range(y.shape[1])]


def argwhere(input, *, stream=None):
    """torch.argwhere (= nonzero)."""
    return nonzero(input, stream=stream)


def masked_select(input, mask, *, size=None, fill_value=0, return_count=False, stream=None):
    """torch.masked_select: the elements of input (broadcast with the bool mask) where the
    mask is true, row-major. size=None: torch's exact length (a host sync on CUDA, as
    nonzero); size=m: [m] with fill_value past the count, no sync (return_count as nonzero)."""
    P = _plans()
    s, (xv, mv) = _C.prepare((input, mask), stream)
    _need("masked_select", input=xv, mask=mv)

    def run(m, with_count):
        key = (xv.dtype, xv.shape, mv.shape, int(m), float(fill_value), with_count)
        plan = _plan(P.MaskedSelectPlan, key, lambda: P.MaskedSelectDescriptor(
            dtype=xv.dtype, x_shape=xv.shape, mask_shape=mv.shape, capacity=int(m), fill_value=float(fill_value),
            has_count=with_count), s)
        y = _C.empty(plan.out_shape, xv.dtype, s)
        c = _C.empty((), "int64", s) if with_count else None
        plan.run(stream=s, x=xv, mask=mv, out=y, count=c)
        return y, c

    if size is None:
        _, c = run(0, True)
        y, c = run(_C._read_i64(c, s), False)
    else:
        y, c = run(size, True)
    return (y, c) if return_count else y


def masked_scatter(input, mask, source, *, out=None, stream=None):
    """Tensor.masked_scatter: out = input, then the k-th true mask position (row-major, mask
    broadcast to input's shape) gets source.flatten()[k]. Too few source elements: an
    error on the CPU; on CUDA those writes are skipped (the plan's check_indices)."""
    P = _plans()
    s, (xv, mv, sv, ov) = _C.prepare((input, mask, source, out), stream)
    _need("masked_scatter", input=xv, mask=mv, source=sv)
    key = (xv.dtype, xv.shape, mv.shape, sv.shape)
    plan = _plan(P.MaskedScatterPlan, key, lambda: P.MaskedScatterDescriptor(
        dtype=xv.dtype, self_shape=xv.shape, mask_shape=mv.shape, source_shape=sv.shape), s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    plan.run(stream=s, input=xv, mask=mv, source=sv, out=y)
    return _result(out, y)


from ._functional_b import *  # noqa: E402,F401,F403  (part B: advanced indexing, embedding, grouped / fp8 GEMM)

# Part A (optimizer steps, gradient utilities, sampling, ternary ops, factories): _functional_a.py.
from ._functional_a import *  # noqa: E402,F401,F403
from ._functional_a import __all__ as _all_a  # noqa: E402
__all__ += _all_a

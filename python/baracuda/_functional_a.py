"""The functional layer, part A: multi-tensor optimizer steps (SGD, Lion,
Adafactor), gradient utilities (global norm, clip_grad_norm_, the AMP
unscale check, foreach scale / zero), sampling (randperm, multinomial), the
ternary elementwise ops (where, clamp, lerp, addcmul, addcdiv) and the
factories arange / linspace. Re-exported by ``baracuda.functional`` and
``baracuda``; the same conventions (``out=``, ``stream=``, the plan cache
``_plan``) as the rest of the functional layer (docs/PYTHON.md)."""
import math as _math
import operator as _op

from . import _C
from .functional import (_plan, _plans, _dtype_name, _out, _result, _is_number, _py_scalar, _scalar_dtype,
                         _need)

__all__ = [
    # optimizers (in place, lists of tensors)
    "sgd_", "lion_", "adafactor_", "adam_", "adamw_",
    # gradient utilities
    "global_norm", "clip_grad_norm_", "non_finite_check_and_unscale_", "foreach_mul_", "foreach_zero_",
    # sampling
    "randperm", "multinomial",
    # ternary elementwise
    "where", "clamp", "clip", "lerp", "addcmul", "addcdiv", "ternary_backward",
    # factories
    "arange", "linspace",
]


# ---- tensor lists ------------------------------------------------------------------------------
def _as_list(op, name, x, allow_none=False):
    if x is None:
        return None
    if _C.is_tensor(x) or isinstance(x, (str, bytes)):
        raise TypeError(f"{op}: {name}: expected a list of tensors")
    if not isinstance(x, list):
        x = list(x)
    if not allow_none and any(t is None for t in x):
        raise TypeError(f"{op}: {name}: expected a list of tensors, got None in it")
    return x


def _prepare_lists(stream, *lists):
    """Imports every tensor of every list (None entries and None lists stay
    None) on one stream; returns (stream, [imported lists])."""
    flat = []
    for lst in lists:
        if lst is not None:
            flat.extend(lst)
    s, views = _C.prepare(tuple(flat), stream)
    out, k = [], 0
    for lst in lists:
        if lst is None:
            out.append(None)
        else:
            out.append(list(views[k:k + len(lst)]))
            k += len(lst)
    return s, out


def _shapes(views):
    return tuple(tuple(v.shape) for v in views)


def _list_dtype(op, views, default="float32"):
    return views[0].dtype if views else default


def _check_len(op, n, **lists):
    for name, lst in lists.items():
        if lst is not None and len(lst) != n:
            raise ValueError(f"{op}: {name} has {len(lst)} tensors, params {n}")


def _amp_flags(lrv, gsv, fv):
    return (lrv is not None, gsv is not None, fv is not None)


# ---- optimizers --------------------------------------------------------------------------------
def sgd_(params, grads, momentum_buffers=None, *, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
         maximize=False, buffers_initialized=True, grad_scale=None, found_inf=None, stream=None):
    """One step of torch.optim.SGD over lists of tensors, in place (one
    multi-tensor launch: SgdPlan). ``momentum_buffers`` (float32, the params'
    shapes) is needed iff momentum != 0; pass ``buffers_initialized=False`` at
    the first step (torch's buf = grad). Returns ``params``.
    AMP / capture (torch's fused optimizers' arguments): ``lr`` may be a
    float32 0-d tensor on the device (read by the kernel); ``grad_scale``
    (float32 0-d: grads are divided by it) and ``found_inf`` (float32 0-d:
    nonzero skips the whole step) are read on the device, no host sync."""
    op = "sgd_"
    params, grads = _as_list(op, "params", params), _as_list(op, "grads", grads)
    bufs = _as_list(op, "momentum_buffers", momentum_buffers)
    _check_len(op, len(params), grads=grads, momentum_buffers=bufs)
    P = _plans()
    lr_num = _is_number(lr)
    s, (pv, gv, bv, (lrv, gsv, fv)) = _prepare_lists(stream, params, grads, bufs,
                                                     [None if lr_num else lr, grad_scale, found_inf])
    dt = _list_dtype(op, pv)
    opts = (float(momentum), float(dampening), float(weight_decay), bool(nesterov), bool(maximize))
    flags = _amp_flags(lrv, gsv, fv)
    key = ("sgd", _shapes(pv), dt, opts, flags)
    plan = _plan(P.SgdPlan, key, lambda: P.SgdDescriptor(
        shapes=list(_shapes(pv)), param_dtype=dt, momentum=opts[0], dampening=opts[1], weight_decay=opts[2],
        nesterov=opts[3], maximize=opts[4], device_scalars=flags[0], has_grad_scale=flags[1],
        has_found_inf=flags[2]), s)
    plan.run(stream=s, params=pv, grads=gv, momentum_buffer=bv, buffers_initialized=bool(buffers_initialized),
             lr=float(lr) if lr_num else None, lr_tensor=lrv, grad_scale=gsv, found_inf=fv)
    return params


def lion_(params, grads, exp_avgs, *, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False, grad_scale=None,
          found_inf=None, stream=None):
    """One step of Lion (Chen et al. 2023) over lists of tensors, in place
    (LionPlan): c = b1 m + (1 - b1) g; p *= 1 - lr wd; p -= lr sign(c);
    m = b2 m + (1 - b2) g. ``exp_avgs`` float32. Returns ``params``. ``lr``
    (a tensor too), ``grad_scale``, ``found_inf``: as sgd_."""
    op = "lion_"
    params, grads, ms = _as_list(op, "params", params), _as_list(op, "grads", grads), _as_list(op, "exp_avgs", exp_avgs)
    _check_len(op, len(params), grads=grads, exp_avgs=ms)
    P = _plans()
    lr_num = _is_number(lr)
    s, (pv, gv, mv, (lrv, gsv, fv)) = _prepare_lists(stream, params, grads, ms,
                                                     [None if lr_num else lr, grad_scale, found_inf])
    dt = _list_dtype(op, pv)
    opts = (float(betas[0]), float(betas[1]), float(weight_decay), bool(maximize))
    flags = _amp_flags(lrv, gsv, fv)
    key = ("lion", _shapes(pv), dt, opts, flags)
    plan = _plan(P.LionPlan, key, lambda: P.LionDescriptor(
        shapes=list(_shapes(pv)), param_dtype=dt, beta1=opts[0], beta2=opts[1], weight_decay=opts[2],
        maximize=opts[3], device_scalars=flags[0], has_grad_scale=flags[1], has_found_inf=flags[2]), s)
    plan.run(stream=s, params=pv, grads=gv, exp_avg=mv, lr=float(lr) if lr_num else None, lr_tensor=lrv,
             grad_scale=gsv, found_inf=fv)
    return params


def adafactor_(params, grads, row_vars, col_vars, variances, *, step, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3),
               d=1.0, weight_decay=0.0, maximize=False, stream=None):
    """One step of torch.optim.Adafactor over lists of tensors, in place
    (AdafactorPlan; include/baracuda/ops/optim_adafactor.hpp states the
    formula). ``step``: this update's step number (>= 1). State lists have one
    entry per parameter, None where the parameter has no such state:
    row_vars [.., R, 1] / col_vars [.., 1, C] for rank >= 2, variances (the
    parameter's shape) for rank 0 / 1; all float32. ``eps`` = (eps1, eps2),
    eps1 None: finfo(dtype).eps. Returns ``params``."""
    op = "adafactor_"
    params, grads = _as_list(op, "params", params), _as_list(op, "grads", grads)
    rv = _as_list(op, "row_vars", row_vars, True)
    cv = _as_list(op, "col_vars", col_vars, True)
    vv = _as_list(op, "variances", variances, True)
    _check_len(op, len(params), grads=grads, row_vars=rv, col_vars=cv, variances=vv)
    P = _plans()
    s, (pv, gv, rvv, cvv, vvv) = _prepare_lists(stream, params, grads, rv, cv, vv)
    dt = _list_dtype(op, pv)
    eps1, eps2 = eps
    opts = (float(lr), float(beta2_decay), None if eps1 is None else float(eps1), float(eps2), float(d),
            float(weight_decay), bool(maximize))
    key = ("adafactor", _shapes(pv), dt, opts)
    plan = _plan(P.AdafactorPlan, key, lambda: P.AdafactorDescriptor(
        shapes=list(_shapes(pv)), dtype=dt, lr=opts[0], beta2_decay=opts[1], eps1=opts[2], eps2=opts[3], d=opts[4],
        weight_decay=opts[5], maximize=opts[6]), s)
    plan.run(stream=s, params=pv, grads=gv, row_vars=rvv, col_vars=cvv, variances=vvv, step=_op.index(step))
    return params


def _adam(op, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, betas, eps, weight_decay, amsgrad,
          maximize, decoupled, grad_scale, found_inf, stream):
    params, grads = _as_list(op, "params", params), _as_list(op, "grads", grads)
    m, v = _as_list(op, "exp_avgs", exp_avgs), _as_list(op, "exp_avg_sqs", exp_avg_sqs)
    vmax = _as_list(op, "max_exp_avg_sqs", max_exp_avg_sqs)
    _check_len(op, len(params), grads=grads, exp_avgs=m, exp_avg_sqs=v, max_exp_avg_sqs=vmax)
    P = _plans()
    s, (pv, gv, mv, vv, xv, (gsv, fv)) = _prepare_lists(stream, params, grads, m, v, vmax, [grad_scale, found_inf])
    dt = _list_dtype(op, pv)
    opts = (float(betas[0]), float(betas[1]), float(eps), float(weight_decay), bool(amsgrad), bool(maximize),
            bool(decoupled), gsv is not None, fv is not None)
    key = ("adam", _shapes(pv), dt, opts)
    plan = _plan(P.AdamPlan, key, lambda: P.AdamDescriptor(
        shapes=list(_shapes(pv)), param_dtype=dt, beta1=opts[0], beta2=opts[1], eps=opts[2], weight_decay=opts[3],
        amsgrad=opts[4], maximize=opts[5], decoupled_weight_decay=opts[6], has_grad_scale=opts[7],
        has_found_inf=opts[8]), s)
    plan.run(params=pv, grads=gv, exp_avg=mv, exp_avg_sq=vv, max_exp_avg_sq=xv, lr=float(lr), step=_op.index(step),
             grad_scale=gsv, found_inf=fv, stream=s)
    return params


def adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs=None, *, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
           weight_decay=1e-2, amsgrad=False, maximize=False, grad_scale=None, found_inf=None, stream=None):
    """One step of torch.optim.AdamW over lists of tensors, in place
    (AdamPlan; include/baracuda/ops/optim.hpp). ``step``: the step number
    after torch's increment (>= 1); moments float32; ``max_exp_avg_sqs``
    iff amsgrad. Returns ``params``. ``grad_scale`` / ``found_inf``: as sgd_
    (with found_inf the caller keeps its step count: a skipped step is not
    seen on the host)."""
    return _adam("adamw_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, betas, eps, weight_decay,
                 amsgrad, maximize, True, grad_scale, found_inf, stream)


def adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs=None, *, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
          weight_decay=0.0, amsgrad=False, maximize=False, grad_scale=None, found_inf=None, stream=None):
    """One step of torch.optim.Adam (L2 weight decay) over lists of tensors, in place; as adamw_."""
    return _adam("adam_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step, lr, betas, eps, weight_decay,
                 amsgrad, maximize, False, grad_scale, found_inf, stream)


# ---- gradient utilities ------------------------------------------------------------------------
def _norm_type(op, norm_type):
    if isinstance(norm_type, str) and norm_type.lower() in ("inf", "infinity"):
        return "Inf"
    v = float(norm_type)
    if v == 2.0:
        return "L2"
    if _math.isinf(v) and v > 0:
        return "Inf"
    from ._errors import UnsupportedError
    raise UnsupportedError(f"{op}: norm_type {norm_type!r}: only 2.0 and inf are implemented")


def global_norm(tensors, norm_type=2.0, *, out=None, stream=None):
    """The norm of all tensors together as one vector (torch's
    ``torch.linalg.vector_norm(torch.cat([t.flatten() ...]), norm_type)``;
    2 or inf): a float32 0-d array on the tensors' device. One dtype for the
    list (float32, bfloat16 or float16); f64 accumulation, deterministic."""
    op = "global_norm"
    tensors = _as_list(op, "tensors", tensors)
    nt = _norm_type(op, norm_type)
    P = _plans()
    s, (tv, (ov,)) = _prepare_lists(stream, tensors, [out] if out is not None else [None])
    dt = _list_dtype(op, tv)
    key = ("global_norm", _shapes(tv), dt, nt)
    plan = _plan(P.GlobalNormPlan, key, lambda: P.GlobalNormDescriptor(shapes=list(_shapes(tv)), dtype=dt,
                                                                      norm_type=nt), s)
    y = _out(out, ov, (), "float32", s)
    plan.run(stream=s, tensors=tv, out=y)
    return _result(out, y)


def clip_grad_norm_(grads, max_norm, norm_type=2.0, *, found_inf=None, stream=None):
    """torch.nn.utils.clip_grad_norm_ on a list of gradient tensors (in place):
    total = global_norm(grads, norm_type); grads *= min(max_norm / (total +
    1e-6), 1); returns total (float32 0-d), with no host sync. ``found_inf``
    (float32 0-d, optional) is set to 1 when the norm is not finite (torch's
    error_if_nonfinite needs a host read; this flag does not)."""
    op = "clip_grad_norm_"
    grads = _as_list(op, "grads", grads)
    nt = _norm_type(op, norm_type)
    P = _plans()
    s, (gv, (fv,)) = _prepare_lists(stream, grads, [found_inf])
    dt = _list_dtype(op, gv)
    key = ("clip_grad_norm", _shapes(gv), dt, nt, float(max_norm), fv is not None)
    plan = _plan(P.ClipGradNormPlan, key, lambda: P.ClipGradNormDescriptor(
        shapes=list(_shapes(gv)), dtype=dt, norm_type=nt, max_norm=float(max_norm), has_found_inf=fv is not None), s)
    total = _C.empty((), "float32", s)
    plan.run(stream=s, grads=gv, total_norm=total, found_inf=fv)
    return total


def non_finite_check_and_unscale_(grads, found_inf, inv_scale, *, stream=None):
    """torch._amp_foreach_non_finite_check_and_unscale_: grads *= inv_scale in
    place; found_inf (float32 0-d) set to 1 if any element was inf / NaN."""
    op = "non_finite_check_and_unscale_"
    grads = _as_list(op, "grads", grads)
    P = _plans()
    s, (gv, (fv, iv)) = _prepare_lists(stream, grads, [found_inf, inv_scale])
    _need(op, found_inf=fv, inv_scale=iv)
    dt = _list_dtype(op, gv)
    key = ("unscale", _shapes(gv), dt)
    plan = _plan(P.NonFiniteCheckUnscalePlan, key, lambda: P.TensorListDescriptor(shapes=list(_shapes(gv)), dtype=dt),
                 s)
    plan.run(stream=s, grads=gv, inv_scale=iv, found_inf=fv)
    return grads


def foreach_mul_(tensors, scale, *, stream=None):
    """torch._foreach_mul_(tensors, scale): in place; scale a Python number
    (rounded to float32) or a float32 0-d tensor on the tensors' device."""
    op = "foreach_mul_"
    tensors = _as_list(op, "tensors", tensors)
    num = _is_number(scale)
    P = _plans()
    s, (tv, (sv,)) = _prepare_lists(stream, tensors, [None if num else scale])
    dt = _list_dtype(op, tv)
    key = ("foreach_mul", _shapes(tv), dt, not num)
    plan = _plan(P.MultiTensorScalePlan, key, lambda: P.MultiTensorScaleDescriptor(
        shapes=list(_shapes(tv)), dtype=dt, device_scalar=not num), s)
    plan.run(stream=s, tensors=tv, scale=float(scale) if num else None, scale_tensor=sv)
    return tensors


def foreach_zero_(tensors, *, stream=None):
    """torch._foreach_zero_(tensors): in place."""
    op = "foreach_zero_"
    tensors = _as_list(op, "tensors", tensors)
    P = _plans()
    s, (tv,) = _prepare_lists(stream, tensors)
    dt = _list_dtype(op, tv)
    key = ("foreach_zero", _shapes(tv), dt)
    plan = _plan(P.MultiTensorZeroPlan, key, lambda: P.TensorListDescriptor(shapes=list(_shapes(tv)), dtype=dt), s)
    plan.run(stream=s, tensors=tv)
    return tensors


# ---- sampling ------------------------------------------------------------------------------------
def _gen_stream(out, stream):
    """The stream of a call without inputs: out's device, else stream= (None: the CPU)."""
    if out is not None:
        s, (ov,) = _C.prepare((out,), stream)
        return s, ov
    return (_C.Stream.from_py(stream) if stream is not None else _C.Stream.cpu()), None


def randperm(n, *, seed, offset=0, dtype=None, out=None, stream=None):
    """torch.randperm(n): a uniformly random permutation of 0..n-1, Philox
    keyed by (seed, offset) (no global generator; the same values on the CPU
    and on CUDA). dtype int64 / int32 / float types (n must fit exactly);
    None: out's dtype, else int64."""
    P = _plans()
    s, ov = _gen_stream(out, stream)
    n = _op.index(n)
    dt = _dtype_name(dtype) if dtype is not None else ov.dtype if ov is not None else "int64"
    plan = _plan(P.RandpermPlan, ("randperm", n, dt), lambda: P.RandpermDescriptor(n=n, dtype=dt), s)
    y = _out(out, ov, (n,), dt, s)
    plan.run(stream=s, seed=(int(seed), int(offset)), out=y)
    return _result(out, y)


def multinomial(input, num_samples, replacement=False, *, seed, offset=0, dtype=None, out=None, stream=None):
    """torch.multinomial(input, num_samples, replacement): category indices
    drawn from the non-negative weights of each row of input ([C] or [R, C]),
    Philox keyed by (seed, offset). Bad rows (negative / non-finite weights,
    zero sum, too few positive weights without replacement) raise on the
    CPU; on CUDA their samples are -1 (no host sync: the plan layer's
    MultinomialPlan.check_probs reports them). num_samples = 0 is allowed.
    dtype int64 or int32 (None: out's, else int64)."""
    P = _plans()
    s, (pv, ov) = _C.prepare((input, out), stream)
    _need("multinomial", input=pv)
    k = _op.index(num_samples)
    dt = _dtype_name(dtype) if dtype is not None else ov.dtype if ov is not None else "int64"
    key = ("multinomial", pv.dtype, tuple(pv.shape), k, bool(replacement), dt)
    plan = _plan(P.MultinomialPlan, key, lambda: P.MultinomialDescriptor(
        dtype=pv.dtype, probs_shape=pv.shape, num_samples=k, replacement=bool(replacement), out_dtype=dt), s)
    y = _out(out, ov, plan.out_shape, dt, s)
    plan.run(stream=s, seed=(int(seed), int(offset)), probs=pv, out=y)
    return _result(out, y)


# ---- ternary elementwise -------------------------------------------------------------------------
def _ternary(op, a, b, c, out, stream, alpha=None):
    """a, b, c: tensors, Python numbers, or None (absent: clamp's bounds)."""
    P = _plans()
    ops = (a, b, c)
    kinds = []
    for x in ops:
        kinds.append("absent" if x is None else "scalar" if _is_number(x) else "tensor")
    vals = [_py_scalar(x) if k == "scalar" else None for x, k in zip(ops, kinds)]
    s, views = _C.prepare(tuple(x if k == "tensor" else None for x, k in zip(ops, kinds)) + (out,), stream)
    ov = views[3]

    def kkey(k, v, view):
        if k == "tensor":
            return (view.dtype, tuple(view.shape))
        return (k, _scalar_dtype(v)) if k == "scalar" else (k,)

    key = (op,) + tuple(kkey(k, v, w) for k, v, w in zip(kinds, vals, views)) + (alpha,)

    def operand(k, v, view):
        if k == "tensor":
            return P.ElementwiseOperand.tensor(view.dtype, view.shape)
        if k == "scalar":
            return P.ElementwiseOperand.scalar(_scalar_dtype(v))
        return P.ElementwiseOperand.absent()

    def make():
        a_, b_, c_ = (operand(k, v, w) for k, v, w in zip(kinds, vals, views))
        return P.TernaryDescriptor(op=op, a=a_, b=b_, c=c_, alpha=alpha)

    plan = _plan(P.TernaryPlan, key, make, s)
    y = _out(out, ov, plan.output_shape, plan.out_dtype, s)
    plan.run(stream=s, a=views[0], b=views[1], c=views[2], a_value=vals[0], b_value=vals[1], c_value=vals[2], out=y)
    return _result(out, y)


def where(condition, input, other, *, out=None, stream=None):
    """torch.where(condition, input, other): condition bool (broadcasts);
    input / other tensors or Python numbers (result_type of the two)."""
    if condition is None or _is_number(condition):
        raise TypeError("where: condition must be a bool tensor")
    if input is None or other is None:
        raise TypeError("where: input and other must be tensors or numbers")
    return _ternary("where", condition, input, other, out, stream)


def clamp(input, min=None, max=None, *, out=None, stream=None):
    """torch.clamp(input, min=None, max=None): each bound a tensor
    (broadcasts), a Python number or None; min > max gives max (torch's
    rule). NaN propagates."""
    if input is None or _is_number(input):
        raise TypeError("clamp: input must be a tensor")
    if min is None and max is None:
        from ._errors import InvalidProblemError
        raise InvalidProblemError("clamp: at least one of 'min' or 'max' must not be None")
    return _ternary("clamp", input, min, max, out, stream)


clip = clamp


def lerp(input, end, weight, *, out=None, stream=None):
    """torch.lerp(input, end, weight): input + weight * (end - input);
    weight a tensor or a Python number; floating types only."""
    if input is None or end is None or weight is None:
        raise TypeError("lerp: input, end and weight must be given")
    return _ternary("lerp", input, end, weight, out, stream)


def addcmul(input, tensor1, tensor2, *, value=1, out=None, stream=None):
    """torch.addcmul: input + value * tensor1 * tensor2 (value part of the cached key)."""
    if input is None or tensor1 is None or tensor2 is None:
        raise TypeError("addcmul: input, tensor1 and tensor2 must be given")
    return _ternary("addcmul", input, tensor1, tensor2, out, stream, alpha=float(value))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None, stream=None):
    """torch.addcdiv: input + value * tensor1 / tensor2 (floating types; value part of the cached key)."""
    if input is None or tensor1 is None or tensor2 is None:
        raise TypeError("addcdiv: input, tensor1 and tensor2 must be given")
    return _ternary("addcdiv", input, tensor1, tensor2, out, stream, alpha=float(value))


# Which operands each operand's gradient reads (include/baracuda/ops/elementwise.hpp,
# "binary and ternary backward"): the plan takes exactly those.
_TERNARY_READS = {
    "where": ({"a"}, {"a"}, {"a"}),
    "clamp": ({"a", "b", "c"}, {"a", "b", "c"}, {"a", "b", "c"}),
    "lerp": ({"c"}, {"c"}, {"a", "b"}),
    "addcmul": (set(), {"c"}, {"b"}),
    "addcdiv": (set(), {"c"}, {"b", "c"}),
}


def ternary_backward(op, grad_output, a, b, c, *, value=None, output_mask=(True, True, True), stream=None):
    """The gradients (da, db, dc) of ternary op ``op`` ("where", "clamp",
    "lerp", "addcmul", "addcdiv"; a, b, c as the forward's operands:
    tensors, Python numbers, None for clamp's absent bounds; ``value`` the
    forward's addcmul / addcdiv value) from ``grad_output`` (the forward
    output's shape and dtype). A gradient comes back only for a tensor
    operand whose output_mask entry is set (where's condition has none);
    the others are None. A broadcast operand's gradient is summed to its
    shape (TernaryBackwardPlan; torch's sum_to_size), deterministically."""
    if op not in _TERNARY_READS:
        raise ValueError(f"ternary_backward: op must be one of {sorted(_TERNARY_READS)}, got {op!r}")
    P = _plans()
    ops = (a, b, c)
    kinds = ["absent" if x is None else "scalar" if _is_number(x) else "tensor" for x in ops]
    vals = [_py_scalar(x) if k == "scalar" else None for x, k in zip(ops, kinds)]
    need = [bool(m) and k == "tensor" and not (op == "where" and i == 0)
            for i, (m, k) in enumerate(zip(output_mask, kinds))]
    if not any(need):
        return (None, None, None)
    reads = set()
    for i in range(3):
        if need[i]:
            reads |= _TERNARY_READS[op][i]
    s, views = _C.prepare((grad_output,) + tuple(x if k == "tensor" else None for x, k in zip(ops, kinds)), stream)
    dyv, ov = views[0], views[1:]
    _need("ternary_backward", grad_output=dyv)
    alpha = None if value is None else float(value)

    def kkey(k, v, w):
        return (w.dtype, tuple(w.shape)) if k == "tensor" else (k, _scalar_dtype(v)) if k == "scalar" else (k,)

    key = ("ternary_bwd", op) + tuple(kkey(k, v, w) for k, v, w in zip(kinds, vals, ov)) + (alpha, tuple(need))

    def operand(k, v, w):
        if k == "tensor":
            return P.ElementwiseOperand.tensor(w.dtype, w.shape)
        if k == "scalar":
            return P.ElementwiseOperand.scalar(_scalar_dtype(v))
        return P.ElementwiseOperand.absent()

    def make():
        a_, b_, c_ = (operand(k, v, w) for k, v, w in zip(kinds, vals, ov))
        return P.TernaryBackwardDescriptor(forward=P.TernaryDescriptor(op=op, a=a_, b=b_, c=c_, alpha=alpha),
                                           need_a=need[0], need_b=need[1], need_c=need[2])

    plan = _plan(P.TernaryBackwardPlan, key, make, s)
    grads = [_C.empty(ov[i].shape, ov[i].dtype, s) if need[i] else None for i in range(3)]
    given = ["abc"[i] in reads for i in range(3)]
    t = [ov[i] if given[i] and kinds[i] == "tensor" else None for i in range(3)]
    sv = [vals[i] if given[i] and kinds[i] == "scalar" else None for i in range(3)]
    plan.run(stream=s, dy=dyv, a=t[0], b=t[1], c=t[2], a_value=sv[0], b_value=sv[1], c_value=sv[2], da=grads[0],
             db=grads[1], dc=grads[2])
    return tuple(grads)


# ---- factories -----------------------------------------------------------------------------------
def _factory_scalar(op, name, x):
    if not _is_number(x):
        raise TypeError(f"{op}: {name} must be a Python number")
    return _py_scalar(x)


def arange(start=0, end=None, step=1, *, dtype=None, out=None, stream=None):
    """torch.arange(start=0, end, step=1) (``arange(end)`` as torch): a 1-D
    array of ceil((end - start) / step) values start + i * step. dtype None:
    int64 when start, end and step are all integers, else float32 (torch's
    default dtype); with out= given, out's dtype. On out's device, else the
    stream's (default: the CPU)."""
    if end is None:
        start, end = 0, start
    start, end, step = (_factory_scalar("arange", n, x) for n, x in (("start", start), ("end", end), ("step", step)))
    if dtype is None and out is not None:
        dtype = _C.prepare((out,), stream)[1][0].dtype
    if dtype is None:
        dtype = "int64" if all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end, step)) \
            else "float32"
    dt = _dtype_name(dtype)
    P = _plans()
    s, ov = _gen_stream(out, stream)
    key = ("arange", dt, (type(start), start), (type(end), end), (type(step), step))
    plan = _plan(P.FactoryPlan, key, lambda: P.FactoryDescriptor(op="arange", dtype=dt, start=start, end=end,
                                                                 step=step), s)
    y = _out(out, ov, plan.output_shape, dt, s)
    plan.run(stream=s, out=y)
    return _result(out, y)


def linspace(start, end, steps, *, dtype=None, out=None, stream=None):
    """torch.linspace(start, end, steps): steps values from start to end
    (PyTorch's symmetric formula); dtype None: out's, else float32."""
    start, end = _factory_scalar("linspace", "start", start), _factory_scalar("linspace", "end", end)
    steps = _op.index(steps)
    P = _plans()
    s, ov = _gen_stream(out, stream)
    dt = _dtype_name(dtype) if dtype is not None else ov.dtype if ov is not None else "float32"
    key = ("linspace", dt, (type(start), start), (type(end), end), steps)
    plan = _plan(P.FactoryPlan, key, lambda: P.FactoryDescriptor(op="linspace", dtype=dt, start=start, end=end,
                                                                 steps=steps), s)
    y = _out(out, ov, plan.output_shape, dt, s)
    plan.run(stream=s, out=y)
    return _result(out, y)

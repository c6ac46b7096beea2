"""Functional ops, part B: advanced indexing (aten::index / index_put), embedding,
the grouped (mixture-of-experts) linear and the fp8 GEMM (torch._scaled_mm).
Re-exported by ``baracuda.functional`` and ``baracuda`` (docs/PYTHON.md)."""
from . import _C
from .functional import _need, _out, _plan, _plans, _result, _is_number, _py_scalar, _dtype_name, _activation

__all__ = ["index_get", "index_put", "index_put_", "embedding", "embedding_backward", "grouped_linear",
           "grouped_linear_backward", "scaled_mm"]


# ---- advanced indexing ------------------------------------------------------------------------
def _index_list(op, indices):
    if indices is None or _C.is_tensor(indices) or _is_number(indices):
        return [indices] if indices is not None else []
    if not isinstance(indices, (list, tuple)):
        raise TypeError(f"{op}: indices must be a list / tuple of tensors or None (one per dim), or one tensor")
    return list(indices)


def _resolve_indices(op, entries, views, s):
    """The index list of the plan: None (a full slice) or an integer tensor per dim.
    Bool masks become the columns of their nonzero() (a host sync on CUDA, as torch);
    Python ints become 0-d index tensors (aten::index's rule for 0-d tensors)."""
    from ._errors import InvalidProblemError
    from .functional import nonzero
    int_dt = next((v.dtype for v in views if v is not None and v.dtype in ("int32", "int64")), "int64")
    out = []
    vi = iter(views)
    for e in entries:
        if e is None:
            out.append(None)
        elif e is Ellipsis:
            raise InvalidProblemError(f"{op}: Ellipsis is not taken (indices are aten::index's: None = a full slice)")
        elif _is_number(e):
            if isinstance(e, bool) or not isinstance(_py_scalar(e), int):
                raise TypeError(f"{op}: a number index must be an int, got {e!r}")
            out.append(_C.full((), _py_scalar(e), int_dt, s))
        else:
            v = next(vi)
            if v.dtype == "bool":
                if len(v.shape) == 0:
                    raise InvalidProblemError(f"{op}: a 0-d bool index is not supported")
                out.extend(nonzero(v, as_tuple=True, stream=s))
            else:
                out.append(v)
    return out


def _prepare_index(op, input, indices, extra, stream):
    entries = _index_list(op, indices)
    tensors = [e for e in entries if e is not None and e is not Ellipsis and not _is_number(e)]
    s, vs = _C.prepare(tuple(extra) + tuple(tensors), stream)
    head, iv = vs[:len(extra)], vs[len(extra):]
    return s, head, _resolve_indices(op, entries, iv, s)


def _index_key(xv, idx):
    dt = next((v.dtype for v in idx if v is not None), "int64")
    shapes = tuple(None if v is None else tuple(v.shape) for v in idx)
    return dt, shapes


def index_get(input, indices, *, out=None, stream=None):
    """aten::index / x[idx0, idx1, ...] with index tensors: `indices` a list with an entry
    per leading dim of input, None for a full slice ``:`` (missing trailing entries are
    slices too), an int32 / int64 tensor (the tensors broadcast together; negative values
    count from the end), a bool mask (its nonzero() columns: a host sync on CUDA, as torch)
    or a Python int (a 0-d index). Result shape: torch's rule (the broadcast index shape in
    place of adjacent indexed dims, in front when they are not adjacent)."""
    P = _plans()
    s, (xv, ov), idx = _prepare_index("index_get", input, indices, (input, out), stream)
    _need("index_get", input=xv)
    dt, shapes = _index_key(xv, idx)
    rank = len(xv.shape)
    shapes = shapes + (None,) * max(0, rank - len(shapes))
    key = (xv.dtype, tuple(xv.shape), dt, shapes)
    plan = _plan(P.IndexGetPlan, key, lambda: P.IndexGetDescriptor(
        dtype=xv.dtype, index_dtype=dt, self_shape=xv.shape, index_shapes=list(shapes)), s)
    y = _out(out, ov, plan.out_shape, xv.dtype, s)
    plan.run(stream=s, x=xv, indices=idx, out=y)
    return _result(out, y)


def index_put(input, indices, values, accumulate=False, *, out=None, stream=None):
    """torch.index_put (aten::index_put): out = input, then out[indices] = values (or +=
    with accumulate). indices as index_get's; values broadcast to the indexed shape, or a
    Python number. Duplicates: the last position in row-major order wins without
    accumulate (torch leaves it undefined); accumulate sums in position order
    (deterministic). out=input works in place (index_put_)."""
    P = _plans()
    vnum = _is_number(values)
    extra = (input, out) if vnum else (input, out, values)
    s, head, idx = _prepare_index("index_put", input, indices, extra, stream)
    xv, ov = head[0], head[1]
    _need("index_put", input=xv)
    vv = _C.full((), _py_scalar(values), xv.dtype, s) if vnum else head[2]
    _need("index_put", values=vv)
    dt, shapes = _index_key(xv, idx)
    rank = len(xv.shape)
    shapes = shapes + (None,) * max(0, rank - len(shapes))
    key = (xv.dtype, tuple(xv.shape), dt, shapes, tuple(vv.shape), bool(accumulate))
    plan = _plan(P.IndexPutPlan, key, lambda: P.IndexPutDescriptor(
        dtype=xv.dtype, index_dtype=dt, self_shape=xv.shape, index_shapes=list(shapes), values_shape=vv.shape,
        accumulate=bool(accumulate)), s)
    y = _out(out, ov, xv.shape, xv.dtype, s)
    plan.run(stream=s, input=xv, indices=idx, values=vv, out=y)
    return _result(out, y)


def index_put_(input, indices, values, accumulate=False, *, stream=None):
    """Tensor.index_put_: index_put in place (returns input)."""
    return index_put(input, indices, values, accumulate, out=input, stream=stream)


# ---- embedding ---------------------------------------------------------------------------------
def _checked_run(plan, s, check, **tensors):
    """run(); with check=True on CUDA, with an explicit workspace and then check_indices
    (a stream synchronization) so a bad index raises as on the CPU."""
    if check and plan.workspace_size > 0 and plan.device != "cpu":
        ws = _C.empty((plan.workspace_size,), "uint8", s)
        plan.run(stream=s, workspace=ws, **tensors)
        plan.check_indices(ws, stream=s)
    else:
        plan.run(stream=s, **tensors)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False, *, check_indices=False, out=None, stream=None):
    """torch.nn.functional.embedding: out = weight[input] ([*input.shape, D]); indices int32 /
    int64 in [0, V) (no negative index, as torch). A bad index raises InvalidProblemError on
    the CPU; on CUDA the call does not synchronize to check (the row is zeros) unless
    check_indices=True (then it synchronizes the stream and raises as the CPU).
    padding_idx only matters for the gradient (embedding_backward). max_norm,
    scale_grad_by_freq and sparse are not supported (UnsupportedError)."""
    from ._errors import UnsupportedError
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise UnsupportedError("embedding: max_norm, scale_grad_by_freq and sparse are not supported")
    P = _plans()
    s, (iv, wv, ov) = _C.prepare((input, weight, out), stream)
    _need("embedding", input=iv, weight=wv)
    if len(wv.shape) != 2:
        from ._errors import InvalidProblemError
        raise InvalidProblemError(f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got {wv.shape}")
    V, D = wv.shape
    has_pad = padding_idx is not None
    key = (wv.dtype, iv.dtype, V, D, tuple(iv.shape), has_pad, int(padding_idx) if has_pad else 0)
    plan = _plan(P.EmbeddingPlan, key, lambda: P.EmbeddingDescriptor(
        dtype=wv.dtype, index_dtype=iv.dtype, num_embeddings=V, embedding_dim=D, index_shape=iv.shape,
        has_padding_idx=has_pad, padding_idx=int(padding_idx) if has_pad else 0), s)
    y = _out(out, ov, plan.out_shape, wv.dtype, s)
    _checked_run(plan, s, check_indices, weight=wv, indices=iv, out=y)
    return _result(out, y)


def embedding_backward(grad_output, input, num_embeddings, padding_idx=None, *, grad_dtype=None,
                       check_indices=False, out=None, stream=None):
    """The dense weight gradient of embedding ([V, D]): the rows of grad_output summed per
    index in position order (deterministic, no atomics); padding_idx's row and rows never
    indexed are zero. grad_dtype: grad_output's dtype (default) or 'float32' for a 16-bit
    table. Bad indices as embedding's."""
    P = _plans()
    s, (gv, iv, ov) = _C.prepare((grad_output, input, out), stream)
    _need("embedding_backward", grad_output=gv, input=iv)
    D = gv.shape[-1] if len(gv.shape) else 0
    gdt = gv.dtype if grad_dtype is None else _dtype_name(grad_dtype)
    has_pad = padding_idx is not None
    V = int(num_embeddings)
    key = (gv.dtype, iv.dtype, V, D, tuple(iv.shape), has_pad, int(padding_idx) if has_pad else 0, gdt)

    def desc():
        f = P.EmbeddingDescriptor(dtype=gv.dtype, index_dtype=iv.dtype, num_embeddings=V, embedding_dim=D,
                                  index_shape=iv.shape, has_padding_idx=has_pad,
                                  padding_idx=int(padding_idx) if has_pad else 0)
        return P.EmbeddingBackwardDescriptor(forward=f, grad_dtype=gdt, layout="dense")

    plan = _plan(P.EmbeddingBackwardPlan, key, desc, s)
    y = _out(out, ov, plan.dweight_shape, gdt, s)
    _checked_run(plan, s, check_indices, indices=iv, dout=gv, dweight=y)
    return _result(out, y)


# ---- grouped linear (mixture of experts) ----------------------------------------------------------
def _offsets_host(op, offsets):
    """offsets as a host int64 tensor: a list / tuple of ints (through NumPy), or any CPU tensor."""
    if isinstance(offsets, (list, tuple)):
        a = _C.empty((len(offsets),), "int64", None)
        a.numpy()[:] = [int(o) for o in offsets]
        return a
    return offsets


def grouped_linear(input, weight, offsets, bias=None, activation=None, *, return_aux=False, out=None,
                   stream=None):
    """G linear problems over one token buffer sorted by group (a mixture-of-experts layer):
    rows offsets[g]:offsets[g+1] of input [T, K] use weight[g] ([G, N, K], nn.Linear's
    layout) and bias[g] ([G, N]); y [T, N]. A 2-D weight [N, K] (and bias [N]) is shared by
    every group. offsets: G + 1 non-decreasing ints from 0 (a list, or a host int64 tensor:
    read on the host, no device sync); rows past offsets[G] are not written (the result is
    allocated uninitialised there). activation / return_aux as linear's."""
    from ._errors import InvalidProblemError
    P = _plans()
    act = _activation(activation)
    offs = _offsets_host("grouped_linear", offsets)
    s, (xv, wv, bv, ov) = _C.prepare((input, weight, bias, out), stream)
    _need("grouped_linear", input=xv, weight=wv)
    shared = len(wv.shape) == 2
    if len(xv.shape) != 2 or len(wv.shape) not in (2, 3):
        raise InvalidProblemError(f"grouped_linear: input must be [T, K] and weight [G, N, K] or [N, K], got "
                                  f"{xv.shape} and {wv.shape}")
    n_off = len(offsets) if isinstance(offsets, (list, tuple)) else offs.shape[0]
    G = n_off - 1
    aux = return_aux and act in ("gelu", "gelu_tanh")
    key = (xv.dtype, tuple(xv.shape), tuple(wv.shape), G, bv is not None, act, aux)
    plan = _plan(P.GroupedLinearPlan, key, lambda: P.GroupedLinearDescriptor(
        dtype=xv.dtype, groups=G, in_features=xv.shape[1], out_features=wv.shape[-2], capacity=xv.shape[0],
        shared_weight=shared, has_bias=bv is not None, activation=act, save_aux=aux), s)
    y = _out(out, ov, plan.y_shape, xv.dtype, s)
    a = _C.empty(plan.y_shape, xv.dtype, s) if aux else None
    plan.run(stream=s, x=xv, offsets=offs, weight=wv, bias=bv, y=y, aux=a)
    y = _result(out, y)
    return (y, a) if return_aux else y


def grouped_linear_backward(grad_output, input, weight, offsets, *, has_bias=True, activation=None, aux=None,
                            output_mask=(True, True, True), stream=None):
    """(dx, dw, db) of grouped_linear (None where output_mask is False or there is no bias);
    aux: the forward's pre-activation for gelu / gelu_tanh, its output for relu. Rows of dx
    past offsets[G] are not written; an empty group's dw / db are zeros."""
    P = _plans()
    act = _activation(activation)
    offs = _offsets_host("grouped_linear_backward", offsets)
    s, (gv, xv, wv, av) = _C.prepare((grad_output, input, weight, aux), stream)
    _need("grouped_linear_backward", grad_output=gv, input=xv, weight=wv)
    n_off = len(offsets) if isinstance(offsets, (list, tuple)) else offs.shape[0]
    G = n_off - 1
    need_dx, need_dw, need_db = (bool(m) for m in output_mask)
    need_db = need_db and bool(has_bias)
    key = (gv.dtype, tuple(xv.shape), tuple(wv.shape), G, bool(has_bias), act, need_dx, need_dw, need_db)

    def desc():
        f = P.GroupedLinearDescriptor(dtype=gv.dtype, groups=G, in_features=xv.shape[1], out_features=wv.shape[-2],
                                      capacity=xv.shape[0], shared_weight=len(wv.shape) == 2,
                                      has_bias=bool(has_bias), activation=act)
        return P.GroupedLinearBackwardDescriptor(forward=f, need_dx=need_dx, need_dw=need_dw, need_db=need_db)

    plan = _plan(P.GroupedLinearBackwardPlan, key, desc, s)
    dx = _C.empty(plan.x_shape, gv.dtype, s) if need_dx else None
    dw = _C.empty(plan.weight_shape, gv.dtype, s) if need_dw else None
    db = _C.empty(plan.bias_shape, gv.dtype, s) if need_db else None
    plan.run(stream=s, dy=gv, offsets=offs, x=xv if need_dw else None, weight=wv if need_dx else None,
             aux=av if act != "none" else None, dx=dx, dw=dw, db=db)
    return dx, dw, db


# ---- fp8 GEMM ---------------------------------------------------------------------------------
_TORCH_FP8 = {"torch.float8_e4m3fn": "float8_e4m3fn", "torch.float8_e5m2": "float8_e5m2"}


def _fp8_as_bytes(t):
    """A torch fp8 tensor as its uint8 view and the fp8 dtype's name (torch < 2.7's
    __dlpack__ refuses float8); anything else unchanged."""
    name = _TORCH_FP8.get(str(getattr(t, "dtype", "")))
    if name is None or not type(t).__module__.startswith("torch"):
        return t, None
    import sys
    return t.detach().view(sys.modules["torch"].uint8), name


def scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype="bfloat16", *, activation=None, use_fast_accum=False,
              out=None, stream=None):
    """torch._scaled_mm: out = scale_a * scale_b * (a @ b) + bias with a [M, K] and b [K, N]
    fp8 (float8_e4m3fn / float8_e5m2, not both e5m2), out bf16 / f16 / f32. Scales are
    float32 dequantization factors: both one element (per tensor) or scale_a [M] / [M, 1]
    and scale_b [N] / [1, N] (row-wise). CUDA needs sm_89+, b the transposed view of a
    row-major [N, K] weight, K and N multiples of 16 (as torch); the CPU reference takes any."""
    from ._errors import InvalidProblemError
    P = _plans()
    a, a8 = _fp8_as_bytes(a)
    b, b8 = _fp8_as_bytes(b)
    s, (av, bv, sav, sbv, biv, ov) = _C.prepare((a, b, scale_a, scale_b, bias, out), stream)
    if a8:
        av = _C._reinterpret_view(av, a8)
    if b8:
        bv = _C._reinterpret_view(bv, b8)
    _need("scaled_mm", a=av, b=bv, scale_a=sav, scale_b=sbv)
    if len(av.shape) != 2 or len(bv.shape) != 2:
        raise InvalidProblemError(f"scaled_mm: a and b must be 2-D, got {av.shape} and {bv.shape}")
    nsa = 1
    for e in sav.shape:
        nsa *= e
    nsb = 1
    for e in sbv.shape:
        nsb *= e
    row = not (nsa == 1 and nsb == 1)
    odt = _dtype_name(out_dtype)
    act = _activation(activation)
    key = (av.dtype, bv.dtype, odt, tuple(av.shape), tuple(bv.shape), row, biv is not None, act,
           bool(use_fast_accum))
    plan = _plan(P.ScaledMatmulPlan, key, lambda: P.ScaledMatmulDescriptor(
        a_dtype=av.dtype, b_dtype=bv.dtype, out_dtype=odt, a_shape=av.shape, b_shape=bv.shape,
        scaling="row" if row else "tensor", has_bias=biv is not None, activation=act,
        fast_accum=bool(use_fast_accum)), s)
    # torch's [M, 1] / [1, N] (and [1, 1]) scales: the plan's [M] / [N] / [1] through a reshape of the view
    sav = _C._reshape_view(sav, plan.a_scale_shape)
    sbv = _C._reshape_view(sbv, plan.b_scale_shape)
    y = _out(out, ov, plan.out_shape, odt, s)
    plan.run(stream=s, a=av, b=bv, a_scale=sav, b_scale=sbv, bias=biv, out=y)
    return _result(out, y)

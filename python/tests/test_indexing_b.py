"""Part B on the CPU against torch: advanced indexing (index_get / index_put / index_put_
against aten::index / index_put and x[...]), embedding (+ its backward), the grouped
linear and the fp8 GEMM (CPU reference) through the functional and plan layers;
errors, zero-size, non-contiguous inputs, int32 indices."""
import numpy as np
import pytest

import baracuda as bc
from baracuda import plans as P
from conftest import HAVE_TORCH

pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")
if HAVE_TORCH:
    import torch
    import torch.nn.functional as F


def tt(a):
    return torch.from_dlpack(a)


def aten_idx(idx):
    return [torch.tensor(e) if isinstance(e, int) else e for e in idx]


# ---- index_get ---------------------------------------------------------------------------------
def _patterns():
    i = torch.tensor([0, 1, 1])
    j = torch.tensor([[2], [-1]])
    return [
        [i],
        [None, i],
        [i, None, j],            # not adjacent: the broadcast dims in front
        [None, j, torch.tensor([3, 0, 1])],  # adjacent: in place
        [torch.tensor(1), None, i],          # a 0-d index: aten::index's rule
        [None, torch.tensor([True, False, True])],  # a bool mask: its nonzero() columns
        [2],                     # a Python int: a 0-d index
        [i, j, torch.tensor([0])],
        [None, None, torch.tensor([[0, 3], [1, 2]])],
    ]


@pytest.mark.parametrize("k", range(9))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.bool]
                         if HAVE_TORCH else [])
def test_index_get_patterns(k, dtype):
    x = (torch.randn(3, 3, 4) * 4).to(dtype)
    idx = _patterns()[k]
    ref = torch.ops.aten.index(x, aten_idx(idx))
    y = tt(bc.index_get(x, idx))
    assert y.shape == ref.shape and torch.equal(y, ref)


def test_index_get_matches_getitem():
    x = torch.randn(4, 5, 6)
    i, j = torch.tensor([3, 0]), torch.tensor([[1], [4]])
    assert torch.equal(tt(bc.index_get(x, [i, j])), x[i, j])
    assert torch.equal(tt(bc.index_get(x, [None, i, j])), x[:, i, j])
    assert torch.equal(tt(bc.index_get(x, [i, None, j])), x[i, :, j])
    assert torch.equal(tt(bc.index_get(x, i)), x[i])  # one tensor: indexes dim 0
    m = torch.rand(4, 5) > 0.5
    assert torch.equal(tt(bc.index_get(x, [m])), x[m])


def test_index_get_int32_negative_noncontiguous():
    x = torch.randn(6, 5).t()  # transposed view [5, 6]
    i = torch.tensor([[-1, 0, 2, -5]], dtype=torch.int32)[:, ::2]  # strided, int32
    assert torch.equal(tt(bc.index_get(x, [i])), x[i.long()])
    assert torch.equal(tt(bc.index_get(x, [None, i])), x[:, i.long()])


def test_index_get_zero_size():
    x = torch.randn(3, 4)
    e = torch.empty(0, dtype=torch.long)
    assert tt(bc.index_get(x, [e])).shape == (0, 4)
    assert tt(bc.index_get(x, [None, e])).shape == (3, 0)
    z = torch.randn(0, 4)
    assert tt(bc.index_get(z, [None, torch.tensor([1, 2])])).shape == (0, 2)


def test_index_get_out():
    x = torch.randn(3, 4)
    o = torch.empty(2, 4)
    r = bc.index_get(x, [torch.tensor([2, 0])], out=o)
    assert r is o and torch.equal(o, x[[2, 0]])


def test_index_get_errors():
    x = torch.randn(3, 4)
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [torch.tensor([0, 3])])           # out of range
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [None, torch.tensor([-5])])       # out of range (negative)
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [torch.tensor([0, 1]), torch.tensor([0, 1, 2])])  # do not broadcast
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [torch.tensor([0]), torch.tensor([0], dtype=torch.int32)])  # mixed index dtypes
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [None, None])                     # nothing indexed
    with pytest.raises(bc.Error, match=r"^IndexGetPlan"):
        bc.index_get(x, [None, None, torch.tensor([0])])  # more indices than dims
    with pytest.raises(bc.Error, match=r"^IndexGetPlan"):
        bc.index_get(x, [torch.tensor([0.5])])            # a float index
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        bc.index_get(x, [torch.tensor([0])], out=torch.empty(2, 4))  # wrong out shape
    with pytest.raises(TypeError):
        bc.index_get(x, "nope")
    with pytest.raises(TypeError):
        bc.index_get(x, [1.5])


# ---- index_put -----------------------------------------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64] if HAVE_TORCH else [])
def test_index_put(accumulate, dtype):
    torch.manual_seed(0)
    x = (torch.randn(4, 3, 5) * 3).to(dtype)
    i = torch.tensor([3, 0, 1])
    j = torch.tensor([[4], [2]])
    for idx, vshape in (([i], (3, 3, 5)), ([i, None, j], (2, 3, 3)), ([None, torch.tensor([2, 0]), j], (2, 2)),
                        ([None, torch.tensor([2, 0, 2])], (1, 5)), ([i], ())):
        v = (torch.randn(vshape) * 3).to(dtype)
        ref = torch.ops.aten.index_put(x, idx, v, accumulate)
        y = tt(bc.index_put(x, idx, v, accumulate=accumulate))
        if dtype == torch.bfloat16 and accumulate:  # the plan sums in f32 and rounds once (torch: in bf16)
            ref = torch.ops.aten.index_put(x.double(), idx, v.double(), True).to(dtype)
            torch.testing.assert_close(y, ref, rtol=1e-2, atol=1e-2)
        else:
            assert torch.equal(y, ref), idx


def test_index_put_duplicates():
    x = torch.zeros(5, dtype=torch.float64)
    i = torch.tensor([1, 3, 1, 1, -1])
    v = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    # accumulate: summed in position order
    assert torch.equal(tt(bc.index_put(x, [i], v, accumulate=True)), x.index_put([i], v, accumulate=True))
    # no accumulate: the last position wins (torch: undefined)
    assert tt(bc.index_put(x, [i], v)).tolist() == [0.0, 4.0, 0.0, 2.0, 5.0]


def test_index_put_inplace_and_scalar():
    x = torch.randn(3, 4)
    ref = x.clone().index_put_([torch.tensor([0, 2])], torch.tensor(7.0))
    r = bc.index_put_(x, [torch.tensor([0, 2])], 7.0)
    assert r is x and torch.equal(x, ref)
    ref = torch.ops.aten.index_put(x, [None, torch.tensor([1, 1])], torch.ones(3, 2), True)
    bc.index_put(x, [None, torch.tensor([1, 1])], torch.ones(3, 2), accumulate=True, out=x)
    assert torch.equal(x, ref)


def test_index_put_noncontiguous_zero_size():
    x = torch.randn(5, 4).t()  # [4, 5] transposed
    i = torch.tensor([4, 0, 2, 2])[::2]
    v = torch.randn(2, 4).t()  # [4, 2], transposed
    assert torch.equal(tt(bc.index_put(x, [None, i], v, accumulate=True)),
                       torch.ops.aten.index_put(x, [None, i], v, True))
    e = torch.empty(0, dtype=torch.long)
    assert torch.equal(tt(bc.index_put(x, [e], torch.empty(0, 5))), x)
    z = torch.randn(0, 3)
    assert tt(bc.index_put(z, [None, torch.tensor([1])], 1.0)).shape == (0, 3)


def test_index_put_errors():
    x = torch.randn(3, 4)
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexPutPlan"):
        bc.index_put(x, [torch.tensor([0, 3])], 1.0)
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexPutPlan"):
        bc.index_put(x, [torch.tensor([0, 1])], torch.ones(3, 4))  # values do not broadcast
    with pytest.raises(bc.UnsupportedError, match=r"^IndexPutPlan"):
        bc.index_put(torch.zeros(3, dtype=torch.bool), [torch.tensor([0])], True, accumulate=True)
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexPutPlan"):
        bc.index_put(x, [torch.tensor([0])], torch.ones(4, dtype=torch.float64))  # values' dtype
    with pytest.raises(TypeError):
        bc.index_put(x, [torch.tensor([0])], None)


def test_index_plans_directly():
    x = torch.randn(3, 4, 5)
    i = torch.tensor([0, 2])
    d = P.IndexGetDescriptor(dtype="float32", index_dtype="int64", self_shape=(3, 4, 5), index_shapes=[None, (2,)])
    assert d.index_shapes == [None, (2,), None]
    plan = P.IndexGetPlan.select(d)
    assert plan.out_shape == (3, 2, 5) and plan.broadcast_shape == (2,)
    assert plan.sku["backend"].startswith("cpu")
    o = torch.empty(3, 2, 5)
    assert plan.can_implement(x=x, indices=[None, i], out=o) is True
    plan.run(x=x, indices=[None, i], out=o)
    assert torch.equal(o, x[:, i])
    plan.check_indices()
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        plan.run(x=x, indices=[i, None], out=o)
    with pytest.raises(TypeError, match="unknown argument"):
        plan.run(x=x, idx=[None, i], out=o)
    with pytest.raises(TypeError):
        plan.run(x=x, indices=i, out=o)
    pd = P.IndexPutDescriptor(dtype="float32", index_dtype="int64", self_shape=(3, 4, 5), index_shapes=[(2,)],
                              values_shape=(1,), accumulate=True)
    pp = P.IndexPutPlan.select(pd)
    assert pp.result_shape == (2, 4, 5) and pp.out_shape == (3, 4, 5)
    y = x.clone()
    pp.run(input=y, indices=[torch.tensor([1, 1])], values=torch.ones(1), out=y)
    assert torch.equal(y, torch.ops.aten.index_put(x, [torch.tensor([1, 1])], torch.ones(1), True))
    assert "accumulate=True" in repr(pp.descriptor)


# ---- embedding -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16] if HAVE_TORCH else [])
@pytest.mark.parametrize("idt", [torch.int64, torch.int32] if HAVE_TORCH else [])
def test_embedding(dtype, idt):
    w = torch.randn(11, 6).to(dtype)
    i = torch.tensor([[1, 2, 10], [0, 2, 2]], dtype=idt)
    assert torch.equal(tt(bc.embedding(i, w)), F.embedding(i, w))
    g = torch.randn(2, 3, 6).to(dtype)
    for pad in (None, 2, -1):
        wr = w.clone().requires_grad_()
        F.embedding(i, wr, padding_idx=pad).backward(g)
        dw = tt(bc.embedding_backward(g, i, 11, padding_idx=pad))
        tol = {} if dtype in (torch.float32, torch.float64) else dict(rtol=1e-2, atol=1e-2)  # torch sums in 16 bits
        torch.testing.assert_close(dw, wr.grad, **tol)
    if dtype in (torch.float16, torch.bfloat16):  # f32 gradients of a 16-bit table
        dw32 = tt(bc.embedding_backward(g, i, 11, grad_dtype="float32"))
        assert dw32.dtype == torch.float32
        torch.testing.assert_close(dw32, F.embedding(i, w.float().requires_grad_()).new_zeros(11, 6).index_add_(
            0, i.flatten().long(), g.float().reshape(-1, 6)))


def test_embedding_noncontiguous_zero_size_errors():
    w = torch.randn(6, 9).t()  # [9, 6] non-contiguous table
    i = torch.tensor([8, 0, 3, 3, 1])[::2]
    assert torch.equal(tt(bc.embedding(i, w)), F.embedding(i, w))
    e = torch.empty(0, 3, dtype=torch.long)
    assert tt(bc.embedding(e, w)).shape == (0, 3, 6)
    assert torch.equal(tt(bc.embedding_backward(torch.empty(0, 3, 6), e, 9)), torch.zeros(9, 6))
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingPlan"):
        bc.embedding(torch.tensor([9]), w)
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingPlan"):
        bc.embedding(torch.tensor([-1]), w)
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingBackwardPlan"):
        bc.embedding_backward(torch.randn(1, 6), torch.tensor([9]), 9)
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingPlan"):
        bc.embedding(torch.tensor([1]), w, padding_idx=9)
    with pytest.raises(bc.UnsupportedError):
        bc.embedding(torch.tensor([1]), w, max_norm=1.0)
    with pytest.raises(bc.InvalidProblemError):
        bc.embedding(torch.tensor([1]), torch.randn(9))
    assert torch.equal(tt(bc.embedding(i, w, check_indices=True)), F.embedding(i, w))  # CPU: checked anyway


# ---- grouped linear ------------------------------------------------------------------------------
def _grouped_ref(x, w, b, off, act):
    outs = []
    for g in range(len(off) - 1):
        wg = w if w.dim() == 2 else w[g]
        bg = None if b is None else (b if b.dim() == 1 else b[g])
        outs.append(F.linear(x[off[g]:off[g + 1]], wg, bg))
    y = torch.cat(outs)
    return {None: y, "relu": torch.relu(y), "gelu": F.gelu(y), "gelu_tanh": F.gelu(y, approximate="tanh")}[act]


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("shared", [False, True])
def test_grouped_linear_forward_backward(act, shared):
    torch.manual_seed(0)
    T, K, N, G = 9, 5, 4, 3
    off = [0, 3, 3, 7]  # an empty group, 2 unused rows of capacity
    x = torch.randn(T, K, dtype=torch.float64, requires_grad=True)
    w = torch.randn(*(() if shared else (G,)), N, K, dtype=torch.float64, requires_grad=True)
    b = torch.randn(*(() if shared else (G,)), N, dtype=torch.float64, requires_grad=True)
    ref = _grouped_ref(x, w, b, off, act)
    out = bc.grouped_linear(x.detach(), w.detach(), off, b.detach(), activation=act,
                            return_aux=act in ("gelu", "gelu_tanh"))
    y, aux = (out if isinstance(out, tuple) else (out, None))
    y = tt(y)
    torch.testing.assert_close(y[:7], ref)
    dy = torch.randn(7, N, dtype=torch.float64)
    ref.backward(dy)
    dyf = torch.cat([dy, torch.zeros(2, N, dtype=torch.float64)])
    saved = None if act is None else (y if act == "relu" else aux)
    offt = torch.tensor(off)  # a host int64 tensor works as well as a list
    dx, dw, db = bc.grouped_linear_backward(dyf, x.detach(), w.detach(), offt, activation=act, aux=saved)
    torch.testing.assert_close(tt(dx)[:7], x.grad[:7])
    torch.testing.assert_close(tt(dw), w.grad)
    torch.testing.assert_close(tt(db), b.grad)


def test_grouped_linear_errors():
    x, w = torch.randn(4, 3), torch.randn(2, 5, 3)
    with pytest.raises(bc.InvalidProblemError, match=r"^GroupedLinearPlan"):
        bc.grouped_linear(x, w, [0, 3, 2])      # decreasing offsets
    with pytest.raises(bc.InvalidProblemError, match=r"^GroupedLinearPlan"):
        bc.grouped_linear(x, w, [0, 2, 5])      # past the capacity
    with pytest.raises(bc.InvalidProblemError, match=r"^GroupedLinearPlan"):
        bc.grouped_linear(x, w, [0, 1, 2, 3])   # 3 groups, weight has 2
    with pytest.raises(bc.InvalidProblemError):
        bc.grouped_linear(torch.randn(4), w, [0, 1, 2])
    y = tt(bc.grouped_linear(torch.randn(0, 3), w, [0, 0, 0]))
    assert y.shape == (0, 5)


# ---- fp8 GEMM (the CPU reference) ------------------------------------------------------------------
@pytest.mark.parametrize("row", [False, True])
@pytest.mark.parametrize("odt", [torch.float32, torch.bfloat16] if HAVE_TORCH else [])
def test_scaled_mm_cpu(row, odt):
    torch.manual_seed(0)
    a = torch.randn(5, 32).to(torch.float8_e4m3fn)
    b = torch.randn(16, 32).to(torch.float8_e5m2).t()
    sa, sb = (torch.rand(5, 1) + 0.5, torch.rand(1, 16) + 0.5) if row else (torch.tensor(2.0), torch.tensor(0.25))
    bias = torch.randn(16).to(odt)
    ref = (a.double() @ b.double()) * sa.double() * sb.double() + bias.double()
    y = tt(bc.scaled_mm(a, b, sa, sb, bias, out_dtype=odt))
    assert y.dtype == odt and y.shape == (5, 16)
    torch.testing.assert_close(y.double(), ref, rtol=1e-2 if odt == torch.bfloat16 else 1e-5, atol=1e-2)


def test_scaled_mm_errors():
    a = torch.randn(4, 16).to(torch.float8_e5m2)
    with pytest.raises(bc.UnsupportedError, match=r"^ScaledMatmulPlan"):
        bc.scaled_mm(a, a.t().contiguous(), torch.tensor(1.0), torch.tensor(1.0))  # e5m2 x e5m2
    b = torch.randn(16, 8).to(torch.float8_e4m3fn)
    with pytest.raises(bc.InvalidProblemError, match=r"^ScaledMatmulPlan"):
        bc.scaled_mm(b, b, torch.tensor(1.0), torch.tensor(1.0))  # K mismatch
    with pytest.raises(bc.InvalidProblemError, match=r"^ScaledMatmulPlan"):
        bc.scaled_mm(a, b, torch.rand(3), torch.rand(8))  # row scale of the wrong length


# ---- baracuda.torch: autograd of the indexing ops (gradcheck in f64, against torch's autograd) -----------
if HAVE_TORCH:
    import baracuda.torch as bt


def _f64(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_()


def _both(fb, ft, *inputs):
    """fb (baracuda.torch) against ft (torch) on the same inputs: forward and every gradient."""
    a = [t.detach().clone().requires_grad_() for t in inputs]
    b = [t.detach().clone().requires_grad_() for t in inputs]
    ya, yb = fb(*a), ft(*b)
    torch.testing.assert_close(ya, yb)
    g = torch.randn_like(yb)
    ya.backward(g)
    yb.backward(g)
    for ta, tb in zip(a, b):
        torch.testing.assert_close(ta.grad, tb.grad)


def test_torch_gather_scatter_add():
    x = _f64(4, 5)
    i = torch.tensor([[0, 0], [4, 1], [2, 2], [1, 3]])
    assert torch.autograd.gradcheck(lambda a: bt.gather(a, 1, i), (x,))
    _both(lambda a: bt.gather(a, 1, i), lambda a: torch.gather(a, 1, i), x)
    s = _f64(2, 5, seed=1)
    j = torch.tensor([[3, 0, 3, 1, 2], [3, 3, 0, 0, 1]])
    assert torch.autograd.gradcheck(lambda a, b: bt.scatter_add(a, 0, j, b), (x, s))
    _both(lambda a, b: bt.scatter_add(a, 0, j, b), lambda a, b: torch.scatter_add(a, 0, j, b), x, s)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_torch_scatter_reduce(reduce, include_self):
    x = _f64(4, 5)
    s = _f64(3, 5, seed=1)
    j = torch.tensor([[3, 0, 3, 1, 2], [3, 3, 0, 0, 1], [1, 3, 0, 2, 1]])
    f = lambda a, b: bt.scatter_reduce(a, 0, j, b, reduce, include_self)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, s))
    _both(f, lambda a, b: torch.scatter_reduce(a, 0, j, b, reduce, include_self=include_self), x, s)


def test_torch_index_select_index_add_take_put():
    x = _f64(4, 5)
    i = torch.tensor([4, 0, 4])
    assert torch.autograd.gradcheck(lambda a: bt.index_select(a, 1, i), (x,))
    _both(lambda a: bt.index_select(a, 1, i), lambda a: torch.index_select(a, 1, i), x)
    src = _f64(4, 3, seed=2)
    assert torch.autograd.gradcheck(lambda a, b: bt.index_add(a, 1, i, b, 2.0), (x, src))
    _both(lambda a, b: bt.index_add(a, 1, i, b, 2.0), lambda a, b: torch.index_add(a, 1, i, b, alpha=2.0), x, src)
    k = torch.tensor([[0, 19], [-1, 7]])
    assert torch.autograd.gradcheck(lambda a: bt.take(a, k), (x,))
    _both(lambda a: bt.take(a, k), lambda a: torch.take(a, k), x)
    v = _f64(3, seed=3)
    p = torch.tensor([0, 7, -1])
    for acc in (False, True):
        assert torch.autograd.gradcheck(lambda a, b: bt.put(a, p, b, acc), (x, v))
        _both(lambda a, b: bt.put(a, p, b, acc), lambda a, b: torch.put(a, p, b, acc), x, v)


def test_torch_masked():
    x = _f64(4, 5)
    m = torch.rand(4, 5, generator=torch.Generator().manual_seed(5)) > 0.5
    assert torch.autograd.gradcheck(lambda a: bt.masked_select(a, m), (x,))
    _both(lambda a: bt.masked_select(a, m), lambda a: torch.masked_select(a, m), x)
    xb = _f64(1, 5)  # broadcast against the mask: the gradient is summed
    _both(lambda a: bt.masked_select(a, m), lambda a: torch.masked_select(a, m), xb)
    s = _f64(20, seed=1)
    assert torch.autograd.gradcheck(lambda a, b: bt.masked_scatter(a, m, b), (x, s))
    _both(lambda a, b: bt.masked_scatter(a, m, b), lambda a, b: a.masked_scatter(m, b), x, s)


def test_torch_index_get_put():
    x = _f64(4, 5, 3)
    i = torch.tensor([[0, 3], [3, 3]])
    j = torch.tensor([2, 0])
    for idx in ([i], [i, None, j], [None, j, torch.tensor([1])], [i, j]):
        assert torch.autograd.gradcheck(lambda a: bt.index_get(a, idx), (x,))
        _both(lambda a: bt.index_get(a, idx), lambda a: torch.ops.aten.index(a, idx), x)
    for acc in (False, True):
        for idx, vshape in (([torch.tensor([0, 2])], (5, 3)), ([i, None, j], (2, 2, 5)), ([None, j], (1, 3))):
            v = _f64(*vshape, seed=4)
            f = lambda a, b: bt.index_put(a, idx, b, acc)  # noqa: E731
            if acc or idx[0] is not i:  # duplicates without accumulate: only the last value counts (torch's
                assert torch.autograd.gradcheck(f, (x, v))  # gradient, as ours, still reaches every value)
            _both(f, lambda a, b: torch.ops.aten.index_put(a, idx, b, acc), x, v)
    # a Python int and a bool mask in the index list
    m = torch.tensor([True, False, True, True, False])
    assert torch.equal(bt.index_get(x, [1, m]), torch.ops.aten.index(x, [torch.tensor(1), m]))


def test_torch_embedding_module():
    torch.manual_seed(0)
    for pad in (None, 2, -1):
        e = bt.Embedding(10, 4, padding_idx=pad, dtype=torch.float64)
        r = torch.nn.Embedding(10, 4, padding_idx=pad, dtype=torch.float64)
        r.load_state_dict(e.state_dict())
        i = torch.tensor([[1, 2, 3], [2, 9, 9]])
        y, yr = e(i), r(i)
        assert torch.equal(y, yr)
        g = torch.randn_like(y)
        y.backward(g)
        yr.backward(g)
        assert torch.equal(e.weight.grad, r.weight.grad)
    w = _f64(6, 3)
    i = torch.tensor([0, 5, 5, 1], dtype=torch.int32)
    assert torch.autograd.gradcheck(lambda a: bt.embedding(i, a, padding_idx=2), (w,))  # row 2 unused
    with pytest.raises(bc.UnsupportedError):
        bt.Embedding(10, 4, max_norm=1.0)
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingPlan"):
        bt.embedding(torch.tensor([10]), w)
    e = bt.Embedding(5, 2)
    e.weight.requires_grad_(False)
    assert e(torch.tensor([1])).requires_grad is False


def test_torch_opcheck_and_compile():
    x = torch.randn(4, 5)
    i = torch.tensor([[0, 0], [4, 1], [2, 2], [1, 3]])
    torch.library.opcheck(torch.ops.baracuda.gather_fwd.default, (x, 1, i))
    torch.library.opcheck(torch.ops.baracuda.embedding_fwd.default, (torch.randn(7, 3), torch.tensor([1, 6]), None))
    torch.library.opcheck(torch.ops.baracuda.index_get_fwd.default, (x, [torch.tensor([3, 1]), None]))
    torch.library.opcheck(torch.ops.baracuda.index_put_fwd.default,
                          (x, [None, torch.tensor([3, 1])], torch.randn(4, 2), True))

    def f(a, w, idx):
        return bt.embedding(idx, w).sum() + bt.index_get(a, [idx]).sum() + bt.gather(a, 1, i).sum()

    c = torch.compile(f, fullgraph=True, backend="eager")
    idx = torch.tensor([1, 3])
    torch.testing.assert_close(c(x, torch.randn(5, 2).abs(), idx).isfinite(), torch.tensor(True))


def test_torch_rotary_and_attention_modules():
    torch.manual_seed(0)
    q = torch.randn(1, 2, 6, 32, dtype=torch.float64)
    k = torch.randn(1, 1, 6, 32, dtype=torch.float64)
    v = torch.randn(1, 1, 6, 32, dtype=torch.float64)
    rot = bt.RotaryEmbedding(16, base=500.0)
    qo, ko = rot(q, k)
    qr, kr = bt.rope(q, k, theta=500.0, rotary_dim=16)
    assert torch.equal(qo, qr) and torch.equal(ko, kr)
    assert list(rot.state_dict()) == [] and "base=500.0" in repr(rot)
    att = bt.FlashAttention(causal=True)
    y = att(q, k, v)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.expand(1, 2, 6, 32), v.expand(1, 2, 6, 32),
                                                           is_causal=True)
    torch.testing.assert_close(y, ref)


@pytest.mark.parametrize("act", [None, "relu", "gelu_tanh"])
@pytest.mark.parametrize("shared", [False, True])
def test_torch_grouped_linear(act, shared):
    off = [0, 2, 2, 5]
    x = _f64(6, 4)
    w = _f64(*(() if shared else (3,)), 3, 4, seed=1)
    b = _f64(*(() if shared else (3,)), 3, seed=2)
    f = lambda a, c, d: bt.grouped_linear(a, c, off, d, act)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, w, b))

    def ref(a, c, d):
        y = _grouped_ref(a, c, d, off, act)
        return torch.cat([y, y.new_zeros(1, 3)])

    _both(f, ref, x, w, b)
    torch.library.opcheck(torch.ops.baracuda.grouped_linear_fwd.default,
                          (x.detach(), w.detach(), b.detach(), torch.tensor(off), "relu"))


def test_index_put_bool_mask():
    x = torch.randn(4, 5)
    m = torch.rand(4, 5, generator=torch.Generator().manual_seed(3)) > 0.5
    assert torch.equal(tt(bc.index_put(x, [m], 0.0)), x.masked_fill(m, 0.0))
    v = torch.randn(int(m.sum()))
    assert torch.equal(tt(bc.index_put(x, [m], v, accumulate=True)), torch.ops.aten.index_put(x, [m], v, True))


def test_grouped_and_scaled_plans_directly():
    d = P.GroupedLinearDescriptor(dtype="float64", groups=2, in_features=3, out_features=4, capacity=5,
                                  activation="relu", has_bias=False)
    p = P.GroupedLinearPlan.select(d)
    assert (p.x_shape, p.y_shape, p.offsets_shape, p.weight_shape, p.bias_shape) == \
        ((5, 3), (5, 4), (3,), (2, 4, 3), (2, 4))
    x, w = torch.randn(5, 3, dtype=torch.float64), torch.randn(2, 4, 3, dtype=torch.float64)
    y = torch.zeros(5, 4, dtype=torch.float64)
    off = torch.tensor([0, 1, 4])
    assert p.can_implement(x=x, offsets=off, weight=w, y=y) is True
    with pytest.raises(bc.InvalidProblemError, match=r"^GroupedLinearPlan"):
        p.run(x=x, offsets=off, weight=w, bias=torch.zeros(2, 4, dtype=torch.float64), y=y)  # no bias declared
    p.run(x=x, offsets=off, weight=w, y=y)
    torch.testing.assert_close(y[:4], _grouped_ref(x, w, None, [0, 1, 4], "relu"))
    bd = P.GroupedLinearBackwardDescriptor(forward=d, need_dw=False, need_db=False)
    assert bd.forward.groups == 2 and P.GroupedLinearBackwardPlan.select(bd).weight_shape == (2, 4, 3)
    sd = P.ScaledMatmulDescriptor(a_dtype="float8_e4m3fn", b_dtype="float8_e4m3fn", out_dtype="float32",
                                  a_shape=(4, 16), b_shape=(16, 8), scaling=P.Fp8Scaling.Row)
    sp = P.ScaledMatmulPlan.select(sd)
    assert (sp.out_shape, sp.a_scale_shape, sp.b_scale_shape) == ((4, 8), (4,), (8,))
    with pytest.raises(bc.InvalidProblemError):
        P.ScaledMatmulPlan.select(P.ScaledMatmulDescriptor(a_shape=(4, 16), b_shape=(8, 8)))

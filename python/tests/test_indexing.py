"""The indexing ops of the functional layer on the CPU against torch (and NumPy):
gather / scatter / scatter_add / scatter_reduce (+ backward by finite differences
in f64), index_select / index_add / index_copy / index_fill / index_reduce, take /
put, one_hot, nonzero, masked_select, masked_scatter; errors, zero-size,
non-contiguous inputs, int32 indices, out= (in place)."""
import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


def T(a):
    return torch.tensor(np.asarray(a))


def eq(a, b):
    np.testing.assert_array_equal(np_of(a), b)


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np_of(a), b, rtol=rtol, atol=atol)


# ---- gather / scatter ----------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("idt", [np.int64, np.int32])
def test_gather(dim, idt, rng):
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    ishape = [3, 4, 2]
    ishape[dim] = 6
    i = rng.integers(0, x.shape[dim], ishape).astype(idt)
    ref = torch.gather(T(x), dim, T(i).long()).numpy()
    eq(bc.gather(x, dim, i), ref)


@needs_torch
def test_gather_noncontiguous_and_out(rng):
    x = rng.standard_normal((6, 8)).astype(np.float64)[:, ::2]
    i = rng.integers(0, 4, (6, 3))
    out = np.zeros((6, 3))
    r = bc.gather(x, 1, i, out=out)
    assert r is out
    eq(out, torch.gather(T(x), 1, T(i)).numpy())


def test_gather_errors_and_zero_size(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    with pytest.raises(bc.InvalidProblemError, match="GatherPlan"):
        bc.gather(x, 1, np.array([[0, 4]]))
    with pytest.raises(bc.Error, match="GatherPlan"):
        bc.gather(x, 2, np.array([[0]]))
    with pytest.raises(TypeError):
        bc.gather(x, 0, None)
    assert bc.gather(x, 0, np.zeros((0, 4), np.int64)).shape == (0, 4)


@needs_torch
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_src_value_add(dim, rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    src = rng.standard_normal((3, 4)).astype(np.float32)
    # unique destinations along dim for plain scatter (duplicates: last wins, torch: undefined)
    i = np.stack([rng.permutation(x.shape[dim])[:3 if dim == 0 else 4] for _ in range(4 if dim == 0 else 3)],
                 axis=1 if dim == 0 else 0)
    eq(bc.scatter(x, dim, i, src), torch.scatter(T(x), dim, T(i), T(src)).numpy())
    eq(bc.scatter(x, dim, i, 2.5), torch.scatter(T(x), dim, T(i), 2.5).numpy())
    eq(bc.scatter(x, dim, i, value=-1.0), torch.scatter(T(x), dim, T(i), -1.0).numpy())
    j = rng.integers(0, x.shape[dim], i.shape)  # duplicates
    close(bc.scatter_add(x, dim, j, src), torch.scatter_add(T(x), dim, T(j), T(src)).numpy(), 1e-5, 1e-6)
    close(bc.scatter(x, dim, j, src, reduce="add"), torch.scatter_add(T(x), dim, T(j), T(src)).numpy(), 1e-5, 1e-6)


def test_scatter_duplicates_last_wins_and_inplace():
    x = np.zeros(4, np.float32)
    r = bc.scatter(x, 0, np.array([1, 1, 2]), np.array([1.0, 2.0, 3.0], np.float32), out=x)
    assert r is x
    eq(x, np.array([0, 2, 3, 0], np.float32))


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self, rng):
    x = rng.standard_normal((4, 5))
    src = rng.standard_normal((6, 5))
    i = rng.integers(0, 4, (6, 5))
    ref = torch.scatter_reduce(T(x), 0, T(i), T(src), reduce, include_self=include_self).numpy()
    close(bc.scatter_reduce(x, 0, i, src, reduce, include_self=include_self), ref, 1e-12, 1e-12)


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        k = it.multi_index
        xp = x.copy(); xp[k] += eps
        xm = x.copy(); xm[k] -= eps
        g[k] = (f(xp) - f(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_backward_fd(reduce, include_self, rng):
    x = rng.standard_normal((3, 4))
    src = rng.standard_normal((5, 4))
    i = rng.integers(0, 3, (5, 4))
    w = rng.standard_normal((3, 4))  # loss = sum(w * out)

    def loss_x(xx):
        return float((np_of(bc.scatter_reduce(xx, 0, i, src, reduce, include_self=include_self)) * w).sum())

    def loss_s(ss):
        return float((np_of(bc.scatter_reduce(x, 0, i, ss, reduce, include_self=include_self)) * w).sum())

    res = bc.scatter_reduce(x, 0, i, src, reduce, include_self=include_self)
    gx, gs = bc.scatter_reduce_backward(w, x, 0, i, src, reduce, res, include_self=include_self)
    close(gx, _fd(loss_x, x), 1e-6, 1e-6)
    close(gs, _fd(loss_s, src), 1e-6, 1e-6)
    gx2, none = bc.scatter_reduce_backward(w, x, 0, i, src, reduce, res, include_self=include_self, grad_src=False)
    assert none is None
    close(gx2, np_of(gx), 0, 0)


def test_scatter_errors(rng):
    x = np.zeros((3, 3), np.float32)
    with pytest.raises(bc.InvalidProblemError, match="scatter_reduce"):
        bc.scatter_reduce(x, 0, np.zeros((1, 3), np.int64), x[:1], "max")
    with pytest.raises(bc.InvalidProblemError, match="scatter"):
        bc.scatter(x, 0, np.zeros((1, 3), np.int64), x[:1], reduce="mul")
    with pytest.raises(bc.InvalidProblemError, match="ScatterPlan"):
        bc.scatter(x, 0, np.full((1, 3), 3), x[:1].copy())
    with pytest.raises(TypeError):
        bc.scatter(x, 0, np.zeros((1, 3), np.int64))
    assert bc.scatter_add(np.zeros((0, 3), np.float32), 0, np.zeros((0, 3), np.int64),
                          np.zeros((0, 3), np.float32)).shape == (0, 3)


# ---- index_* -------------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dim, rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    i = rng.integers(0, x.shape[dim], 7).astype(np.int32)
    eq(bc.index_select(x, dim, i), torch.index_select(T(x), dim, T(i)).numpy())
    xi = rng.integers(-9, 9, (4, 5)).astype(np.int64)[:, ::2]  # integers, non-contiguous
    eq(bc.index_select(xi, 1, np.array([2, 0])), torch.index_select(T(xi), 1, T(np.array([2, 0]))).numpy())
    assert bc.index_select(x, 0, np.zeros(0, np.int64)).shape == (0, 5, 6)


@needs_torch
def test_index_add_copy_fill(rng):
    x = rng.standard_normal((5, 4))
    src = rng.standard_normal((3, 4))
    i = np.array([4, 0, 4])
    close(bc.index_add(x, 0, i, src, alpha=2), torch.index_add(T(x), 0, T(i), T(src), alpha=2).numpy(), 1e-12, 1e-12)
    u = np.array([1, 3, 0])
    eq(bc.index_copy(x, 0, u, src), torch.index_copy(T(x), 0, T(u), T(src)).numpy())
    eq(bc.index_fill(x, 1, np.array([0, 2]), -3.0), torch.index_fill(T(x), 1, T(np.array([0, 2])), -3.0).numpy())
    y = x.copy()
    r = bc.index_add(y, 0, i, src, out=y)
    assert r is y
    close(y, torch.index_add(T(x), 0, T(i), T(src)).numpy(), 1e-12, 1e-12)


@needs_torch
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self, rng):
    x = rng.standard_normal((4, 3))
    src = rng.standard_normal((4, 6))
    i = np.array([0, 2, 2, 1, 0, 2])
    ref = T(x).index_reduce(1, T(i), T(src), reduce, include_self=include_self).numpy()
    close(bc.index_reduce(x, 1, i, src, reduce, include_self=include_self), ref, 1e-12, 1e-12)


def test_index_errors():
    x = np.zeros((3, 2), np.float32)
    with pytest.raises(bc.InvalidProblemError, match="IndexSelectPlan"):
        bc.index_select(x, 0, np.array([3]))
    with pytest.raises(bc.InvalidProblemError, match="index_reduce"):
        bc.index_reduce(x, 0, np.array([0]), x[:1], "sum")
    with pytest.raises(TypeError, match="index_fill"):
        bc.index_fill(x, 0, np.array([0]), np.ones(1))
    with pytest.raises(TypeError, match="source"):
        bc.index_add(x, 0, np.array([0]), None)


# ---- take / put / one_hot ----------------------------------------------------------------------------------
@needs_torch
def test_take_put(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)[:, 1::2]  # non-contiguous
    i = rng.integers(-12, 12, (2, 5))
    eq(bc.take(x, i), torch.take(T(x), T(i)).numpy())
    src = rng.standard_normal(10).astype(np.float32)
    eq(bc.put(x, i, src, accumulate=True), torch.put(T(x), T(i), T(src), accumulate=True).numpy())
    u = rng.permutation(12)[:5].reshape(5)
    eq(bc.put(x, u, src[:5]), torch.put(T(x), T(u), T(src[:5])).numpy())
    assert bc.take(x, np.zeros((0,), np.int64)).shape == (0,)
    with pytest.raises(bc.InvalidProblemError, match="TakePlan"):
        bc.take(x, np.array([12]))
    with pytest.raises(bc.InvalidProblemError, match="PutPlan"):
        bc.put(x, np.array([0, 1]), src[:3])


@needs_torch
def test_one_hot(rng):
    i = rng.integers(0, 5, (3, 4))
    eq(bc.one_hot(i), torch.nn.functional.one_hot(T(i)).numpy())
    eq(bc.one_hot(i.astype(np.int32), 7), torch.nn.functional.one_hot(T(i), 7).numpy())
    y = bc.one_hot(i, 5, dtype="float32")
    assert y.dtype == "float32"
    eq(y, torch.nn.functional.one_hot(T(i), 5).float().numpy())
    with pytest.raises(bc.InvalidProblemError, match="one_hot"):
        bc.one_hot(np.zeros(0, np.int64))
    assert bc.one_hot(np.zeros(0, np.int64), 3).shape == (0, 3)
    with pytest.raises(bc.InvalidProblemError, match="OneHotPlan"):
        bc.one_hot(np.array([5]), 5)


# ---- nonzero / masked ----------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("shape", [(5, 6), (2, 3, 4), (7,), (), (0, 3)])
def test_nonzero(shape, rng):
    x = np.asarray(rng.standard_normal(shape) > 0.3).astype(np.float32)
    ref = torch.nonzero(T(x)).numpy()
    eq(bc.nonzero(x), ref)
    eq(bc.argwhere(x), ref)
    cols = bc.nonzero(x, as_tuple=True)
    refs = torch.nonzero(T(x), as_tuple=True)
    assert len(cols) == len(refs)
    for c, r in zip(cols, refs):
        eq(c, r.numpy())
    if len(shape) > 0:
        m = int(np.prod(shape))
        eq(bc.nonzero(x.astype(bool)), ref)
        eq(bc.nonzero(np.ascontiguousarray(x.T).T), ref)  # non-contiguous
        y, c = bc.nonzero(x, size=m, fill_value=-1, return_count=True)
        n = int(np_of(c))
        assert n == ref.shape[0]
        eq(np_of(y)[:n], ref)
        assert (np_of(y)[n:] == -1).all()


@needs_torch
def test_masked_select_scatter(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    mask = rng.standard_normal((1, 5)) > 0  # broadcasts
    eq(bc.masked_select(x, mask), torch.masked_select(T(x), T(mask)).numpy())
    y, c = bc.masked_select(x, mask, size=20, fill_value=7, return_count=True)
    n = int(np_of(c))
    assert n == 4 * int(mask.sum()) and (np_of(y)[n:] == 7).all()
    src = rng.standard_normal((6, 5)).astype(np.float32)
    full_mask = rng.standard_normal((4, 5)) > 0
    eq(bc.masked_scatter(x, full_mask, src), T(x).masked_scatter(T(full_mask), T(src)).numpy())
    eq(bc.masked_scatter(x, mask, src), T(x).masked_scatter(T(mask), T(src)).numpy())
    with pytest.raises(bc.InvalidProblemError, match="MaskedScatterPlan"):
        bc.masked_scatter(x, np.ones((4, 5), bool), src[:1])
    assert bc.masked_select(np.zeros((0, 3), np.float32), np.ones(3, bool)).shape == (0,)
    xt = x.T  # non-contiguous
    eq(bc.masked_select(xt, xt > 0), torch.masked_select(T(x).T, T(x).T > 0).numpy())
    with pytest.raises(bc.InvalidProblemError, match="MaskedSelectPlan"):
        bc.masked_select(x, np.ones((3,), bool))


def test_plan_layer_indexing():
    P = bc.plans
    d = P.GatherDescriptor(dtype="float32", index_dtype="int64", x_shape=(3, 4), index_shape=(3, 2), dim=1)
    p = P.GatherPlan.select(d)
    assert p.out_shape == (3, 2) and "GatherPlan" in repr(p)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros((3, 2), np.float32)
    p.run(x=x, index=np.array([[0, 3]] * 3), out=out)
    eq(out, x[:, [0, 3]])
    p.check_indices()
    with pytest.raises(TypeError, match="unknown field"):
        P.ScatterDescriptor(dims=1)
    assert P.ScatterDescriptor(reduce="amax").reduce == P.ScatterReduce.Amax
    n = P.NonzeroPlan.select(P.NonzeroDescriptor(dtype="bool", shape=(4,), capacity=4))
    c = np.zeros((), np.int64)
    o = np.zeros((4, 1), np.int64)
    n.run(x=np.array([True, False, True, False]), out=o, count=c)
    assert int(c) == 2 and o[:2, 0].tolist() == [0, 2]

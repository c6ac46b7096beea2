"""The functional layer on the CPU: every op against NumPy (and torch when
importable), finite-difference gradients in f64 for the backward ops,
out=, zero-size and non-contiguous inputs."""
import math

import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np_of(a) if not isinstance(a, np.ndarray) else a, b, rtol=rtol, atol=atol)


# ---- elementwise ------------------------------------------------------------------------
def _erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), "neg": np.negative, "abs": np.abs,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(name, dtype, rng):
    x = rng.uniform(0.1, 3, (5, 7)).astype(dtype)
    if name in ("relu", "tanh", "silu", "gelu", "neg", "abs", "sigmoid", "exp"):
        x = (x - 1.5).astype(dtype)
    y = getattr(bc, name)(x)
    assert y.dtype == np.dtype(dtype).name and y.shape == x.shape
    close(y, UNARY[name](x.astype(np.float64)), rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_gelu_tanh(rng):
    x = rng.standard_normal(50)
    ref = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    close(bc.gelu(x, approximate="tanh"), ref, rtol=1e-12)
    with pytest.raises(ValueError):
        bc.gelu(x, approximate="fast")


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
          "minimum": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(name, rng):
    a = rng.standard_normal((4, 1, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2, (5, 1)).astype(np.float32)
    y = getattr(bc, name)(a, b)
    assert y.shape == (4, 5, 3)
    close(y, BINARY[name](a, b), rtol=1e-6)


def test_binary_scalars_and_alpha(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    close(bc.add(a, 2.5), a + 2.5)
    close(bc.sub(1, a), 1 - a)
    close(bc.add(a, a, alpha=0.5), a + 0.5 * a)
    close(bc.mul(a, True), a)
    # integer tensor / int scalar -> true division in float32
    i = np.arange(6, dtype=np.int32)
    y = bc.div(i, 4)
    assert y.dtype == "float32"
    close(y, i / 4)
    close(bc.div(i, 4, rounding_mode="floor"), i // 4)
    # promotion: int32 tensor + float scalar -> float32
    assert bc.add(i, 0.5).dtype == "float32"
    assert bc.add(i, 1).dtype == "int32"


def test_elementwise_out_and_inplace(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    ref = a + b
    r = bc.add(a, b, out=a)  # in place: out is an input
    assert r is a
    close(a, ref)


def test_elementwise_noncontiguous(rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    close(bc.exp(a.T), np.exp(a.T))
    close(bc.mul(a[::2, 1::3], a[1::2, ::3]), a[::2, 1::3] * a[1::2, ::3])
    out = np.zeros((8, 6), np.float32).T  # a transposed out=
    bc.exp(a, out=out)
    close(out, np.exp(a))


def test_zero_size():
    a = np.zeros((0, 3), np.float32)
    assert bc.exp(a).shape == (0, 3)
    assert bc.add(a, 1.0).shape == (0, 3)
    s = bc.sum(a)
    assert np_of(s) == 0
    assert bc.sum(a, dim=0).shape == (3,)
    assert bc.softmax(a).shape == (0, 3)
    assert bc.matmul(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)).shape == (2, 3)


def test_to(rng):
    a = rng.standard_normal(10).astype(np.float32) * 10
    close(bc.to(a, "float64"), a.astype(np.float64))
    y = bc.to(a, "int32")
    assert y.dtype == "int32"
    np.testing.assert_array_equal(np_of(y), np.trunc(a).astype(np.int32))


# ---- reductions -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(dim, keepdim, rng):
    x = rng.standard_normal((3, 4, 5))
    ax = dim if dim is not None else None
    close(bc.sum(x, dim, keepdim), np.sum(x, axis=ax, keepdims=keepdim), rtol=1e-12)
    close(bc.mean(x, dim, keepdim), np.mean(x, axis=ax, keepdims=keepdim), rtol=1e-12)
    close(bc.prod(x, dim, keepdim), np.prod(x, axis=ax, keepdims=keepdim), rtol=1e-12)
    d = () if dim is None else dim
    close(bc.amax(x, d, keepdim), np.amax(x, axis=ax, keepdims=keepdim))
    close(bc.amin(x, d, keepdim), np.amin(x, axis=ax, keepdims=keepdim))
    close(bc.var(x, dim, keepdim=keepdim), np.var(x, axis=ax, keepdims=keepdim, ddof=1), rtol=1e-12)
    close(bc.std(x, dim, keepdim=keepdim, correction=0), np.std(x, axis=ax, keepdims=keepdim), rtol=1e-12)
    lse = np.log(np.sum(np.exp(x), axis=ax, keepdims=keepdim))
    close(bc.logsumexp(x, dim, keepdim), lse, rtol=1e-12)


def test_reduce_dtypes(rng):
    i = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    y = bc.sum(i, 1)
    assert y.dtype == "int64"
    np.testing.assert_array_equal(np_of(y), i.sum(1))
    x = rng.standard_normal((4, 6)).astype(np.float32)
    y = bc.sum(x, 1, dtype="float64")
    assert y.dtype == "float64"
    close(y, x.astype(np.float64).sum(1), rtol=1e-12)
    a = bc.argmax(x, 1)
    assert a.dtype == "int64"
    np.testing.assert_array_equal(np_of(a), x.argmax(1))
    np.testing.assert_array_equal(np_of(bc.argmin(x)), x.argmin())


def test_reduce_out(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    out = np.zeros(4, np.float32)
    assert bc.sum(x, 1, out=out) is out
    close(out, x.sum(1))


# ---- matmul / linear --------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)),
                                   ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4,))])
def test_matmul(sa, sb, rng):
    a = rng.standard_normal(sa)
    b = rng.standard_normal(sb)
    close(bc.matmul(a, b), np.matmul(a, b), rtol=1e-12)


def test_matmul_transposed_and_dtype_mismatch(rng):
    a = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    close(bc.matmul(a.T, b.T), a.T @ b.T, rtol=1e-5)
    with pytest.raises(bc.InvalidProblemError):
        bc.matmul(a.T, b.T.astype(np.float64))
    with pytest.raises(bc.InvalidProblemError):
        bc.matmul(a, a)  # inner dims differ


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("bias", [False, True])
def test_linear(act, bias, rng):
    x = rng.standard_normal((2, 3, 8))
    w = rng.standard_normal((5, 8))
    b = rng.standard_normal(5) if bias else None
    pre = x @ w.T + (b if bias else 0)
    ref = {None: pre, "relu": np.maximum(pre, 0), "gelu": 0.5 * pre * (1 + _erf(pre / math.sqrt(2))),
           "gelu_tanh": 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre ** 3)))}[act]
    close(bc.linear(x, w, b, activation=act), ref, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError):
        bc.linear(x, w, b, activation="swish")


def fd_grad(f, x, g, eps=1e-6):
    """Central differences of sum(f(x) * g) with respect to x (f64)."""
    x = x.copy()
    out = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        p = np.sum(np_of(f(x)) * g)
        x[i] = old - eps
        m = np.sum(np_of(f(x)) * g)
        x[i] = old
        out[i] = (p - m) / (2 * eps)
    return out


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
def test_linear_backward_fd(act, rng):
    x = rng.standard_normal((3, 4))
    w = rng.standard_normal((2, 4))
    b = rng.standard_normal(2)
    g = rng.standard_normal((3, 2))
    if act in ("gelu", "gelu_tanh"):
        y, aux = bc.linear(x, w, b, activation=act, return_aux=True)
    else:
        y = bc.linear(x, w, b, activation=act)
        aux = y if act == "relu" else None
    dx, dw, db = bc.linear_backward(g, x, w, has_bias=True, activation=act, aux=aux)
    close(dx, fd_grad(lambda t: bc.linear(t, w, b, activation=act), x, g), rtol=1e-6, atol=1e-7)
    close(dw, fd_grad(lambda t: bc.linear(x, t, b, activation=act), w, g), rtol=1e-6, atol=1e-7)
    close(db, fd_grad(lambda t: bc.linear(x, w, t, activation=act), b, g), rtol=1e-6, atol=1e-7)


# ---- softmax ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax(dim, rng):
    x = rng.standard_normal((3, 4, 5))
    e = np.exp(x - x.max(dim, keepdims=True))
    ref = e / e.sum(dim, keepdims=True)
    close(bc.softmax(x, dim), ref, rtol=1e-12)
    close(bc.log_softmax(x, dim), np.log(ref), rtol=1e-12)
    close(bc.softmax(x, dim, scale=0.5), np_of(bc.softmax(x * 0.5, dim)), rtol=1e-12)


def test_softmax_all_masked_row_is_zero():
    x = np.full((2, 3), -np.inf)
    x[1] = 0
    y = np_of(bc.softmax(x))
    assert (y[0] == 0).all()


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_fd(log, rng):
    x = rng.standard_normal((3, 5))
    g = rng.standard_normal((3, 5))
    fwd = bc.log_softmax if log else bc.softmax
    bwd = bc.log_softmax_backward if log else bc.softmax_backward
    dx = bwd(g, fwd(x, 1), 1)
    close(dx, fd_grad(lambda t: fwd(t, 1), x, g), rtol=1e-6, atol=1e-8)


# ---- norms --------------------------------------------------------------------------------------------
def _ln_ref(x, k, w, b, eps):
    ax = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(ax, keepdims=True)
    var = ((x - mu) ** 2).mean(ax, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(affine, rng):
    x = rng.standard_normal((2, 3, 8))
    w = rng.standard_normal(8) if affine else None
    b = rng.standard_normal(8) if affine else None
    close(bc.layer_norm(x, (8,), w, b), _ln_ref(x, 1, w, b, 1e-5), rtol=1e-10, atol=1e-12)
    w2 = rng.standard_normal((3, 8))
    close(bc.layer_norm(x, (3, 8), w2, eps=1e-3), _ln_ref(x, 2, w2, None, 1e-3), rtol=1e-10, atol=1e-12)
    with pytest.raises(bc.InvalidProblemError):
        bc.layer_norm(x, (4,))


def test_rms_norm(rng):
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal(6)
    eps = np.finfo(np.float64).eps
    ref = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w
    close(bc.rms_norm(x, 6, w), ref, rtol=1e-12)
    y, rstd = bc.rms_norm(x, (6,), w, eps=1e-6, return_stats=True)
    close(rstd, 1 / np.sqrt((x ** 2).mean(-1) + 1e-6), rtol=1e-12)


def test_layer_norm_backward_fd(rng):
    x = rng.standard_normal((3, 5))
    w = rng.standard_normal(5)
    b = rng.standard_normal(5)
    g = rng.standard_normal((3, 5))
    y, mean, rstd = bc.layer_norm(x, (5,), w, b, return_stats=True)
    dx, dw, db = bc.layer_norm_backward(g, x, (5,), mean, rstd, w, b)
    close(dx, fd_grad(lambda t: bc.layer_norm(t, (5,), w, b), x, g), rtol=1e-6, atol=1e-8)
    close(dw, fd_grad(lambda t: bc.layer_norm(x, (5,), t, b), w, g), rtol=1e-6, atol=1e-8)
    close(db, fd_grad(lambda t: bc.layer_norm(x, (5,), w, t), b, g), rtol=1e-6, atol=1e-8)
    dx2, dw2, db2 = bc.layer_norm_backward(g, x, (5,), mean, rstd, w, b, output_mask=(True, False, False))
    assert dw2 is None and db2 is None
    close(dx2, np_of(dx), rtol=0, atol=0)


def test_rms_norm_backward_fd(rng):
    x = rng.standard_normal((3, 5))
    w = rng.standard_normal(5)
    g = rng.standard_normal((3, 5))
    y, rstd = bc.rms_norm(x, (5,), w, eps=1e-6, return_stats=True)
    dx, dw = bc.rms_norm_backward(g, x, (5,), rstd, w)
    close(dx, fd_grad(lambda t: bc.rms_norm(t, (5,), w, eps=1e-6), x, g), rtol=1e-6, atol=1e-8)
    close(dw, fd_grad(lambda t: bc.rms_norm(x, (5,), t, eps=1e-6), w, g), rtol=1e-6, atol=1e-8)


# ---- cross-entropy --------------------------------------------------------------------------------------
def _ce_ref(x, t, reduction, ignore_index=-100, smoothing=0.0):
    lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    C = x.shape[1]
    keep = t != ignore_index
    tt = np.where(keep, t, 0)
    nll = lse - x[np.arange(len(t)), tt]
    smooth = lse - x.mean(1)
    loss = np.where(keep, (1 - smoothing) * nll + smoothing * smooth, 0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / keep.sum()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy(reduction, rng):
    x = rng.standard_normal((6, 5))
    t = rng.integers(0, 5, 6)
    t[2] = -100
    close(bc.cross_entropy(x, t, reduction=reduction), _ce_ref(x, t, reduction), rtol=1e-6)
    close(bc.cross_entropy(x, t.astype(np.int32), reduction=reduction, label_smoothing=0.1),
          _ce_ref(x, t, reduction, smoothing=0.1), rtol=1e-6)
    with pytest.raises(bc.InvalidProblemError):
        bc.cross_entropy(x, t, reduction="avg")
    with pytest.raises(bc.UnsupportedError):
        bc.cross_entropy(x[None], t)


def test_cross_entropy_probs(rng):
    x = rng.standard_normal((4, 3))
    p = rng.uniform(size=(4, 3))
    p /= p.sum(1, keepdims=True)
    lse = np.log(np.exp(x).sum(1, keepdims=True))
    close(bc.cross_entropy(x, p), (p * (lse - x)).sum(1).mean(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_backward_fd(reduction, rng):
    x = rng.standard_normal((4, 6))
    t = rng.integers(0, 6, 4)
    loss, lse = bc.cross_entropy(x, t, reduction=reduction, return_lse=True)
    g = rng.standard_normal(4) if reduction == "none" else np.float64(1.7)
    dloss = g if reduction == "none" else np.array(g)
    d = bc.cross_entropy_backward(dloss, x, t, lse, reduction=reduction)
    close(d, fd_grad(lambda a: bc.cross_entropy(a, t, reduction=reduction), x, g), rtol=1e-6, atol=1e-8)
    if reduction != "none":
        close(bc.cross_entropy_backward(1.7, x, t, lse, reduction=reduction), np_of(d), rtol=1e-6)


def test_cross_entropy_errors(rng):
    x = rng.standard_normal((4, 6))
    with pytest.raises(bc.InvalidProblemError):  # target out of range (CPU reference checks)
        bc.cross_entropy(x, np.array([0, 1, 7, 2]))
    with pytest.raises(bc.Error):  # wrong target length
        bc.cross_entropy(x, np.array([0, 1, 2]))


# ---- torch as an independent oracle ----------------------------------------------------------------------
@needs_torch
def test_against_torch(rng):
    import torch
    import torch.nn.functional as F
    x = torch.randn(4, 8, dtype=torch.float64)
    w = torch.randn(8, dtype=torch.float64)
    b = torch.randn(8, dtype=torch.float64)
    W = torch.randn(5, 8, dtype=torch.float64)
    t = torch.randint(0, 8, (4,))
    T = torch.from_dlpack
    assert torch.allclose(T(bc.layer_norm(x, (8,), w, b)), F.layer_norm(x, (8,), w, b))
    assert torch.allclose(T(bc.rms_norm(x, (8,), w)), F.rms_norm(x, (8,), w))
    assert torch.allclose(T(bc.softmax(x, 0)), torch.softmax(x, 0))
    assert torch.allclose(T(bc.linear(x, W, None, activation="gelu")), F.gelu(F.linear(x, W)))
    assert T(bc.cross_entropy(x.float(), t, loss_dtype="float32")).dtype == torch.float32
    assert torch.allclose(T(bc.cross_entropy(x, t, label_smoothing=0.2)),
                          F.cross_entropy(x, t, label_smoothing=0.2))
    assert torch.allclose(T(bc.var(x, 1)), torch.var(x, 1))
    assert torch.allclose(T(bc.matmul(x, W.T)), x @ W.T)
    # half-precision types
    h = torch.randn(16, 32, dtype=torch.bfloat16)
    assert torch.allclose(T(bc.softmax(h)).float(), torch.softmax(h.float(), -1), atol=1e-2)
    assert T(bc.silu(h)).dtype == torch.bfloat16


def test_numpy_scalars_are_host_scalars():
    x = np.ones(3, np.float32)
    y = bc.add(x, np.float32(2.5))
    assert y.dtype == "float32"
    close(y, x + 2.5)
    assert bc.add(x, np.int64(2)).dtype == "float32"
    assert bc.mul(np.arange(3), np.bool_(True)).dtype == "int64"
    assert bc.add(np.arange(3, dtype=np.int32), np.int64(1)).dtype == "int32"  # a scalar does not widen


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_linear_cross_entropy_fd(reduction, rng):
    h = rng.standard_normal((5, 6))
    w = rng.standard_normal((7, 6))
    b = rng.standard_normal(7)
    t = rng.integers(0, 7, 5)
    t[1] = -100
    loss = bc.linear_cross_entropy(h, w, t, b, reduction=reduction, label_smoothing=0.1)
    close(loss, _ce_ref(h @ w.T + b, t, reduction, smoothing=0.1), rtol=1e-12)
    loss2, dh, dw, db = bc.linear_cross_entropy(h, w, t, b, reduction=reduction, label_smoothing=0.1,
                                                return_grads=True, grad_loss=2.0)
    close(loss2, np_of(loss), rtol=0, atol=0)
    f = lambda hh, ww, bb: bc.linear_cross_entropy(hh, ww, t, bb, reduction=reduction, label_smoothing=0.1)  # noqa
    g = np.float64(2.0)
    close(dh, fd_grad(lambda x: f(x, w, b), h, g), rtol=1e-6, atol=1e-8)
    close(dw, fd_grad(lambda x: f(h, x, b), w, g), rtol=1e-6, atol=1e-8)
    close(db, fd_grad(lambda x: f(h, w, x), b, g), rtol=1e-6, atol=1e-8)
    with pytest.raises(bc.InvalidProblemError):
        bc.linear_cross_entropy(h, w, t, reduction="none", return_grads=True)


# ---- random numbers, dropout ---------------------------------------------------------------------------
def test_random_and_dropout():
    u = np_of(bc.uniform((20000,), -1.0, 3.0, seed=1))
    assert u.dtype == np.float32 and u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    n = np_of(bc.normal((50000,), 2.0, 3.0, seed=2, dtype="float64"))
    assert abs(n.mean() - 2) < 0.05 and abs(n.std() - 3) < 0.05
    np.testing.assert_array_equal(np_of(bc.uniform((7,), seed=3, offset=4)), np_of(bc.uniform((7,), seed=3, offset=4)))
    assert not np.array_equal(np_of(bc.uniform((7,), seed=3)), np_of(bc.uniform((7,), seed=4)))
    x = np.random.default_rng(0).standard_normal((64, 50)).astype(np.float32)
    y, mask = bc.dropout(x, 0.25, seed=9, return_mask=True)
    y = np_of(y)
    kept = y != 0
    assert 0.2 < 1 - kept.mean() < 0.3
    close(y[kept], x[kept] / 0.75, rtol=1e-6)
    g = np.ones_like(x)
    close(bc.dropout_backward(g, 0.25, seed=9), np.where(kept, 1 / 0.75, 0), rtol=1e-6)
    close(bc.dropout_backward(g, 0.25, mask=mask), np.where(kept, 1 / 0.75, 0), rtol=1e-6)
    assert bc.dropout(x, 0.5, training=False, seed=0) is x
    with pytest.raises(bc.InvalidProblemError):
        bc.dropout_backward(g, 0.25)
    with pytest.raises(bc.InvalidProblemError):
        bc.dropout(x, 1.5, seed=0)
    with pytest.raises(TypeError):
        bc.dropout(x, 0.5)  # the seed is required

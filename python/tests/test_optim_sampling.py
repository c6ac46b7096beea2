"""Part A of the bindings on the CPU: the optimizers SGD / Lion / Adafactor
(functional steps, plan layer, baracuda.torch drop-ins against torch.optim.SGD,
a hand-written Lion, torch.optim.Adafactor and a NumPy reference of the
documented Adafactor formula), the gradient utilities (global_norm,
clip_grad_norm_, unscale, foreach), sampling (randperm, multinomial), the
ternary ops (where, clamp, lerp, addcmul, addcdiv) and the factories
(arange, linspace); errors, zero-size, non-contiguous inputs, out=."""
import copy
import math

import numpy as np
import pytest

import baracuda as bc
from baracuda import plans as P
from conftest import HAVE_TORCH, np_of

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np_of(a) if not isinstance(a, np.ndarray) else a, b, rtol=rtol, atol=atol)


SHAPES = [(3, 4), (5,), (), (2, 3, 2), (0, 3)]


def _params(rng, shapes=SHAPES, dtype=np.float32):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


# ---- SGD ---------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("momentum,dampening,nesterov", [(0.0, 0.0, False), (0.9, 0.0, False), (0.9, 0.1, False),
                                                         (0.9, 0.0, True)])
@pytest.mark.parametrize("wd", [0.0, 0.05])
@pytest.mark.parametrize("maximize", [False, True])
def test_sgd_matches_torch(momentum, dampening, nesterov, wd, maximize):
    torch.manual_seed(0)
    ref = [torch.randn(s) for s in SHAPES]
    ours = [t.clone() for t in ref]
    o1 = torch.optim.SGD(ref, lr=0.1, momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=wd,
                         maximize=maximize)
    o2 = bt().SGD(ours, lr=0.1, momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=wd,
                  maximize=maximize)
    for it in range(4):
        for ps in (ref, ours):
            g = torch.Generator().manual_seed(it)
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    if momentum:
        for a, b in zip(ref, ours):
            torch.testing.assert_close(o1.state[a]["momentum_buffer"], o2.state[b]["momentum_buffer"], rtol=1e-6,
                                       atol=1e-6)


def test_sgd_functional_first_step_and_momentum(rng):
    ps = _params(rng)
    gs = _params(rng)
    bufs = [np.full(s, 7.0, np.float32) for s in SHAPES]  # overwritten with g at the first step
    ref = [p.copy() for p in ps]
    r = bc.sgd_(ps, gs, bufs, lr=0.5, momentum=0.9, buffers_initialized=False)
    assert r is ps
    for p, p0, g, b in zip(ps, ref, gs, bufs):
        close(b, g)
        close(p, p0 - np.float32(0.5) * g)
    bc.sgd_(ps, gs, bufs, lr=0.5, momentum=0.9)
    for b, g in zip(bufs, gs):
        close(b, np.float32(0.9) * g + g, rtol=1e-6)


def test_sgd_errors(rng):
    ps, gs = _params(rng, [(3,)]), _params(rng, [(3,)])
    with pytest.raises(bc.InvalidProblemError, match="^SgdPlan"):
        bc.sgd_(ps, gs, lr=0.1, momentum=0.9)  # momentum without buffers
    with pytest.raises(bc.InvalidProblemError, match="^SgdPlan"):
        bc.sgd_(ps, gs, [np.zeros(3, np.float32)], lr=0.1, momentum=0.0, nesterov=True)
    with pytest.raises(bc.InvalidProblemError, match="^SgdPlan"):
        bc.sgd_(ps, [np.zeros(4, np.float32)], lr=0.1)  # a grad of the wrong shape
    with pytest.raises(ValueError, match="grads has 2 tensors"):
        bc.sgd_(ps, gs + gs, lr=0.1)
    with pytest.raises(TypeError, match="list of tensors"):
        bc.sgd_(ps[0], gs, lr=0.1)
    with pytest.raises(bc.InvalidProblemError, match="^SgdPlan"):
        bc.sgd_([np.zeros((4, 4), np.float32)[:, ::2]], [np.zeros((4, 2), np.float32)], lr=0.1)  # not dense
    if HAVE_TORCH:
        with pytest.raises(ValueError, match="Nesterov"):
            bt().SGD([torch.zeros(2)], lr=0.1, nesterov=True)


def test_sgd_empty_list_is_noop():
    assert bc.sgd_([], [], lr=0.1) == []


# ---- Lion --------------------------------------------------------------------------------------
def lion_ref(p, g, m, lr, b1, b2, wd, maximize):
    g = -g if maximize else g
    c = b1 * m + (1 - b1) * g
    p = p * (1 - lr * wd) - lr * np.sign(c)
    m = b2 * m + (1 - b2) * g
    return p, m


@pytest.mark.parametrize("wd,maximize", [(0.0, False), (0.1, False), (0.1, True)])
def test_lion_matches_reference(rng, wd, maximize):
    ps = _params(rng)
    ms = [np.zeros(s, np.float32) for s in SHAPES]
    rp, rm = [p.astype(np.float64) for p in ps], [m.astype(np.float64) for m in ms]
    for it in range(4):
        gs = _params(rng)
        bc.lion_(ps, gs, ms, lr=1e-2, betas=(0.9, 0.99), weight_decay=wd, maximize=maximize)
        for k in range(len(ps)):
            rp[k], rm[k] = lion_ref(rp[k], gs[k].astype(np.float64), rm[k], 1e-2, 0.9, 0.99, wd, maximize)
    for a, b in zip(ps, rp):
        close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(ms, rm):
        close(a, b, rtol=1e-5, atol=1e-6)


@needs_torch
def test_lion_torch_optimizer(rng):
    torch.manual_seed(0)
    ps = [torch.randn(s) for s in SHAPES]
    ref = [p.double().clone() for p in ps]
    mr = [torch.zeros_like(p) for p in ref]
    opt = bt().Lion(ps, lr=1e-2, betas=(0.8, 0.95), weight_decay=0.1)
    for it in range(3):
        for p, r in zip(ps, ref):
            p.grad = torch.randn(p.shape)
            r.grad = p.grad.double()
        opt.step()
        for k, r in enumerate(ref):
            a, m = lion_ref(r.numpy(), r.grad.numpy(), mr[k].numpy(), 1e-2, 0.8, 0.95, 0.1, False)
            ref[k], mr[k] = torch.from_numpy(np.asarray(a)), torch.from_numpy(np.asarray(m))
    for p, r in zip(ps, ref):
        torch.testing.assert_close(p.double(), r, rtol=1e-5, atol=1e-6)
    assert set(opt.state_dict()["state"][0]) == {"exp_avg"}


# ---- Adafactor ---------------------------------------------------------------------------------
def adafactor_ref(p, g, state, t, lr=1e-2, beta2_decay=-0.8, eps1=None, eps2=1e-3, d=1.0, wd=0.0, maximize=False):
    """The formula of include/baracuda/ops/optim_adafactor.hpp in f64 (NumPy)."""
    eps1 = np.finfo(np.float32).eps if eps1 is None else eps1
    g = -g if maximize else g
    w = t ** beta2_decay
    rho = min(lr, 1 / math.sqrt(t))
    n = max(p.size, 1)
    alpha = max(eps2, np.linalg.norm(p) / math.sqrt(n)) * rho
    p = p * (1 - lr * wd)
    if p.ndim >= 2:
        R, C = p.shape[-2], p.shape[-1]
        rv = state["row_var"]
        cv = state["col_var"]
        rv += w * ((g * g).sum(-1, keepdims=True) / C - rv)
        cv += w * ((g * g).sum(-2, keepdims=True) / R - cv)
        v = rv * cv / np.maximum(rv.mean(-2, keepdims=True), eps1)
    else:
        var = state["variance"]
        var += w * (g * g - var)
        v = var
    u = g / np.sqrt(np.maximum(v, eps1 * eps1))
    denom = max(1.0, np.linalg.norm(u) / (math.sqrt(n) * d))
    return p - alpha / denom * u


AF_SHAPES = [(3, 4), (5,), (), (2, 3, 2), (4, 1)]


def _af_states(shapes, dtype=np.float32):
    rv, cv, vv = [], [], []
    for s in shapes:
        if len(s) >= 2:
            rv.append(np.zeros(s[:-1] + (1,), dtype))
            cv.append(np.zeros(s[:-2] + (1, s[-1]), dtype))
            vv.append(None)
        else:
            rv.append(None)
            cv.append(None)
            vv.append(np.zeros(s, dtype))
    return rv, cv, vv


@pytest.mark.parametrize("wd,maximize,eps1", [(0.0, False, None), (0.1, True, 1e-6)])
def test_adafactor_matches_numpy_reference(rng, wd, maximize, eps1):
    ps = _params(rng, AF_SHAPES)
    rv, cv, vv = _af_states(AF_SHAPES)
    ref = [p.astype(np.float64) for p in ps]
    rrv, rcv, rvv = _af_states(AF_SHAPES, np.float64)
    for t in range(1, 5):
        gs = _params(rng, AF_SHAPES)
        bc.adafactor_(ps, gs, rv, cv, vv, step=t, lr=0.05, weight_decay=wd, maximize=maximize, eps=(eps1, 1e-3))
        for k in range(len(ps)):
            st = {"row_var": rrv[k], "col_var": rcv[k], "variance": rvv[k]}
            ref[k] = adafactor_ref(ref[k], gs[k].astype(np.float64), st, t, lr=0.05, wd=wd, maximize=maximize,
                                   eps1=eps1)
    for a, b in zip(ps, ref):
        close(a, b, rtol=2e-5, atol=1e-6)
    for a, b in zip(rv + cv + vv, rrv + rcv + rvv):
        if a is not None:
            close(a, b, rtol=2e-5, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("wd,maximize", [(0.0, False), (0.05, True)])
def test_adafactor_matches_torch(wd, maximize):
    torch.manual_seed(0)
    ref = [torch.randn(s) for s in AF_SHAPES]
    ours = [t.clone() for t in ref]
    o1 = torch.optim.Adafactor(ref, lr=0.05, weight_decay=wd, maximize=maximize)
    o2 = bt().Adafactor(ours, lr=0.05, weight_decay=wd, maximize=maximize)
    for it in range(4):
        for ps in (ref, ours):
            g = torch.Generator().manual_seed(it)
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-6)
    s1, s2 = o1.state_dict()["state"], o2.state_dict()["state"]
    for k in s1:
        assert set(s1[k]) == set(s2[k])
        for name in s1[k]:
            assert s1[k][name].shape == s2[k][name].shape, name
    assert o2.state[ours[0]]["step"].item() == 4


def test_adafactor_plan_layer_and_errors(rng):
    d = P.AdafactorDescriptor(shapes=[(3, 4), (5,)], dtype="float32")
    plan = P.AdafactorPlan.select(d)
    assert plan.factored(0) and not plan.factored(1)
    assert plan.row_var_shape(0) == (3, 1) and plan.col_var_shape(0) == (1, 4)
    assert plan.eps1 == np.finfo(np.float32).eps
    with pytest.raises(IndexError):
        plan.factored(2)
    ps = _params(rng, [(3, 4), (5,)])
    gs = _params(rng, [(3, 4), (5,)])
    rv, cv, vv = _af_states([(3, 4), (5,)])
    assert plan.can_implement(params=ps, grads=gs, row_vars=rv, col_vars=cv, variances=vv, step=1) is True
    with pytest.raises(bc.InvalidProblemError, match="^AdafactorPlan"):
        plan.run(params=ps, grads=gs, row_vars=rv, col_vars=cv, variances=vv, step=0)  # step >= 1
    with pytest.raises(bc.InvalidProblemError, match="^AdafactorPlan"):
        plan.run(params=ps, grads=gs, row_vars=rv, col_vars=cv, variances=[np.zeros(5, np.float32)] * 2, step=1)
    with pytest.raises(TypeError, match="unknown argument 'bogus'"):
        plan.run(params=ps, bogus=1)
    with pytest.raises(bc.InvalidProblemError, match="^AdafactorPlan"):
        P.AdafactorPlan.select(P.AdafactorDescriptor(shapes=[(3,)], d=0.5))
    with pytest.raises(bc.InvalidProblemError, match="^AdafactorPlan"):
        bc.adafactor_([np.zeros(3, np.float32)], [np.zeros(3, np.float32)], [None], [None],
                      [np.zeros(3, np.float32)], step=1, lr=-1.0)


def test_adafactor_zero_size_and_noncontiguous_grad(rng):
    p = np.zeros((0, 3), np.float32)
    bc.adafactor_([p], [p.copy()], [np.zeros((0, 1), np.float32)], [np.zeros((1, 3), np.float32)], [None], step=1)
    # the CPU plan reads any strides
    ps = _params(rng, [(3, 4)])
    g = rng.standard_normal((4, 3)).astype(np.float32).T
    ref = ps[0].astype(np.float64)
    rv, cv, vv = _af_states([(3, 4)])
    rrv, rcv, _ = _af_states([(3, 4)], np.float64)
    bc.adafactor_(ps, [g], rv, cv, vv, step=1)
    ref = adafactor_ref(ref, g.astype(np.float64), {"row_var": rrv[0], "col_var": rcv[0]}, 1)
    close(ps[0], ref, rtol=2e-5, atol=1e-6)


# ---- gradient utilities ------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, float("inf"), "inf"])
def test_global_norm(rng, norm_type):
    ts = _params(rng)
    flat = np.concatenate([t.ravel() for t in ts]).astype(np.float64)
    ref = np.abs(flat).max() if norm_type != 2.0 else np.sqrt((flat ** 2).sum())
    y = bc.global_norm(ts, norm_type)
    assert y.shape == () and y.dtype == "float32"
    close(y, ref, rtol=1e-6)
    out = np.zeros((), np.float32)
    assert bc.global_norm(ts, norm_type, out=out) is out
    close(out, ref, rtol=1e-6)


def test_global_norm_empty_and_errors(rng):
    close(bc.global_norm([]), 0.0)
    close(bc.global_norm([np.zeros((0, 4), np.float32)]), 0.0)
    with pytest.raises(bc.UnsupportedError, match="norm_type"):
        bc.global_norm(_params(rng), 1.0)
    with pytest.raises(bc.Error, match="^GlobalNormPlan"):
        bc.global_norm([np.zeros(3, np.float32), np.zeros(3, np.float64)])


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch.manual_seed(0)
    ref = [torch.randn(s, requires_grad=True) for s in SHAPES[:4]]  # torch's inf norm refuses an empty tensor
    ours = [torch.nn.Parameter(t.detach().clone()) for t in ref]
    for a, b in zip(ref, ours):
        a.grad = torch.randn(a.shape)
        b.grad = a.grad.clone()
    n1 = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
    n2 = bt().clip_grad_norm_(ours, max_norm, norm_type)
    torch.testing.assert_close(n2, n1, rtol=1e-6, atol=0)
    for a, b in zip(ref, ours):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-6, atol=1e-7)
    # functional form on the gradients themselves
    gs = [a.grad.clone() for a in ref]
    t = bc.clip_grad_norm_(gs, max_norm, norm_type)
    close(t, torch.nn.utils.get_total_norm(gs, norm_type).numpy() if hasattr(torch.nn.utils, "get_total_norm")
          else torch.linalg.vector_norm(torch.cat([g.flatten() for g in gs]), norm_type).numpy(), rtol=1e-5)


@needs_torch
def test_clip_grad_norm_mixed_dtypes_and_nonfinite():
    a = torch.nn.Parameter(torch.zeros(3))
    b = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))
    a.grad = torch.tensor([3.0, 0.0, 0.0])
    b.grad = torch.tensor([4.0, 0.0, 0.0, 0.0], dtype=torch.bfloat16)
    n = bt().clip_grad_norm_([a, b], 1.0)
    torch.testing.assert_close(n, torch.tensor(5.0))
    torch.testing.assert_close(a.grad, torch.tensor([0.6, 0.0, 0.0]), rtol=1e-5, atol=0)
    torch.testing.assert_close(b.grad.float(), torch.tensor([0.8, 0.0, 0.0, 0.0]), rtol=1e-2, atol=0)
    a.grad = torch.tensor([float("inf"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        bt().clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    found = np.zeros((), np.float32)
    g = [np.array([np.nan, 1.0], np.float32)]
    bc.clip_grad_norm_(g, 1.0, found_inf=found)
    assert found == 1.0


def test_unscale_and_foreach(rng):
    gs = _params(rng)
    ref = [g.copy() for g in gs]
    found = np.zeros((), np.float32)
    bc.non_finite_check_and_unscale_(gs, found, np.array(0.5, np.float32))
    assert found == 0.0
    for g, r in zip(gs, ref):
        close(g, r * 0.5)
    gs[0][0, 0] = np.inf
    bc.non_finite_check_and_unscale_(gs, found, np.array(1.0, np.float32))
    assert found == 1.0
    ts = _params(rng)
    ref = [t.copy() for t in ts]
    bc.foreach_mul_(ts, 3.0)
    for t, r in zip(ts, ref):
        close(t, r * 3.0)
    bc.foreach_mul_(ts, np.array(2.0, np.float32))
    for t, r in zip(ts, ref):
        close(t, r * 6.0)
    bc.foreach_zero_(ts)
    for t in ts:
        assert not np.any(t)
    with pytest.raises(TypeError, match="found_inf"):
        bc.non_finite_check_and_unscale_(gs, None, np.array(1.0, np.float32))
    with pytest.raises(bc.InvalidProblemError, match="^MultiTensorScalePlan"):
        bc.foreach_mul_([np.zeros(3, np.float32)], np.array([2.0], np.float32))  # not [] shaped


# ---- randperm ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32", "float64", "float16", "bfloat16"])
def test_randperm_is_a_permutation(dtype):
    n = {"float16": 2000, "bfloat16": 256}.get(dtype, 1000)
    y = bc.randperm(n, seed=7, dtype=dtype)
    assert y.shape == (n,) and y.dtype == dtype
    v = np_of(bc.to(y, "float64")) if dtype == "bfloat16" else np_of(y)
    np.testing.assert_array_equal(np.sort(v.astype(np.int64)), np.arange(n))


def test_randperm_seeds_offsets_and_out():
    a, b = np_of(bc.randperm(100, seed=1)), np_of(bc.randperm(100, seed=1))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, np_of(bc.randperm(100, seed=2)))
    assert not np.array_equal(a, np_of(bc.randperm(100, seed=1, offset=1)))
    out = np.zeros(200, np.int64)[::2]  # any stride
    assert bc.randperm(100, seed=1, out=out) is out
    np.testing.assert_array_equal(out, a)
    assert bc.randperm(0, seed=1).shape == (0,)
    np.testing.assert_array_equal(np_of(bc.randperm(1, seed=3)), [0])


def test_randperm_uniform_chi_square():
    # the position of element 0 over many seeds: uniform over n places
    n, trials = 8, 4000
    counts = np.zeros(n)
    for s in range(trials):
        counts[int(np.argmax(np_of(bc.randperm(n, seed=12345, offset=s)) == 0))] += 1
    chi2 = ((counts - trials / n) ** 2 / (trials / n)).sum()
    assert chi2 < 24.3  # chi-square(7) at p = 0.001


def test_randperm_errors():
    with pytest.raises(bc.InvalidProblemError, match="^RandpermPlan"):
        bc.randperm(-1, seed=0)
    with pytest.raises(bc.InvalidProblemError, match="^RandpermPlan"):
        bc.randperm(300, seed=0, dtype="bfloat16")  # beyond bf16's 2^8 consecutive integers
    with pytest.raises(bc.Error, match="^RandpermPlan"):
        bc.randperm(4, seed=0, out=np.zeros(5, np.int64))
    with pytest.raises(bc.Error, match="^RandpermPlan"):
        bc.randperm(4, seed=0, dtype="bool")


# ---- multinomial -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_basic(rng, dtype, replacement):
    p = rng.random((4, 10)).astype(dtype)
    p[1, 3] = 0
    y = np_of(bc.multinomial(p, 6, replacement, seed=5))
    assert y.shape == (4, 6) and y.dtype == np.int64
    assert y.min() >= 0 and y.max() < 10
    assert not np.any(y[1] == 3)  # weight 0 never chosen
    if not replacement:
        for row in y:
            assert len(set(row.tolist())) == 6
    np.testing.assert_array_equal(y, np_of(bc.multinomial(p, 6, replacement, seed=5)))
    y1 = np_of(bc.multinomial(p[0], 6, replacement, seed=5, dtype="int32"))
    assert y1.shape == (6,) and y1.dtype == np.int32


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_chi_square(replacement):
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    trials = 20000
    y = np_of(bc.multinomial(np.tile(w, (trials, 1)), 1, replacement, seed=2024))
    counts = np.bincount(y.ravel(), minlength=4)
    expect = trials * w / w.sum()
    chi2 = ((counts - expect) ** 2 / expect).sum()
    assert chi2 < 16.3  # chi-square(3) at p = 0.001


def test_multinomial_full_draw_without_replacement_is_permutation():
    y = np_of(bc.multinomial(np.ones(50, np.float32), 50, seed=1))
    np.testing.assert_array_equal(np.sort(y), np.arange(50))


def test_multinomial_errors_zero_size_noncontiguous(rng):
    with pytest.raises(bc.InvalidProblemError, match="^MultinomialPlan"):
        bc.multinomial(np.array([1.0, -1.0], np.float32), 1, seed=0)
    with pytest.raises(bc.InvalidProblemError, match="^MultinomialPlan"):
        bc.multinomial(np.array([1.0, 0.0], np.float32), 2, seed=0)  # too few positive weights
    with pytest.raises(bc.InvalidProblemError, match="^MultinomialPlan"):
        bc.multinomial(np.zeros(3, np.float32), 1, True, seed=0)  # zero sum
    with pytest.raises(bc.InvalidProblemError, match="^MultinomialPlan"):
        bc.multinomial(np.ones(3, np.float32), 4, seed=0)  # num_samples > C without replacement
    with pytest.raises(bc.UnsupportedError, match="^MultinomialPlan"):
        bc.multinomial(np.ones(3, np.int32), 1, seed=0)
    with pytest.raises(bc.UnsupportedError, match="^MultinomialPlan"):
        bc.multinomial(np.ones(3, np.float32), 1, seed=0, dtype="float32")
    assert bc.multinomial(np.ones((2, 3), np.float32), 0, seed=0).shape == (2, 0)
    assert bc.multinomial(np.ones((0, 3), np.float32), 2, seed=0).shape == (0, 2)
    p = rng.random((10, 4)).astype(np.float32)
    np.testing.assert_array_equal(np_of(bc.multinomial(p.T, 3, seed=9)),
                                  np_of(bc.multinomial(np.ascontiguousarray(p.T), 3, seed=9)))
    plan = P.MultinomialPlan.select(P.MultinomialDescriptor(dtype="float32", probs_shape=(2, 3), num_samples=2))
    assert plan.out_shape == (2, 2) and plan.rows == 2 and plan.categories == 3
    plan.check_probs()  # CPU: run() already raised


# ---- ternary -----------------------------------------------------------------------------------
@needs_torch
def test_where(rng):
    c = rng.random((3, 4)) > 0.5
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float64)
    ref = torch.where(torch.from_numpy(c), torch.from_numpy(a), torch.from_numpy(b))
    y = bc.where(c, a, b)
    assert y.dtype == "float64"
    close(y, ref.numpy())
    close(bc.where(c, a, 0.0), torch.where(torch.from_numpy(c), torch.from_numpy(a), 0.0).numpy())
    y = bc.where(c, 1, 2)  # int scalars: int64 as torch
    assert y.dtype == "int64"
    np.testing.assert_array_equal(np_of(y), np.where(c, 1, 2))
    with pytest.raises(TypeError):
        bc.where(None, a, b)
    with pytest.raises(bc.Error, match="^TernaryPlan"):
        bc.where(a, a, b)  # condition not bool
    with pytest.raises(bc.InvalidProblemError, match="^TernaryPlan"):
        bc.where(c, a, np.zeros(3, np.float32))  # shapes do not broadcast


@needs_torch
def test_clamp(rng):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    lo = rng.standard_normal((6,)).astype(np.float32) - 0.5
    hi = lo + 1.0
    tx = torch.from_numpy(x)
    close(bc.clamp(x, lo, hi), torch.clamp(tx, torch.from_numpy(lo), torch.from_numpy(hi)).numpy())
    close(bc.clamp(x, -0.5), torch.clamp(tx, min=-0.5).numpy())
    close(bc.clamp(x, max=0.5), torch.clamp(tx, max=0.5).numpy())
    close(bc.clamp(x, 1.0, -1.0), torch.clamp(tx, 1.0, -1.0).numpy())  # min > max: max
    close(bc.clip(x, None, hi), torch.clip(tx, None, torch.from_numpy(hi)).numpy())
    xi = rng.integers(-10, 10, (7,)).astype(np.int32)
    y = bc.clamp(xi, -3, 3)
    assert y.dtype == "int32"
    np.testing.assert_array_equal(np_of(y), np.clip(xi, -3, 3))
    with pytest.raises(bc.InvalidProblemError, match="clamp"):
        bc.clamp(x)


@needs_torch
def test_lerp_addcmul_addcdiv(rng):
    a, b, c = (rng.standard_normal((4, 5)).astype(np.float32) for _ in range(3))
    w = rng.random((5,)).astype(np.float32)
    ta, tb, tc, tw = (torch.from_numpy(v) for v in (a, b, c, w))
    close(bc.lerp(a, b, w), torch.lerp(ta, tb, tw).numpy(), rtol=1e-6, atol=1e-6)
    close(bc.lerp(a, b, 0.3), torch.lerp(ta, tb, 0.3).numpy(), rtol=1e-6, atol=1e-6)
    close(bc.addcmul(a, b, c, value=0.5), torch.addcmul(ta, tb, tc, value=0.5).numpy(), rtol=1e-6, atol=1e-6)
    close(bc.addcdiv(a, b, c, value=2), torch.addcdiv(ta, tb, tc, value=2).numpy(), rtol=1e-5, atol=1e-5)
    close(bc.addcmul(a, b, c), torch.addcmul(ta, tb, tc).numpy(), rtol=1e-6, atol=1e-6)
    # non-contiguous views and out= (in place)
    at = np.ascontiguousarray(a.T).T
    close(bc.lerp(at, b.T.T, w), torch.lerp(ta, tb, tw).numpy(), rtol=1e-6, atol=1e-6)
    out = a.copy()
    assert bc.addcmul(out, b, c, value=-1.0, out=out) is out
    close(out, a - b * c, rtol=1e-6, atol=1e-6)
    # errors
    ai = np.ones(3, np.int32)
    with pytest.raises(bc.Error, match="^TernaryPlan"):
        bc.lerp(ai, ai, ai)  # floating types only (an int tensor with a float scalar weight is float32)
    with pytest.raises(bc.Error, match="^TernaryPlan"):
        bc.addcdiv(ai, ai, ai)
    with pytest.raises(bc.Error, match="^TernaryPlan"):
        bc.addcmul(a, b, c, out=np.zeros((4, 4), np.float32))


def test_ternary_zero_size_and_plan_layer():
    z = np.zeros((0, 3), np.float32)
    assert bc.lerp(z, z, 0.5).shape == (0, 3)
    assert bc.where(np.zeros((0, 1), bool), z, 1.0).shape == (0, 3)
    d = P.TernaryDescriptor(op="addcmul", a=P.ElementwiseOperand.tensor("float32", (2,)),
                            b=P.ElementwiseOperand.scalar("float64"), c=P.ElementwiseOperand.tensor("float32", (2,)),
                            alpha=2.0)
    plan = P.TernaryPlan.select(d)
    out = np.zeros(2, np.float32)
    plan.run(a=np.ones(2, np.float32), b_value=3.0, c=np.array([1.0, 2.0], np.float32), out=out)
    np.testing.assert_array_equal(out, [7.0, 13.0])
    bd = P.TernaryBackwardDescriptor(forward=P.TernaryDescriptor(
        op="lerp", a=P.ElementwiseOperand.tensor("float64", (3,)), b=P.ElementwiseOperand.tensor("float64", (3,)),
        c=P.ElementwiseOperand.tensor("float64", (3,))))
    bp = P.TernaryBackwardPlan.select(bd)
    a, b, w, dy = np.array([1.0, 2, 3]), np.array([4.0, 4, 4]), np.array([0.5, 0.25, 0.0]), np.ones(3)
    da, db, dc = np.zeros(3), np.zeros(3), np.zeros(3)
    bp.run(dy=dy, a=a, b=b, c=w, da=da, db=db, dc=dc)
    close(da, 1 - w)
    close(db, w)
    close(dc, b - a)


# ---- factories ---------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("args,dtype", [((5,), None), ((1, 10, 3), None), ((0, 1, 0.1), None), ((-2.5, 3.0, 0.5), None),
                                        ((10, 0, -3), None), ((0, 5), "float64"),
                                        ((0, 8), "bfloat16"), ((3, 3), None)])
def test_arange_matches_torch(args, dtype):
    td = getattr(torch, dtype) if dtype else None
    ref = torch.arange(*args, dtype=td)
    y = bc.arange(*args, dtype=dtype)
    assert y.dtype == str(ref.dtype)[6:]
    t = torch.from_dlpack(y)
    assert t.shape == ref.shape
    # floating: f32 fmaf(step, i, start) as torch's CUDA kernel; torch's CPU kernel may differ by 1 ulp
    tol = 0 if not t.is_floating_point() else 2e-7 if t.dtype == torch.float32 else 1e-15
    torch.testing.assert_close(t, ref, rtol=tol, atol=tol)


@needs_torch
@pytest.mark.parametrize("args,dtype", [((0, 1, 5), None), ((-1, 1, 1), None), ((3, 7, 0), None),
                                        ((0, 1, 11), "float64"),
                                        ((-10, 10, 7), "int64"), ((0, 1, 33), "float16"), ((2, -2, 9), "bfloat16")])
def test_linspace_matches_torch(args, dtype):
    td = getattr(torch, dtype) if dtype else None
    ref = torch.linspace(*args, dtype=td)
    t = torch.from_dlpack(bc.linspace(*args, dtype=dtype))
    assert t.dtype == ref.dtype and t.shape == ref.shape
    torch.testing.assert_close(t, ref, rtol=0, atol=0)


def test_factories_out_errors_and_plan_layer():
    # integer arange truncates start and step first (torch's CUDA rule; torch's CPU raises for step 0.5 -> 0)
    np.testing.assert_array_equal(np_of(bc.arange(0, 2, 0.5, dtype="int32")), [0, 0, 0, 0])
    out = np.zeros(10, np.float32)[::2]
    assert bc.arange(0, 5, out=out) is not None
    np.testing.assert_array_equal(out, np.arange(5, dtype=np.float32))
    with pytest.raises(bc.InvalidProblemError, match="^FactoryPlan"):
        bc.arange(0, 5, 0)
    with pytest.raises(bc.InvalidProblemError, match="^FactoryPlan"):
        bc.arange(5, 0, 1)
    with pytest.raises(bc.InvalidProblemError, match="^FactoryPlan"):
        bc.linspace(0, 1, -1)
    with pytest.raises(bc.UnsupportedError, match="^FactoryPlan"):
        bc.arange(0, 2, dtype="bool")
    with pytest.raises(TypeError, match="arange"):
        bc.arange("a", 3)
    with pytest.raises(bc.Error, match="^FactoryPlan"):
        bc.arange(0, 5, out=np.zeros(4, np.float32))
    d = P.FactoryDescriptor(op="arange", dtype="int64", start=0, end=7, step=2)
    assert d.start == 0 and isinstance(d.end, int) and d.value is None
    plan = P.FactoryPlan.select(d)
    assert plan.output_shape == (4,) and plan.out_dtype == "int64"
    y = np.zeros(4, np.int64)
    plan.run(out=y)
    np.testing.assert_array_equal(y, [0, 2, 4, 6])
    fp = P.FactoryPlan.select(P.FactoryDescriptor(op="fill", dtype="float32", shape=(2, 2), value=1.5))
    y = np.zeros((2, 2), np.float32)
    fp.run(out=y)
    assert (y == 1.5).all()
    assert bc.linspace(0, 1, 0).shape == (0,)


def bt():
    import baracuda.torch as m
    return m


# ---- 16-bit dtypes (torch tensors: NumPy has no bf16) ------------------------------------------
LOW = ["bfloat16", "float16"]


def _low_setup(dtype, shapes=SHAPES[:4]):
    torch.manual_seed(1)
    td = getattr(torch, dtype)
    ps = [torch.randn(s).to(td) for s in shapes]
    gs = [torch.randn(s).to(td) for s in shapes]
    return td, ps, gs


@needs_torch
@pytest.mark.parametrize("dtype", LOW)
def test_sgd_lion_low_precision_is_f32_step_rounded_once(dtype):
    # documented: a bf16 / f16 parameter is widened, updated in f32 and rounded back once
    td, ps, gs = _low_setup(dtype)
    ref = [p.float() for p in ps]
    bufs, rbufs = [torch.ones(p.shape) for p in ps], [torch.ones(p.shape) for p in ps]
    bc.sgd_(ps, gs, bufs, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    bc.sgd_(ref, [g.float() for g in gs], rbufs, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    for p, r in zip(ps, ref):
        assert p.dtype == td
        torch.testing.assert_close(p, r.to(td), rtol=0, atol=0)
    ms, rms = [torch.zeros(p.shape) for p in ps], [torch.zeros(p.shape) for p in ps]
    ref = [p.float() for p in ps]
    bc.lion_(ps, gs, ms, lr=0.01, weight_decay=0.1)
    bc.lion_(ref, [g.float() for g in gs], rms, lr=0.01, weight_decay=0.1)
    for p, r in zip(ps, ref):
        torch.testing.assert_close(p, r.to(td), rtol=0, atol=0)


@needs_torch
@pytest.mark.parametrize("dtype", LOW)
def test_adafactor_low_precision(dtype):
    shapes = [(3, 4), (5,)]
    td, ps, gs = _low_setup(dtype, shapes)
    ref = [p.float() for p in ps]
    st = [_af_states(shapes) for _ in range(2)]
    eps1 = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}[dtype]  # finfo(dtype).eps: the default follows the dtype
    bc.adafactor_(ps, gs, *st[0], step=1, lr=0.05)
    bc.adafactor_(ref, [g.float() for g in gs], *st[1], step=1, lr=0.05, eps=(eps1, 1e-3))
    for p, r in zip(ps, ref):
        assert p.dtype == td
        torch.testing.assert_close(p.float(), r.to(td).float(), rtol=0, atol=0)


@needs_torch
@pytest.mark.parametrize("dtype", LOW)
def test_grad_utils_low_precision(dtype):
    td, ps, gs = _low_setup(dtype)
    flat = torch.cat([g.double().flatten() for g in gs])
    close(bc.global_norm(gs), flat.norm().numpy(), rtol=1e-6)
    close(bc.global_norm(gs, "inf"), flat.abs().max().numpy(), rtol=0)
    ref = [g.float() for g in gs]
    n = bc.clip_grad_norm_(gs, 0.5)
    close(n, flat.norm().numpy(), rtol=1e-6)
    coef = np.float32(0.5) / (np.float32(np_of(n)) + np.float32(1e-6))
    for g, r in zip(gs, ref):
        torch.testing.assert_close(g, (r * float(coef)).to(td), rtol=0, atol=0)
    bc.foreach_zero_(gs)
    assert all(not g.any() for g in gs)


@needs_torch
@pytest.mark.parametrize("dtype", LOW)
def test_sampling_and_ternary_low_precision(dtype):
    td = getattr(torch, dtype)
    p = torch.rand(3, 20).to(td)
    y = torch.from_dlpack(bc.multinomial(p, 20, seed=4))
    assert all(sorted(r.tolist()) == list(range(20)) for r in y)
    y = torch.from_dlpack(bc.multinomial(p, 50, True, seed=4))
    assert y.min() >= 0 and y.max() < 20
    a, b, c = (torch.randn(4, 5).to(td) for _ in range(3))
    w = torch.rand(5).to(td)
    tol = dict(rtol=1e-2, atol=1e-2) if td == torch.bfloat16 else dict(rtol=1e-3, atol=1e-3)
    for got, ref in [(bc.lerp(a, b, w), torch.lerp(a, b, w)), (bc.addcmul(a, b, c, value=0.5),
                                                                torch.addcmul(a, b, c, value=0.5)),
                     (bc.addcdiv(a, b, c.abs() + 1), torch.addcdiv(a, b, c.abs() + 1)),
                     (bc.clamp(a, b, b + 1), torch.clamp(a, b, b + 1)),
                     (bc.where(a > 0, a, b), torch.where(a > 0, a, b)),
                     (bc.where(a > 0, a, 2.5), torch.where(a > 0, a, 2.5))]:
        t = torch.from_dlpack(got)
        assert t.dtype == ref.dtype
        torch.testing.assert_close(t, ref, **tol)


@needs_torch
def test_torch_optimizers_train():
    torch.manual_seed(0)
    for cls, kw in [(bt().SGD, dict(lr=0.05, momentum=0.9)), (bt().Lion, dict(lr=2e-2)),
                    (bt().Adafactor, dict(lr=0.05))]:
        m = torch.nn.Linear(4, 1)
        opt = cls(m.parameters(), **kw)
        x = torch.randn(64, 4)
        y = x.sum(1, keepdim=True)
        first = None
        for _ in range(150):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
        assert loss.item() < 0.1 * first, cls.__name__


# ---- the list plans' options through the plan layer --------------------------------------------
def test_sgd_plan_device_scalars_grad_scale_found_inf(rng):
    shapes = [(3, 4), (5,)]
    d = P.SgdDescriptor(shapes=shapes, param_dtype="float32", device_scalars=True, has_grad_scale=True,
                        has_found_inf=True, weight_decay=0.0)
    assert d.shapes == [(3, 4), (5,)] and "SgdDescriptor(" in repr(d)
    plan = P.SgdPlan.select(d)
    assert plan.name == "SgdPlan" and plan.device == "cpu" and plan.descriptor.has_grad_scale
    ps, gs = _params(rng, shapes), _params(rng, shapes)
    ref = [p.copy() for p in ps]
    lr, scale, found = np.array(0.5, np.float32), np.array(4.0, np.float32), np.zeros((), np.float32)
    plan.run(params=ps, grads=gs, lr_tensor=lr, grad_scale=scale, found_inf=found)
    for p, r, g in zip(ps, ref, gs):
        close(p, r - np.float32(0.5) * (g / np.float32(4.0)))
    found[...] = 1.0  # a non-finite step: skipped
    before = [p.copy() for p in ps]
    plan.run(params=ps, grads=gs, lr_tensor=lr, grad_scale=scale, found_inf=found)
    for p, b in zip(ps, before):
        np.testing.assert_array_equal(p, b)
    assert isinstance(plan.sku_for(params=ps, grads=gs, lr_tensor=lr, grad_scale=scale, found_inf=found), dict)
    with pytest.raises(bc.InvalidProblemError, match="^SgdPlan"):
        plan.can_implement(params=ps, grads=gs, lr_tensor=lr, found_inf=found)  # grad_scale missing
    with pytest.raises(TypeError, match="list of tensors"):
        plan.run(params=ps[0], grads=gs)
    with pytest.raises(TypeError, match="unknown argument 'param'"):
        plan.run(param=ps)


@needs_torch
def test_lion_plan_master_weights_stochastic_rounding():
    shapes = [(64,), (8, 8)]
    torch.manual_seed(0)
    master = [torch.randn(s) for s in shapes]
    d = P.LionDescriptor(shapes=shapes, param_dtype="bfloat16", master_weights=True, stochastic_rounding=True)
    plan = P.LionPlan.select(d)
    outs = []
    for _ in range(2):
        m = [t.clone() for t in master]
        ps = [torch.empty(s, dtype=torch.bfloat16) for s in shapes]
        gs = [torch.ones(s, dtype=torch.bfloat16) for s in shapes]
        ms = [torch.zeros(s) for s in shapes]
        plan.run(params=ps, grads=gs, exp_avg=ms, master=m, lr=1e-3, seed=(7, 3))
        outs.append((ps, m))
    for a, b in zip(outs[0][0], outs[1][0]):
        assert torch.equal(a, b)  # the same (seed, offset): the same bits
    for p, m, m0 in zip(outs[0][0], outs[0][1], master):
        torch.testing.assert_close(m, m0 - 1e-3, rtol=0, atol=1e-6)  # sign(c) = 1
        assert ((p.float() - m).abs() <= m.abs() * 2 ** -7 + 1e-30).all()  # within one bf16 ulp


@needs_torch
@pytest.mark.parametrize("decoupled", [True, False])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_functional_matches_torch(decoupled, amsgrad):
    torch.manual_seed(0)
    ref = [torch.randn(s) for s in SHAPES]
    ours = [t.clone() for t in ref]
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    o1 = cls(ref, lr=1e-2, weight_decay=0.05, amsgrad=amsgrad)
    m = [torch.zeros(p.shape) for p in ours]
    v = [torch.zeros(p.shape) for p in ours]
    vmax = [torch.zeros(p.shape) for p in ours] if amsgrad else None
    fn = bc.adamw_ if decoupled else bc.adam_
    for it in range(1, 5):
        g = torch.Generator().manual_seed(it)
        for p in ref:
            p.grad = torch.randn(p.shape, generator=g)
        gs = [p.grad.clone() for p in ref]
        o1.step()
        assert fn(ours, gs, m, v, vmax, step=it, lr=1e-2, weight_decay=0.05, amsgrad=amsgrad) is ours
    for a, b in zip(ref, ours):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)
    with pytest.raises(bc.InvalidProblemError, match="^AdamPlan"):
        bc.adamw_(ours, gs, m, v, step=1, amsgrad=True)  # amsgrad without max_exp_avg_sqs


def test_functional_optimizers_amp_arguments(rng):
    shapes = [(3, 4), (5,)]
    ps, gs = _params(rng, shapes), _params(rng, shapes)
    ref = [p.copy() for p in ps]
    lr, scale, found = np.array(0.5, np.float32), np.array(4.0, np.float32), np.zeros((), np.float32)
    bc.sgd_(ps, [g * 4 for g in gs], lr=lr, grad_scale=scale, found_inf=found)  # lr a device scalar
    for p, r, g in zip(ps, ref, gs):
        close(p, r - np.float32(0.5) * g, rtol=1e-6, atol=1e-6)
    found[...] = 1
    before = [p.copy() for p in ps]
    bc.sgd_(ps, gs, lr=0.5, found_inf=found)
    bc.lion_(ps, gs, [np.zeros(s, np.float32) for s in shapes], lr=lr, found_inf=found)
    bc.adamw_(ps, gs, [np.zeros(s, np.float32) for s in shapes], [np.zeros(s, np.float32) for s in shapes], step=1,
              found_inf=found)
    for p, b in zip(ps, before):
        np.testing.assert_array_equal(p, b)
    # grad_scale divides the gradients: the same step as the unscaled gradients
    a = [p.copy() for p in ps]
    b = [p.copy() for p in ps]
    st = [[np.zeros(s, np.float32) for s in shapes] for _ in range(4)]
    bc.adamw_(a, [g * 8 for g in gs], st[0], st[1], step=1, grad_scale=np.array(8.0, np.float32))
    bc.adamw_(b, gs, st[2], st[3], step=1)
    for x, y in zip(a, b):
        close(x, y, rtol=1e-6, atol=1e-7)
    m1, m2 = [np.zeros(s, np.float32) for s in shapes], [np.zeros(s, np.float32) for s in shapes]
    a = [p.copy() for p in ps]
    b = [p.copy() for p in ps]
    bc.lion_(a, [g * 8 for g in gs], m1, lr=0.1, grad_scale=np.array(8.0, np.float32))
    bc.lion_(b, gs, m2, lr=0.1)
    for x, y in zip(a, b):
        close(x, y, rtol=1e-6, atol=1e-7)


# ---- ternary backward and the autograd drop-ins ------------------------------------------------
@needs_torch
@pytest.mark.parametrize("op,args", [
    ("lerp", ("t34", "t4", "t31")), ("lerp", ("t34", "t4", 0.3)), ("addcmul", ("t34", "t4", "t31")),
    ("addcdiv", ("t34", "t4", "p31")), ("clamp", ("t34", "t4", "t4+1")), ("clamp", ("t34", None, 0.5)),
    ("clamp", ("t34", "t4", 0.7)), ("where", ("c34", "t34", "t4")), ("where", ("c34", 2.0, "t31"))])
def test_ternary_backward_matches_torch(op, args):
    torch.manual_seed(0)
    base = {"t34": torch.randn(3, 4, dtype=torch.float64), "t4": torch.randn(4, dtype=torch.float64),
            "t31": torch.randn(3, 1, dtype=torch.float64)}
    base["p31"] = base["t31"].abs() + 1
    base["t4+1"] = base["t4"] + 1
    base["c34"] = base["t34"] > 0
    ops = [base[x].clone() if isinstance(x, str) else x for x in args]
    for t in ops:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            t.requires_grad_(True)
    value = 0.5 if op.startswith("addc") else None
    fn = {"lerp": torch.lerp, "clamp": torch.clamp, "where": torch.where,
          "addcmul": lambda a, b, c: torch.addcmul(a, b, c, value=value),
          "addcdiv": lambda a, b, c: torch.addcdiv(a, b, c, value=value)}[op]
    if op == "clamp" and isinstance(ops[1], torch.Tensor) and not isinstance(ops[2], torch.Tensor):
        y = torch.clamp(torch.clamp(ops[0], min=ops[1]), max=ops[2])
    else:
        y = fn(*ops)
    dy = torch.randn(y.shape, dtype=torch.float64)
    y.backward(dy)
    det = [t.detach() if isinstance(t, torch.Tensor) else t for t in ops]
    got = bc.ternary_backward(op, dy, *det, value=value)
    for g, t in zip(got, ops):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            torch.testing.assert_close(torch.from_dlpack(g), t.grad, rtol=1e-12, atol=1e-12)
        else:
            assert g is None
    # output_mask: only the asked gradients
    got = bc.ternary_backward(op, dy, *det, value=value, output_mask=(False, False, True))
    assert got[0] is None and got[1] is None
    # autograd drop-ins, gradcheck in f64
    f = {"lerp": bt().lerp, "clamp": bt().clamp, "where": bt().where,
         "addcmul": lambda a, b, c: bt().addcmul(a, b, c, value=value),
         "addcdiv": lambda a, b, c: bt().addcdiv(a, b, c, value=value)}[op]
    leaves = [i for i, t in enumerate(ops) if isinstance(t, torch.Tensor) and t.requires_grad]

    def g(*xs):
        full = list(det)
        for i, x in zip(leaves, xs):
            full[i] = x
        return f(*full)
    assert torch.autograd.gradcheck(g, tuple(ops[i].detach().requires_grad_(True) for i in leaves))


@needs_torch
def test_ternary_dropins_compile_and_opcheck():
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, requires_grad=True)
    c = torch.randn(3, 1, dtype=torch.float64, requires_grad=True)
    f = torch.compile(lambda x, y, z: bt().lerp(x, y, z).sum() + bt().clamp(x, y, 0.5).sum()
                      + bt().where(x > 0, x, 1.0).sum(), fullgraph=True, backend="aot_eager")
    out = f(a, b, c)
    out.backward()
    ref_a, ref_b, ref_c = (t.detach().clone().requires_grad_(True) for t in (a, b, c))
    ref = (torch.lerp(ref_a, ref_b, ref_c).sum() + torch.clamp(torch.clamp(ref_a, min=ref_b), max=0.5).sum()
           + torch.where(ref_a > 0, ref_a, 1.0).sum())
    ref.backward()
    torch.testing.assert_close(out, ref)
    for x, r in ((a, ref_a), (b, ref_b), (c, ref_c)):
        torch.testing.assert_close(x.grad, r.grad)
    torch.library.opcheck(torch.ops.baracuda.ternary_fwd.default,
                          ("lerp", a.detach(), b.detach(), c.detach(), None, None, None))
    torch.library.opcheck(torch.ops.baracuda.ternary_fwd.default,
                          ("clamp", a.detach(), b.detach(), None, None, 0.5, None))
    with pytest.raises(ValueError, match="ternary_backward"):
        bc.ternary_backward("bogus", a.detach(), a.detach(), b.detach(), c.detach())


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                     ("Adafactor", dict(lr=0.05, weight_decay=0.01))])
def test_torch_optimizer_loads_torch_state_dict(name, kw):
    # a torch optimizer's state continues in ours (same keys and shapes)
    torch.manual_seed(0)
    ref = [torch.randn(s) for s in AF_SHAPES]
    o1 = getattr(torch.optim, name)(ref, **kw)

    def grads(ps, it):
        g = torch.Generator().manual_seed(it)
        for p in ps:
            p.grad = torch.randn(p.shape, generator=g)
    for it in range(2):
        grads(ref, it)
        o1.step()
    ours = [p.detach().clone() for p in ref]
    o2 = getattr(bt(), name)(ours, **kw)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))  # torch shares the tensors otherwise
    for it in range(2, 4):
        grads(ref, it)
        grads(ours, it)
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        torch.testing.assert_close(b, a, rtol=2e-5, atol=2e-6)


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Lion"])
def test_torch_optimizers_with_grad_scaler(name):
    # GradScaler hands grad_scale / found_inf to the optimizer (the fused optimizers' contract)
    torch.manual_seed(0)
    m1 = torch.nn.Linear(4, 3)
    m2 = torch.nn.Linear(4, 3)
    m2.load_state_dict(m1.state_dict())
    if name == "SGD":
        o1 = torch.optim.SGD(m1.parameters(), lr=0.1, momentum=0.9)
        o2 = bt().SGD(m2.parameters(), lr=0.1, momentum=0.9)
    else:
        o1 = None
        o2 = bt().Lion(m2.parameters(), lr=0.01)
    s2 = torch.amp.GradScaler("cpu", init_scale=1024.0)
    x = torch.randn(8, 4)
    for it in range(3):
        o2.zero_grad()
        s2.scale(m2(x).square().mean()).backward()
        before = [p.detach().clone() for p in m2.parameters()]
        grads = [p.grad.detach().clone() / 1024.0 for p in m2.parameters()]
        s2.step(o2)
        s2.update()
        if o1 is not None:
            o1.zero_grad()
            m1(x).square().mean().backward()
            o1.step()
            for a, b in zip(m1.parameters(), m2.parameters()):
                torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
        else:
            for p, b0, gr in zip(m2.parameters(), before, grads):  # first steps: p -= lr sign((1 - b1) g)
                if it == 0:
                    torch.testing.assert_close(p.detach(), b0 - 0.01 * torch.sign(gr), rtol=0, atol=1e-7)
    # an inf gradient: the step is skipped (and the scale backs off)
    o2.zero_grad()
    s2.scale(m2(x).square().mean()).backward()
    next(m2.parameters()).grad[0, 0] = float("inf")
    before = [p.detach().clone() for p in m2.parameters()]
    scale = s2.get_scale()
    s2.step(o2)
    s2.update()
    for p, b0 in zip(m2.parameters(), before):
        assert torch.equal(p.detach(), b0)
    assert s2.get_scale() < scale

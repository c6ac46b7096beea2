"""The GPU suite of part A: optimizers (SGD / Lion / Adafactor, the torch
drop-ins), gradient utilities, randperm / multinomial (CUDA == CPU bits),
ternary ops and factories against torch on CUDA. Skips without torch + CUDA
+ a CUDA build of baracuda. On the GPU machine:
    PYTHONPATH=<build>/python python -m pytest python/tests/test_cuda_a.py -q
(the build needs the families: elementwise, optim, random, reduce).
"""
import numpy as np
import pytest

import baracuda as bc
from baracuda import plans as P

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and bc.WITH_CUDA and bc.cuda_available()),
    reason="needs a GPU, torch with CUDA and baracuda built with CUDA")

DEV = "cuda"
T = torch.from_dlpack
SHAPES = [(33, 70), (5,), (), (2, 3, 129), (0, 3), (4097,)]


def _cur():
    return torch.cuda.current_stream()


def _pair(shapes, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    cpu = [torch.randn(s, generator=g).to(dtype) for s in shapes]
    return cpu, [t.to(DEV) for t in cpu]


def _same(cuda_list, cpu_list, rtol=0.0, atol=0.0):
    for a, b in zip(cuda_list, cpu_list):
        torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol)


# ---- optimizers: CUDA against the CPU reference --------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_sgd_lion_cuda_equals_cpu(dtype):
    pc, pg = _pair(SHAPES, dtype, 0)
    gc, gg = _pair(SHAPES, dtype, 1)
    bc_, bg = _pair(SHAPES, torch.float32, 2)
    for first in (False, True):
        bc.sgd_(pc, gc, bc_, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, buffers_initialized=first)
        bc.sgd_(pg, gg, bg, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, buffers_initialized=first)
    torch.cuda.synchronize()
    _same(pg, pc)  # the same f32 operations, no FMA: the same bits
    _same(bg, bc_)
    mc, mg = _pair(SHAPES, torch.float32, 3)
    bc.lion_(pc, gc, mc, lr=0.01, weight_decay=0.1)
    bc.lion_(pg, gg, mg, lr=0.01, weight_decay=0.1)
    torch.cuda.synchronize()
    _same(pg, pc)
    _same(mg, mc)


def _af_states(shapes, device):
    rv, cv, vv = [], [], []
    for s in shapes:
        if len(s) >= 2:
            rv.append(torch.zeros(s[:-1] + (1,), device=device))
            cv.append(torch.zeros(s[:-2] + (1, s[-1]), device=device))
            vv.append(None)
        else:
            rv.append(None)
            cv.append(None)
            vv.append(torch.zeros(s, device=device))
    return rv, cv, vv


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_adafactor_cuda_close_to_cpu(dtype):
    shapes = [(33, 70), (5,), (), (2, 3, 129), (300, 40)]
    pc, pg = _pair(shapes, dtype, 0)
    for t in range(1, 4):
        gc, gg = _pair(shapes, dtype, 10 + t)
        if t == 1:
            sc, sg = _af_states(shapes, "cpu"), _af_states(shapes, DEV)
        bc.adafactor_(pc, gc, *sc, step=t, lr=0.05, weight_decay=0.01)
        bc.adafactor_(pg, gg, *sg, step=t, lr=0.05, weight_decay=0.01)
    torch.cuda.synchronize()
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    _same(pg, pc, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["SGD", "Adafactor"])
def test_torch_optimizers_cuda_match_torch(name):
    import baracuda.torch as bt
    torch.manual_seed(0)
    ref = [torch.randn(s, device=DEV) for s in SHAPES if 0 not in s]
    ours = [t.clone() for t in ref]
    kw = dict(lr=0.1, momentum=0.9, weight_decay=0.01) if name == "SGD" else dict(lr=0.05)
    o1 = getattr(torch.optim, name)(ref, **kw)
    o2 = getattr(bt, name)(ours, **kw)
    for it in range(3):
        for ps in (ref, ours):
            g = torch.Generator(device=DEV).manual_seed(it)
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g, device=DEV)
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        torch.testing.assert_close(b, a, rtol=2e-5, atol=2e-6)


def test_lion_torch_optimizer_cuda_equals_cpu():
    import baracuda.torch as bt
    torch.manual_seed(0)
    cpu = [torch.randn(s) for s in SHAPES]
    gpu = [t.to(DEV) for t in cpu]
    o1, o2 = bt.Lion(cpu, lr=1e-2, weight_decay=0.1), bt.Lion(gpu, lr=1e-2, weight_decay=0.1)
    for it in range(3):
        for a, b in zip(cpu, gpu):
            a.grad = torch.randn(a.shape)
            b.grad = a.grad.to(DEV)
        o1.step()
        o2.step()
    torch.cuda.synchronize()
    _same(gpu, cpu)


# ---- gradient utilities --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_global_norm_and_clip_cuda(dtype, norm_type):
    shapes = [s for s in SHAPES if 0 not in s]
    _, gg = _pair(shapes, dtype, 5)
    flat = torch.cat([g.double().flatten() for g in gg])
    ref = torch.linalg.vector_norm(flat, norm_type)
    n = T(bc.global_norm(gg, norm_type))
    assert n.device.type == "cuda" and n.dtype == torch.float32 and n.shape == ()
    torch.testing.assert_close(n.double(), ref, rtol=1e-6, atol=0)
    before = [g.float().clone() for g in gg]
    total = T(bc.clip_grad_norm_(gg, 0.5, norm_type))
    coef = min(0.5 / (total.item() + 1e-6), 1.0)
    tol = 1e-6 if dtype == torch.float32 else 1e-2
    for g, b in zip(gg, before):
        torch.testing.assert_close(g.float(), b * coef, rtol=tol, atol=tol)


def test_unscale_foreach_cuda():
    _, gg = _pair(SHAPES, torch.float32, 6)
    ref = [g.clone() for g in gg]
    found = torch.zeros((), device=DEV)
    bc.non_finite_check_and_unscale_(gg, found, torch.tensor(0.25, device=DEV))
    assert found.item() == 0.0
    for g, r in zip(gg, ref):
        torch.testing.assert_close(g, r * 0.25)
    gg[0][0, 0] = float("nan")
    bc.non_finite_check_and_unscale_(gg, found, torch.tensor(1.0, device=DEV))
    assert found.item() == 1.0
    bc.foreach_mul_(gg[1:], torch.tensor(2.0, device=DEV))
    bc.foreach_zero_(gg)
    assert all(not g.any() for g in gg)


# ---- sampling: CUDA == CPU bits -------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 300000])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_randperm_cuda_equals_cpu(n, dtype):
    a = T(bc.randperm(n, seed=11, offset=3, dtype=dtype, stream=_cur()))
    b = T(bc.randperm(n, seed=11, offset=3, dtype=dtype))
    assert a.device.type == "cuda"
    torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0)
    assert torch.equal(torch.sort(a.long()).values.cpu(), torch.arange(n))


@pytest.mark.parametrize("rows,cats,k,replacement", [(4, 10, 5, False), (4, 10, 30, True), (2, 9000, 100, False),
                                                     (3, 5000, 2000, False), (1, 100000, 3, True),
                                                     (70, 3000, 50, True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_multinomial_cuda_equals_cpu(rows, cats, k, replacement, dtype):
    g = torch.Generator().manual_seed(3)
    p = torch.rand(rows, cats, generator=g).to(dtype)
    p[0, :cats // 2] = 0
    a = T(bc.multinomial(p.to(DEV), k, replacement, seed=5, offset=1))
    b = T(bc.multinomial(p, k, replacement, seed=5, offset=1))
    torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0)
    assert (a[0] >= cats // 2).all()


def test_multinomial_cuda_bad_row_and_check_probs():
    p = torch.ones(3, 4, device=DEV)
    p[1, 2] = -1.0
    y = T(bc.multinomial(p, 2, seed=0))  # no host sync: the bad row is -1
    assert (y[1] == -1).all() and (y[0] >= 0).all() and (y[2] >= 0).all()
    s = _cur()
    plan = P.MultinomialPlan.select(P.MultinomialDescriptor(dtype="float32", probs_shape=(3, 4), num_samples=2),
                                    stream=s)
    ws = torch.empty(max(plan.workspace_size, 1), dtype=torch.uint8, device=DEV)
    out = torch.empty(3, 2, dtype=torch.int64, device=DEV)
    plan.run(seed=0, probs=p, out=out, workspace=ws, stream=s)
    with pytest.raises(bc.InvalidProblemError, match="^MultinomialPlan"):
        plan.check_probs(ws, stream=s)


# ---- ternary ops and factories against torch on CUDA ---------------------------------------------
TOL = {torch.float32: (1e-6, 1e-6), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2),
       torch.float64: (1e-12, 1e-12)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_ternary_cuda(dtype):
    torch.manual_seed(0)
    a, b, c = (torch.randn(64, 257, device=DEV, dtype=dtype) for _ in range(3))
    w = torch.rand(257, device=DEV, dtype=dtype)
    rtol, atol = TOL[dtype]
    cases = [(bc.where(a > 0, a, b), torch.where(a > 0, a, b)), (bc.where(a > 0, a, 1.5), torch.where(a > 0, a, 1.5)),
             (bc.clamp(a, b, b + 1), torch.clamp(a, b, b + 1)), (bc.clamp(a, min=-0.5), torch.clamp(a, min=-0.5)),
             (bc.lerp(a, b, w), torch.lerp(a, b, w)), (bc.lerp(a, b, 0.3), torch.lerp(a, b, 0.3)),
             (bc.addcmul(a, b, c, value=0.5), torch.addcmul(a, b, c, value=0.5)),
             (bc.addcdiv(a, b, c.abs() + 1, value=2), torch.addcdiv(a, b, c.abs() + 1, value=2)),
             (bc.lerp(a.t(), b.t(), 0.25), torch.lerp(a.t(), b.t(), 0.25))]
    for got, ref in cases:
        t = T(got)
        assert t.device == ref.device and t.dtype == ref.dtype and t.shape == ref.shape
        torch.testing.assert_close(t, ref, rtol=rtol, atol=atol)
    out = torch.empty_like(a)
    r = bc.addcmul(a, b, c, out=out)
    assert r is out
    torch.testing.assert_close(out, torch.addcmul(a, b, c), rtol=rtol, atol=atol)


@pytest.mark.parametrize("args,dtype", [((0, 1000, 3), None), ((0, 1, 0.001), None),
                                        ((-5.5, 7.25, 0.25), torch.float64),
                                        ((0, 2048), torch.float16), ((3, 1000), torch.bfloat16)])
def test_arange_cuda_matches_torch_cuda(args, dtype):
    ref = torch.arange(*args, dtype=dtype, device=DEV)
    t = T(bc.arange(*args, dtype=None if dtype is None else str(dtype)[6:], stream=_cur()))
    assert t.device.type == "cuda" and t.dtype == ref.dtype
    torch.testing.assert_close(t, ref, rtol=0, atol=0)


@pytest.mark.parametrize("args,dtype", [((0, 1, 1001), None), ((-3, 9, 50), torch.float64),
                                        ((0, 10, 77), torch.float16),
                                        ((-100, 100, 33), torch.int64), ((2, -2, 9), torch.bfloat16)])
def test_linspace_cuda_matches_torch_cuda(args, dtype):
    ref = torch.linspace(*args, dtype=dtype, device=DEV)
    out = torch.empty(args[2], dtype=ref.dtype, device=DEV)
    r = bc.linspace(*args, out=out)
    assert r is out
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    c = T(bc.linspace(*args, dtype=str(ref.dtype)[6:]))  # the CPU: the same bits
    torch.testing.assert_close(c, ref.cpu(), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_ternary_autograd_cuda(dtype):
    import baracuda.torch as bt
    torch.manual_seed(0)
    leaves = [torch.randn(s, device=DEV, dtype=dtype) for s in ((64, 257), (257,), (64, 1))]
    rtol, atol = TOL[dtype]
    scale = 4.0  # summed broadcast gradients
    cases = [(bt.lerp, torch.lerp, lambda a, b, c: (a, b, c)),
             (lambda a, b, c: bt.addcmul(a, b, c, value=0.5), lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
              lambda a, b, c: (a, b, c)),
             (lambda a, b, c: bt.addcdiv(a, b, c, value=2.0), lambda a, b, c: torch.addcdiv(a, b, c, value=2.0),
              lambda a, b, c: (a, b, c.abs() + 1)),
             (lambda a, b, c: bt.clamp(a, b, b + 1), lambda a, b, c: torch.clamp(a, b, b + 1),
              lambda a, b, c: (a, b, c)),
             (lambda a, b, c: bt.where(a > 0, a, c), lambda a, b, c: torch.where(a > 0, a, c),
              lambda a, b, c: (a, b, c))]
    for ours, ref, prep in cases:
        xs = [t.clone().requires_grad_(True) for t in leaves]
        ys = [t.clone().requires_grad_(True) for t in leaves]
        o, r = ours(*prep(*xs)), ref(*prep(*ys))
        torch.testing.assert_close(o, r, rtol=rtol, atol=atol)
        dy = torch.randn(r.shape, device=DEV, dtype=dtype)
        o.backward(dy)
        r.backward(dy)
        for x, y in zip(xs, ys):
            if y.grad is None:
                assert x.grad is None or not x.grad.any()
                continue
            torch.testing.assert_close(x.grad, y.grad, rtol=rtol * scale, atol=atol * scale * 16)


def test_sgd_with_cuda_grad_scaler():
    import baracuda.torch as bt
    torch.manual_seed(0)
    m1 = torch.nn.Linear(64, 32, device=DEV)
    m2 = torch.nn.Linear(64, 32, device=DEV)
    m2.load_state_dict(m1.state_dict())
    o1 = torch.optim.SGD(m1.parameters(), lr=0.1, momentum=0.9)
    o2 = bt.SGD(m2.parameters(), lr=0.1, momentum=0.9)
    s2 = torch.amp.GradScaler("cuda", init_scale=1024.0)
    x = torch.randn(16, 64, device=DEV)
    for _ in range(3):
        o1.zero_grad()
        o2.zero_grad()
        m1(x).square().mean().backward()
        s2.scale(m2(x).square().mean()).backward()
        o1.step()
        s2.step(o2)
        s2.update()
    for a, b in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    o2.zero_grad()
    s2.scale(m2(x).square().mean()).backward()
    next(m2.parameters()).grad[0, 0] = float("nan")
    before = [p.detach().clone() for p in m2.parameters()]
    s2.step(o2)
    s2.update()
    for p, b0 in zip(m2.parameters(), before):
        assert torch.equal(p.detach(), b0)

"""The GPU suite: every exposed op against PyTorch on CUDA, forward and
backward, zero-copy, stream ordering. Skips without torch + CUDA + a CUDA
build of baracuda. Run on the GPU machine:
    PYTHONPATH=<build>/python python -m pytest python/tests -q
"""
import gc
import math
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside torch on one GPU

import numpy as np
import pytest

import baracuda as bc

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and bc.WITH_CUDA and bc.cuda_available()),
    reason="needs a GPU, torch with CUDA and baracuda built with CUDA")

DEV = "cuda"
T = torch.from_dlpack
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-2, 2e-2),
       torch.float64: (1e-12, 1e-12)}


def check(a, ref, dtype=None, scale=1.0):
    a = T(a) if not isinstance(a, torch.Tensor) else a
    rtol, atol = TOL[dtype or ref.dtype]
    assert a.device == ref.device and a.dtype == ref.dtype and a.shape == ref.shape
    torch.testing.assert_close(a.float(), ref.float(), rtol=rtol * scale, atol=atol * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "relu", "silu", "gelu", "neg", "abs", "sqrt",
                                  "rsqrt"])
def test_unary(name, dtype):
    x = torch.rand(37, 129, device=DEV, dtype=dtype) + 0.1
    ref = {"gelu": F.gelu, "silu": F.silu, "relu": F.relu}.get(name) or getattr(torch, name)
    check(getattr(bc, name)(x), ref(x), scale=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary(name, dtype):
    a = torch.randn(8, 1, 65, device=DEV, dtype=dtype)
    b = torch.rand(7, 1, device=DEV, dtype=dtype) + 0.5
    check(getattr(bc, name)(a, b), getattr(torch, name)(a, b))
    scalar = torch.tensor(2.5, device=DEV, dtype=dtype)  # torch.maximum / minimum take no Python number
    check(getattr(bc, name)(a, 2.5), getattr(torch, name)(a, scalar))


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
def test_reduce(dtype, dim):
    x = torch.randn(16, 33, 70, device=DEV, dtype=dtype)
    kw = {} if dim is None else {"dim": dim}
    check(bc.sum(x, dim), torch.sum(x, **kw), scale=10)
    check(bc.mean(x, dim), torch.mean(x, **kw), scale=10)
    check(bc.amax(x, () if dim is None else dim), torch.amax(x, **({"dim": ()} if dim is None else kw)))
    check(bc.logsumexp(x, dim if dim is not None else (0, 1, 2)),
          torch.logsumexp(x, dim if dim is not None else (0, 1, 2)), scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", [((64, 96), (96, 48)), ((3, 64, 32), (32, 16)), ((32,), (32, 8))])
def test_matmul(dtype, sa, sb):
    a = torch.randn(sa, device=DEV, dtype=dtype)
    b = torch.randn(sb, device=DEV, dtype=dtype)
    check(bc.matmul(a, b), torch.matmul(a, b), scale=20)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
def test_linear_fwd_bwd(dtype, act):
    x = torch.randn(4, 32, 64, device=DEV, dtype=dtype, requires_grad=True)
    w = torch.randn(48, 64, device=DEV, dtype=dtype, requires_grad=True)
    b = torch.randn(48, device=DEV, dtype=dtype, requires_grad=True)
    fn = {None: lambda t: t, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
    ref = fn[act](F.linear(x, w, b))
    xd, wd, bd = x.detach(), w.detach(), b.detach()
    if act in ("gelu", "gelu_tanh"):
        y, aux = bc.linear(xd, wd, bd, activation=act, return_aux=True)
    else:
        y = bc.linear(xd, wd, bd, activation=act)
        aux = y if act == "relu" else None
    check(y, ref.detach(), scale=20)
    g = torch.randn_like(ref)
    ref.backward(g)
    dx, dw, db = bc.linear_backward(g, xd, wd, has_bias=True, activation=act, aux=aux)
    check(dx, x.grad, scale=50)
    check(dw, w.grad, scale=50)
    check(db, b.grad, scale=50)


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64])
@pytest.mark.parametrize("shape,dim", [((64, 1000), -1), ((8, 70000), -1), ((33, 17, 5), 1)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_fwd_bwd(dtype, shape, dim, log):
    x = torch.randn(shape, device=DEV, dtype=dtype, requires_grad=True)
    ref = (torch.log_softmax if log else torch.softmax)(x, dim)
    y = (bc.log_softmax if log else bc.softmax)(x.detach(), dim)
    check(y, ref.detach())
    g = torch.randn_like(ref)
    ref.backward(g)
    dx = (bc.log_softmax_backward if log else bc.softmax_backward)(g, y, dim)
    check(dx, x.grad, scale=10)


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64])
@pytest.mark.parametrize("n", [64, 1000, 8192])
def test_layer_norm_fwd_bwd(dtype, n):
    x = torch.randn(32, n, device=DEV, dtype=dtype, requires_grad=True)
    w = torch.randn(n, device=DEV, dtype=dtype, requires_grad=True)
    b = torch.randn(n, device=DEV, dtype=dtype, requires_grad=True)
    ref = F.layer_norm(x, (n,), w, b)
    y, mean, rstd = bc.layer_norm(x.detach(), (n,), w.detach(), b.detach(), return_stats=True)
    check(y, ref.detach(), scale=5)
    g = torch.randn_like(ref)
    ref.backward(g)
    dx, dw, db = bc.layer_norm_backward(g, x.detach(), (n,), mean, rstd, w.detach(), b)
    check(dx, x.grad, scale=20)
    check(dw, w.grad, scale=50)
    check(db, b.grad, scale=50)


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64])
def test_rms_norm_fwd_bwd(dtype):
    x = torch.randn(64, 768, device=DEV, dtype=dtype, requires_grad=True)
    w = torch.randn(768, device=DEV, dtype=dtype, requires_grad=True)
    ref = F.rms_norm(x, (768,), w, 1e-6)
    y, rstd = bc.rms_norm(x.detach(), (768,), w.detach(), 1e-6, return_stats=True)
    check(y, ref.detach(), scale=5)
    g = torch.randn_like(ref)
    ref.backward(g)
    dx, dw = bc.rms_norm_backward(g, x.detach(), (768,), rstd, w.detach())
    check(dx, x.grad, scale=20)
    check(dw, w.grad, scale=50)


@pytest.mark.parametrize("dtype", DTYPES + [torch.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_fwd_bwd(dtype, reduction):
    x = torch.randn(64, 5000, device=DEV, dtype=dtype)
    t = torch.randint(0, 5000, (64,), device=DEV)
    t[3] = -100
    # the oracle: torch in f32 (f64 for f64), rounded to the dtype once, as baracuda computes
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    xw = x.to(wide, copy=True).requires_grad_()
    ref = F.cross_entropy(xw, t, reduction=reduction, label_smoothing=0.1)
    loss, lse = bc.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1, return_lse=True)
    check(loss, ref.detach().to(dtype), scale=10)
    g = torch.randn(ref.shape, device=DEV, dtype=dtype)
    ref.backward(g.to(wide))
    dx = bc.cross_entropy_backward(g, x, t, lse, reduction=reduction, label_smoothing=0.1)
    check(dx, xw.grad.to(dtype), scale=10)


def test_zero_copy_and_out():
    x = torch.randn(1024, device=DEV)
    y = bc.exp(x)
    ty = T(y)
    assert ty.data_ptr() == y.data_ptr and ty.device.type == "cuda"
    o = torch.empty_like(x)
    assert bc.exp(x, out=o) is o
    torch.testing.assert_close(o, torch.exp(x))
    z = bc.mul(ty, 2.0)  # an exported array back in
    torch.testing.assert_close(T(z), torch.exp(x) * 2)
    assert y.stream.handle == torch.cuda.current_stream().cuda_stream


def test_mixed_devices_and_wrong_stream_device():
    with pytest.raises(bc.InvalidProblemError):
        bc.add(torch.ones(3, device=DEV), np.ones(3, np.float32))
    with pytest.raises(bc.InvalidProblemError):
        bc.exp(torch.ones(3, device=DEV), stream="cpu")


def test_stream_ordering():
    """Work on a non-default torch stream, consumed on another: the consumer
    must see the finished result (event waits, no host sync)."""
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 22
    with torch.cuda.stream(s1):
        x = torch.ones(n, device=DEV)
        torch.cuda._sleep(50_000_000)  # keep s1 busy: a missing wait would read unfinished data
        x.mul_(3)
        y = bc.exp(x)  # runs on s1 (torch's current stream)
        assert y.stream.handle == s1.cuda_stream
    with torch.cuda.stream(s2):
        t = T(y)  # torch passes s2: s2 waits for s1's event
        r = t.sum()
    s2.synchronize()
    assert math.isclose(r.item(), n * math.exp(3), rel_tol=1e-4)


def test_explicit_stream_argument():
    s = torch.cuda.Stream()
    x = torch.randn(4096, device=DEV)
    torch.cuda.current_stream().synchronize()
    y = bc.exp(x, stream=s)
    assert y.stream.handle == s.cuda_stream
    y2 = bc.exp(x, stream=s.cuda_stream)
    s.synchronize()
    torch.testing.assert_close(T(y), torch.exp(x))
    torch.testing.assert_close(T(y2), torch.exp(x))


def test_plan_layer_cuda():
    P = bc.plans
    s = torch.cuda.current_stream()
    plan = P.SoftmaxPlan.select(P.SoftmaxDescriptor(dtype="float32", shape=(4, 300000)), stream=s)
    assert plan.device == "cuda:0" and plan.sku["backend"] == "bespoke-cuda"
    x = torch.randn(4, 300000, device=DEV)
    y = torch.empty_like(x)
    ws = None
    if plan.workspace_size:
        ws = torch.empty(plan.workspace_size, dtype=torch.uint8, device=DEV)
    plan.run(x=x, y=y, workspace=ws)
    torch.testing.assert_close(y, torch.softmax(x, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_modules_cuda(dtype):
    import baracuda.torch as bt
    for cls in ("RMSNorm", "LayerNorm"):
        m = getattr(bt, cls)(256, device=DEV, dtype=dtype)
        with torch.no_grad():
            m.weight.normal_()
        # the oracle: torch's module in f32, its results rounded to the dtype once
        r = getattr(torch.nn, cls)(256, device=DEV, dtype=torch.float32)
        r.load_state_dict({k: v.float() for k, v in m.state_dict().items()})
        x = torch.randn(8, 128, 256, device=DEV, dtype=dtype, requires_grad=True)
        x2 = x.detach().float().requires_grad_()
        y, y2 = m(x), r(x2)
        check(y, y2.detach().to(dtype), scale=5)
        g = torch.randn_like(y)
        y.backward(g)
        y2.backward(g.float())
        check(x.grad, x2.grad.to(dtype), scale=20)
        check(m.weight.grad, r.weight.grad.to(dtype), scale=50)


def test_cupy_zero_copy_and_stream():
    cp = pytest.importorskip("cupy")
    x = cp.arange(1024, dtype=cp.float32) / 1024
    y = bc.exp(x)  # not a torch tensor: the legacy default stream
    assert y.stream.handle == 0
    cy = cp.from_dlpack(y)
    assert cy.data.ptr == y.data_ptr
    cp.testing.assert_allclose(cy, cp.exp(x), rtol=1e-6)
    s = cp.cuda.Stream(non_blocking=True)
    y2 = bc.mul(x, 2.0, stream=s)
    assert y2.stream.handle == s.ptr
    with s:
        r = cp.from_dlpack(y2)
        cp.testing.assert_allclose(r, x * 2)
    # The CuPy stream object goes first: y2's memory is freed on that stream
    # later, so the array keeps the stream object alive (this crashed the
    # process with "context is destroyed" before).
    del r, s
    gc.collect()
    del y2
    gc.collect()
    z = bc.exp(x)
    cp.cuda.Device().synchronize()
    cp.testing.assert_allclose(cp.from_dlpack(z), cp.exp(x), rtol=1e-6)


def test_jax_zero_copy():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    try:
        gpu = jax.devices("gpu")[0]
    except Exception:
        pytest.skip("JAX has no GPU backend here")
    x = jax.device_put(jnp.arange(1024, dtype=jnp.float32) / 1024, gpu)
    y = bc.exp(x)
    assert y.device == "cuda:0"
    jy = jax.dlpack.from_dlpack(y)
    np.testing.assert_allclose(np.asarray(jy), np.exp(np.arange(1024, dtype=np.float32) / 1024), rtol=1e-6)
    assert jy.unsafe_buffer_pointer() == y.data_ptr


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
def test_torch_linear_and_ce_cuda(dtype, act):
    import baracuda.torch as bt
    m = bt.Linear(256, 512, activation=act, device=DEV, dtype=dtype)
    r = torch.nn.Linear(256, 512, device=DEV, dtype=dtype)
    r.load_state_dict(m.state_dict())
    fn = {None: lambda t: t, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh")}
    x = torch.randn(64, 256, device=DEV, dtype=dtype, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    t = torch.randint(0, 512, (64,), device=DEV)
    loss = bt.CrossEntropyLoss(label_smoothing=0.1)(m(x), t)
    ref = F.cross_entropy(fn[act](r(x2)), t, label_smoothing=0.1)
    check(loss, ref.detach(), scale=20)
    loss.backward()
    ref.backward()
    check(x.grad, x2.grad, scale=50)
    check(m.weight.grad, r.weight.grad, scale=50)
    check(m.bias.grad, r.bias.grad, scale=50)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_fwd_bwd(dtype, causal):
    B, H, Hk, S, D = 2, 8, 2, 256, 64
    q = torch.randn(B, S, H, D, device=DEV, dtype=dtype).transpose(1, 2).requires_grad_()  # [B,S,H,D] storage
    k = torch.randn(B, Hk, S, D, device=DEV, dtype=dtype, requires_grad=True)
    v = torch.randn(B, Hk, S, D, device=DEV, dtype=dtype, requires_grad=True)
    ref = F.scaled_dot_product_attention(q, k.repeat_interleave(H // Hk, 1), v.repeat_interleave(H // Hk, 1),
                                         is_causal=causal)
    y, lse = bc.flash_attention(q.detach(), k.detach(), v.detach(), causal, return_lse=True)
    check(y, ref.detach(), scale=10)
    g = torch.randn_like(ref)
    ref.backward(g)
    dq, dk, dv = bc.flash_attention_backward(g, q.detach(), k.detach(), v.detach(), y, lse, causal)
    check(dq, q.grad.contiguous(), scale=20)
    check(dk, k.grad, scale=20)
    check(dv, v.grad, scale=20)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_cuda_matches_cpu(dtype):
    q = torch.randn(2, 4, 16, 64, dtype=dtype)
    k = torch.randn(2, 2, 16, 64, dtype=dtype)
    qc, kc = bc.rope(q, k)
    qg, kg = bc.rope(q.to(DEV), k.to(DEV))
    check(T(qg).cpu(), T(qc), scale=2)
    check(T(kg).cpu(), T(kc), scale=2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_torch_flash_attention_and_rope_cuda(dtype):
    import baracuda.torch as bt
    B, H, S, D = 2, 4, 128, 64
    q = torch.randn(B, S, H, D, device=DEV, dtype=dtype).transpose(1, 2).requires_grad_()
    k = torch.randn(B, H, S, D, device=DEV, dtype=dtype, requires_grad=True)
    v = torch.randn(B, H, S, D, device=DEV, dtype=dtype, requires_grad=True)
    qr, kr = bt.rope(q, k)
    y = bt.flash_attention(qr, kr, v, causal=True)
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    qr2, kr2 = bt.rope(q2, k2)  # the same rotation, then torch's attention as the reference
    ref = F.scaled_dot_product_attention(qr2, kr2, v2, is_causal=True)
    check(y, ref.detach(), scale=10)
    g = torch.randn_like(ref)
    y.backward(g)
    ref.backward(g)
    check(q.grad, q2.grad, scale=20)
    check(k.grad, k2.grad, scale=20)
    check(v.grad, v2.grad, scale=20)


def test_array_uses_chained_across_streams():
    """An Array written on s1 and read by a baracuda call on s2: the call waits."""
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    n = 1 << 22
    x = torch.ones(n, device=DEV)
    torch.cuda.synchronize()
    with torch.cuda.stream(s1):
        torch.cuda._sleep(50_000_000)
        y = bc.mul(x, 3.0)  # on s1, behind the sleep
    z = bc.add(y, 1.0, stream=s2)  # must wait for s1
    assert y.stream.handle == s2.cuda_stream and z.stream.handle == s2.cuda_stream
    s2.synchronize()
    assert torch.all(T(z) == 4.0).item()


def test_torch_adamw_cuda():
    import baracuda.torch as bt
    torch.manual_seed(0)
    ref = [torch.randn(256, 128, device=DEV, requires_grad=True), torch.randn(77, device=DEV, requires_grad=True)]
    ours = [p.detach().clone().requires_grad_() for p in ref]
    o1 = torch.optim.AdamW(ref, lr=1e-2, weight_decay=0.1)
    o2 = bt.AdamW(ours, lr=1e-2, weight_decay=0.1)
    for _ in range(5):
        for a, b in zip(ref, ours):
            a.grad = torch.randn_like(a)
            b.grad = a.grad.clone()
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_linear_cross_entropy_cuda(dtype):
    import baracuda.torch as bt
    N, D, V = 512, 256, 32000
    h = torch.randn(N, D, device=DEV, dtype=dtype, requires_grad=True)
    w = (torch.randn(V, D, device=DEV, dtype=dtype) * 0.05).requires_grad_()
    t = torch.randint(0, V, (N,), device=DEV)
    h2, w2 = h.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    loss = bt.LinearCrossEntropyLoss()(h, w, t)
    ref = F.cross_entropy(F.linear(h2, w2).float(), t)
    check(loss.float(), ref.detach(), torch.float32 if dtype == torch.float32 else torch.bfloat16, scale=10)
    (loss * 2).backward()
    (ref * 2).backward()
    check(h.grad, h2.grad, scale=50)
    check(w.grad, w2.grad, scale=50)


def test_random_same_bits_on_cpu_and_cuda():
    for dt in ("float32", "bfloat16"):
        a = T(bc.normal((4097,), seed=7, offset=3, dtype=dt))
        b = T(bc.normal((4097,), seed=7, offset=3, dtype=dt, stream=torch.cuda.current_stream())).cpu()
        assert torch.equal(a, b)
    x = torch.randn(300, 70, device=DEV)
    y, m = bc.dropout(x, 0.1, seed=11, return_mask=True)
    yc = bc.dropout(x.cpu(), 0.1, seed=11)
    assert torch.equal(T(y).cpu(), T(yc))


# ---- indexing ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_gather_scatter_cuda(dtype):
    x = torch.randn(64, 33, device=DEV, dtype=dtype)
    i = torch.randint(0, 33, (64, 20), device=DEV)
    assert torch.equal(T(bc.gather(x, 1, i)), torch.gather(x, 1, i))
    src = torch.randn(64, 20, device=DEV, dtype=dtype)
    check(T(bc.scatter_add(x, 1, i, src)).float(), torch.scatter_add(x.float(), 1, i, src.float()), torch.float32,
          scale=1e3 if dtype != torch.float32 else 1)
    for red in ("sum", "prod", "mean", "amax", "amin"):
        ref = torch.scatter_reduce(x.double(), 1, i, src.double(), red, include_self=False)
        got = T(bc.scatter_reduce(x.double(), 1, i, src.double(), red, include_self=False))
        torch.testing.assert_close(got, ref)
    # backward: CUDA against the CPU plan (the same formulas)
    xd, sd = x.double(), src.double()
    res = bc.scatter_reduce(xd, 1, i, sd, "amax")
    g = torch.randn(64, 33, device=DEV, dtype=torch.float64)
    gx, gs = bc.scatter_reduce_backward(g, xd, 1, i, sd, "amax", res)
    gxc, gsc = bc.scatter_reduce_backward(g.cpu(), xd.cpu(), 1, i.cpu(), sd.cpu(), "amax", T(res).cpu())
    torch.testing.assert_close(T(gx).cpu(), T(gxc))
    torch.testing.assert_close(T(gs).cpu(), T(gsc))


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_index_take_put_onehot_cuda(dtype):
    x = torch.randn(40, 24, device=DEV, dtype=dtype)
    i = torch.randint(0, 40, (17,), device=DEV)
    assert torch.equal(T(bc.index_select(x, 0, i)), torch.index_select(x, 0, i))
    src = torch.randn(17, 24, device=DEV, dtype=dtype)
    check(T(bc.index_add(x.float(), 0, i, src.float(), alpha=2)), torch.index_add(x.float(), 0, i, src.float(),
                                                                                   alpha=2))
    assert torch.equal(T(bc.index_fill(x, 1, i[:3] % 24, 1.5)), torch.index_fill(x, 1, i[:3] % 24, 1.5))
    t = torch.randint(-960, 960, (5, 7), device=DEV)
    assert torch.equal(T(bc.take(x, t)), torch.take(x, t))
    s = torch.randn(35, device=DEV, dtype=dtype)
    check(T(bc.put(x.float(), t, s.float(), accumulate=True)), torch.put(x.float(), t, s.float(), accumulate=True))
    c = torch.randint(0, 9, (6, 5), device=DEV)
    assert torch.equal(T(bc.one_hot(c, 9)), F.one_hot(c, 9))
    assert torch.equal(T(bc.one_hot(c)), F.one_hot(c))  # num_classes=-1: a host read


def test_indexing_masked_nonzero_cuda():
    x = torch.randn(33, 65, device=DEV)
    m = x > 0.5
    assert torch.equal(T(bc.nonzero(m)), torch.nonzero(m))
    for a, b in zip(bc.nonzero(m, as_tuple=True), torch.nonzero(m, as_tuple=True)):
        assert torch.equal(T(a), b)
    y, n = bc.nonzero(m, size=m.numel(), return_count=True)  # no host sync
    k = int(T(n).item())
    assert k == int(m.sum()) and torch.equal(T(y)[:k], torch.nonzero(m))
    assert torch.equal(T(bc.masked_select(x, m)), torch.masked_select(x, m))
    src = torch.randn(33 * 65, device=DEV)
    assert torch.equal(T(bc.masked_scatter(x, m, src)), x.masked_scatter(m, src))
    # a bad index on CUDA: no fault, reported by the plan's check_indices
    P = bc.plans
    p = P.TakePlan.select(P.TakeDescriptor(dtype="float32", index_dtype="int64", x_shape=(4,), index_shape=(1,)),
                          stream=torch.cuda.current_stream())
    ws = torch.empty(p.workspace_size, dtype=torch.uint8, device=DEV)
    out = torch.empty(1, device=DEV)
    p.run(x=torch.ones(4, device=DEV), index=torch.tensor([9], device=DEV), out=out, workspace=ws)
    with pytest.raises(bc.InvalidProblemError):
        p.check_indices(ws)

"""baracuda.torch: the autograd drop-ins against torch (CPU; CUDA in test_cuda.py)."""
import pytest

torch = pytest.importorskip("torch")
import baracuda  # noqa: E402
import baracuda.torch as bt  # noqa: E402


def test_rms_norm_gradcheck():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.rms_norm(a, (5,), b, 1e-6), (x, w))
    assert torch.allclose(bt.rms_norm(x, (5,), w), torch.nn.functional.rms_norm(x, (5,), w))


def test_layer_norm_gradcheck():
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, c, d: bt.layer_norm(a, (3, 4), c, d), (x, w, b))
    assert torch.autograd.gradcheck(lambda a: bt.layer_norm(a, (4,)), (x,))


@pytest.mark.parametrize("cls,ref", [("RMSNorm", "RMSNorm"), ("LayerNorm", "LayerNorm")])
def test_modules_match_torch(cls, ref):
    torch.manual_seed(0)
    m = getattr(bt, cls)(16)
    r = getattr(torch.nn, ref)(16)
    with torch.no_grad():
        m.weight.normal_()
        r.weight.copy_(m.weight)
        if cls == "LayerNorm":
            m.bias.normal_()
            r.bias.copy_(m.bias)
    assert m.state_dict().keys() == r.state_dict().keys()
    x = torch.randn(4, 7, 16, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    y, y2 = m(x), r(x2)
    assert torch.allclose(y, y2, atol=1e-5)
    g = torch.randn_like(y)
    y.backward(g)
    y2.backward(g)
    assert torch.allclose(x.grad, x2.grad, atol=1e-4)
    assert torch.allclose(m.weight.grad, r.weight.grad, atol=1e-4)


def test_torch_compile_sees_opaque_op():
    m = bt.RMSNorm(8)
    f = torch.compile(lambda x: m(x) * 2, fullgraph=True, backend="aot_eager")
    x = torch.randn(3, 8)
    assert torch.allclose(f(x), m(x) * 2)
    torch.library.opcheck(torch.ops.baracuda.rms_norm_fwd.default, (x, m.weight, 1, 1e-6))


def test_eager_calls_skip_the_dispatcher_and_compile_keeps_the_custom_op():
    # Eager: the autograd.Function twin (torch's custom-op dispatch costs
    # ~40-140 us per call); compiled: the registered custom op, same numbers.
    m = bt.Linear(4, 5, activation="gelu", dtype=torch.float64)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = m(x)
    assert "eager" in type(y.grad_fn).__name__, type(y.grad_fn).__name__
    y.sum().backward()
    gx, gw = x.grad.clone(), m.weight.grad.clone()
    x.grad = None
    m.weight.grad = None
    f = torch.compile(lambda t: m(t).sum(), fullgraph=True, backend="aot_eager")
    f(x).backward()
    assert torch.allclose(x.grad, gx) and torch.allclose(m.weight.grad, gw)


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_gradcheck(act, bias):
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, requires_grad=True) if bias else None
    args = (x, w, b) if bias else (x, w)
    assert torch.autograd.gradcheck(lambda *a: bt.linear(a[0], a[1], a[2] if bias else None, act), args)
    ref = {None: lambda t: t, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}[act]
    assert torch.allclose(bt.linear(x, w, b, act), ref(torch.nn.functional.linear(x, w, b)))


def test_linear_frozen_weight_and_module():
    m = bt.Linear(8, 4, activation="gelu")
    r = torch.nn.Linear(8, 4)
    r.load_state_dict(m.state_dict())
    m.weight.requires_grad_(False)
    x = torch.randn(3, 8, requires_grad=True)
    y = m(x)
    y.sum().backward()
    assert m.weight.grad is None and m.bias.grad is not None
    x2 = x.detach().clone().requires_grad_()
    torch.nn.functional.gelu(r(x2)).sum().backward()
    assert torch.allclose(x.grad, x2.grad, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradcheck(reduction):
    x = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 7, (5,))
    t[1] = -100
    assert torch.autograd.gradcheck(lambda a: bt.cross_entropy(a, t, reduction=reduction, label_smoothing=0.1), (x,))
    ref = torch.nn.functional.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1)
    assert torch.allclose(bt.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1), ref)
    loss_fn = bt.CrossEntropyLoss(reduction=reduction)
    assert torch.allclose(loss_fn(x, t), torch.nn.CrossEntropyLoss(reduction=reduction)(x, t))


def test_compile_linear_and_ce():
    m = bt.Linear(8, 6, activation="relu")
    t = torch.randint(0, 6, (4,))
    f = torch.compile(lambda x: bt.cross_entropy(m(x), t), fullgraph=True, backend="aot_eager")
    x = torch.randn(4, 8, requires_grad=True)
    loss = f(x)
    loss.backward()
    assert x.grad is not None and m.weight.grad is not None


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_gradcheck(causal):
    q = torch.randn(1, 2, 3, 32, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 4, 32, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 1, 4, 32, dtype=torch.float64, requires_grad=True)
    # lse is float32: the recomputed softmax is f32-accurate, hence the tolerances
    assert torch.autograd.gradcheck(lambda a, b, c: bt.flash_attention(a, b, c, causal), (q, k, v), atol=1e-4,
                                    rtol=1e-3)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.expand(1, 2, 4, 32), v.expand(1, 2, 4, 32),
                                                           is_causal=causal)
    assert torch.allclose(bt.flash_attention(q, k, v, causal), ref)


def test_rope_gradcheck_and_compile():
    q = torch.randn(1, 2, 3, 8, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 3, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: bt.rope(a, b, theta=100.0), (q, k))
    f = torch.compile(lambda a, b: sum(t.sum() for t in bt.rope(a, b)), fullgraph=True, backend="aot_eager")
    f(q, k).backward()
    assert q.grad is not None


def test_llama_block_example_matches_torch():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "llama_block.py"
    spec = importlib.util.spec_from_file_location("llama_block", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    torch.manual_seed(0)
    ref = ex.LlamaBlock(64, 2, 1, 96, dtype=torch.float64)
    ours = ex.patch(ref)
    x = torch.randn(2, 8, 64, dtype=torch.float64)
    target = torch.randn(2, 8, 64)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    l1, l2 = ex.step(ref, x1, target), ex.step(ours, x2, target)
    assert torch.allclose(l1, l2, rtol=1e-6)
    assert torch.allclose(x1.grad, x2.grad, rtol=1e-5, atol=1e-7)
    for a, b in zip(ref.parameters(), ours.parameters()):
        assert torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adamw_matches_torch(amsgrad, maximize, wd):
    torch.manual_seed(0)
    ref = [torch.randn(4, 3, requires_grad=True), torch.randn(5, requires_grad=True)]
    ours = [p.detach().clone().requires_grad_() for p in ref]
    o1 = torch.optim.AdamW(ref, lr=1e-2, weight_decay=wd, amsgrad=amsgrad, maximize=maximize)
    o2 = bt.AdamW(ours, lr=1e-2, weight_decay=wd, amsgrad=amsgrad, maximize=maximize)
    for it in range(5):
        for ps in (ref, ours):
            g = torch.Generator().manual_seed(it)
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
        o1.step()
        o2.step()
    for a, b in zip(ref, ours):
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)
    assert o2.state[ours[0]]["step"].item() == 5
    assert set(o2.state_dict()["state"][0]) == set(o1.state_dict()["state"][0])


def test_adamw_trains_a_model():
    torch.manual_seed(0)
    m = torch.nn.Sequential(bt.Linear(4, 16, activation="relu"), bt.Linear(16, 1))
    opt = bt.AdamW(m.parameters(), lr=1e-2)
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)
    first = None
    for _ in range(200):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.05 * first


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_cross_entropy_matches_torch(reduction, bias):
    torch.manual_seed(0)
    h = torch.randn(6, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(11, 8, dtype=torch.float64, requires_grad=True)
    b = torch.randn(11, dtype=torch.float64, requires_grad=True) if bias else None
    t = torch.randint(0, 11, (6,))
    t[2] = -100
    F_ = torch.nn.functional
    loss = bt.linear_cross_entropy(h, w, t, b, reduction=reduction, label_smoothing=0.1) * 3.0
    ref = F_.cross_entropy(F_.linear(h, w, b), t, reduction=reduction, label_smoothing=0.1) * 3.0
    assert torch.allclose(loss, ref)
    params = [h, w] + ([b] if bias else [])
    g1 = torch.autograd.grad(loss, params)
    g2 = torch.autograd.grad(ref, params)
    for a, c in zip(g1, g2):
        assert torch.allclose(a, c)
    assert torch.autograd.gradcheck(lambda a, c: bt.linear_cross_entropy(a, c, t, reduction=reduction), (h, w))
    with pytest.raises(baracuda.UnsupportedError):
        bt.linear_cross_entropy(h, w, t, reduction="none")


def test_linear_cross_entropy_frozen_weight_and_no_grad():
    h = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(5, 8)
    t = torch.randint(0, 5, (4,))
    loss = bt.LinearCrossEntropyLoss()(h, w, t)
    loss.backward()
    assert h.grad is not None
    with torch.no_grad():
        assert bt.linear_cross_entropy(h, w, t).shape == ()

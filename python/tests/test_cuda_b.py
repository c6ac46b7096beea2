"""Part B on the GPU against PyTorch: advanced indexing (index_get / index_put), embedding
(+ check_indices), the baracuda.torch indexing autograd and Embedding, the grouped linear
and the fp8 GEMM (sm_89+). Skips without torch + CUDA + a CUDA build of baracuda:
    PYTHONPATH=<build>/python python -m pytest python/tests/test_cuda_b.py -q
"""
import pytest

import baracuda as bc

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and bc.WITH_CUDA and bc.cuda_available()),
    reason="needs a GPU, torch with CUDA and baracuda built with CUDA")

DEV = "cuda"
T = torch.from_dlpack
P = bc.plans


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.bool])
def test_index_get_cuda(dtype):
    x = (torch.randn(33, 17, 65, device=DEV) * 4).to(dtype)
    i = torch.randint(-33, 33, (5, 7), device=DEV)
    j = torch.randint(0, 65, (7,), device=DEV, dtype=torch.int32)
    for idx in ([i], [i, None, j.long()], [None, torch.randint(0, 17, (3, 1), device=DEV), j.long()],
                [None, torch.rand(17, device=DEV) > 0.5]):
        y = T(bc.index_get(x, idx))
        ref = torch.ops.aten.index(x, idx)
        assert y.device == ref.device and torch.equal(y, ref)
    assert torch.equal(T(bc.index_get(x, [None, None, j])), x[:, :, j.long()])  # int32 indices
    assert T(bc.index_get(x, [torch.empty(0, dtype=torch.long, device=DEV)])).shape == (0, 17, 65)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64])
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_cuda(dtype, accumulate):
    x = (torch.randn(40, 9, 33, device=DEV) * 3).to(dtype)
    i = torch.randint(0, 40, (300,), device=DEV)  # many duplicates
    j = torch.randint(-33, 33, (300,), device=DEV)
    v = (torch.randn(300, 9, device=DEV) * 3).to(dtype)
    y = T(bc.index_put(x, [i, None, j], v, accumulate=accumulate))
    if accumulate:
        ref = torch.ops.aten.index_put(x.double() if dtype != torch.int64 else x, [i, None, j],
                                       v.double() if dtype != torch.int64 else v, True).to(dtype)
        torch.testing.assert_close(y, ref, rtol=2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5,
                                   atol=2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-5)
    else:
        # duplicates: the last position wins (torch on CUDA: any); check against a CPU emulation
        ref = x.cpu().clone()
        for p in range(300):
            ref[i[p].item(), :, j[p].item()] = v[p].cpu()
        assert torch.equal(y.cpu(), ref)
    z = x.clone()
    bc.index_put_(z, [i[:4].unique()], 1)  # in place, a number
    ref = x.clone()
    ref[i[:4].unique()] = 1
    assert torch.equal(z, ref)


def test_index_bad_index_cuda():
    x = torch.randn(4, 5, device=DEV)
    s = torch.cuda.current_stream()
    p = P.IndexGetPlan.select(P.IndexGetDescriptor(dtype="float32", index_dtype="int64", self_shape=(4, 5),
                                                   index_shapes=[(2,)]), stream=s)
    ws = torch.empty(max(p.workspace_size, 1), dtype=torch.uint8, device=DEV)
    out = torch.empty(2, 5, device=DEV)
    p.run(x=x, indices=[torch.tensor([1, 9], device=DEV)], out=out, workspace=ws)
    assert torch.equal(out[0], x[1]) and torch.equal(out[1], torch.zeros(5, device=DEV))  # no fault: zeros
    with pytest.raises(bc.InvalidProblemError, match=r"^IndexGetPlan"):
        p.check_indices(ws)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_embedding_cuda(dtype):
    w = torch.randn(1000, 256, device=DEV, dtype=dtype)
    i = torch.randint(0, 1000, (4, 129), device=DEV)
    assert torch.equal(T(bc.embedding(i, w)), F.embedding(i, w))
    g = torch.randn(4, 129, 256, device=DEV, dtype=dtype)
    dw = T(bc.embedding_backward(g, i, 1000, padding_idx=3, grad_dtype="float32"))
    ref = torch.zeros(1000, 256, device=DEV, dtype=torch.float64).index_add_(0, i.flatten(), g.double().reshape(-1, 256))
    ref[3] = 0
    torch.testing.assert_close(dw.double(), ref, rtol=1e-5, atol=1e-4)
    with pytest.raises(bc.InvalidProblemError, match=r"^EmbeddingPlan"):
        bc.embedding(torch.tensor([1000], device=DEV), w, check_indices=True)  # syncs to check
    y = T(bc.embedding(torch.tensor([1000], device=DEV), w))  # no check: a zero row, no fault
    assert torch.equal(y, torch.zeros_like(y))


def test_torch_indexing_autograd_cuda():
    import baracuda.torch as bt
    x = torch.randn(64, 33, device=DEV, requires_grad=True)
    i = torch.randint(0, 64, (200,), device=DEV)
    for f, ft in ((lambda a: bt.index_get(a, [i]), lambda a: a[i]),
                  (lambda a: bt.index_select(a, 0, i), lambda a: torch.index_select(a, 0, i)),
                  (lambda a: bt.take(a, i), lambda a: torch.take(a, i)),
                  (lambda a: bt.gather(a, 0, i[:, None].expand(200, 33).contiguous()),
                   lambda a: torch.gather(a, 0, i[:, None].expand(200, 33))),
                  (lambda a: bt.masked_select(a, a > 0), lambda a: torch.masked_select(a, a > 0))):
        a = x.detach().clone().requires_grad_()
        b = x.detach().clone().requires_grad_()
        ya, yb = f(a), ft(b)
        torch.testing.assert_close(ya, yb)
        g = torch.randn_like(yb)
        ya.backward(g)
        yb.backward(g)
        torch.testing.assert_close(a.grad, b.grad)
    e = bt.Embedding(500, 64, padding_idx=0, device=DEV)
    r = torch.nn.Embedding(500, 64, padding_idx=0, device=DEV)
    r.load_state_dict(e.state_dict())
    idx = torch.randint(0, 500, (8, 32), device=DEV)
    g = torch.randn(8, 32, 64, device=DEV)
    e(idx).backward(g)
    r(idx).backward(g)
    torch.testing.assert_close(e.weight.grad, r.weight.grad)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_grouped_linear_cuda(dtype):
    T_, K, N, G = 512, 256, 128, 4
    off = [0, 100, 100, 300, 480]
    x = torch.randn(T_, K, device=DEV, dtype=dtype)
    w = torch.randn(G, N, K, device=DEV, dtype=dtype) / 16
    b = torch.randn(G, N, device=DEV, dtype=dtype)
    y = T(bc.grouped_linear(x, w, off, b, activation="relu"))
    ref = torch.cat([F.relu(F.linear(x[off[g]:off[g + 1]].float(), w[g].float(), b[g].float())) for g in range(G)])
    torch.testing.assert_close(y[:480].float(), ref, rtol=2e-2, atol=2e-2)
    dy = torch.randn(T_, N, device=DEV, dtype=dtype)
    dx, dw, db = bc.grouped_linear_backward(dy, x, w, off, activation="relu", aux=y)
    assert T(dx).shape == (T_, K) and T(dw).shape == (G, N, K) and T(db).shape == (G, N)
    assert torch.equal(T(dw)[1], torch.zeros(N, K, device=DEV, dtype=dtype))  # the empty group


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9),
                    reason="fp8 needs sm_89+")
@pytest.mark.parametrize("row", [False, True])
def test_scaled_mm_cuda(row):
    M, K, N = 64, 128, 96
    a = torch.randn(M, K, device=DEV).to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device=DEV).to(torch.float8_e4m3fn).t()
    sa = torch.rand(M, 1, device=DEV) + 0.5 if row else torch.tensor(0.5, device=DEV)
    sb = torch.rand(1, N, device=DEV) + 0.5 if row else torch.tensor(2.0, device=DEV)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    y = T(bc.scaled_mm(a, b, sa, sb, bias, out_dtype=torch.bfloat16))
    ref = ((a.float() @ b.float()) * sa * sb + bias.float())
    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=5e-2)
    if not row:
        tref = torch._scaled_mm(a, b, sa.reshape(()), sb.reshape(()), bias=bias, out_dtype=torch.bfloat16)
        torch.testing.assert_close(y.float(), tref.float(), rtol=2e-2, atol=5e-2)
    with pytest.raises(bc.UnsupportedError, match=r"^ScaledMatmulPlan"):
        bc.scaled_mm(a, b.contiguous(), sa, sb)  # b must be the transposed view of a row-major [N, K]

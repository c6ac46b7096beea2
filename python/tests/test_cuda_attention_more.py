"""flash_attention's mask / ALiBi / varlen options and the materialized
scaled_dot_product_attention on the GPU, against PyTorch (float64 math on the
same data as the reference). Skips without torch + CUDA + a CUDA build:
    PYTHONPATH=<build>/python python -m pytest python/tests/test_cuda_attention_more.py -q
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


def _ref(q, k, v, causal=False, mask=None, slopes=None, align="top_left"):
    """The header's formulas in float64 (torch math, GQA by repeat)."""
    q, k, v = q.double(), k.double(), v.double()
    B, H, Q, D = q.shape
    K = k.shape[2]
    rep = H // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = q @ k.transpose(-1, -2) / D ** 0.5
    off = 0 if align == "top_left" else K - Q
    i = torch.arange(Q, device=q.device)[:, None] + off
    j = torch.arange(K, device=q.device)[None, :]
    if slopes is not None:
        sl = slopes.double().reshape((1, H, 1, 1) if slopes.dim() == 1 else (B, H, 1, 1))
        s = s - sl * (i - j).abs()
    if mask is not None:
        s = s + mask.double()
    if causal:
        s = s.masked_fill(j > i, float("-inf"))
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_flash_mask_alibi_cuda(dtype, causal):
    q = torch.randn(2, 8, 70, 64, device=DEV, dtype=dtype)
    k = torch.randn(2, 2, 90, 64, device=DEV, dtype=dtype)
    v = torch.randn(2, 2, 90, 64, device=DEV, dtype=dtype)
    mask = torch.randn(70, 90, device=DEV).expand(2, 8, 70, 90)
    slopes = torch.rand(8, device=DEV) * 0.2
    y = T(bc.flash_attention(q, k, v, causal=causal, align="bottom_right", attn_mask=mask, alibi_slopes=slopes))
    ref = _ref(q, k, v, causal, mask, slopes, "bottom_right")
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    assert torch.allclose(y.double(), ref, atol=tol, rtol=tol), (y.double() - ref).abs().max()
    # backward against autograd of the float64 reference
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    dy = torch.randn_like(q)
    _ref(qd, kd, vd, causal, mask, slopes, "bottom_right").backward(dy.double())
    y2, lse = bc.flash_attention(q, k, v, causal=causal, align="bottom_right", attn_mask=mask, alibi_slopes=slopes,
                                 return_lse=True)
    dq, dk, dv = bc.flash_attention_backward(dy, q, k, v, y2, lse, causal=causal, align="bottom_right",
                                             attn_mask=mask, alibi_slopes=slopes)
    gt = 5e-2 if dtype == torch.bfloat16 else 1e-3
    for g, r in ((dq, qd.grad), (dk, kd.grad), (dv, vd.grad)):
        err = (T(g).double() - r).abs().max() / r.abs().max()
        assert err < gt, err


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_flash_varlen_cuda(dtype):
    lq, lk = [37, 1, 128, 64], [80, 19, 128, 200]
    H, Hk, D = 8, 4, 64  # varlen runs the bespoke kernels: head dim 64 is in every build (BARACUDA_FLASH_HEAD_DIMS)
    q = torch.randn(sum(lq), H, D, device=DEV, dtype=dtype)
    k = torch.randn(sum(lk), Hk, D, device=DEV, dtype=dtype)
    v = torch.randn(sum(lk), Hk, D, device=DEV, dtype=dtype)
    cq = torch.tensor([0] + list(torch.tensor(lq).cumsum(0)), device=DEV, dtype=torch.int32)
    ck = torch.tensor([0] + list(torch.tensor(lk).cumsum(0)), device=DEV, dtype=torch.int32)
    y = T(bc.flash_attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=True, align="bottom_right"))
    for b in range(len(lq)):
        qs = q[cq[b]:cq[b + 1]].transpose(0, 1)[None]
        ks = k[ck[b]:ck[b + 1]].transpose(0, 1)[None]
        vs = v[ck[b]:ck[b + 1]].transpose(0, 1)[None]
        ref = _ref(qs, ks, vs, True, align="bottom_right")[0].transpose(0, 1)
        assert torch.allclose(y[cq[b]:cq[b + 1]].double(), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_materialized_sdpa_cuda(dtype):
    q = torch.randn(2, 4, 33, 40, device=DEV, dtype=dtype)
    k = torch.randn(2, 2, 47, 40, device=DEV, dtype=dtype)
    v = torch.randn(2, 2, 47, 24, device=DEV, dtype=dtype)
    mask = torch.randn(2, 4, 33, 47, device=DEV)
    y, p = bc.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True, return_probs=True)
    ref = F.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(2, 1),
                                         v.double().repeat_interleave(2, 1),
                                         attn_mask=mask.double().masked_fill(
                                             torch.ones(33, 47, dtype=torch.bool, device=DEV).triu(1), float("-inf")))
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    assert torch.allclose(T(y).double(), ref, atol=tol, rtol=tol)
    dy = torch.randn(2, 4, 33, 24, device=DEV, dtype=dtype)
    dq, dk, dv = bc.scaled_dot_product_attention_backward(dy, q, k, v, p, is_causal=True)
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    _ref(qd, kd, vd, True, mask).backward(dy.double())
    gt = {torch.bfloat16: 5e-2, torch.float32: 1e-4, torch.float64: 1e-9}[dtype]
    for g, r in ((dq, qd.grad), (dk, kd.grad), (dv, vd.grad)):
        assert T(g).shape == r.shape
        err = (T(g).double() - r).abs().max() / r.abs().max()
        assert err < gt, err


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("L", [1, 4])
def test_paged_attention_cuda_matches_dense(dtype, L):
    B, H, Hk, D, P = 5, 8, 2, 128, 16
    lens = torch.tensor([1, 17, 200, 64, 333], dtype=torch.int32)
    max_pages = 24
    kd = torch.randn(B, Hk, max_pages * P, D, device=DEV, dtype=dtype)
    vd = torch.randn(B, Hk, max_pages * P, D, device=DEV, dtype=dtype)
    need = [(int(n) + P - 1) // P for n in lens]
    num_pages = sum(need) + 5
    order = torch.randperm(num_pages)
    kp = torch.randn(num_pages, P, Hk, D, device=DEV, dtype=dtype)
    vp = torch.randn(num_pages, P, Hk, D, device=DEV, dtype=dtype)
    table = torch.full((B, max_pages), -7, dtype=torch.int32)
    nxt = 0
    for b in range(B):
        for i in range(need[b]):
            pg = int(order[nxt])
            nxt += 1
            table[b, i] = pg
            kp[pg] = kd[b, :, i * P:(i + 1) * P].transpose(0, 1)
            vp[pg] = vd[b, :, i * P:(i + 1) * P].transpose(0, 1)
    q = torch.randn(B, H, L, D, device=DEV, dtype=dtype)
    y = T(bc.paged_attention(q, kp, vp, table.to(DEV), lens.to(DEV)))
    for b in range(B):
        n = int(lens[b])
        if n < L:
            continue
        ref = _ref(q[b:b + 1], kd[b:b + 1, :, :n], vd[b:b + 1, :, :n], True, align="bottom_right")
        assert torch.allclose(y[b:b + 1].double(), ref, atol=2e-2, rtol=2e-2), (y[b:b + 1].double() - ref).abs().max()

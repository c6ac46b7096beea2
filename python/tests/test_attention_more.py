"""flash_attention's mask / ALiBi / varlen options and the materialized
scaled_dot_product_attention (SdpaPlan) on the CPU: against a NumPy reference
of the header's formulas, and torch's SDPA where it is importable; backward by
f64 finite differences."""
import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of
from test_ops import close, fd_grad


def _ref(q, k, v, causal=False, scale=None, mask=None, slopes=None, align="top_left"):
    """softmax(q k^T * scale + mask - slope |i + off - j|) v over the allowed keys; empty rows give 0."""
    B, H, Q, D = q.shape
    Hk, K = k.shape[1], k.shape[2]
    k = np.repeat(k, H // Hk, axis=1)
    v = np.repeat(v, H // Hk, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * (scale if scale is not None else 1 / np.sqrt(D))
    off = 0 if align == "top_left" else K - Q
    i = np.arange(Q)[:, None] + off
    j = np.arange(K)[None, :]
    if slopes is not None:
        sl = slopes.reshape((1, H, 1, 1) if slopes.ndim == 1 else (B, H, 1, 1))
        s = s - sl * np.abs(i - j)[None, None]
    if mask is not None:
        s = s + mask
    allowed = np.broadcast_to(j <= i if causal else np.ones((Q, K), bool), s.shape)
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    p = np.where(den > 0, p / np.where(den > 0, den, 1), 0)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_mask_and_alibi(causal, rng):
    q = rng.standard_normal((2, 4, 5, 32))
    k = rng.standard_normal((2, 2, 7, 32))
    v = rng.standard_normal((2, 2, 7, 32))
    mask = rng.standard_normal((2, 4, 5, 7)).astype(np.float32)
    mask[0, 1, 2, :] = -np.inf  # a fully masked row: 0
    slopes = (rng.random(4) + 0.1).astype(np.float32)
    y = bc.flash_attention(q, k, v, causal=causal, attn_mask=mask, alibi_slopes=slopes)
    close(y, _ref(q, k, v, causal, mask=mask.astype(np.float64), slopes=slopes.astype(np.float64)), rtol=1e-9, atol=1e-9)
    assert np.all(np_of(y)[0, 1, 2] == 0)
    slopes_bh = (rng.random((2, 4)) + 0.1).astype(np.float32)
    y2 = bc.flash_attention(q, k, v, causal=causal, alibi_slopes=slopes_bh)
    close(y2, _ref(q, k, v, causal, slopes=slopes_bh.astype(np.float64)), rtol=1e-9, atol=1e-9)


def test_flash_mask_broadcast_view_and_backward(rng):
    q = rng.standard_normal((1, 2, 3, 32))
    k = rng.standard_normal((1, 2, 4, 32))
    v = rng.standard_normal((1, 2, 4, 32))
    dy = rng.standard_normal((1, 2, 3, 32))
    m2 = rng.standard_normal((3, 4)).astype(np.float32)
    mask = np.broadcast_to(m2, (1, 2, 3, 4))  # stride-0 batch and head axes
    slopes = np.array([0.5, 0.25], np.float32)
    y, lse = bc.flash_attention(q, k, v, attn_mask=mask, alibi_slopes=slopes, return_lse=True)
    close(y, _ref(q, k, v, mask=np.asarray(mask, np.float64), slopes=slopes.astype(np.float64)), rtol=1e-9, atol=1e-9)
    dq, dk, dv = bc.flash_attention_backward(dy, q, k, v, y, lse, attn_mask=mask, alibi_slopes=slopes)
    f = lambda qq, kk, vv: float((_ref(qq, kk, vv, mask=np.asarray(mask, np.float64),
                                       slopes=slopes.astype(np.float64)) * dy).sum())
    close(dq, fd_grad(lambda x: np.array(f(x, k, v)), q, 1.0), rtol=1e-5, atol=1e-6)
    close(dk, fd_grad(lambda x: np.array(f(q, x, v)), k, 1.0), rtol=1e-5, atol=1e-6)
    close(dv, fd_grad(lambda x: np.array(f(q, k, x)), v, 1.0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_varlen_matches_each_sequence(causal, rng):
    lq, lk = [3, 1, 4], [5, 2, 4]
    H, Hk, D = 4, 2, 32
    q = rng.standard_normal((sum(lq), H, D))
    k = rng.standard_normal((sum(lk), Hk, D))
    v = rng.standard_normal((sum(lk), Hk, D))
    cq = np.array([0, 3, 4, 8], np.int32)
    ck = np.array([0, 5, 7, 11], np.int32)
    slopes = np.array([0.3, 0.2, 0.1, 0.05], np.float32)
    y, lse = bc.flash_attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=causal, align="bottom_right",
                                       alibi_slopes=slopes, return_lse=True)
    y = np_of(y)
    assert np_of(lse).shape == (H, sum(lq))
    for b in range(3):
        qs = q[cq[b]:cq[b + 1]].transpose(1, 0, 2)[None]
        ks = k[ck[b]:ck[b + 1]].transpose(1, 0, 2)[None]
        vs = v[ck[b]:ck[b + 1]].transpose(1, 0, 2)[None]
        ref = _ref(qs, ks, vs, causal, slopes=slopes.astype(np.float64), align="bottom_right")[0].transpose(1, 0, 2)
        np.testing.assert_allclose(y[cq[b]:cq[b + 1]], ref, rtol=1e-9, atol=1e-9)
    dy = rng.standard_normal(y.shape)
    dq, dk, dv = bc.flash_attention_varlen_backward(dy, q, k, v, y, lse, cq, ck, max(lq), max(lk), causal=causal,
                                                    align="bottom_right", alibi_slopes=slopes)

    def f(qq, kk, vv):
        tot = 0.0
        for b in range(3):
            qs = qq[cq[b]:cq[b + 1]].transpose(1, 0, 2)[None]
            ks = kk[ck[b]:ck[b + 1]].transpose(1, 0, 2)[None]
            vs = vv[ck[b]:ck[b + 1]].transpose(1, 0, 2)[None]
            r = _ref(qs, ks, vs, causal, slopes=slopes.astype(np.float64), align="bottom_right")[0].transpose(1, 0, 2)
            tot += float((r * dy[cq[b]:cq[b + 1]]).sum())
        return tot
    close(dq, fd_grad(lambda x: np.array(f(x, k, v)), q, 1.0), rtol=1e-5, atol=1e-6)
    close(dk, fd_grad(lambda x: np.array(f(q, x, v)), k, 1.0), rtol=1e-5, atol=1e-6)
    close(dv, fd_grad(lambda x: np.array(f(q, k, x)), v, 1.0), rtol=1e-5, atol=1e-6)


def test_flash_varlen_bad_offsets_raise_on_the_cpu(rng):
    q = rng.standard_normal((4, 2, 32))
    k = rng.standard_normal((4, 2, 32))
    with pytest.raises(bc.InvalidProblemError, match="FlashSdpaPlan"):
        bc.flash_attention_varlen(q, k, k, np.array([0, 3, 2], np.int32), np.array([0, 2, 4], np.int32), 3, 2)


@pytest.mark.parametrize("causal", [False, True])
def test_materialized_sdpa_forward_backward(causal, rng):
    q = rng.standard_normal((2, 4, 5, 16))
    k = rng.standard_normal((2, 2, 6, 16))
    v = rng.standard_normal((2, 2, 6, 24))  # Dv != Dk: only the materialized plan takes it
    mask = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    y, p = bc.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, return_probs=True)
    close(y, _ref(q, k, v, causal, mask=mask.astype(np.float64)), rtol=1e-9, atol=1e-9)
    assert p.dtype == "float64" and p.shape == (2, 4, 5, 6)
    dy = rng.standard_normal((2, 4, 5, 24))
    dq, dk, dv = bc.scaled_dot_product_attention_backward(dy, q, k, v, p, is_causal=causal)
    f = lambda qq, kk, vv: float((_ref(qq, kk, vv, causal, mask=mask.astype(np.float64)) * dy).sum())
    close(dq, fd_grad(lambda x: np.array(f(x, k, v)), q, 1.0), rtol=1e-5, atol=1e-6)
    close(dk, fd_grad(lambda x: np.array(f(q, x, v)), k, 1.0), rtol=1e-5, atol=1e-6)
    close(dv, fd_grad(lambda x: np.array(f(q, k, x)), v, 1.0), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")
def test_materialized_sdpa_matches_torch(rng):
    import torch
    q = torch.randn(2, 4, 5, 32)
    k = torch.randn(2, 4, 6, 32)
    v = torch.randn(2, 4, 6, 32)
    mask = torch.randn(5, 6).expand(2, 4, 5, 6)
    y = bc.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
    assert torch.allclose(torch.from_dlpack(y), ref, atol=1e-5)
    yf = bc.flash_attention(q, k, v, attn_mask=mask, scale=0.3)
    assert torch.allclose(torch.from_dlpack(yf), ref, atol=1e-5)


def test_attention_option_errors(rng):
    q = rng.standard_normal((1, 2, 3, 32))
    with pytest.raises(bc.InvalidProblemError, match="FlashSdpaPlan"):
        bc.flash_attention(q, q, q, alibi_slopes=np.ones(3, np.float32))  # [H] = [2] expected
    with pytest.raises(bc.InvalidProblemError):
        bc.scaled_dot_product_attention(q, q, q, attn_mask=np.zeros((1, 2, 3, 4), np.float32))

"""flash_attention and rope on the CPU: against NumPy references, with
finite-difference gradients in f64."""
import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of
from test_ops import close, fd_grad


def _attn_ref(q, k, v, causal, scale=None, window=None, align="top_left"):
    B, H, Q, D = q.shape
    Hk, K = k.shape[1], k.shape[2]
    rep = H // Hk
    k = np.repeat(k, rep, axis=1)
    v = np.repeat(v, rep, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * (scale if scale is not None else 1 / np.sqrt(D))
    off = 0 if align == "top_left" else K - Q
    i = np.arange(Q)[:, None] + off
    j = np.arange(K)[None, :]
    allowed = np.ones((Q, K), bool)
    if causal:
        allowed &= j <= i
    if window is not None:
        if window[0] >= 0:
            allowed &= j >= i - window[0]
        if window[1] >= 0:
            allowed &= j <= i + window[1]
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("hk", [1, 2])
def test_flash_attention(causal, hk, rng):
    q = rng.standard_normal((2, 2, 5, 32))
    k = rng.standard_normal((2, hk, 7, 32))
    v = rng.standard_normal((2, hk, 7, 32))
    align = "bottom_right" if causal else "top_left"
    close(bc.flash_attention(q, k, v, causal, align=align), _attn_ref(q, k, v, causal, align=align), rtol=1e-10,
          atol=1e-12)
    close(bc.flash_attention(q, k, v, scale=0.3, window=(2, 1)), _attn_ref(q, k, v, False, 0.3, (2, 1)),
          rtol=1e-10, atol=1e-12)


def test_flash_attention_layouts_and_errors(rng):
    # [B, S, H, D] storage viewed as [B, H, S, D]
    qs = rng.standard_normal((1, 4, 2, 32))
    q = qs.transpose(0, 2, 1, 3)
    close(bc.flash_attention(q, q, q), _attn_ref(q, q, q, False), rtol=1e-10, atol=1e-12)
    with pytest.raises(bc.InvalidProblemError):
        bc.flash_attention(q[0], q[0], q[0])
    with pytest.raises(bc.Error):  # head dim 20 is not supported
        x = np.zeros((1, 1, 2, 20))
        bc.flash_attention(x, x, x)
    with pytest.raises(bc.Error):  # H % Hk != 0
        bc.flash_attention(np.zeros((1, 3, 2, 32)), np.zeros((1, 2, 2, 32)), np.zeros((1, 2, 2, 32)))


def test_flash_attention_backward_fd(rng):
    q = rng.standard_normal((1, 2, 2, 32))
    k = rng.standard_normal((1, 1, 3, 32))
    v = rng.standard_normal((1, 1, 3, 32))
    g = rng.standard_normal((1, 2, 2, 32))
    y, lse = bc.flash_attention(q, k, v, True, align="bottom_right", return_lse=True)
    assert lse.shape == (1, 2, 2) and lse.dtype == "float32"
    dq, dk, dv = bc.flash_attention_backward(g, q, k, v, y, lse, True, align="bottom_right")
    f = lambda a, b, c: bc.flash_attention(a, b, c, True, align="bottom_right")  # noqa: E731
    # lse is float32: the backward's softmax is recomputed from it, so allow f32-level error
    close(dq, fd_grad(lambda t: f(t, k, v), q, g), rtol=1e-4, atol=1e-5)
    close(dk, fd_grad(lambda t: f(q, t, v), k, g), rtol=1e-4, atol=1e-5)
    close(dv, fd_grad(lambda t: f(q, k, t), v, g), rtol=1e-4, atol=1e-5)


def _rope_ref(x, pos, theta, R, interleaved):
    D = x.shape[-1]
    i = np.arange(R // 2)
    ang = pos[..., None] * theta ** (-2.0 * i / R)  # [S, R/2] or [B, S, R/2]
    if ang.ndim == 3:
        ang = ang[:, None]
    c, s = np.cos(ang), np.sin(ang)
    out = x.copy()
    if interleaved:
        a, b = x[..., 0:R:2], x[..., 1:R:2]
        out[..., 0:R:2] = a * c - b * s
        out[..., 1:R:2] = b * c + a * s
    else:
        a, b = x[..., : R // 2], x[..., R // 2: R]
        out[..., : R // 2] = a * c - b * s
        out[..., R // 2: R] = b * c + a * s
    assert D >= R
    return out


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_rope(interleaved, rotary_dim, rng):
    q = rng.standard_normal((2, 3, 5, 8))
    k = rng.standard_normal((2, 1, 5, 8))
    R = rotary_dim or 8
    qo, ko = bc.rope(q, k, theta=500.0, rotary_dim=rotary_dim, interleaved=interleaved)
    pos = np.arange(5, dtype=np.float64)
    close(qo, _rope_ref(q, pos, 500.0, R, interleaved), rtol=1e-12, atol=1e-12)
    close(ko, _rope_ref(k, pos, 500.0, R, interleaved), rtol=1e-12, atol=1e-12)
    p = rng.integers(0, 100, (2, 5)).astype(np.int64)
    close(bc.rope(q, positions=p), _rope_ref(q, p.astype(np.float64), 10000.0, 8, False), rtol=1e-12, atol=1e-12)
    dq = bc.rope_backward(np_of(qo), positions=None, theta=500.0, rotary_dim=rotary_dim, interleaved=interleaved)
    close(dq, q, rtol=1e-12, atol=1e-12)  # the inverse rotation


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")
def test_flash_attention_against_torch():
    import torch
    q = torch.randn(2, 4, 9, 64, dtype=torch.float64)
    k = torch.randn(2, 2, 9, 64, dtype=torch.float64)
    v = torch.randn(2, 2, 9, 64, dtype=torch.float64)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                                           is_causal=True)
    assert torch.allclose(torch.from_dlpack(bc.flash_attention(q, k, v, causal=True)), ref)

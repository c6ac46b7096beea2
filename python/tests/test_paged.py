"""paged_attention / paged_kv_append_ (the attention_paged family; f16 / bf16 / f32) on the CPU:
paged == dense on shuffled page tables, against a NumPy reference."""
import numpy as np
import pytest

import baracuda as bc
from conftest import np_of


def _dense_ref(q, k, v, lens, causal, scale=None):
    """q [B, H, L, D]; k, v [B, Hk, Kmax, D] dense; sequence b has lens[b] keys."""
    B, H, L, D = q.shape
    rep = H // k.shape[1]
    out = np.zeros_like(q)
    for b in range(B):
        n = lens[b]
        kk = np.repeat(k[b, :, :n], rep, axis=0)
        vv = np.repeat(v[b, :, :n], rep, axis=0)
        s = np.einsum("hld,hkd->hlk", q[b], kk) * (scale if scale is not None else 1 / np.sqrt(D))
        if causal:
            pos = n - L + np.arange(L)[:, None]
            s = np.where(np.arange(n)[None, :] <= pos, s, -np.inf)
        m = s.max(-1, keepdims=True)
        p = np.exp(s - m)
        out[b] = np.einsum("hlk,hkd->hld", p / p.sum(-1, keepdims=True), vv)
    return out


def _paged(rng, B, Hk, D, P, lens, max_pages):
    """Dense K/V scattered into a shuffled page pool; the unused table entries hold garbage."""
    kd = rng.standard_normal((B, Hk, max_pages * P, D)).astype(np.float32)
    vd = rng.standard_normal((B, Hk, max_pages * P, D)).astype(np.float32)
    need = [(n + P - 1) // P for n in lens]
    num_pages = sum(need) + 3
    order = rng.permutation(num_pages)
    kp = rng.standard_normal((num_pages, P, Hk, D)).astype(np.float32)
    vp = rng.standard_normal((num_pages, P, Hk, D)).astype(np.float32)
    table = np.full((B, max_pages), 10 ** 6, np.int32)  # out of range: must never be read
    nxt = 0
    for b in range(B):
        for i in range(need[b]):
            pg = order[nxt]
            nxt += 1
            table[b, i] = pg
            kp[pg] = kd[b, :, i * P:(i + 1) * P].transpose(1, 0, 2)
            vp[pg] = vd[b, :, i * P:(i + 1) * P].transpose(1, 0, 2)
    return kd, vd, kp, vp, table


@pytest.mark.parametrize("L,causal", [(1, True), (3, True), (2, False)])
def test_paged_attention_equals_dense(L, causal, rng):
    B, H, Hk, D, P = 3, 4, 2, 32, 4
    lens = np.array([5, 9, 3], np.int32)
    kd, vd, kp, vp, table = _paged(rng, B, Hk, D, P, lens, 4)
    q = rng.standard_normal((B, H, L, D)).astype(np.float32)
    y, lse = bc.paged_attention(q, kp, vp, table, lens, causal=causal, return_lse=True)
    np.testing.assert_allclose(np_of(y), _dense_ref(q, kd, vd, lens, causal), rtol=1e-5, atol=1e-5)
    assert np_of(lse).shape == (B, H, L)


def test_paged_kv_append_then_decode(rng):
    B, H, Hk, D, P = 2, 2, 1, 32, 4
    lens = np.array([3, 6], np.int32)
    kd, vd, kp, vp, table = _paged(rng, B, Hk, D, P, lens + 1, 3)  # room for one more key each
    kn = rng.standard_normal((B, Hk, 1, D)).astype(np.float32)
    vn = rng.standard_normal((B, Hk, 1, D)).astype(np.float32)
    bc.paged_kv_append_(kp, vp, kn, vn, table, lens)
    for b in range(B):
        kd[b, :, lens[b]] = kn[b, :, 0]
        vd[b, :, lens[b]] = vn[b, :, 0]
    q = rng.standard_normal((B, H, 1, D)).astype(np.float32)
    y = bc.paged_attention(q, kp, vp, table, lens + 1)
    np.testing.assert_allclose(np_of(y), _dense_ref(q, kd, vd, lens + 1, True), rtol=1e-5, atol=1e-5)


def test_paged_errors(rng):
    q = rng.standard_normal((1, 2, 1, 32)).astype(np.float32)
    kp = rng.standard_normal((2, 4, 1, 32)).astype(np.float32)
    table = np.array([[0, 1]], np.int32)
    with pytest.raises(bc.InvalidProblemError, match="PagedAttentionPlan"):
        bc.paged_attention(q, kp, kp, table, np.array([9], np.int32))  # 9 > 2 pages * 4
    with pytest.raises(bc.InvalidProblemError, match="PagedAttentionPlan"):
        bc.paged_attention(q, kp, kp, np.array([[0, 5]], np.int32), np.array([8], np.int32))  # page 5 of 2

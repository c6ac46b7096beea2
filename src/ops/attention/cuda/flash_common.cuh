// Device-side pieces every flash-attention kernel shares: where a sequence
// lives (dense or varlen, offsets clamped to the tensors), which keys a query
// row may see (causal / sliding window with the diagonal alignment), and the
// score pipeline (scale, softcap, ALiBi, additive mask). One definition so the
// SIMT and tensor-core kernels cannot drift apart; the CPU reference in
// src/ops/attention/reference.cpp implements the same rules independently.
#pragma once
#include <cstdint>

#include "ops/attention/flash_launch.hpp"

namespace baracuda::attention::cuda {

// One (batch, head) problem: lengths, row offsets into the packed tensors and
// the diagonal offset. In varlen mode the cumulative offsets are clamped to
// [0, total] and the lengths to the descriptor's maxima, so a bad cu_seqlens
// array can only produce wrong numbers, never out-of-bounds accesses.
struct SeqInfo {
  int q_len = 0;
  int kv_len = 0;
  int64_t q_start = 0;   // row offset of this sequence in q / y / dy / lse
  int64_t kv_start = 0;  // row offset in k / v
  int off = 0;           // diagonal offset: 0 (top-left) or kv_len - q_len (bottom-right)
};

__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }

__device__ __forceinline__ SeqInfo seq_info(const FlashFwdParams& p, int b) {
  SeqInfo s;
  if (p.cu_q != nullptr) {
    const int64_t q0 = clamp64(p.cu_q[b], 0, p.total_q), q1 = clamp64(p.cu_q[b + 1], q0, p.total_q);
    const int64_t k0 = clamp64(p.cu_kv[b], 0, p.total_kv), k1 = clamp64(p.cu_kv[b + 1], k0, p.total_kv);
    s.q_start = q0;
    s.kv_start = k0;
    s.q_len = static_cast<int>(q1 - q0 < p.q_len ? q1 - q0 : p.q_len);
    s.kv_len = static_cast<int>(k1 - k0 < p.kv_len ? k1 - k0 : p.kv_len);
  } else {
    s.q_len = p.q_len;
    s.kv_len = p.kv_len;
  }
  s.off = p.bottom_right ? s.kv_len - s.q_len : 0;
  return s;
}

// Keys [lo, hi) that query row i may see before the mask / -inf scores are
// applied (empty when lo >= hi). Used both per element and, with the rows of a
// tile, to skip whole key tiles.
struct KeyRange {
  int lo, hi;
};
__device__ __forceinline__ KeyRange key_range(const FlashFwdParams& p, const SeqInfo& s, int i) {
  int64_t lo = 0, hi = s.kv_len;
  const int64_t d = static_cast<int64_t>(i) + s.off;  // the diagonal key of row i
  if (p.causal && d + 1 < hi) hi = d + 1;
  if (p.window_right >= 0 && d + p.window_right + 1 < hi) hi = d + p.window_right + 1;
  if (p.window_left >= 0 && d - p.window_left > lo) lo = d - p.window_left;
  if (hi < 0) hi = 0;
  if (lo > hi) lo = hi;
  return {static_cast<int>(lo), static_cast<int>(hi)};
}
// Keys any row of [i0, i1) may see: the union of key_range over the rows
// (ranges move monotonically with i, so the ends suffice).
__device__ __forceinline__ KeyRange tile_key_range(const FlashFwdParams& p, const SeqInfo& s, int i0, int i1) {
  if (i1 <= i0) return {0, 0};
  const KeyRange a = key_range(p, s, i0), b = key_range(p, s, i1 - 1);
  return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}
// Query rows that can see key j (the transpose of key_range), for the
// backward's key-tile-owned loops: rows [lo, hi).
__device__ __forceinline__ KeyRange query_range(const FlashFwdParams& p, const SeqInfo& s, int j) {
  // j <= i + off + wr  <=>  i >= j - off - wr ;  causal: i >= j - off
  // j >= i + off - wl  <=>  i <= j - off + wl
  int64_t lo = 0, hi = s.q_len;
  const int64_t d = static_cast<int64_t>(j) - s.off;
  if (p.causal && d > lo) lo = d;
  if (p.window_right >= 0 && d - p.window_right > lo) lo = d - p.window_right;
  if (p.window_left >= 0 && d + p.window_left + 1 < hi) hi = d + p.window_left + 1;
  if (hi < 0) hi = 0;
  if (lo > hi) lo = hi;
  return {static_cast<int>(lo), static_cast<int>(hi)};
}
__device__ __forceinline__ KeyRange tile_query_range(const FlashFwdParams& p, const SeqInfo& s, int j0, int j1) {
  if (j1 <= j0) return {0, 0};
  const KeyRange a = query_range(p, s, j0), b = query_range(p, s, j1 - 1);
  return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

// True when key j is visible to row i (inside key_range).
__device__ __forceinline__ bool key_allowed(const FlashFwdParams& p, const SeqInfo& s, int i, int j) {
  const int64_t d = static_cast<int64_t>(i) + s.off;
  if (j < 0 || j >= s.kv_len) return false;
  if (p.causal && j > d) return false;
  if (p.window_right >= 0 && j > d + p.window_right) return false;
  if (p.window_left >= 0 && j < d - p.window_left) return false;
  return true;
}

// Score pipeline after the raw dot product `qk` (not yet scaled). Returns the
// final score; `dtanh` receives d(score)/d(scaled qk) for the softcap
// (1 - tanh^2, or 1 without softcap), which the backward multiplies into ds.
// Acc is float for f16/bf16/f32, double for f64.
template <class Acc>
__device__ __forceinline__ Acc score_transform(const FlashFwdParams& p, Acc qk, Acc scale, Acc softcap, Acc slope,
                                               const float* mask_row, int i, int j, const SeqInfo& s, Acc* dtanh) {
  Acc x = qk * scale;
  Acc g = Acc(1);
  if (softcap > Acc(0)) {
    const Acc t = tanh(x / softcap);
    x = softcap * t;
    g = Acc(1) - t * t;
  }
  if (p.alibi != nullptr) {
    const int64_t dist = static_cast<int64_t>(i) + s.off - j;
    x -= slope * static_cast<Acc>(dist < 0 ? -dist : dist);
  }
  if (mask_row != nullptr) x += static_cast<Acc>(mask_row[static_cast<int64_t>(j) * p.m_sk]);
  if (dtanh) *dtanh = g;
  return x;
}

__device__ __forceinline__ float alibi_slope(const FlashFwdParams& p, int b, int h) {
  return p.alibi ? p.alibi[b * p.alibi_sb + h * p.alibi_sh] : 0.f;
}
// Row pointer of the mask for (b, h, i), or null without a mask.
__device__ __forceinline__ const float* mask_row(const FlashFwdParams& p, int b, int h, int i) {
  return p.mask ? p.mask + b * p.m_sb + h * p.m_sh + static_cast<int64_t>(i) * p.m_sq : nullptr;
}

}  // namespace baracuda::attention::cuda

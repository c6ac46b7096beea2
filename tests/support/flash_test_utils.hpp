// Shared setup of the CUDA flash-attention tests (attention/cuda_flash_simt.cpp,
// cuda_flash_mma_fwd.cpp, cuda_flash_mma_bwd.cpp):
//
//  * FlashCase / FlashMask: a problem of the SIMT and tensor-core backward
//    tests and its additive mask kinds; make_flash_mask() builds the mask.
//  * flash_desc(): the FlashSdpaDescriptor of any case type with the fields
//    B, H, Hk, Q, K, D, causal, align, wl, wr, softcap, scale, alibi, mask,
//    q_lens, kv_lens (varlen when q_lens is non-empty).
//  * seq_layout(), random_in(), random_case_inputs(): host inputs in the
//    case's storage layout ([B,S,H,D] when bshd), drawn in a fixed order.
//  * DeviceFlashInputs: device copies of the inputs, bound to the forward or
//    backward args.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "support/attention_helpers.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

// Device buffers of the flash tests hold at least this many bytes.
inline constexpr size_t kFlashMinBytes = 16;

// Additive mask kinds: full [B,H,Q,K], [B,1,1,K] key padding with -inf,
// [1,1,Q,K] broadcast, -inf entries with fully masked rows.
enum class FlashMask { None, Full, KeyPad, QK, NegInf };

// The fields every flash test case has (Mask: the test's mask-kind enum, with a None).
template <class Mask>
struct FlashProblem {
  std::string name;
  int64_t B = 1, H = 1, Hk = 1, Q = 0, K = 0, D = 64;
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;
  int64_t wl = -1, wr = -1;
  double softcap = 0;
  std::optional<double> scale;
  AlibiMode alibi = AlibiMode::None;
  Mask mask = Mask::None;
  bool bshd = false;                     // q, k, v, y, dy (and dq, dk, dv) stored [B,S,H,D]
  std::vector<int64_t> q_lens, kv_lens;  // varlen when non-empty
};

struct FlashCase : FlashProblem<FlashMask> {
  bool padded_out = false;  // outputs are slices of bigger buffers (gaps must survive)
  double qrange = 1.0;      // q ~ U(-qrange, qrange): larger = peakier softmax
};

template <class C>
FlashSdpaDescriptor flash_desc(const C& c, DType dt) {
  FlashSdpaDescriptor d;
  const bool varlen = !c.q_lens.empty();
  d.dtype = dt;
  d.batch = varlen ? static_cast<int64_t>(c.q_lens.size()) : c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.head_dim = c.D;
  d.scale = c.scale;
  d.causal = c.causal;
  d.align = c.align;
  d.window_left = c.wl;
  d.window_right = c.wr;
  d.softcap = c.softcap;
  d.alibi = c.alibi;
  d.has_mask = c.mask != decltype(c.mask)::None;
  if (varlen) {
    d.varlen = true;
    for (size_t b = 0; b < c.q_lens.size(); ++b) {
      d.q_len = std::max(d.q_len, c.q_lens[b]);
      d.kv_len = std::max(d.kv_len, c.kv_lens[b]);
      d.total_q += c.q_lens[b];
      d.total_kv += c.kv_lens[b];
    }
  } else {
    d.q_len = c.Q;
    d.kv_len = c.K;
  }
  return d;
}

// Layout of a q-like tensor: dense [B,H,S,D] (stored [B,S,H,D] when c.bshd)
// or varlen [T,H,D].
template <class C>
Layout seq_layout(const C& c, const Dims& shape) {
  if (c.bshd && shape.rank == 4) return permuted(shape, {0, 2, 1, 3});
  return contiguous(shape);
}

// Random values in [lo, hi) in layout L.
inline HostTensor random_in(DType t, const Layout& L, Rng& rng, double lo = -1, double hi = 1) {
  HostTensor x(t, L);
  x.set_values(random_values(t, L.numel(), rng, lo, hi));
  return x;
}

// Random inputs of case `c` (descriptor d): q ~ U(-qrange, qrange), k, v in
// the case's storage layout, then mask(rng) when d.has_mask, ALiBi slopes and
// the varlen offsets, in that order.
template <class C, class MaskFn>
FlashInputs random_case_inputs(const C& c, const FlashSdpaDescriptor& d, Rng& rng, double qrange, MaskFn&& mask) {
  FlashInputs in;
  in.q = random_in(d.dtype, seq_layout(c, flash_q_shape(d)), rng, -qrange, qrange);
  in.k = random_in(d.dtype, seq_layout(c, flash_kv_shape(d)), rng);
  in.v = random_in(d.dtype, seq_layout(c, flash_kv_shape(d)), rng);
  if (d.has_mask) in.mask = mask(rng);
  set_random_alibi(d, rng, &in);
  if (d.varlen) set_cu_seqlens(c.q_lens, c.kv_lens, &in);
  return in;
}

// Mask storage and values per kind. The -inf patterns only depend on the axes
// a broadcast kind keeps, so every logical element agrees with its storage.
inline HostTensor make_flash_mask(FlashMask kind, const Dims& ms, Rng& rng) {
  Layout L = contiguous(ms);
  if (kind == FlashMask::KeyPad || kind == FlashMask::QK) {
    Dims inner = ms;
    std::vector<int> zero_axes = kind == FlashMask::KeyPad ? std::vector<int>{1, 2} : std::vector<int>{0, 1};
    for (int a : zero_axes) inner[a] = 1;
    L = contiguous(inner);
    L.shape = ms;
    for (int a : zero_axes) L.strides[a] = 0;
    L.name = "broadcast";
  }
  HostTensor m(DType::F32, L);
  const std::vector<double> sv = random_values(DType::F32, std::max<int64_t>(L.storage, 1), rng, -2.0, 2.0);
  for (int64_t s = 0; s < L.storage; ++s) m.buf.set(s, sv[static_cast<size_t>(s)]);
  const int64_t B = ms[0], Q = ms[2], K = ms[3];
  for (int64_t idx = 0; idx < L.numel(); ++idx) {
    const int64_t j = idx % K, i = (idx / K) % Q, b = idx / (K * Q * ms[1]);
    bool neg = false;
    if (kind == FlashMask::KeyPad) {
      // Sequence b keeps its first K - pad_b keys; the last batch entry (when
      // B >= 3) has none: all its rows are fully masked.
      const int64_t pad = (b * 5) % std::max<int64_t>(K / 2, 1);
      neg = j >= K - pad || (B >= 3 && b == B - 1);
    } else if (kind == FlashMask::QK) {
      neg = (i * 3 + j * 5) % 13 == 0 || i == Q / 2;  // row Q/2 fully masked in every (b, h)
    } else if (kind == FlashMask::NegInf) {
      neg = i % 7 == 3 || (idx * 2654435761ull) % 11 == 0;
    }
    if (neg) m.buf.set(L.offset_of(idx), -kInf);
  }
  return m;
}

// Device copies of a flash problem's inputs (q, k, v always; the mask, the
// ALiBi slopes and the varlen offsets when the descriptor uses them) and the
// views over them.
struct DeviceFlashInputs {
  Buffer q, k, v, mask, alibi, cu_q, cu_kv;
  TensorRef q_ref, k_ref, v_ref, mask_ref, alibi_ref, cu_q_ref, cu_kv_ref;

  DeviceFlashInputs(const FlashSdpaDescriptor& d, const FlashInputs& in)
      : q(to_device(in.q.buf, kFlashMinBytes)), k(to_device(in.k.buf, kFlashMinBytes)), v(to_device(in.v.buf, kFlashMinBytes)) {
    q_ref = view(q, d.dtype, in.q.L);
    k_ref = view(k, d.dtype, in.k.L);
    v_ref = view(v, d.dtype, in.v.L);
    if (d.has_mask) {
      mask = to_device(in.mask.buf, kFlashMinBytes);
      mask_ref = view(mask, DType::F32, in.mask.L);
    }
    if (d.alibi != AlibiMode::None) {
      alibi = to_device(in.alibi.buf, kFlashMinBytes);
      alibi_ref = view(alibi, DType::F32, in.alibi.L);
    }
    if (d.varlen) {
      cu_q = to_device(in.cu_q.buf, kFlashMinBytes);
      cu_kv = to_device(in.cu_kv.buf, kFlashMinBytes);
      cu_q_ref = view(cu_q, DType::I32, in.cu_q.L);
      cu_kv_ref = view(cu_kv, DType::I32, in.cu_kv.L);
    }
  }
  DeviceFlashInputs(const DeviceFlashInputs&) = delete;
  DeviceFlashInputs& operator=(const DeviceFlashInputs&) = delete;

  // Sets the input views of a FlashSdpaArgs or a FlashSdpaBackwardArgs.
  template <class Args>
  void bind(Args& a) const {
    a.q = q_ref;
    a.k = k_ref;
    a.v = v_ref;
    a.mask = mask_ref;
    a.alibi_slopes = alibi_ref;
    a.cu_seqlens_q = cu_q_ref;
    a.cu_seqlens_kv = cu_kv_ref;
  }
};

}  // namespace bt

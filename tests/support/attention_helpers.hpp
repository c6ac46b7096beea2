// Host-side helpers for attention tests: random contiguous tensors, and
// one-call wrappers that run the four attention plans on the CPU reference.
#pragma once

#include <cmath>
#include <vector>

#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::AlibiMode;
using baracuda::DiagonalAlign;
using baracuda::FlashSdpaArgs;
using baracuda::FlashSdpaBackwardArgs;
using baracuda::FlashSdpaBackwardPlan;
using baracuda::FlashSdpaDescriptor;
using baracuda::FlashSdpaPlan;
using baracuda::SdpaArgs;
using baracuda::SdpaBackwardArgs;
using baracuda::SdpaBackwardPlan;
using baracuda::SdpaDescriptor;
using baracuda::SdpaPlan;
using baracuda::Stream;
using baracuda::Workspace;

// A host tensor: storage + layout (contiguous unless built otherwise).
struct HostTensor {
  HostBuffer buf;
  Layout L;
  HostTensor() : buf(DType::F32, 0), L(contiguous(Dims{0})) {}
  HostTensor(DType t, const Layout& l) : buf(t, std::max<int64_t>(l.storage, 1)), L(l) {}
  TensorRef ref() const { return view(buf, L); }
  TensorMut mut() { return view_mut(buf, L); }
  std::vector<double> values() const { return gather(buf, L); }
  void set_values(const std::vector<double>& v) { scatter(buf, L, v); }
};

inline HostTensor random_tensor(DType t, const Dims& shape, Rng& rng, double lo = -1.0, double hi = 1.0) {
  HostTensor x(t, contiguous(shape));
  x.set_values(random_values(t, numel(shape), rng, lo, hi));
  return x;
}
inline HostTensor zeros_tensor(DType t, const Dims& shape) {
  HostTensor x(t, contiguous(shape));
  x.set_values(std::vector<double>(static_cast<size_t>(numel(shape)), 0.0));
  return x;
}
inline HostTensor poisoned_tensor(DType t, const Dims& shape) {
  HostTensor x(t, contiguous(shape));
  x.buf.poison();
  return x;
}
inline HostTensor i32_tensor(const std::vector<int64_t>& v) {
  HostTensor x(DType::I32, contiguous(Dims{static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) x.buf.set_i(static_cast<int64_t>(i), v[i]);
  return x;
}

// Expected shapes for a flash descriptor (dense [B,H,S,D] or varlen [T,H,D]).
inline Dims flash_q_shape(const FlashSdpaDescriptor& d) {
  return d.varlen ? Dims{d.total_q, d.heads, d.head_dim} : Dims{d.batch, d.heads, d.q_len, d.head_dim};
}
inline Dims flash_kv_shape(const FlashSdpaDescriptor& d) {
  return d.varlen ? Dims{d.total_kv, d.kv_heads, d.head_dim} : Dims{d.batch, d.kv_heads, d.kv_len, d.head_dim};
}
inline Dims flash_lse_shape(const FlashSdpaDescriptor& d) {
  return d.varlen ? Dims{d.heads, d.total_q} : Dims{d.batch, d.heads, d.q_len};
}

// Inputs of a flash problem (host).
struct FlashInputs {
  HostTensor q, k, v, mask, alibi, cu_q, cu_kv;
};

struct FlashOutputs {
  HostTensor y, lse;
};
struct FlashGrads {
  HostTensor dq, dk, dv;
};

inline FlashOutputs cpu_flash_forward(const FlashSdpaDescriptor& d, const FlashInputs& in) {
  auto plan = FlashSdpaPlan::select(Stream::cpu(), d).value();
  FlashOutputs o{poisoned_tensor(d.dtype, flash_q_shape(d)), poisoned_tensor(DType::F32, flash_lse_shape(d))};
  FlashSdpaArgs a;
  a.q = in.q.ref();
  a.k = in.k.ref();
  a.v = in.v.ref();
  if (d.has_mask) a.mask = in.mask.ref();
  if (d.alibi != AlibiMode::None) a.alibi_slopes = in.alibi.ref();
  if (d.varlen) {
    a.cu_seqlens_q = in.cu_q.ref();
    a.cu_seqlens_kv = in.cu_kv.ref();
  }
  a.y = o.y.mut();
  a.lse = o.lse.mut();
  const auto st = plan.run(Stream::cpu(), Workspace{}, a);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return o;
}

inline FlashGrads cpu_flash_backward(const FlashSdpaDescriptor& d, const FlashInputs& in, const FlashOutputs& fw,
                                     const HostTensor& dy) {
  auto plan = FlashSdpaBackwardPlan::select(Stream::cpu(), d).value();
  FlashGrads g{poisoned_tensor(d.dtype, flash_q_shape(d)), poisoned_tensor(d.dtype, flash_kv_shape(d)),
               poisoned_tensor(d.dtype, flash_kv_shape(d))};
  FlashSdpaBackwardArgs a;
  a.dy = dy.ref();
  a.q = in.q.ref();
  a.k = in.k.ref();
  a.v = in.v.ref();
  a.y = fw.y.ref();
  a.lse = fw.lse.ref();
  if (d.has_mask) a.mask = in.mask.ref();
  if (d.alibi != AlibiMode::None) a.alibi_slopes = in.alibi.ref();
  if (d.varlen) {
    a.cu_seqlens_q = in.cu_q.ref();
    a.cu_seqlens_kv = in.cu_kv.ref();
  }
  a.dq = g.dq.mut();
  a.dk = g.dk.mut();
  a.dv = g.dv.mut();
  const auto st = plan.run(Stream::cpu(), Workspace{}, a);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return g;
}

// Random ALiBi slopes in (0.05, 1) for d.alibi ([H] or [B,H]); left empty
// (no draw from rng) when d.alibi == None.
inline void set_random_alibi(const FlashSdpaDescriptor& d, Rng& rng, FlashInputs* in) {
  if (d.alibi == AlibiMode::PerHead) in->alibi = random_tensor(DType::F32, Dims{d.heads}, rng, 0.05, 1.0);
  if (d.alibi == AlibiMode::PerBatchHead) in->alibi = random_tensor(DType::F32, Dims{d.batch, d.heads}, rng, 0.05, 1.0);
}
// Varlen offsets (i32 [B+1], starting at 0) from the sequence lengths.
inline void set_cu_seqlens(const std::vector<int64_t>& q_lens, const std::vector<int64_t>& kv_lens, FlashInputs* in) {
  std::vector<int64_t> cq{0}, ck{0};
  for (size_t b = 0; b < q_lens.size(); ++b) {
    cq.push_back(cq.back() + q_lens[b]);
    ck.push_back(ck.back() + kv_lens[b]);
  }
  in->cu_q = i32_tensor(cq);
  in->cu_kv = i32_tensor(ck);
}

// Random inputs for `d` (mask [B or 1, H or 1, Q, K] broadcast when
// mask_broadcast, ALiBi slopes in (0, 1), varlen offsets from the lengths).
inline FlashInputs random_flash_inputs(const FlashSdpaDescriptor& d, Rng& rng, const std::vector<int64_t>& q_lens = {},
                                       const std::vector<int64_t>& kv_lens = {}) {
  FlashInputs in;
  in.q = random_tensor(d.dtype, flash_q_shape(d), rng);
  in.k = random_tensor(d.dtype, flash_kv_shape(d), rng);
  in.v = random_tensor(d.dtype, flash_kv_shape(d), rng);
  if (d.has_mask) in.mask = random_tensor(DType::F32, Dims{d.batch, d.heads, d.q_len, d.kv_len}, rng, -2.0, 2.0);
  set_random_alibi(d, rng, &in);
  if (d.varlen) set_cu_seqlens(q_lens, kv_lens, &in);
  return in;
}

}  // namespace bt

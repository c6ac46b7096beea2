// CPU reference of RandomPlan / DropoutPlan / DropoutBackwardPlan (reference.hpp).
#include "ops/random/reference.hpp"

#include <cstdint>
#include <type_traits>

#include "baracuda/core/half.hpp"
#include "core/host_elements.hpp"

namespace baracuda::random::ref {
namespace {

using cuda::FlatMap;

int64_t offset_of(const FlatMap& m, int64_t p) {
  int64_t o = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    o += (p % m.shape[d]) * m.stride[d];
    p /= m.shape[d];
  }
  return o;
}

// Host conversions (round to nearest even), the policy of transform.hpp.
template <class T>
struct HostCvt {
  static T from_f(float v) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
    else return T(v);
  }
  static T from_d(double v) { return static_cast<T>(v); }
  static T from_i(int64_t v) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
    else if constexpr (std::is_same_v<T, double>) return static_cast<double>(v);
    else return T(static_cast<float>(v));
  }
  static float to_f(T v) { return static_cast<float>(v); }
};

template <Gen G, class T>
void fill_typed(const cuda::FillLaunch& l, uint64_t offset) {
  constexpr int K = gen_k<G, T>();
  const int64_t blocks = (l.n + K - 1) / K;
  T* out = static_cast<T*>(l.out);
  baracuda::detail::parallel_for(blocks, 64, [&](int64_t b) {
    const PhiloxWords w = philox_block(l.seed, offset, static_cast<uint64_t>(b));
    double p[K] = {};
    if constexpr (G == Gen::BernoulliTensor)
      for (int j = 0; j < K && b * K + j < l.n; ++j)
        p[j] = baracuda::detail::load_f(l.p, l.p_dtype, offset_of(l.p_map, b * K + j));
    T v[K];
    gen_block<G, T, HostCvt<T>>(l.prm, w, p, v);
    for (int j = 0; j < K && b * K + j < l.n; ++j) out[offset_of(l.out_map, b * K + j)] = v[j];
  });
}

template <Gen G>
Status fill_gen(const cuda::FillLaunch& l, uint64_t offset) {
  switch (l.dtype) {
    case DType::F32: fill_typed<G, float>(l, offset); break;
    case DType::F64: fill_typed<G, double>(l, offset); break;
    case DType::F16: fill_typed<G, half>(l, offset); break;
    case DType::BF16: fill_typed<G, bfloat16>(l, offset); break;
    case DType::I32:
      if constexpr (G == Gen::RandInt32 || G == Gen::RandInt64) fill_typed<G, int32_t>(l, offset);
      break;
    case DType::I64:
      if constexpr (G == Gen::RandInt32 || G == Gen::RandInt64) fill_typed<G, int64_t>(l, offset);
      break;
    default: return Status(StatusCode::Unsupported, "RandomPlan: dtype not supported");
  }
  return Status::ok();
}

template <class T>
void dropout_typed(const cuda::DropoutLaunch& l, uint64_t offset) {
  const int64_t chunks = (l.n + 7) / 8;
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  baracuda::detail::parallel_for(chunks, 64, [&](int64_t c) {
    uint32_t m;
    if (l.mask_in) m = static_cast<const uint8_t*>(l.mask_in)[c * l.mask_stride];
    else m = dropout_bits8(l.seed, offset, static_cast<uint64_t>(c), l.keep_thr);
    if (l.zero) m = 0;
    for (int j = 0; j < 8; ++j) {
      const int64_t i = c * 8 + j;
      if (i >= l.n) {
        m &= ~(1u << j);
        continue;
      }
      const bool keep = (m >> j) & 1u;
      T v;
      if constexpr (std::is_same_v<T, double>) {
        v = keep ? baracuda::exact::mul(x[offset_of(l.x_map, i)], l.scale) : 0.0;
      } else {
        v = keep ? T(baracuda::exact::mul(static_cast<float>(x[offset_of(l.x_map, i)]), l.scale_f)) : T(0.0f);
      }
      out[offset_of(l.out_map, i)] = v;
    }
    if (l.mask_out) static_cast<uint8_t*>(l.mask_out)[c * l.mask_stride] = static_cast<uint8_t>(m);
  });
}

uint64_t effective_offset(uint64_t base, const int64_t* ptr, int64_t bias) {
  return ptr ? base + static_cast<uint64_t>(*ptr) + static_cast<uint64_t>(bias) : base;
}

}  // namespace

Status fill(const cuda::FillLaunch& l) {
  const uint64_t offset = effective_offset(l.offset, l.offset_ptr, 0);
  Status s = Status::ok();
  if (l.n > 0) {
    switch (l.gen) {
      case Gen::Uniform: s = fill_gen<Gen::Uniform>(l, offset); break;
      case Gen::Normal: s = fill_gen<Gen::Normal>(l, offset); break;
      case Gen::TruncNormal: s = fill_gen<Gen::TruncNormal>(l, offset); break;
      case Gen::Bernoulli: s = fill_gen<Gen::Bernoulli>(l, offset); break;
      case Gen::BernoulliTensor: s = fill_gen<Gen::BernoulliTensor>(l, offset); break;
      case Gen::RandInt32: s = fill_gen<Gen::RandInt32>(l, offset); break;
      case Gen::RandInt64: s = fill_gen<Gen::RandInt64>(l, offset); break;
    }
  }
  if (s.is_ok() && l.offset_ptr) *l.offset_ptr = static_cast<int64_t>(static_cast<uint64_t>(*l.offset_ptr) + 1u);
  return s;
}

Status dropout(const cuda::DropoutLaunch& l) {
  const uint64_t offset = effective_offset(l.offset, l.offset_ptr, l.offset_bias);
  if (l.n > 0) {
    switch (l.dtype) {
      case DType::F32: dropout_typed<float>(l, offset); break;
      case DType::F64: dropout_typed<double>(l, offset); break;
      case DType::F16: dropout_typed<half>(l, offset); break;
      case DType::BF16: dropout_typed<bfloat16>(l, offset); break;
      default: return Status(StatusCode::Unsupported, "DropoutPlan: dtype not supported");
    }
  }
  if (l.increment && l.offset_ptr) *l.offset_ptr = static_cast<int64_t>(static_cast<uint64_t>(*l.offset_ptr) + 1u);
  return Status::ok();
}

}  // namespace baracuda::random::ref

// CPU reference of FactoryPlan: an odometer over the output's layout writing
// element i's value (factory_math.hpp, the same arithmetic as the CUDA
// kernel, so the two agree bit for bit).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "baracuda/core/host_types.hpp"
#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "core/int_math.hpp"
#include "ops/elementwise/factory_launch.hpp"
#include "ops/elementwise/factory_math.hpp"

namespace baracuda::elementwise::factory::ref {
namespace {

using baracuda::detail::EwLayout;

struct RoundHalf {
  static float round(float v) { return static_cast<float>(half(v)); }
};
struct RoundBf16 {
  static float round(float v) { return static_cast<float>(bfloat16(v)); }
};

// fn(i, offset) for every element of the layout, in chunks on a few threads.
template <class Fn>
void for_each_element(const EwLayout& L, Fn fn) {
  constexpr int64_t kChunk = 4096;
  baracuda::detail::parallel_for(baracuda::detail::ceil_div(L.numel, kChunk), kChunk, [&](int64_t chunk) {
    const int64_t begin = chunk * kChunk, end = std::min(L.numel, begin + kChunk);
    int64_t idx[kMaxRank] = {};
    int64_t off = 0, rem = begin;
    for (int d = L.rank - 1; d >= 0; --d) {
      idx[d] = rem % L.shape[d];
      rem /= L.shape[d];
      off += idx[d] * L.stride[0][d];
    }
    for (int64_t i = begin; i < end; ++i) {
      fn(i, off);
      for (int d = L.rank - 1; d >= 0; --d) {
        off += L.stride[0][d];
        if (++idx[d] < L.shape[d]) break;
        off -= L.stride[0][d] * L.shape[d];
        idx[d] = 0;
      }
    }
  });
}

// Element i's value in the output type T.
template <class T>
T value(const Resolved& r, const Gen& g, int64_t i) {
  if (r.kind == kArange) {
    if constexpr (std::is_same_v<T, double>) return arange_f64(g, i);
    else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
      return T(arange_f32(g, i));
    else return static_cast<T>(arange_i64(g, i));  // wraps to the width
  }
  if constexpr (std::is_same_v<T, double>) return linspace_f64(g, i);
  else if constexpr (std::is_same_v<T, float>) return linspace_f32(g, i);
  else if constexpr (std::is_same_v<T, half>) return T(linspace_16<RoundHalf>(g, i));
  else if constexpr (std::is_same_v<T, bfloat16>) return T(linspace_16<RoundBf16>(g, i));
  else return saturate_to<T>(linspace_f32(g, i));
}

template <class T>
void generate(const Resolved& r, const EwLayout& L, void* out) {
  T* base = static_cast<T*>(out);
  const Gen g = gen_of(r);
  for_each_element(L, [&](int64_t i, int64_t off) { base[off] = value<T>(r, g, i); });
}

template <class Bits>
void constant(const Resolved& r, const EwLayout& L, void* out) {
  Bits v;
  std::memcpy(&v, &r.bits, sizeof(Bits));  // little-endian: the low bytes
  Bits* base = static_cast<Bits*>(out);
  for_each_element(L, [&](int64_t, int64_t off) { base[off] = v; });
}

}  // namespace

Status run(const Resolved& r, const EwLayout& L, void* out) {
  if (L.numel == 0) return Status::ok();
  if (r.kind == kConstant) {
    switch (dtype_size(r.out)) {
      case 1: constant<uint8_t>(r, L, out); break;
      case 2: constant<uint16_t>(r, L, out); break;
      case 4: constant<uint32_t>(r, L, out); break;
      default: constant<uint64_t>(r, L, out); break;
    }
    return Status::ok();
  }
  switch (r.out) {
    case DType::F64: generate<double>(r, L, out); break;
    case DType::F32: generate<float>(r, L, out); break;
    case DType::F16: generate<half>(r, L, out); break;
    case DType::BF16: generate<bfloat16>(r, L, out); break;
    case DType::I8: generate<int8_t>(r, L, out); break;
    case DType::U8: generate<uint8_t>(r, L, out); break;
    case DType::I16: generate<int16_t>(r, L, out); break;
    case DType::I32: generate<int32_t>(r, L, out); break;
    case DType::I64: generate<int64_t>(r, L, out); break;
    default: return baracuda::detail::invalid("FactoryPlan", "the reference has no ", r.out, " generator");
  }
  return Status::ok();
}

}  // namespace baracuda::elementwise::factory::ref

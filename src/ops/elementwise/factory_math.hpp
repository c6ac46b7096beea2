// The value of element i of the factories (FactoryPlan), host and device:
// the CPU reference (factory_reference.cpp) and the CUDA kernel
// (cuda/factory.cu) compute every value with these functions, in the same
// types, so their results are bit-identical. Which arithmetic is PyTorch's is
// documented in include/baracuda/ops/elementwise.hpp (FactoryPlan).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "baracuda/ops/elementwise.hpp"
#include "core/host_device.hpp"

namespace baracuda::elementwise::factory {

enum Kind : uint8_t { kConstant = 0, kArange = 1, kLinspace = 2 };

// The per-call values of one plan, passed to the kernel by value.
struct Gen {
  double start = 0, step = 0, end = 0;
  int64_t start_i = 0, step_i = 0;
  int64_t steps = 0, halfway = 0;
};

inline Gen gen_of(const baracuda::detail::FactoryResolved& r) {
  Gen g;
  g.start = r.start;
  g.step = r.step;
  g.end = r.end;
  g.start_i = r.start_i;
  g.step_i = r.step_i;
  g.steps = r.steps;
  g.halfway = r.halfway;
  return g;
}

// arange in PyTorch's CUDA accumulate types. nvcc contracts PyTorch's
// `start + step * i` into one fma (its default -fmad=true): so do we, explicitly.
BARACUDA_HOST_DEVICE inline float arange_f32(const Gen& g, int64_t i) {
  return fmaf(static_cast<float>(g.step), static_cast<float>(i), static_cast<float>(g.start));
}
BARACUDA_HOST_DEVICE inline double arange_f64(const Gen& g, int64_t i) {
  return fma(g.step, static_cast<double>(i), g.start);
}
// Integers: two's-complement wrap where int64 overflows (unsigned arithmetic, no UB).
BARACUDA_HOST_DEVICE inline int64_t arange_i64(const Gen& g, int64_t i) {
  return static_cast<int64_t>(static_cast<uint64_t>(g.start_i) + static_cast<uint64_t>(g.step_i) * static_cast<uint64_t>(i));
}

// linspace in T (float for f32 and integer outputs, double for f64): the
// first half from start, the second from end, one fma each.
BARACUDA_HOST_DEVICE inline float linspace_f32(const Gen& g, int64_t i) {
  const float step = static_cast<float>(g.step);
  if (i < g.halfway) return fmaf(step, static_cast<float>(i), static_cast<float>(g.start));
  return fmaf(-step, static_cast<float>(g.steps - i - 1), static_cast<float>(g.end));
}
BARACUDA_HOST_DEVICE inline double linspace_f64(const Gen& g, int64_t i) {
  if (i < g.halfway) return fma(g.step, static_cast<double>(i), g.start);
  return fma(-g.step, static_cast<double>(g.steps - i - 1), g.end);
}
// f16 / bf16: PyTorch's c10::Half / BFloat16 arithmetic, each operation
// computed in f32 and rounded to the 16-bit type (R::round: f32 -> 16-bit ->
// f32, round to nearest even); the index is converted to the 16-bit type too.
template <class R>
BARACUDA_HOST_DEVICE inline float linspace_16(const Gen& g, int64_t i) {
  const float step = static_cast<float>(g.step);
  if (i < g.halfway) {
    const float inc = R::round(step * R::round(static_cast<float>(i)));
    return R::round(static_cast<float>(g.start) + inc);
  }
  const float dec = R::round(step * R::round(static_cast<float>(g.steps - i - 1)));
  return R::round(static_cast<float>(g.end) - dec);
}

// An f32 value into an integer type: truncated toward zero, saturated at the
// type's range (what CUDA's float -> integer conversion does), NaN 0.
template <class T>
BARACUDA_HOST_DEVICE inline T saturate_to(float v) {
  constexpr T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  const double d = static_cast<double>(v);
  if (!(d == d)) return T(0);
  if (d >= static_cast<double>(hi)) return hi;
  if (d <= static_cast<double>(lo)) return lo;
  return static_cast<T>(static_cast<int64_t>(d));
}

}  // namespace baracuda::elementwise::factory

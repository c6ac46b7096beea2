// Warp-level combination of arbitrary trivially-copyable states (a float, a
// Welford triple, a value + index pair) in a FIXED tree order, so the result
// never depends on timing: lane 0 of each group ends with
//   combine(...combine(combine(s0, s_{w/2}), ...)...)
// in the same order on every run.
#pragma once
#include <cstdint>
#include <type_traits>

namespace baracuda::dev {

// __shfl_down_sync of any trivially-copyable T, one 32-bit word at a time.
template <class T>
__device__ __forceinline__ T shfl_down_any(const T& v, unsigned delta, int width) {
  static_assert(std::is_trivially_copyable_v<T>, "shfl_down_any needs a trivially copyable type");
  constexpr int kWords = static_cast<int>((sizeof(T) + 3) / 4);
  uint32_t w[kWords];
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], delta, width);
  T r;
  __builtin_memcpy(&r, w, sizeof(T));
  return r;
}

// Tree-combines v across each aligned group of `width` lanes (a power of two,
// 1..32). Every lane of the warp must call it (full-mask shuffles); only the
// group's first lane holds the full result. `combine(a, b)` receives the lower
// lanes' partial first.
template <class T, class Combine>
__device__ __forceinline__ T warp_reduce(T v, int width, Combine combine) {
#pragma unroll
  for (int delta = 16; delta >= 1; delta >>= 1) {
    if (delta < width) v = combine(v, shfl_down_any(v, static_cast<unsigned>(delta), width));
  }
  return v;
}

}  // namespace baracuda::dev

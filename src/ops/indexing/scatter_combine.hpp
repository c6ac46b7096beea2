// How ScatterPlan combines one contribution into a destination's accumulator:
// the one definition the CPU reference and the CUDA kernels both compile, so
// the two backends agree bit for bit. `reduce` is a ScatterReduce value.
#pragma once
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define BARACUDA_SCATTER_HD __host__ __device__ __forceinline__
#else
#define BARACUDA_SCATTER_HD inline
#endif

namespace baracuda::indexing::detail {

inline constexpr int kReduceNone = 0, kReduceSum = 1, kReduceProd = 2, kReduceMean = 3, kReduceAmax = 4,
                     kReduceAmin = 5;

// a: the accumulator so far, v: the next contribution (in position order).
// None keeps the last one; amax / amin keep a NaN once one was met (x != x).
// Integers (Acc = int64_t): sum and product wrap modulo 2^64 (unsigned
// arithmetic, no undefined overflow); stored to a narrower dtype they wrap
// again, which equals wrapping at every step in that dtype (torch's integer
// arithmetic), since both are arithmetic modulo 2^bits.
template <class Acc>
BARACUDA_SCATTER_HD Acc scatter_combine(int reduce, Acc a, Acc v) {
  if constexpr (std::is_integral_v<Acc>) {
    using U = unsigned long long;
    switch (reduce) {
      case kReduceSum:
      case kReduceMean: return static_cast<Acc>(static_cast<U>(a) + static_cast<U>(v));
      case kReduceProd: return static_cast<Acc>(static_cast<U>(a) * static_cast<U>(v));
      case kReduceAmax: return v > a ? v : a;
      case kReduceAmin: return v < a ? v : a;
      default: return v;
    }
  } else {
    switch (reduce) {
      case kReduceSum:
      case kReduceMean: return a + v;
      case kReduceProd: return a * v;
      case kReduceAmax: return (a != a) ? a : ((v != v || v > a) ? v : a);
      case kReduceAmin: return (a != a) ? a : ((v != v || v < a) ? v : a);
      default: return v;
    }
  }
}

// The stored result of `count` combined values (include_self counts self).
template <class Acc>
BARACUDA_SCATTER_HD Acc scatter_finish(int reduce, Acc a, long long count) {
  return reduce == kReduceMean ? a / static_cast<Acc>(count) : a;
}

// Integer mean (torch 2.5.1): the sum wrapped to the dtype (`wrapped`, the
// accumulator cast to the dtype and back), then divided by count rounding
// toward minus infinity (torch's div_(count, rounding_mode="floor")).
BARACUDA_SCATTER_HD int64_t scatter_floor_div(int64_t wrapped, long long count) {
  int64_t q = wrapped / count;
  if (wrapped % count != 0 && wrapped < 0) --q;
  return q;
}

// The stored integer result; T is the storage type (int8_t .. int64_t, uint8_t).
template <class T>
BARACUDA_SCATTER_HD int64_t scatter_finish_int(int reduce, int64_t a, long long count) {
  const int64_t wrapped = static_cast<int64_t>(static_cast<T>(a));
  return reduce == kReduceMean ? scatter_floor_div(wrapped, count) : wrapped;
}

}  // namespace baracuda::indexing::detail

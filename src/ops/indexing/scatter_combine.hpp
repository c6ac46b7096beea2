// How ScatterPlan combines one contribution into a destination's accumulator:
// the one definition the CPU reference and the CUDA kernels both compile, so
// the two backends agree bit for bit. `reduce` is a ScatterReduce value.
#pragma once

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
template <class Acc>
BARACUDA_SCATTER_HD Acc scatter_combine(int reduce, Acc a, Acc v) {
  switch (reduce) {
    case kReduceSum:
    case kReduceMean: return a + v;
    case kReduceProd: return a * v;
    case kReduceAmax: return (a != a) ? a : ((v != v || v > a) ? v : a);
    case kReduceAmin: return (a != a) ? a : ((v != v || v < a) ? v : a);
    default: return v;
  }
}

// The stored result of `count` combined values (include_self counts self).
template <class Acc>
BARACUDA_SCATTER_HD Acc scatter_finish(int reduce, Acc a, long long count) {
  return reduce == kReduceMean ? a / static_cast<Acc>(count) : a;
}

}  // namespace baracuda::indexing::detail

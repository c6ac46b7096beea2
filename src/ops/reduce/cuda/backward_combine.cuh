// Reduction backward: the combine pass of the multi-pass paths. One warp per
// slice folds its S partials in a fixed order: the slice mean (Var/Std),
// dy / tie count (Max/Min), or the products of the other tiles (Prod).
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_block_reduce.cuh"
#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

template <class T>
struct CombineParams {
  using A = acc_t<T>;
  const void* part;  // [M][S]
  A* aux;            // TK_MEAN: in shift, out mean; TK_TIE: out dy / count; TK_PROD: out [M][S]
  int64_t M, S;
  A n;
  // kept geometry, for dy (TK_TIE)
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  const T* dy;
};

template <int TK, class T>
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const CombineParams<T> p) {
  using A = acc_t<T>;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (kCombineThreads / 32) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (o >= p.M) return;  // whole warps leave together
  if constexpr (TK == TK_MEAN || TK == TK_TIE) {
    using P = std::conditional_t<TK == TK_TIE, long long, A>;
    const P* part = static_cast<const P*>(p.part) + o * p.S;
    P t = P(0);
    for (int64_t k = lane; k < p.S; k += 32) t += part[k];
    t = warp_sum_down(t);
    if (lane == 0) {
      if constexpr (TK == TK_MEAN) {
        p.aux[o] = p.aux[o] + t / p.n;
      } else {
        // The apply pass then needs no division per element.
        int64_t ko[kKeptOperands];
        kept_offsets(p, o, ko);
        p.aux[o] = ld_acc(p.dy + ko[kKdy]) / static_cast<A>(t);
      }
    }
  } else {
    // others[s] = prod_{t < s} part[t] * prod_{t > s} part[t]. Lane l owns a
    // contiguous run of tiles; a warp scan joins the runs.
    const A* part = static_cast<const A*>(p.part) + o * p.S;
    A* out = p.aux + o * p.S;
    const int64_t run = (p.S + 31) / 32;
    const int64_t b = std::min<int64_t>(p.S, lane * run), e = std::min<int64_t>(p.S, b + run);
    A prod = A(1);
    for (int64_t k = b; k < e; ++k) prod = prod * part[k];
    A pre, suf;
    warp_exclusive_products(prod, lane, pre, suf);
    for (int64_t k = e - 1; k >= b; --k) {
      out[k] = suf;
      suf = part[k] * suf;
    }
    for (int64_t k = b; k < e; ++k) {
      out[k] = pre * out[k];
      pre = pre * part[k];
    }
  }
}

// Folds part[M][S] into aux (see CombineParams); n: elements per slice.
template <int TK, class T>
Status launch_combine(const Problem& pb, const void* part, acc_t<T>* aux, int64_t S, acc_t<T> n) {
  CombineParams<T> cp{};
  cp.part = part;
  cp.aux = aux;
  cp.M = pb.M;
  cp.S = S;
  cp.n = n;
  cp.nk = pb.nk;
  for (int d = 0; d < kMaxRank; ++d) {
    cp.ksize[d] = pb.ksize[d];
    for (int k = 0; k < kKeptOperands; ++k) cp.kst[k][d] = pb.kst[k][d];
  }
  cp.dy = static_cast<const T*>(pb.dy);
  const int64_t blocks = ceil_div(cp.M, kCombineThreads / 32);
  if (blocks > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: too many outputs");
  combine_kernel<TK, T><<<static_cast<unsigned>(blocks), kCombineThreads, 0, pb.stream>>>(cp);
  return check_launch("ReduceBackwardPlan: combine kernel");
}

}  // namespace baracuda::reduce::cuda::bw

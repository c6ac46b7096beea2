// Reduction backward: fixed-order reductions and scans across the threads of
// a slice (a warp, or the TY threads of each of a block's TX slices). Every
// order is fixed by the launch geometry, so the results are reproducible.
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

// Fixed-order warp sum: lane 0 ends with the sum of all 32 lanes.
template <class P>
__device__ __forceinline__ P warp_sum_down(P v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}

// Sum of one value per thread over the TY threads of each slice, in a fixed
// order; every thread gets its slice's total. sm: 2 * kTileMaxThreads slots
// (row order with TY >= 32 uses only the first TX * TY / 32).
template <class P>
__device__ __forceinline__ P block_sum(P v, int tx, int ty, const TileCfg& c, P* sm) {
  if (c.row && c.TY >= 32) {
    // Every warp lies inside one slice: shuffle tree, then the warp totals in order.
    v = warp_sum_down(v);
    const int nw = c.TY >> 5, w = ty >> 5;
    if ((threadIdx.x & 31) == 0) sm[tx * nw + w] = v;
    __syncthreads();
    P t = P(0);
    for (int k = 0; k < nw; ++k) t += sm[tx * nw + k];
    return t;
  }
  sm[ty * c.TX + tx] = v;
  __syncthreads();
  if (ty == 0) {
    P t = P(0);
    for (int k = 0; k < c.TY; ++k) t += sm[k * c.TX + tx];
    sm[kTileMaxThreads + tx] = t;
  }
  __syncthreads();
  return sm[kTileMaxThreads + tx];
}

// Exclusive prefix / suffix products of one value per lane across a full
// warp, in a fixed order: pre = v_0 * ... * v_{lane-1}, suf = v_{lane+1} *
// ... * v_31 (1 at the ends). Returns the inclusive prefix (lane 31: the
// warp's product).
template <class A>
__device__ __forceinline__ A warp_exclusive_products(A v, int lane, A& pre, A& suf) {
  A ip = v, is = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const A a = __shfl_up_sync(0xffffffffu, ip, d);
    const A b = __shfl_down_sync(0xffffffffu, is, d);
    if (lane >= d) ip = a * ip;
    if (lane + d < 32) is = is * b;
  }
  pre = __shfl_up_sync(0xffffffffu, ip, 1);
  suf = __shfl_down_sync(0xffffffffu, is, 1);
  if (lane == 0) pre = A(1);
  if (lane == 31) suf = A(1);
  return ip;
}

// Exclusive prefix / suffix products of one value per thread over the TY
// threads of each slice (fixed order). total: the product of all TY values,
// valid in the ty == 0 thread.
template <class A>
__device__ __forceinline__ void block_scan(A v, int tx, int ty, const TileCfg& c, A* sm, A& pre, A& suf, A& total) {
  if (c.row && c.TY >= 32) {
    const int lane = threadIdx.x & 31;
    A wp, ws;
    const A ip = warp_exclusive_products(v, lane, wp, ws);
    const int nw = c.TY >> 5, w = ty >> 5;
    if (lane == 31) sm[tx * nw + w] = ip;  // the warp's product
    __syncthreads();
    A bp = A(1), bs = A(1);
    for (int k = 0; k < w; ++k) bp = bp * sm[tx * nw + k];
    for (int k = nw - 1; k > w; --k) bs = sm[tx * nw + k] * bs;
    pre = bp * wp;
    suf = ws * bs;
    total = A(1);
    if (ty == 0)
      for (int k = 0; k < nw; ++k) total = total * sm[tx * nw + k];
    return;
  }
  sm[ty * c.TX + tx] = v;
  __syncthreads();
  A bp = A(1), bs = A(1);
  for (int k = 0; k < ty; ++k) bp = bp * sm[k * c.TX + tx];
  for (int k = c.TY - 1; k > ty; --k) bs = sm[k * c.TX + tx] * bs;
  pre = bp;
  suf = bs;
  total = ty == 0 ? v * bs : A(1);
}

}  // namespace baracuda::reduce::cuda::bw

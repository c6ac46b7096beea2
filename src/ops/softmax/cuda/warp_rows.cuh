// Path "warp": one warp per row of up to 32 * kE elements, the row held in
// registers (kE values per lane), so x is read once and y written once.
// Lane l holds vectors (i * 32 + l) of W elements (W = 16 bytes of T on the
// vector path, 1 otherwise), i < kE / W: consecutive lanes touch consecutive
// memory. The valid values of a lane are a prefix of its registers (on the
// vector path len is a multiple of W), so fold_registers' n_valid applies.
#pragma once
#include "ops/softmax/cuda/softmax_common.cuh"

namespace baracuda::softmax::cuda::kern {

constexpr int kWarpBlockThreads = 256;

template <class T, int kE, int W, bool kBackward>
__device__ __forceinline__ void warp_row(const Params& p, int64_t row, int lane) {
  using Acc = dev::acc_t<T>;
  constexpr int kN = kE / W;  // vectors per lane
  const int64_t nv = p.len / W;
  const int valid_vecs = lane < nv ? static_cast<int>((nv - lane + 31) / 32) : 0;
  const T* a = static_cast<const T*>(p.in0) + row * p.row_stride[1];
  T* o = static_cast<T*>(p.out) + row * p.row_stride[0];
  Acc v[kE];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    Acc part[W];
    if (i < valid_vecs) {
      load_elems<T, W>(a + (static_cast<int64_t>(i) * 32 + lane) * W, part);
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) part[w] = Acc(0);
    }
#pragma unroll
    for (int w = 0; w < W; ++w) v[i * W + w] = part[w];
  }
  if constexpr (!kBackward) {
    const Acc scale = static_cast<Acc>(p.scale);
#pragma unroll
    for (int e = 0; e < kE; ++e) v[e] *= scale;
    const auto st = dev::warp_row_reduce<MaxSumExpOp<Acc>>(v, valid_vecs * W);
    const ForwardRow<Acc> f = ForwardRow<Acc>::make(st, p.log != 0);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      if (i < valid_vecs) {
        Acc part[W];
#pragma unroll
        for (int w = 0; w < W; ++w) part[w] = f.template out<(sizeof(T) == 2)>(v[i * W + w]);
        store_elems<T, W>(o + (static_cast<int64_t>(i) * 32 + lane) * W, part);
      }
    }
  } else {
    const T* g = static_cast<const T*>(p.in1) + row * p.row_stride[2];
    const bool log = p.log != 0;
    Acc dy[kE];
    Acc term[kE];
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      Acc part[W];
      if (i < valid_vecs) {
        load_elems<T, W>(g + (static_cast<int64_t>(i) * 32 + lane) * W, part);
      } else {
#pragma unroll
        for (int w = 0; w < W; ++w) part[w] = Acc(0);
      }
#pragma unroll
      for (int w = 0; w < W; ++w) {
        dy[i * W + w] = part[w];
        term[i * W + w] = backward_term(log, v[i * W + w], part[w]);
      }
    }
    const Acc sum = dev::warp_row_reduce<SumOp<Acc>>(term, valid_vecs * W);
    const Acc scale = static_cast<Acc>(p.scale);
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      if (i < valid_vecs) {
        Acc part[W];
#pragma unroll
        for (int w = 0; w < W; ++w) part[w] = backward_out(log, scale, sum, v[i * W + w], dy[i * W + w]);
        store_elems<T, W>(o + (static_cast<int64_t>(i) * 32 + lane) * W, part);
      }
    }
  }
}

template <class T, int kE, bool kBackward>
__global__ void __launch_bounds__(kWarpBlockThreads) warp_rows_kernel(Params p) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kWarpBlockThreads / 32);
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarpBlockThreads / 32) + (threadIdx.x >> 5); row < p.rows;
       row += warps) {
    if constexpr (kE % kV == 0) {
      if (p.vec) {
        warp_row<T, kE, kV, kBackward>(p, row, lane);
        continue;
      }
    }
    warp_row<T, kE, 1, kBackward>(p, row, lane);
  }
}

template <class T, int kE, bool kBackward>
Status launch_warp(const Params& p, int sm_count, cudaStream_t stream, const char* what) {
  const int64_t rows_per_block = kWarpBlockThreads / 32;
  const int64_t grid = std::min<int64_t>((p.rows + rows_per_block - 1) / rows_per_block, int64_t{std::max(sm_count, 1)} * 32);
  warp_rows_kernel<T, kE, kBackward><<<static_cast<unsigned>(grid), kWarpBlockThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::softmax::cuda::kern

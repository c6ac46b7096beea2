// Reduction backward: a block per contiguous slice of 4-96 KiB through shared
// memory. cp.async copies the slice into shared memory, the block reduces it
// (tie count, shifted sum, or prefix / suffix products) and writes dx from
// shared memory: x is read from DRAM once, and several slices per SM are in
// flight. row_smem_fits() (backward_planner.cuh) decides when it applies.
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_block_reduce.cuh"
#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_formulas.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

template <class T>
struct RowParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int64_t M;
  int nchunks;  // 16-byte chunks per slice (L * sizeof(T) / 16)
  const T* x;
  T* dx;
  const T* dy;
  const T* y;
  int has_y;
  EwArgs<acc_t<T>> args;
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

template <int TK, class T>
__global__ void __launch_bounds__(kRowMaxThreads) row_smem_kernel(const RowParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  extern __shared__ uint4 sx[];  // the slice, nchunks * 16 bytes
  __shared__ P sm[kRowMaxThreads / 32];

  const int tid = threadIdx.x, nt = blockDim.x;
  TileCfg c;  // one slice per block: TX = 1, TY = blockDim (a multiple of 32)
  c.TY = nt;
  c.row = 1;
  int64_t ko[kKeptOperands];
  kept_offsets(p, static_cast<int64_t>(blockIdx.x), ko);
  const T* xr = p.x + ko[kKx];
  T* dr = p.dx + ko[kKdx];
  for (int ch = tid; ch < p.nchunks; ch += nt) cp_async16(&sx[ch], xr + static_cast<int64_t>(ch) * V);
  cp_async_wait_all();
  __syncthreads();

  auto chunk = [&](int ch, A (&v)[V]) {
    T tmp[V];
    const uint4 u = sx[ch];
    __builtin_memcpy(tmp, &u, 16);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = dev::to_acc<A>(tmp[i]);
  };
  auto put = [&](int ch, const A (&v)[V]) {
    Vec<T, V> w;
#pragma unroll
    for (int i = 0; i < V; ++i) w.v[i] = dev::from_acc<T>(v[i]);
    store_cs(reinterpret_cast<Vec<T, V>*>(dr + static_cast<int64_t>(ch) * V), w);
  };
  const A dyv = ld_acc(p.dy + ko[kKdy]);
  const A yv = p.has_y ? ld_acc(p.y + ko[kKy]) : A(0);

  if constexpr (TK == TK_MEAN || TK == TK_TIE) {
    A shift = A(0);
    P part = P(0);
    if constexpr (TK == TK_MEAN) {
      T first;
      __builtin_memcpy(&first, &sx[0], sizeof(T));
      shift = dev::to_acc<A>(first);  // see tile_kernel: exact mean of a constant slice
      if (!isfinite(shift)) shift = A(0);
    }
    for (int ch = tid; ch < p.nchunks; ch += nt) {
      A v[V];
      chunk(ch, v);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int i = 0; i < V; ++i) part += v[i] - shift;
      } else {
        int cnt = 0;
#pragma unroll
        for (int i = 0; i < V; ++i) cnt += (v[i] == yv || (v[i] != v[i] && yv != yv)) ? 1 : 0;
        part += cnt;
      }
    }
    const P total = block_sum(part, 0, tid, c, sm);
    constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
    const A auxv = TK == TK_MEAN ? shift + static_cast<A>(total) / p.args.n : static_cast<A>(total);
    const A cf = ew_coef<OP>(dyv, yv, auxv, p.args);
    for (int ch = tid; ch < p.nchunks; ch += nt) {
      A v[V];
      chunk(ch, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = ew_elem<OP, T>(cf, v[i], yv, auxv);
      put(ch, v);
    }
  } else {
    // Prod. Scan order: thread, then its chunks (tid + k * nt), then the chunk's
    // elements. cp[k]: product of chunk k of this thread.
    A cp[kRowMaxChunks];
    A tot = A(1);
#pragma unroll
    for (int k = 0; k < kRowMaxChunks; ++k) {
      const int ch = tid + k * nt;
      cp[k] = A(1);
      if (ch < p.nchunks) {
        A v[V];
        chunk(ch, v);
#pragma unroll
        for (int i = 0; i < V; ++i) cp[k] = cp[k] * v[i];
      }
      tot = tot * cp[k];
    }
    A pre, suf, total;
    block_scan(tot, 0, tid, c, sm, pre, suf, total);
    const A outside = dyv * (pre * suf);
    A sc[kRowMaxChunks];  // product of this thread's chunks after k
    A run = A(1);
#pragma unroll
    for (int k = kRowMaxChunks - 1; k >= 0; --k) {
      sc[k] = run;
      run = run * cp[k];
    }
    A pc = A(1);  // product of this thread's chunks before k
#pragma unroll
    for (int k = 0; k < kRowMaxChunks; ++k) {
      const int ch = tid + k * nt;
      if (ch < p.nchunks) {
        A v[V], ls[V];
        chunk(ch, v);
        A r = A(1);
#pragma unroll
        for (int i = V - 1; i >= 0; --i) {
          ls[i] = r;
          r = r * v[i];
        }
        A lp = pc;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const A xi = v[i];
          v[i] = outside * (lp * (ls[i] * sc[k]));
          lp = lp * xi;
        }
        put(ch, v);
      }
      pc = pc * cp[k];
    }
  }
}

// Launches the row kernel for a problem row_smem_fits() accepted.
template <int TK, class T>
Status launch_row_smem(const Problem& pb, const EwArgs<acc_t<T>>& args) {
  const size_t bytes = static_cast<size_t>(pb.L) * sizeof(T);
  RowParams<T> rp{};
  rp.nk = pb.nk;
  for (int d = 0; d < kMaxRank; ++d) {
    rp.ksize[d] = pb.ksize[d];
    for (int k = 0; k < kKeptOperands; ++k) rp.kst[k][d] = pb.kst[k][d];
  }
  rp.M = pb.M;
  rp.nchunks = static_cast<int>(bytes / 16);
  rp.x = static_cast<const T*>(pb.x);
  rp.dx = static_cast<T*>(pb.dx);
  rp.dy = static_cast<const T*>(pb.dy);
  rp.y = static_cast<const T*>(pb.y);
  rp.has_y = pb.y != nullptr;
  rp.args = args;
  const int threads = row_smem_threads(rp.nchunks);
  auto kern = row_smem_kernel<TK, T>;
  if (bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "ReduceBackwardPlan: row kernel smem attribute");
  }
  kern<<<static_cast<unsigned>(pb.M), threads, bytes, pb.stream>>>(rp);
  return check_launch("ReduceBackwardPlan: row kernel");
}

}  // namespace baracuda::reduce::cuda::bw

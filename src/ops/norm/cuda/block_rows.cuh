// Paths "block" (kStage = true) and "long" (kStage = false): one block of
// kThreads per row. Thread t owns vectors t, t + kThreads, ... of the row in
// every pass. "block" stages the row in dynamic shared memory while reading
// it (forward: h in T; backward: x and dy), so global memory is read once;
// "long" rows exceed shared memory and each pass re-reads its vectors from
// global memory (mostly L2). Since a thread only ever reads back what it
// staged or wrote itself, the next row may reuse the buffer after the
// reductions' own barriers, and in-place outputs (y = x, dx = dy) are safe:
// an element is written after the same thread's last read of it.
#pragma once
#include <algorithm>

#include "core/smem_limit.hpp"
#include "cuda/sm80/mma.cuh"
#include "cuda/smem_optin.cuh"
#include "ops/norm/cuda/norm_common.cuh"

namespace baracuda::norm::cuda::kern {

// kPrefetched: x (and the residual, in `sres`) of this row are already in
// stage / sres (this thread's own cp.async copies, forward_block_rows_prefetch);
// pass 1 reads them there and writes h over x's copy.
template <class T, int kThreads, int W, bool kStage, bool kPrefetched = false>
__device__ __forceinline__ void forward_block_row(const Params& p, int64_t row, T* stage, dev::acc_t<T>* red,
                                                  const T* sres = nullptr) {
  using Acc = dev::acc_t<T>;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t nv = p.len / W;
  int64_t off[kOperands];
  row_offsets(p, row, off);
  const T* x = row_ptr<const T>(p, kX, off);
  const T* res = row_ptr<const T>(p, kIn3, off);
  T* h = row_ptr<T>(p, kIn1, off);
  T* y = row_ptr<T>(p, kOut, off);
  const T* again = kStage ? stage : (res ? h : x);  // where passes 2 and 3 read h
  const Acc inv_n = Acc(1) / static_cast<Acc>(p.len);
  Acc s = Acc(0);
  const T* x1 = kPrefetched ? stage : x;  // pass 1's sources
  const T* res1 = kPrefetched ? sres : res;
  for (int64_t i = t; i < nv; i += kThreads) {
    Acc v[W];
    dev::load_elems<T, W>(x1 + i * W, v);
    if (res) {
      Acc r[W];
      dev::load_elems<T, W>(res1 + i * W, r);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = dev::to_acc<Acc>(dev::from_acc<T>(v[k] + r[k]));  // h in T
      dev::store_elems<T, W>(h + i * W, v);
    }
    if constexpr (kStage) {
      if (!kPrefetched || res) dev::store_elems<T, W>(stage + i * W, v);  // prefetched x is already there
    }
#pragma unroll
    for (int k = 0; k < W; ++k) s += p.rms ? v[k] * v[k] : v[k];
  }
  s = dev::block_allreduce<SumOp<Acc>, kThreads>(s, red);
  Acc mean = Acc(0), var = s * inv_n;
  if (!p.rms) {
    mean = s * inv_n;
    Acc q = Acc(0);
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc v[W];
      dev::load_elems<T, W>(again + i * W, v);
#pragma unroll
      for (int k = 0; k < W; ++k) q += (v[k] - mean) * (v[k] - mean);
    }
    var = dev::block_allreduce<SumOp<Acc>, kThreads>(q, red) * inv_n;
  }
  const Acc rstd = rstd_of(var, p.eps);
  for (int64_t i = t; i < nv; i += kThreads) {
    Acc v[W], w[W], b[W];
    dev::load_elems<T, W>(again + i * W, v);
    load_weight<T, W>(p, i * W, w);
    load_bias<T, W>(p, i * W, b);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = (v[k] - mean) * rstd * w[k] + b[k];
    dev::store_elems<T, W>(y + i * W, v);
  }
  if (t == 0) {
    if (p.op[kMean]) static_cast<Acc*>(p.op[kMean])[off[kMean]] = mean;
    if (p.op[kRstd]) static_cast<Acc*>(p.op[kRstd])[off[kRstd]] = rstd;
  }
}

// kAcc > 0 ("fused" column sums, block path): the row has at most kAcc
// vectors per thread (vector i = t + j * kThreads, j < kAcc); the thread adds
// dy * x_hat and dy of each to aw / ab, which it keeps across rows.
//
// kPrefetched: x and dy of this row are already in sx / sg (copied there by
// this same thread's cp.async, see backward_block_rows_prefetch), so pass 1
// reads them from shared memory and stages nothing.
template <class T, int kThreads, int W, bool kStage, int kAcc = 0, bool kPrefetched = false>
__device__ __forceinline__ void backward_block_row(const Params& p, int64_t row, T* sx, T* sg,
                                                   SumPair<dev::acc_t<T>>* red,
                                                   dev::acc_t<T> (*aw)[W] = nullptr, dev::acc_t<T> (*ab)[W] = nullptr) {
  using Acc = dev::acc_t<T>;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t nv = p.len / W;
  int64_t off[kOperands];
  row_offsets(p, row, off);
  const T* x = row_ptr<const T>(p, kX, off);
  const T* dy = row_ptr<const T>(p, kIn1, off);
  const T* dh = row_ptr<const T>(p, kIn3, off);
  T* dx = row_ptr<T>(p, kOut, off);
  const T* x2 = kStage ? sx : x;  // pass 2's sources
  const T* dy2 = kStage ? sg : dy;
  const T* x1 = kPrefetched ? sx : x;  // pass 1's sources
  const T* dy1 = kPrefetched ? sg : dy;
  const Acc mean = p.rms ? Acc(0) : static_cast<const Acc*>(p.op[kMean])[off[kMean]];
  const Acc rstd = static_cast<const Acc*>(p.op[kRstd])[off[kRstd]];
  SumPair<Acc> s = SumPairOp<Acc>::init();
  for (int64_t i = t; i < nv; i += kThreads) {
    Acc a[W], b[W], w[W];
    dev::load_elems<T, W>(x1 + i * W, a);
    dev::load_elems<T, W>(dy1 + i * W, b);
    if constexpr (kStage && !kPrefetched) {
      dev::store_elems<T, W>(sx + i * W, a);
      dev::store_elems<T, W>(sg + i * W, b);
    }
    load_weight<T, W>(p, i * W, w);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const Acc g = b[k] * w[k];
      s.g += g;
      s.gx += g * ((a[k] - mean) * rstd);
    }
  }
  s = dev::block_allreduce<SumPairOp<Acc>, kThreads>(s, red);
  const Acc inv_n = Acc(1) / static_cast<Acc>(p.len);
  const Acc mg = p.rms ? Acc(0) : s.g * inv_n, mgx = s.gx * inv_n;
  // dx of vector i; returns its x_hat and dy in xh / b for the fused sums.
  auto dx_vector = [&](int64_t i, Acc(&xh)[W], Acc(&b)[W]) {
    Acc a[W], w[W], extra[W];
    dev::load_elems<T, W>(x2 + i * W, a);
    dev::load_elems<T, W>(dy2 + i * W, b);
    load_weight<T, W>(p, i * W, w);
    if (dh) {
      dev::load_elems<T, W>(dh + i * W, extra);
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) extra[k] = Acc(0);
    }
#pragma unroll
    for (int k = 0; k < W; ++k) {
      xh[k] = (a[k] - mean) * rstd;
      a[k] = rstd * (b[k] * w[k] - mg - xh[k] * mgx) + extra[k];
    }
    dev::store_elems<T, W>(dx + i * W, a);
  };
  if constexpr (kAcc > 0) {
#pragma unroll
    for (int j = 0; j < kAcc; ++j) {
      const int64_t i = t + static_cast<int64_t>(j) * kThreads;
      if (i < nv) {
        Acc xh[W], b[W];
        dx_vector(i, xh, b);
#pragma unroll
        for (int k = 0; k < W; ++k) {
          aw[j][k] += b[k] * xh[k];
          ab[j][k] += b[k];
        }
      }
    }
  } else {
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc xh[W], b[W];
      dx_vector(i, xh, b);
    }
  }
}

// A fused block's column partials (chunk = blockIdx.x) to the workspace.
template <class T, int kThreads, int W, int kAcc>
__device__ __forceinline__ void store_fused_partials(const Params& p, const dev::acc_t<T> (&aw)[kAcc][W],
                                                     const dev::acc_t<T> (&ab)[kAcc][W]) {
  using Acc = dev::acc_t<T>;
  Acc* ws = static_cast<Acc*>(p.workspace);
  const int64_t nv = p.len / W;
#pragma unroll
  for (int j = 0; j < kAcc; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    if (i < nv) {
      Acc* pw = ws + static_cast<int64_t>(blockIdx.x) * p.len + i * W;
      Acc* pb = ws + (p.chunks + blockIdx.x) * p.len + i * W;
#pragma unroll
      for (int k = 0; k < W; ++k) {
        pw[k] = aw[j][k];
        pb[k] = ab[j][k];
      }
    }
  }
}

// The fused backward's rows: this block's rows (blockIdx.x, + gridDim.x, ...;
// the grid is the plan's chunk count) in order, then its column partials.
template <class T, int kThreads, int W>
__device__ __forceinline__ void backward_block_rows_fused(const Params& p, T* sx, T* sg, SumPair<dev::acc_t<T>>* red) {
  using Acc = dev::acc_t<T>;
  constexpr int kAcc = kFusedColsPerThread / W;
  Acc aw[kAcc][W], ab[kAcc][W];
#pragma unroll
  for (int j = 0; j < kAcc; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) aw[j][k] = ab[j][k] = Acc(0);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x)
    backward_block_row<T, kThreads, W, true, kAcc>(p, row, sx, sg, red, aw, ab);
  store_fused_partials<T, kThreads, W, kAcc>(p, aw, ab);
}

// This thread's 16-byte vectors of row `row`'s x and dy -> sx / sg, as one
// cp.async group (committed even when there is no such row, so that every
// iteration below waits on the same group count).
// (Operands a and b: the backward's x and dy, the forward's x and residual;
// b is skipped when the operand is absent.)
template <class T, int kThreads>
__device__ __forceinline__ void prefetch_row(const Params& p, int64_t row, Operand a, Operand b, T* sa, T* sb) {
  constexpr int W = dev::kVec16<T>;
  if (row < p.rows) {
    int64_t off[kOperands];
    row_offsets(p, row, off);
    const T* ga = row_ptr<const T>(p, a, off);
    const T* gb = row_ptr<const T>(p, b, off);
    const int64_t nv = p.len / W;
    for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
      dev::sm80::cp_async_16(dev::sm80::smem_u32(sa + i * W), ga + i * W);
      if (gb) dev::sm80::cp_async_16(dev::sm80::smem_u32(sb + i * W), gb + i * W);
    }
  }
  dev::sm80::cp_async_commit();
}

// The fused rows with double-buffered staging (p.prefetch; 16-byte vectors):
// while row r is reduced and its dx written from buffer r % 2, the copy of
// the block's next row into the other buffer is in flight, so the memory
// system stays busy through the block reduction and pass 2 (one 1024-thread
// block per SM would otherwise idle it there). Each thread copies, reads and
// overwrites only its own vectors, in program order, so the buffers need no
// barrier of their own.
template <class T, int kThreads>
__device__ __forceinline__ void backward_block_rows_prefetch(const Params& p, T* sx, T* sg, T* nx, T* ng,
                                                             SumPair<dev::acc_t<T>>* red) {
  using Acc = dev::acc_t<T>;
  constexpr int W = dev::kVec16<T>;
  constexpr int kAcc = kFusedColsPerThread / W;
  Acc aw[kAcc][W], ab[kAcc][W];
#pragma unroll
  for (int j = 0; j < kAcc; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) aw[j][k] = ab[j][k] = Acc(0);
  prefetch_row<T, kThreads>(p, blockIdx.x, kX, kIn1, sx, sg);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    prefetch_row<T, kThreads>(p, row + gridDim.x, kX, kIn1, nx, ng);  // (sx, sg): this row; (nx, ng): the next
    dev::sm80::cp_async_wait<1>();                            // this row's group has landed
    backward_block_row<T, kThreads, W, true, kAcc, true>(p, row, sx, sg, red, aw, ab);
    T* const tx = sx;
    T* const tg = sg;
    sx = nx;
    sg = ng;
    nx = tx;
    ng = tg;
  }
  dev::sm80::cp_async_wait<0>();
  store_fused_partials<T, kThreads, W, kAcc>(p, aw, ab);
}

// The forward's rows with double-buffered staging (kMode kForwardPrefetch):
// the block's next row's x (and residual) is copied in while this row is
// reduced and written. The grid is the blocks resident at once (persistent).
template <class T, int kThreads>
__device__ __forceinline__ void forward_block_rows_prefetch(const Params& p, T* sx, T* sr, T* nx, T* nr,
                                                            dev::acc_t<T>* red) {
  constexpr int W = dev::kVec16<T>;
  prefetch_row<T, kThreads>(p, blockIdx.x, kX, kIn3, sx, sr);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    prefetch_row<T, kThreads>(p, row + gridDim.x, kX, kIn3, nx, nr);
    dev::sm80::cp_async_wait<1>();
    forward_block_row<T, kThreads, W, true, true>(p, row, sx, red, sr);
    T* const tx = sx;
    T* const tr = sr;
    sx = nx;
    sr = nr;
    nx = tx;
    nr = tr;
  }
  dev::sm80::cp_async_wait<0>();
}

// kFused (kMode*, norm_common.cuh): 0 = plain rows, 1 = backward with fused
// column sums, 2 = the same with prefetch, 3 = forward with prefetch (each its
// own instantiation: one path per kernel keeps the register pressure down).
template <class T, int kThreads, bool kStage, bool kBackward, int kFused = 0>
// Fused 16-bit rows on 256 threads: at most 64 registers (4 blocks per SM;
// unbounded it took 98, 2 blocks). Measured on the H100, bf16 [32768, 4096]
// backward: 527 us unbounded, 466 us at 3 blocks, 426 us at 4 (a few spills).
// f32 stays unbounded: at 4 blocks it spilled more and slowed (621 -> 730 us).
__global__ void __launch_bounds__(kThreads, kBackward && kFused > 0 && kThreads <= 256 && sizeof(T) == 2 ? 4 : 1)
    block_rows_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  extern __shared__ __align__(16) unsigned char staging[];
  __shared__ SumPair<Acc> red[kThreads / 32];  // the forward uses it as Acc partials
  T* s0 = reinterpret_cast<T*>(staging);
  T* s1 = reinterpret_cast<T*>(staging + (kStage && kBackward ? staging_bytes(p.len, sizeof(T)) : 0));
  constexpr int kV = dev::kVec16<T>;
  if constexpr (kFused == kModeForwardPrefetch) {
    static_assert(kStage && !kBackward, "the forward's prefetch");
    const int64_t b = staging_bytes(p.len, sizeof(T));
    const bool res = p.op[kIn3] != nullptr;
    unsigned char* const next = staging + (res ? 2 : 1) * b;
    forward_block_rows_prefetch<T, kThreads>(p, s0, reinterpret_cast<T*>(staging + b), reinterpret_cast<T*>(next),
                                             reinterpret_cast<T*>(next + b), reinterpret_cast<Acc*>(red));
  } else if constexpr (kFused == kModeFusedPrefetch) {
    static_assert(kStage && kBackward, "only the staged backward fuses the column sums");
    const int64_t b = staging_bytes(p.len, sizeof(T));
    backward_block_rows_prefetch<T, kThreads>(p, s0, s1, reinterpret_cast<T*>(staging + 2 * b),
                                              reinterpret_cast<T*>(staging + 3 * b), red);
  } else if constexpr (kFused == kModeFused) {
    static_assert(kStage && kBackward, "only the staged backward fuses the column sums");
    if (p.vec) backward_block_rows_fused<T, kThreads, kV>(p, s0, s1, red);
    else backward_block_rows_fused<T, kThreads, 1>(p, s0, s1, red);
  } else {
    for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
      if constexpr (kBackward) {
        if (p.vec) backward_block_row<T, kThreads, kV, kStage>(p, row, s0, s1, red);
        else backward_block_row<T, kThreads, 1, kStage>(p, row, s0, s1, red);
      } else {
        Acc* r = reinterpret_cast<Acc*>(red);
        if (p.vec) forward_block_row<T, kThreads, kV, kStage>(p, row, s0, r);
        else forward_block_row<T, kThreads, 1, kStage>(p, row, s0, r);
      }
    }
  }
}

template <class T, int kThreads, bool kStage, bool kBackward, int kFused = 0>
Status launch_block(const Params& p, int sm_count, int arch, cudaStream_t stream, const char* what) {
  size_t smem = 0;
  if constexpr (kStage) {
    static dev::SmemOptIn optin;
    const bool two_operands = kBackward || (kFused == kModeForwardPrefetch && p.op[kIn3] != nullptr);
    const bool double_buffer = kFused == kModeFusedPrefetch || kFused == kModeForwardPrefetch;
    smem = static_cast<size_t>(staging_bytes(p.len, sizeof(T)) * (two_operands ? 2 : 1) * (double_buffer ? 2 : 1));
    // The opt-in is made once per device (SmemOptIn), so it asks for the most
    // any row of this path may need on this architecture, not for this row.
    const size_t optin_bytes = std::max<size_t>(smem, static_cast<size_t>(baracuda::detail::row_staging_limit(arch)));
    BARACUDA_RETURN_IF_ERROR(
        dev::ensure_smem(optin, block_rows_kernel<T, kThreads, kStage, kBackward, kFused>, optin_bytes, what));
  }
  // Fused: the grid is the plan's chunk count (it fixes the summation order).
  int64_t grid = kFused > 0 ? p.chunks : std::min<int64_t>(p.rows, int64_t{std::max(sm_count, 1)} * (2048 / kThreads) * 4);
  if constexpr (kFused == kModeForwardPrefetch) {  // persistent: the blocks resident at once
    int resident = 0;
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(
        static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &resident, block_rows_kernel<T, kThreads, kStage, kBackward, kFused>, kThreads, smem)),
        what));
    grid = std::min<int64_t>(p.rows, int64_t{std::max(sm_count, 1)} * std::max(resident, 1));
  }
  block_rows_kernel<T, kThreads, kStage, kBackward, kFused><<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::norm::cuda::kern

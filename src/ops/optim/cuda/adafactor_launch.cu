// AdafactorPlan's kernels (see include/baracuda/ops/optim_adafactor.hpp, "CUDA").
// The host loops over the parameter list; per parameter, in stream order:
//   factored [B, R, C]: sums (one pass over g: per tile of kColRows rows by 32
//   16-byte columns, row partials per slice and column partials per chunk) ->
//   finalize (a block per batch matrix: the lerps, the row slices and column
//   chunks summed in order, the row_var mean) -> partials
//   (||p||^2 and ||u||^2 per block of kChunk elements) -> apply;
//   rank < 2: vector_pass (variance lerp + both partials) -> apply.
// apply: every block sums the partials in the same fixed order (identical
// bits in every block), then p = fma(s, u, p * wd) with u recomputed; above
// kInlineScale blocks one scale_kernel block does that sum once (the same code,
// the same bits) and apply reads s from the workspace; a parameter of one block
// runs partials and apply as one kernel (single_block_kernel, the same bits),
// and the rank-0 / rank-1 ones are batched, up to 64 per launch
// (small_vectors_kernel: a block per parameter).
// Deterministic: fixed per-thread orders, fixed warp xor trees, warps summed in
// order by one thread; no atomics. Elementwise arithmetic is adafactor_math.hpp
// (shared with the CPU reference).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "core/error.hpp"
#include "ops/optim/adafactor_launch.hpp"

namespace baracuda::optim::adafactor {

namespace kern {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kPerThread = static_cast<int>(kChunk / kThreads);  // 16

// The family-wide conversions (cuda/numeric.cuh), under this file's short names.
template <class T>
__device__ __forceinline__ float to_f(T x) { return dev::to_acc<float>(x); }
template <class T>
__device__ __forceinline__ T from_f(float x) { return dev::from_acc<T>(x); }

__device__ __forceinline__ float sq_add(float acc, float x) { return exact::add(acc, exact::mul(x, x)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = exact::add(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// The block's total in a fixed order (warp trees, then warps 0..7 in order),
// returned to every thread.
__device__ __forceinline__ float block_sum(float v, float* smem /* kWarps + 1 */) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // smem may still be read from a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < kWarps; ++w) s = exact::add(s, smem[w]);
    smem[kWarps] = s;
  }
  __syncthreads();
  return smem[kWarps];
}

__device__ __forceinline__ Scalars scalars(const Scalars* dev, const Scalars& host) { return dev ? *dev : host; }

__global__ void scalars_kernel(const float* step_in, float* step_out, const float* lr, double beta2_decay,
                               double weight_decay, Scalars* out) {
  const float t = exact::add(step_in[0], 1.0f);  // torch: step_t += 1 (f32)
  step_out[0] = t;
  *out = make_scalars(static_cast<double>(t), static_cast<double>(lr[0]), beta2_decay, weight_decay);
}

// Row and column sums of g^2 in ONE pass over g. A block takes a tile of
// kColRows rows (a row chunk) by 32 V columns (a slice; V = 16 / sizeof(T)) of
// one batch matrix, tiles in a block-stride loop: lane l of warp w reads the V
// columns l V .. l V + V - 1 of the slice (one 16-byte load when g is 16-byte
// aligned and C a multiple of V, else element by element) in rows w, w + 8,
// ... of the chunk. Per row, the lane's V squares in order and the warp's xor
// tree give the row's slice partial (row_part[row][slice]); per column, the
// lane's rows in order, then warps 0..7 in order through shared memory, give
// the chunk's column partial (part[b][chunk][c]). finalize sums the slices of
// a row and the chunks of a column in order. Squares are exact::mul, sums
// exact::add (no contraction): deterministic.
struct SumsGrid {
  int64_t slices = 0, chunks = 0, total = 0;
};

template <class T>
__global__ void __launch_bounds__(kThreads) sums_kernel(const T* __restrict__ g, int64_t R, int64_t C, bool vec,
                                                       SumsGrid sg, float* __restrict__ row_part,
                                                       float* __restrict__ part) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr int kWidth = 32 * V;  // columns per slice
  __shared__ float col_smem[kWarps][kWidth];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t blk = blockIdx.x; blk < sg.total; blk += gridDim.x) {  // block-uniform
    const int64_t slice = blk % sg.slices, rest = blk / sg.slices;
    const int64_t k = rest % sg.chunks, b = rest / sg.chunks;
    const int64_t r0 = k * kColRows, r1 = r0 + kColRows < R ? r0 + kColRows : R;
    const int64_t c0 = slice * kWidth + lane * V;  // this lane's first column
    float cacc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) cacc[j] = 0.f;
#pragma unroll 4
    for (int64_t r = r0 + warp; r < r1; r += kWarps) {  // warp-uniform
      const T* gr = g + (b * R + r) * C;
      float e[V];
      if (vec) {
        if (c0 < C) {
          const uint4 q = *reinterpret_cast<const uint4*>(gr + c0);
          const T* h = reinterpret_cast<const T*>(&q);
#pragma unroll
          for (int j = 0; j < V; ++j) e[j] = to_f(h[j]);
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) e[j] = 0.f;
        }
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = c0 + j < C ? to_f(gr[c0 + j]) : 0.f;
      }
      float racc = 0.f;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float sq = exact::mul(e[j], e[j]);
        cacc[j] = exact::add(cacc[j], sq);
        racc = exact::add(racc, sq);
      }
      racc = warp_sum(racc);
      if (lane == 0) row_part[(b * R + r) * sg.slices + slice] = racc;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) col_smem[warp][lane * V + j] = cacc[j];
    __syncthreads();
    for (int i = threadIdx.x; i < kWidth; i += kThreads) {
      const int64_t c = slice * kWidth + i;
      if (c < C) {
        float sum = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) sum = exact::add(sum, col_smem[w][i]);
        part[(b * sg.chunks + k) * C + c] = sum;
      }
    }
    __syncthreads();  // col_smem is rewritten by the next tile
  }
}

// Per batch matrix (grid.y): block 0 updates row_var and the divisor (the mean
// of the new row_var, a fixed block tree); blocks 1.. the columns (each summing
// its column's chunk partials in order) and col_var.
__global__ void __launch_bounds__(kThreads) finalize_kernel(int64_t B, int64_t R, int64_t C, int64_t chunks,
                                                           int64_t slices, const float* __restrict__ row_part,
                                                           const float* __restrict__ part, const float* row_var_in,
                                                           float* row_var, const float* col_var_in, float* col_var,
                                                           float* __restrict__ divisor,
                                                           float eps1, const Scalars* dev_sc, Scalars host_sc) {
  __shared__ float smem[kWarps + 1];
  const float w = scalars(dev_sc, host_sc).w;
  for (int64_t b = blockIdx.y; b < B; b += gridDim.y) {
    if (blockIdx.x == 0) {  // the rows and the divisor (uniform per block: block_sum syncs)
      float acc = 0.f;
      for (int64_t r = threadIdx.x; r < R; r += kThreads) {
        float rs = 0.f;  // the row's slices in order
        for (int64_t q = 0; q < slices; ++q) rs = exact::add(rs, row_part[(b * R + r) * slices + q]);
        const float v = lerp(row_var_in[b * R + r], mean_square(rs, C), w);
        row_var[b * R + r] = v;
        acc = exact::add(acc, v);
      }
      const float total = block_sum(acc, smem);
      if (threadIdx.x == 0) {
        const float mean = exact::div(total, static_cast<float>(R));
        divisor[b] = mean < eps1 ? eps1 : mean;  // clamp_(min=eps1): NaN stays NaN
      }
    } else {  // the columns, spread over the other blocks
      const int64_t stride = static_cast<int64_t>(gridDim.x - 1) * kThreads;
      for (int64_t c = static_cast<int64_t>(blockIdx.x - 1) * kThreads + threadIdx.x; c < C; c += stride) {
        float s = 0.f;
#pragma unroll 8
        for (int64_t k = 0; k < chunks; ++k) s = exact::add(s, part[(b * chunks + k) * C + c]);
        col_var[b * C + c] = lerp(col_var_in[b * C + c], mean_square(s, R), w);
      }
    }
  }
}

struct Factored {
  int64_t R = 1, C = 1;
  const float* row_var = nullptr;
  const float* col_var = nullptr;
  const float* divisor = nullptr;
};

// (batch, row, column) of the elements one thread visits, e0, e0 + kThreads, ...,
// in a factored [B, R, C]: advanced without a 64-bit division per element.
struct Walk {
  int64_t b = 0, r = 0, c = 0, q = 0, rem = 0;
  __device__ __forceinline__ Walk(const Factored& f, int64_t e0) {
    const int64_t br = e0 / f.C;
    c = e0 - br * f.C;
    b = br / f.R;
    r = br - b * f.R;
    q = kThreads / f.C;
    rem = kThreads - q * f.C;
  }
  __device__ __forceinline__ void next(const Factored& f) {
    c += rem;
    r += q;
    if (c >= f.C) c -= f.C, ++r;
    if (r >= f.R) {
      const int64_t k = r / f.R;
      b += k;
      r -= k * f.R;
    }
  }
  __device__ __forceinline__ float u(const Factored& f, float g, float eps1sq) const {
    return update_of(g, factored_v(f.row_var[b * f.R + r], f.col_var[b * f.C + c], f.divisor[b]), eps1sq);
  }
};

// ||p||^2 and ||u||^2 partials per block of kChunk elements (factored: u from the
// updated row / column state; vector: the variance lerp first, written back).
template <class T, bool kFactored>
__global__ void __launch_bounds__(kThreads) partials_kernel(const T* __restrict__ p, const T* __restrict__ g,
                                                           int64_t n, Factored f, const float* variance_in,
                                                           float* variance,
                                                           float eps1sq, bool maximize, const Scalars* dev_sc,
                                                           Scalars host_sc, float* __restrict__ p_part,
                                                           float* __restrict__ u_part) {
  __shared__ float smem[kWarps + 1];
  const float w = scalars(dev_sc, host_sc).w;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kChunk;
  float pa = 0.f, ua = 0.f;
  Walk at(f, kFactored ? base + threadIdx.x : 0);
#pragma unroll 4
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t e = base + j * kThreads + threadIdx.x;
    if (e < n) {
      const float pe = to_f(p[e]);
      const float ge = maximize ? -to_f(g[e]) : to_f(g[e]);
      pa = sq_add(pa, pe);
      float u;
      if constexpr (kFactored) {
        u = at.u(f, ge, eps1sq);
      } else {
        const float v = lerp(variance_in[e], exact::mul(ge, ge), w);
        variance[e] = v;
        u = update_of(ge, v, eps1sq);
      }
      ua = sq_add(ua, u);
    }
    if constexpr (kFactored) at.next(f);
  }
  const float ps = block_sum(pa, smem);
  const float us = block_sum(ua, smem);
  if (threadIdx.x == 0) p_part[blockIdx.x] = ps, u_part[blockIdx.x] = us;
}

// Both partial arrays summed in one fixed order (each thread k's stride-kThreads
// share, then the block tree) and the step's scale s, returned to every thread.
__device__ __forceinline__ float summed_scale(int64_t n, const Scalars& sc, double eps2, double d,
                                              const float* __restrict__ p_part, const float* __restrict__ u_part,
                                              int64_t blocks, float* smem) {
  float pa = 0.f, ua = 0.f;
  for (int64_t k = threadIdx.x; k < blocks; k += kThreads) pa = exact::add(pa, p_part[k]), ua = exact::add(ua, u_part[k]);
  const float psum = block_sum(pa, smem);
  const float usum = block_sum(ua, smem);
  return step_scale(psum, usum, n, sc.rho, eps2, d);
}

// Parameters of more than kInlineScale blocks: one block computes s once into
// the workspace (else every apply block would read all the partials: blocks^2
// reads, 700 MB of L2 traffic for GPT-2's wte).
constexpr int64_t kInlineScale = 1024;
__global__ void __launch_bounds__(kThreads) scale_kernel(int64_t n, const Scalars* dev_sc, Scalars host_sc, double eps2,
                                                        double d, const float* __restrict__ p_part,
                                                        const float* __restrict__ u_part, int64_t blocks,
                                                        float* __restrict__ out) {
  __shared__ float smem[kWarps + 1];
  const float s = summed_scale(n, scalars(dev_sc, host_sc), eps2, d, p_part, u_part, blocks, smem);
  if (threadIdx.x == 0) *out = s;
}

// Every block: s (summed_scale, or read from `pre` when scale_kernel made it),
// then the update of its chunk.
template <class T, bool kFactored>
__global__ void __launch_bounds__(kThreads) apply_kernel(const T* p_in, T* p, const T* __restrict__ g, int64_t n,
                                                        Factored f, const float* __restrict__ variance, float eps1sq,
                                                        bool maximize, const Scalars* dev_sc, Scalars host_sc,
                                                        double eps2, double d, const float* __restrict__ p_part,
                                                        const float* __restrict__ u_part, int64_t blocks,
                                                        const float* __restrict__ pre) {
  __shared__ float smem[kWarps + 1];
  const Scalars sc = scalars(dev_sc, host_sc);
  const float s = pre ? *pre : summed_scale(n, sc, eps2, d, p_part, u_part, blocks, smem);  // pre: uniform
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kChunk;
  Walk at(f, kFactored ? base + threadIdx.x : 0);
#pragma unroll 4
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t e = base + j * kThreads + threadIdx.x;
    if (e < n) {
      const float ge = maximize ? -to_f(g[e]) : to_f(g[e]);
      const float u = kFactored ? at.u(f, ge, eps1sq) : update_of(ge, variance[e], eps1sq);
      p[e] = from_f<T>(apply(to_f(p_in[e]), u, s, sc.wd_factor));
    }
    if constexpr (kFactored) at.next(f);
  }
}

// A parameter of one block (n <= kChunk: every GPT-2 vector): partials and
// update in one launch. The same bits as partials_kernel + apply_kernel: those
// pass the block's totals through p_part[0] / u_part[0] and apply's sum adds
// them to zeros (exact), the same p, g, state and u values.
template <class T, bool kFactored>
__device__ __forceinline__ void single_block(const T* p_in, T* p, const T* __restrict__ g, int64_t n, Factored f,
                                             const float* variance_in, float* variance, float eps1sq, bool maximize,
                                             const Scalars* dev_sc, Scalars host_sc, double eps2, double d,
                                             float* smem) {
  const Scalars sc = scalars(dev_sc, host_sc);
  float pv[kPerThread], uv[kPerThread];
  float pa = 0.f, ua = 0.f;
  Walk at(f, kFactored ? threadIdx.x : 0);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t e = j * kThreads + threadIdx.x;
    pv[j] = 0.f, uv[j] = 0.f;
    if (e < n) {
      const float pe = to_f(p_in[e]);
      const float ge = maximize ? -to_f(g[e]) : to_f(g[e]);
      pa = sq_add(pa, pe);
      float u;
      if constexpr (kFactored) {
        u = at.u(f, ge, eps1sq);
      } else {
        const float v = lerp(variance_in[e], exact::mul(ge, ge), sc.w);
        variance[e] = v;
        u = update_of(ge, v, eps1sq);
      }
      ua = sq_add(ua, u);
      pv[j] = pe, uv[j] = u;
    }
    if constexpr (kFactored) at.next(f);
  }
  const float psum = block_sum(pa, smem);
  const float usum = block_sum(ua, smem);
  const float s = step_scale(psum, usum, n, sc.rho, eps2, d);
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t e = j * kThreads + threadIdx.x;
    if (e < n) p[e] = from_f<T>(apply(pv[j], uv[j], s, sc.wd_factor));
  }
}

template <class T, bool kFactored>
__global__ void __launch_bounds__(kThreads) single_block_kernel(const T* p_in, T* p, const T* __restrict__ g, int64_t n,
                                                               Factored f, const float* variance_in, float* variance,
                                                               float eps1sq, bool maximize, const Scalars* dev_sc,
                                                               Scalars host_sc, double eps2, double d) {
  __shared__ float smem[kWarps + 1];
  single_block<T, kFactored>(p_in, p, g, n, f, variance_in, variance, eps1sq, maximize, dev_sc, host_sc, eps2, d, smem);
}

// Up to kBatch rank-0 / rank-1 parameters of at most kChunk elements (GPT-2's
// 50 vectors: one launch) in kernel parameters: block i runs single_block on
// entry i (the same bits as one launch per parameter).
struct SmallVec {
  const void* p_in;
  void* p;
  const void* g;
  const float* variance_in;
  float* variance;
  int64_t n;
};
constexpr int kBatch = 64;
struct SmallBatch {
  SmallVec v[kBatch];
};

template <class T>
__global__ void __launch_bounds__(kThreads) small_vectors_kernel(const SmallBatch b, float eps1sq, bool maximize,
                                                                const Scalars* dev_sc, Scalars host_sc, double eps2,
                                                                double d) {
  __shared__ float smem[kWarps + 1];
  const SmallVec& t = b.v[blockIdx.x];
  single_block<T, false>(static_cast<const T*>(t.p_in), static_cast<T*>(t.p), static_cast<const T*>(t.g), t.n,
                         Factored{}, t.variance_in, t.variance, eps1sq, maximize, dev_sc, host_sc, eps2, d, smem);
}

Status check(const char* what) { return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what); }

template <class T>
Status run_tensor(const Launch& l, const TensorLaunch& t, char* ws, const Scalars* dev_sc, cudaStream_t st) {
  const TensorScratch sc = tensor_scratch(t.shape);
  float* p_part = reinterpret_cast<float*>(ws + sc.p_part);
  float* u_part = reinterpret_cast<float*>(ws + sc.u_part);
  const T* p_in = static_cast<const T*>(t.param_in);
  T* p = static_cast<T*>(t.param_out);
  const T* g = static_cast<const T*>(t.grad);
  const int64_t blocks = ceil_div64(t.n, kChunk);
  float* pre = blocks > kern::kInlineScale ? reinterpret_cast<float*>(ws + sc.scale) : nullptr;
  if (blocks > INT32_MAX) return baracuda::detail::unsupported("AdafactorPlan", "parameter of ", t.n, " elements is too large");
  const dim3 eg(static_cast<unsigned>(blocks));
  if (t.factored) {
    float* row_part = reinterpret_cast<float*>(ws + sc.row_sum);
    float* col_part = reinterpret_cast<float*>(ws + sc.col_part);
    float* divisor = reinterpret_cast<float*>(ws + sc.divisor);
    const int64_t chunks = ceil_div64(t.R, kColRows);
    constexpr int64_t V = static_cast<int64_t>(16 / sizeof(T));
    const bool vec = reinterpret_cast<uintptr_t>(g) % 16 == 0 && t.C % V == 0;
    SumsGrid sg;
    sg.slices = ceil_div64(t.C, 32 * V), sg.chunks = chunks, sg.total = sg.slices * chunks * t.B;
    sums_kernel<T><<<static_cast<unsigned>(std::min<int64_t>(sg.total, int64_t{1} << 30)), kThreads, 0, st>>>(
        g, t.R, t.C, vec, sg, row_part, col_part);
    const dim3 fg(static_cast<unsigned>(1 + std::min<int64_t>(ceil_div64(t.C, kThreads), 65534)),
                  static_cast<unsigned>(std::min<int64_t>(t.B, 65535)));
    finalize_kernel<<<fg, kThreads, 0, st>>>(
        t.B, t.R, t.C, chunks, sg.slices, row_part, col_part, t.row_var_in, t.row_var, t.col_var_in, t.col_var, divisor, l.eps1,
        dev_sc, l.host);
    const Factored f{t.R, t.C, t.row_var, t.col_var, divisor};
    if (blocks == 1) {
      single_block_kernel<T, true><<<1, kThreads, 0, st>>>(p_in, p, g, t.n, f, nullptr, nullptr, l.eps1sq, l.maximize,
                                                           dev_sc, l.host, l.eps2, l.d);
      return check("AdafactorPlan: kernel launch");
    }
    partials_kernel<T, true><<<eg, kThreads, 0, st>>>(p_in, g, t.n, f, nullptr, nullptr, l.eps1sq, l.maximize, dev_sc,
                                                      l.host, p_part, u_part);
    if (pre) scale_kernel<<<1, kThreads, 0, st>>>(t.n, dev_sc, l.host, l.eps2, l.d, p_part, u_part, blocks, pre);
    apply_kernel<T, true><<<eg, kThreads, 0, st>>>(p_in, p, g, t.n, f, nullptr, l.eps1sq, l.maximize, dev_sc, l.host,
                                                   l.eps2, l.d, p_part, u_part, blocks, pre);
  } else if (blocks == 1) {
    single_block_kernel<T, false><<<1, kThreads, 0, st>>>(p_in, p, g, t.n, Factored{}, t.variance_in, t.variance,
                                                          l.eps1sq, l.maximize, dev_sc, l.host, l.eps2, l.d);
  } else {
    partials_kernel<T, false><<<eg, kThreads, 0, st>>>(p_in, g, t.n, Factored{}, t.variance_in, t.variance, l.eps1sq,
                                                       l.maximize, dev_sc, l.host, p_part, u_part);
    if (pre) scale_kernel<<<1, kThreads, 0, st>>>(t.n, dev_sc, l.host, l.eps2, l.d, p_part, u_part, blocks, pre);
    apply_kernel<T, false><<<eg, kThreads, 0, st>>>(p_in, p, g, t.n, Factored{}, t.variance, l.eps1sq, l.maximize,
                                                    dev_sc, l.host, l.eps2, l.d, p_part, u_part, blocks, pre);
  }
  return check("AdafactorPlan: kernel launch");
}

// Every parameter of the list: the small vectors batched (small_vectors_kernel),
// the others one by one (run_tensor). Parameters are independent (written
// tensors overlap nothing else) and the batches use no scratch, so the order
// between the two kinds does not matter.
template <class T>
Status run_all(const Launch& l, char* scratch, const Scalars* dev_sc, cudaStream_t st) {
  SmallBatch batch;
  int nb = 0;
  auto flush = [&]() -> Status {
    if (nb == 0) return Status::ok();
    small_vectors_kernel<T><<<static_cast<unsigned>(nb), kThreads, 0, st>>>(batch, l.eps1sq, l.maximize, dev_sc, l.host,
                                                                            l.eps2, l.d);
    nb = 0;
    return check("AdafactorPlan: kernel launch");
  };
  for (const TensorLaunch& t : l.tensors) {
    if (!t.factored && t.n <= kChunk) {
      batch.v[nb++] = SmallVec{t.param_in, t.param_out, t.grad, t.variance_in, t.variance, t.n};
      if (nb == kBatch) BARACUDA_RETURN_IF_ERROR(flush());
    } else {
      BARACUDA_RETURN_IF_ERROR(run_tensor<T>(l, t, scratch, dev_sc, st));
    }
  }
  return flush();
}

}  // namespace
}  // namespace kern

Status launch(const Launch& l) {
  const cudaStream_t st = static_cast<cudaStream_t>(l.stream);
  char* ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(l.workspace) + 255) / 256 * 256);
  Scalars* dev_sc = nullptr;
  if (l.device_scalars) {
    dev_sc = reinterpret_cast<Scalars*>(ws);
    kern::scalars_kernel<<<1, 1, 0, st>>>(l.step_in, l.step_out, l.lr_tensor, l.beta2_decay, l.weight_decay, dev_sc);
    BARACUDA_RETURN_IF_ERROR(kern::check("AdafactorPlan: kernel launch"));
  }
  for (const Launch::Copy& c : l.copies)
    if (cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice, st) != cudaSuccess)
      return kern::check("AdafactorPlan: state copy");
  char* scratch = ws + kScalarBytes;
  switch (l.dtype) {
    case DType::F32: return kern::run_all<float>(l, scratch, dev_sc, st);
    case DType::BF16: return kern::run_all<__nv_bfloat16>(l, scratch, dev_sc, st);
    case DType::F16: return kern::run_all<__half>(l, scratch, dev_sc, st);
    default: break;
  }
  return baracuda::detail::unsupported("AdafactorPlan", "dtype ", l.dtype, " has no kernel");
}

}  // namespace baracuda::optim::adafactor

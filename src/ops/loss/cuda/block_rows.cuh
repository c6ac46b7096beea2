// Path "block": one block of kThreads per row (rows strided over the grid).
// Thread t owns vectors t, t + kThreads, ... of the row.
//   pass 1 (Forward / Fused): folds the row's online (max, sum-exp) and the
//     coefficient sums A, B in one read of the logits (Fused with l.stage:
//     copying them to shared memory on the way); Backward only needs B, and
//     only with probability targets or weighted smoothing (no logits read).
//   the block combines the partials (block_allreduce, fixed tree); thread 0
//     writes loss / lse (or the per-row loss for Mean / Sum).
//   pass 2 (Backward / Fused): dlogits from the staged row (or a second read),
//     each thread writing exactly the vectors it read, so dlogits may be the
//     logits buffer, and the next row may reuse the staging without a barrier.
// x_t is read by every thread before the reduction's barriers, i.e. before
// any thread writes an in-place gradient.
#pragma once
#include <algorithm>

#include "cuda/smem_optin.cuh"
#include "ops/loss/cuda/ce_common.cuh"

namespace baracuda::loss::cuda::kern {

template <class T, int W, class Acc>
__device__ __forceinline__ void load_maybe_stage(const T* src, T* dst, bool stage, Acc (&v)[W]) {
  if constexpr (W == 1) {
    const T x = src[0];
    if (stage) dst[0] = x;
    v[0] = dev::to_acc<Acc>(x);
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    if (stage) *reinterpret_cast<uint4*>(dst) = raw;
    dev::Words<16> w;
    w.w[0] = raw.x, w.w[1] = raw.y, w.w[2] = raw.z, w.w[3] = raw.w;
    dev::unpack<T, Acc, 16>(w, v);
  }
}

// Vectors whose loads each thread issues before folding them (pass 1) or
// computing their gradients (pass 2). Measured on the H100 (bf16, 8192 rows
// of 50304 / 128256, 21:45 run, every kernel capped at 64 registers): 1 ->
// fwd 424 / 898 us, with_grad 816 / 2486; 2 -> 374 / 780, 733 / 2221; 4 ->
// spills, 383 / 837, 1066 / 2901.
inline constexpr int kUnroll = 2;

template <class T, int kThreads, Mode M, int W>
__device__ __forceinline__ void block_row(const Launch& l, int64_t row, T* stage, CeState<dev::acc_t<T>>* red) {
  using Acc = dev::acc_t<T>;
  using Op = CeOp<Acc>;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t nv = l.classes / W;
  const T* x = static_cast<const T*>(l.logits) + row * l.logits_rs;
  const T* pt = l.probs ? static_cast<const T*>(l.target) + row * l.target_s : nullptr;
  const RowInfo<T> ri = RowInfo<T>::make(l, row);
  const bool staged = M == Mode::Fused && l.stage;
  Acc xt = Acc(0);
  if (M != Mode::Backward && !l.probs && !ri.skip && !ri.bad) xt = dev::to_acc<Acc>(x[ri.t]);
  (void)xt;  // Backward: unused

  typename Op::State st = Op::init();
  const bool coef_pass = M != Mode::Backward ? ri.need_coef : (l.probs || (ri.need_coef && l.has_weight));
  // One vector's loads (logits, staged on the way, and probability targets) and its fold.
  auto load_vec = [&](int64_t i, Acc(&v)[W], Acc(&p)[W]) {
#pragma unroll
    for (int w = 0; w < W; ++w) p[w] = Acc(0);
    if (l.probs) load_elems<T, W>(pt + i * W, p);
    if constexpr (M != Mode::Backward) load_maybe_stage<T, W>(x + i * W, stage + i * W, staged, v);
  };
  auto fold_vec = [&](int64_t i, const Acc(&v)[W], const Acc(&p)[W]) {
    if constexpr (M != Mode::Backward) {
      st.ms = dev::MaxSumExp<Acc>::merge(st.ms, fold_max_sum<Acc, W>(v));
      if (ri.need_coef) {
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const Acc a = ri.coef(l, i * W + w, p[w]);
          st.a += term(a, v[w]);
          st.b += a;
        }
      }
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) st.b += ri.coef(l, i * W + w, p[w]);
    }
  };
  if (M != Mode::Backward || coef_pass) {
    // kUnroll vectors' loads in flight before their folds (the same fold
    // order as one at a time: i, i + kThreads, ...), so long rows keep enough
    // bytes in flight per SM.
    int64_t i = t;
    for (; i + (kUnroll - 1) * kThreads < nv; i += kUnroll * kThreads) {
      Acc v[kUnroll][W], p[kUnroll][W];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) load_vec(i + u * kThreads, v[u], p[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) fold_vec(i + u * kThreads, v[u], p[u]);
    }
    for (; i < nv; i += kThreads) {
      Acc v[W], p[W];
      load_vec(i, v, p);
      fold_vec(i, v, p);
    }
  }
  st = dev::block_allreduce<Op, kThreads>(st, red);
  const Acc b = ri.const_b ? static_cast<Acc>(l.eps) : st.b;

  Acc lse;
  if constexpr (M != Mode::Backward) {
    lse = st.ms.log_sum_exp();
    if (t == 0) {
      const Acc loss = row_loss<T, Acc>(l, ri, lse, st.a, b, xt);
      if (l.lse) static_cast<Acc*>(l.lse)[row * l.lse_s] = lse;
      if (l.reduction == LossReduction::None) store_loss<T, Acc>(l, l.loss, row * l.loss_s, loss);
      else static_cast<Acc*>(l.row_loss)[row] = loss;
    }
  } else {
    lse = static_cast<const Acc*>(l.lse)[row * l.lse_s];
  }
  if constexpr (M != Mode::Forward) {
    T* o = static_cast<T*>(l.dlogits) + row * l.dlogits_rs;
    const Acc g = ri.skip ? Acc(0) : ri.bad ? dev::quiet_nan<Acc>() : row_grad_scale<T, Acc>(l, row);
    const Acc K = (ri.need_coef ? b : Acc(0)) + ri.tw + Acc(2) * static_cast<Acc>(l.z) * ri.zw * lse;
    auto grad_vec = [&](int64_t i, Acc(&v)[W], const Acc(&p)[W]) {
#pragma unroll
      for (int w = 0; w < W; ++w) {
        const int64_t c = i * W + w;
        const Acc a = ri.need_coef ? ri.coef(l, c, p[w]) : Acc(0);
        v[w] = ri.skip ? Acc(0) : grad_elem<Acc, (sizeof(T) == 2)>(v[w], lse, g, K, a, c == ri.t ? ri.tw : Acc(0));
      }
      store_elems<T, W>(o + i * W, v);
    };
    auto load2 = [&](int64_t i, Acc(&v)[W], Acc(&p)[W]) {
#pragma unroll
      for (int w = 0; w < W; ++w) p[w] = Acc(0);
      if (staged) load_elems<T, W>(stage + i * W, v);
      else load_elems<T, W>(x + i * W, v);
      if (l.probs) load_elems<T, W>(pt + i * W, p);
    };
    int64_t i = t;
    for (; i + (kUnroll - 1) * kThreads < nv; i += kUnroll * kThreads) {
      Acc v[kUnroll][W], p[kUnroll][W];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) load2(i + u * kThreads, v[u], p[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) grad_vec(i + u * kThreads, v[u], p[u]);
    }
    for (; i < nv; i += kThreads) {
      Acc v[W], p[W];
      load2(i, v, p);
      grad_vec(i, v, p);
    }
  }
}

// At most 64 registers: 1024 threads' worth of blocks per SM (unbounded, the
// unrolled loads took 103-122 registers at 512 threads: one block per SM).
template <class T, int kThreads, Mode M>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads) block_rows_kernel(Launch l) {
  using Acc = dev::acc_t<T>;
  extern __shared__ __align__(16) unsigned char staging[];
  __shared__ CeState<Acc> red[kThreads / 32];
  T* stage = reinterpret_cast<T*>(staging);
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.x; row < l.rows; row += gridDim.x) {
    if (l.vec) block_row<T, kThreads, M, kV>(l, row, stage, red);
    else block_row<T, kThreads, M, 1>(l, row, stage, red);
  }
}

template <class T, int kThreads, Mode M>
Status launch_block(const Launch& l, const char* what) {
  const size_t smem = M == Mode::Fused && l.stage ? static_cast<size_t>((l.classes * sizeof(T) + 15) / 16 * 16) : 0;
  if constexpr (M == Mode::Fused) {
    static dev::SmemOptIn optin;
    // Once per device, for the most any staged row may need on this architecture.
    const size_t optin_bytes = std::max<size_t>(smem, static_cast<size_t>(stage_limit(l.arch)));
    BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin, block_rows_kernel<T, kThreads, M>, optin_bytes, what));
  }
  const int64_t grid = std::min<int64_t>(l.rows, int64_t{std::max(l.sm_count, 1)} * (2048 / kThreads) * 4);
  block_rows_kernel<T, kThreads, M><<<static_cast<unsigned>(grid), kThreads, smem, static_cast<cudaStream_t>(l.stream)>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::loss::cuda::kern

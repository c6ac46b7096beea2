// Path "split": rows of >= kSplitMinLen classes when there are fewer rows
// than SMs. Row r is cut into l.chunks chunks of kSplitChunk classes, one
// block per (chunk, row):
//   pass 1 (split_partials_kernel): the block folds its chunk into a CeState
//     (Backward: B only) and writes it to partial slot r * chunks + c of the
//     workspace; the block holding the target class also saves x_t there
//     (so an in-place gradient of pass 2 cannot overwrite it first);
//   pass 2 (split_finish_kernel): every block merges the row's partials in
//     chunk order (the same chain in every block: identical results); block
//     0 writes the loss / lse, and (Backward / Fused) every block writes its
//     chunk's gradient, re-reading its chunk (often from L2).
// No atomics; the combine order depends on (classes, chunks) only.
#pragma once
#include <algorithm>

#include "ops/loss/cuda/ce_common.cuh"

namespace baracuda::loss::cuda::kern {

constexpr int kSplitThreads = 512;

template <class Acc>
__device__ __forceinline__ CeState<Acc>* partial_slot(const Launch& l, int64_t row, int64_t chunk) {
  return reinterpret_cast<CeState<Acc>*>(static_cast<unsigned char*>(l.partials) + (row * l.chunks + chunk) * kPartialBytes);
}
template <class Acc>
__device__ __forceinline__ Acc* xt_slot(const Launch& l, int64_t row) {
  return reinterpret_cast<Acc*>(static_cast<unsigned char*>(l.partials) + l.rows * l.chunks * kPartialBytes) + row;
}

template <class T, Mode M, int W>
__device__ __forceinline__ void split_partial(const Launch& l, int64_t row, int64_t chunk, CeState<dev::acc_t<T>>* red) {
  using Acc = dev::acc_t<T>;
  using Op = CeOp<Acc>;
  const int64_t begin = chunk * kSplitChunk / W, end = std::min(l.classes, (chunk + 1) * kSplitChunk) / W;
  const T* x = static_cast<const T*>(l.logits) + row * l.logits_rs;
  const T* pt = l.probs ? static_cast<const T*>(l.target) + row * l.target_s : nullptr;
  const RowInfo<T> ri = RowInfo<T>::make(l, row);
  typename Op::State st = Op::init();
  for (int64_t i = begin + threadIdx.x; i < end; i += kSplitThreads) {
    Acc p[W] = {};
    if (l.probs) load_elems<T, W>(pt + i * W, p);
    if constexpr (M != Mode::Backward) {
      Acc v[W];
      load_elems<T, W>(x + i * W, v);
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
  }
  st = dev::block_allreduce<Op, kSplitThreads>(st, red);
  if (threadIdx.x == 0) {
    *partial_slot<Acc>(l, row, chunk) = st;
    if (M != Mode::Backward && !l.probs && !ri.skip && !ri.bad && ri.t >= begin * W && ri.t < end * W)
      *xt_slot<Acc>(l, row) = dev::to_acc<Acc>(x[ri.t]);
  }
}

template <class T, Mode M, int W>
__device__ __forceinline__ void split_finish(const Launch& l, int64_t row, int64_t chunk) {
  using Acc = dev::acc_t<T>;
  const RowInfo<T> ri = RowInfo<T>::make(l, row);
  // Backward without a coefficient pass (launch_split) has no partials: B is eps or unused.
  CeState<Acc> st = CeOp<Acc>::init();
  if (M != Mode::Backward || l.probs || (l.eps > 0 && l.has_weight)) {
    st = *partial_slot<Acc>(l, row, 0);
    for (int64_t c = 1; c < l.chunks; ++c) st = CeOp<Acc>::combine(st, *partial_slot<Acc>(l, row, c));
  }
  const Acc b = ri.const_b ? static_cast<Acc>(l.eps) : st.b;
  Acc lse;
  if constexpr (M != Mode::Backward) {
    lse = st.ms.log_sum_exp();
    if (chunk == 0 && threadIdx.x == 0) {
      const Acc xt = !l.probs && !ri.skip && !ri.bad ? *xt_slot<Acc>(l, row) : Acc(0);
      const Acc loss = row_loss<T, Acc>(l, ri, lse, st.a, b, xt);
      if (l.lse) static_cast<Acc*>(l.lse)[row * l.lse_s] = lse;
      if (l.reduction == LossReduction::None) store_loss<T, Acc>(l, l.loss, row * l.loss_s, loss);
      else static_cast<Acc*>(l.row_loss)[row] = loss;
    }
  } else {
    lse = static_cast<const Acc*>(l.lse)[row * l.lse_s];
  }
  if constexpr (M != Mode::Forward) {
    const int64_t begin = chunk * kSplitChunk / W, end = std::min(l.classes, (chunk + 1) * kSplitChunk) / W;
    const T* x = static_cast<const T*>(l.logits) + row * l.logits_rs;
    const T* pt = l.probs ? static_cast<const T*>(l.target) + row * l.target_s : nullptr;
    T* o = static_cast<T*>(l.dlogits) + row * l.dlogits_rs;
    const Acc g = ri.skip ? Acc(0) : ri.bad ? dev::quiet_nan<Acc>() : row_grad_scale<T, Acc>(l, row);
    const Acc K = (ri.need_coef ? b : Acc(0)) + ri.tw + Acc(2) * static_cast<Acc>(l.z) * ri.zw * lse;
    for (int64_t i = begin + threadIdx.x; i < end; i += kSplitThreads) {
      Acc v[W], p[W] = {};
      load_elems<T, W>(x + i * W, v);
      if (l.probs) load_elems<T, W>(pt + i * W, p);
#pragma unroll
      for (int w = 0; w < W; ++w) {
        const int64_t c = i * W + w;
        const Acc a = ri.need_coef ? ri.coef(l, c, p[w]) : Acc(0);
        v[w] = ri.skip ? Acc(0) : grad_elem<Acc, (sizeof(T) == 2)>(v[w], lse, g, K, a, c == ri.t ? ri.tw : Acc(0));
      }
      store_elems<T, W>(o + i * W, v);
    }
  }
}

template <class T, Mode M>
__global__ void __launch_bounds__(kSplitThreads) split_partials_kernel(Launch l) {
  __shared__ CeState<dev::acc_t<T>> red[kSplitThreads / 32];
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.y; row < l.rows; row += gridDim.y) {
    if (l.vec) split_partial<T, M, kV>(l, row, blockIdx.x, red);
    else split_partial<T, M, 1>(l, row, blockIdx.x, red);
  }
}

template <class T, Mode M>
__global__ void __launch_bounds__(kSplitThreads) split_finish_kernel(Launch l) {
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.y; row < l.rows; row += gridDim.y) {
    if (l.vec) split_finish<T, M, kV>(l, row, blockIdx.x);
    else split_finish<T, M, 1>(l, row, blockIdx.x);
  }
}

template <class T, Mode M>
Status launch_split(const Launch& l, const char* what) {
  static_assert(sizeof(CeState<dev::acc_t<T>>) <= kPartialBytes, "a partial fits its workspace slot");
  const auto stream = static_cast<cudaStream_t>(l.stream);
  const unsigned rows_y = static_cast<unsigned>(std::min<int64_t>(l.rows, 65535));
  const bool coef_pass = l.probs || (l.eps > 0 && l.has_weight);
  if (M != Mode::Backward || coef_pass) {
    split_partials_kernel<T, M><<<dim3(static_cast<unsigned>(l.chunks), rows_y), kSplitThreads, 0, stream>>>(l);
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what));
  }
  const unsigned finish_x = M == Mode::Forward ? 1u : static_cast<unsigned>(l.chunks);
  split_finish_kernel<T, M><<<dim3(finish_x, rows_y), kSplitThreads, 0, stream>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::loss::cuda::kern

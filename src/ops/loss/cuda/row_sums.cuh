// The two fixed-order sums over rows, each one block of kSumThreads: thread
// t adds rows t, t + kSumThreads, ... in order, then the block combines the
// threads in a fixed tree (block_allreduce). Deterministic, no atomics.
//   divisor_kernel: the Mean divisor, sum_i w[t_i] over rows not ignored and
//     in range (Index; 1 per row without weights), rows (Probs);
//   reduce_kernel: the Mean / Sum loss from the per-row losses.
#pragma once
#include "ops/loss/cuda/ce_common.cuh"

namespace baracuda::loss::cuda::kern {

constexpr int kSumThreads = 1024;

template <class T>
__global__ void __launch_bounds__(kSumThreads) divisor_kernel(Launch l) {
  using Acc = dev::acc_t<T>;
  __shared__ Acc red[kSumThreads / 32];
  Acc s = Acc(0);
  for (int64_t i = threadIdx.x; i < l.rows; i += kSumThreads) {
    if (l.probs) {
      s += Acc(1);
    } else {
      const RowInfo<T> ri = RowInfo<T>::make(l, i);
      if (!ri.skip && !ri.bad) s += ri.zw;  // zw = w[t_i] (1 without weights)
    }
  }
  s = dev::block_allreduce<dev::RowSum<Acc>, kSumThreads>(s, red);
  if (threadIdx.x == 0) *static_cast<Acc*>(l.divisor) = s;
}

template <class T>
__global__ void __launch_bounds__(kSumThreads) reduce_kernel(Launch l) {
  using Acc = dev::acc_t<T>;
  __shared__ Acc red[kSumThreads / 32];
  Acc s = Acc(0);
  for (int64_t i = threadIdx.x; i < l.rows; i += kSumThreads) s += static_cast<const Acc*>(l.row_loss)[i];
  s = dev::block_allreduce<dev::RowSum<Acc>, kSumThreads>(s, red);
  if (threadIdx.x == 0) {
    if (l.reduction == LossReduction::Mean) s /= *static_cast<const Acc*>(l.divisor);
    store_loss<T, Acc>(l, l.scalar_loss, 0, s);
  }
}

}  // namespace baracuda::loss::cuda::kern

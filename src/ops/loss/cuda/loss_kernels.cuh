// Cross-entropy CUDA kernels: the algorithm templates and their typed entry
// points, instantiated per logits dtype as listed in ../manifest.cmake
// (generated TUs; loss_launch.cu dispatches). The path was chosen by the plan
// (path.cpp: choose_path) and arrives in the Launch.
#pragma once
#include <algorithm>

#include "core/cuda_device.hpp"
#include "ops/loss/cuda/block_rows.cuh"
#include "ops/loss/cuda/ce_common.cuh"
#include "ops/loss/cuda/row_sums.cuh"
#include "ops/loss/cuda/split_rows.cuh"

namespace baracuda::loss::cuda::kern {

inline const char* what_of(const Launch& l) {
  return l.mode == Mode::Backward ? "CrossEntropyBackwardPlan: kernel launch" : "CrossEntropyPlan: kernel launch";
}

template <class T, Mode M>
Status block_mode(const Launch& l) {
  if (l.threads == kSmallThreads) return launch_block<T, kSmallThreads, M>(l, what_of(l));
  return launch_block<T, kLargeThreads, M>(l, what_of(l));
}

template <class T>
Status block_typed(const Launch& l) {
  switch (l.mode) {
    case Mode::Forward: return block_mode<T, Mode::Forward>(l);
    case Mode::Backward: return block_mode<T, Mode::Backward>(l);
    case Mode::Fused: break;
  }
  return block_mode<T, Mode::Fused>(l);
}

template <class T>
Status split_typed(const Launch& l) {
  switch (l.mode) {
    case Mode::Forward: return launch_split<T, Mode::Forward>(l, what_of(l));
    case Mode::Backward: return launch_split<T, Mode::Backward>(l, what_of(l));
    case Mode::Fused: break;
  }
  return launch_split<T, Mode::Fused>(l, what_of(l));
}

template <class T>
Status divisor_typed(const Launch& l) {
  divisor_kernel<T><<<1, kSumThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what_of(l));
}

template <class T>
Status reduce_typed(const Launch& l) {
  reduce_kernel<T><<<1, kSumThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what_of(l));
}

}  // namespace baracuda::loss::cuda::kern

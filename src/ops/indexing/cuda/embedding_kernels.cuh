// Embedding CUDA kernels of one table dtype: launch_forward_typed<T> (both
// index dtypes) and launch_backward_typed<T> (the sums over the sorted runs,
// gradient in T or, for 16-bit tables, f32), instantiated per dtype as listed
// in ../manifest.cmake (generated TUs; embedding_launch.cu dispatches).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "ops/indexing/cuda/embedding_backward.cuh"
#include "ops/indexing/cuda/embedding_forward.cuh"

namespace baracuda::indexing::cuda::kern {

template <class T>
Status launch_forward_typed(const ForwardLaunch& l) {
  return l.index_dtype == DType::I32 ? launch_forward_index<T, int32_t>(l) : launch_forward_index<T, int64_t>(l);
}

template <class T>
Status launch_backward_typed(const BackwardLaunch& l) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    if (l.grad_dtype == DType::F32) return launch_sums_vec<T, float>(l);
  }
  return launch_sums_vec<T, T>(l);
}

}  // namespace baracuda::indexing::cuda::kern

// Embedding launches: the error word, dtype dispatch to the kernel templates'
// instantiations (embedding_kernels.cuh, one generated TU per table dtype
// listed in ../manifest.cmake), and the error word's read-back.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "core/cuda_device.hpp"
#include "ops/indexing/launch.hpp"
#include "ops/indexing/manifest.hpp"  // generated from ops/indexing/manifest.cmake

namespace baracuda::indexing::cuda {

namespace kern {
template <class T>
Status launch_forward_typed(const ForwardLaunch& l);
template <class T>
Status launch_backward_typed(const BackwardLaunch& l);
}  // namespace kern

Status launch_forward(const ForwardLaunch& l) {
  const cudaError_t e = cudaMemsetAsync(l.error_word, 0xff, sizeof(uint64_t), static_cast<cudaStream_t>(l.stream));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(e), "EmbeddingPlan: error word reset"));
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_forward_typed<T>(l);
    BARACUDA_EMBEDDING_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "EmbeddingPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

Status launch_backward(const BackwardLaunch& l) {
  BARACUDA_RETURN_IF_ERROR(sort_indices(l));
  if (l.compact && l.n == 0) return Status::ok();  // sort_indices wrote count = 0
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_backward_typed<T>(l);
    BARACUDA_EMBEDDING_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "EmbeddingBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

Status read_error_word(const char* plan, void* stream, const void* error_word, int64_t* bad) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(e), (std::string(plan) + ": check_indices: stream synchronize").c_str()));
  uint64_t word = kNoError;
  e = cudaMemcpy(&word, error_word, sizeof(word), cudaMemcpyDeviceToHost);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(e), (std::string(plan) + ": check_indices: read the error word").c_str()));
  *bad = word == kNoError ? -1 : static_cast<int64_t>(word);
  return Status::ok();
}

}  // namespace baracuda::indexing::cuda

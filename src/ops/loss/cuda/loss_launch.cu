// Cross-entropy launches: dtype dispatch to the kernel templates'
// instantiations (loss_kernels.cuh), two generated TUs per dtype listed in
// ../manifest.cmake, and the order of a plan's launches.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/loss/launch.hpp"
#include "ops/loss/manifest.hpp"  // generated from ops/loss/manifest.cmake

namespace baracuda::loss::cuda {

namespace kern {
template <class T>
Status block_typed(const Launch& l);
template <class T>
Status split_typed(const Launch& l);
template <class T>
Status divisor_typed(const Launch& l);
template <class T>
Status reduce_typed(const Launch& l);
}  // namespace kern

namespace {
Status unsupported(const Launch& l) {
  return Status(StatusCode::Unsupported, l.mode == Mode::Backward
                                             ? "CrossEntropyBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16"
                                             : "CrossEntropyPlan: CUDA kernel needs f32, f64, f16 or bf16");
}
}  // namespace

Status launch_divisor(const Launch& l) {
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::divisor_typed<T>(l);
    BARACUDA_LOSS_AUX_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return unsupported(l);
}

Status launch_rows(const Launch& l) {
  if (l.rows == 0) return Status::ok();
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return l.path == Path::Split ? kern::split_typed<T>(l) : kern::block_typed<T>(l);
    BARACUDA_LOSS_BLOCK_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return unsupported(l);
}

Status launch_reduce(const Launch& l) {
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::reduce_typed<T>(l);
    BARACUDA_LOSS_AUX_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return unsupported(l);
}

Status launch(const Launch& l) {
  if (l.reduction == LossReduction::Mean) BARACUDA_RETURN_IF_ERROR(launch_divisor(l));
  BARACUDA_RETURN_IF_ERROR(launch_rows(l));
  if (l.mode != Mode::Backward && l.reduction != LossReduction::None) BARACUDA_RETURN_IF_ERROR(launch_reduce(l));
  return Status::ok();
}

}  // namespace baracuda::loss::cuda

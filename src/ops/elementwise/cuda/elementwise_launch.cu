// Elementwise launch: the path chosen on the host (choose_path) and the
// problem's dtypes select one instantiation of op_kernels.cuh, listed in the
// generated manifest (../manifest.cmake).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/elementwise/launch.hpp"
#include "ops/elementwise/manifest.hpp"  // generated from ops/elementwise/manifest.cmake

namespace baracuda::elementwise::cuda {

template <int Arity, class T>
Status launch_typed(const Problem& p, const Call& c, Path path, cudaStream_t st);
template <int Arity, class C>
Status launch_generic(const Problem& p, const Call& c, cudaStream_t st);
template <class Tin>
Status launch_cast(const Problem& p, const Call& c, Path path, cudaStream_t st);
template <class T>
Status launch_unary_grad(const Problem& p, const Call& c, Path path, cudaStream_t st);
template <class C>
Status launch_generic_grad(const Problem& p, const Call& c, cudaStream_t st);
template <class T>
Status launch_nary_grad(const Problem& p, const Call& c, Path path, cudaStream_t st);
template <class C>
Status launch_generic_nary_grad(const Problem& p, const Call& c, cudaStream_t st);

namespace {
Status generic(const Problem& p, const Call& c, cudaStream_t st) {
#define BARACUDA_EW_GENERIC_CASE(ARITY, COMPUTE)                                                            \
  if (p.arity == ARITY &&                                                                                   \
      ((std::is_same_v<COMPUTE, float> && p.compute == DType::F32) ||                                       \
       (std::is_same_v<COMPUTE, double> && p.compute == DType::F64) ||                                      \
       (std::is_same_v<COMPUTE, int64_t> && p.compute == DType::I64)))                                      \
    return launch_generic<ARITY, COMPUTE>(p, c, st);
  BARACUDA_EW_GENERIC_KERNELS(BARACUDA_EW_GENERIC_CASE)
#undef BARACUDA_EW_GENERIC_CASE
  return Status(StatusCode::Unsupported, "elementwise: the build has no generic kernel for this arity and compute type");
}
}  // namespace

Status launch(const Problem& p, const Call& c, Path path, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (c.layout.numel == 0) return Status::ok();
  if (p.grad >= 3) {  // operand gradients of binary / ternary ops
    if (path != Path::Generic64) {
#define BARACUDA_EW_NARY_GRAD_CASE(DT, CTYPE) \
  if (p.common == DType::DT) return launch_nary_grad<CTYPE>(p, c, path, st);
      BARACUDA_EW_NARY_GRAD_KERNELS(BARACUDA_EW_NARY_GRAD_CASE)
#undef BARACUDA_EW_NARY_GRAD_CASE
    }
    if (p.compute == DType::F64) return launch_generic_nary_grad<double>(p, c, st);
    return launch_generic_nary_grad<float>(p, c, st);
  }
  if (p.grad != 0) {
    if (path != Path::Generic64) {
#define BARACUDA_EW_GRAD_CASE(DT, CTYPE) \
  if (p.common == DType::DT) return launch_unary_grad<CTYPE>(p, c, path, st);
      BARACUDA_EW_GRAD_KERNELS(BARACUDA_EW_GRAD_CASE)
#undef BARACUDA_EW_GRAD_CASE
    }
    if (p.compute == DType::F64) return launch_generic_grad<double>(p, c, st);
    return launch_generic_grad<float>(p, c, st);
  }
  if (path != Path::Generic64 && is_cast(p)) {
#define BARACUDA_EW_CAST_CASE(DT, CTYPE) \
  if (p.common == DType::DT) return launch_cast<CTYPE>(p, c, path, st);
    BARACUDA_EW_CAST_KERNELS(BARACUDA_EW_CAST_CASE)
#undef BARACUDA_EW_CAST_CASE
  } else if (path != Path::Generic64) {
#define BARACUDA_EW_TYPED_CASE(ARITY, DT, CTYPE) \
  if (p.arity == ARITY && p.common == DType::DT) return launch_typed<ARITY, CTYPE>(p, c, path, st);
    BARACUDA_EW_TYPED_KERNELS(BARACUDA_EW_TYPED_CASE)
#undef BARACUDA_EW_TYPED_CASE
  }
  return generic(p, c, st);
}

}  // namespace baracuda::elementwise::cuda

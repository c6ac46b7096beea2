// fill_pass (grouped_launch.hpp): the constant as a scalar operand of the
// elementwise template, copied into every element of the output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baracuda/cuda/elementwise.cuh"
#include "core/error.hpp"
#include "ops/gemm/grouped_launch.hpp"

namespace baracuda::gemm::cuda {

namespace {
namespace bc = baracuda::cuda;

template <class C>
struct Copy {
  __device__ C operator()(C v) const { return v; }
};

template <class C, class T>
Status fill_as(const Stream& stream, double value, const TensorMut& out) {
  return bc::elementwise<C, T(C)>(stream, Copy<C>{}, out, bc::scalar(static_cast<C>(value)));
}
}  // namespace

Status fill_pass(const Stream& stream, double value, const TensorMut& out) {
  switch (out.dtype) {
    case DType::F32: return fill_as<float, float>(stream, value, out);
    case DType::F64: return fill_as<double, double>(stream, value, out);
    case DType::F16: return fill_as<float, __half>(stream, value, out);
    case DType::BF16: return fill_as<float, __nv_bfloat16>(stream, value, out);
    default: return baracuda::detail::unsupported("GroupedLinearBackwardPlan", "dtype ", out.dtype, " has no fill pass");
  }
}

}  // namespace baracuda::gemm::cuda

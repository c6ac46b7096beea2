// fill_pass (grouped_launch.hpp): every element of the output set to a
// constant, with the elementwise template over the output itself as its one
// (ignored) input — the template's one-input kernels need a tensor input (a
// lone scalar operand is refused at compile time; compute-sanitizer caught
// the null read that version made).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baracuda/cuda/elementwise.cuh"
#include "core/error.hpp"
#include "ops/gemm/grouped_launch.hpp"

namespace baracuda::gemm::cuda {

namespace {
namespace bc = baracuda::cuda;

template <class C>
struct Constant {
  C value;
  __device__ C operator()(C) const { return value; }
};

template <class C, class T>
Status fill_as(const Stream& stream, double value, const TensorMut& out) {
  return bc::elementwise<C, T(T)>(stream, Constant<C>{static_cast<C>(value)}, out, static_cast<TensorRef>(out));
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

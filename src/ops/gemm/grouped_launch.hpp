// The grouped linear plans' one bespoke CUDA pass (cuda/grouped_fill.cu): a
// constant written into a view, for the ones vector the bias gradient's GEMM
// reads (db = ones^T . g). On the public elementwise template, like the
// family's other passes (launch.hpp). Asynchronous on the stream.
#pragma once
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::gemm::cuda {

// Every element of out (f32, f64, f16, bf16) = value.
Status fill_pass(const Stream& stream, double value, const TensorMut& out);

}  // namespace baracuda::gemm::cuda

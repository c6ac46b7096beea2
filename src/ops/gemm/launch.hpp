// The GEMM family's bespoke CUDA passes (cuda/passes.cu): the elementwise
// steps cuBLASLt cannot fuse, written on the public elementwise template
// (baracuda/cuda/elementwise.cuh) with the elementwise family's functors, so
// their numerics equal UnaryPlan / UnaryBackwardPlan's. Every view is
// broadcast to `out`'s shape by NumPy rules; dtype = the views' (f32, f64,
// f16, bf16; 16-bit compute in f32). Asynchronous on the stream.
#pragma once
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda::gemm::cuda {

// out = act(pre); pre may be out itself (in place).
Status activation_pass(const Stream& stream, GemmActivation act, const TensorRef& pre, const TensorMut& out);
// g = dy * act'(pre) (Relu: pre may be the forward's output).
Status activation_grad_pass(const Stream& stream, GemmActivation act, const TensorRef& dy, const TensorRef& pre,
                            const TensorMut& g);
// out = c (broadcast copy).
Status copy_pass(const Stream& stream, const TensorRef& c, const TensorMut& out);
// out = beta * c + bias (either may be empty: then 0), the K = 0 product.
Status affine_pass(const Stream& stream, double beta, const TensorRef& c, const TensorRef& bias, const TensorMut& out);

}  // namespace baracuda::gemm::cuda

// The elementwise engine's host side: NumPy broadcasting of operand views to
// the output's shape, a memory-friendly dim order, and dimension coalescing.
// One layout serves the CPU reference loop and every CUDA path
// (include/baracuda/cuda/elementwise.cuh).
#pragma once
#include <cstdint>

#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// Up to three outputs and four inputs (a ternary op's gradients: da, db, dc
// from dy, a, b, c).
inline constexpr int kEwMaxOperands = 7;

// Operands [0, outputs) are the outputs, [outputs, operands) the inputs. Dims are row-major: dim rank-1 is
// the innermost (the smallest output stride). Strides are in elements; an
// input that broadcasts along a dim (extent 1 there, missing leading dims, a
// host scalar) has stride 0 there.
struct EwLayout {
  int rank = 0;  // after coalescing; 0 = a single element (numel 1)
  int outputs = 1;
  int operands = 0;
  int64_t numel = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kEwMaxOperands][kMaxRank] = {};
};

// in_shapes / in_strides: one per input; in_strides[k] == nullptr marks a host
// scalar (stride 0 everywhere). Every input shape must broadcast to
// out_shape (checked by the caller). Dims are reordered so that the output's
// strides decrease (stable: equal strides keep their order), extent-1 dims
// dropped and neighbours merged where every operand allows it.
// n_out outputs of out_shape: out_strides[m] in out_shape's rank, nullptr for
// an output not written (stride 0 everywhere: it never blocks a merge). Dims
// are ordered by the first written output's strides.
EwLayout make_ew_layout(const Dims& out_shape, int n_out, const Dims* const* out_strides, int n_in,
                        const Dims* in_shapes, const Dims* const* in_strides);
// One output.
inline EwLayout make_ew_layout(const Dims& out_shape, const Dims& out_strides, int n_in, const Dims* in_shapes,
                               const Dims* const* in_strides) {
  const Dims* out[1] = {&out_strides};
  return make_ew_layout(out_shape, 1, out, n_in, in_shapes, in_strides);
}

// The largest element offset + 1 an operand reaches in the layout (0 for a
// stride-0-everywhere operand: one element).
int64_t ew_operand_extent(const EwLayout& L, int operand);

}  // namespace baracuda::detail

// CPU reference for the reduction family: the oracle. Plain loops over any
// strides, accumulation in double (int64 for integers), clarity over speed.
#pragma once
#include "baracuda/ops/reduce.hpp"

namespace baracuda::reduce::ref {

// x: the input view; y: the output viewed in the INPUT's rank (extent 1 on
// reduced axes). out_dtype as ReducePlan::output_dtype().
Status forward(ReduceKind kind, const TensorRef& x, const TensorMut& y_in_rank, uint32_t axis_mask,
               int64_t correction);

// Every operand in the INPUT's rank; dy / y broadcast (extent 1) on reduced axes.
// x / y may have null data when the kind does not need them.
Status backward(ReduceKind kind, const TensorRef& dy, const TensorRef& x, const TensorRef& y, const TensorMut& dx,
                uint32_t axis_mask, int64_t correction);

}  // namespace baracuda::reduce::ref

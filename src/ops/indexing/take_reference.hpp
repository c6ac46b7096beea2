// CPU reference of TakePlan / PutPlan / OneHotPlan: the oracle. Plain loops
// over any strides; every index is checked before anything is written. put_'s
// accumulation visits each destination's contributions in position order in
// the accumulator the CUDA kernels use (f32 for f16 / bf16 / f32, f64 for f64,
// wrapping int64 for i32 / i64), so the two backends agree bit for bit.
#pragma once
#include "baracuda/ops/indexing_take.hpp"

namespace baracuda::indexing::ref {

Status take(const char* plan, const TakeDescriptor& d, const TakeArgs& a);
Status put(const char* plan, const PutDescriptor& d, const PutArgs& a);
Status one_hot(const char* plan, const OneHotDescriptor& d, const OneHotArgs& a);

// The bits of the value 1 in dtype t (its size at most 16 bytes): what one_hot
// writes at the class (0 is all-zero bits in every dtype).
void one_bits(DType t, unsigned char out[16]);

}  // namespace baracuda::indexing::ref

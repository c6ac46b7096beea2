// CPU reference of the random plans: executes the same launch descriptions
// as the CUDA kernels (launch.hpp) on host memory, element by element through
// the strides, with the shared transforms (transform.hpp): the oracle, and
// bit-identical to the kernels.
#pragma once
#include "ops/random/launch.hpp"

namespace baracuda::random::ref {

Status fill(const cuda::FillLaunch& l);
Status dropout(const cuda::DropoutLaunch& l);

}  // namespace baracuda::random::ref

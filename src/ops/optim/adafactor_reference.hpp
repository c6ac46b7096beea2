// CPU reference of AdafactorPlan: torch's _single_tensor_adafactor step by
// step (include/baracuda/ops/optim_adafactor.hpp). Reductions accumulate in
// double and are rounded once to f32 where torch has an f32 value; everything
// elementwise is adafactor_math.hpp, shared with the CUDA kernels.
#pragma once
#include "baracuda/ops/optim_adafactor.hpp"

namespace baracuda::optim::ref {

// eps1: the value in effect (AdafactorPlan::eps1()). Views are checked.
Status adafactor(const AdafactorDescriptor& d, double eps1, const AdafactorArgs& a);

}  // namespace baracuda::optim::ref

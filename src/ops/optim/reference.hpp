// CPU reference of the optim plans: plain loops over the same ListLaunch the
// CUDA launcher takes (host pointers), tensor by tensor, element by element,
// with the per-element formulas of math.hpp (the same rounding as the
// kernels: identical bits for the optimizers, scale, unscale and zero). The
// norms sum in f64 in element order (the kernels' order differs: equal to
// about one f32 ulp).
#pragma once
#include "baracuda/core/status.hpp"
#include "ops/optim/launch.hpp"

namespace baracuda::optim::ref {

Status run(const cuda::ListLaunch& l);

}  // namespace baracuda::optim::ref

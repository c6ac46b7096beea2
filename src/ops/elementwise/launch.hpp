// The plan <-> CUDA interface of the elementwise family
// (cuda/elementwise_launch.cu; cuda_standins.cpp when the build leaves the
// family's kernels out).
#pragma once
#include "baracuda/core/status.hpp"
#include "ops/elementwise/problem.hpp"

namespace baracuda::elementwise::cuda {

// Launches `path` (choose_path) for the problem and the call's layout.
Status launch(const Problem& p, const Call& c, Path path, void* stream /* cudaStream_t */);

}  // namespace baracuda::elementwise::cuda

// The FactoryPlan <-> backends interface: the CPU reference
// (factory_reference.cpp) and the CUDA entry point (cuda/factory.cu;
// factory_standins.cpp when the build leaves the family's kernels out).
#pragma once
#include "baracuda/core/status.hpp"
#include "baracuda/ops/elementwise.hpp"
#include "core/elementwise_layout.hpp"

namespace baracuda::elementwise::factory {

using Resolved = baracuda::detail::FactoryResolved;

// The output view as the backends walk it: make_ew_layout of the view alone
// (for a 1-D arange / linspace the layout's index is the element's index i).
baracuda::detail::EwLayout layout_of(const TensorMut& out);
// True when every offset of the layout and its element count fit 31 bits.
bool fits_index32(const baracuda::detail::EwLayout& L);

namespace ref {
Status run(const Resolved& r, const baracuda::detail::EwLayout& L, void* out);
}  // namespace ref

namespace cuda {
Status launch(const Resolved& r, const baracuda::detail::EwLayout& L, void* out, bool index32,
              void* stream /* cudaStream_t */);
}  // namespace cuda

}  // namespace baracuda::elementwise::factory

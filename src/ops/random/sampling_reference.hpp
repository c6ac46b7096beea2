// CPU references of RandpermPlan and MultinomialPlan (the plan reads / bumps
// a device offset itself and passes the offset of the draw).
#pragma once
#include <cstdint>

#include "baracuda/ops/random_sampling.hpp"

namespace baracuda::random::ref {

void randperm(const RandpermDescriptor& d, uint64_t seed, uint64_t offset, const TensorMut& out);
// InvalidProblem naming the first bad row, before writing anything.
Status multinomial(const char* plan, const MultinomialDescriptor& d, uint64_t seed, uint64_t offset,
                   const MultinomialArgs& a);

}  // namespace baracuda::random::ref

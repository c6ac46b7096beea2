// RandpermPlan and MultinomialPlan in the contract suite, CUDA checks (skip without a GPU).
#include "contract/sampling_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RandpermPlan, PlanContractCuda, ::testing::Types<RandpermTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultinomialPlan, PlanContractCuda, ::testing::Types<MultinomialTraits>);
}  // namespace contract

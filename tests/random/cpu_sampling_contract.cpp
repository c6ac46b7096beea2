// RandpermPlan and MultinomialPlan in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/sampling_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RandpermPlan, PlanContract, ::testing::Types<RandpermTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultinomialPlan, PlanContract, ::testing::Types<MultinomialTraits>);
}  // namespace contract

// The random family's plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/random_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RandomPlan, PlanContract, ::testing::Types<RandomTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(DropoutPlan, PlanContract, ::testing::Types<DropoutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(DropoutBackwardPlan, PlanContract, ::testing::Types<DropoutBackwardTraits>);
}  // namespace contract

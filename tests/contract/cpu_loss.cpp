// The loss plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/loss_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(CrossEntropyPlan, PlanContract, ::testing::Types<CrossEntropyTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(CrossEntropyBackwardPlan, PlanContract, ::testing::Types<CrossEntropyBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FusedLinearCrossEntropyPlan, PlanContract, ::testing::Types<FusedLinearCrossEntropyTraits>);
}  // namespace contract

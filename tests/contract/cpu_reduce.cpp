// The reduction plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/reduce_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(ReducePlan, PlanContract, ::testing::Types<ReduceTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ReduceBackwardPlan, PlanContract, ::testing::Types<ReduceBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ReduceToPlan, PlanContract, ::testing::Types<ReduceToTraits>);
}  // namespace contract

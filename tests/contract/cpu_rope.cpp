// The RoPE plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/rope_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RopePlan, PlanContract, ::testing::Types<RopeTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(RopeBackwardPlan, PlanContract, ::testing::Types<RopeBackwardTraits>);
}  // namespace contract

// The norm plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/norm_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(NormPlan, PlanContract, ::testing::Types<NormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NormBackwardPlan, PlanContract, ::testing::Types<NormBackwardTraits>);
}  // namespace contract

// The softmax plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/softmax_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(SoftmaxPlan, PlanContract, ::testing::Types<SoftmaxTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SoftmaxBackwardPlan, PlanContract, ::testing::Types<SoftmaxBackwardTraits>);
}  // namespace contract

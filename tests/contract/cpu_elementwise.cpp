// The elementwise plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/elementwise_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(UnaryPlan, PlanContract, ::testing::Types<UnaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(BinaryPlan, PlanContract, ::testing::Types<BinaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TernaryPlan, PlanContract, ::testing::Types<TernaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(UnaryBackwardPlan, PlanContract, ::testing::Types<UnaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(BinaryBackwardPlan, PlanContract, ::testing::Types<BinaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TernaryBackwardPlan, PlanContract, ::testing::Types<TernaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FactoryPlan, PlanContract, ::testing::Types<FactoryTraits>);
}  // namespace contract

// The elementwise plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/elementwise_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(UnaryPlan, PlanContractCuda, ::testing::Types<UnaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(BinaryPlan, PlanContractCuda, ::testing::Types<BinaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TernaryPlan, PlanContractCuda, ::testing::Types<TernaryTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(UnaryBackwardPlan, PlanContractCuda, ::testing::Types<UnaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(BinaryBackwardPlan, PlanContractCuda, ::testing::Types<BinaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TernaryBackwardPlan, PlanContractCuda, ::testing::Types<TernaryBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FactoryPlan, PlanContractCuda, ::testing::Types<FactoryTraits>);
}  // namespace contract

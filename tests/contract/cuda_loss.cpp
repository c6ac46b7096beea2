// The loss plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/loss_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(CrossEntropyPlan, PlanContractCuda, ::testing::Types<CrossEntropyTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(CrossEntropyBackwardPlan, PlanContractCuda, ::testing::Types<CrossEntropyBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FusedLinearCrossEntropyPlan, PlanContractCuda, ::testing::Types<FusedLinearCrossEntropyTraits>);
}  // namespace contract

// The softmax plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/softmax_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(SoftmaxPlan, PlanContractCuda, ::testing::Types<SoftmaxTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SoftmaxBackwardPlan, PlanContractCuda, ::testing::Types<SoftmaxBackwardTraits>);
}  // namespace contract

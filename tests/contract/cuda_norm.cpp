// The norm plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/norm_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(NormPlan, PlanContractCuda, ::testing::Types<NormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NormBackwardPlan, PlanContractCuda, ::testing::Types<NormBackwardTraits>);
}  // namespace contract

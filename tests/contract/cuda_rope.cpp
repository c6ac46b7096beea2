// The RoPE plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/rope_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RopePlan, PlanContractCuda, ::testing::Types<RopeTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(RopeBackwardPlan, PlanContractCuda, ::testing::Types<RopeBackwardTraits>);
}  // namespace contract

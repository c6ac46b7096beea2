// The attention plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/attention_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(SdpaPlan, PlanContractCuda, ::testing::Types<SdpaTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SdpaBackwardPlan, PlanContractCuda, ::testing::Types<SdpaBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FlashSdpaPlan, PlanContractCuda, ::testing::Types<FlashSdpaTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FlashSdpaBackwardPlan, PlanContractCuda, ::testing::Types<FlashSdpaBackwardTraits>);
}  // namespace contract

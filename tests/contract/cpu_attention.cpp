// The attention plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/attention_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(SdpaPlan, PlanContract, ::testing::Types<SdpaTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SdpaBackwardPlan, PlanContract, ::testing::Types<SdpaBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FlashSdpaPlan, PlanContract, ::testing::Types<FlashSdpaTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(FlashSdpaBackwardPlan, PlanContract, ::testing::Types<FlashSdpaBackwardTraits>);
}  // namespace contract

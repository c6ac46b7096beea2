// The optim plans (in-place tensor-list updates) in the contract suite, CPU checks and fuzz
// (tests/contract/suite.hpp; traits in optim_traits.hpp).
#include "contract/optim_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(AdamPlan, PlanContract, ::testing::Types<AdamTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SgdPlan, PlanContract, ::testing::Types<SgdTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LionPlan, PlanContract, ::testing::Types<LionTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GlobalNormPlan, PlanContract, ::testing::Types<GlobalNormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ClipGradNormPlan, PlanContract, ::testing::Types<ClipGradNormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NonFiniteCheckUnscalePlan, PlanContract, ::testing::Types<NonFiniteCheckUnscaleTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultiTensorScalePlan, PlanContract, ::testing::Types<MultiTensorScaleTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultiTensorZeroPlan, PlanContract, ::testing::Types<MultiTensorZeroTraits>);
}  // namespace contract

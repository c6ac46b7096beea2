// The optim plans (in-place tensor-list updates) in the contract suite, CUDA checks (skip without a GPU)
// (tests/contract/suite.hpp; traits in optim_traits.hpp).
#include "contract/optim_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(AdamPlan, PlanContractCuda, ::testing::Types<AdamTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(SgdPlan, PlanContractCuda, ::testing::Types<SgdTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LionPlan, PlanContractCuda, ::testing::Types<LionTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GlobalNormPlan, PlanContractCuda, ::testing::Types<GlobalNormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ClipGradNormPlan, PlanContractCuda, ::testing::Types<ClipGradNormTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NonFiniteCheckUnscalePlan, PlanContractCuda, ::testing::Types<NonFiniteCheckUnscaleTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultiTensorScalePlan, PlanContractCuda, ::testing::Types<MultiTensorScaleTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MultiTensorZeroPlan, PlanContractCuda, ::testing::Types<MultiTensorZeroTraits>);
}  // namespace contract

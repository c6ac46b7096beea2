// The matrix multiply plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/gemm_traits.hpp"
#include "contract/grouped_traits.hpp"
#include "contract/scaled_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(MatmulPlan, PlanContractCuda, ::testing::Types<MatmulTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScaledMatmulPlan, PlanContractCuda, ::testing::Types<ScaledMatmulTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LinearPlan, PlanContractCuda, ::testing::Types<LinearTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LinearBackwardPlan, PlanContractCuda, ::testing::Types<LinearBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GroupedLinearPlan, PlanContractCuda, ::testing::Types<GroupedLinearTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GroupedLinearBackwardPlan, PlanContractCuda, ::testing::Types<GroupedLinearBackwardTraits>);
}  // namespace contract

// The matrix multiply plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/gemm_traits.hpp"
#include "contract/grouped_traits.hpp"
#include "contract/scaled_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(MatmulPlan, PlanContract, ::testing::Types<MatmulTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScaledMatmulPlan, PlanContract, ::testing::Types<ScaledMatmulTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LinearPlan, PlanContract, ::testing::Types<LinearTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(LinearBackwardPlan, PlanContract, ::testing::Types<LinearBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GroupedLinearPlan, PlanContract, ::testing::Types<GroupedLinearTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GroupedLinearBackwardPlan, PlanContract, ::testing::Types<GroupedLinearBackwardTraits>);
}  // namespace contract

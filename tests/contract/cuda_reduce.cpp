// The reduction plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/reduce_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(ReducePlan, PlanContractCuda, ::testing::Types<ReduceTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ReduceBackwardPlan, PlanContractCuda, ::testing::Types<ReduceBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ReduceToPlan, PlanContractCuda, ::testing::Types<ReduceToTraits>);
}  // namespace contract

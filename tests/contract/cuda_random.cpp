// The random family's plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/random_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(RandomPlan, PlanContractCuda, ::testing::Types<RandomTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(DropoutPlan, PlanContractCuda, ::testing::Types<DropoutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(DropoutBackwardPlan, PlanContractCuda, ::testing::Types<DropoutBackwardTraits>);
}  // namespace contract

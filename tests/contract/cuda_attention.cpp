// The attention plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/attention_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(Attention, PlanContractCuda, AttentionPlans, PlanName);
}  // namespace contract

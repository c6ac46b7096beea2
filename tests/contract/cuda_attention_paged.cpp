// The paged-KV plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/attention_paged_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(PagedAttentionPlan, PlanContractCuda, ::testing::Types<PagedAttentionTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(PagedKvAppendPlan, PlanContractCuda, ::testing::Types<PagedKvAppendTraits>);
}  // namespace contract

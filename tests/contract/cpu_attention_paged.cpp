// The paged-KV plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/attention_paged_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(PagedAttentionPlan, PlanContract, ::testing::Types<PagedAttentionTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(PagedKvAppendPlan, PlanContract, ::testing::Types<PagedKvAppendTraits>);
}  // namespace contract

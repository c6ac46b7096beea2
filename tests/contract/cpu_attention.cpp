// The attention plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/attention_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(Attention, PlanContract, AttentionPlans, PlanName);
}  // namespace contract

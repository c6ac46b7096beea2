// AdafactorPlan in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/adafactor_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(AdafactorPlan, PlanContract, ::testing::Types<AdafactorTraits>);
}  // namespace contract

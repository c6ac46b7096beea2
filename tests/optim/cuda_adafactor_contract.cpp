// AdafactorPlan in the contract suite, CUDA checks (tests/contract/suite.hpp).
#include "contract/adafactor_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(AdafactorPlan, PlanContractCuda, ::testing::Types<AdafactorTraits>);
}  // namespace contract

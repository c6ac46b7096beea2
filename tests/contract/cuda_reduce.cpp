// The reduction plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/reduce_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(Reduce, PlanContractCuda, ReducePlans, PlanName);
}  // namespace contract

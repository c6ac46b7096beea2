// The RoPE plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/rope_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(Rope, PlanContractCuda, RopePlans, PlanName);
}  // namespace contract

// The indexing plans in the contract suite, CUDA checks (skip without a GPU).
#include "contract/indexing_traits.hpp"
#include "contract/masked_traits.hpp"
#include "contract/advanced_traits.hpp"
#include "contract/take_traits.hpp"
#include "contract/scatter_backward_traits.hpp"
#include "contract/cuda_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(EmbeddingPlan, PlanContractCuda, ::testing::Types<EmbeddingTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(EmbeddingBackwardPlan, PlanContractCuda, ::testing::Types<EmbeddingBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GatherPlan, PlanContractCuda, ::testing::Types<GatherTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScatterPlan, PlanContractCuda, ::testing::Types<ScatterTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScatterReduceBackwardPlan, PlanContractCuda, ::testing::Types<ScatterReduceBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexSelectPlan, PlanContractCuda, ::testing::Types<IndexSelectTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexUpdatePlan, PlanContractCuda, ::testing::Types<IndexUpdateTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NonzeroPlan, PlanContractCuda, ::testing::Types<NonzeroTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MaskedSelectPlan, PlanContractCuda, ::testing::Types<MaskedSelectTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MaskedScatterPlan, PlanContractCuda, ::testing::Types<MaskedScatterTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexGetPlan, PlanContractCuda, ::testing::Types<IndexGetTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexPutPlan, PlanContractCuda, ::testing::Types<IndexPutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TakePlan, PlanContractCuda, ::testing::Types<TakeTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(PutPlan, PlanContractCuda, ::testing::Types<PutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(OneHotPlan, PlanContractCuda, ::testing::Types<OneHotTraits>);
}  // namespace contract

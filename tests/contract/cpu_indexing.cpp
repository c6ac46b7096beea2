// The indexing plans in the contract suite, CPU checks and fuzz (tests/contract/suite.hpp).
#include "contract/indexing_traits.hpp"
#include "contract/masked_traits.hpp"
#include "contract/advanced_traits.hpp"
#include "contract/take_traits.hpp"
#include "contract/scatter_backward_traits.hpp"
#include "contract/cpu_suite.hpp"

namespace contract {
INSTANTIATE_TYPED_TEST_SUITE_P(EmbeddingPlan, PlanContract, ::testing::Types<EmbeddingTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(EmbeddingBackwardPlan, PlanContract, ::testing::Types<EmbeddingBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(GatherPlan, PlanContract, ::testing::Types<GatherTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScatterPlan, PlanContract, ::testing::Types<ScatterTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(ScatterReduceBackwardPlan, PlanContract, ::testing::Types<ScatterReduceBackwardTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexSelectPlan, PlanContract, ::testing::Types<IndexSelectTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexUpdatePlan, PlanContract, ::testing::Types<IndexUpdateTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(NonzeroPlan, PlanContract, ::testing::Types<NonzeroTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MaskedSelectPlan, PlanContract, ::testing::Types<MaskedSelectTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(MaskedScatterPlan, PlanContract, ::testing::Types<MaskedScatterTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexGetPlan, PlanContract, ::testing::Types<IndexGetTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(IndexPutPlan, PlanContract, ::testing::Types<IndexPutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(TakePlan, PlanContract, ::testing::Types<TakeTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(PutPlan, PlanContract, ::testing::Types<PutTraits>);
INSTANTIATE_TYPED_TEST_SUITE_P(OneHotPlan, PlanContract, ::testing::Types<OneHotTraits>);
}  // namespace contract

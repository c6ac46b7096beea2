"""The plan layer: descriptors (keyword construction, read-write fields) and
plans (``select(desc, stream=None, preference=None)``, ``workspace_size``,
``sku``, ``device``, ``descriptor``, ``run(stream=None, workspace=None,
**tensors)``). docs/PYTHON.md lists the classes; the C++ headers under
include/baracuda/ops/ state every rule."""
from ._C import (  # noqa: F401
    Backend, PlanPreference,
    ReduceKind, ReduceDescriptor, ReducePlan, ReduceBackwardPlan, ReduceToDescriptor, ReduceToPlan,
    UnaryOp, BinaryOp, OperandKind, ElementwiseOperand, UnaryDescriptor, BinaryDescriptor, UnaryPlan, BinaryPlan,
    UnaryBackwardDescriptor, UnaryBackwardPlan, BinaryBackwardDescriptor, BinaryBackwardPlan,
    GemmActivation, MatmulDescriptor, MatmulPlan, LinearDescriptor, LinearPlan, LinearBackwardDescriptor,
    LinearBackwardPlan,
    SoftmaxDescriptor, SoftmaxPlan, SoftmaxBackwardDescriptor, SoftmaxBackwardPlan,
    NormKind, NormDescriptor, NormPlan, NormBackwardDescriptor, NormBackwardPlan,
    LossReduction, CrossEntropyTarget, CrossEntropyDescriptor, CrossEntropyPlan, CrossEntropyBackwardDescriptor,
    CrossEntropyBackwardPlan,
    DiagonalAlign, AlibiMode, FlashSdpaDescriptor, FlashSdpaPlan, FlashSdpaBackwardPlan, SdpaDescriptor, SdpaPlan,
    SdpaBackwardPlan, PagedAttentionDescriptor, PagedAttentionPlan, PagedKvAppendDescriptor, PagedKvAppendPlan,
    RopePairs, RopePositions, RopeDescriptor, RopePlan, RopeBackwardPlan,
    EmbeddingDescriptor, EmbeddingPlan, EmbeddingGradLayout, EmbeddingBackwardDescriptor, EmbeddingBackwardPlan,
    AdamDescriptor, AdamPlan, FusedLinearCrossEntropyDescriptor, FusedLinearCrossEntropyPlan,
    RandomDistribution, RandomDescriptor, RandomPlan, DropoutDescriptor, DropoutPlan, DropoutBackwardDescriptor,
    DropoutBackwardPlan,
    GatherDescriptor, GatherPlan, ScatterReduce, ScatterDescriptor, ScatterPlan, ScatterReduceBackwardDescriptor,
    ScatterReduceBackwardPlan, IndexSelectDescriptor, IndexSelectPlan, IndexUpdateMode, IndexUpdateDescriptor,
    IndexUpdatePlan, TakeDescriptor, TakePlan, PutDescriptor, PutPlan, OneHotDescriptor, OneHotPlan,
    NonzeroDescriptor, NonzeroPlan, MaskedSelectDescriptor, MaskedSelectPlan, MaskedScatterDescriptor,
    MaskedScatterPlan,
)
from ._C import (  # noqa: F401,E402  (part B)
    IndexGetDescriptor, IndexGetPlan, IndexPutDescriptor, IndexPutPlan, GroupedLinearDescriptor, GroupedLinearPlan,
    GroupedLinearBackwardDescriptor, GroupedLinearBackwardPlan, Fp8Scaling, ScaledMatmulDescriptor, ScaledMatmulPlan,
)
from ._C import (  # noqa: F401,E402  (plans_optim.cpp: optimizers, gradient utilities, sampling, ternary, factories)
    SgdDescriptor, SgdPlan, LionDescriptor, LionPlan, AdafactorDescriptor, AdafactorPlan,
    NormType, TensorListDescriptor, GlobalNormDescriptor, GlobalNormPlan, ClipGradNormDescriptor, ClipGradNormPlan,
    NonFiniteCheckUnscalePlan, MultiTensorScaleDescriptor, MultiTensorScalePlan, MultiTensorZeroPlan,
    RandpermDescriptor, RandpermPlan, MultinomialDescriptor, MultinomialPlan,
    TernaryOp, TernaryDescriptor, TernaryPlan, TernaryBackwardDescriptor, TernaryBackwardPlan,
    FactoryOp, FactoryDescriptor, FactoryPlan,
)

// CPU reference of the embedding plans: the oracle. Plain loops over any
// strides. Every index is checked before anything is written (InvalidProblem
// naming the first bad one). The backward sums each row's contributions in
// position order in the accumulator the CUDA kernels use (f32 for f16 / bf16 /
// f32, f64 for f64), so the two backends agree bit for bit.
#pragma once
#include "baracuda/ops/indexing.hpp"

namespace baracuda::indexing::ref {

// Descriptors as validated by the plans (padding_idx resolved).
Status embedding_forward(const char* plan, const EmbeddingDescriptor& d, const EmbeddingArgs& a);
Status embedding_backward(const char* plan, const EmbeddingBackwardDescriptor& d, const EmbeddingBackwardArgs& a);

}  // namespace baracuda::indexing::ref

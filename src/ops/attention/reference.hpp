// CPU references for the attention family: straightforward loops over any
// strides, every score computed and accumulated in double. They are the oracle
// the CUDA paths are tested against. Arguments are already validated by the
// plan (shapes, dtypes, devices); views are in the plan's logical order.
#pragma once
#include "baracuda/ops/attention.hpp"

namespace baracuda::attention::ref {

Status sdpa_forward(const SdpaDescriptor& d, const SdpaArgs& a);
Status sdpa_backward(const SdpaDescriptor& d, const SdpaBackwardArgs& a);

// The flash reference recomputes the softmax from q and k in double; the
// backward reads dy, q, k, v (y and lse are validated by the plan but only the
// CUDA kernels read them: the reference computes the exact gradient).
// Varlen: cu_seqlens are host int32 arrays; bad offsets are an InvalidProblem.
Status flash_forward(const FlashSdpaDescriptor& d, const FlashSdpaArgs& a);
Status flash_backward(const FlashSdpaDescriptor& d, const FlashSdpaBackwardArgs& a);

}  // namespace baracuda::attention::ref

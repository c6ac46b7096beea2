// CPU reference of the grouped linear plans: the definitions of
// include/baracuda/ops/gemm.hpp ("Grouped linear") as loops in double over
// any strides, written directly (not through Problem), so the oracle stays
// independent of the per-group decomposition the CUDA route uses.
#pragma once
#include <cstdint>
#include <vector>

#include "baracuda/core/status.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda::gemm::ref {

// `offsets`: the G + 1 validated offsets, read from the host tensor.
Status run_grouped_linear(const GroupedLinearDescriptor& d, const std::vector<int64_t>& offsets,
                          const GroupedLinearArgs& a);
Status run_grouped_linear_backward(const GroupedLinearBackwardDescriptor& d, const std::vector<int64_t>& offsets,
                                   const GroupedLinearBackwardArgs& a);

}  // namespace baracuda::gemm::ref

// Shared strided-layout machinery (host side): dimension coalescing for
// elementwise loops and the canonical "kept dims x reduced dims" form of a
// reduction that every reduction backend consumes.
#pragma once
#include <cstdint>

#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// Drops extent-1 dims and merges dim i into i+1 when, for every operand,
// stride[i] == stride[i+1] * shape[i+1]. Keeps row-major linear order.
// `shape` has `rank` entries; `strides[k]` points at operand k's strides.
// Returns the new rank (0 means a single element, or an empty tensor if any
// extent was 0 - callers handle numel == 0 before calling).
int coalesce_dims(int rank, int64_t* shape, int num_operands, int64_t* const* strides);

// A reduction in canonical form. An output element is addressed by an index
// over the kept dims (row-major); its inputs by an index over the reduced dims
// (row-major, in the original axis order, which ArgMax/ArgMin report).
struct ReduceLayout {
  int n_kept = 0;
  int64_t kept_size[kMaxRank] = {};
  int64_t kept_in_stride[kMaxRank] = {};
  int64_t kept_out_stride[kMaxRank] = {};
  int n_red = 0;
  int64_t red_size[kMaxRank] = {};
  int64_t red_stride[kMaxRank] = {};
  int64_t num_out = 1;    // product of kept_size
  int64_t red_numel = 1;  // product of red_size (elements per output)
};

// in_shape / in_strides: the input view; axis_mask: bit i = axis i reduced;
// out_strides: the output's strides expressed in the INPUT's rank (entries of
// reduced axes are ignored). Extent-1 dims are dropped and mergeable
// neighbours merged within each group (kept dims only when both input and
// output strides merge).
ReduceLayout make_reduce_layout(const Dims& in_shape, const Dims& in_strides, uint32_t axis_mask,
                                const Dims& out_strides_in_rank);

}  // namespace baracuda::detail

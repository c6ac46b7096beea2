#include "core/elementwise_layout.hpp"

#include <algorithm>

#include "core/layout.hpp"

namespace baracuda::detail {

EwLayout make_ew_layout(const Dims& out_shape, int n_out, const Dims* const* out_strides, int n_in,
                        const Dims* in_shapes, const Dims* const* in_strides) {
  EwLayout L;
  const int R = out_shape.rank;
  L.outputs = n_out;
  L.operands = n_out + n_in;
  L.numel = shape_numel(out_shape);
  int64_t shape[kMaxRank];
  int64_t st[kEwMaxOperands][kMaxRank] = {};
  int lead_out = -1;  // the output whose memory order the walk follows
  for (int m = 0; m < n_out; ++m) {
    if (out_strides[m] == nullptr) continue;  // not written: all zero
    if (lead_out < 0) lead_out = m;
    for (int d = 0; d < R; ++d) st[m][d] = (*out_strides[m])[d];
  }
  for (int d = 0; d < R; ++d) shape[d] = out_shape[d];
  for (int k = 0; k < n_in; ++k) {
    if (in_strides[k] == nullptr) continue;  // scalar: all zero
    const Dims& s = in_shapes[k];
    const int lead = R - s.rank;  // missing leading dims broadcast
    for (int d = lead; d < R; ++d) st[n_out + k][d] = s[d - lead] == 1 ? 0 : (*in_strides[k])[d - lead];
  }
  // Order dims by decreasing output stride (a permuted output is walked in
  // its memory order); a stable insertion sort over <= 8 dims.
  int perm[kMaxRank];
  for (int d = 0; d < R; ++d) perm[d] = d;
  const int o = lead_out < 0 ? 0 : lead_out;
  std::stable_sort(perm, perm + R, [&](int x, int y) { return st[o][x] > st[o][y]; });
  int64_t pshape[kMaxRank];
  int64_t pst[kEwMaxOperands][kMaxRank];
  int64_t* ptrs[kEwMaxOperands];
  for (int d = 0; d < R; ++d) {
    pshape[d] = shape[perm[d]];
    for (int k = 0; k < L.operands; ++k) pst[k][d] = st[k][perm[d]];
  }
  for (int k = 0; k < L.operands; ++k) ptrs[k] = pst[k];
  L.rank = L.numel == 0 ? 0 : coalesce_dims(R, pshape, L.operands, ptrs);
  for (int d = 0; d < L.rank; ++d) {
    L.shape[d] = pshape[d];
    for (int k = 0; k < L.operands; ++k) L.stride[k][d] = pst[k][d];
  }
  return L;
}

int64_t ew_operand_extent(const EwLayout& L, int operand) {
  int64_t last = 0;
  for (int d = 0; d < L.rank; ++d) last += (L.shape[d] - 1) * L.stride[operand][d];
  return last + 1;
}

}  // namespace baracuda::detail

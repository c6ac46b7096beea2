#include "core/elementwise_layout.hpp"

#include <algorithm>

#include "core/layout.hpp"

namespace baracuda::detail {

EwLayout make_ew_layout(const Dims& out_shape, const Dims& out_strides, int n_in, const Dims* in_shapes,
                        const Dims* const* in_strides) {
  EwLayout L;
  const int R = out_shape.rank;
  L.operands = 1 + n_in;
  L.numel = shape_numel(out_shape);
  int64_t shape[kMaxRank];
  int64_t st[kEwMaxOperands][kMaxRank] = {};
  for (int d = 0; d < R; ++d) {
    shape[d] = out_shape[d];
    st[0][d] = out_strides[d];
  }
  for (int k = 0; k < n_in; ++k) {
    if (in_strides[k] == nullptr) continue;  // scalar: all zero
    const Dims& s = in_shapes[k];
    const int lead = R - s.rank;  // missing leading dims broadcast
    for (int d = lead; d < R; ++d) st[1 + k][d] = s[d - lead] == 1 ? 0 : (*in_strides[k])[d - lead];
  }
  // Order dims by decreasing output stride (a permuted output is walked in
  // its memory order); a stable insertion sort over <= 8 dims.
  int perm[kMaxRank];
  for (int d = 0; d < R; ++d) perm[d] = d;
  std::stable_sort(perm, perm + R, [&](int x, int y) { return st[0][x] > st[0][y]; });
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

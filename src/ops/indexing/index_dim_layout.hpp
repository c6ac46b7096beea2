// The [outer, S, inner] split of the index_select / index_* views, shared by
// the plans (CUDA launches) and the CPU reference: the dims before `dim` and
// after it, each coalesced over every operand's strides (operands: 0 self,
// 1 out, 2 source; out and source have extent n at dim, self has S).
#pragma once
#include <cstdint>

#include "baracuda/core/tensor.hpp"
#include "core/layout.hpp"
#include "ops/indexing/index_dim_launch.hpp"

namespace baracuda::indexing::detail {

struct IndexDimLayout {
  int64_t outer = 1, S = 0, n = 0, inner = 1;
  cuda::DimMap outer_map, inner_map;
  int64_t dim_stride[3] = {0, 0, 0};
};

// `strides[k]` (k < ops) of operand k, rank = self_shape.rank; dim in [0, rank).
inline IndexDimLayout index_dim_layout(const Dims& self_shape, int dim, int64_t n, const Dims* const* strides,
                                       int ops) {
  IndexDimLayout L;
  L.S = self_shape[dim];
  L.n = n;
  auto build = [&](int lo, int hi, cuda::DimMap& m, int64_t& count) {
    count = 1;
    m.rank = hi - lo;
    for (int d = lo; d < hi; ++d) {
      m.shape[d - lo] = self_shape[d];
      count *= self_shape[d];
      for (int k = 0; k < ops; ++k) m.stride[k][d - lo] = (*strides[k])[d];
    }
    int64_t* s[3] = {m.stride[0], m.stride[1], m.stride[2]};
    m.rank = count == 0 ? 0 : baracuda::detail::coalesce_dims(m.rank, m.shape, ops, s);
  };
  build(0, dim, L.outer_map, L.outer);
  build(dim + 1, self_shape.rank, L.inner_map, L.inner);
  for (int k = 0; k < ops; ++k) L.dim_stride[k] = (*strides[k])[dim];
  return L;
}

// Operand `op`'s element offset of linear index p of a map (host side).
inline int64_t map_offset(const cuda::DimMap& m, int64_t p, int op) {
  int64_t o = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t c = d > 0 ? p % m.shape[d] : p;
    p = d > 0 ? p / m.shape[d] : 0;
    o += c * m.stride[op][d];
  }
  return o;
}

}  // namespace baracuda::indexing::detail

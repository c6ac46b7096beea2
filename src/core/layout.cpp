#include "core/layout.hpp"

namespace baracuda::detail {

int coalesce_dims(int rank, int64_t* shape, int num_operands, int64_t* const* strides) {
  // First drop extent-1 dims (they never change an offset).
  int r = 0;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] == 1) continue;
    shape[r] = shape[i];
    for (int k = 0; k < num_operands; ++k) strides[k][r] = strides[k][i];
    ++r;
  }
  if (r == 0) return 0;
  // Merge from the innermost dim outwards.
  int out = 0;  // index of the current merged dim (front of the kept list)
  for (int i = 1; i < r; ++i) {
    bool can = true;
    for (int k = 0; k < num_operands && can; ++k) can = strides[k][out] == strides[k][i] * shape[i];
    if (can) {
      shape[out] *= shape[i];
      for (int k = 0; k < num_operands; ++k) strides[k][out] = strides[k][i];
    } else {
      ++out;
      shape[out] = shape[i];
      for (int k = 0; k < num_operands; ++k) strides[k][out] = strides[k][i];
    }
  }
  return out + 1;
}

ReduceLayout make_reduce_layout(const Dims& in_shape, const Dims& in_strides, uint32_t axis_mask,
                                const Dims& out_strides_in_rank) {
  ReduceLayout L;
  int64_t ks[kMaxRank], kis[kMaxRank], kos[kMaxRank], rs[kMaxRank], ris[kMaxRank];
  int nk = 0, nr = 0;
  for (int i = 0; i < in_shape.rank; ++i) {
    if (axis_mask & (1u << i)) {
      rs[nr] = in_shape[i];
      ris[nr] = in_strides[i];
      ++nr;
    } else {
      ks[nk] = in_shape[i];
      kis[nk] = in_strides[i];
      kos[nk] = out_strides_in_rank[i];
      ++nk;
    }
  }
  int64_t* kst[2] = {kis, kos};
  int64_t* rst[1] = {ris};
  L.n_kept = coalesce_dims(nk, ks, 2, kst);
  L.n_red = coalesce_dims(nr, rs, 1, rst);
  for (int i = 0; i < L.n_kept; ++i) {
    L.kept_size[i] = ks[i];
    L.kept_in_stride[i] = kis[i];
    L.kept_out_stride[i] = kos[i];
    L.num_out *= ks[i];
  }
  for (int i = 0; i < L.n_red; ++i) {
    L.red_size[i] = rs[i];
    L.red_stride[i] = ris[i];
    L.red_numel *= rs[i];
  }
  return L;
}

}  // namespace baracuda::detail

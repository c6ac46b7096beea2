// CPU reference of advanced indexing (see advanced_reference.hpp).
#include "ops/indexing/advanced_reference.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/index_check.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;
using baracuda::detail::store_i;
using cuda::AdvancedLaunch;
using cuda::AdvancedMap;

namespace {

Dims result_dims(const AdvancedMap& m) {
  Dims r = Dims::of_rank(m.rank);
  for (int k = 0; k < m.rank; ++k) r[k] = m.shape[k];
  return r;
}

// Per position r of R: the element offset in x / self through `x_stride`
// (strides per self dim), and the offset in the R-indexed operand through
// `r_stride` (per R axis). Indices are wrapped; all were checked before.
struct Walk {
  const AdvancedLaunch& l;
  DType index_dtype;
  int64_t c[kMaxRank] = {};

  void seek(int64_t r) {
    for (int k = l.m.rank - 1; k >= 0; --k) {
      c[k] = r % l.m.shape[k];
      r /= l.m.shape[k];
    }
  }
  int64_t index_value(int j) const {
    int64_t o = 0;
    for (int k = 0; k < l.m.rank; ++k) o += c[k] * l.m.idx_stride[j][k];
    int64_t v = load_i(l.m.idx[j], index_dtype, o);
    return v < 0 ? v + l.m.size[j] : v;
  }
  int64_t base_offset(const int64_t* stride) const {
    int64_t o = 0;
    for (int k = 0; k < l.m.rank; ++k)
      if (l.m.axis_dim[k] >= 0) o += c[k] * stride[l.m.axis_dim[k]];
    for (int j = 0; j < l.m.n_idx; ++j) o += index_value(j) * stride[l.m.dims[j]];
    return o;
  }
  int64_t r_offset(const int64_t* stride) const {
    int64_t o = 0;
    for (int k = 0; k < l.m.rank; ++k) o += c[k] * stride[k];
    return o;
  }
};

// The first bad index in position order (within a position, the lowest dim).
Status check_all(const char* plan, const AdvancedLaunch& l) {
  Walk w{l, l.index_dtype};
  for (int64_t r = 0; r < l.m.numel; ++r) {
    w.seek(r);
    for (int j = 0; j < l.m.n_idx; ++j) {
      int64_t o = 0;
      for (int k = 0; k < l.m.rank; ++k) o += w.c[k] * l.m.idx_stride[j][k];
      const int64_t v = load_i(l.m.idx[j], l.index_dtype, o), s = l.m.size[j];
      if (v < -s || v >= s)
        return baracuda::detail::invalid(plan, "index position ", detail::unravel(result_dims(l.m), r), " (position ",
                                         r, ") of indices[", l.m.dims[j], "] is ", v, ", outside [", -s, ", ", s,
                                         ") (the size of dim ", l.m.dims[j], "; the first bad index)");
    }
  }
  return Status::ok();
}

// Row-major coordinates of self element q -> offset through `stride`.
int64_t self_offset(const AdvancedMap& m, int64_t q, const int64_t* stride) {
  int64_t o = 0;
  for (int d = m.self_rank - 1; d >= 0; --d) {
    o += (q % m.self_shape[d]) * stride[d];
    q /= m.self_shape[d];
  }
  return o;
}

template <class Acc>
Acc load_acc(const void* base, DType t, int64_t off) {
  if constexpr (std::is_same_v<Acc, uint64_t>) return static_cast<uint64_t>(load_i(base, t, off));
  else return static_cast<Acc>(load_f(base, t, off));
}

template <class Acc>
void store_acc(void* base, DType t, int64_t off, Acc v) {
  if constexpr (std::is_same_v<Acc, uint64_t>) store_i(base, t, off, static_cast<int64_t>(v));
  else store_f(base, t, off, static_cast<double>(v));
}

// Each run of equal destinations (in position order) summed from out's value
// (self, already copied when out of place) and stored once.
template <class Acc>
void accumulate_runs(const AdvancedLaunch& l, const std::vector<std::pair<int64_t, int64_t>>& keyed) {
  for (size_t i = 0; i < keyed.size();) {
    size_t e = i;
    const int64_t q = keyed[i].first;
    const int64_t oo = self_offset(l.m, q, l.out_stride);
    Acc acc = load_acc<Acc>(l.out, l.dtype, oo);
    for (; e < keyed.size() && keyed[e].first == q; ++e) acc = acc + load_acc<Acc>(l.values, l.dtype, keyed[e].second);
    store_acc<Acc>(l.out, l.dtype, oo, acc);
    i = e;
  }
}

}  // namespace

Status index_get(const char* plan, const AdvancedLaunch& l) {
  BARACUDA_RETURN_IF_ERROR(check_all(plan, l));
  const int64_t es = l.elem_bytes;
  const auto* x = static_cast<const char*>(l.x);
  auto* out = static_cast<char*>(l.out);
  Walk w{l, l.index_dtype};
  for (int64_t r = 0; r < l.m.numel; ++r) {
    w.seek(r);
    std::memcpy(out + w.r_offset(l.out_stride) * es, x + w.base_offset(l.x_stride) * es, static_cast<size_t>(es));
  }
  return Status::ok();
}

Status index_put(const char* plan, const AdvancedLaunch& l) {
  BARACUDA_RETURN_IF_ERROR(check_all(plan, l));
  const int64_t es = l.elem_bytes;
  const auto* self = static_cast<const char*>(l.x);
  const auto* values = static_cast<const char*>(l.values);
  auto* out = static_cast<char*>(l.out);
  if (!l.in_place)
    for (int64_t q = 0; q < l.m.self_numel; ++q)
      std::memcpy(out + self_offset(l.m, q, l.out_stride) * es, self + self_offset(l.m, q, l.x_stride) * es,
                  static_cast<size_t>(es));
  Walk w{l, l.index_dtype};
  if (!l.accumulate) {
    // Position order: a later position overwrites an earlier one (last wins).
    for (int64_t r = 0; r < l.m.numel; ++r) {
      w.seek(r);
      std::memcpy(out + w.base_offset(l.out_stride) * es, values + w.r_offset(l.val_stride) * es,
                  static_cast<size_t>(es));
    }
    return Status::ok();
  }
  // (destination as self's row-major offset, values offset), stably sorted by
  // destination: each destination's contributions together, in position order.
  std::vector<std::pair<int64_t, int64_t>> keyed(static_cast<size_t>(l.m.numel));
  for (int64_t r = 0; r < l.m.numel; ++r) {
    w.seek(r);
    keyed[static_cast<size_t>(r)] = {w.base_offset(l.m.self_rm_stride), w.r_offset(l.val_stride)};
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  switch (l.dtype) {
    case DType::F64: accumulate_runs<double>(l, keyed); break;
    case DType::I32:
    case DType::I64: accumulate_runs<uint64_t>(l, keyed); break;
    default: accumulate_runs<float>(l, keyed); break;
  }
  return Status::ok();
}

}  // namespace baracuda::indexing::ref

// CPU reference of IndexSelectPlan / IndexUpdatePlan (see index_dim_reference.hpp).
#include "ops/indexing/index_dim_reference.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/index_dim_layout.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;
using baracuda::detail::store_i;
using indexing::detail::IndexDimLayout;
using indexing::detail::map_offset;

namespace {

bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

// One element copied exactly (integers as integers).
void copy_elem(DType t, void* dst, int64_t doff, const void* src, int64_t soff) {
  if (is_int(t)) store_i(dst, t, doff, load_i(src, t, soff));
  else store_f(dst, t, doff, load_f(src, t, soff));
}

// Reads the n indices (wrapping [-S, 0) when `wraps`); the first one outside
// the accepted range is an error.
Status read_indices(const char* plan, DType index_dtype, const TensorRef& index, int64_t n, int64_t S, int dim,
                    bool wraps, std::vector<int64_t>* out) {
  const int64_t stride = index.shape.rank == 0 ? 0 : index.strides[0];
  out->resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = load_i(index.data, index_dtype, k * stride);
    const int64_t lo = wraps ? -S : 0;
    if (v < lo || v >= S)
      return baracuda::detail::invalid(plan, "index position ", k, " is ", v, ", outside [", lo, ", ", S,
                                       ") (self's extent at dim ", dim, "; the first bad index)");
    if (v < 0) v += S;
    (*out)[static_cast<size_t>(k)] = v;
  }
  return Status::ok();
}

// The new value of one element of a destination slice from its contributions
// (positions `run`, in order), as the CUDA kernels compute it.
template <class Acc>
void combine(const IndexUpdateDescriptor& d, const IndexUpdateArgs& a, int64_t self_off, int64_t out_off,
             int64_t src_base, int64_t src_dim_stride, const std::vector<int64_t>& run) {
  const DType t = d.dtype;
  auto src = [&](int64_t pos) { return static_cast<Acc>(load_f(a.source.data, t, src_base + pos * src_dim_stride)); };
  if (d.mode == IndexUpdateMode::Fill) {
    if (is_int(t)) store_i(a.out.data, t, out_off, static_cast<int64_t>(d.value));
    else store_f(a.out.data, t, out_off, d.value);
    return;
  }
  if (d.mode == IndexUpdateMode::Copy) {
    copy_elem(t, a.out.data, out_off, a.source.data, src_base + run.back() * src_dim_stride);
    return;
  }
  const Acc self_v = static_cast<Acc>(load_f(a.self.data, t, self_off));
  Acc acc = self_v;
  switch (d.mode) {
    case IndexUpdateMode::Add: {
      const Acc alpha = static_cast<Acc>(d.alpha);
      for (int64_t p : run) acc = std::fma(alpha, src(p), acc);
      break;
    }
    case IndexUpdateMode::Prod:
      acc = d.include_self ? self_v : Acc(1);
      for (int64_t p : run) acc = acc * src(p);
      break;
    case IndexUpdateMode::Mean: {
      acc = d.include_self ? self_v : Acc(0);
      for (int64_t p : run) acc = acc + src(p);
      const int64_t count = static_cast<int64_t>(run.size()) + (d.include_self ? 1 : 0);
      acc = acc / static_cast<Acc>(count);
      break;
    }
    case IndexUpdateMode::Amax:
    case IndexUpdateMode::Amin: {
      const bool mx = d.mode == IndexUpdateMode::Amax;
      size_t j = 0;
      acc = d.include_self ? self_v : src(run[j++]);
      for (; j < run.size(); ++j) {
        const Acc v = src(run[j]);
        if (std::isnan(v) || (mx ? v > acc : v < acc)) acc = v;  // a NaN acc stays
      }
      break;
    }
    default: break;
  }
  store_f(a.out.data, t, out_off, static_cast<double>(acc));
}

}  // namespace

Status index_select(const char* plan, const IndexSelectDescriptor& d, const IndexSelectArgs& a) {
  const int dim = static_cast<int>(d.dim);
  const int64_t n = shape_numel(d.index_shape);
  const Dims* strides[2] = {&a.self.strides, &a.out.strides};
  const IndexDimLayout L = indexing::detail::index_dim_layout(d.self_shape, dim, n, strides, 2);
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_indices(plan, d.index_dtype, a.index, n, L.S, dim, false, &idx));
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < L.inner; ++i) {
        const int64_t s = map_offset(L.outer_map, o, 0) + idx[static_cast<size_t>(k)] * L.dim_stride[0] +
                          map_offset(L.inner_map, i, 0);
        const int64_t t = map_offset(L.outer_map, o, 1) + k * L.dim_stride[1] + map_offset(L.inner_map, i, 1);
        copy_elem(d.dtype, a.out.data, t, a.self.data, s);
      }
  return Status::ok();
}

Status index_update(const char* plan, const IndexUpdateDescriptor& d, const IndexUpdateArgs& a) {
  const int dim = static_cast<int>(d.dim);
  const int64_t n = shape_numel(d.index_shape);
  const bool has_src = d.mode != IndexUpdateMode::Fill;
  const Dims* strides[3] = {&a.self.strides, &a.out.strides, has_src ? &a.source.strides : &a.self.strides};
  const IndexDimLayout L = indexing::detail::index_dim_layout(d.self_shape, dim, n, strides, 3);
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(
      read_indices(plan, d.index_dtype, a.index, n, L.S, dim, d.mode == IndexUpdateMode::Fill, &idx));
  // Each destination slice's contributions, in position order.
  std::vector<std::vector<int64_t>> runs(static_cast<size_t>(L.S));
  for (int64_t k = 0; k < n; ++k) runs[static_cast<size_t>(idx[static_cast<size_t>(k)])].push_back(k);
  const bool in_place = a.out.data == a.self.data;
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t s = 0; s < L.S; ++s) {
      const std::vector<int64_t>& run = runs[static_cast<size_t>(s)];
      if (run.empty() && in_place) continue;  // untouched
      for (int64_t i = 0; i < L.inner; ++i) {
        const int64_t self_off = map_offset(L.outer_map, o, 0) + s * L.dim_stride[0] + map_offset(L.inner_map, i, 0);
        const int64_t out_off = map_offset(L.outer_map, o, 1) + s * L.dim_stride[1] + map_offset(L.inner_map, i, 1);
        if (run.empty()) {
          copy_elem(d.dtype, a.out.data, out_off, a.self.data, self_off);
          continue;
        }
        const int64_t src_base = has_src ? map_offset(L.outer_map, o, 2) + map_offset(L.inner_map, i, 2) : 0;
        if (d.dtype == DType::F64)
          combine<double>(d, a, self_off, out_off, src_base, L.dim_stride[2], run);
        else
          combine<float>(d, a, self_off, out_off, src_base, L.dim_stride[2], run);
      }
    }
  return Status::ok();
}

}  // namespace baracuda::indexing::ref

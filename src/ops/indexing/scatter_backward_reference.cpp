// CPU reference of ScatterReduceBackwardPlan (see scatter_backward_reference.hpp).
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/scatter_backward_combine.hpp"
#include "ops/indexing/scatter_backward_reference.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

namespace {

void coords_of(const Dims& shape, int64_t p, int64_t* c) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    c[d] = p % shape[d];
    p /= shape[d];
  }
}

int64_t offset(const int64_t* c, const Dims& strides, int rank) {
  int64_t o = 0;
  for (int d = 0; d < rank; ++d) o += c[d] * strides[d];
  return o;
}

template <class Acc>
void backward_typed(const ScatterReduceBackwardDescriptor& d, const ScatterReduceBackwardArgs& a,
                    const std::vector<int64_t>& idx) {
  const int r = d.self_shape.rank;
  const DType t = d.dtype;
  const int64_t m = shape_numel(d.self_shape), n = shape_numel(d.index_shape);
  int64_t c[kMaxRank] = {};
  // Each destination's members (index positions), in position order.
  std::vector<std::vector<int64_t>> runs(static_cast<size_t>(m));
  for (int64_t p = 0; p < n; ++p) {
    coords_of(d.index_shape, p, c);
    c[d.dim] = idx[static_cast<size_t>(p)];
    int64_t lin = 0;
    for (int k = 0; k < r; ++k) lin = lin * d.self_shape[k] + c[k];
    runs[static_cast<size_t>(lin)].push_back(p);
  }
  // src larger than index: the elements no index position covers get 0.
  if (d.compute_grad_src && !(d.src_shape == d.index_shape)) {
    const int64_t ns = shape_numel(d.src_shape);
    for (int64_t p = 0; p < ns; ++p) {
      coords_of(d.src_shape, p, c);
      bool inside = true;
      for (int k = 0; k < r; ++k) inside = inside && c[k] < d.index_shape[k];
      if (!inside) store_f(a.grad_src.data, t, offset(c, a.grad_src.strides, r), 0.0);
    }
  }
  const bool values = d.reduce == ScatterReduce::Prod || d.reduce == ScatterReduce::Amax ||
                      d.reduce == ScatterReduce::Amin;
  const bool with_result = values && a.result.data != nullptr;
  for (int64_t q = 0; q < m; ++q) {
    coords_of(d.self_shape, q, c);
    const std::vector<int64_t>& run = runs[static_cast<size_t>(q)];
    const Acc g = static_cast<Acc>(load_f(a.grad.data, t, offset(c, a.grad.strides, r)));
    if (run.empty()) {
      if (d.compute_grad_self)
        store_f(a.grad_self.data, t, offset(c, a.grad_self.strides, r),
                load_f(a.grad.data, t, offset(c, a.grad.strides, r)));
      continue;
    }
    const Acc self = values ? static_cast<Acc>(load_f(a.self.data, t, offset(c, a.self.strides, r))) : Acc(0);
    const Acc res = with_result ? static_cast<Acc>(load_f(a.result.data, t, offset(c, a.result.strides, r))) : Acc(0);
    auto src_at = [&](long long j) -> Acc {
      int64_t cc[kMaxRank] = {};
      coords_of(d.index_shape, run[static_cast<size_t>(j)], cc);
      return static_cast<Acc>(load_f(a.src.data, t, offset(cc, a.src.strides, r)));
    };
    auto put_src = [&](long long j, Acc v) {
      int64_t cc[kMaxRank] = {};
      coords_of(d.index_shape, run[static_cast<size_t>(j)], cc);
      store_f(a.grad_src.data, t, offset(cc, a.grad_src.strides, r), static_cast<double>(v));
    };
    const Acc gs = detail::scatter_backward_run<Acc>(static_cast<int>(d.reduce), d.include_self, d.compute_grad_src,
                                                     g, self, res, static_cast<long long>(run.size()), src_at,
                                                     put_src);
    if (d.compute_grad_self) store_f(a.grad_self.data, t, offset(c, a.grad_self.strides, r), static_cast<double>(gs));
  }
}

}  // namespace

Status scatter_backward(const char* plan, const ScatterReduceBackwardDescriptor& d,
                        const ScatterReduceBackwardArgs& a) {
  const int64_t n = shape_numel(d.index_shape), size = d.self_shape[d.dim];
  std::vector<int64_t> idx(static_cast<size_t>(n));
  int64_t c[kMaxRank] = {};
  for (int64_t p = 0; p < n; ++p) {
    coords_of(d.index_shape, p, c);
    const int64_t v = load_i(a.index.data, d.index_dtype, offset(c, a.index.strides, d.index_shape.rank));
    if (v < 0 || v >= size) {
      Dims cd = Dims::of_rank(d.index_shape.rank);
      for (int k = 0; k < cd.rank; ++k) cd[k] = c[k];
      return baracuda::detail::invalid(plan, "index element ", cd, " (position ", p, ") is ", v, ", outside [0, ",
                                       size, ") (the size of dim ", d.dim, "; the first bad index)");
    }
    idx[static_cast<size_t>(p)] = v;
  }
  if (d.dtype == DType::F64) backward_typed<double>(d, a, idx);
  else backward_typed<float>(d, a, idx);
  return Status::ok();
}

}  // namespace baracuda::indexing::ref

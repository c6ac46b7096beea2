#include "ops/gemm/grouped_reference.hpp"

#include "core/host_elements.hpp"
#include "ops/gemm/reference.hpp"

namespace baracuda::gemm::ref {

using baracuda::detail::load_f;
using baracuda::detail::parallel_for;
using baracuda::detail::saturating_product;
using baracuda::detail::store_f;

namespace {

// Element offsets of the per-group (or shared) weight / bias tensors.
struct GroupedParams {
  bool shared = false;
  Dims w_strides, b_strides;
  int64_t w(int64_t g, int64_t n, int64_t k) const {
    return shared ? n * w_strides[0] + k * w_strides[1] : g * w_strides[0] + n * w_strides[1] + k * w_strides[2];
  }
  int64_t b(int64_t g, int64_t n) const { return shared ? n * b_strides[0] : g * b_strides[0] + n * b_strides[1]; }
};

// The group of every used row r < offsets[G].
std::vector<int64_t> group_of_rows(const std::vector<int64_t>& offsets) {
  std::vector<int64_t> grp(static_cast<size_t>(offsets.back()));
  for (size_t g = 0; g + 1 < offsets.size(); ++g)
    for (int64_t r = offsets[g]; r < offsets[g + 1]; ++r) grp[static_cast<size_t>(r)] = static_cast<int64_t>(g);
  return grp;
}

}  // namespace

Status run_grouped_linear(const GroupedLinearDescriptor& d, const std::vector<int64_t>& offsets,
                          const GroupedLinearArgs& a) {
  const DType t = d.dtype;
  const int64_t N = d.out_features, K = d.in_features, R = offsets.back();
  GroupedParams P{d.shared_weight, a.weight.strides, a.bias.strides};
  const std::vector<int64_t> grp = group_of_rows(offsets);
  parallel_for(R, saturating_product({N, K + 1}), [&](int64_t r) {
    const int64_t g = grp[static_cast<size_t>(r)];
    for (int64_t n = 0; n < N; ++n) {
      double pre = 0;
      for (int64_t k = 0; k < K; ++k)
        pre += load_f(a.x.data, t, r * a.x.strides[0] + k * a.x.strides[1]) * load_f(a.weight.data, t, P.w(g, n, k));
      if (d.has_bias) pre += load_f(a.bias.data, t, P.b(g, n));
      if (d.save_aux) store_f(a.aux.data, t, r * a.aux.strides[0] + n * a.aux.strides[1], pre);
      store_f(a.y.data, t, r * a.y.strides[0] + n * a.y.strides[1], activation(d.activation, pre));
    }
  });
  return Status::ok();
}

Status run_grouped_linear_backward(const GroupedLinearBackwardDescriptor& d, const std::vector<int64_t>& offsets,
                                   const GroupedLinearBackwardArgs& a) {
  const GroupedLinearDescriptor& f = d.forward;
  const DType t = f.dtype;
  const int64_t G = f.groups, N = f.out_features, K = f.in_features, R = offsets.back();
  const bool act = f.activation != GemmActivation::None;
  GroupedParams P{f.shared_weight, a.weight.strides, Dims{}};
  // g = dy * act'(pre) over the used rows, in double, [R, N].
  std::vector<double> g(static_cast<size_t>(R * N));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double v = load_f(a.dy.data, t, r * a.dy.strides[0] + n * a.dy.strides[1]);
      if (act) {
        const double pre = load_f(a.aux.data, t, r * a.aux.strides[0] + n * a.aux.strides[1]);
        v = f.activation == GemmActivation::Relu ? (pre > 0 ? v : 0.0) : v * activation_grad(f.activation, pre);
      }
      g[static_cast<size_t>(r * N + n)] = v;
    }
  auto G_at = [&](int64_t r, int64_t n) { return g[static_cast<size_t>(r * N + n)]; };
  if (d.need_dx) {
    const std::vector<int64_t> grp = group_of_rows(offsets);
    parallel_for(R, saturating_product({K, N}), [&](int64_t r) {
      const int64_t e = grp[static_cast<size_t>(r)];
      for (int64_t k = 0; k < K; ++k) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) s += G_at(r, n) * load_f(a.weight.data, t, P.w(e, n, k));
        store_f(a.dx.data, t, r * a.dx.strides[0] + k * a.dx.strides[1], s);
      }
    });
  }
  // dw / db: per group over its rows, or (shared) once over every used row.
  const int64_t slices = f.shared_weight ? 1 : G;
  auto rows_of = [&](int64_t e, int64_t* lo, int64_t* hi) {
    *lo = f.shared_weight ? 0 : offsets[static_cast<size_t>(e)];
    *hi = f.shared_weight ? R : offsets[static_cast<size_t>(e) + 1];
  };
  if (d.need_dw) {
    const Dims& ws = a.dw.strides;
    parallel_for(slices * N, saturating_product({K, R / slices + 1}), [&](int64_t en) {
      const int64_t e = en / N, n = en % N;
      int64_t lo, hi;
      rows_of(e, &lo, &hi);
      const int64_t base = f.shared_weight ? n * ws[0] : e * ws[0] + n * ws[1];
      const int64_t ks = ws[ws.rank - 1];
      for (int64_t k = 0; k < K; ++k) {
        double s = 0;
        for (int64_t r = lo; r < hi; ++r) s += G_at(r, n) * load_f(a.x.data, t, r * a.x.strides[0] + k * a.x.strides[1]);
        store_f(a.dw.data, t, base + k * ks, s);
      }
    });
  }
  if (d.need_db) {
    const Dims& bs = a.db.strides;
    for (int64_t e = 0; e < slices; ++e) {
      int64_t lo, hi;
      rows_of(e, &lo, &hi);
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t r = lo; r < hi; ++r) s += G_at(r, n);
        store_f(a.db.data, t, f.shared_weight ? n * bs[0] : e * bs[0] + n * bs[1], s);
      }
    }
  }
  return Status::ok();
}

}  // namespace baracuda::gemm::ref

#include "ops/optim/adafactor_reference.hpp"

#include <cstdint>
#include <vector>

#include "core/host_elements.hpp"
#include "ops/optim/adafactor_math.hpp"

namespace baracuda::optim::ref {

namespace af = baracuda::optim::adafactor;

namespace {

// Element offsets of a view in row-major order of its shape.
std::vector<int64_t> offsets(const Dims& shape, const Dims& strides) {
  const int64_t n = shape_numel(shape);
  std::vector<int64_t> o(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, off = 0;
    for (int dim = shape.rank - 1; dim >= 0; --dim) {
      off += (rest % shape[dim]) * strides[dim];
      rest /= shape[dim];
    }
    o[static_cast<size_t>(e)] = off;
  }
  return o;
}

// A state tensor read from `in` and written to `out` (the same view in place).
struct State {
  const float* in;
  float* out;
  std::vector<int64_t> oi, oo;
  State(const TensorRef& i, const TensorMut& o)
      : in(static_cast<const float*>(i.data)), out(static_cast<float*>(o.data)), oi(offsets(i.shape, i.strides)),
        oo(offsets(o.shape, o.strides)) {}
  float get(int64_t e) const { return in[oi[static_cast<size_t>(e)]]; }
  void set(int64_t e, float v) { out[oo[static_cast<size_t>(e)]] = v; }
};

}  // namespace

Status adafactor(const AdafactorDescriptor& d, double eps1, const AdafactorArgs& a) {
  const bool oop = d.out_of_place;
  double t = static_cast<double>(a.step), lr = d.lr;
  if (d.device_scalars) {
    const float step = exact::add(*static_cast<const float*>(a.step_tensor.data), 1.0f);  // torch: step_t += 1 (f32)
    *static_cast<float*>(oop ? a.step_out.data : a.step_tensor.data) = step;
    t = step;
    lr = *static_cast<const float*>(a.lr_tensor.data);
  }
  const af::Scalars sc = af::make_scalars(t, lr, d.beta2_decay, d.weight_decay);
  const float eps1f = static_cast<float>(eps1), eps1sq = static_cast<float>(eps1 * eps1);

  for (size_t i = 0; i < d.shapes.size(); ++i) {
    const Dims& shape = d.shapes[i];
    const int64_t n = shape_numel(shape);
    if (n == 0) {
      // Nothing to update; out of place, a state with elements ([R, 0]'s
      // row_var) is carried over unchanged.
      if (oop && shape.rank >= 2)
        for (State st : {State(a.row_vars[i], a.row_vars_out[i]), State(a.col_vars[i], a.col_vars_out[i])})
          for (int64_t e = 0; e < static_cast<int64_t>(st.oi.size()); ++e) st.set(e, st.get(e));
      continue;
    }
    const TensorMut& pout = oop ? a.params_out[i] : a.params[i];
    const std::vector<int64_t> op = offsets(shape, a.params[i].strides), og = offsets(shape, a.grads[i].strides),
                               oo = offsets(shape, pout.strides);
    std::vector<float> p(static_cast<size_t>(n)), g(static_cast<size_t>(n)), u(static_cast<size_t>(n));
    double psum = 0.0;
    for (int64_t e = 0; e < n; ++e) {
      p[e] = static_cast<float>(baracuda::detail::load_f(a.params[i].data, d.dtype, op[e]));
      const float ge = static_cast<float>(baracuda::detail::load_f(a.grads[i].data, d.dtype, og[e]));
      g[e] = d.maximize ? -ge : ge;
      psum += static_cast<double>(p[e]) * p[e];
    }
    if (shape.rank >= 2) {
      const int64_t R = shape[shape.rank - 2], C = shape[shape.rank - 1], B = n / (R * C);
      State rv(a.row_vars[i], oop ? a.row_vars_out[i] : a.row_vars[i]);
      State cv(a.col_vars[i], oop ? a.col_vars_out[i] : a.col_vars[i]);
      std::vector<float> rnew(static_cast<size_t>(B * R)), cnew(static_cast<size_t>(B * C));
      for (int64_t b = 0; b < B; ++b) {
        const float* gb = g.data() + b * R * C;
        double rsum = 0.0;
        for (int64_t r = 0; r < R; ++r) {
          double s = 0.0;
          for (int64_t c = 0; c < C; ++c) s += static_cast<double>(gb[r * C + c]) * gb[r * C + c];
          const float x = af::lerp(rv.get(b * R + r), af::mean_square(static_cast<float>(s), C), sc.w);
          rnew[b * R + r] = x;
          rsum += x;
        }
        for (int64_t c = 0; c < C; ++c) {
          double s = 0.0;
          for (int64_t r = 0; r < R; ++r) s += static_cast<double>(gb[r * C + c]) * gb[r * C + c];
          cnew[b * C + c] = af::lerp(cv.get(b * C + c), af::mean_square(static_cast<float>(s), R), sc.w);
        }
        const float mean = static_cast<float>(rsum / static_cast<double>(R));
        const float divisor = mean < eps1f ? eps1f : mean;  // clamp_(min=eps1); NaN stays NaN
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t e = (b * R + r) * C + c;
            u[e] = af::update_of(g[e], af::factored_v(rnew[b * R + r], cnew[b * C + c], divisor), eps1sq);
          }
      }
      for (int64_t e = 0; e < B * R; ++e) rv.set(e, rnew[e]);
      for (int64_t e = 0; e < B * C; ++e) cv.set(e, cnew[e]);
    } else {
      State v(a.variances[i], oop ? a.variances_out[i] : a.variances[i]);
      for (int64_t e = 0; e < n; ++e) {
        const float x = af::lerp(v.get(e), exact::mul(g[e], g[e]), sc.w);
        v.set(e, x);
        u[e] = af::update_of(g[e], x, eps1sq);
      }
    }
    double usum = 0.0;
    for (int64_t e = 0; e < n; ++e) usum += static_cast<double>(u[e]) * u[e];
    const float s = af::step_scale(static_cast<float>(psum), static_cast<float>(usum), n, sc.rho, d.eps2, d.d);
    for (int64_t e = 0; e < n; ++e)
      baracuda::detail::store_f(pout.data, d.dtype, oo[e], af::apply(p[e], u[e], s, sc.wd_factor));
  }
  return Status::ok();
}

}  // namespace baracuda::optim::ref

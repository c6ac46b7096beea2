#include "ops/optim/adafactor_reference.hpp"

#include <cstdint>
#include <vector>

#include "core/host_elements.hpp"
#include "ops/optim/adafactor_math.hpp"

namespace baracuda::optim::ref {

namespace af = baracuda::optim::adafactor;

Status adafactor(const AdafactorDescriptor& d, double eps1, const AdafactorArgs& a) {
  double t = static_cast<double>(a.step), lr = d.lr;
  if (d.device_scalars) {
    float* step = static_cast<float*>(a.step_tensor.data);
    *step = exact::add(*step, 1.0f);  // torch: step_t += 1 (f32)
    t = *step;
    lr = *static_cast<const float*>(a.lr_tensor.data);
  }
  const af::Scalars sc = af::make_scalars(t, lr, d.beta2_decay, d.weight_decay);
  const float eps1f = static_cast<float>(eps1), eps1sq = static_cast<float>(eps1 * eps1);

  for (size_t i = 0; i < d.shapes.size(); ++i) {
    const Dims& shape = d.shapes[i];
    const int64_t n = shape_numel(shape);
    if (n == 0) continue;
    std::vector<float> p(static_cast<size_t>(n)), g(static_cast<size_t>(n)), u(static_cast<size_t>(n));
    double psum = 0.0;
    for (int64_t e = 0; e < n; ++e) {
      p[e] = static_cast<float>(baracuda::detail::load_f(a.params[i].data, d.dtype, e));
      const float ge = static_cast<float>(baracuda::detail::load_f(a.grads[i].data, d.dtype, e));
      g[e] = d.maximize ? -ge : ge;
      psum += static_cast<double>(p[e]) * p[e];
    }
    if (shape.rank >= 2) {
      const int64_t R = shape[shape.rank - 2], C = shape[shape.rank - 1], B = n / (R * C);
      float* rv = static_cast<float*>(a.row_vars[i].data);
      float* cv = static_cast<float*>(a.col_vars[i].data);
      std::vector<float> divisor(static_cast<size_t>(B));
      for (int64_t b = 0; b < B; ++b) {
        const float* gb = g.data() + b * R * C;
        double rsum = 0.0;
        for (int64_t r = 0; r < R; ++r) {
          double s = 0.0;
          for (int64_t c = 0; c < C; ++c) s += static_cast<double>(gb[r * C + c]) * gb[r * C + c];
          float& x = rv[b * R + r];
          x = af::lerp(x, af::mean_square(static_cast<float>(s), C), sc.w);
          rsum += x;
        }
        for (int64_t c = 0; c < C; ++c) {
          double s = 0.0;
          for (int64_t r = 0; r < R; ++r) s += static_cast<double>(gb[r * C + c]) * gb[r * C + c];
          float& x = cv[b * C + c];
          x = af::lerp(x, af::mean_square(static_cast<float>(s), R), sc.w);
        }
        const float mean = static_cast<float>(rsum / static_cast<double>(R));
        divisor[b] = mean < eps1f ? eps1f : mean;  // clamp_(min=eps1); NaN stays NaN
        for (int64_t r = 0; r < R; ++r)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t e = (b * R + r) * C + c;
            u[e] = af::update_of(g[e], af::factored_v(rv[b * R + r], cv[b * C + c], divisor[b]), eps1sq);
          }
      }
    } else {
      float* v = static_cast<float*>(a.variances[i].data);
      for (int64_t e = 0; e < n; ++e) {
        v[e] = af::lerp(v[e], exact::mul(g[e], g[e]), sc.w);
        u[e] = af::update_of(g[e], v[e], eps1sq);
      }
    }
    double usum = 0.0;
    for (int64_t e = 0; e < n; ++e) usum += static_cast<double>(u[e]) * u[e];
    const float s = af::step_scale(static_cast<float>(psum), static_cast<float>(usum), n, sc.rho, d.eps2, d.d);
    for (int64_t e = 0; e < n; ++e)
      baracuda::detail::store_f(a.params[i].data, d.dtype, e, af::apply(p[e], u[e], s, sc.wd_factor));
  }
  return Status::ok();
}

}  // namespace baracuda::optim::ref

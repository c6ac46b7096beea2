// CPU reference of the optim plans (reference.hpp).
#include "ops/optim/reference.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "baracuda/core/half.hpp"
#include "ops/optim/math.hpp"

namespace baracuda::optim::ref {
namespace {

using cuda::ListLaunch;
using cuda::Op;

float load(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(p)[i];
    case DType::BF16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return detail::f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
}

void store(DType t, void* p, int64_t i, float x) {
  switch (t) {
    case DType::F32: static_cast<float*>(p)[i] = x; return;
    case DType::BF16: static_cast<uint16_t*>(p)[i] = bf16_rne(x); return;
    default: static_cast<uint16_t*>(p)[i] = f16_rne(x); return;
  }
}

float* f32(const ListLaunch& l, int role, int k) {
  return static_cast<float*>(const_cast<void*>(l.lists[role].data(k)));
}

Status run_optim(const ListLaunch& l) {
  if (l.step_ptr && (!l.found_inf_in || *l.found_inf_in == 0.0f)) *l.step_ptr = *l.step_ptr + 1.0f;
  if (l.found_inf_in && *l.found_inf_in != 0.0f) return Status::ok();
  const double lr = l.lr_ptr ? static_cast<double>(*l.lr_ptr) : l.lr;
  const float gs = l.grad_scale ? *l.grad_scale : 1.0f;
  AdamScalars as{};
  SgdScalars ss{};
  LionScalars ls{};
  if (l.op == Op::Adam) as = adam_scalars(l.adam, lr, l.step_ptr ? step_from_f32(*l.step_ptr) : l.step);
  if (l.op == Op::Sgd) ss = sgd_scalars(l.sgd, lr);
  if (l.op == Op::Lion) ls = lion_scalars(l.lion, lr);
  const bool has_buf = l.sgd.momentum != 0.0;
  uint64_t e = 0;  // the element's global index in the list
  for (int k = 0; k < l.n; ++k) {
    const int64_t n = shape_numel(l.shapes[k]);
    void* pp = const_cast<void*>(l.lists[0].data(k));
    const void* gp = l.lists[1].data(k);
    float* master = l.master ? f32(l, ListLaunch::kMaster, k) : nullptr;
    for (int64_t i = 0; i < n; ++i, ++e) {
      float p = master ? master[i] : load(l.dtype, pp, i);
      float g = load(l.dtype, gp, i);
      if (l.grad_scale) g = exact::div(g, gs);
      if (l.op == Op::Adam) {
        float* m = f32(l, 2, k);
        float* v = f32(l, 3, k);
        float* vm = l.adam.amsgrad ? f32(l, 4, k) : nullptr;
        float vmax = vm ? vm[i] : 0.0f;
        adam_elem(as, p, g, m[i], v[i], vmax);
        if (vm) vm[i] = vmax;
      } else if (l.op == Op::Sgd) {
        float buf = 0.0f;
        float* b = has_buf ? f32(l, 2, k) : nullptr;
        if (b && !l.sgd.first) buf = b[i];
        sgd_elem(ss, p, g, buf);
        if (b) b[i] = buf;
      } else {
        lion_elem(ls, p, g, f32(l, 2, k)[i]);
      }
      if (master) master[i] = p;
      if (l.stochastic && l.dtype == DType::BF16)
        static_cast<uint16_t*>(pp)[i] = bf16_stochastic(p, sr_word(l.seed, l.offset, e));
      else
        store(l.dtype, pp, i, p);
    }
  }
  return Status::ok();
}

void scale_all(const ListLaunch& l, float s, bool zero, float* found_inf) {
  for (int k = 0; k < l.n; ++k) {
    const int64_t n = shape_numel(l.shapes[k]);
    void* p = const_cast<void*>(l.lists[0].data(k));
    for (int64_t i = 0; i < n; ++i) {
      if (zero) {
        store(l.dtype, p, i, 0.0f);
        continue;
      }
      const float x = load(l.dtype, p, i);
      if (found_inf && !finite_f32(x)) *found_inf = 1.0f;
      store(l.dtype, p, i, exact::mul(x, s));
    }
  }
}

double nan_max_d(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

Status run_norm(const ListLaunch& l) {
  double acc = 0.0;
  for (int k = 0; k < l.n; ++k) {
    const int64_t n = shape_numel(l.shapes[k]);
    const void* p = l.lists[0].data(k);
    for (int64_t i = 0; i < n; ++i) {
      const double x = load(l.dtype, p, i);
      acc = l.inf_norm ? nan_max_d(acc, std::fabs(x)) : acc + x * x;
    }
  }
  const float total = static_cast<float>(l.inf_norm ? acc : std::sqrt(acc));
  *l.norm_out = total;
  if (l.op != Op::Clip) return Status::ok();
  if (l.found_inf_out && !finite_f32(total)) *l.found_inf_out = 1.0f;
  scale_all(l, clip_coef(l.max_norm, total), false, nullptr);
  return Status::ok();
}

}  // namespace

Status run(const ListLaunch& l) {
  switch (l.op) {
    case Op::Adam:
    case Op::Sgd:
    case Op::Lion: return run_optim(l);
    case Op::Norm:
    case Op::Clip: return run_norm(l);
    case Op::Unscale: scale_all(l, *l.scale_ptr, false, l.found_inf_out); return Status::ok();
    case Op::Scale: scale_all(l, l.scale_ptr ? *l.scale_ptr : l.scale, false, nullptr); return Status::ok();
    case Op::Zero: scale_all(l, 0.0f, true, nullptr); return Status::ok();
  }
  return Status::ok();
}

}  // namespace baracuda::optim::ref

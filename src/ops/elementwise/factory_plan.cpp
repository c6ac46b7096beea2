// FactoryPlan: fill / full / arange / linspace. select() resolves the
// descriptor into the few numbers every element is computed from
// (detail::FactoryResolved, with PyTorch's length rules and refusals), the
// backends compute element i from them (factory_math.hpp).
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "core/checked_math.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/elementwise/convert.hpp"
#include "ops/elementwise/factory_launch.hpp"
#include "ops/elementwise/factory_math.hpp"
#include "baracuda/core/host_types.hpp"

namespace baracuda {

const char* op_name(FactoryOp op) {
  switch (op) {
    case FactoryOp::Fill: return "fill";
    case FactoryOp::Arange: return "arange";
    case FactoryOp::Linspace: return "linspace";
  }
  return "?";
}

namespace elementwise::factory {

baracuda::detail::EwLayout layout_of(const TensorMut& out) {
  return baracuda::detail::make_ew_layout(out.shape, out.strides, 0, nullptr, nullptr);
}

bool fits_index32(const baracuda::detail::EwLayout& L) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (L.numel >= kLimit) return false;
  int64_t reach = 0;  // the largest |offset|
  for (int d = 0; d < L.rank; ++d) reach += (L.shape[d] - 1) * (L.stride[0][d] < 0 ? -L.stride[0][d] : L.stride[0][d]);
  return reach < kLimit;
}

namespace {

using baracuda::detail::invalid;
using baracuda::detail::unsupported;
constexpr const char* kPlan = "FactoryPlan";
// The family's (elementwise) CUDA kernels: the same switch as plan.cpp's.
constexpr baracuda::detail::Family kFamily{"elementwise", "elementwise", BARACUDA_KERNELS_ELEMENTWISE};

bool engine_dtype(DType t) { return dtype_is_valid(t) && !is_complex(t) && !is_float8(t); }
constexpr int64_t kMaxElements = int64_t{1} << 62;  // the family's limit (plan.cpp)

bool is_int_scalar(const Scalar& s) { return s.dtype == DType::I64; }  // PyTorch's isIntegral(false)
double as_double(const Scalar& s) { return s.dtype == DType::F64 ? s.f : static_cast<double>(s.i); }
// A scalar as PyTorch's Scalar::to<float>(): an integer converts directly (one rounding).
float as_float(const Scalar& s) { return s.dtype == DType::F64 ? static_cast<float>(s.f) : static_cast<float>(s.i); }

double max_finite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return FLT_MAX;
    default: return DBL_MAX;
  }
}
double int_lowest(DType t) {
  switch (t) {
    case DType::I8: return -128;
    case DType::U8: return 0;
    case DType::I16: return -32768;
    case DType::I32: return -2147483648.0;
    default: return -9223372036854775808.0;
  }
}
double int_max(DType t) {  // I64: 2^63 - 1, which a double cannot hold: callers compare with < 2^63
  switch (t) {
    case DType::I8: return 127;
    case DType::U8: return 255;
    case DType::I16: return 32767;
    case DType::I32: return 2147483647.0;
    default: return 9223372036854775807.0;
  }
}

// PyTorch's checked conversion of a Scalar into dtype t (c10::checked_convert):
// floating targets take NaN / inf and finite values up to their max; integer
// targets finite values in range (an integer into u8 may also be negative down
// to -255: it wraps); bool takes everything.
bool fits(const Scalar& s, DType t) {
  if (t == DType::Bool || s.dtype == DType::Bool) return true;
  if (is_floating_point(t)) {
    const double v = as_double(s);
    return !std::isfinite(v) || std::fabs(v) <= max_finite(t);
  }
  if (s.dtype == DType::I64) {
    if (t == DType::I64) return true;
    const double v = static_cast<double>(s.i);
    if (t == DType::U8) return v >= -255 && v <= 255;
    return v >= int_lowest(t) && v <= int_max(t);
  }
  const double v = s.f;
  if (!std::isfinite(v)) return false;
  return t == DType::I64 ? (v >= -9223372036854775808.0 && v < 9223372036854775808.0)
                         : (v >= int_lowest(t) && v <= int_max(t));
}

// The scalar as an integer the way the family converts (truncation, NaN 0, saturation).
int64_t as_int64(const Scalar& s) { return s.dtype == DType::F64 ? float_to_int64(s.f) : s.i; }

// The bytes of one element of dtype t holding s, converted with the family's rules.
uint64_t constant_bits(const Scalar& s, DType t) {
  uint64_t bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (t) {
    case DType::F64: put(as_double(s)); break;
    case DType::F32: put(as_float(s)); break;
    case DType::F16: put(half(as_float(s))); break;
    case DType::BF16: put(bfloat16(as_float(s))); break;
    case DType::Bool: put(static_cast<uint8_t>(s.dtype == DType::F64 ? s.f != 0 : s.i != 0)); break;  // NaN is true
    case DType::I8: put(static_cast<int8_t>(as_int64(s))); break;
    case DType::U8: put(static_cast<uint8_t>(as_int64(s))); break;
    case DType::I16: put(static_cast<int16_t>(as_int64(s))); break;
    case DType::I32: put(static_cast<int32_t>(as_int64(s))); break;
    default: put(as_int64(s)); break;
  }
  return bits;
}

float round16(float v, DType t) {
  return t == DType::F16 ? static_cast<float>(half(v)) : static_cast<float>(bfloat16(v));
}

Status check_scalar(const char* field, const std::optional<Scalar>& s) {
  if (s && s->dtype != DType::F64 && s->dtype != DType::I64 && s->dtype != DType::Bool)
    return invalid(kPlan, field, " has dtype ", s->dtype, ": a Scalar is f64, i64 or bool");
  return Status::ok();
}

// Fields the op does not read must be unset.
Status unused(const char* op, const char* field, bool set) {
  return set ? invalid(kPlan, op, " takes no ", field, " (leave descriptor.", field, " unset)") : Status::ok();
}

Status resolve_fill(const FactoryDescriptor& d, detail::FactoryResolved* r) {
  BARACUDA_RETURN_IF_ERROR(unused("fill", "start", d.start.has_value()));
  BARACUDA_RETURN_IF_ERROR(unused("fill", "end", d.end.has_value()));
  BARACUDA_RETURN_IF_ERROR(unused("fill", "step", d.step.has_value()));
  BARACUDA_RETURN_IF_ERROR(unused("fill", "steps", d.steps.has_value()));
  if (!d.value) return invalid(kPlan, "fill needs descriptor.value");
  if (!d.shape.rank_valid()) return invalid(kPlan, "shape has an invalid rank ", d.shape.rank);
  for (int i = 0; i < d.shape.rank; ++i)
    if (d.shape[i] < 0) return invalid(kPlan, "shape ", d.shape, " has a negative extent");
  int64_t n = 1;
  bool ok = true;
  for (int i = 0; i < d.shape.rank && ok; ++i) ok = baracuda::detail::checked_product({n, d.shape[i]}, &n);
  if (!ok || n > kMaxElements) return invalid(kPlan, "shape ", d.shape, " has too many elements (at most 2^62)");
  r->kind = kConstant;
  r->compute = d.dtype;
  r->bits = constant_bits(*d.value, d.dtype);
  r->out_shape = d.shape;
  return Status::ok();
}

Status resolve_arange(const FactoryDescriptor& d, detail::FactoryResolved* r) {
  BARACUDA_RETURN_IF_ERROR(unused("arange", "value", d.value.has_value()));
  BARACUDA_RETURN_IF_ERROR(unused("arange", "steps", d.steps.has_value()));
  if (!d.end) return invalid(kPlan, "arange needs descriptor.end");
  if (d.shape.rank != 0)
    return invalid(kPlan, "arange computes its shape: leave descriptor.shape empty (rank 0), got ", d.shape);
  if (d.dtype == DType::Bool) return unsupported(kPlan, "arange is not implemented for bool (nor in PyTorch)");
  const Scalar start = d.start.value_or(Scalar(0)), end = *d.end, step = d.step.value_or(Scalar(1));
  const double ds = as_double(start), de = as_double(end), dst = as_double(step);
  // PyTorch's checks (arange_check_bounds), in its order.
  if (!(dst > 0 || dst < 0)) return invalid(kPlan, "arange's step must be nonzero, got ", dst);
  if (!std::isfinite(ds) || !std::isfinite(de))
    return invalid(kPlan, "arange's start and end must be finite, got ", ds, " -> ", de);
  if (!((dst > 0 && de >= ds) || (dst < 0 && de <= ds)))
    return invalid(kPlan, "arange's end ", de, " is on the wrong side of start ", ds, " for step ", dst,
                   " (the length would be negative)");
  // The accumulate type (PyTorch's CUDA acc_type) must hold start, end and step.
  const DType acc = d.dtype == DType::F64 ? DType::F64 : is_floating_point(d.dtype) ? DType::F32 : DType::I64;
  const char* names[3] = {"start", "end", "step"};
  const Scalar* vals[3] = {&start, &end, &step};
  for (int k = 0; k < 3; ++k)
    if (!fits(*vals[k], acc))
      return invalid(kPlan, "arange's ", names[k], " ", as_double(*vals[k]), " overflows its accumulate type ", acc,
                     " (", d.dtype, " output)");
  // The length: exact integers for an i64 output from i64 scalars, else double (PyTorch's compute_arange_size).
  int64_t n = 0;
  if (d.dtype == DType::I64 && is_int_scalar(start) && is_int_scalar(end) && is_int_scalar(step)) {
    const __int128 sgn = step.i > 0 ? 1 : -1;
    const __int128 len = (static_cast<__int128>(end.i) - start.i + step.i - sgn) / step.i;
    if (len > kMaxElements)
      return invalid(kPlan, "arange's length ", static_cast<double>(len), " does not fit (at most 2^62 elements)");
    n = static_cast<int64_t>(len);
  } else {
    const double len = std::ceil((de - ds) / dst);
    if (!(len >= 0 && len <= static_cast<double>(kMaxElements)))
      return invalid(kPlan, "arange's length ", len, " does not fit (at most 2^62 elements)");
    n = static_cast<int64_t>(len);
  }
  r->kind = kArange;
  r->compute = acc;
  if (acc == DType::F32) {
    r->start = as_float(start);
    r->step = as_float(step);
    r->end = as_float(end);
  } else if (acc == DType::F64) {
    r->start = ds;
    r->step = dst;
    r->end = de;
  } else {  // PyTorch's Scalar::to<int64_t>: truncation toward zero
    r->start_i = as_int64(start);
    r->step_i = as_int64(step);
  }
  r->out_shape = Dims{n};
  return Status::ok();
}

Status resolve_linspace(const FactoryDescriptor& d, detail::FactoryResolved* r) {
  BARACUDA_RETURN_IF_ERROR(unused("linspace", "value", d.value.has_value()));
  BARACUDA_RETURN_IF_ERROR(unused("linspace", "step", d.step.has_value()));
  if (!d.start || !d.end || !d.steps) return invalid(kPlan, "linspace needs descriptor.start, end and steps");
  if (d.shape.rank != 0)
    return invalid(kPlan, "linspace computes its shape: leave descriptor.shape empty (rank 0), got ", d.shape);
  if (d.dtype == DType::Bool) return unsupported(kPlan, "linspace is not implemented for bool");
  const int64_t n = *d.steps;
  if (n < 0) return invalid(kPlan, "linspace's steps ", n, " must be >= 0");
  if (n > kMaxElements) return invalid(kPlan, "linspace's steps ", n, " is too many elements (at most 2^62)");
  // PyTorch converts start (steps >= 1) and end (steps >= 2) into the dtype, checked.
  if (n >= 1 && !fits(*d.start, d.dtype))
    return invalid(kPlan, "linspace's start ", as_double(*d.start), " does not fit ", d.dtype);
  if (n >= 2 && !fits(*d.end, d.dtype))
    return invalid(kPlan, "linspace's end ", as_double(*d.end), " does not fit ", d.dtype);
  r->out_shape = Dims{n};
  r->steps = n;
  r->halfway = n / 2;
  if (n == 1) {  // PyTorch fills with start
    r->kind = kConstant;
    r->compute = d.dtype;
    r->bits = constant_bits(*d.start, d.dtype);
    return Status::ok();
  }
  r->kind = kLinspace;
  const Scalar& s = *d.start;
  const Scalar& e = *d.end;
  const float div = static_cast<float>(n - 1);
  switch (d.dtype) {
    case DType::F64: {
      r->compute = DType::F64;
      r->start = as_double(s);
      r->end = as_double(e);
      r->step = (r->end - r->start) / static_cast<double>(n - 1);
      break;
    }
    case DType::F32: {
      r->compute = DType::F32;
      const float fs = as_float(s), fe = as_float(e);
      r->start = fs;
      r->end = fe;
      r->step = (fe - fs) / div;
      break;
    }
    case DType::F16:
    case DType::BF16: {  // every operation rounded to the 16-bit type (c10::Half / BFloat16 arithmetic)
      r->compute = d.dtype;
      const DType t = d.dtype;
      const float fs = round16(as_float(s), t), fe = round16(as_float(e), t);
      r->start = fs;
      r->end = fe;
      r->step = round16(round16(fe - fs, t) / round16(div, t), t);
      break;
    }
    default: {  // integers: start and end converted to the dtype, then the arithmetic in f32
      r->compute = DType::F32;
      auto in_dtype = [&](const Scalar& v) -> float {
        const int64_t w = as_int64(v);
        switch (d.dtype) {
          case DType::I8: return static_cast<float>(static_cast<int8_t>(w));
          case DType::U8: return static_cast<float>(static_cast<uint8_t>(w));
          case DType::I16: return static_cast<float>(static_cast<int16_t>(w));
          case DType::I32: return static_cast<float>(static_cast<int32_t>(w));
          default: return static_cast<float>(w);
        }
      };
      const float is = in_dtype(s), ie = in_dtype(e);
      r->start = is;
      r->end = ie;
      r->step = (ie - is) / div;
      break;
    }
  }
  return Status::ok();
}

std::string sku_op(FactoryOp op) { return std::string("elementwise.") + op_name(op); }

}  // namespace
}  // namespace elementwise::factory

struct FactoryPlanAccess {
  static baracuda::detail::ArgCheck check(const FactoryPlan& plan, const FactoryArgs& a) {
    baracuda::detail::ArgCheck c(plan);
    c.output("out", a.out, plan.r_.out, plan.r_.out_shape);
    return c;
  }
  static Status run_cpu_or_cuda(const FactoryPlan& plan, const Stream& stream, const FactoryArgs& a) {
    namespace f = elementwise::factory;
    const auto L = f::layout_of(a.out);
    if (plan.sku().backend == Backend::CpuReference) return f::ref::run(plan.r_, L, a.out.data);
#ifdef BARACUDA_WITH_CUDA
    return f::cuda::launch(plan.r_, L, a.out.data, f::fits_index32(L), stream.native_handle());
#else
    (void)stream;
    return baracuda::detail::no_cuda(plan.name());
#endif
  }
};

Result<FactoryPlan> FactoryPlan::select(const Stream& stream, const FactoryDescriptor& d, const PlanPreference& pref) {
  namespace f = elementwise::factory;
  const char* name = "FactoryPlan";
  if (std::string_view(op_name(d.op)) == "?") return baracuda::detail::invalid(name, "unknown FactoryOp ", d.op);
  if (!f::engine_dtype(d.dtype))
    return baracuda::detail::unsupported(name, "dtype ", d.dtype,
                                         " is not supported (bool, integers, f16, bf16, f32, f64)");
  for (auto [field, s] : {std::pair{"value", &d.value}, std::pair{"start", &d.start}, std::pair{"end", &d.end},
                          std::pair{"step", &d.step}})
    BARACUDA_RETURN_IF_ERROR(f::check_scalar(field, *s));
  FactoryPlan plan;
  plan.r_.out = d.dtype;
  switch (d.op) {
    case FactoryOp::Fill: BARACUDA_RETURN_IF_ERROR(f::resolve_fill(d, &plan.r_)); break;
    case FactoryOp::Arange: BARACUDA_RETURN_IF_ERROR(f::resolve_arange(d, &plan.r_)); break;
    case FactoryOp::Linspace: BARACUDA_RETURN_IF_ERROR(f::resolve_linspace(d, &plan.r_)); break;
  }
  auto be = baracuda::detail::setup_plan(plan, name, f::kFamily, stream, pref, d.dtype, f::sku_op(d.op));
  if (!be) return be.status();
  auto& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.precision.math = plan.r_.compute;
  sku.precision.accumulator = plan.r_.compute;
  if (be->backend != Backend::CpuReference)
    sku.variant = shape_numel(plan.r_.out_shape) < (int64_t{1} << 31) ? "index32" : "index64";
  plan.desc_ = d;
  return plan;
}

Status FactoryPlan::can_implement(const FactoryArgs& a) const { return FactoryPlanAccess::check(*this, a).status(); }

Status FactoryPlan::run(const Stream& stream, Workspace ws, const FactoryArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, FactoryPlanAccess::check(*this, a),
      [&] { return FactoryPlanAccess::run_cpu_or_cuda(*this, stream, a); },
      [&] { return FactoryPlanAccess::run_cpu_or_cuda(*this, stream, a); });
}

Result<KernelSku> FactoryPlan::sku_for(const Stream& stream, Workspace ws, const FactoryArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, FactoryPlanAccess::check(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = elementwise::factory::fits_index32(elementwise::factory::layout_of(a.out)) ? "index32" : "index64";
    return s;
  });
}

}  // namespace baracuda

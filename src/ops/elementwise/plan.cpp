// UnaryPlan / BinaryPlan / TernaryPlan: one resolution of operands, dtypes
// and parameters (resolve), one argument check (check_call), one dispatch.
// The three classes differ only in their operand names and op tables.
#include <algorithm>
#include <cfloat>
#include <span>
#include <vector>
#include <cmath>
#include <limits>
#include <string>

#include "baracuda/core/promotion.hpp"
#include "core/checked_math.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/elementwise/functors_grad.hpp"
#include "ops/elementwise/launch.hpp"
#include "ops/elementwise/problem.hpp"
#include "ops/elementwise/reference.hpp"

namespace baracuda {

const char* op_name(UnaryOp op) {
  switch (op) {
#define BARACUDA_EW_NAME(E, name, dom, params) \
  case UnaryOp::E: return name;
    BARACUDA_UNARY_OPS(BARACUDA_EW_NAME)
  }
  return "?";
}
const char* op_name(BinaryOp op) {
  switch (op) {
#undef BARACUDA_EW_NAME
#define BARACUDA_EW_NAME(E, name, dom, params) \
  case BinaryOp::E: return name;
    BARACUDA_BINARY_OPS(BARACUDA_EW_NAME)
  }
  return "?";
}
const char* op_name(TernaryOp op) {
  switch (op) {
#undef BARACUDA_EW_NAME
#define BARACUDA_EW_NAME(E, name, dom, params) \
  case TernaryOp::E: return name;
    BARACUDA_TERNARY_OPS(BARACUDA_EW_NAME)
#undef BARACUDA_EW_NAME
  }
  return "?";
}

Result<Dims> broadcast_shapes(const Dims& a, const Dims& b, const char* who) {
  if (!a.rank_valid() || !b.rank_valid()) return baracuda::detail::invalid(who, "a shape has an invalid rank");
  const int r = std::max(a.rank, b.rank);
  Dims out = Dims::of_rank(r);
  for (int i = 0; i < r; ++i) {
    const int ia = a.rank - r + i, ib = b.rank - r + i;
    const int64_t ea = ia >= 0 ? a[ia] : 1, eb = ib >= 0 ? b[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      return baracuda::detail::invalid(who, "shapes ", a, " and ", b, " do not broadcast (dim ", i, ": ", ea, " vs ", eb,
                                       ")");
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

namespace elementwise {

const char* path_name(Path p) {
  switch (p) {
    case Path::Vec16: return "vec16";
    case Path::Strided32: return "strided32";
    case Path::Generic64: return "generic64";
    case Path::Transpose: return "transpose";
  }
  return "?";
}

DType natural_out(const Problem& p) {
  if (p.grad != 0) return p.common;
  Domain d = p.arity == 1 ? domain_of(static_cast<UnaryOp>(p.op))
             : p.arity == 2 ? domain_of(static_cast<BinaryOp>(p.op))
                            : domain_of(static_cast<TernaryOp>(p.op));
  return d == Domain::Predicate ? DType::Bool : p.common;
}

namespace {
bool typed_dtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 || t == DType::I32 ||
         t == DType::I64;
}
}  // namespace

bool is_cast(const Problem& p) {
  return p.arity == 1 && static_cast<UnaryOp>(p.op) == UnaryOp::Copy && p.out != p.common;
}

bool typed_kernels_apply(const Problem& p) {
  if (p.grad >= 3) {  // operand gradients: every tensor and every output of the common dtype (where's condition bool)
    if (!typed_dtype(p.common) || !is_floating_point(p.common)) return false;
    const bool where = p.grad == 4 && static_cast<TernaryOp>(p.op) == TernaryOp::Where;
    for (int k = 0; k < p.arity; ++k)
      if (p.kind[k] == ElementwiseOperand::Kind::Tensor && p.in_dtype[k] != ((where && k == 1) ? DType::Bool : p.common))
        return false;
    for (int m = 0; m < p.outputs; ++m)
      if ((p.need >> m & 1) && p.grad_dtype[m] != p.common) return false;
    return true;
  }
  if (is_cast(p)) return typed_dtype(p.common) && typed_dtype(p.out) && p.in_dtype[0] == p.common;
  if (!typed_dtype(p.common) || p.out != natural_out(p)) return false;
  if (p.common == DType::F16 || p.common == DType::F64) {  // functors.hpp: rare_special
    const bool rare = (p.grad != 0 || p.arity == 1) ? rare_special(static_cast<UnaryOp>(p.op))
                      : p.arity == 2               ? rare_special(static_cast<BinaryOp>(p.op))
                                                   : rare_special(static_cast<TernaryOp>(p.op));
    if (rare) return false;
  }
  const bool where = p.arity == 3 && static_cast<TernaryOp>(p.op) == TernaryOp::Where;
  for (int k = 0; k < p.arity; ++k) {
    if (p.kind[k] != ElementwiseOperand::Kind::Tensor) continue;
    const DType want = (where && k == 0) ? DType::Bool : p.common;
    if (p.in_dtype[k] != want) return false;
  }
  return true;
}

int vec_width(const Problem& p) {
  const size_t b = is_cast(p) ? std::min(dtype_size(p.common), dtype_size(p.out)) : dtype_size(p.common);
  return static_cast<int>(16 / b);
}

Path choose_path(const Problem& p, const Call& c) {
  if (!typed_kernels_apply(p)) return Path::Generic64;
  const int M = c.layout.outputs;
  size_t out_size[3] = {}, in_size[4] = {};
  for (int m = 0; m < M; ++m) out_size[m] = dtype_size(out_dtype_of(p, m));
  for (int k = 0; k < p.arity; ++k) in_size[k] = dtype_size(p.in_dtype[k]);
  const void* outs[3] = {c.out[0], c.out[1], c.out[2]};
  return baracuda::detail::choose_ew_path(c.layout, vec_width(p), outs, out_size, c.in, in_size);
}

namespace {

using baracuda::detail::invalid;
using baracuda::detail::unsupported;
using Kind = ElementwiseOperand::Kind;

constexpr baracuda::detail::Family kFamily{"elementwise", "elementwise", BARACUDA_KERNELS_ELEMENTWISE};

// The dtypes the engine stores and computes: floating (not fp8), integers, bool.
bool engine_dtype(DType t) {
  return dtype_is_valid(t) && !is_complex(t) && !is_float8(t);
}

const char* kind_name(Kind k) { return k == Kind::Tensor ? "tensor" : k == Kind::Scalar ? "scalar" : "absent"; }

// ---- parameters ---------------------------------------------------------------------
struct ParamSpec {
  int count = 0;               // parameters the op takes (alpha, beta, gamma in order)
  double def[3] = {0, 0, 0};   // defaults
  bool required[3] = {false, false, false};
};

double max_finite(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

ParamSpec unary_params(UnaryOp op, DType out) {
  using U = UnaryOp;
  switch (op) {
    case U::Logit: return {1, {-1, 0, 0}, {}};
    case U::Round: return {1, {0, 0, 0}, {}};
    case U::NanToNum: return {3, {0, max_finite(out), -max_finite(out)}, {}};
    case U::LeakyRelu: return {1, {0.01, 0, 0}, {}};
    case U::Elu:
    case U::Celu: return {1, {1, 0, 0}, {}};
    case U::Softplus: return {2, {1, 20, 0}, {}};
    case U::Hardtanh: return {2, {-1, 1, 0}, {}};
    case U::Hardshrink:
    case U::Softshrink: return {1, {0.5, 0, 0}, {}};
    case U::Threshold: return {2, {0, 0, 0}, {true, true, false}};
    default: return {};
  }
}
ParamSpec binary_params(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: return {1, {1, 0, 0}, {}};
    case BinaryOp::IsClose: return {3, {1e-5, 1e-8, 0}, {}};
    default: return {};
  }
}
ParamSpec ternary_params(TernaryOp op) {
  return (op == TernaryOp::Addcmul || op == TernaryOp::Addcdiv) ? ParamSpec{1, {1, 0, 0}, {}} : ParamSpec{};
}

bool is_integer_value(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18; }

// The operand names of each arity, for messages.
constexpr const char* kNames[4][3] = {{}, {"x"}, {"a", "b"}, {"a", "b", "c"}};
constexpr const char* kOutName[4] = {"", "y", "out", "out"};

struct Spec {
  const char* plan;
  int arity;
  uint8_t op;
  const char* op_name;
  Domain domain;
  const ElementwiseOperand* operands[3];
  std::optional<DType> out_dtype;
  std::optional<double> param[3];
  ParamSpec (*params)(uint8_t op, DType out);
};

Status resolve(const Spec& s, Problem* p) {
  const char* plan = s.plan;
  p->arity = s.arity;
  p->op = s.op;
  const bool where = s.arity == 3 && static_cast<TernaryOp>(s.op) == TernaryOp::Where;
  const bool clamp = s.arity == 3 && static_cast<TernaryOp>(s.op) == TernaryOp::Clamp;
  const bool copy = s.arity == 1 && static_cast<UnaryOp>(s.op) == UnaryOp::Copy;
  // Operands: kinds, dtypes, shapes; the broadcast shape.
  int tensors = 0;
  Dims shape;
  std::vector<ResultTypeOperand> promote;
  for (int k = 0; k < s.arity; ++k) {
    const ElementwiseOperand& o = *s.operands[k];
    const char* nm = kNames[s.arity][k];
    if (static_cast<int>(o.kind) > static_cast<int>(Kind::Absent)) return invalid(plan, nm, ": unknown operand kind");
    if (o.kind == Kind::Absent && !(clamp && k > 0))
      return invalid(plan, nm, " is absent: only clamp's bounds (b, c) may be absent");
    if (s.arity == 1 && o.kind != Kind::Tensor) return invalid(plan, "x must be a tensor, got a ", kind_name(o.kind));
    p->kind[k] = o.kind;
    p->in_dtype[k] = o.dtype;
    p->in_shape[k] = o.kind == Kind::Tensor ? o.shape : Dims{};
    if (o.kind == Kind::Absent) continue;
    if (!engine_dtype(o.dtype))
      return unsupported(plan, nm, " dtype ", o.dtype, " is not supported (bool, integers, f16, bf16, f32, f64)");
    if (o.kind == Kind::Scalar) {
      if (o.dtype != DType::F64 && o.dtype != DType::I64 && o.dtype != DType::Bool)
        return invalid(plan, nm, " is a scalar of dtype ", o.dtype, ": a scalar is f64, i64 or bool");
    } else {
      ++tensors;
      if (!o.shape.rank_valid()) return invalid(plan, nm, " has an invalid rank ", o.shape.rank);
      for (int d = 0; d < o.shape.rank; ++d)
        if (o.shape[d] < 0) return invalid(plan, nm, " shape ", o.shape, " has a negative extent");
      auto b = broadcast_shapes(shape, o.shape, plan);
      if (!b) return b.status();
      shape = *b;
    }
    if (where && k == 0) {
      if (o.dtype != DType::Bool) return invalid(plan, "where's condition a must be bool, got ", o.dtype);
      continue;  // the condition takes no part in promotion
    }
    promote.push_back(o.kind == Kind::Scalar ? ResultTypeOperand::scalar(dtype_category(o.dtype))
                      : o.shape.rank == 0   ? ResultTypeOperand::zero_dim(o.dtype)
                                            : ResultTypeOperand::tensor(o.dtype));
  }
  if (tensors == 0) return invalid(plan, "at least one operand must be a tensor");
  if (clamp && s.operands[1]->kind == Kind::Absent && s.operands[2]->kind == Kind::Absent)
    return invalid(plan, "clamp needs at least one bound: b (min) and c (max) are both absent");
  {
    bool ok = true;
    int64_t n = 1;
    for (int d = 0; d < shape.rank && ok; ++d) ok = baracuda::detail::checked_product({n, shape[d]}, &n);
    if (!ok || n > (int64_t{1} << 62)) return invalid(plan, "output shape ", shape, " has too many elements");
  }
  p->out_shape = shape;
  // Dtypes.
  auto common = result_type(std::span<const ResultTypeOperand>(promote.data(), promote.size()), plan);
  if (!common) return common.status();
  DType c = *common;
  const bool int_like = is_integral(c, /*include_bool=*/true);
  switch (s.domain) {
    case Domain::IntToFloat:
      if (int_like) c = DType::F32;
      break;
    case Domain::Floating:
      if (int_like) return unsupported(plan, s.op_name, " needs floating-point operands, got ", c);
      break;
    case Domain::Numeric:
      if (c == DType::Bool) return unsupported(plan, s.op_name, " is not defined for bool operands");
      break;
    case Domain::Integral:
      if (!int_like) return unsupported(plan, s.op_name, " needs integer or bool operands, got ", c);
      if (s.arity == 2 && c == DType::Bool &&
          (static_cast<BinaryOp>(s.op) == BinaryOp::ShiftLeft || static_cast<BinaryOp>(s.op) == BinaryOp::ShiftRight))
        return unsupported(plan, s.op_name, " needs integer operands, got bool");
      break;
    default: break;
  }
  if (s.arity == 2 && static_cast<BinaryOp>(s.op) == BinaryOp::NextAfter && (c == DType::F16 || c == DType::BF16))
    return unsupported(plan, "nextafter is not implemented for ", c, " yet (f32, f64)");
  p->common = c;
  p->compute = is_integral(c, true) ? DType::I64 : (c == DType::F64 ? DType::F64 : DType::F32);
  const DType natural = natural_out(*p);
  if (s.out_dtype) {
    if (!engine_dtype(*s.out_dtype))
      return unsupported(plan, "out_dtype ", *s.out_dtype, " is not supported (bool, integers, f16, bf16, f32, f64)");
    if (!copy && !can_cast(natural, *s.out_dtype))
      return invalid(plan, "out_dtype ", *s.out_dtype, " cannot hold the ", natural, " result of ", s.op_name,
                     " (torch.can_cast); convert with UnaryOp::Copy");
    p->out = *s.out_dtype;
  } else {
    p->out = natural;
  }
  // Parameters.
  const ParamSpec ps = s.params(s.op, p->out);
  static constexpr const char* kParam[3] = {"alpha", "beta", "gamma"};
  for (int i = 0; i < 3; ++i) {
    if (i >= ps.count) {
      if (s.param[i]) return invalid(plan, s.op_name, " takes no parameter ", kParam[i]);
      continue;
    }
    if (!s.param[i] && ps.required[i]) return invalid(plan, s.op_name, " needs descriptor.", kParam[i]);
    p->params[i] = s.param[i] ? *s.param[i] : ps.def[i];
    if (std::isnan(p->params[i]) && !(s.arity == 1 && static_cast<UnaryOp>(s.op) == UnaryOp::NanToNum))
      return invalid(plan, s.op_name, " parameter ", kParam[i], " is NaN");
  }
  const double a0 = p->params[0];
  if (p->compute == DType::I64 && ps.count > 0 && (s.arity != 2 || static_cast<BinaryOp>(s.op) != BinaryOp::IsClose) &&
      !is_integer_value(a0))
    return invalid(plan, "for integer operands ", s.op_name, "'s alpha must be an integer, got ", a0);
  if (s.arity == 1) {
    switch (static_cast<UnaryOp>(s.op)) {
      case UnaryOp::Round:
        if (!is_integer_value(a0) || std::fabs(a0) > 300) return invalid(plan, "round's decimals ", a0, " must be an integer in [-300, 300]");
        if (a0 != 0 && p->compute == DType::I64) return unsupported(plan, "round with decimals != 0 needs a floating dtype");
        p->params[1] = std::pow(10.0, std::fabs(a0));
        break;
      case UnaryOp::Logit:
        if (s.param[0] && !(a0 >= 0 && a0 <= 0.5)) return invalid(plan, "logit's eps ", a0, " must be in [0, 0.5]");
        break;
      case UnaryOp::Celu:
        if (a0 == 0) return invalid(plan, "celu's alpha must be nonzero");
        break;
      case UnaryOp::Softplus:
        if (a0 == 0) return invalid(plan, "softplus's beta (alpha) must be nonzero");
        break;
      case UnaryOp::Hardtanh:
        if (p->params[1] < a0) return invalid(plan, "hardtanh's max_val ", p->params[1], " is below min_val ", a0);
        break;
      case UnaryOp::Softshrink:
        if (a0 < 0) return invalid(plan, "softshrink's lambd ", a0, " must be >= 0");
        break;
      default: break;
    }
  }
  if (s.arity == 2 && static_cast<BinaryOp>(s.op) == BinaryOp::IsClose && (a0 < 0 || p->params[1] < 0))
    return invalid(plan, "isclose's rtol and atol must be >= 0");
  p->bits = c == DType::Bool ? 1 : static_cast<int>(8 * dtype_size(c));
  p->has = clamp ? ((s.operands[1]->kind != Kind::Absent ? 1 : 0) | (s.operands[2]->kind != Kind::Absent ? 2 : 0)) : 3;
  return Status::ok();
}

// ---- one call --------------------------------------------------------------------------
struct Views {
  TensorRef in[4];
  const std::optional<Scalar>* value[4] = {nullptr, nullptr, nullptr, nullptr};
  TensorMut out;
  TensorMut gout[3];  // grad 3 / 4: da, db, dc (out unused)
  // The operands' names in messages (default: x / a, b, c and y / out).
  const char* names[4] = {nullptr, nullptr, nullptr, nullptr};
  const char* out_name = nullptr;
  // A tensor of the args this descriptor does not read (must be left empty).
  const TensorRef* unused = nullptr;
  const char* unused_msg = nullptr;
};

// The shape rules ArgCheck cannot express with one fixed shape per input are
// folded in here: every tensor input has its descriptor's shape.
baracuda::detail::ArgCheck check_all(const PlanBase& plan, const Problem& p, const Views& v) {
  baracuda::detail::ArgCheck c(plan);
  if (v.unused && v.unused->data != nullptr)
    c.rule([&] { return invalid(plan.name(), v.unused_msg); });
  const char* out_name = v.out_name ? v.out_name : kOutName[p.arity];
  // Messages are built only inside the failing rule: a passing check
  // allocates nothing (run() calls this on every call).
  for (int k = 0; k < p.arity; ++k) {
    const char* nm = v.names[k] ? v.names[k] : kNames[p.arity][k];
    const bool has_value = v.value[k] && v.value[k]->has_value();
    if (p.kind[k] == Kind::Tensor) {
      c.input(nm, v.in[k], p.in_dtype[k], p.in_shape[k]);
      c.rule([&] {
        return has_value ? invalid(plan.name(), nm, "_value is given but descriptor.", nm, " is a tensor") : Status::ok();
      });
      continue;
    }
    c.rule([&]() -> Status {
      if (v.in[k].data == nullptr) return Status::ok();
      return p.kind[k] == Kind::Scalar
                 ? invalid(plan.name(), nm, " is given but descriptor.", nm, " is a scalar (pass its value in ", nm,
                           "_value)")
                 : invalid(plan.name(), nm, " is given but descriptor.", nm, " is absent");
    });
    c.rule([&]() -> Status {
      if (p.kind[k] == Kind::Absent)
        return has_value ? invalid(plan.name(), nm, "_value is given but descriptor.", nm, " is absent") : Status::ok();
      if (!has_value) return invalid(plan.name(), nm, "_value is missing (descriptor.", nm, " is a scalar)");
      const DType vt = (*v.value[k])->dtype;
      if (vt != DType::F64 && vt != DType::I64 && vt != DType::Bool)
        return invalid(plan.name(), nm, "_value has dtype ", vt, ": a Scalar is f64, i64 or bool");
      if (dtype_category(vt) > dtype_category(p.in_dtype[k]))
        return invalid(plan.name(), nm, "_value is ", vt, " but descriptor.", nm, " is a ", p.in_dtype[k],
                       " scalar (it would change the result dtype)");
      return Status::ok();
    });
  }
  c.output(out_name, v.out, p.out, p.out_shape);
  for (int k = 0; k < p.arity; ++k)
    if (p.kind[k] == Kind::Tensor) c.allow_in_place(out_name, v.names[k] ? v.names[k] : kNames[p.arity][k]);
  c.disjoint();
  return c;
}

Call make_call(const Problem& p, const Views& v) {
  Call call;
  Dims shapes[4];
  const Dims* strides[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int k = 0; k < p.arity; ++k) {
    if (p.kind[k] == Kind::Tensor) {
      shapes[k] = v.in[k].shape;
      strides[k] = &v.in[k].strides;
      call.in[k] = v.in[k].data;
    } else if (p.kind[k] == Kind::Scalar) {
      const Scalar s = **v.value[k];
      call.value_f[k] = s.dtype == DType::F64 ? s.f : static_cast<double>(s.i);
      call.value_i[k] = s.dtype == DType::F64 ? 0 : s.i;
    }
  }
  if (p.grad >= 3) {
    // Each written gradient has the broadcast shape, or (a direct write) its
    // operand's shape of as many elements: its strides in the broadcast rank.
    Dims ostrides[3];
    const Dims* op[3] = {nullptr, nullptr, nullptr};
    for (int m = 0; m < p.outputs; ++m) {
      if (!(p.need >> m & 1)) continue;
      const TensorMut& g = v.gout[m];
      const int lead = p.out_shape.rank - g.shape.rank;
      ostrides[m] = Dims::of_rank(p.out_shape.rank, 0);
      for (int d = std::max(lead, 0); d < p.out_shape.rank; ++d) ostrides[m][d] = g.strides[d - lead];
      op[m] = &ostrides[m];
      call.out[m] = g.data;
    }
    call.layout = baracuda::detail::make_ew_layout(p.out_shape, p.outputs, op, p.arity, shapes, strides);
    return call;
  }
  call.layout = baracuda::detail::make_ew_layout(v.out.shape, v.out.strides, p.arity, shapes, strides);
  call.out[0] = v.out.data;
  return call;
}

// Dense, aligned views of the descriptor's shapes: what sku() reports.
Path default_path(const Problem& p) {
  Views v;
  alignas(16) static const char dummy[16] = {};
  for (int k = 0; k < p.arity; ++k)
    if (p.kind[k] == Kind::Tensor)
      v.in[k] = TensorRef(dummy, p.in_dtype[k], Device::cpu(), p.in_shape[k], contiguous_strides(p.in_shape[k]), 0);
  static const std::optional<Scalar> one = Scalar(1.0);
  for (int k = 0; k < p.arity; ++k)
    if (p.kind[k] == Kind::Scalar) v.value[k] = &one;
  v.out = TensorMut(const_cast<char*>(dummy), p.out, Device::cpu(), p.out_shape, contiguous_strides(p.out_shape), 0);
  for (int m = 0; m < 3; ++m)
    v.gout[m] = TensorMut(const_cast<char*>(dummy), p.grad_dtype[m], Device::cpu(), p.out_shape,
                          contiguous_strides(p.out_shape), 0);
  return choose_path(p, make_call(p, v));
}

Status run_call(const PlanBase& plan, const Problem& p, const Stream& stream, const Views& v) {
  const Call call = make_call(p, v);
  if (plan.sku().backend == Backend::CpuReference) return elementwise::ref::run(p, call);
#ifdef BARACUDA_WITH_CUDA
  return elementwise::cuda::launch(p, call, choose_path(p, call), stream.native_handle());
#else
  (void)stream;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

std::string sku_op(const Problem& p) {
  if (p.grad == 3) return std::string("elementwise_backward.") + op_name(static_cast<BinaryOp>(p.op));
  if (p.grad == 4) return std::string("elementwise_backward.") + op_name(static_cast<TernaryOp>(p.op));
  if (p.grad != 0) return std::string("elementwise_backward.") + op_name(static_cast<UnaryOp>(p.op));
  const char* n = p.arity == 1 ? op_name(static_cast<UnaryOp>(p.op))
                  : p.arity == 2 ? op_name(static_cast<BinaryOp>(p.op))
                                 : op_name(static_cast<TernaryOp>(p.op));
  return std::string("elementwise.") + n;
}

// ---- operand gradients (BinaryBackwardPlan, TernaryBackwardPlan) ----------------------
using baracuda::detail::ElementwiseGradReduce;
constexpr const char* kGradName[3] = {"da", "db", "dc"};
constexpr const char* kNeedName[3] = {"need_a", "need_b", "need_c"};

// "da, db": the gradients the problem computes.
std::string needed_list(const Problem& p) {
  std::string s;
  for (int m = 0; m < p.outputs; ++m)
    if (p.need >> m & 1) s += (s.empty() ? "" : ", ") + std::string(kGradName[m]);
  return s;
}

// dy, the operands the needed gradients read (tensors or scalar values) and
// nothing else, the needed gradients (each its operand's shape and dtype,
// possibly dy itself) and nothing else.
baracuda::detail::ArgCheck check_grad(const PlanBase& plan, const Problem& p, const ElementwiseGradReduce& g,
                                      const Views& v) {
  baracuda::detail::ArgCheck c(plan);
  const int fa = p.outputs;
  c.input("dy", v.in[0], p.in_dtype[0], p.out_shape);
  for (int j = 0; j < fa; ++j) {
    const int k = 1 + j;
    const char* nm = kNames[fa][j];
    const std::string sname = std::string(nm) + "_value";
    const bool has_value = v.value[k] && v.value[k]->has_value();
    if (p.kind[k] == Kind::Tensor) {
      c.input(nm, v.in[k], p.in_dtype[k], p.in_shape[k]);
      c.rule([&] {
        return has_value ? invalid(plan.name(), sname, " is given but descriptor.", nm, " is a tensor") : Status::ok();
      });
      continue;
    }
    if (p.kind[k] == Kind::Scalar) {
      c.optional_input(nm, v.in[k], false, p.in_dtype[k], {}, "",
                       std::string(nm) + " is given but descriptor." + nm + " is a scalar (pass its value in " + sname + ")");
      c.rule([&]() -> Status {
        if (!has_value) return invalid(plan.name(), sname, " is missing (descriptor.", nm, " is a scalar)");
        const DType vt = (*v.value[k])->dtype;
        if (vt != DType::F64 && vt != DType::I64 && vt != DType::Bool)
          return invalid(plan.name(), sname, " has dtype ", vt, ": a Scalar is f64, i64 or bool");
        if (dtype_category(vt) > dtype_category(p.in_dtype[k]))
          return invalid(plan.name(), sname, " is ", vt, " but descriptor.", nm, " is a ", p.in_dtype[k],
                         " scalar (it would change the result dtype)");
        return Status::ok();
      });
      continue;
    }
    // Absent: clamp's missing bound, or an operand the needed gradients do not read.
    const std::string why = g.fwd_kind[j] == Kind::Absent
                                ? std::string("descriptor.") + nm + " is absent"
                                : "the gradients computed (" + needed_list(p) + ") do not read " + nm;
    c.optional_input(nm, v.in[k], false, p.in_dtype[k], {}, "", std::string(nm) + " is given but " + why);
    c.rule([&] { return has_value ? invalid(plan.name(), sname, " is given but ", why) : Status::ok(); });
  }
  for (int m = 0; m < fa; ++m) {
    c.optional_output(kGradName[m], v.gout[m], (p.need >> m & 1) != 0, p.grad_dtype[m], p.in_shape[1 + m],
                      std::string(kGradName[m]) + " is given but descriptor." + kNeedName[m] + " is false");
    c.allow_in_place(kGradName[m], "dy");
  }
  c.disjoint();
  return c;
}

// The kernel (gradients of broadcast operands into their workspace scratch),
// then each scratch summed into its operand's gradient.
Status grad_call(const PlanBase& plan, const Problem& p, const ElementwiseGradReduce& g, const Stream& stream,
                 Workspace ws, const Views& v) {
  Views kv = v;
  const Dims dense = contiguous_strides(p.out_shape);
  int64_t numel = 1;
  for (int d = 0; d < p.out_shape.rank; ++d) numel *= p.out_shape[d];
  for (int m = 0; m < p.outputs; ++m)
    if (g.active[m])
      kv.gout[m] = TensorMut(static_cast<char*>(ws.ptr) + g.scratch_offset[m], p.grad_dtype[m], plan.device(),
                             p.out_shape, dense, numel);
  BARACUDA_RETURN_IF_ERROR(run_call(plan, p, stream, kv));
  for (int m = 0; m < p.outputs; ++m) {
    if (!g.active[m]) continue;
    ReduceToArgs r;
    r.x = kv.gout[m];
    r.y = v.gout[m];
    const Workspace inner(static_cast<char*>(ws.ptr) + g.inner_offset, ws.bytes - g.inner_offset);
    const Status st = g.plan[m].run(stream, g.plan[m].workspace_size() > 0 ? inner : Workspace{}, r);
    if (!st) return Status(st.code(), std::string(plan.name()) + ": summing " + kGradName[m] + " -> " + st.message());
  }
  return Status::ok();
}

}  // namespace

}  // namespace elementwise

using elementwise::Problem;
using elementwise::Views;

// Shared by the three plan classes (a friend of each).
struct ElementwisePlanAccess {
  static Problem& r(ElementwisePlanBase& p) { return p.r_; }
  static const Problem& r(const ElementwisePlanBase& p) { return p.r_; }

  template <class PlanT>
  static Result<PlanT> select(const char* name, const Stream& stream, const PlanPreference& pref,
                              const elementwise::Spec& spec) {
    PlanT plan;
    BARACUDA_RETURN_IF_ERROR(elementwise::resolve(spec, &plan.r_));
    BARACUDA_RETURN_IF_ERROR(finish(plan, name, stream, pref));
    return plan;
  }
  // The select prologue once plan.r_ holds the resolved problem.
  static Status finish(ElementwisePlanBase& plan, const char* name, const Stream& stream, const PlanPreference& pref) {
    const Problem& p = plan.r_;
    auto be = baracuda::detail::setup_plan(plan, name, elementwise::kFamily, stream, pref, p.common,
                                           elementwise::sku_op(p));
    if (!be) return be.status();
    auto& sku = baracuda::detail::PlanAccess::sku(plan);
    sku.precision.math = p.compute;
    sku.precision.accumulator = p.compute;
    if (be->backend != Backend::CpuReference) sku.variant = elementwise::path_name(elementwise::default_path(p));
    return Status::ok();
  }

  static Status can_implement(const ElementwisePlanBase& plan, const Views& v) {
    return elementwise::check_all(plan, plan.r_, v).status();
  }
  static Status run(const ElementwisePlanBase& plan, const Stream& stream, Workspace ws, const Views& v) {
    return baracuda::detail::run_plan(
        plan, stream, ws, elementwise::check_all(plan, plan.r_, v), [&] { return elementwise::run_call(plan, plan.r_, stream, v); },
        [&] { return elementwise::run_call(plan, plan.r_, stream, v); });
  }
  // Operand-gradient plans (the workspace and the inner reductions).
  template <class PlanT>
  static Status can_implement_grad(const PlanT& plan, const Views& v) {
    return elementwise::check_grad(plan, plan.r_, plan.red_, v).status();
  }
  template <class PlanT>
  static Status run_grad(const PlanT& plan, const Stream& stream, Workspace ws, const Views& v) {
    auto call = [&] { return elementwise::grad_call(plan, plan.r_, plan.red_, stream, ws, v); };
    return baracuda::detail::run_plan(plan, stream, ws, elementwise::check_grad(plan, plan.r_, plan.red_, v), call, call);
  }
  template <class PlanT>
  static Result<KernelSku> sku_for_grad(const PlanT& plan, const Stream& stream, Workspace ws, const Views& v) {
    return baracuda::detail::sku_for_run(plan, stream, ws, elementwise::check_grad(plan, plan.r_, plan.red_, v),
                                         [&]() -> Result<KernelSku> {
                                           KernelSku s = plan.sku();
                                           Views kv = v;  // a reduced gradient is written dense into the workspace
                                           for (int m = 0; m < plan.r_.outputs; ++m)
                                             if (plan.red_.active[m])
                                               kv.gout[m] = TensorMut(ws.ptr, plan.r_.grad_dtype[m], plan.device(),
                                                                      plan.r_.out_shape, contiguous_strides(plan.r_.out_shape), 0);
                                           s.variant = elementwise::path_name(
                                               elementwise::choose_path(plan.r_, elementwise::make_call(plan.r_, kv)));
                                           return s;
                                         });
  }
  template <class PlanT>
  static Status select_grad(PlanT& plan, const char* name, const Stream& stream, const PlanPreference& pref,
                            const elementwise::Spec& s, const bool* need);

  static Result<KernelSku> sku_for(const ElementwisePlanBase& plan, const Stream& stream, Workspace ws, const Views& v) {
    return baracuda::detail::sku_for_run(plan, stream, ws, elementwise::check_all(plan, plan.r_, v), [&]() -> Result<KernelSku> {
      KernelSku s = plan.sku();
      s.variant = elementwise::path_name(elementwise::choose_path(plan.r_, elementwise::make_call(plan.r_, v)));
      return s;
    });
  }
};

namespace {
using Kind = ElementwiseOperand::Kind;

Views views_of(const UnaryArgs& a) {
  Views v;
  v.in[0] = a.x;
  v.out = a.y;
  return v;
}
Views views_of(const BinaryArgs& a) {
  Views v;
  v.in[0] = a.a;
  v.in[1] = a.b;
  v.value[0] = &a.a_value;
  v.value[1] = &a.b_value;
  v.out = a.out;
  return v;
}
Views views_of(const TernaryArgs& a) {
  Views v;
  v.in[0] = a.a;
  v.in[1] = a.b;
  v.in[2] = a.c;
  v.value[0] = &a.a_value;
  v.value[1] = &a.b_value;
  v.value[2] = &a.c_value;
  v.out = a.out;
  return v;
}

elementwise::ParamSpec unary_spec(uint8_t op, DType out) { return elementwise::unary_params(static_cast<UnaryOp>(op), out); }
elementwise::ParamSpec binary_spec(uint8_t op, DType) { return elementwise::binary_params(static_cast<BinaryOp>(op)); }
elementwise::ParamSpec ternary_spec(uint8_t op, DType) { return elementwise::ternary_params(static_cast<TernaryOp>(op)); }

template <class Op>
bool op_valid(Op op) {
  return static_cast<int>(op) >= 0 && std::string_view(op_name(op)) != "?";
}
}  // namespace

// ---- UnaryPlan -------------------------------------------------------------------------
Result<UnaryPlan> UnaryPlan::select(const Stream& stream, const UnaryDescriptor& d, const PlanPreference& pref) {
  if (!op_valid(d.op)) return baracuda::detail::invalid("UnaryPlan", "unknown UnaryOp ", d.op);
  elementwise::Spec s{"UnaryPlan", 1, static_cast<uint8_t>(d.op), op_name(d.op), elementwise::domain_of(d.op),
                      {&d.x, nullptr, nullptr}, d.out_dtype, {d.alpha, d.beta, d.gamma}, unary_spec};
  auto plan = ElementwisePlanAccess::select<UnaryPlan>("UnaryPlan", stream, pref, s);
  if (plan) plan->desc_ = d;
  return plan;
}
Status UnaryPlan::can_implement(const UnaryArgs& a) const { return ElementwisePlanAccess::can_implement(*this, views_of(a)); }
Status UnaryPlan::run(const Stream& stream, Workspace ws, const UnaryArgs& a) const {
  return ElementwisePlanAccess::run(*this, stream, ws, views_of(a));
}
Result<KernelSku> UnaryPlan::sku_for(const Stream& stream, Workspace ws, const UnaryArgs& a) const {
  return ElementwisePlanAccess::sku_for(*this, stream, ws, views_of(a));
}

// ---- BinaryPlan ------------------------------------------------------------------------
Result<BinaryPlan> BinaryPlan::select(const Stream& stream, const BinaryDescriptor& d, const PlanPreference& pref) {
  if (!op_valid(d.op)) return baracuda::detail::invalid("BinaryPlan", "unknown BinaryOp ", d.op);
  elementwise::Spec s{"BinaryPlan", 2, static_cast<uint8_t>(d.op), op_name(d.op), elementwise::domain_of(d.op),
                      {&d.a, &d.b, nullptr}, d.out_dtype, {d.alpha, d.beta, d.gamma}, binary_spec};
  auto plan = ElementwisePlanAccess::select<BinaryPlan>("BinaryPlan", stream, pref, s);
  if (plan) plan->desc_ = d;
  return plan;
}
Status BinaryPlan::can_implement(const BinaryArgs& a) const { return ElementwisePlanAccess::can_implement(*this, views_of(a)); }
Status BinaryPlan::run(const Stream& stream, Workspace ws, const BinaryArgs& a) const {
  return ElementwisePlanAccess::run(*this, stream, ws, views_of(a));
}
Result<KernelSku> BinaryPlan::sku_for(const Stream& stream, Workspace ws, const BinaryArgs& a) const {
  return ElementwisePlanAccess::sku_for(*this, stream, ws, views_of(a));
}

// ---- TernaryPlan -----------------------------------------------------------------------
Result<TernaryPlan> TernaryPlan::select(const Stream& stream, const TernaryDescriptor& d, const PlanPreference& pref) {
  if (!op_valid(d.op)) return baracuda::detail::invalid("TernaryPlan", "unknown TernaryOp ", d.op);
  elementwise::Spec s{"TernaryPlan", 3, static_cast<uint8_t>(d.op), op_name(d.op), elementwise::domain_of(d.op),
                      {&d.a, &d.b, &d.c}, d.out_dtype, {d.alpha, d.beta, d.gamma}, ternary_spec};
  auto plan = ElementwisePlanAccess::select<TernaryPlan>("TernaryPlan", stream, pref, s);
  if (plan) plan->desc_ = d;
  return plan;
}
Status TernaryPlan::can_implement(const TernaryArgs& a) const { return ElementwisePlanAccess::can_implement(*this, views_of(a)); }
Status TernaryPlan::run(const Stream& stream, Workspace ws, const TernaryArgs& a) const {
  return ElementwisePlanAccess::run(*this, stream, ws, views_of(a));
}
Result<KernelSku> TernaryPlan::sku_for(const Stream& stream, Workspace ws, const TernaryArgs& a) const {
  return ElementwisePlanAccess::sku_for(*this, stream, ws, views_of(a));
}

// ---- UnaryBackwardPlan -----------------------------------------------------------------
namespace {
Views views_of(const UnaryBackwardDescriptor& d, const Problem& p, const UnaryBackwardArgs& a) {
  Views v;
  v.in[0] = a.dy;
  v.names[0] = "dy";
  v.out = a.dx;
  v.out_name = "dx";
  if (p.arity == 1) {  // copy: dx = dy cast to x's dtype
    v.unused = a.x.data ? &a.x : &a.y;
    v.unused_msg = a.x.data ? "x is given but copy's gradient does not read it (dx is dy cast to x's dtype)"
                            : "y is given but copy's gradient does not read it (dx is dy cast to x's dtype)";
  } else if (d.from_output) {
    v.in[1] = a.y;
    v.names[1] = "y";
    v.unused = &a.x;
    v.unused_msg = "x is given but descriptor.from_output is set (the gradient reads y)";
  } else {
    v.in[1] = a.x;
    v.names[1] = "x";
    v.unused = &a.y;
    v.unused_msg = "y is given but descriptor.from_output is false (the gradient reads x)";
  }
  return v;
}
}  // namespace

Result<UnaryBackwardPlan> UnaryBackwardPlan::select(const Stream& stream, const UnaryBackwardDescriptor& d,
                                                    const PlanPreference& pref) {
  constexpr const char* name = "UnaryBackwardPlan";
  const UnaryDescriptor& f = d.forward;
  if (!op_valid(f.op)) return baracuda::detail::invalid(name, "unknown UnaryOp ", f.op);
  // The forward's rules and messages first.
  Problem fwd;
  elementwise::Spec s{name, 1, static_cast<uint8_t>(f.op), op_name(f.op), elementwise::domain_of(f.op),
                      {&f.x, nullptr, nullptr}, f.out_dtype, {f.alpha, f.beta, f.gamma}, unary_spec};
  BARACUDA_RETURN_IF_ERROR(elementwise::resolve(s, &fwd));
  if (!elementwise::has_gradient(f.op))
    return baracuda::detail::unsupported(name, op_name(f.op), " has no gradient (its output is bool or integer)");
  const DType xt = f.x.dtype;
  if (!is_floating_point(xt) || !is_floating_point(fwd.out))
    return baracuda::detail::unsupported(name, "the gradient of ", op_name(f.op), " needs floating x and y, got ", xt,
                                         " -> ", fwd.out);
  if (d.from_output && !elementwise::has_gradient_from_output(f.op))
    return baracuda::detail::invalid(name, "from_output: the gradient of ", op_name(f.op),
                                     " is not taken from y (only sigmoid, tanh, exp, expm1, sqrt, reciprocal, relu)");
  UnaryBackwardPlan plan;
  Problem& b = plan.r_;
  if (f.op == UnaryOp::Copy) {
    if (d.from_output) return baracuda::detail::invalid(name, "from_output: copy's gradient reads neither x nor y");
    // dx = dy cast to x's dtype: a forward copy from dy's dtype.
    b = fwd;
    b.in_dtype[0] = b.common = fwd.out;
    b.compute = fwd.out == DType::F64 ? DType::F64 : DType::F32;
    b.out = xt;
  } else {
    if (fwd.out != xt)
      return baracuda::detail::unsupported(name, "dy has the forward's out_dtype ", fwd.out, " but x is ", xt,
                                           ": the gradient needs one dtype (cast dy first)");
    b = fwd;
    b.arity = 2;
    b.grad = d.from_output ? 2 : 1;
    b.kind[1] = ElementwiseOperand::Kind::Tensor;
    b.in_dtype[0] = b.in_dtype[1] = xt;
    b.in_shape[1] = f.x.shape;
    b.in_shape[0] = f.x.shape;
  }
  b.out_shape = f.x.shape;
  BARACUDA_RETURN_IF_ERROR(ElementwisePlanAccess::finish(plan, name, stream, pref));
  plan.desc_ = d;
  return plan;
}
Status UnaryBackwardPlan::can_implement(const UnaryBackwardArgs& a) const {
  return ElementwisePlanAccess::can_implement(*this, views_of(desc_, r_, a));
}
Status UnaryBackwardPlan::run(const Stream& stream, Workspace ws, const UnaryBackwardArgs& a) const {
  return ElementwisePlanAccess::run(*this, stream, ws, views_of(desc_, r_, a));
}
Result<KernelSku> UnaryBackwardPlan::sku_for(const Stream& stream, Workspace ws, const UnaryBackwardArgs& a) const {
  return ElementwisePlanAccess::sku_for(*this, stream, ws, views_of(desc_, r_, a));
}

// ---- BinaryBackwardPlan / TernaryBackwardPlan -------------------------------------------
template <class PlanT>
Status ElementwisePlanAccess::select_grad(PlanT& plan, const char* name, const Stream& stream,
                                          const PlanPreference& pref, const elementwise::Spec& s, const bool* need) {
  using baracuda::detail::invalid;
  using baracuda::detail::unsupported;
  // The forward's rules and messages first.
  Problem fwd;
  BARACUDA_RETURN_IF_ERROR(elementwise::resolve(s, &fwd));
  const int fa = s.arity;
  const bool binary = fa == 2;
  const bool differentiable = binary ? elementwise::has_gradient(static_cast<BinaryOp>(s.op))
                                     : elementwise::has_gradient(static_cast<TernaryOp>(s.op));
  if (!differentiable)
    return unsupported(name, s.op_name, " has no gradient (its output is bool, integer or piecewise constant)");
  const bool where = !binary && static_cast<TernaryOp>(s.op) == TernaryOp::Where;
  for (int k = 0; k < fa; ++k) {
    if (fwd.kind[k] != Kind::Tensor || (where && k == 0)) continue;
    if (!is_floating_point(fwd.in_dtype[k]))
      return unsupported(name, "the gradient of ", s.op_name, " needs floating operands, got ", elementwise::kNames[fa][k],
                         " of dtype ", fwd.in_dtype[k]);
  }
  if (fwd.out != fwd.common)
    return unsupported(name, "dy has the forward's out_dtype ", fwd.out, " but the operands' common dtype is ",
                       fwd.common, ": the gradient needs one dtype (cast dy first)");
  // need_*: at least one; never for a scalar, an absent bound or where's condition.
  int need_mask = 0;
  for (int k = 0; k < fa; ++k) {
    if (!need[k]) continue;
    const char* nm = elementwise::kNames[fa][k];
    if (where && k == 0)
      return invalid(name, "where's condition a is bool and has no gradient: ", elementwise::kNeedName[k], " must be false");
    if (fwd.kind[k] == Kind::Scalar)
      return invalid(name, elementwise::kNeedName[k], " is true but descriptor.", nm,
                     " is a scalar: a host scalar gets no gradient (set ", elementwise::kNeedName[k], " = false)");
    if (fwd.kind[k] == Kind::Absent)
      return invalid(name, elementwise::kNeedName[k], " is true but descriptor.", nm, " is absent");
    need_mask |= 1 << k;
  }
  if (need_mask == 0) return invalid(name, "every need_* is false: no gradient to compute");
  int reads = 0;
  for (int m = 0; m < fa; ++m)
    if (need_mask >> m & 1)
      reads |= binary ? elementwise::grad_reads(static_cast<BinaryOp>(s.op), m)
                      : elementwise::grad_reads(static_cast<TernaryOp>(s.op), m);
  Problem& b = plan.r_;
  b = fwd;
  b.arity = 1 + fa;
  b.grad = binary ? 3 : 4;
  b.outputs = fa;
  b.need = static_cast<uint8_t>(need_mask);
  b.out = fwd.common;
  b.kind[0] = Kind::Tensor;
  b.in_dtype[0] = fwd.out;
  b.in_shape[0] = fwd.out_shape;
  for (int k = 0; k < fa; ++k) {
    plan.red_.fwd_kind[k] = fwd.kind[k];
    b.kind[1 + k] = (reads >> k & 1) ? fwd.kind[k] : Kind::Absent;
    b.in_dtype[1 + k] = fwd.in_dtype[k];
    b.in_shape[1 + k] = fwd.in_shape[k];
    b.grad_dtype[k] = fwd.kind[k] == Kind::Tensor ? fwd.in_dtype[k] : fwd.common;
  }
  for (int k = 1 + fa; k < 4; ++k) b.kind[k] = Kind::Absent;
  BARACUDA_RETURN_IF_ERROR(finish(plan, name, stream, pref));
  // Broadcast operands: the gradient into a scratch tensor, then ReduceToPlan.
  const int64_t full = baracuda::shape_numel(fwd.out_shape);
  size_t bytes = 0, inner = 0;
  auto align = [](size_t x) { return (x + 255) / 256 * 256; };
  for (int m = 0; m < fa; ++m) {
    if (!(need_mask >> m & 1) || baracuda::shape_numel(fwd.in_shape[m]) == full) continue;
    ReduceToDescriptor rd;
    rd.dtype = b.grad_dtype[m];
    rd.shape = fwd.out_shape;
    rd.target = fwd.in_shape[m];
    auto r = ReduceToPlan::select(stream, rd, pref);
    if (!r)
      return Status(r.status().code(), std::string(name) + ": summing " + elementwise::kGradName[m] + " from the broadcast shape " +
                                           fwd.out_shape.to_string() + " to " + elementwise::kNames[fa][m] +
                                           "'s shape needs ReduceToPlan, which refused: " + r.status().message());
    plan.red_.active[m] = true;
    plan.red_.scratch_offset[m] = bytes;
    bytes += align(static_cast<size_t>(full) * dtype_size(rd.dtype));
    inner = std::max(inner, r->workspace_size());
    plan.red_.plan[m] = std::move(*r);
  }
  plan.red_.inner_offset = bytes;
  const size_t total = bytes + inner;
  baracuda::detail::PlanAccess::set_workspace(plan, std::max(plan.workspace_size(), total));
  return Status::ok();
}

namespace {
Views grad_views(const BinaryBackwardArgs& a) {
  Views v;
  v.in[0] = a.dy;
  v.in[1] = a.a;
  v.in[2] = a.b;
  v.value[1] = &a.a_value;
  v.value[2] = &a.b_value;
  v.gout[0] = a.da;
  v.gout[1] = a.db;
  return v;
}
Views grad_views(const TernaryBackwardArgs& a) {
  Views v;
  v.in[0] = a.dy;
  v.in[1] = a.a;
  v.in[2] = a.b;
  v.in[3] = a.c;
  v.value[1] = &a.a_value;
  v.value[2] = &a.b_value;
  v.value[3] = &a.c_value;
  v.gout[0] = a.da;
  v.gout[1] = a.db;
  v.gout[2] = a.dc;
  return v;
}
}  // namespace

Result<BinaryBackwardPlan> BinaryBackwardPlan::select(const Stream& stream, const BinaryBackwardDescriptor& d,
                                                      const PlanPreference& pref) {
  constexpr const char* name = "BinaryBackwardPlan";
  const BinaryDescriptor& f = d.forward;
  if (!op_valid(f.op)) return baracuda::detail::invalid(name, "unknown BinaryOp ", f.op);
  elementwise::Spec s{name, 2, static_cast<uint8_t>(f.op), op_name(f.op), elementwise::domain_of(f.op),
                      {&f.a, &f.b, nullptr}, f.out_dtype, {f.alpha, f.beta, f.gamma}, binary_spec};
  const bool need[3] = {d.need_a, d.need_b, false};
  BinaryBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(ElementwisePlanAccess::select_grad(plan, name, stream, pref, s, need));
  plan.desc_ = d;
  return plan;
}
Status BinaryBackwardPlan::can_implement(const BinaryBackwardArgs& a) const {
  return ElementwisePlanAccess::can_implement_grad(*this, grad_views(a));
}
Status BinaryBackwardPlan::run(const Stream& stream, Workspace ws, const BinaryBackwardArgs& a) const {
  return ElementwisePlanAccess::run_grad(*this, stream, ws, grad_views(a));
}
Result<KernelSku> BinaryBackwardPlan::sku_for(const Stream& stream, Workspace ws, const BinaryBackwardArgs& a) const {
  return ElementwisePlanAccess::sku_for_grad(*this, stream, ws, grad_views(a));
}

Result<TernaryBackwardPlan> TernaryBackwardPlan::select(const Stream& stream, const TernaryBackwardDescriptor& d,
                                                        const PlanPreference& pref) {
  constexpr const char* name = "TernaryBackwardPlan";
  const TernaryDescriptor& f = d.forward;
  if (!op_valid(f.op)) return baracuda::detail::invalid(name, "unknown TernaryOp ", f.op);
  elementwise::Spec s{name, 3, static_cast<uint8_t>(f.op), op_name(f.op), elementwise::domain_of(f.op),
                      {&f.a, &f.b, &f.c}, f.out_dtype, {f.alpha, f.beta, f.gamma}, ternary_spec};
  const bool need[3] = {d.need_a, d.need_b, d.need_c};
  TernaryBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(ElementwisePlanAccess::select_grad(plan, name, stream, pref, s, need));
  plan.desc_ = d;
  return plan;
}
Status TernaryBackwardPlan::can_implement(const TernaryBackwardArgs& a) const {
  return ElementwisePlanAccess::can_implement_grad(*this, grad_views(a));
}
Status TernaryBackwardPlan::run(const Stream& stream, Workspace ws, const TernaryBackwardArgs& a) const {
  return ElementwisePlanAccess::run_grad(*this, stream, ws, grad_views(a));
}
Result<KernelSku> TernaryBackwardPlan::sku_for(const Stream& stream, Workspace ws, const TernaryBackwardArgs& a) const {
  return ElementwisePlanAccess::sku_for_grad(*this, stream, ws, grad_views(a));
}

}  // namespace baracuda

// Contract traits of the elementwise family: UnaryPlan, BinaryPlan,
// TernaryPlan, UnaryBackwardPlan, BinaryBackwardPlan, TernaryBackwardPlan,
// FactoryPlan. A new elementwise plan joins with a traits struct here and one
// INSTANTIATE line per suite in tests/contract/cpu_elementwise.cpp and
// cuda_elementwise.cpp.
//
// Valid descriptors draw an op from the whole table, dtypes of every kind,
// an output shape of rank 0..8 and per operand a broadcastable shape (leading
// axes dropped, extents set to 1, rank 0), a host scalar or (clamp's bounds)
// nothing, now and then op parameters and an explicit out_dtype; select()
// decides what is valid (a draw it refuses is drawn again), so the fuzz
// follows the plans' own domain rules instead of a copy of them here.
//
// Host scalars travel in the Args beside the tensors. Their values are fixed
// per descriptor (a hash of it picks them from a menu of ordinary and special
// values, sometimes of a lower category than the descriptor's, which is
// allowed), so every call built for one plan gets the same values; the output
// slot's bind sets them. A scalar (or absent) operand's tensor slot is an
// optional tensor the descriptor does not use.
//
// The output may be exactly any tensor input of its dtype and shape (in place).
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/elementwise.hpp"
#include "contract/fuzz.hpp"
#include "ops/elementwise/functors_grad.hpp"  // grad_reads: the operands each gradient reads
#include "contract/harness.hpp"

namespace contract {
namespace ew_contract {

using baracuda::BinaryOp;
using baracuda::ElementwiseOperand;
using baracuda::Scalar;
using baracuda::TernaryOp;
using baracuda::UnaryOp;
using Kind = ElementwiseOperand::Kind;

#define BT_EW_COUNT(E, name, dom, params) +1
inline constexpr int kOps[4] = {0, 0 BARACUDA_UNARY_OPS(BT_EW_COUNT), 0 BARACUDA_BINARY_OPS(BT_EW_COUNT),
                                0 BARACUDA_TERNARY_OPS(BT_EW_COUNT)};
#undef BT_EW_COUNT

inline constexpr DType kFloat[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
inline constexpr DType kInteger[] = {DType::I8, DType::U8, DType::I16, DType::I32, DType::I64};

// Mostly floating, often integers, now and then bool.
inline DType any_engine_dtype(Fuzz& f) {
  const double u = std::uniform_real_distribution<double>(0, 1)(f.rng);
  if (u < 0.55) return kFloat[f.range(0, 3)];
  if (u < 0.9) return kInteger[f.range(0, 4)];
  return DType::Bool;
}

// ---- descriptors of any arity ------------------------------------------------------
inline ElementwiseOperand& operand(baracuda::UnaryDescriptor& d, int) { return d.x; }
inline ElementwiseOperand& operand(baracuda::BinaryDescriptor& d, int k) { return k == 0 ? d.a : d.b; }
inline ElementwiseOperand& operand(baracuda::TernaryDescriptor& d, int k) { return k == 0 ? d.a : k == 1 ? d.b : d.c; }
inline const ElementwiseOperand& operand(const baracuda::UnaryDescriptor& d, int) { return d.x; }
inline const ElementwiseOperand& operand(const baracuda::BinaryDescriptor& d, int k) { return k == 0 ? d.a : d.b; }
inline const ElementwiseOperand& operand(const baracuda::TernaryDescriptor& d, int k) {
  return k == 0 ? d.a : k == 1 ? d.b : d.c;
}
template <class Desc>
constexpr int arity_of() {
  if constexpr (std::is_same_v<Desc, baracuda::UnaryDescriptor>) return 1;
  else if constexpr (std::is_same_v<Desc, baracuda::BinaryDescriptor>) return 2;
  else return 3;
}
inline constexpr const char* kNames[4][3] = {{}, {"x"}, {"a", "b"}, {"a", "b", "c"}};
inline constexpr const char* kOutName[4] = {"", "y", "out", "out"};

// Output shapes: rank 0..4 with extents 1..5, now and then rank 5..8 with
// extents 1..2, or a few thousand elements (the CPU reference works in chunks
// of 4096 elements, each starting its odometer from its first index).
inline Dims out_shape(Fuzz& f) {
  Dims s;
  if (f.chance(0.02)) {
    if (f.chance(0.5)) s.push_back(f.range(2, 3));
    s.push_back(f.range(2049, 6000));
    return s;
  }
  if (f.chance(0.15)) {
    for (int i = static_cast<int>(f.range(5, baracuda::kMaxRank)); i > 0; --i) s.push_back(f.range(1, 2));
    return s;
  }
  for (int i = static_cast<int>(f.range(0, 4)); i > 0; --i) s.push_back(f.range(1, 5));
  return s;
}
// A shape that broadcasts to `out`: some leading axes dropped, some extents 1.
inline Dims broadcast_from(const Dims& out, Fuzz& f) {
  if (f.chance(0.5)) return out;
  Dims s;
  const int drop = f.chance(0.3) ? static_cast<int>(f.range(0, out.rank)) : 0;
  for (int i = drop; i < out.rank; ++i) s.push_back(f.chance(0.35) ? 1 : out[i]);
  return s;
}

inline double any_param(Fuzz& f) {
  return f.pick<double>({0.0, 0.5, -0.5, 1.0, 2.0, -1.0, 3.0, 0.01, 1e-6, 6.0, -2.0, 1e30, 0.25});
}

// One random descriptor of the family; select() may still refuse it.
template <class Desc>
Desc draw(Fuzz& f) {
  constexpr int n = arity_of<Desc>();
  Desc d;
  using Op = decltype(d.op);
  d.op = static_cast<Op>(f.range(0, kOps[n] - 1));
  const Dims shape = out_shape(f);
  const bool where = n == 3 && static_cast<TernaryOp>(d.op) == TernaryOp::Where;
  const bool clamp = n == 3 && static_cast<TernaryOp>(d.op) == TernaryOp::Clamp;
  // Operands mostly share a dtype (the typed paths); sometimes each draws its own.
  const DType common = any_engine_dtype(f);
  const bool mixed = f.chance(0.25);
  const int tensor_at = static_cast<int>(f.range(0, n - 1));  // at least this one is a tensor
  for (int k = 0; k < n; ++k) {
    ElementwiseOperand& o = operand(d, k);
    const DType t = where && k == 0 ? DType::Bool : mixed ? any_engine_dtype(f) : common;
    const double u = std::uniform_real_distribution<double>(0, 1)(f.rng);
    if (n == 1 || k == tensor_at || u < 0.6) {
      o = ElementwiseOperand::tensor(t, broadcast_from(shape, f));
      if (k != tensor_at && f.chance(0.15)) o.shape = Dims{};  // a 0-dim tensor
    } else if (clamp && u < 0.8) {
      o = ElementwiseOperand::absent();
    } else {
      const DType st = where && k == 0 ? DType::Bool
                       : baracuda::is_floating_point(t) ? DType::F64
                       : t == DType::Bool ? DType::Bool
                                           : DType::I64;
      o = ElementwiseOperand::scalar(f.chance(0.2) ? f.pick<DType>({DType::F64, DType::I64, DType::Bool}) : st);
    }
  }
  if (f.chance(0.5)) {  // the tensor that carries the output shape keeps every axis
    ElementwiseOperand& o = operand(d, tensor_at);
    o.shape = shape;
  }
  if (f.chance(0.3)) d.alpha = any_param(f);
  if (f.chance(0.15)) d.beta = any_param(f);
  if (f.chance(0.08)) d.gamma = f.pick<double>({0.0, 1.0});
  if (f.chance(0.2)) d.out_dtype = any_engine_dtype(f);
  return d;
}

// A small valid descriptor: drawn until select() accepts it (parameters and
// out_dtype dropped first when they are what it refuses).
template <class Plan, class Desc>
Desc valid(Rng& rng) {
  Fuzz f(rng);
  for (int tries = 0; tries < 1000; ++tries) {
    Desc d = draw<Desc>(f);
    if (Plan::select(Stream::cpu(), d)) return d;
    d.alpha = d.beta = d.gamma = std::nullopt;
    if (Plan::select(Stream::cpu(), d)) return d;
    d.out_dtype = std::nullopt;
    if (Plan::select(Stream::cpu(), d)) return d;
  }
  throw std::runtime_error("elementwise traits: no valid descriptor in 1000 draws");
}

inline std::string operand_str(const ElementwiseOperand& o) {
  std::ostringstream os;
  const int kind = static_cast<int>(o.kind);
  const std::string dt = dtype_known(o.dtype) ? std::string(baracuda::dtype_name(o.dtype)) : "dtype#" + std::to_string(int(o.dtype));
  if (o.kind == Kind::Tensor) os << "tensor " << dt << " " << dims_str(o.shape);
  else if (o.kind == Kind::Scalar) os << "scalar " << dt;
  else if (o.kind == Kind::Absent) os << "absent";
  else os << "kind#" << kind;
  return os.str();
}

template <class Desc>
std::string describe(const Desc& d, const char* what) {
  constexpr int n = arity_of<Desc>();
  std::ostringstream os;
  os << what << "{op " << baracuda::op_name(d.op) << " (" << static_cast<int>(d.op) << ")";
  for (int k = 0; k < n; ++k) os << ", " << kNames[n][k] << " " << operand_str(operand(d, k));
  if (d.out_dtype) os << ", out_dtype " << (dtype_known(*d.out_dtype) ? baracuda::dtype_name(*d.out_dtype) : "?");
  if (d.alpha) os << ", alpha " << *d.alpha;
  if (d.beta) os << ", beta " << *d.beta;
  if (d.gamma) os << ", gamma " << *d.gamma;
  os << "}";
  return os.str();
}

// ---- host scalar values ------------------------------------------------------------------
// The value of a scalar operand declared `declared`, picked by `h` (a hash of
// the descriptor and the operand's index): ordinary values, zeros of both
// signs, huge / tiny / non-finite ones; now and then of a lower category than
// declared (an integer for an f64 scalar, a bool for an i64 one).
inline Scalar scalar_value(DType declared, uint64_t h) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  static constexpr double kF[] = {2.5, -0.75, 0.0, -0.0, 3.0, 1e-3, -7.0, 0.5, 1.0, 65504.0, 1e30, -1e-40, inf, -inf,
                                  std::numeric_limits<double>::quiet_NaN()};
  static constexpr int64_t kI[] = {0, 1, -1, 2, 3, -7, 100, 127, -128, 65, 255, 31, INT64_MAX, INT64_MIN};
  const uint64_t pick = (h >> 32) % 100;
  if (declared == DType::Bool || (declared == DType::I64 && pick < 10)) return Scalar(h % 2 == 0);
  if (declared == DType::I64 || pick < 15) return Scalar(static_cast<long long>(kI[h % std::size(kI)]));
  return Scalar(kF[h % std::size(kF)]);
}

template <class Desc>
std::optional<Scalar> value_of(const Desc& d, int k, const std::string& described) {
  const ElementwiseOperand& o = operand(d, k);
  if (o.kind != Kind::Scalar) return std::nullopt;
  return scalar_value(o.dtype, bt::splitmix64(bt::fnv1a(described) + static_cast<uint64_t>(k)));
}

// Integer inputs: small values of both signs with zeros (division by zero,
// shifts past the width), now and then the dtype's extremes.
inline void integer_values(DType t, Rng& rng, std::vector<double>& v) {
  Fuzz f(rng);
  const bool is_unsigned = t == DType::U8;
  const double lo = t == DType::I8 ? -128 : t == DType::I16 ? -32768 : t == DType::I32 ? -2147483648.0 : -9.2e18;
  const double hi = t == DType::U8    ? 255
                    : t == DType::I8  ? 127
                    : t == DType::I16 ? 32767
                    : t == DType::I32 ? 2147483647.0
                                      : 9.2e18;
  for (double& x : v) {
    if (f.chance(0.9)) x = static_cast<double>(is_unsigned ? f.range(0, 40) : f.range(-20, 20));
    else x = f.chance(0.5) ? (is_unsigned ? 0.0 : lo) : hi;
  }
}

// ---- slots ---------------------------------------------------------------------------------
// Comma-separated lists of the inputs an output may replace, by subset of {0, 1, 2}.
inline const char* in_place_list(int arity, unsigned mask) {
  static constexpr const char* kBin[4] = {nullptr, "a", "b", "a,b"};
  static constexpr const char* kTer[8] = {nullptr, "a", "b", "a,b", "c", "a,c", "b,c", "a,b,c"};
  return arity == 1 ? (mask ? "x" : nullptr) : arity == 2 ? kBin[mask & 3] : kTer[mask & 7];
}

template <class Args>
void bind_input(Args& a, int k, const TensorMut& t) {
  if constexpr (std::is_same_v<Args, baracuda::UnaryArgs>) a.x = t, (void)k;
  else if constexpr (std::is_same_v<Args, baracuda::BinaryArgs>) (k == 0 ? a.a : a.b) = t;
  else (k == 0 ? a.a : k == 1 ? a.b : a.c) = t;
}
template <class Args>
void bind_output(Args& a, const TensorMut& t) {
  if constexpr (std::is_same_v<Args, baracuda::UnaryArgs>) a.y = t;
  else a.out = t;
}
template <class Args>
void set_value(Args& a, int k, const std::optional<Scalar>& v) {
  if constexpr (std::is_same_v<Args, baracuda::BinaryArgs>) {
    if (k < 2) (k == 0 ? a.a_value : a.b_value) = v;
  } else if constexpr (std::is_same_v<Args, baracuda::TernaryArgs>) {
    (k == 0 ? a.a_value : k == 1 ? a.b_value : a.c_value) = v;
  } else {
    (void)a, (void)k, (void)v;
  }
}

template <class Plan, class Args, class Desc>
std::vector<Slot<Args>> slots(const Plan& p, const char* what) {
  constexpr int n = arity_of<Desc>();
  const Desc& d = p.descriptor();
  const std::string described = describe(d, what);
  std::vector<Slot<Args>> v;
  std::optional<Scalar> values[3];
  unsigned in_place = 0;
  using BindFn = void (*)(Args&, const TensorMut&);
  static constexpr BindFn kBind[3] = {[](Args& a, const TensorMut& t) { bind_input(a, 0, t); },
                                      [](Args& a, const TensorMut& t) { bind_input(a, 1, t); },
                                      [](Args& a, const TensorMut& t) { bind_input(a, 2, t); }};
  for (int k = 0; k < n; ++k) {
    const ElementwiseOperand& o = operand(d, k);
    const char* nm = kNames[n][k];
    if (o.kind != Kind::Tensor) {  // a plausible tensor the plan must refuse when given
      v.push_back(optional_input<Args>(false, nm, o.kind == Kind::Scalar ? o.dtype : p.common_dtype(), p.output_shape(),
                                       kBind[k]));
      values[k] = value_of(d, k, described);
      continue;
    }
    Slot<Args> s = input<Args>(nm, o.dtype, o.shape, kBind[k]);
    if (baracuda::is_integral(o.dtype)) {
      const DType t = o.dtype;
      s.values = [t](Rng& rng, std::vector<double>& x) { integer_values(t, rng, x); };
    }
    v.push_back(s);
    if (o.dtype == p.out_dtype() && o.shape == p.output_shape()) in_place |= 1u << k;
  }
  Slot<Args> out = output<Args>(kOutName[n], p.out_dtype(), p.output_shape(), nullptr, in_place_list(n, in_place));
  out.bind = [values](Args& a, const TensorMut& t) {
    bind_output(a, t);
    for (int k = 0; k < 3; ++k) set_value(a, k, values[k]);
  };
  v.push_back(out);
  return v;
}

// ---- zero-size, invalid and mutated descriptors ----------------------------------------
inline ElementwiseOperand T(DType t, Dims s) { return ElementwiseOperand::tensor(t, s); }
inline ElementwiseOperand S(DType t = DType::F64) { return ElementwiseOperand::scalar(t); }

template <class Desc>
std::vector<DescMutator<Desc>> mutators() {
  constexpr int n = arity_of<Desc>();
  using Op = decltype(Desc{}.op);
  std::vector<DescMutator<Desc>> v;
  auto pick = [](Fuzz& f) { return static_cast<int>(f.range(0, n - 1)); };
  auto tensor_shape = [pick](Desc& d, Fuzz& f) -> Dims& {  // some operand, made a tensor
    ElementwiseOperand& o = operand(d, pick(f));
    if (o.kind != Kind::Tensor) o = ElementwiseOperand::tensor(DType::F32, Dims{});
    return o.shape;
  };
  v.push_back({"desc.extent_negative", [tensor_shape](Desc& d, Fuzz& f) {
                 Dims& s = tensor_shape(d, f);
                 if (s.rank == 0) s.push_back(1);
                 s[static_cast<int>(f.range(0, s.rank - 1))] = f.negative();
               }});
  v.push_back({"desc.extent_huge", [tensor_shape](Desc& d, Fuzz& f) {
                 Dims& s = tensor_shape(d, f);
                 if (s.rank == 0) s.push_back(1);
                 s[static_cast<int>(f.range(0, s.rank - 1))] = f.huge();
               }});
  v.push_back({"desc.extents_overflow", [tensor_shape](Desc& d, Fuzz& f) {  // product far past 2^63
                 Dims& s = tensor_shape(d, f);
                 s = Dims();
                 const int r = static_cast<int>(f.range(2, baracuda::kMaxRank));
                 for (int i = 0; i < r; ++i) s.push_back(int64_t{1} << f.range(64 / r, 62 / 2 + 2));
               }});
  v.push_back({"desc.extents_wrap", [tensor_shape](Desc& d, Fuzz& f) {  // product exactly 2^64 or 2^63
                 Dims& s = tensor_shape(d, f);
                 s = Dims();
                 const int r = static_cast<int>(f.range(2, baracuda::kMaxRank));
                 for (int64_t x : f.pow2_split(r, f.chance(0.7) ? 64 : 63)) s.push_back(x);
               }});
  if constexpr (n > 1) {
    // Each operand small (its own product fits), their broadcast past int64.
    v.push_back({"desc.broadcast_product_wraps", [](Desc& d, Fuzz& f) {
                   const int r = static_cast<int>(f.range(n, baracuda::kMaxRank));
                   const auto parts = f.pow2_split(r, f.chance(0.7) ? 64 : 63);
                   for (int k = 0; k < n; ++k) {
                     Dims s;
                     for (int i = 0; i < r; ++i) s.push_back(i % n == k ? parts[static_cast<size_t>(i)] : 1);
                     const DType t = operand(d, k).kind == Kind::Tensor ? operand(d, k).dtype : DType::F32;
                     operand(d, k) = ElementwiseOperand::tensor(t, s);
                   }
                 }});
  }
  v.push_back({"desc.extent_mismatch", [tensor_shape](Desc& d, Fuzz& f) {  // may no longer broadcast
                 Dims& s = tensor_shape(d, f);
                 if (s.rank == 0) s.push_back(f.range(0, 7));
                 else s[static_cast<int>(f.range(0, s.rank - 1))] = f.range(0, 7);
               }});
  v.push_back({"desc.rank_corrupt", [tensor_shape](Desc& d, Fuzz& f) { tensor_shape(d, f).rank = f.corrupt_rank(); }});
  v.push_back({"desc.op_any", [](Desc& d, Fuzz& f) { d.op = static_cast<Op>(f.range(0, 255)); }});
  v.push_back({"desc.dtype_any", [pick](Desc& d, Fuzz& f) { operand(d, pick(f)).dtype = f.any_dtype(); }});
  v.push_back({"desc.kind_any", [pick](Desc& d, Fuzz& f) {
                 operand(d, pick(f)).kind = static_cast<Kind>(f.chance(0.7) ? f.range(0, 2) : f.range(0, 255));
               }});
  v.push_back({"desc.all_scalars", [](Desc& d, Fuzz& f) {
                 for (int k = 0; k < n; ++k)
                   operand(d, k) = ElementwiseOperand::scalar(f.pick<DType>({DType::F64, DType::I64, DType::Bool}));
               }});
  v.push_back({"desc.out_dtype_any", [](Desc& d, Fuzz& f) { d.out_dtype = f.any_dtype(); }});
  v.push_back({"desc.params_any", [](Desc& d, Fuzz& f) {
                 std::optional<double>* ps[3] = {&d.alpha, &d.beta, &d.gamma};
                 *ps[f.range(0, 2)] = f.any_double();
                 if (f.chance(0.3)) *ps[f.range(0, 2)] = f.any_double();
               }});
  return v;
}

}  // namespace ew_contract

// ---------------------------------------------------------------------------
template <class PlanT, class DescT, class ArgsT>
struct ElementwiseTraitsOf {
  using Plan = PlanT;
  using Desc = DescT;
  using Args = ArgsT;
  static constexpr int kArity = ew_contract::arity_of<Desc>();
  static constexpr const char* kName = kArity == 1 ? "UnaryPlan" : kArity == 2 ? "BinaryPlan" : "TernaryPlan";
  static constexpr const char* kDesc =
      kArity == 1 ? "UnaryDescriptor" : kArity == 2 ? "BinaryDescriptor" : "TernaryDescriptor";

  static Desc valid_desc(Rng& rng) { return ew_contract::valid<Plan, Desc>(rng); }
  static std::vector<Slot<Args>> slots(const Plan& p) { return ew_contract::slots<Plan, Args, Desc>(p, kDesc); }
  static std::vector<DescMutator<Desc>> desc_mutators() { return ew_contract::mutators<Desc>(); }
  static std::string describe(const Desc& d) { return ew_contract::describe(d, kDesc); }
  static std::vector<Desc> workspace_descs() { return {}; }  // no workspace
};

struct UnaryTraits : ElementwiseTraitsOf<baracuda::UnaryPlan, baracuda::UnaryDescriptor, baracuda::UnaryArgs> {
  using UnaryOp = baracuda::UnaryOp;
  static Desc make(UnaryOp op, DType t, Dims s) {
    Desc d;
    d.op = op;
    d.x = ew_contract::T(t, s);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc cast = make(UnaryOp::Copy, DType::F32, {0, 3});
    cast.out_dtype = DType::BF16;
    return {make(UnaryOp::Exp, DType::F32, {0}), make(UnaryOp::IsNan, DType::F16, {2, 0, 3}), cast,
            make(UnaryOp::BitwiseNot, DType::I8, {3, 0})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using Kind = ew_contract::Kind;
    auto with = [](UnaryOp op, DType t, auto fn) {
      Desc d = make(op, t, {2, 3});
      fn(d);
      return d;
    };
    auto none = [](Desc&) {};
    Desc rank9 = make(UnaryOp::Exp, DType::F32, {1, 1});
    rank9.x.shape.rank = 9;
    return {{"x_scalar", with(UnaryOp::Exp, DType::F32, [](Desc& d) { d.x = ew_contract::S(); })},
            {"x_absent", with(UnaryOp::Exp, DType::F32, [](Desc& d) { d.x = baracuda::ElementwiseOperand::absent(); })},
            {"negative_extent", make(UnaryOp::Neg, DType::F32, {2, -1})},
            {"rank_9", rank9},
            {"unknown_op", with(static_cast<UnaryOp>(200), DType::F32, none)},
            {"unknown_kind", with(UnaryOp::Exp, DType::F32, [](Desc& d) { d.x.kind = static_cast<Kind>(9); })},
            {"unknown_dtype", with(UnaryOp::Exp, static_cast<DType>(99), none)},
            {"gelu_of_integers", with(UnaryOp::GeluErf, DType::I32, none)},
            {"abs_of_bool", with(UnaryOp::Abs, DType::Bool, none)},
            {"bitwise_not_of_float", with(UnaryOp::BitwiseNot, DType::F32, none)},
            {"out_dtype_integer_for_exp", with(UnaryOp::Exp, DType::F32, [](Desc& d) { d.out_dtype = DType::I32; })},
            {"out_dtype_unknown", with(UnaryOp::Copy, DType::F32, [](Desc& d) { d.out_dtype = static_cast<DType>(99); })},
            {"param_for_op_without", with(UnaryOp::Exp, DType::F32, [](Desc& d) { d.alpha = 1.0; })},
            {"threshold_without_value", with(UnaryOp::Threshold, DType::F32, [](Desc& d) { d.alpha = 0.5; })},
            {"param_nan", with(UnaryOp::LeakyRelu, DType::F32, [](Desc& d) { d.alpha = std::nan(""); })},
            {"round_fractional_decimals", with(UnaryOp::Round, DType::F32, [](Desc& d) { d.alpha = 1.5; })},
            {"round_decimals_of_integers", with(UnaryOp::Round, DType::I32, [](Desc& d) { d.alpha = 2; })},
            {"logit_eps_above_half", with(UnaryOp::Logit, DType::F32, [](Desc& d) { d.alpha = 0.75; })},
            {"celu_alpha_zero", with(UnaryOp::Celu, DType::F32, [](Desc& d) { d.alpha = 0.0; })},
            {"softplus_beta_zero", with(UnaryOp::Softplus, DType::F32, [](Desc& d) { d.alpha = 0.0; })},
            {"hardtanh_max_below_min", with(UnaryOp::Hardtanh, DType::F32, [](Desc& d) { d.alpha = 1.0, d.beta = -1.0; })},
            {"softshrink_negative_lambd", with(UnaryOp::Softshrink, DType::F32, [](Desc& d) { d.alpha = -0.5; })},
            {"too_many_elements", make(UnaryOp::Exp, DType::F32, {int64_t{1} << 40, int64_t{1} << 30})}};
  }
};

struct BinaryTraits : ElementwiseTraitsOf<baracuda::BinaryPlan, baracuda::BinaryDescriptor, baracuda::BinaryArgs> {
  using BinaryOp = baracuda::BinaryOp;
  using Operand = baracuda::ElementwiseOperand;
  static Desc make(BinaryOp op, Operand a, Operand b) {
    Desc d;
    d.op = op;
    d.a = a;
    d.b = b;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using ew_contract::S;
    using ew_contract::T;
    return {make(BinaryOp::Add, T(DType::F32, {2, 0}), S()),                    // a scalar operand
            make(BinaryOp::Mul, T(DType::F16, {1, 3}), T(DType::F16, {0, 1})),  // a holds elements, out none
            make(BinaryOp::Lt, T(DType::BF16, {0, 1}), T(DType::F32, {1, 4})),  // mixed dtypes -> bool
            make(BinaryOp::BitwiseAnd, T(DType::I32, {}), T(DType::I32, {0})),  // 0-dim with empty
            make(BinaryOp::SwiGlu, T(DType::F64, {0, 8}), T(DType::F64, {0, 8}))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using ew_contract::S;
    using ew_contract::T;
    using Kind = ew_contract::Kind;
    auto with = [](Desc d, auto fn) {
      fn(d);
      return d;
    };
    const Desc add = make(BinaryOp::Add, T(DType::F32, {2, 3}), T(DType::F32, {3}));
    Desc rank9 = add;
    rank9.b.shape.rank = 9;
    return {{"shapes_do_not_broadcast", make(BinaryOp::Add, T(DType::F32, {2, 3}), T(DType::F32, {4, 3}))},
            {"both_scalars", make(BinaryOp::Mul, S(), S())},
            {"b_absent", make(BinaryOp::Mul, T(DType::F32, {3}), Operand::absent())},
            {"scalar_of_dtype_f32", make(BinaryOp::Mul, T(DType::F32, {3}), S(DType::F32))},
            {"negative_extent", make(BinaryOp::Sub, T(DType::F32, {-3}), S())},
            {"rank_9", rank9},
            {"unknown_op", with(add, [](Desc& d) { d.op = static_cast<BinaryOp>(250); })},
            {"unknown_kind", with(add, [](Desc& d) { d.b.kind = static_cast<Kind>(7); })},
            {"unknown_dtype", with(add, [](Desc& d) { d.a.dtype = static_cast<DType>(99); })},
            {"hypot_of_integers", make(BinaryOp::Hypot, T(DType::I32, {3}), T(DType::I32, {3}))},
            {"bitwise_of_floats", make(BinaryOp::BitwiseAnd, T(DType::F32, {3}), T(DType::I32, {3}))},
            {"shift_of_bools", make(BinaryOp::ShiftLeft, T(DType::Bool, {3}), T(DType::Bool, {3}))},
            {"sub_of_bools", make(BinaryOp::Sub, T(DType::Bool, {3}), T(DType::Bool, {3}))},
            {"out_dtype_integer_for_float_add", with(add, [](Desc& d) { d.out_dtype = DType::I32; })},
            {"out_dtype_bool_for_float_add", with(add, [](Desc& d) { d.out_dtype = DType::Bool; })},
            {"param_for_op_without", with(make(BinaryOp::Mul, T(DType::F32, {3}), S()), [](Desc& d) { d.alpha = 2.0; })},
            {"integer_add_fractional_alpha",
             with(make(BinaryOp::Add, T(DType::I32, {3}), T(DType::I32, {3})), [](Desc& d) { d.alpha = 0.5; })},
            {"alpha_nan", with(add, [](Desc& d) { d.alpha = std::nan(""); })},
            {"isclose_negative_rtol",
             with(make(BinaryOp::IsClose, T(DType::F32, {3}), T(DType::F32, {3})), [](Desc& d) { d.alpha = -1.0; })},
            {"too_many_elements",
             make(BinaryOp::Add, T(DType::F32, {int64_t{1} << 40, 1}), T(DType::F32, {int64_t{1} << 30}))}};
  }
};

struct TernaryTraits : ElementwiseTraitsOf<baracuda::TernaryPlan, baracuda::TernaryDescriptor, baracuda::TernaryArgs> {
  using TernaryOp = baracuda::TernaryOp;
  using Operand = baracuda::ElementwiseOperand;
  static Desc make(TernaryOp op, Operand a, Operand b, Operand c) {
    Desc d;
    d.op = op;
    d.a = a;
    d.b = b;
    d.c = c;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using ew_contract::S;
    using ew_contract::T;
    return {make(TernaryOp::Where, T(DType::Bool, {3, 0}), T(DType::F32, {1}), S()),
            make(TernaryOp::Clamp, T(DType::I32, {0, 2}), Operand::absent(), T(DType::I32, {2})),
            make(TernaryOp::Lerp, T(DType::BF16, {2, 1, 0}), T(DType::BF16, {2, 5, 1}), S()),
            make(TernaryOp::Addcmul, T(DType::F64, {0}), T(DType::F64, {}), T(DType::F64, {1}))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using ew_contract::S;
    using ew_contract::T;
    const Operand absent = Operand::absent();
    auto with = [](Desc d, auto fn) {
      fn(d);
      return d;
    };
    const Desc where = make(TernaryOp::Where, T(DType::Bool, {2, 3}), T(DType::F32, {3}), S());
    return {{"where_condition_not_bool", make(TernaryOp::Where, T(DType::F32, {3}), T(DType::F32, {3}), T(DType::F32, {3}))},
            {"where_condition_scalar_f64", make(TernaryOp::Where, S(), T(DType::F32, {3}), T(DType::F32, {3}))},
            {"all_scalars", make(TernaryOp::Addcmul, S(), S(), S())},
            {"clamp_without_bounds", make(TernaryOp::Clamp, T(DType::F32, {3}), absent, absent)},
            {"absent_outside_clamp", make(TernaryOp::Lerp, T(DType::F32, {3}), T(DType::F32, {3}), absent)},
            {"clamp_x_absent", make(TernaryOp::Clamp, absent, T(DType::F32, {3}), T(DType::F32, {3}))},
            {"shapes_do_not_broadcast", with(where, [](Desc& d) { d.b.shape = Dims{2}; })},
            {"lerp_of_integers", make(TernaryOp::Lerp, T(DType::I32, {3}), T(DType::I32, {3}), S(DType::I64))},
            {"clamp_of_bools", make(TernaryOp::Clamp, T(DType::Bool, {3}), T(DType::Bool, {3}), absent)},
            {"param_for_op_without", with(where, [](Desc& d) { d.alpha = 1.0; })},
            {"addcmul_integer_fractional_value",
             with(make(TernaryOp::Addcmul, T(DType::I64, {3}), T(DType::I64, {3}), T(DType::I64, {3})),
                  [](Desc& d) { d.alpha = 0.5; })},
            {"out_dtype_cannot_hold", with(where, [](Desc& d) { d.out_dtype = DType::I8; })},
            {"unknown_op", with(where, [](Desc& d) { d.op = static_cast<TernaryOp>(99); })},
            {"unknown_kind", with(where, [](Desc& d) { d.c.kind = static_cast<ew_contract::Kind>(3); })},
            {"negative_extent", with(where, [](Desc& d) { d.a.shape = Dims{-2, 3}; })}};
  }
};

// ---------------------------------------------------------------------------
// UnaryBackwardPlan: dx = dy * f'(x) (or from y). The forward descriptor is
// drawn like UnaryPlan's, its x made floating (the gradient needs floating x
// and y); copy now and then casts to another floating dtype (dy then has that
// dtype, dx x's); from_output now and then on the ops that take it; copy and
// the ops with parameters more often than a uniform draw would. select()
// decides the rest (a non-differentiable op or a refused from_output is drawn
// again). Slots: dy (the forward's output dtype, x's shape), x and y (the one
// the gradient does not read unused; copy reads neither), dx (x's dtype and
// shape), which may be exactly any input of its dtype (the engine's in-place
// rule: the gradient is elementwise).
namespace ew_contract {
// The ops whose gradient may be taken from the output (the header's list).
inline constexpr UnaryOp kFromOutput[] = {UnaryOp::Sigmoid, UnaryOp::Tanh,       UnaryOp::Exp, UnaryOp::Expm1,
                                          UnaryOp::Sqrt,    UnaryOp::Reciprocal, UnaryOp::Relu};
// The differentiable ops with parameters.
inline constexpr UnaryOp kWithParams[] = {UnaryOp::LeakyRelu,  UnaryOp::Elu,        UnaryOp::Celu,  UnaryOp::Softplus,
                                          UnaryOp::Hardtanh,   UnaryOp::Hardshrink, UnaryOp::Softshrink,
                                          UnaryOp::Threshold,  UnaryOp::Logit,      UnaryOp::NanToNum, UnaryOp::Round};

inline baracuda::UnaryBackwardDescriptor draw_backward(Fuzz& f) {
  baracuda::UnaryBackwardDescriptor d;
  d.forward = draw<baracuda::UnaryDescriptor>(f);
  baracuda::UnaryDescriptor& fw = d.forward;
  fw.x.dtype = kFloat[f.range(0, 3)];
  const double u = std::uniform_real_distribution<double>(0, 1)(f.rng);
  if (u < 0.25) {
    fw.op = kFromOutput[f.range(0, static_cast<int64_t>(std::size(kFromOutput)) - 1)];
    d.from_output = f.chance(0.8);
  } else if (u < 0.4) {  // the ops with parameters (a uniform op draw rarely keeps any)
    fw.op = kWithParams[f.range(0, static_cast<int64_t>(std::size(kWithParams)) - 1)];
    fw.alpha = any_param(f);
    if (f.chance(0.6)) fw.beta = any_param(f);
    if (f.chance(0.2)) fw.gamma = any_param(f);
  } else if (u < 0.5) {
    fw.op = UnaryOp::Copy;
  }
  if (fw.op == UnaryOp::Copy && f.chance(0.6)) fw.out_dtype = kFloat[f.range(0, 3)];
  else fw.out_dtype = f.chance(0.1) ? std::optional<DType>(fw.x.dtype) : std::nullopt;
  return d;
}

template <class Plan>
baracuda::UnaryBackwardDescriptor valid_backward(Rng& rng) {
  Fuzz f(rng);
  for (int tries = 0; tries < 1000; ++tries) {
    baracuda::UnaryBackwardDescriptor d = draw_backward(f);
    if (Plan::select(Stream::cpu(), d)) return d;
    for (std::optional<double>* p : {&d.forward.gamma, &d.forward.beta, &d.forward.alpha}) {  // fewer parameters
      *p = std::nullopt;
      if (Plan::select(Stream::cpu(), d)) return d;
    }
  }
  throw std::runtime_error("elementwise traits: no valid UnaryBackwardDescriptor in 1000 draws");
}

// dy's dtype: the forward's output dtype (x's, or copy's out_dtype).
inline DType dy_dtype(const baracuda::UnaryBackwardDescriptor& d) {
  return d.forward.op == UnaryOp::Copy ? d.forward.out_dtype.value_or(d.forward.x.dtype) : d.forward.x.dtype;
}
}  // namespace ew_contract

struct UnaryBackwardTraits {
  using Plan = baracuda::UnaryBackwardPlan;
  using Desc = baracuda::UnaryBackwardDescriptor;
  using Args = baracuda::UnaryBackwardArgs;
  using UnaryOp = baracuda::UnaryOp;
  static constexpr const char* kName = "UnaryBackwardPlan";

  static Desc valid_desc(Rng& rng) { return ew_contract::valid_backward<Plan>(rng); }
  static std::string describe(const Desc& d) {
    return std::string("UnaryBackwardDescriptor{forward ") + ew_contract::describe(d.forward, "UnaryDescriptor") +
           ", from_output " + (d.from_output ? "true" : "false") + "}";
  }
  static std::vector<Desc> workspace_descs() { return {}; }  // no workspace

  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const baracuda::ElementwiseOperand& x = d.forward.x;
    const bool copy = d.forward.op == UnaryOp::Copy;
    const DType dyt = ew_contract::dy_dtype(d);
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("dy", dyt, x.shape, [](Args& a, const TensorMut& t) { a.dy = t; }));
    v.push_back(optional_input<Args>(!copy && !d.from_output, "x", x.dtype, x.shape,
                                     [](Args& a, const TensorMut& t) { a.x = t; }));
    v.push_back(optional_input<Args>(!copy && d.from_output, "y", dyt, x.shape,
                                     [](Args& a, const TensorMut& t) { a.y = t; }));
    // In place: dy when it has x's dtype, and the tensor the gradient reads.
    const char* in_place = copy ? (dyt == x.dtype ? "dy" : nullptr) : d.from_output ? "dy,y" : "dy,x";
    v.push_back(output<Args>("dx", x.dtype, x.shape, [](Args& a, const TensorMut& t) { a.dx = t; }, in_place));
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    for (auto& m : ew_contract::mutators<baracuda::UnaryDescriptor>())
      v.push_back({m.name, [apply = m.apply](Desc& d, Fuzz& f) { apply(d.forward, f); }});
    v.push_back({"desc.from_output_flip", [](Desc& d, Fuzz&) { d.from_output = !d.from_output; }});
    v.push_back({"desc.op_other", [](Desc& d, Fuzz& f) {  // another valid op, x kept
                   d.forward.op = static_cast<UnaryOp>(f.range(0, ew_contract::kOps[1] - 1));
                 }});
    return v;
  }

  static Desc make(UnaryOp op, DType t, Dims s, bool from_output = false) {
    Desc d;
    d.forward.op = op;
    d.forward.x = ew_contract::T(t, s);
    d.from_output = from_output;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc cast = make(UnaryOp::Copy, DType::F32, {0, 3});
    cast.forward.out_dtype = DType::BF16;
    Desc leaky = make(UnaryOp::LeakyRelu, DType::F64, {2, 0});
    leaky.forward.alpha = 0.2;
    return {make(UnaryOp::Sigmoid, DType::F32, {0}), make(UnaryOp::Tanh, DType::F16, {2, 0, 3}, true), cast, leaky,
            make(UnaryOp::Relu, DType::BF16, {3, 0}, true)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](Desc d, auto fn) {
      fn(d);
      return d;
    };
    const Desc exp = make(UnaryOp::Exp, DType::F32, {2, 3});
    Desc rank9 = make(UnaryOp::Exp, DType::F32, {1, 1});
    rank9.forward.x.shape.rank = 9;
    return {{"not_differentiable_isnan", make(UnaryOp::IsNan, DType::F32, {2, 3})},
            {"not_differentiable_signbit", make(UnaryOp::SignBit, DType::F64, {3})},
            {"integer_x", make(UnaryOp::Neg, DType::I32, {2, 3})},
            {"integer_x_int_to_float", make(UnaryOp::Exp, DType::I64, {3})},
            {"bool_x_copy", make(UnaryOp::Copy, DType::Bool, {3})},
            {"copy_to_integer", with(make(UnaryOp::Copy, DType::F32, {3}), [](Desc& d) { d.forward.out_dtype = DType::I32; })},
            {"copy_from_integer", with(make(UnaryOp::Copy, DType::I16, {3}), [](Desc& d) { d.forward.out_dtype = DType::F32; })},
            {"from_output_silu", make(UnaryOp::Silu, DType::F32, {2, 3}, true)},
            {"from_output_log", make(UnaryOp::Log, DType::F16, {2}, true)},
            {"from_output_copy", make(UnaryOp::Copy, DType::F32, {2, 3}, true)},
            {"out_dtype_differs_from_x", with(exp, [](Desc& d) { d.forward.out_dtype = DType::F64; })},
            {"out_dtype_narrower_than_x", with(make(UnaryOp::Sigmoid, DType::F32, {3}, true),
                                                [](Desc& d) { d.forward.out_dtype = DType::BF16; })},
            {"x_scalar", with(exp, [](Desc& d) { d.forward.x = ew_contract::S(); })},
            {"x_absent", with(exp, [](Desc& d) { d.forward.x = baracuda::ElementwiseOperand::absent(); })},
            {"negative_extent", make(UnaryOp::Tanh, DType::F32, {2, -1})},
            {"rank_9", rank9},
            {"unknown_op", with(exp, [](Desc& d) { d.forward.op = static_cast<UnaryOp>(200); })},
            {"unknown_dtype", make(UnaryOp::Exp, static_cast<DType>(99), {3})},
            {"param_for_op_without", with(exp, [](Desc& d) { d.forward.alpha = 1.0; })},
            {"param_nan", with(make(UnaryOp::LeakyRelu, DType::F32, {3}), [](Desc& d) { d.forward.alpha = std::nan(""); })},
            {"softplus_beta_zero", with(make(UnaryOp::Softplus, DType::F32, {3}), [](Desc& d) { d.forward.alpha = 0.0; })},
            {"too_many_elements", make(UnaryOp::Exp, DType::F32, {int64_t{1} << 40, int64_t{1} << 30})}};
  }
};

// ---------------------------------------------------------------------------
// BinaryBackwardPlan / TernaryBackwardPlan: the operand gradients. The
// forward descriptor is drawn like BinaryPlan's / TernaryPlan's, its tensors
// made floating (where's condition stays bool), out_dtype mostly left unset;
// need_* drawn, then cleared where the operand cannot take a gradient (a
// scalar, an absent bound, where's condition). Broadcast operands make the
// plan sum through its workspace. Slots: dy (the common dtype, the broadcast
// shape; it carries the scalar values), each operand (an input when a needed
// gradient reads it, else unused), da / db / dc (the operand's shape and
// dtype when needed, else unused), each of which may be exactly dy.
namespace ew_contract {
template <class FwdDesc>
struct GradOf;
template <>
struct GradOf<baracuda::BinaryDescriptor> {
  using Desc = baracuda::BinaryBackwardDescriptor;
  using Args = baracuda::BinaryBackwardArgs;
  using Plan = baracuda::BinaryBackwardPlan;
  static bool* need(Desc& d, int k) { return k == 0 ? &d.need_a : &d.need_b; }
  static bool need(const Desc& d, int k) { return k == 0 ? d.need_a : d.need_b; }
  static int reads(const Desc& d, int m) { return baracuda::elementwise::grad_reads(d.forward.op, m); }
  static bool differentiable(const Desc& d) { return baracuda::elementwise::has_gradient(d.forward.op); }
  static constexpr const char* kName = "BinaryBackwardPlan";
};
template <>
struct GradOf<baracuda::TernaryDescriptor> {
  using Desc = baracuda::TernaryBackwardDescriptor;
  using Args = baracuda::TernaryBackwardArgs;
  using Plan = baracuda::TernaryBackwardPlan;
  static bool* need(Desc& d, int k) { return k == 0 ? &d.need_a : k == 1 ? &d.need_b : &d.need_c; }
  static bool need(const Desc& d, int k) { return k == 0 ? d.need_a : k == 1 ? d.need_b : d.need_c; }
  static int reads(const Desc& d, int m) { return baracuda::elementwise::grad_reads(d.forward.op, m); }
  static bool differentiable(const Desc&) { return true; }
  static constexpr const char* kName = "TernaryBackwardPlan";
};

template <class FwdDesc>
typename GradOf<FwdDesc>::Desc draw_grad(Fuzz& f) {
  using G = GradOf<FwdDesc>;
  constexpr int n = arity_of<FwdDesc>();
  typename G::Desc d;
  d.forward = draw<FwdDesc>(f);
  const DType common = kFloat[f.range(0, 3)];
  const bool mixed = f.chance(0.2);
  const bool where = n == 3 && static_cast<TernaryOp>(static_cast<int>(d.forward.op)) == TernaryOp::Where;
  for (int k = 0; k < n; ++k) {
    ElementwiseOperand& o = operand(d.forward, k);
    if (o.kind == Kind::Tensor && !(where && k == 0)) o.dtype = mixed ? kFloat[f.range(0, 3)] : common;
    if (o.kind == Kind::Scalar && !(where && k == 0)) o.dtype = f.chance(0.8) ? DType::F64 : DType::I64;
    *G::need(d, k) = f.chance(0.75) && o.kind == Kind::Tensor && !(where && k == 0);
  }
  d.forward.out_dtype = f.chance(0.05) ? std::optional<DType>(common) : std::nullopt;
  return d;
}

template <class FwdDesc>
typename GradOf<FwdDesc>::Desc valid_grad(Rng& rng) {
  using G = GradOf<FwdDesc>;
  constexpr int n = arity_of<FwdDesc>();
  Fuzz f(rng);
  for (int tries = 0; tries < 2000; ++tries) {
    auto d = draw_grad<FwdDesc>(f);
    if (!G::differentiable(d)) continue;
    bool any = false;
    for (int k = 0; k < n; ++k) any = any || G::need(d, k);
    if (!any) continue;
    if (G::Plan::select(Stream::cpu(), d)) return d;
    d.forward.alpha = d.forward.beta = d.forward.gamma = std::nullopt;
    if (G::Plan::select(Stream::cpu(), d)) return d;
  }
  throw std::runtime_error("elementwise traits: no valid backward descriptor in 2000 draws");
}

template <class FwdDesc>
std::vector<Slot<typename GradOf<FwdDesc>::Args>> grad_slots(const typename GradOf<FwdDesc>::Plan& p) {
  using G = GradOf<FwdDesc>;
  using Args = typename G::Args;
  constexpr int n = arity_of<FwdDesc>();
  const auto& d = p.descriptor();
  const std::string described = describe(d.forward, "forward");
  int reads = 0;
  for (int m = 0; m < n; ++m)
    if (G::need(d, m)) reads |= G::reads(d, m);
  std::optional<Scalar> values[3];
  using BindFn = void (*)(Args&, const TensorMut&);
  static constexpr BindFn kIn[3] = {[](Args& a, const TensorMut& t) { a.a = t; },
                                    [](Args& a, const TensorMut& t) { a.b = t; },
                                    [](Args& a, const TensorMut& t) {
                                      if constexpr (n == 3) a.c = t;
                                      else (void)a, (void)t;
                                    }};
  static constexpr BindFn kOut[3] = {[](Args& a, const TensorMut& t) { a.da = t; },
                                     [](Args& a, const TensorMut& t) { a.db = t; },
                                     [](Args& a, const TensorMut& t) {
                                       if constexpr (n == 3) a.dc = t;
                                       else (void)a, (void)t;
                                     }};
  static constexpr const char* kGrad[3] = {"da", "db", "dc"};
  std::vector<Slot<Args>> v;
  const DType dyt = p.common_dtype();
  const Dims out = p.output_shape();
  for (int k = 0; k < n; ++k) {
    const ElementwiseOperand& o = operand(d.forward, k);
    const bool read = (reads >> k & 1) != 0;
    if (o.kind == Kind::Tensor) {
      v.push_back(read ? input<Args>(kNames[n][k], o.dtype, o.shape, kIn[k])
                       : optional_input<Args>(false, kNames[n][k], o.dtype, o.shape, kIn[k]));
    } else {
      v.push_back(optional_input<Args>(false, kNames[n][k], o.kind == Kind::Scalar ? o.dtype : dyt, out, kIn[k]));
      if (read) values[k] = value_of(d.forward, k, described);
    }
  }
  Slot<Args> dy = input<Args>("dy", dyt, out, nullptr);
  dy.bind = [values](Args& a, const TensorMut& t) {
    a.dy = t;
    a.a_value = values[0];
    a.b_value = values[1];
    if constexpr (n == 3) a.c_value = values[2];
  };
  v.insert(v.begin(), dy);
  for (int m = 0; m < n; ++m) {
    const ElementwiseOperand& o = operand(d.forward, m);
    const bool tensor = o.kind == Kind::Tensor;
    const DType t = tensor ? o.dtype : dyt;
    const Dims s = tensor ? o.shape : out;
    Slot<Args> g = output<Args>(kGrad[m], t, s, kOut[m], (t == dyt && s == out) ? "dy" : nullptr);
    if (!G::need(d, m)) {
      g.role = Role::Unused;
      g.optional = true;
    }
    v.push_back(g);
  }
  return v;
}
}  // namespace ew_contract

template <class FwdDesc>
struct ElementwiseGradTraitsOf {
  using G = ew_contract::GradOf<FwdDesc>;
  using Plan = typename G::Plan;
  using Desc = typename G::Desc;
  using Args = typename G::Args;
  static constexpr int kArity = ew_contract::arity_of<FwdDesc>();
  static constexpr const char* kName = G::kName;

  static Desc valid_desc(Rng& rng) { return ew_contract::valid_grad<FwdDesc>(rng); }
  static std::vector<Slot<Args>> slots(const Plan& p) { return ew_contract::grad_slots<FwdDesc>(p); }
  static std::string describe(const Desc& d) {
    std::string s = std::string(kArity == 2 ? "BinaryBackwardDescriptor" : "TernaryBackwardDescriptor") + "{forward " +
                    ew_contract::describe(d.forward, kArity == 2 ? "BinaryDescriptor" : "TernaryDescriptor") + ", need";
    for (int k = 0; k < kArity; ++k) s += std::string(" ") + ew_contract::kNames[kArity][k] + "=" + (G::need(d, k) ? "1" : "0");
    return s + "}";
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    for (auto& m : ew_contract::mutators<FwdDesc>())
      v.push_back({m.name, [apply = m.apply](Desc& d, Fuzz& f) { apply(d.forward, f); }});
    v.push_back({"desc.need_flip", [](Desc& d, Fuzz& f) {
                   bool* b = G::need(d, static_cast<int>(f.range(0, kArity - 1)));
                   *b = !*b;
                 }});
    v.push_back({"desc.need_none", [](Desc& d, Fuzz&) {
                   for (int k = 0; k < kArity; ++k) *G::need(d, k) = false;
                 }});
    return v;
  }
  // CUDA: a broadcast operand's gradient goes through the workspace.
  static std::vector<Desc> workspace_descs() {
    Desc d;
    using Op = decltype(d.forward.op);
    d.forward.op = static_cast<Op>(kArity == 2 ? static_cast<int>(baracuda::BinaryOp::Mul)
                                               : static_cast<int>(baracuda::TernaryOp::Addcmul));
    d.forward.a = ew_contract::T(DType::F32, {64, 33});
    d.forward.b = ew_contract::T(DType::F32, {33});
    if constexpr (kArity == 3) d.forward.c = ew_contract::T(DType::F32, {64, 1});
    return {d};
  }
};

struct BinaryBackwardTraits : ElementwiseGradTraitsOf<baracuda::BinaryDescriptor> {
  using BinaryOp = baracuda::BinaryOp;
  using Operand = baracuda::ElementwiseOperand;
  static Desc make(BinaryOp op, Operand a, Operand b, bool need_a = true, bool need_b = true) {
    Desc d;
    d.forward.op = op;
    d.forward.a = a;
    d.forward.b = b;
    d.need_a = need_a;
    d.need_b = need_b;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using ew_contract::S;
    using ew_contract::T;
    return {make(BinaryOp::Mul, T(DType::F32, {2, 0}), T(DType::F32, {2, 0})),
            make(BinaryOp::Add, T(DType::F16, {0, 3}), S(), true, false),
            make(BinaryOp::SwiGlu, T(DType::BF16, {0, 8}), T(DType::BF16, {0, 8})),
            make(BinaryOp::Div, T(DType::F64, {3, 0}), T(DType::F64, {0}))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using ew_contract::S;
    using ew_contract::T;
    const Desc mul = make(BinaryOp::Mul, T(DType::F32, {2, 3}), T(DType::F32, {3}));
    auto with = [](Desc d, auto fn) {
      fn(d);
      return d;
    };
    return {{"not_differentiable_eq", make(BinaryOp::Eq, T(DType::F32, {3}), T(DType::F32, {3}))},
            {"not_differentiable_nextafter", make(BinaryOp::NextAfter, T(DType::F32, {3}), T(DType::F32, {3}))},
            {"integer_operands", make(BinaryOp::Mul, T(DType::I32, {3}), T(DType::I32, {3}))},
            {"need_of_scalar", make(BinaryOp::Mul, T(DType::F32, {3}), S())},
            {"need_nothing", make(BinaryOp::Mul, T(DType::F32, {3}), T(DType::F32, {3}), false, false)},
            {"out_dtype_differs", with(mul, [](Desc& d) { d.forward.out_dtype = DType::F64; })},
            {"shapes_do_not_broadcast", make(BinaryOp::Add, T(DType::F32, {2, 3}), T(DType::F32, {4, 3}))},
            {"unknown_op", with(mul, [](Desc& d) { d.forward.op = static_cast<BinaryOp>(250); })},
            {"param_for_op_without", with(mul, [](Desc& d) { d.forward.alpha = 2.0; })},
            {"negative_extent", make(BinaryOp::Sub, T(DType::F32, {-3}), T(DType::F32, {3}))}};
  }
};

struct TernaryBackwardTraits : ElementwiseGradTraitsOf<baracuda::TernaryDescriptor> {
  using TernaryOp = baracuda::TernaryOp;
  using Operand = baracuda::ElementwiseOperand;
  static Desc make(TernaryOp op, Operand a, Operand b, Operand c, bool need_a = true, bool need_b = true,
                   bool need_c = true) {
    Desc d;
    d.forward.op = op;
    d.forward.a = a;
    d.forward.b = b;
    d.forward.c = c;
    d.need_a = need_a;
    d.need_b = need_b;
    d.need_c = need_c;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using ew_contract::S;
    using ew_contract::T;
    // Every needed gradient empty (a gradient of an operand that holds elements
    // while the broadcast has none is a sum over nothing: zeros, written).
    return {make(TernaryOp::Where, T(DType::Bool, {3, 0}), T(DType::F32, {1}), T(DType::F32, {3, 0}), false, false),
            make(TernaryOp::Clamp, T(DType::F32, {0, 2}), Operand::absent(), T(DType::F32, {2}), true, false, false),
            make(TernaryOp::Lerp, T(DType::BF16, {2, 0}), T(DType::BF16, {2, 0}), S(), true, true, false),
            make(TernaryOp::Addcmul, T(DType::F64, {0}), T(DType::F64, {}), T(DType::F64, {0}), true, false, true)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using ew_contract::S;
    using ew_contract::T;
    const Operand absent = Operand::absent();
    return {{"where_need_condition", make(TernaryOp::Where, T(DType::Bool, {3}), T(DType::F32, {3}), T(DType::F32, {3}))},
            {"clamp_need_absent_bound", make(TernaryOp::Clamp, T(DType::F32, {3}), T(DType::F32, {3}), absent)},
            {"lerp_need_scalar_weight", make(TernaryOp::Lerp, T(DType::F32, {3}), T(DType::F32, {3}), S())},
            {"clamp_of_integers", make(TernaryOp::Clamp, T(DType::I32, {3}), T(DType::I32, {3}), absent, true, true, false)},
            {"need_nothing", make(TernaryOp::Addcmul, T(DType::F32, {3}), T(DType::F32, {3}), T(DType::F32, {3}), false,
                                  false, false)},
            {"clamp_without_bounds", make(TernaryOp::Clamp, T(DType::F32, {3}), absent, absent, true, false, false)},
            {"unknown_op", make(static_cast<TernaryOp>(99), T(DType::F32, {3}), T(DType::F32, {3}), T(DType::F32, {3}))}};
  }
};

// ---------------------------------------------------------------------------
// FactoryPlan (fill / arange / linspace): no input, one output "out" of the
// plan's dtype and shape (Fill: the descriptor's; Arange / Linspace: [n]).
// Valid descriptors draw the op, any engine dtype (arange / linspace refuse
// bool: drawn again), a small shape, and scalars from a menu of ordinary,
// fractional, negative, special and extreme values.
namespace ew_contract {
using baracuda::FactoryDescriptor;
using baracuda::FactoryOp;

inline Scalar any_scalar(Fuzz& f) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (f.range(0, 3)) {
    case 0: return Scalar(static_cast<long long>(f.pick<int64_t>({0, 1, -1, 3, -7, 100, 127, 255, -128, 40000, INT64_MAX})));
    case 1: return Scalar(f.chance(0.5));
    default:
      return Scalar(f.pick<double>({0.0, -0.0, 2.5, -0.75, 1e-3, 7.0, 300.7, 65519.0, 1e10, 1e30, -1e30, inf, -inf,
                                    std::numeric_limits<double>::quiet_NaN()}));
  }
}

inline FactoryDescriptor draw_factory(Fuzz& f) {
  FactoryDescriptor d;
  d.op = static_cast<FactoryOp>(f.range(0, 2));
  d.dtype = any_engine_dtype(f);
  if (d.op == FactoryOp::Fill) {
    d.shape = out_shape(f);
    d.value = any_scalar(f);
  } else if (d.op == FactoryOp::Arange) {
    const double start = f.pick<double>({0.0, -3.0, 2.5, 1e-3, -100.0, 7.0, 0.1});
    const double step = f.pick<double>({1.0, 0.5, -1.0, -0.25, 3.0, 0.1, -7.0, 0.7});
    const double end = start + step * static_cast<double>(f.range(0, 40)) + f.pick<double>({0.0, 0.3, -0.2});
    const bool ints = f.chance(0.4);
    d.start = ints ? Scalar(static_cast<long long>(start)) : Scalar(start);
    d.end = ints ? Scalar(static_cast<long long>(end)) : Scalar(end);
    d.step = ints ? Scalar(static_cast<long long>(step == 0.5 || step == 0.1 || step == 0.7 ? 2 : step < 0 && step > -1 ? -1 : step))
                  : Scalar(step);
    if (f.chance(0.2)) d.start.reset();
    if (f.chance(0.2)) d.step.reset();
  } else {
    d.start = any_scalar(f);
    d.end = any_scalar(f);
    d.steps = f.chance(0.05) ? f.range(2049, 6000) : f.range(0, 40);
  }
  return d;
}

template <class Plan>
FactoryDescriptor valid_factory(Rng& rng) {
  Fuzz f(rng);
  for (int tries = 0; tries < 1000; ++tries) {
    FactoryDescriptor d = draw_factory(f);
    if (Plan::select(Stream::cpu(), d)) return d;
  }
  throw std::runtime_error("elementwise traits: no valid FactoryDescriptor in 1000 draws");
}

inline std::string scalar_str(const std::optional<Scalar>& s) {
  if (!s) return "unset";
  std::ostringstream os;
  if (s->dtype == DType::F64) os << s->f;
  else if (s->dtype == DType::I64) os << s->i << "i";
  else if (s->dtype == DType::Bool) os << (s->i ? "true" : "false");
  else os << "scalar dtype#" << static_cast<int>(s->dtype);
  return os.str();
}
}  // namespace ew_contract

struct FactoryTraits {
  using Plan = baracuda::FactoryPlan;
  using Desc = baracuda::FactoryDescriptor;
  using Args = baracuda::FactoryArgs;
  using FactoryOp = baracuda::FactoryOp;
  using Scalar = baracuda::Scalar;
  static constexpr const char* kName = "FactoryPlan";

  static Desc valid_desc(Rng& rng) { return ew_contract::valid_factory<Plan>(rng); }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "FactoryDescriptor{op " << baracuda::op_name(d.op) << " (" << static_cast<int>(d.op) << "), dtype "
       << (dtype_known(d.dtype) ? std::string(baracuda::dtype_name(d.dtype)) : "dtype#" + std::to_string(int(d.dtype)))
       << ", shape " << dims_str(d.shape) << ", value " << ew_contract::scalar_str(d.value) << ", start "
       << ew_contract::scalar_str(d.start) << ", end " << ew_contract::scalar_str(d.end) << ", step "
       << ew_contract::scalar_str(d.step) << ", steps " << (d.steps ? std::to_string(*d.steps) : "unset") << "}";
    return os.str();
  }
  static std::vector<Desc> workspace_descs() { return {}; }  // no workspace

  static std::vector<Slot<Args>> slots(const Plan& p) {
    return {output<Args>("out", p.out_dtype(), p.output_shape(), [](Args& a, const TensorMut& t) { a.out = t; })};
  }

  static Desc fill(DType t, Dims s, Scalar v) { return Desc::fill(t, s, v); }
  static Desc arange(DType t, Scalar start, Scalar end, Scalar step) { return Desc::arange(t, start, end, step); }
  static Desc linspace(DType t, Scalar start, Scalar end, int64_t steps) { return Desc::linspace(t, start, end, steps); }

  static std::vector<Desc> zero_size_descs() {
    return {fill(DType::F32, {0, 3}, Scalar(1.0)), fill(DType::Bool, {2, 0}, Scalar(true)),
            arange(DType::I32, 3, 3, 1), arange(DType::F16, 1.0, 1.0, -0.5), linspace(DType::F64, 0.0, 1.0, 0),
            linspace(DType::I8, 0, 5, 0)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    constexpr double inf = std::numeric_limits<double>::infinity();
    auto with = [](Desc d, auto fn) {
      fn(d);
      return d;
    };
    const Desc f = fill(DType::F32, {2, 3}, Scalar(1.0));
    Desc rank9 = fill(DType::F32, {1, 1}, Scalar(1.0));
    rank9.shape.rank = 9;
    return {{"unknown_op", with(f, [](Desc& d) { d.op = static_cast<FactoryOp>(200); })},
            {"unknown_dtype", with(f, [](Desc& d) { d.dtype = static_cast<DType>(99); })},
            {"complex_dtype", with(f, [](Desc& d) { d.dtype = DType::C64; })},
            {"fill_without_value", with(f, [](Desc& d) { d.value.reset(); })},
            {"fill_with_start", with(f, [](Desc& d) { d.start = Scalar(0); })},
            {"fill_negative_extent", fill(DType::F32, {2, -1}, Scalar(1.0))},
            {"fill_rank_9", rank9},
            {"fill_too_many_elements", fill(DType::F32, {int64_t{1} << 40, int64_t{1} << 30}, Scalar(1.0))},
            {"scalar_of_dtype_f32", with(f, [](Desc& d) { d.value->dtype = DType::F32; })},
            {"arange_step_zero", arange(DType::F32, 0, 4, 0)},
            {"arange_step_nan", arange(DType::F32, 0, 4, nan)},
            {"arange_end_inf", arange(DType::F64, 0, inf, 1)},
            {"arange_wrong_sign", arange(DType::I32, 0, 4, -1)},
            {"arange_too_long", arange(DType::F64, 0, 1e300, 1e-300)},
            {"arange_bool", arange(DType::Bool, 0, 2, 1)},
            {"arange_f32_overflow", arange(DType::F32, 0, 1e39, 1e38)},
            {"arange_without_end", with(arange(DType::F32, 0, 4, 1), [](Desc& d) { d.end.reset(); })},
            {"arange_with_shape", with(arange(DType::F32, 0, 4, 1), [](Desc& d) { d.shape = Dims{4}; })},
            {"linspace_negative_steps", linspace(DType::F32, 0, 1, -1)},
            {"linspace_bool", linspace(DType::Bool, 0, 1, 3)},
            {"linspace_end_beyond_u8", linspace(DType::U8, 0, 300, 2)},
            {"linspace_nan_into_i32", linspace(DType::I32, nan, 1, 2)},
            {"linspace_without_steps", with(linspace(DType::F32, 0, 1, 3), [](Desc& d) { d.steps.reset(); })},
            {"linspace_with_step", with(linspace(DType::F32, 0, 1, 3), [](Desc& d) { d.step = Scalar(1.0); })}};
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    v.push_back({"desc.op_any", [](Desc& d, Fuzz& f) { d.op = static_cast<FactoryOp>(f.range(0, 255)); }});
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = static_cast<DType>(f.range(0, 40)); }});
    v.push_back({"desc.extent_negative", [](Desc& d, Fuzz& f) {
                   if (d.shape.rank == 0) d.shape.push_back(1);
                   d.shape[static_cast<int>(f.range(0, d.shape.rank - 1))] = f.negative();
                 }});
    v.push_back({"desc.extent_huge", [](Desc& d, Fuzz& f) {
                   if (d.shape.rank == 0) d.shape.push_back(1);
                   d.shape[static_cast<int>(f.range(0, d.shape.rank - 1))] = f.huge();
                 }});
    v.push_back({"desc.rank_any", [](Desc& d, Fuzz& f) { d.shape.rank = static_cast<int>(f.range(-3, 12)); }});
    v.push_back({"desc.steps_any", [](Desc& d, Fuzz& f) {
                   d.steps = f.chance(0.5) ? f.negative() : f.huge();
                 }});
    v.push_back({"desc.scalar_special", [](Desc& d, Fuzz& f) {
                   constexpr double inf = std::numeric_limits<double>::infinity();
                   const Scalar s = f.chance(0.3) ? Scalar(static_cast<long long>(f.pick<int64_t>({INT64_MIN, INT64_MAX, 0})))
                                                  : Scalar(f.pick<double>({0.0, -0.0, inf, -inf, 1e300, -1e300, 1e-300,
                                                                           std::numeric_limits<double>::quiet_NaN()}));
                   std::optional<Scalar>* fields[4] = {&d.value, &d.start, &d.end, &d.step};
                   *fields[f.range(0, 3)] = s;
                 }});
    v.push_back({"desc.scalar_dtype_any", [](Desc& d, Fuzz& f) {
                   std::optional<Scalar>* fields[4] = {&d.value, &d.start, &d.end, &d.step};
                   std::optional<Scalar>& s = *fields[f.range(0, 3)];
                   if (!s) s = Scalar(1.0);
                   s->dtype = static_cast<DType>(f.range(0, 40));
                 }});
    v.push_back({"desc.field_toggle", [](Desc& d, Fuzz& f) {  // a field the op needs unset, or one it does not read set
                   switch (f.range(0, 5)) {
                     case 0: d.value = d.value ? std::nullopt : std::optional<Scalar>(Scalar(1.0)); break;
                     case 1: d.start = d.start ? std::nullopt : std::optional<Scalar>(Scalar(0)); break;
                     case 2: d.end = d.end ? std::nullopt : std::optional<Scalar>(Scalar(3)); break;
                     case 3: d.step = d.step ? std::nullopt : std::optional<Scalar>(Scalar(1)); break;
                     case 4: d.steps = d.steps ? std::nullopt : std::optional<int64_t>(3); break;
                     default: d.shape = d.shape.rank ? Dims{} : Dims{3}; break;
                   }
                 }});
    return v;
  }
};

}  // namespace contract

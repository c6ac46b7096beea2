// Elementwise family: UnaryPlan, BinaryPlan, TernaryPlan — one engine, one
// row per op (the tables below), PyTorch's semantics.
//
// Operands. Every input is an ElementwiseOperand: a TENSOR (any rank 0..8; a
// rank-0 tensor is a "0-dim" tensor in PyTorch's sense: on the device, it
// broadcasts) or a host SCALAR (a Python number: its value is given per call
// in the args, so one plan serves every value). Shapes broadcast by NumPy's
// rules (right-aligned; an extent 1 stretches); the output has the broadcast
// shape exactly (no implicit resize) and must not broadcast itself (stride 0
// along an extent > 1 is rejected: it would write one element twice).
//
// Dtypes. The common dtype is torch.result_type of the operands
// (include/baracuda/core/promotion.hpp: a scalar does not widen a tensor's
// category: bf16 tensor * 2.5 stays bf16; i32 tensor * 2.5 becomes f32).
// Ops marked IntToFloat compute in f32 when that common dtype is an integer or
// bool (torch.sqrt(int) is f32); Floating ops reject integers (torch.gelu);
// Integral ops reject floating types (bitwise ops). The output dtype defaults
// to the op's result (bool for predicates and comparisons, else the common
// dtype); an explicit out_dtype is allowed when torch.can_cast(result, out)
// (never float -> integer through an op; use UnaryOp::Copy to convert).
// Compute type: f32 for f16 / bf16 / f32 (a 16-bit value is widened, the op
// computed in f32, the result rounded once to nearest even), f64 for f64,
// int64 for every integer and bool (results wrap to the output's width, as
// two's-complement arithmetic in the narrow type would). A host scalar is
// converted to the compute type straight from its double / int64 value
// (bf16 x * 0.1 multiplies by float(0.1), not by bf16(0.1), as PyTorch does).
//
// Conversions (UnaryOp::Copy and every store to an output of another dtype):
// floating -> floating rounds to nearest even; floating -> integer truncates
// toward zero, NaN gives 0, values beyond int64 saturate to int64's range, and
// the int64 then wraps to the output's width (PyTorch's rule for u8 -> applied
// to every integer width, so CPU and GPU agree where C++ leaves it undefined);
// integer -> integer wraps; anything -> bool is (value != 0) (NaN is true);
// bool -> number is 0 / 1.
//
// Aliasing. The output may BE an input (same data pointer, dtype, shape and
// strides: in place, a += b); any other overlap between the output and an
// input is InvalidProblem (PyTorch's "unsupported operation: some elements of
// the input tensor and the written-to tensor refer to a single memory location").
//
// Backends: CpuReference (Stream::cpu(): a simple loop computing in double /
// int64, the oracle of the tests) and Bespoke CUDA (one kernel template per
// path, the op a functor: vectorized 16-byte path when every tensor is
// contiguous along the innermost dim or broadcast there, a 32-bit-index
// strided path, and a generic path (64-bit indices, operands of mixed dtypes)).
// No workspace (the backward plans of binary / ternary ops need one to sum a
// broadcast operand's gradient: see below). Deterministic. sku().variant names the path for dense aligned
// tensors; sku_for() the path of the actual views.
#pragma once
#include <cstdint>
#include <optional>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/reduce.hpp"

namespace baracuda {

// ---- op tables -------------------------------------------------------------------
// X(enumerator, printed name, domain, parameters). Domains:
//   IntToFloat  floating dtypes compute as themselves; integers / bool in f32
//   Floating    floating dtypes only
//   Numeric     integers and floating (not bool)
//   Any         bool, integers and floating
//   Integral    bool and integers (bitwise ops; shifts: integers only)
//   Predicate   any dtype -> bool
// Parameters (descriptor fields alpha / beta / gamma; "-" none): their
// meaning and defaults (a field left unset takes the op's default; a field
// set for an op that has no such parameter is InvalidProblem).
#define BARACUDA_UNARY_OPS(X)                                                   \
  X(Copy, "copy", Any, "-")  /* cast / copy into the output's dtype and strides */ \
  X(Abs, "abs", Numeric, "-")                                                   \
  X(Neg, "neg", Numeric, "-")                                                   \
  X(Sign, "sign", Numeric, "-")                                                 \
  X(Sgn, "sgn", Numeric, "-")                                                   \
  X(Reciprocal, "reciprocal", IntToFloat, "-")                                  \
  X(Sqrt, "sqrt", IntToFloat, "-")                                              \
  X(Rsqrt, "rsqrt", IntToFloat, "-")                                            \
  X(Square, "square", Numeric, "-")                                             \
  X(Exp, "exp", IntToFloat, "-")                                                \
  X(Exp2, "exp2", IntToFloat, "-")                                              \
  X(Expm1, "expm1", IntToFloat, "-")                                            \
  X(Log, "log", IntToFloat, "-")                                                \
  X(Log2, "log2", IntToFloat, "-")                                              \
  X(Log10, "log10", IntToFloat, "-")                                            \
  X(Log1p, "log1p", IntToFloat, "-")                                            \
  X(Sin, "sin", IntToFloat, "-")                                                \
  X(Cos, "cos", IntToFloat, "-")                                                \
  X(Tan, "tan", IntToFloat, "-")                                                \
  X(Asin, "asin", IntToFloat, "-")                                              \
  X(Acos, "acos", IntToFloat, "-")                                              \
  X(Atan, "atan", IntToFloat, "-")                                              \
  X(Sinh, "sinh", IntToFloat, "-")                                              \
  X(Cosh, "cosh", IntToFloat, "-")                                              \
  X(Tanh, "tanh", IntToFloat, "-")                                              \
  X(Asinh, "asinh", IntToFloat, "-")                                            \
  X(Acosh, "acosh", IntToFloat, "-")                                            \
  X(Atanh, "atanh", IntToFloat, "-")                                            \
  X(Erf, "erf", IntToFloat, "-")                                                \
  X(Erfc, "erfc", IntToFloat, "-")                                              \
  X(Erfinv, "erfinv", IntToFloat, "-")                                          \
  X(Lgamma, "lgamma", IntToFloat, "-")                                          \
  X(Digamma, "digamma", IntToFloat, "-")                                        \
  X(I0, "i0", IntToFloat, "-")                                                  \
  X(Sigmoid, "sigmoid", IntToFloat, "-")                                        \
  X(Logit, "logit", IntToFloat, "alpha = eps (unset: none; else x clamped to [eps, 1-eps])") \
  X(Floor, "floor", Numeric, "-")                                               \
  X(Ceil, "ceil", Numeric, "-")                                                 \
  X(Round, "round", Numeric, "alpha = decimals (integer, default 0; half to even)") \
  X(Trunc, "trunc", Numeric, "-")                                               \
  X(Frac, "frac", Floating, "-")                                                \
  X(IsNan, "isnan", Predicate, "-")                                             \
  X(IsInf, "isinf", Predicate, "-")                                             \
  X(IsFinite, "isfinite", Predicate, "-")                                       \
  X(IsPosInf, "isposinf", Predicate, "-")                                       \
  X(IsNegInf, "isneginf", Predicate, "-")                                       \
  X(SignBit, "signbit", Predicate, "-")                                         \
  X(LogicalNot, "logical_not", Predicate, "-")                                  \
  X(BitwiseNot, "bitwise_not", Integral, "-")                                   \
  X(NanToNum, "nan_to_num", Numeric, "alpha = nan (0), beta = posinf (max), gamma = neginf (lowest)") \
  /* activations (torch.nn.functional) */                                       \
  X(Relu, "relu", Numeric, "-")                                                 \
  X(Relu6, "relu6", Floating, "-")                                              \
  X(LeakyRelu, "leaky_relu", Floating, "alpha = negative_slope (0.01)")         \
  X(Elu, "elu", Floating, "alpha = alpha (1)")                                  \
  X(Selu, "selu", Floating, "-")                                                \
  X(Celu, "celu", Floating, "alpha = alpha (1, nonzero)")                       \
  X(GeluErf, "gelu", Floating, "-")                                             \
  X(GeluTanh, "gelu_tanh", Floating, "-")                                       \
  X(Silu, "silu", Floating, "-")                                                \
  X(Mish, "mish", Floating, "-")                                                \
  X(Softplus, "softplus", Floating, "alpha = beta (1, nonzero), beta = threshold (20)") \
  X(Softsign, "softsign", Floating, "-")                                        \
  X(Hardtanh, "hardtanh", Floating, "alpha = min_val (-1), beta = max_val (1)") \
  X(Hardsigmoid, "hardsigmoid", Floating, "-")                                  \
  X(Hardswish, "hardswish", Floating, "-")                                      \
  X(Hardshrink, "hardshrink", Floating, "alpha = lambd (0.5)")                  \
  X(Softshrink, "softshrink", Floating, "alpha = lambd (0.5, >= 0)")            \
  X(Tanhshrink, "tanhshrink", Floating, "-")                                    \
  X(LogSigmoid, "logsigmoid", Floating, "-")                                    \
  X(Threshold, "threshold", Floating, "alpha = threshold, beta = value (both required)")

#define BARACUDA_BINARY_OPS(X)                                                  \
  X(Add, "add", Any, "alpha = alpha (1): a + alpha * b")                        \
  X(Sub, "sub", Numeric, "alpha = alpha (1): a - alpha * b")                    \
  X(Mul, "mul", Any, "-")                                                       \
  X(Div, "div", IntToFloat, "-")                                                \
  X(DivFloor, "div_floor", Numeric, "-")                                        \
  X(DivTrunc, "div_trunc", Numeric, "-")                                        \
  X(Remainder, "remainder", Numeric, "-")                                       \
  X(Fmod, "fmod", Numeric, "-")                                                 \
  X(Pow, "pow", Numeric, "-")                                                   \
  X(Atan2, "atan2", IntToFloat, "-")                                            \
  X(Hypot, "hypot", Floating, "-")                                              \
  X(Maximum, "maximum", Any, "-")                                               \
  X(Minimum, "minimum", Any, "-")                                               \
  X(Fmax, "fmax", Numeric, "-")                                                   \
  X(Fmin, "fmin", Numeric, "-")                                                   \
  X(Copysign, "copysign", IntToFloat, "-")                                      \
  X(NextAfter, "nextafter", Floating, "-")                                      \
  X(LogAddExp, "logaddexp", Floating, "-")                                      \
  X(LogAddExp2, "logaddexp2", Floating, "-")                                    \
  X(Xlogy, "xlogy", IntToFloat, "-")                                            \
  X(Xlog1py, "xlog1py", IntToFloat, "-")                                        \
  X(Ldexp, "ldexp", IntToFloat, "-")                                            \
  X(Eq, "eq", Predicate, "-")                                                   \
  X(Ne, "ne", Predicate, "-")                                                   \
  X(Lt, "lt", Predicate, "-")                                                   \
  X(Le, "le", Predicate, "-")                                                   \
  X(Gt, "gt", Predicate, "-")                                                   \
  X(Ge, "ge", Predicate, "-")                                                   \
  X(IsClose, "isclose", Predicate, "alpha = rtol (1e-5), beta = atol (1e-8), gamma = equal_nan (0)") \
  X(LogicalAnd, "logical_and", Predicate, "-")                                  \
  X(LogicalOr, "logical_or", Predicate, "-")                                    \
  X(LogicalXor, "logical_xor", Predicate, "-")                                  \
  X(BitwiseAnd, "bitwise_and", Integral, "-")                                   \
  X(BitwiseOr, "bitwise_or", Integral, "-")                                     \
  X(BitwiseXor, "bitwise_xor", Integral, "-")                                   \
  X(ShiftLeft, "bitwise_left_shift", Integral, "-")                             \
  X(ShiftRight, "bitwise_right_shift", Integral, "-")                           \
  /* gated activations on two tensors (a = the gated half, b = the gate's other half) */ \
  X(Glu, "glu", Floating, "-")         /* a * sigmoid(b) */                     \
  X(SwiGlu, "swiglu", Floating, "-")   /* silu(a) * b */                        \
  X(GeGlu, "geglu", Floating, "-")     /* gelu(a) * b (erf) */                  \
  X(GeGluTanh, "geglu_tanh", Floating, "-") /* gelu_tanh(a) * b */              \
  X(ReGlu, "reglu", Floating, "-")     /* relu(a) * b */

#define BARACUDA_TERNARY_OPS(X)                                                 \
  X(Where, "where", Any, "-")          /* a ? b : c; a is bool, result_type(b, c) */ \
  X(Clamp, "clamp", Numeric, "-")      /* min(max(a, b), c); b or c may be absent */ \
  X(Lerp, "lerp", Floating, "-")       /* a + c * (b - a) */                    \
  X(Addcmul, "addcmul", Numeric, "alpha = value (1): a + value * b * c")        \
  X(Addcdiv, "addcdiv", Floating, "alpha = value (1): a + value * b / c")

enum class UnaryOp : uint8_t {
#define BARACUDA_EW_ENUM(E, name, dom, params) E,
  BARACUDA_UNARY_OPS(BARACUDA_EW_ENUM)
};
enum class BinaryOp : uint8_t { BARACUDA_BINARY_OPS(BARACUDA_EW_ENUM) };
enum class TernaryOp : uint8_t { BARACUDA_TERNARY_OPS(BARACUDA_EW_ENUM)
#undef BARACUDA_EW_ENUM
};

BARACUDA_API const char* op_name(UnaryOp op);    // "exp" ("?" for a value outside the table)
BARACUDA_API const char* op_name(BinaryOp op);
BARACUDA_API const char* op_name(TernaryOp op);

// ---- operands ----------------------------------------------------------------------
// A host number given per call (a Python scalar). Built from a double / float
// (floating), an integer (i64) or a bool.
struct Scalar {
  DType dtype = DType::F64;  // F64, I64 or Bool: only its category counts for promotion
  double f = 0;              // the value when dtype is F64
  int64_t i = 0;             // the value when dtype is I64 or Bool (0 / 1)
  constexpr Scalar() = default;
  constexpr Scalar(double v) : dtype(DType::F64), f(v) {}        // NOLINT
  constexpr Scalar(float v) : dtype(DType::F64), f(v) {}         // NOLINT
  constexpr Scalar(int v) : dtype(DType::I64), i(v) {}           // NOLINT
  constexpr Scalar(long v) : dtype(DType::I64), i(v) {}          // NOLINT
  constexpr Scalar(long long v) : dtype(DType::I64), i(v) {}     // NOLINT
  constexpr Scalar(bool v) : dtype(DType::Bool), i(v ? 1 : 0) {} // NOLINT
};

struct ElementwiseOperand {
  enum class Kind : uint8_t { Tensor, Scalar, Absent /* an optional operand not given (clamp's bounds) */ };
  Kind kind = Kind::Tensor;
  DType dtype = DType::F32;  // a tensor's dtype; a scalar's F64, I64 or Bool
  Dims shape;                // a tensor's shape (rank 0: a 0-dim tensor)

  static ElementwiseOperand tensor(DType dtype, Dims shape) { return {Kind::Tensor, dtype, shape}; }
  static ElementwiseOperand of(const TensorRef& t) { return {Kind::Tensor, t.dtype, t.shape}; }
  static ElementwiseOperand scalar(DType dtype = DType::F64) { return {Kind::Scalar, dtype, {}}; }
  static ElementwiseOperand absent() { return {Kind::Absent, DType::F32, {}}; }
};

// ---- unary ---------------------------------------------------------------------------
struct UnaryDescriptor {
  UnaryOp op = UnaryOp::Copy;
  ElementwiseOperand x;             // a tensor
  std::optional<DType> out_dtype;   // default: the op's result dtype (Copy: x's)
  std::optional<double> alpha, beta, gamma;  // op parameters (table above)
};
struct UnaryArgs {
  TensorRef x;
  TensorMut y;  // output_shape(), out_dtype(); may be x itself
};

// ---- binary --------------------------------------------------------------------------
struct BinaryDescriptor {
  BinaryOp op = BinaryOp::Add;
  ElementwiseOperand a, b;          // tensors or scalars (not both scalars)
  std::optional<DType> out_dtype;
  std::optional<double> alpha, beta, gamma;
};
struct BinaryArgs {
  TensorRef a, b;                   // the tensor operands (leave a scalar operand's empty)
  std::optional<Scalar> a_value, b_value;  // the scalar operands' values
  TensorMut out;                    // may be a or b itself
};

// ---- ternary -------------------------------------------------------------------------
struct TernaryDescriptor {
  TernaryOp op = TernaryOp::Where;
  ElementwiseOperand a, b, c;       // tensors, scalars or (clamp's b / c) absent
  std::optional<DType> out_dtype;
  std::optional<double> alpha, beta, gamma;
};
struct TernaryArgs {
  TensorRef a, b, c;
  std::optional<Scalar> a_value, b_value, c_value;
  TensorMut out;
};

namespace detail {
// What select() resolved from a descriptor (internal; read it through the
// plans' accessors: its layout may change between versions).
struct ElementwiseResolved {
  int arity = 1;
  uint8_t op = 0;
  // Kernel inputs: up to four (a ternary op's gradients read dy, a, b, c).
  ElementwiseOperand::Kind kind[4] = {};
  DType in_dtype[4] = {DType::F32, DType::F32, DType::F32, DType::F32};
  Dims in_shape[4];
  DType common = DType::F32;   // result_type of the operands (after IntToFloat)
  DType compute = DType::F32;  // F32, F64 or I64
  DType out = DType::F32;
  double params[3] = {0, 0, 0};  // alpha / beta / gamma with the defaults applied
  int bits = 64;                 // integer width of the common dtype (1 for bool)
  int has = 3;                   // clamp: bit 0 = b given, bit 1 = c given
  // 0: the op; 1: a unary op's gradient from (dy, x); 2: from (dy, y);
  // 3 / 4: a binary / ternary op's operand gradients from (dy, a, b[, c])
  // (inputs: dy then the operands; outputs: one per operand).
  uint8_t grad = 0;
  int outputs = 1;               // kernel outputs (grad 3 / 4: the forward's arity)
  uint8_t need = 1;              // bit m: output m is written (the others are neither computed into memory nor read)
  DType grad_dtype[3] = {DType::F32, DType::F32, DType::F32};  // grad 3 / 4: output m's dtype (operand m's)
  Dims out_shape;
};
}  // namespace detail

// Every elementwise plan reports the same derived facts.
class BARACUDA_API ElementwisePlanBase : public PlanBase {
 public:
  Dims output_shape() const { return r_.out_shape; }  // the broadcast shape
  DType out_dtype() const { return r_.out; }
  DType common_dtype() const { return r_.common; }    // result_type of the operands (after IntToFloat)
  DType compute_dtype() const { return r_.compute; }  // f32, f64 or i64

 protected:
  using PlanBase::PlanBase;
  detail::ElementwiseResolved r_;
  friend struct ElementwisePlanAccess;
};

class BARACUDA_API UnaryPlan : public ElementwisePlanBase {
 public:
  UnaryPlan() : ElementwisePlanBase("UnaryPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<UnaryPlan> select(const Stream& stream, const UnaryDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const UnaryArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const UnaryArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const UnaryArgs& args) const;
  const UnaryDescriptor& descriptor() const { return desc_; }

 private:
  UnaryDescriptor desc_;
  friend struct ElementwisePlanAccess;
};

class BARACUDA_API BinaryPlan : public ElementwisePlanBase {
 public:
  BinaryPlan() : ElementwisePlanBase("BinaryPlan") {}
  static Result<BinaryPlan> select(const Stream& stream, const BinaryDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const BinaryArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const BinaryArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const BinaryArgs& args) const;
  const BinaryDescriptor& descriptor() const { return desc_; }

 private:
  BinaryDescriptor desc_;
  friend struct ElementwisePlanAccess;
};

class BARACUDA_API TernaryPlan : public ElementwisePlanBase {
 public:
  TernaryPlan() : ElementwisePlanBase("TernaryPlan") {}
  static Result<TernaryPlan> select(const Stream& stream, const TernaryDescriptor& desc,
                                    const PlanPreference& pref = {});
  Status can_implement(const TernaryArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const TernaryArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const TernaryArgs& args) const;
  const TernaryDescriptor& descriptor() const { return desc_; }

 private:
  TernaryDescriptor desc_;
  friend struct ElementwisePlanAccess;
};

// ---- unary backward ------------------------------------------------------------------
// dx = dy * f'(x) for every unary op with a gradient (all but the predicates
// and logical / bitwise not), floating x only; PyTorch's conventions at the
// kinks (relu'(0) = 0, abs'(0) = 0, floor / ceil / round / trunc / sign
// give zero gradient, hardtanh and relu6 pass nothing at their bounds,
// threshold nothing at x == threshold). Copy's backward casts dy back to x's
// dtype. from_output: read the forward's output y instead of x where that is
// exact and cheaper (sigmoid, tanh, exp, expm1, sqrt, reciprocal, relu).
// dy has the forward's output dtype, which must be x's (except for Copy).
struct UnaryBackwardDescriptor {
  UnaryDescriptor forward;
  bool from_output = false;
};
struct UnaryBackwardArgs {
  TensorRef dy;  // the gradient of y
  TensorRef x;   // the forward's input (unless from_output)
  TensorRef y;   // the forward's output (from_output only)
  TensorMut dx;  // x's shape and dtype; may be dy itself
};

class BARACUDA_API UnaryBackwardPlan : public ElementwisePlanBase {
 public:
  UnaryBackwardPlan() : ElementwisePlanBase("UnaryBackwardPlan") {}
  static Result<UnaryBackwardPlan> select(const Stream& stream, const UnaryBackwardDescriptor& desc,
                                          const PlanPreference& pref = {});
  Status can_implement(const UnaryBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const UnaryBackwardArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const UnaryBackwardArgs& args) const;
  const UnaryBackwardDescriptor& descriptor() const { return desc_; }

 private:
  UnaryBackwardDescriptor desc_;
  friend struct ElementwisePlanAccess;
};

// ---- binary and ternary backward ------------------------------------------------------
// The gradients of a binary / ternary op with respect to its operands, from
// dy (the forward's output gradient: the broadcast shape, the forward's
// output dtype) and the operands the gradient reads. PyTorch's formulas
// (tools/autograd/derivatives.yaml), element by element, with g = dy:
//   add        da = g, db = alpha g          sub      da = g, db = -alpha g
//   mul        da = g b, db = g a            div      da = g / b, db = -g (a / b) / b
//   div_floor, div_trunc: zero gradients (piecewise constant)
//   remainder  da = g, db = -g floor(a / b)  fmod     da = g, db = -g trunc(a / b)
//   pow        da = 0 where b == 0, else g b a^(b-1);
//              db = 0 where a == 0 and b >= 0, else g a^b log(a)
//   atan2      da = g b / (a^2 + b^2), db = -g a / (a^2 + b^2)   (NaN at a = b = 0)
//   hypot      da = g a / hypot(a, b), db = g b / hypot(a, b)    (NaN at a = b = 0)
//   maximum / minimum: the chosen operand gets g, the other 0; ties (a == b)
//              give g / 2 to each; a NaN operand (unordered) gives g to both
//   fmax       da = g where a >= b or b is NaN, else 0; db = g - that
//              (ties go to a); fmin likewise with a <= b
//   copysign   da = g copysign(a, b) / a (0 where a == 0; NaN for infinite a,
//              as PyTorch's ratio), db = 0
//   logaddexp  da = g / (1 + exp(b - a)), db = g / (1 + exp(a - b)); logaddexp2 with 2^
//   xlogy      da = 0 where a == 0 and b <= 0, else xlogy(g, b) (0 where g == 0, NaN for NaN b);
//              db = g a / b
//   xlog1py    da = 0 where a == 0 and b <= -1, else xlog1py(g, b); db = g a / (1 + b)
//   ldexp      da = g 2^b, db = g a 2^b ln 2 (PyTorch composes it of mul and pow)
//   glu        da = g sigmoid(b), db = g a sigmoid'(b)
//   swiglu, geglu, geglu_tanh, reglu: da = g b f'(a), db = g f(a) (f'(0) = 0 for relu)
//   where      the condition a (bool) has no gradient; db = g where a, else 0; dc = g where !a
//   clamp      x = a, min = b, max = c (either bound may be absent):
//              da = g where min <= x <= max (bounds included; a bound absent: no test), else 0;
//              db = g where x < min and min < max (only min given: x < min);
//              dc = g where x > max or max < min (only max given: x > max).
//              So for min > max everything goes to max, as clamp returns max.
//              A NaN x passes nothing to anyone.
//   lerp       da = g (1 - w), db = g w, dc (tensor weight) = g (b - a)
//   addcmul    da = g, db = g value c, dc = g value b
//   addcdiv    da = g, db = g value / c, dc = -g value (b / c) / c
// Ops without a gradient (comparisons, isclose, logical and bitwise ops,
// shifts, nextafter) are Unsupported at select(). Floating operands only
// (where's condition is bool); dy has the common dtype, which must be the
// forward's output dtype (no out_dtype other than it). Compute in f32 for
// 16-bit floats and f32, f64 for f64, each gradient stored in its operand's
// dtype.
//
// need_a / need_b / need_c choose the gradients to compute; at least one must
// be set, and a host scalar, an absent clamp bound or where's condition gets
// none (its need_* set is InvalidProblem). Every tensor a needed gradient
// reads must be given, and nothing else: an operand tensor (or scalar value)
// the needed gradients do not read, and a da / db / dc whose need_* is false,
// are InvalidProblem. da has a's shape and dtype (db, dc likewise); each may
// be dy itself (in place) when it has dy's shape.
//
// Broadcasting's backward: an operand of fewer elements than the broadcast
// shape gets its gradient summed down to its shape (PyTorch's sum_to_size):
// the elementwise kernel writes the full-shape gradient into the workspace,
// in the operand's dtype, and a ReduceToPlan (selected at select(), for the
// same stream) sums it into da. workspace_size() counts those scratch
// tensors (256-byte aligned) and the largest inner ReduceToPlan workspace;
// a plan without a broadcast operand needs none. When the build leaves the
// reduce family out, a broadcast operand is Unsupported for CUDA streams.
// Deterministic (the reduction is).
struct BinaryBackwardDescriptor {
  BinaryDescriptor forward;
  bool need_a = true, need_b = true;
};
struct BinaryBackwardArgs {
  TensorRef dy;
  TensorRef a, b;                          // the tensor operands the gradients read (else empty)
  std::optional<Scalar> a_value, b_value;  // a scalar operand's value, when a gradient reads it
  TensorMut da, db;                        // the needed gradients (else empty)
};

struct TernaryBackwardDescriptor {
  TernaryDescriptor forward;
  bool need_a = true, need_b = true, need_c = true;
};
struct TernaryBackwardArgs {
  TensorRef dy;
  TensorRef a, b, c;
  std::optional<Scalar> a_value, b_value, c_value;
  TensorMut da, db, dc;
};

namespace detail {
// The operand gradients a backward plan sums down to an operand's shape.
struct ElementwiseGradReduce {
  bool active[3] = {false, false, false};
  size_t scratch_offset[3] = {0, 0, 0};  // bytes into the workspace
  ReduceToPlan plan[3];
  size_t inner_offset = 0;                  // the inner plans' shared workspace
  ElementwiseOperand::Kind fwd_kind[3] = {};  // the forward's operand kinds
};
}  // namespace detail

class BARACUDA_API BinaryBackwardPlan : public ElementwisePlanBase {
 public:
  BinaryBackwardPlan() : ElementwisePlanBase("BinaryBackwardPlan") {}
  static Result<BinaryBackwardPlan> select(const Stream& stream, const BinaryBackwardDescriptor& desc,
                                           const PlanPreference& pref = {});
  Status can_implement(const BinaryBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const BinaryBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const BinaryBackwardArgs& args) const;
  const BinaryBackwardDescriptor& descriptor() const { return desc_; }

 private:
  BinaryBackwardDescriptor desc_;
  detail::ElementwiseGradReduce red_;
  friend struct ElementwisePlanAccess;
};

class BARACUDA_API TernaryBackwardPlan : public ElementwisePlanBase {
 public:
  TernaryBackwardPlan() : ElementwisePlanBase("TernaryBackwardPlan") {}
  static Result<TernaryBackwardPlan> select(const Stream& stream, const TernaryBackwardDescriptor& desc,
                                            const PlanPreference& pref = {});
  Status can_implement(const TernaryBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const TernaryBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const TernaryBackwardArgs& args) const;
  const TernaryBackwardDescriptor& descriptor() const { return desc_; }

 private:
  TernaryBackwardDescriptor desc_;
  detail::ElementwiseGradReduce red_;
  friend struct ElementwisePlanAccess;
};

// NumPy broadcasting of two shapes (right-aligned; extents equal or one of
// them 1). InvalidProblem naming `who` when they do not broadcast.
BARACUDA_API Result<Dims> broadcast_shapes(const Dims& a, const Dims& b, const char* who = "broadcast_shapes");


// =====================================================================================
// ---- factories: fill / full / arange / linspace (FactoryPlan) ------------------------
// =====================================================================================
// Writes generated values into an output view; no input tensor. PyTorch's
// semantics (torch.Tensor.fill_, torch.full, torch.arange, torch.linspace as
// its CUDA kernels compute them); docs/OPS.md "Factories" has the rules.
//
//  Fill      every element of `out` (any rank, any non-overlapping strides; a
//            view that writes one element twice, e.g. stride 0 along an extent
//            > 1, is refused like every elementwise output) gets `value`
//            converted to `dtype` with the family's conversions (above:
//            floating -> integer truncates, NaN gives 0, beyond int64
//            saturates, then wraps to the width; -> bool is value != 0;
//            -> f16 / bf16 through f32). PyTorch raises instead for a value
//            its dtype cannot hold ("value cannot be converted to type ...
//            without overflow"). torch.full is Fill into a contiguous output:
//            the same plan (there is no second one).
//  Arange    out = [start + i * step for i < n], 1-D, any stride (views'
//            strides are >= 0, core/tensor.hpp). n = ceil((end - start) /
//            step) computed in double, except for an i64 output with
//            start, end and step all i64 scalars (exact integer
//            arithmetic), as PyTorch does. Element i is
//            computed in PyTorch's CUDA accumulate type: f32 for f16 / bf16 /
//            f32 outputs (fmaf(step, float(i), start): nvcc contracts
//            PyTorch's start + step * i into one fma), f64 for f64, int64 for
//            integers (start and step truncated to integers first, so
//            arange(0, 2, 0.5) into i32 is [0, 0, 0, 0], as in PyTorch), then
//            converted to `dtype` (rounded to nearest even; integers wrap).
//            Refused: step 0 or NaN, start or end NaN / inf, end on the wrong
//            side of start for the step's sign, a length beyond 2^62, start /
//            end / step beyond the accumulate type's range, bool (Unsupported).
//  Linspace  steps values from start to end, 1-D, any stride. PyTorch's
//            symmetric formula: step = (end - start) / (steps - 1); element
//            i < steps / 2 is start + step * i, the others end - step *
//            (steps - 1 - i); steps == 1 gives start, steps == 0 nothing.
//            f32 / f64 compute in their own type (one fma per element);
//            f16 / bf16 in their own type too, every operation rounded to it
//            (PyTorch's Half arithmetic: the index i, or steps - 1 - i, is
//            itself rounded to f16 / bf16, so long sequences are coarse, and
//            an index of 65520 or more is infinite in f16);
//            integers in f32 from start and end truncated to the dtype, the
//            result truncated toward zero (saturating at the dtype's range).
//            Refused: steps < 0, start / end that the dtype cannot hold
//            (PyTorch's checked conversion: NaN / inf / out of range for
//            integers, finite beyond the max for floating types), bool
//            (Unsupported; PyTorch accepts bool only for steps <= 1).
//
// Scalars are f64, i64 or bool (Scalar above). A field the op does not read
// must be left unset (InvalidProblem), like the other plans' parameters.
// Backends: CpuReference (bit-identical to the CUDA kernels: the same
// arithmetic in the same types) and Bespoke CUDA (one index -> value kernel,
// 32-bit indices where the view allows, else 64-bit; sku().variant
// "index32" / "index64", sku_for() from the actual view). No workspace.
enum class FactoryOp : uint8_t { Fill, Arange, Linspace };
BARACUDA_API const char* op_name(FactoryOp op);  // "fill", "arange", "linspace" ("?" otherwise)

struct FactoryDescriptor {
  FactoryOp op = FactoryOp::Fill;
  DType dtype = DType::F32;  // the output's dtype
  Dims shape;                // Fill: the output's shape; Arange / Linspace: leave it rank 0 (the plan computes [n])
  std::optional<Scalar> value;             // Fill (required)
  std::optional<Scalar> start, end, step;  // Arange: end required, start 0, step 1; Linspace: start, end required
  std::optional<int64_t> steps;            // Linspace (required, >= 0)

  // torch.full / fill_, torch.arange(start, end, step), torch.linspace(start, end, steps).
  static FactoryDescriptor fill(DType dtype, Dims shape, Scalar value) {
    FactoryDescriptor d;
    d.dtype = dtype;
    d.shape = shape;
    d.value = value;
    return d;
  }
  static FactoryDescriptor arange(DType dtype, Scalar start, Scalar end, Scalar step = Scalar(1)) {
    FactoryDescriptor d;
    d.op = FactoryOp::Arange;
    d.dtype = dtype;
    d.start = start;
    d.end = end;
    d.step = step;
    return d;
  }
  static FactoryDescriptor linspace(DType dtype, Scalar start, Scalar end, int64_t steps) {
    FactoryDescriptor d;
    d.op = FactoryOp::Linspace;
    d.dtype = dtype;
    d.start = start;
    d.end = end;
    d.steps = steps;
    return d;
  }
};
struct FactoryArgs {
  TensorMut out;  // output_shape(), out_dtype()
};

namespace detail {
// What FactoryPlan::select() resolved (internal; read it through the plan's accessors).
struct FactoryResolved {
  uint8_t kind = 0;            // 0: one constant (fill, linspace of 1 step), 1: arange, 2: linspace
  DType out = DType::F32;
  DType compute = DType::F32;  // arange: F32 / F64 / I64; linspace: the dtype's arithmetic (F32 for integers)
  uint64_t bits = 0;           // kind 0: the element's bytes (little-endian)
  double start = 0, step = 0, end = 0;  // floating compute (f32 / f16 / bf16: values those types hold)
  int64_t start_i = 0, step_i = 0;      // arange into integers
  int64_t steps = 0, halfway = 0;       // linspace
  Dims out_shape;
};
}  // namespace detail

class BARACUDA_API FactoryPlan : public PlanBase {
 public:
  FactoryPlan() : PlanBase("FactoryPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<FactoryPlan> select(const Stream& stream, const FactoryDescriptor& desc,
                                    const PlanPreference& pref = {});
  Status can_implement(const FactoryArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const FactoryArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const FactoryArgs& args) const;
  const FactoryDescriptor& descriptor() const { return desc_; }
  Dims output_shape() const { return r_.out_shape; }  // Fill: desc.shape; Arange / Linspace: [n]
  DType out_dtype() const { return r_.out; }

 private:
  FactoryDescriptor desc_;
  detail::FactoryResolved r_;
  friend struct FactoryPlanAccess;
};

}  // namespace baracuda

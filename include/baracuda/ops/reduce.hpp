// Reduction family: ReducePlan (forward), ReduceBackwardPlan, ReduceToPlan.
//
// Semantics (PyTorch / JAX conventions, tested):
//  * axes: any set of distinct axes, negative values count from the end; an
//    empty list reduces over every axis (torch.sum(x), jnp.sum(x, axis=None)).
//  * keepdim: reduced axes stay as extent-1 axes in the output.
//  * Output dtype: the input dtype, except integer Sum/Prod -> I64 (accumulated
//    in int64) and ArgMax/ArgMin -> I64.
//  * ArgMax/ArgMin return the index into the reduced sub-space, linearised
//    row-major over the reduced axes in their order; ties pick the first index;
//    NaN counts as larger than everything (the first NaN wins), like PyTorch.
//  * NaN propagates through Max/Min (and through every arithmetic kind).
//  * Empty reductions: Sum -> 0, Prod -> 1, Mean -> NaN, Norm2 -> 0,
//    LogSumExp -> -inf, Var/Std -> NaN; Max/Min/ArgMax/ArgMin over an empty
//    axis is InvalidProblem at select().
//  * Var/Std divide by max(0, n - correction) like PyTorch: n <= correction
//    gives NaN (0/0) or inf.
//  * Precision: f16/bf16 accumulate in f32, f32 in f32, f64 in f64, integers in
//    int64; the CPU reference accumulates in double (int64 for integers).
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, Prod, Norm2, LogSumExp, Var, Std, ArgMax, ArgMin };
BARACUDA_API const char* reduce_kind_name(ReduceKind k);

struct ReduceDescriptor {
  ReduceKind kind = ReduceKind::Sum;
  DType dtype = DType::F32;  // input element type
  Dims shape;                // input shape
  Dims axes;                 // axes to reduce; empty = all
  bool keepdim = false;
  int64_t correction = 1;    // Var/Std only (Bessel's correction, PyTorch's default)
};

struct ReduceArgs {
  TensorRef x;  // input, shape == descriptor.shape, any strides >= 0
  TensorMut y;  // output, shape == output_shape(), dtype == output_dtype(); must not self-overlap
};

class BARACUDA_API ReducePlan : public PlanBase {
 public:
  ReducePlan() : PlanBase("ReducePlan") {}  // empty until assigned from select() (PlanBase)
  static Result<ReducePlan> select(const Stream& stream, const ReduceDescriptor& desc,
                                   const PlanPreference& pref = {});
  Status can_implement(const ReduceArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ReduceArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ReduceArgs& args) const;  // see PlanBase

  const ReduceDescriptor& descriptor() const { return desc_; }  // axes normalised, sorted
  const Dims& output_shape() const { return out_shape_; }
  DType output_dtype() const { return out_dtype_; }
  // Bit i set when axis i is reduced.
  uint32_t axis_mask() const { return axis_mask_; }

 private:
  ReduceDescriptor desc_;
  Dims out_shape_;
  DType out_dtype_ = DType::F32;
  uint32_t axis_mask_ = 0;
};

// ---------------------------------------------------------------------------
// Backward. dx = d(loss)/dx given dy = d(loss)/dy for the nine FP kinds.
// Needs (x = the forward input, y = the forward output, both saved by the caller):
//   Sum, Mean:              dy only
//   Max, Min:               x, y   (ties split the gradient evenly, like torch.amax / JAX)
//   Prod:                   x      (exact with zeros: products of the other elements,
//                                   never y / x)
//   Norm2:                  x, y   (dx = dy * x / y; 0 where y == 0)
//   LogSumExp:              x, y   (dx = dy * exp(x - y))
//   Var:                    x      (dx = dy * 2 (x - mean) / (n - correction))
//   Std:                    x, y   (dx = dy * (x - mean) / ((n - correction) * y))
// dy and y have the forward output's shape (keepdim or not, as in the descriptor).
struct ReduceBackwardArgs {
  TensorRef dy;
  TensorRef x;   // when needs_x() (data == nullptr and numel > 0 = missing); else left empty
  TensorRef y;   // when needs_y(); else left empty (given to a kind that does not read it: InvalidProblem)
  TensorMut dx;  // shape == descriptor.shape
};

class BARACUDA_API ReduceBackwardPlan : public PlanBase {
 public:
  ReduceBackwardPlan() : PlanBase("ReduceBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<ReduceBackwardPlan> select(const Stream& stream, const ReduceDescriptor& desc,
                                           const PlanPreference& pref = {});
  Status can_implement(const ReduceBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ReduceBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ReduceBackwardArgs& args) const;  // see PlanBase
  const ReduceDescriptor& descriptor() const { return desc_; }
  const Dims& output_shape() const { return out_shape_; }  // shape of dy / y (the forward's output)
  // dx: descriptor().shape and descriptor().dtype.
  bool needs_x() const;
  bool needs_y() const;

 private:
  ReduceDescriptor desc_;
  Dims out_shape_;
  uint32_t axis_mask_ = 0;
};

// ---------------------------------------------------------------------------
// ReduceToPlan: sums x of shape `shape` down to `target` (broadcast-compatible:
// right-aligned, each target extent equals the input's or is 1; missing leading
// axes are summed). The backward of broadcasting.
struct ReduceToDescriptor {
  DType dtype = DType::F32;
  Dims shape;   // input
  Dims target;  // output
};
struct ReduceToArgs {
  TensorRef x;
  TensorMut y;  // shape == target
};
class BARACUDA_API ReduceToPlan : public PlanBase {
 public:
  ReduceToPlan() : PlanBase("ReduceToPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<ReduceToPlan> select(const Stream& stream, const ReduceToDescriptor& desc,
                                     const PlanPreference& pref = {});
  Status can_implement(const ReduceToArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ReduceToArgs& args) const;  // workspace: the inner ReducePlan's
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ReduceToArgs& args) const;  // see PlanBase
  const ReduceToDescriptor& descriptor() const { return desc_; }
  const Dims& output_shape() const { return desc_.target; }  // y
  DType output_dtype() const { return desc_.dtype; }

 private:
  ReduceToPlan(ReduceToDescriptor d, ReducePlan inner)
      : PlanBase("ReduceToPlan"), desc_(std::move(d)), inner_(std::move(inner)) {}
  Result<ReduceArgs> to_inner(const ReduceToArgs& args) const;
  ReduceToDescriptor desc_;
  ReducePlan inner_;
};

}  // namespace baracuda

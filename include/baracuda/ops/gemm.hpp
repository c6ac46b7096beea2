// Matrix multiply family: MatmulPlan (torch.matmul / mm / bmm / addmm /
// baddbmm with fused epilogues), LinearPlan and LinearBackwardPlan
// (nn.functional.linear with an optional fused activation).
//
// Backends: CpuReference on Stream::cpu() (loops in double, any strides, the
// oracle), cuBLASLt on CUDA streams (src/backends/cublaslt/: heuristics
// chosen at select() and cached, a per-device handle, the plan's workspace),
// plus small bespoke elementwise passes for what cuBLASLt cannot fuse (exact
// erf-GELU, the activation gradient, a broadcast C). docs/OPS.md "Matrix
// multiply" has every rule; the main ones:
//
// Shapes (torch.matmul). a [.., M, K] and b [.., K, N]; a 1-D a is [K] (a row
// vector, its M axis dropped from the output), a 1-D b is [K] (a column vector,
// its N axis dropped). Batch dims (everything before the last two) broadcast
// NumPy-style: out is [broadcast(batch_a, batch_b).., M, N] minus the dropped
// axes (1-D . 1-D is a 0-D dot product). K may be 0 (out = beta*c + bias,
// then the activation).
//
// Math. out = act(alpha * (a @ b) + beta * c + bias), in this order (cuBLASLt's
// epilogue order; torch.addmm(c, a, b, beta=, alpha=) followed by the
// activation). c (has_c) broadcasts to out's shape; bias (has_bias) is [N]
// added to every row. f16 / bf16 / f32 multiply with f32 accumulation
// (exact f32 products: no TF32 unless PlanPreference::allow_reduced_precision,
// then TF32 tensor cores on f32 inputs, and sku().variant ends in ".tf32");
// f64 in f64. The output has the inputs' dtype.
//
// Activations. Relu; GeluTanh (0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))),
// F.gelu(approximate="tanh"), cuBLASLt's GELU epilogue); Gelu (exact erf form,
// F.gelu's default: cuBLASLt has no erf epilogue, so the GEMM writes the
// pre-activation and one elementwise pass applies it; the variant says
// "+gelu-pass"). save_aux writes the pre-activation alpha*ab + beta*c + bias
// into `aux` (out's shape and dtype) for the backward (GELU_AUX in cuBLASLt);
// Relu needs none (its backward reads out: out > 0 exactly where the
// pre-activation is), so save_aux with Relu is InvalidProblem.
//
// Strides. Every operand is a strided view. On CUDA each matrix (the last two
// dims of a, b, c, out, aux) needs a unit stride along one of its two axes
// (row-major, or column-major: a transposed view) and a leading stride of at
// least its extent along the other (no overlapping rows); anything else is
// Unsupported naming the tensor and its strides (the plan does not copy; call
// .contiguous() on it). Batch dims may have any strides (0 = broadcast): dims
// that collapse into one stride are one strided-batched cuBLASLt call, the
// rest are looped on the host. A broadcast b (batch strides 0) with a whose
// batch dims are contiguous over its rows folds into one big GEMM (torch's
// matmul does the same). c broadcasts with stride 0 along any axis: a c that
// is not a proper matrix view is first copied into out (elementwise pass),
// then the GEMM accumulates into out with beta. The CPU reference takes any
// strides.
//
// Aliasing. c may be out itself (same data and strides: in place, addmm_);
// no other overlap between an output and any tensor is allowed.
//
// Determinism: one cuBLASLt algorithm per (device, problem, workspace limit)
// is chosen once and cached; cuBLASLt documents bit-identical results for a
// given algorithm, GPU model and SM count with a caller-owned workspace.
// Graph capture: run() is capture-safe for the problem select() saw (its
// algorithm is cached there); a problem first seen during capture (other
// strides or a less aligned pointer) is Unsupported while capturing.
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/reduce.hpp"

namespace baracuda {

enum class GemmActivation : uint8_t { None, Relu, GeluTanh, Gelu /* exact erf */ };
BARACUDA_API const char* gemm_activation_name(GemmActivation a);

struct MatmulDescriptor {
  DType dtype = DType::F32;  // a, b, c, bias, out, aux: f32, f64, f16, bf16
  Dims a_shape;              // rank 1..8
  Dims b_shape;              // rank 1..8
  bool has_c = false;        // addmm / baddbmm: c broadcasts to out_shape()
  Dims c_shape;              // used when has_c
  double alpha = 1.0;        // finite
  double beta = 1.0;         // finite; used when has_c
  bool has_bias = false;     // bias [N]; b must have rank >= 2
  GemmActivation activation = GemmActivation::None;
  bool save_aux = false;     // write the pre-activation to aux (Gelu / GeluTanh)

  // torch.matmul(a, b): the shapes and dtype of these views, other fields default.
  static Result<MatmulDescriptor> from(const TensorRef& a, const TensorRef& b);
};

struct MatmulArgs {
  TensorRef a;     // a_shape
  TensorRef b;     // b_shape
  TensorRef c;     // c_shape (has_c); may be `out` itself
  TensorRef bias;  // [N] (has_bias)
  TensorMut out;   // out_shape()
  TensorMut aux;   // out_shape() (save_aux)
};

class BARACUDA_API MatmulPlan : public PlanBase {
 public:
  MatmulPlan() : PlanBase("MatmulPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<MatmulPlan> select(const Stream& stream, const MatmulDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const MatmulArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MatmulArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MatmulArgs& args) const;  // see PlanBase

  const MatmulDescriptor& descriptor() const { return desc_; }
  const Dims& out_shape() const { return out_shape_; }
  int64_t m() const { return m_; }  // rows of one product (1 for a 1-D a)
  int64_t n() const { return n_; }  // columns (1 for a 1-D b)
  int64_t k() const { return k_; }
  Dims bias_shape() const { return Dims{n_}; }

 private:
  MatmulDescriptor desc_;
  Dims out_shape_;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool tf32_ = false;
  bool fuse_ = true;           // fused cuBLASLt epilogues (false: cuBLASLt refused them at select())
  size_t cublaslt_limit_ = 0;  // the heuristics' workspace limit (== workspace_size() on CUDA)
  friend struct MatmulPlanAccess;
};

// ---- nn.functional.linear ----------------------------------------------------------
// y = act(x . weight^T + bias): x [.., K] (any leading shape, rank >= 1),
// weight [N, K] (nn.Linear's layout), bias [N], y [.., N]. One GEMM over all
// rows of x (its leading dims must collapse into one row stride on CUDA:
// any contiguous x does). Activations and save_aux as MatmulDescriptor.
struct LinearDescriptor {
  DType dtype = DType::F32;   // f32, f64, f16, bf16
  Dims x_shape;               // [.., in_features], rank 1..8
  int64_t out_features = 0;   // N
  bool has_bias = true;
  GemmActivation activation = GemmActivation::None;
  bool save_aux = false;      // aux = x . weight^T + bias (Gelu / GeluTanh)
};

struct LinearArgs {
  TensorRef x;       // x_shape
  TensorRef weight;  // [N, K]
  TensorRef bias;    // [N] (has_bias)
  TensorMut y;       // y_shape()
  TensorMut aux;     // y_shape() (save_aux)
};

class BARACUDA_API LinearPlan : public PlanBase {
 public:
  LinearPlan() : PlanBase("LinearPlan") {}
  static Result<LinearPlan> select(const Stream& stream, const LinearDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const LinearArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const LinearArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const LinearArgs& args) const;

  const LinearDescriptor& descriptor() const { return desc_; }
  Dims y_shape() const;
  Dims weight_shape() const;  // [N, K]
  Dims bias_shape() const;    // [N]

 private:
  LinearDescriptor desc_;
  MatmulPlan inner_;  // x [M, K] . weight^T [K, N]
  friend struct MatmulPlanAccess;
};

// Backward of LinearPlan. dy is the gradient of y (of the activation's output
// when the forward had one). With an activation the plan first forms
// g = dy * act'(pre) in its workspace (one elementwise pass; pre is `aux`:
// the saved pre-activation for Gelu / GeluTanh, y itself for Relu, whose
// derivative is taken as 0 at 0 like PyTorch's threshold_backward), then
//   dx = g . weight      [.., K]
//   dw = g^T . x         [N, K]  (g and x flattened to rows)
//   db = sum of g's rows [N]     (fused into the dw GEMM as cuBLASLt's
//                                 BGRADB epilogue where supported, else a
//                                 reduction; the variant says which)
// need_* choose the outputs (frozen weights: need_dw = need_db = false; first
// layer: need_dx = false); a tensor only an unneeded output reads is refused
// when given. Every output is overwritten (no accumulation into dw yet).
struct LinearBackwardDescriptor {
  LinearDescriptor forward;  // the forward's descriptor as it was (its save_aux is not used here)
  bool need_dx = true, need_dw = true;
  bool need_db = true;  // only with forward.has_bias
};

struct LinearBackwardArgs {
  TensorRef dy;      // y_shape()
  TensorRef x;       // x_shape (need_dw)
  TensorRef weight;  // [N, K] (need_dx)
  TensorRef aux;     // y_shape(): Gelu / GeluTanh the saved pre-activation, Relu the forward's y
  TensorMut dx;      // x_shape (need_dx)
  TensorMut dw;      // [N, K] (need_dw)
  TensorMut db;      // [N] (need_db)
};

class BARACUDA_API LinearBackwardPlan : public PlanBase {
 public:
  LinearBackwardPlan() : PlanBase("LinearBackwardPlan") {}
  static Result<LinearBackwardPlan> select(const Stream& stream, const LinearBackwardDescriptor& desc,
                                           const PlanPreference& pref = {});
  Status can_implement(const LinearBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const LinearBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const LinearBackwardArgs& args) const;

  const LinearBackwardDescriptor& descriptor() const { return desc_; }
  Dims y_shape() const;
  Dims weight_shape() const;
  Dims bias_shape() const;

 private:
  LinearBackwardDescriptor desc_;
  int64_t rows_ = 0;        // M = numel(x) / K
  size_t g_bytes_ = 0;      // the workspace's g buffer (0 without an activation)
  size_t limit_ = 0;        // cuBLASLt's workspace limit (after g)
  bool tf32_ = false;
  bool fused_db_ = false;   // db through BGRADB (chosen at select())
  ReduceToPlan db_reduce_;  // db = sum of g's rows, when not fused
  size_t reduce_offset_ = 0;  // its workspace, after g
  friend struct MatmulPlanAccess;
};

}  // namespace baracuda

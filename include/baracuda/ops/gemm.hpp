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

namespace gemm {
struct MatmulPlanAccess;   // the family's internals (src/ops/gemm/common.hpp)
struct GroupedPlanAccess;  // (src/ops/gemm/grouped_plan.cpp)
}

enum class GemmActivation : uint8_t { None, Relu, GeluTanh, Gelu /* exact erf */ };
BARACUDA_API const char* gemm_activation_name(GemmActivation a);

struct BARACUDA_API MatmulDescriptor {
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
  friend struct gemm::MatmulPlanAccess;
};

// ---- fp8: torch._scaled_mm -------------------------------------------------------
// out = act(a_scale * b_scale * (a @ b) + bias) with a [M, K] and b [K, N] in
// fp8 (f8e4m3 / f8e5m2; e5m2 x e5m2 is Unsupported everywhere: cuBLASLt has
// no kernel for it and PyTorch refuses it too) and out [M, N] in bf16, f16 or
// f32, accumulated in f32 (the CPU reference in double). The scales are the
// DEQUANTIZATION factors (what the stored fp8 values are multiplied by),
// f32 tensors:
//   Fp8Scaling::Tensor  a_scale [1], b_scale [1]  (one factor per tensor)
//   Fp8Scaling::Row     a_scale [M] (a factor per row of a), b_scale [N] (per
//                       column of b = per row of the weight b^T) — row-wise
//                       (channel-wise) scaling; PyTorch's scales are [M, 1]
//                       and [1, N], ours are those views reshaped to 1-D.
//   out[i, j] = act(a_scale[i or 0] * b_scale[j or 0] * sum_k a[i,k] b[k,j] + bias[j])
// bias (has_bias) is [N] in out's dtype; activations as MatmulDescriptor's
// (no aux: fp8 here serves inference and the forward of fp8 training recipes,
// whose backward uses the bf16 plans). A separate plan, not a MatmulPlan
// dtype, because its operands differ in dtype from its output and it takes
// the scale tensors; it is torch._scaled_mm (2-D only: flatten leading dims).
//
// CUDA (cuBLASLt; sm_89+, tested on sm_90): a and b must each have a unit
// stride along K (a row-major [M, K]; b the transposed view of a row-major
// [N, K] weight: cuBLASLt's fp8 kernels exist only for this "TN" layout), K
// and N multiples of 16 and a's / b's leading strides multiples of 16 (its
// 16-byte alignment rule, as torch._scaled_mm's): anything else is
// Unsupported naming the tensor; the plan does not copy or transpose. Row
// scales need unit strides. Scales live on the device (cuBLASLt reads them
// there; no host synchronization). fast_accum (torch's use_fast_accum) lets
// the tensor cores accumulate without periodic promotion to f32: faster, less
// accurate; sku().variant then ends in ".fast-accum". The CPU reference takes
// any shape and strides and ignores fast_accum (exact).
enum class Fp8Scaling : uint8_t { Tensor, Row };

struct ScaledMatmulDescriptor {
  DType a_dtype = DType::F8E4M3;  // f8e4m3, f8e5m2
  DType b_dtype = DType::F8E4M3;  // f8e4m3, f8e5m2 (not both e5m2)
  DType out_dtype = DType::BF16;  // bf16, f16, f32: out and bias
  Dims a_shape;                   // [M, K]
  Dims b_shape;                   // [K, N]
  Fp8Scaling scaling = Fp8Scaling::Tensor;
  bool has_bias = false;          // bias [N]
  GemmActivation activation = GemmActivation::None;
  bool fast_accum = false;
};

struct ScaledMatmulArgs {
  TensorRef a;        // a_shape, a_dtype
  TensorRef b;        // b_shape, b_dtype
  TensorRef a_scale;  // f32, a_scale_shape()
  TensorRef b_scale;  // f32, b_scale_shape()
  TensorRef bias;     // [N], out_dtype (has_bias)
  TensorMut out;      // [M, N], out_dtype
};

class BARACUDA_API ScaledMatmulPlan : public PlanBase {
 public:
  ScaledMatmulPlan() : PlanBase("ScaledMatmulPlan") {}
  static Result<ScaledMatmulPlan> select(const Stream& stream, const ScaledMatmulDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const ScaledMatmulArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ScaledMatmulArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ScaledMatmulArgs& args) const;

  const ScaledMatmulDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const;      // [M, N]
  Dims a_scale_shape() const;  // [1] or [M]
  Dims b_scale_shape() const;  // [1] or [N]

 private:
  ScaledMatmulDescriptor desc_;
  bool fuse_ = true;    // fused epilogues (false: cuBLASLt refused them at select())
  size_t limit_ = 0;    // cuBLASLt's workspace limit
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
  friend struct gemm::MatmulPlanAccess;
};

// Backward of LinearPlan. dy is the gradient of y (of the activation's output
// when the forward had one). With an activation the plan first forms
// g = dy * act'(pre) in its workspace (one elementwise pass; pre is `aux`:
// the saved pre-activation for Gelu / GeluTanh, y itself for Relu, whose
// derivative is taken as 0 at 0 like PyTorch's threshold_backward), then
//   dx = g . weight      [.., K]
//   dw = g^T . x         [N, K]  (g and x flattened to rows)
//   db = sum of g's rows [N]     (a ReduceToPlan: "db:reduce"; with
//                                 PlanPreference::variant "bgrad=1" cuBLASLt's
//                                 BGRADB epilogue on the dw GEMM, "db:fused",
//                                 measured slower on the H100)
// need_* choose the outputs (frozen weights: need_dw = need_db = false; first
// layer: need_dx = false); a tensor only an unneeded output reads is refused
// when given. Every output is overwritten, unless `accumulate` is set: then
// dw += g^T . x and db += sum of g's rows (PyTorch's `.grad +=`; the cuBLASLt
// GEMM with beta = 1 and C = dw, and db as a GEMM ones^T . g with beta = 1,
// "db:ones", so the BGRADB epilogue, which overwrites, is not used; each
// output is rounded once: old value + the new sum, computed in the GEMM's
// accumulator). dx and dbias_in are always overwritten. With zero rows an
// accumulating backward leaves dw and db as they were.
//
// Chaining layers (llm.c's fusion). When x itself came out of an activation
// of the previous layer, x = act_in(x_pre) with x_pre saved as that layer's
// aux, set input_activation: dx is then the gradient with respect to x_pre,
//   dx = (g . weight) * act_in'(x_aux)          (x_aux = x_pre; relu: x works)
// and need_input_bias_grad adds dbias_in = sum of dx's rows, the previous
// layer's bias gradient — so the previous layer's backward runs with
// activation None and need_db false. For GeluTanh the activation gradient is
// cuBLASLt's DGELU epilogue on the dx GEMM (variant "dx:cublaslt.dgelu"), no
// elementwise pass, and dbias_in a reduction ("dbias_in:reduce"; "bgrad=1"
// fuses it as DGELU_BGRAD, slower on the H100); other activations (and f64)
// take a pass ("+dact-pass"). Variant keys (PlanPreference::variant, default
// from BARACUDA_GEMM_VARIANT): bgrad=0|1 (default 0), dgelu=0|1 (default 1).
struct LinearBackwardDescriptor {
  LinearDescriptor forward;  // the forward's descriptor as it was (its save_aux is not used here)
  bool need_dx = true, need_dw = true;
  bool need_db = true;  // only with forward.has_bias
  GemmActivation input_activation = GemmActivation::None;  // needs need_dx
  bool need_input_bias_grad = false;                       // needs input_activation
  bool accumulate = false;  // dw += and db += (read, added to, written); dx / dbias_in still overwritten
};

struct LinearBackwardArgs {
  TensorRef dy;      // y_shape()
  TensorRef x;       // x_shape (need_dw)
  TensorRef weight;  // [N, K] (need_dx)
  TensorRef aux;     // y_shape(): Gelu / GeluTanh the saved pre-activation, Relu the forward's y
  TensorRef x_aux;   // x_shape: the previous layer's saved pre-activation (input_activation)
  TensorMut dx;      // x_shape (need_dx)
  TensorMut dw;      // [N, K] (need_dw)
  TensorMut db;      // [N] (need_db)
  TensorMut dbias_in;  // [K] (need_input_bias_grad)
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
  bool fused_din_ = false;  // dbias_in through DGELU_BGRAD (chosen at select())
  bool fuse_dx_ = true;     // the dx GEMM's epilogue fused (false: cuBLASLt refused it at select())
  bool bgrad_ = true, dgelu_ = true;  // PlanPreference::variant keys bgrad / dgelu
  ReduceToPlan db_reduce_;  // db = sum of g's rows, when not fused
  ReduceToPlan din_reduce_; // dbias_in = sum of dx's rows, when not fused
  size_t reduce_offset_ = 0;  // its workspace, after g
  size_t ones_bytes_ = 0;     // accumulate with need_db: the ones vector [rows] of db += ones^T . g, after g
  friend struct gemm::MatmulPlanAccess;
};

// ---- Grouped linear: the experts of a mixture-of-experts layer ---------------------------
// G independent nn.functional.linear problems over one packed token buffer:
// tokens are sorted by expert, group g owns rows [offsets[g], offsets[g+1])
// of x [T, K] (T = capacity), and
//   y[r] = act(x[r] . weight[g]^T + bias[g])   for every r of group g
// with weight [G, N, K] (nn.Linear's layout per expert) and bias [G, N]; with
// shared_weight one weight [N, K] and bias [N] serve every group (then the
// call is one LinearPlan over rows [0, offsets[G]), split only to share the
// offsets). Activations and save_aux as LinearDescriptor (aux [T, N] = the
// pre-activation).
//
// Sizes per call. The descriptor fixes G, K, N and the capacity T (the
// buffers' row count); how many rows each group has is known only per step,
// so it is an ARGUMENT: `offsets`, a HOST tensor (Device::cpu(), i64, [G + 1],
// any stride) read by run() on the host before it enqueues anything. Rules,
// checked by can_implement() (InvalidProblem): offsets[0] == 0, non-decreasing,
// offsets[G] <= T. Empty groups are allowed (nothing is launched for them);
// rows at and past offsets[G] (the unused capacity) are not read and not
// written, in y, aux and the backward's dx.
//
// CUDA: one cuBLASLt GEMM per non-empty group (the Problem / route of
// MatmulPlan, so the fused bias / activation / aux epilogues and their
// fallbacks are LinearPlan's), in group order on the stream. Why a loop and
// not a grouped API: cuBLASLt (CUDA 13.1's cublasLt.h) has only strided and
// pointer-array batches, both one (m, n, k) for every matrix of the call;
// cuBLAS has cublasGemmGroupedBatchedEx (different m / n / k per group), but
// it has no epilogue (no bias, activation, aux or bias gradient), no choice
// of algorithm or workspace (so no cached, deterministic choice), takes the
// matrices as device arrays of pointers (a host-to-device upload per call)
// and lives in libcublas, which this library does not load. With MoE-sized
// groups (hundreds to thousands of rows, K and N in the thousands) each GEMM
// fills the GPU and the loop costs one launch per expert.
//
// Heuristics and graph capture. cuBLASLt's algorithm is chosen per distinct
// (rows, alignment) and cached. select() warms the capacity T and the even
// split ceil(T / G); run() outside capture queries (once) and caches any
// other row count it meets. Inside a CUDA graph capture, a group whose row
// count (or pointer alignment) was never seen is Unsupported: run the step
// once eagerly before capturing. Note that a captured graph replays the
// split it was captured with (the offsets are read on the host at capture
// time): graphs suit a fixed split (e.g. capacity-padded experts), not one
// that changes per step.
//
// Strides: x, y, aux, dy, dx are [T, F] matrices and weight / dw [.., N, K]:
// on CUDA each needs a unit stride along one of its last two axes (as
// MatmulPlan; Unsupported otherwise, naming it); the CPU reference takes any.
// Determinism: one cached algorithm per GEMM, no atomics between groups.
struct GroupedLinearDescriptor {
  DType dtype = DType::F32;     // f32, f64, f16, bf16
  int64_t groups = 1;           // G (experts), 1 .. 2^20
  int64_t in_features = 0;      // K
  int64_t out_features = 0;     // N
  int64_t capacity = 0;         // T: the rows of x, y, aux (offsets[G] <= T)
  bool shared_weight = false;   // weight [N, K], bias [N] for every group
  bool has_bias = true;
  GemmActivation activation = GemmActivation::None;
  bool save_aux = false;        // aux = the pre-activation (Gelu / GeluTanh)
};

struct GroupedLinearArgs {
  TensorRef x;        // [T, K]
  TensorRef offsets;  // host, i64, [G + 1]
  TensorRef weight;   // [G, N, K], or [N, K] (shared_weight)
  TensorRef bias;     // [G, N], or [N] (shared_weight) (has_bias)
  TensorMut y;        // [T, N]
  TensorMut aux;      // [T, N] (save_aux)
};

class BARACUDA_API GroupedLinearPlan : public PlanBase {
 public:
  GroupedLinearPlan() : PlanBase("GroupedLinearPlan") {}
  static Result<GroupedLinearPlan> select(const Stream& stream, const GroupedLinearDescriptor& desc,
                                          const PlanPreference& pref = {});
  Status can_implement(const GroupedLinearArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const GroupedLinearArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const GroupedLinearArgs& args) const;

  const GroupedLinearDescriptor& descriptor() const { return desc_; }
  Dims x_shape() const;        // [T, K]
  Dims y_shape() const;        // [T, N]
  Dims offsets_shape() const;  // [G + 1]
  Dims weight_shape() const;   // [G, N, K] or [N, K]
  Dims bias_shape() const;     // [G, N] or [N]

 private:
  GroupedLinearDescriptor desc_;
  bool tf32_ = false;
  bool fuse_ = true;   // fused epilogues (false: cuBLASLt refused them at select())
  size_t limit_ = 0;   // cuBLASLt's workspace limit
  friend struct gemm::GroupedPlanAccess;
};

// Backward of GroupedLinearPlan, per group as LinearBackwardPlan: with an
// activation g = dy * act'(aux) first (aux: the saved pre-activation for Gelu
// / GeluTanh, the forward's y for Relu), then
//   dx[rows of g]  = g[rows] . weight[g]            [T, K]
//   dw[g]          = g[rows]^T . x[rows]             [G, N, K]
//   db[g]          = sum of g[rows]                  [G, N]
// With shared_weight, dw [N, K] and db [N] are the sums over every group:
// computed as ONE GEMM over rows [0, offsets[G]) (dw = g^T . x over all
// tokens), so the sum's order does not depend on the split and no partial
// results are added up. An empty group's dw[g] and db[g] are zeros (every
// output is overwritten, never accumulated into); rows of dx at and past
// offsets[G] are not written. db is a GEMM of a ones vector with g (one
// deterministic cuBLASLt call per group) on CUDA. need_* as
// LinearBackwardDescriptor.
struct GroupedLinearBackwardDescriptor {
  GroupedLinearDescriptor forward;  // the forward's descriptor (its save_aux is not used here)
  bool need_dx = true, need_dw = true;
  bool need_db = true;  // only with forward.has_bias
};

struct GroupedLinearBackwardArgs {
  TensorRef dy;       // [T, N]
  TensorRef offsets;  // host, i64, [G + 1] (the forward's)
  TensorRef x;        // [T, K] (need_dw)
  TensorRef weight;   // [G, N, K] or [N, K] (need_dx)
  TensorRef aux;      // [T, N]: Gelu / GeluTanh the saved pre-activation, Relu the forward's y
  TensorMut dx;       // [T, K] (need_dx)
  TensorMut dw;       // weight's shape (need_dw)
  TensorMut db;       // bias's shape (need_db)
};

class BARACUDA_API GroupedLinearBackwardPlan : public PlanBase {
 public:
  GroupedLinearBackwardPlan() : PlanBase("GroupedLinearBackwardPlan") {}
  static Result<GroupedLinearBackwardPlan> select(const Stream& stream, const GroupedLinearBackwardDescriptor& desc,
                                                  const PlanPreference& pref = {});
  Status can_implement(const GroupedLinearBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const GroupedLinearBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const GroupedLinearBackwardArgs& args) const;

  const GroupedLinearBackwardDescriptor& descriptor() const { return desc_; }
  Dims x_shape() const;
  Dims y_shape() const;
  Dims offsets_shape() const;
  Dims weight_shape() const;
  Dims bias_shape() const;

 private:
  GroupedLinearBackwardDescriptor desc_;
  bool tf32_ = false;
  size_t g_bytes_ = 0;     // workspace: g = dy * act'(aux) [T, N] (with an activation)
  size_t ones_bytes_ = 0;  // workspace: a ones vector [T] (need_db)
  size_t limit_ = 0;       // cuBLASLt's workspace limit (after g and ones)
  friend struct gemm::GroupedPlanAccess;
};

}  // namespace baracuda

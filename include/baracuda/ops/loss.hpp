// Cross-entropy over logits [rows, classes]: CrossEntropyPlan (forward, and
// with `with_grad` the forward and the logits' gradient in one pass) and
// CrossEntropyBackwardPlan (dlogits from the forward's saved log-sum-exp).
// The semantics are torch.nn.functional.cross_entropy's, plus a z-loss term.
//
// Shapes. logits [rows, classes] (PyTorch's [N, C]; only 2-D: flatten any
// leading axes into rows yourself). Index targets: class ids [rows], i32 or
// i64. Probability targets: [rows, classes] in the logits' dtype. weight:
// [classes] in the logits' dtype. loss: [rows] for reduction None, a rank-0
// tensor for Mean / Sum, in loss_dtype. lse: [rows], f32 (f64 for f64
// logits), the per-row log-sum-exp (optional in the forward: leave it empty
// when not wanted; required by the backward). rows may be 0; classes must be
// >= 1 (PyTorch cannot run C = 0 either: no target index is in range).
//
// Per row i, with lse_i = log sum_c exp(x_ic), eps = label_smoothing, C =
// classes, w = weight (all ones without one):
//   Index targets t_i:
//     loss_i = (1 - eps) * w[t_i] * (lse_i - x_{i,t_i})
//              + (eps / C) * sum_c w[c] * (lse_i - x_ic)
//              + z_loss * w[t_i] * lse_i^2
//     rows whose target is ignore_index: loss 0, gradient 0 (lse still written).
//   Probability targets p_i (label smoothing mixes p' = p * (1 - eps) + eps / C):
//     loss_i = sum_c w[c] * p'_ic * (lse_i - x_ic) + z_loss * lse_i^2
//     (ignore_index must be negative, as PyTorch: it is not used.)
//   A term whose coefficient is exactly 0 contributes 0 even where x_ic is
//   -inf (masked): 0 * inf counts as 0 (PyTorch gives NaN for a masked logit
//   with probability target 0; a deliberate difference). A row of only -inf
//   (or with +inf / NaN) gives NaN, as PyTorch.
// Reduction:
//   None  loss[i] = loss_i
//   Sum   loss = sum_i loss_i
//   Mean  index targets: sum_i loss_i / sum_i w[t_i] over the rows not
//         ignored (without weights: their count) — PyTorch's weighted mean,
//         also for the smoothing term; z-loss is weighted by w[t_i] too, so
//         Mean stays a weighted mean. Every row ignored (or rows = 0) gives
//         0 / 0 = NaN, as PyTorch.
//         probability targets: sum_i loss_i / rows (NOT the weight sum:
//         PyTorch's rule); rows = 0 gives NaN.
// Gradient (with_grad, backward), g_i = dloss[i] (None), dloss (Sum) or
// dloss / divisor (Mean), softmax s_ic = exp(x_ic - lse_i), a_ic the
// coefficient of x_ic above ((eps / C) w[c] or w[c] p'_ic):
//   dlogits_ic = g_i * (s_ic * (sum_c a_ic + tw_i + 2 z_loss zw_i lse_i) - a_ic - tw_i [c == t_i])
// with tw_i = (1 - eps) w[t_i] (probability targets: 0) and zw_i = w[t_i] (1).
//
// Target ids out of [0, classes) that are not ignore_index: the CPU
// reference returns InvalidProblem naming the row; the CUDA kernels cannot
// check before launching and instead make that row's loss (hence a Mean /
// Sum) and its gradient row NaN, never reading out of bounds; the row counts
// 0 towards the Mean divisor, so the other rows' gradients stay finite.
//
// Tensors: any non-negative strides on the CPU; the CUDA kernels need the
// class axis of logits, dlogits and probability targets unit-stride
// (Unsupported otherwise; any row stride). dlogits may be the logits buffer
// itself (in place: same data pointer and strides; saves the [rows, classes]
// allocation); any other overlap is InvalidProblem.
//
// Precision. f16 / bf16 are read and computed in f32, f32 in f32, f64 in
// f64; loss and the Mean / Sum are accumulated in that precision (CPU
// reference: double) and rounded once to loss_dtype (F32 by default: the
// logits' dtype, PyTorch's choice, is allowed too). Deterministic: every sum
// (rows, the Mean divisor, split-row partials) is combined in a fixed order,
// no atomics; reruns are bit-identical.
//
// CUDA algorithms (sku().variant, chosen at select() for contiguous views;
// run() re-derives it from the actual views, see sku_for()):
//   "block[.vec16]"  one block per row, online (max, sum-exp) in one read of
//                    the row; with a gradient the row is staged in shared
//                    memory where it fits (about 200 KiB on sm_90), so the
//                    logits are read from memory once; longer rows are read
//                    a second time for the gradient
//   "split[.vec16]"  rows of >= 64K classes, fewer rows than SMs: each row
//                    is split across blocks, per-chunk partials go to the
//                    WORKSPACE and are merged in chunk order
// ".vec16": 16-byte loads and stores (aligned pointers and row strides, and
// classes a multiple of the vector). The workspace (workspace_size()) holds
// per-row losses and the Mean divisor, reduced in a fixed order by one block.
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda {

enum class LossReduction : uint8_t { None, Mean, Sum };
enum class CrossEntropyTarget : uint8_t {
  Index,  // class ids [rows], i32 or i64
  Probs,  // class probabilities [rows, classes], the logits' dtype
};

BARACUDA_API const char* loss_reduction_name(LossReduction r);  // "none", "mean", "sum"

struct CrossEntropyDescriptor {
  DType dtype = DType::F32;           // logits, weight, probability targets (and dlogits): f32, f64, f16, bf16
  int64_t rows = 0, classes = 0;      // logits [rows, classes]; rows >= 0, classes >= 1
  CrossEntropyTarget target = CrossEntropyTarget::Index;
  DType index_dtype = DType::I64;     // Index targets: I32 or I64
  int64_t ignore_index = -100;        // Index targets (Probs: must be negative, as PyTorch)
  double label_smoothing = 0.0;       // [0, 1]
  bool has_weight = false;            // per-class weight [classes]
  LossReduction reduction = LossReduction::Mean;
  double z_loss = 0.0;                // PaLM z-loss coefficient, finite and >= 0
  DType loss_dtype = DType::F32;      // loss (and dloss): F32 or the logits' dtype
  bool with_grad = false;             // also write dlogits from dloss, in the same pass
};

struct CrossEntropyArgs {
  TensorRef logits;   // [rows, classes], dtype
  TensorRef target;   // Index: [rows] index_dtype; Probs: [rows, classes] dtype
  TensorRef weight;   // has_weight: [classes], dtype
  TensorMut loss;     // None: [rows]; Mean / Sum: rank 0; loss_dtype
  TensorMut lse;      // optional: [rows], f32 (f64 for f64)
  TensorRef dloss;    // with_grad: the loss's shape and dtype
  TensorMut dlogits;  // with_grad: [rows, classes], dtype; may be logits itself (in place)
};

class BARACUDA_API CrossEntropyPlan : public PlanBase {
 public:
  CrossEntropyPlan() : PlanBase("CrossEntropyPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<CrossEntropyPlan> select(const Stream& stream, const CrossEntropyDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const CrossEntropyArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const CrossEntropyArgs& args) const;  // workspace: CUDA row losses / split partials
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const CrossEntropyArgs& args) const;  // see PlanBase

  const CrossEntropyDescriptor& descriptor() const { return desc_; }
  Dims loss_shape() const;   // [rows] (None) or [] (Mean / Sum)
  DType lse_dtype() const;   // f32, or f64 for f64

 private:
  CrossEntropyDescriptor desc_;
};

struct CrossEntropyBackwardDescriptor {
  CrossEntropyDescriptor forward;  // the forward's descriptor (with_grad must be false)
};

struct CrossEntropyBackwardArgs {
  TensorRef logits;   // [rows, classes]
  TensorRef target;   // as the forward's
  TensorRef weight;   // forward.has_weight: [classes]
  TensorRef lse;      // the forward's lse [rows] (required)
  TensorRef dloss;    // the forward loss's shape and dtype
  TensorMut dlogits;  // [rows, classes]; may be logits itself (in place)
};

class BARACUDA_API CrossEntropyBackwardPlan : public PlanBase {
 public:
  CrossEntropyBackwardPlan() : PlanBase("CrossEntropyBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<CrossEntropyBackwardPlan> select(const Stream& stream, const CrossEntropyBackwardDescriptor& desc,
                                                 const PlanPreference& pref = {});
  Status can_implement(const CrossEntropyBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const CrossEntropyBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const CrossEntropyBackwardArgs& args) const;

  const CrossEntropyBackwardDescriptor& descriptor() const { return desc_; }
  Dims loss_shape() const;
  DType lse_dtype() const;

 private:
  CrossEntropyBackwardDescriptor desc_;
};

// ---- Fused linear + cross-entropy ---------------------------------------------------------
// loss = cross_entropy(H . W^T + b, t) and its gradients dH, dW, db, computed
// in row chunks so the [N, V] logits never exist in full (LM heads: V up to
// 256K). Per chunk of rows: LinearPlan writes the chunk's logits into the
// workspace, the cross-entropy kernels turn them into dlogits in place (the
// CrossEntropyPlan with_grad formulas above), then LinearBackwardPlan writes
// the chunk's dH rows and adds its share to dW and db (accumulate, beta = 1;
// the first chunk overwrites). The Mean divisor is computed once over all N
// targets first; the Mean / Sum adds the per-row losses in row order at the
// end, as CrossEntropyPlan.
//
// Semantics: those of the unfused composition LinearPlan -> CrossEntropyPlan
// (with_grad, in place) -> LinearBackwardPlan, with these differences:
//   * dloss is an INPUT (device memory, read by the kernels; no host sync):
//     the gradient is formed while the chunk's logits exist. LM training
//     passes a scalar 1.0 (what loss.backward() seeds); reduction None needs
//     the whole dloss [N] up front. An autograd wrapper that learns the
//     upstream gradient later scales dH / dW / db by it.
//   * In f16 / bf16, dW and db are rounded to the dtype once per chunk (old +
//     this chunk's sum), so the chunking changes their bits (about
//     sqrt(chunks) ulp); f32 / f64 sums round per chunk too, far below
//     tolerance. A rerun of one plan is bit-identical.
//   * Probability targets are refused (an [N, V] input defeats the purpose);
//     logit soft-capping, separate weight / gradient dtypes and sharded V are
//     not offered.
// Options: ignore_index, label_smoothing, per-class weight, z_loss, the three
// reductions (PyTorch's weighted Mean), loss_dtype, the optional lse output.
// With every need_* false it computes the loss only (op ".forward").
//
// Tensors: H [N, D], W [V, D] (nn.Linear's layout), b [V], target [N], class
// weight [V], dH [N, D], dW [V, D], db [V]; any strides on the CPU; on CUDA
// H, W, dH, dW need LinearPlan's layout (a unit stride along one axis), the
// others any stride. Every tensor is disjoint from every other.
//
// Workspace (CUDA): the chunk buffer chunk_rows() x V in dtype, the
// cross-entropy scratch (row losses N x 8 bytes, divisor, split partials)
// and the largest inner plan's workspace (cuBLASLt's limit). chunk_rows:
// `chunk_rows` when set; else, with `workspace_limit` > 0, the largest
// balanced chunk (a multiple of 512 rows when at least 512 fit, of 128 when
// at least 128) whose
// workspace fits the limit (InvalidProblem when not even one row fits);
// else min(N, 2048). The CPU plan needs no workspace; its reference densifies
// H and W in double and keeps dW / db in double (a 64-row logits block at a
// time) and refuses (Unsupported) a problem whose host scratch would pass
// 2 GiB (views may broadcast, so the sizes need not be memory anyone holds).
struct FusedLinearCrossEntropyDescriptor {
  DType dtype = DType::BF16;       // H, W, b, class weight, dH, dW, db: f32, f64, f16, bf16
  int64_t rows = 0;                // N >= 0 (flatten H's leading axes)
  int64_t in_features = 0;         // D >= 0
  int64_t classes = 0;             // V >= 1
  bool has_bias = false;           // b [V]
  CrossEntropyTarget target = CrossEntropyTarget::Index;  // Probs: InvalidProblem (see above)
  DType index_dtype = DType::I64;  // target [N]: i32 / i64
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;    // [0, 1]
  bool has_weight = false;         // per-class weight [V]
  LossReduction reduction = LossReduction::Mean;
  double z_loss = 0.0;
  DType loss_dtype = DType::F32;   // loss / dloss: F32 or dtype
  bool need_dh = true, need_dw = true;
  bool need_db = true;             // only with has_bias
  size_t workspace_limit = 0;      // bytes the caller grants (CUDA); 0: default chunking
  int64_t chunk_rows = 0;          // > 0: exactly this chunk (tests, tuning); must fit a non-zero limit
};

struct FusedLinearCrossEntropyArgs {
  TensorRef hidden;        // H [N, D]
  TensorRef weight;        // W [V, D]
  TensorRef bias;          // [V] (has_bias)
  TensorRef target;        // [N] index_dtype
  TensorRef class_weight;  // [V] (has_weight)
  TensorRef dloss;         // loss shape, loss_dtype; required iff any need_*
  TensorMut loss;          // [N] (None) or rank 0 (Mean / Sum), loss_dtype
  TensorMut lse;           // optional [N], f32 (f64 for f64)
  TensorMut dhidden;       // [N, D] (need_dh), overwritten
  TensorMut dweight;       // [V, D] (need_dw), overwritten
  TensorMut dbias;         // [V] (need_db), overwritten
};

class BARACUDA_API FusedLinearCrossEntropyPlan : public PlanBase {
 public:
  FusedLinearCrossEntropyPlan() : PlanBase("FusedLinearCrossEntropyPlan") {}
  static Result<FusedLinearCrossEntropyPlan> select(const Stream& stream, const FusedLinearCrossEntropyDescriptor& desc,
                                                    const PlanPreference& pref = {});
  Status can_implement(const FusedLinearCrossEntropyArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const FusedLinearCrossEntropyArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const FusedLinearCrossEntropyArgs& args) const;

  const FusedLinearCrossEntropyDescriptor& descriptor() const { return desc_; }
  Dims loss_shape() const;        // [N] (None) or [] (Mean / Sum)
  DType lse_dtype() const;        // f32, or f64 for f64
  int64_t chunk_rows() const { return chunk_; }   // rows per chunk (CUDA; the CPU plan: N)
  int64_t chunks() const { return chunks_; }      // number of chunks
  size_t logits_bytes() const;    // N * V * dtype size: what the unfused logits would take, for reports

 private:
  FusedLinearCrossEntropyDescriptor desc_;
  int64_t chunk_ = 0, chunks_ = 0;
  LinearPlan fwd_full_, fwd_tail_;                        // logits of a full / the tail chunk
  LinearBackwardPlan bwd_first_, bwd_acc_, bwd_tail_;     // chunk 0 (overwrites), full and tail chunks (+=)
  size_t ce_offset_ = 0, inner_offset_ = 0;               // workspace parts after the chunk buffer
  int64_t split_rows_ = 0;                                // the largest chunk taking the split CE path (0: none)
  friend struct FusedLinearCrossEntropyAccess;
};

}  // namespace baracuda

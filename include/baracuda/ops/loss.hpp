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

}  // namespace baracuda

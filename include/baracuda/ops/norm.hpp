// Layer norm and RMS norm over the last k axes: NormPlan (forward, optionally
// fused with a residual add) and NormBackwardPlan (dx, dweight, dbias).
//
// Shapes. x has `shape` (rank >= 1); the last `normalized_dims` axes (1 <=
// k <= rank) form the normalized block of N elements (N >= 1), the leading
// axes the rows (R = their product; R = 1 when k = rank). weight and bias
// have the normalized shape (shape's last k extents); mean and rstd are
// one-dimensional [R] (row r = the leading coordinates in row-major order).
//
// Forward, per row (PyTorch semantics):
//   h      = x + residual      (residual = true; rounded to dtype and written,
//                               then normalized: the fused call gives exactly
//                               what the add followed by the norm would)
//   h      = x                 (residual = false)
//   LayerNorm: mean = sum(h) / N, var = sum((h - mean)^2) / N (the BIASED
//              variance, as torch.nn.functional.layer_norm),
//              rstd = 1 / sqrt(var + eps), x_hat = (h - mean) * rstd
//   RMSNorm:   rstd = 1 / sqrt(sum(h^2) / N + eps) (torch.nn.functional.rms_norm;
//              no mean), x_hat = h * rstd
//   y = x_hat * w' + b,  w' = w (has_weight), 1 + w (zero_centered_weight,
//       Gemma), 1 (no weight);  b = bias (has_bias, LayerNorm only), else 0.
// save_stats writes mean (LayerNorm only) and rstd, both in the stats dtype:
// f32, or f64 when dtype is f64. RMSNorm has no mean: giving one is refused.
//
// Backward (NormBackwardPlan), from the forward's input x (= h when the
// forward was fused) and its saved mean / rstd (required; a forward
// descriptor with save_stats = false is refused), with g = dy * w':
//   LayerNorm: dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
//   RMSNorm:   dx = rstd * (g - x_hat * mean(g * x_hat))
//   dx += dh_in                              (residual_grad: the gradient
//                                             reaching h through the residual
//                                             stream, as a pre-norm block needs)
//   dweight = sum over rows of dy * x_hat    (also with zero_centered_weight:
//                                             d(1 + w)/dw = 1)
//   dbias   = sum over rows of dy
// dweight is computed when need_dweight and the forward has a weight, dbias
// when need_dbias and it has a bias (the defaults ask for everything there
// is); giving a gradient tensor that is not computed is refused. dweight and
// dbias are reduced DETERMINISTICALLY: per-chunk column partials in the
// workspace (a fixed number of row chunks chosen at select() from the shape
// and the device), summed in chunk order by a second kernel; no atomics.
//
// Validation (InvalidProblem unless said): dtype f32 / f64 / f16 / bf16
// (else Unsupported); every tensor but mean / rstd has the dtype;
// normalized_dims in [1, rank]; N >= 1; eps finite and >= 0; has_bias with
// RMSNorm; zero_centered_weight without a weight; backward: residual_grad
// without need_dx, nothing to compute (no dx, no dweight, no dbias).
// Defaults: kind LayerNorm, has_weight = true, has_bias = false (so an
// RMSNorm descriptor is valid as it comes; set it for torch's default
// LayerNorm(bias=True)), eps = 1e-5 (torch's LayerNorm default), save_stats.
//
// Aliasing: y may be x itself and h may be residual itself (in place, same
// data pointer and strides); dx may be dy or dh_in itself. Any other overlap
// is InvalidProblem. Zero rows (R = 0) are a no-op: nothing is read or written.
//
// Strides. The CPU reference (Stream::cpu()) takes any non-negative strides.
// The CUDA kernels need, for x / residual / y / h / dy / dx / dh_in, the
// normalized block of each row to be one contiguous run (unit stride once
// extent-1 axes are dropped), and weight / bias contiguous; the rows may have
// any strides (leading axes are coalesced and decoded per row), and mean /
// rstd any stride. Another layout is Unsupported on CUDA, naming the tensor.
//
// Precision. f16 / bf16 are read, computed in f32 and rounded once; f32 in
// f32; f64 in f64. The CPU reference computes in double (the oracle).
// LayerNorm's variance is computed from the row's mean in a second pass (no
// E[x^2] - mean^2 cancellation) on every path.
//
// CUDA algorithms (sku().variant, chosen at select() for contiguous views;
// run() re-derives it from the actual views, see sku_for()):
//   "warp[.vec16]"   rows of up to 1024 elements: one warp per row, the row
//                    held in registers (x read once, y written once)
//   "block[.vec16]"  rows that fit the block's shared memory (about 200 KiB
//                    on sm_90; backward: x and dy together): one block per
//                    row, the row staged in shared memory (read once)
//   "long[.vec16]"   longer rows: one block per row re-reading the row from
//                    global memory (L2) for each pass (LayerNorm forward 3
//                    reads, RMSNorm 2; backward 2 of x and dy)
//   backward: the dx path's name, then "+colsum.fused" when the block path's
//   dx kernel also sums dweight / dbias (each thread owns the same columns in
//   every row of its block and keeps their partials in registers; f32 / f16 /
//   bf16 rows of at most 16 columns per thread), else "+colsum" (a separate
//   partials kernel reading dy and x again, before dx is written); "colsum"
//   alone without dx. Either way a final kernel sums the partials in chunk
//   order: deterministic, no atomics.
// ".vec16": 16-byte loads and stores (every row tensor's data pointer and row
// stride, weight and bias 16-byte aligned, N a multiple of the vector).
// In place (dx = dy) is safe on every path: each thread writes an element of
// dx after its own last read of it, and the separate partials kernel runs
// before dx is written.
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

enum class NormKind : uint8_t { LayerNorm, RMSNorm };

BARACUDA_API const char* norm_kind_name(NormKind k);  // "layer_norm", "rms_norm"

struct NormDescriptor {
  NormKind kind = NormKind::LayerNorm;
  DType dtype = DType::F32;       // x, residual, y, h, weight, bias (and the backward's dy, dx, dh_in, dweight, dbias)
  Dims shape;                     // x, residual, y, h
  int normalized_dims = 1;        // k: the last k axes are normalized
  bool has_weight = true;         // weight [shape's last k extents]
  bool has_bias = false;          // bias (LayerNorm only)
  double eps = 1e-5;              // finite, >= 0
  bool zero_centered_weight = false;  // y = x_hat * (1 + w) (Gemma); needs has_weight
  bool residual = false;          // h = x + residual; y = norm(h); both written
  bool save_stats = true;         // mean (LayerNorm) and rstd [rows], f32 (f64 for f64)
};

struct NormArgs {
  TensorRef x;         // shape, dtype
  TensorRef residual;  // residual = true: shape, dtype
  TensorRef weight;    // has_weight: normalized shape
  TensorRef bias;      // has_bias: normalized shape
  TensorMut y;         // shape; may be x itself
  TensorMut h;         // residual = true: shape; may be residual itself
  TensorMut mean;      // save_stats and LayerNorm: [rows], stats dtype
  TensorMut rstd;      // save_stats: [rows], stats dtype
};

class BARACUDA_API NormPlan : public PlanBase {
 public:
  NormPlan() : PlanBase("NormPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<NormPlan> select(const Stream& stream, const NormDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const NormArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const NormArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const NormArgs& args) const;  // see PlanBase

  const NormDescriptor& descriptor() const { return desc_; }
  Dims weight_shape() const;  // the normalized shape (weight, bias)
  Dims stats_shape() const;   // [rows] (mean, rstd)
  DType stats_dtype() const;  // f32, or f64 for f64

 private:
  NormDescriptor desc_;
};

struct NormBackwardDescriptor {
  NormDescriptor forward;     // the forward's descriptor (save_stats must be true)
  bool need_dx = true;
  bool need_dweight = true;   // computed when the forward has a weight
  bool need_dbias = true;     // computed when the forward has a bias
  bool residual_grad = false; // dx += dh_in (needs need_dx)
};

struct NormBackwardArgs {
  TensorRef dy;       // shape, dtype
  TensorRef x;        // the normalized input (h when the forward was fused)
  TensorRef weight;   // has_weight and need_dx (dx needs w'; dweight / dbias do not)
  TensorRef mean;     // LayerNorm: the saved mean [rows]
  TensorRef rstd;     // the saved rstd [rows]
  TensorRef dh_in;    // residual_grad: shape, dtype
  TensorMut dx;       // need_dx: shape; may be dy or dh_in itself
  TensorMut dweight;  // need_dweight and has_weight: normalized shape
  TensorMut dbias;    // need_dbias and has_bias: normalized shape
};

class BARACUDA_API NormBackwardPlan : public PlanBase {
 public:
  NormBackwardPlan() : PlanBase("NormBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<NormBackwardPlan> select(const Stream& stream, const NormBackwardDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const NormBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const NormBackwardArgs& args) const;  // workspace: the column partials
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const NormBackwardArgs& args) const;

  const NormBackwardDescriptor& descriptor() const { return desc_; }
  Dims weight_shape() const;
  Dims stats_shape() const;
  DType stats_dtype() const;
  bool computes_dweight() const { return desc_.need_dweight && desc_.forward.has_weight; }
  bool computes_dbias() const { return desc_.need_dbias && desc_.forward.has_bias; }

 private:
  NormBackwardDescriptor desc_;
};

}  // namespace baracuda

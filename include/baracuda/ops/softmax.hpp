// Softmax and log-softmax along one axis: SoftmaxPlan (forward) and
// SoftmaxBackwardPlan (the gradient from the forward's OUTPUT, as PyTorch's
// _softmax_backward_data / _log_softmax_backward_data).
//
// Forward. For every row r (all indices but `axis` fixed), with v = scale * x:
//   softmax:      y_j = exp(v_j - m) / sum_k exp(v_k - m),   m = max_k v_k
//   log_softmax:  y_j = v_j - m - log(sum_k exp(v_k - m))     (log = true)
// scale (a temperature 1/T) must be finite and != 0 (InvalidProblem otherwise);
// a negative scale is allowed. axis counts from the end when negative
// (-1 = the last axis) and must lie in [-rank, rank); a rank-0 tensor is one
// row of one element (axis 0 or -1, as PyTorch).
//
// Special values (each row on its own; the CPU reference and the CUDA kernels
// agree):
//   - a row of only -inf (all masked, after scaling): softmax gives 0
//     everywhere and log_softmax -inf everywhere. PyTorch gives NaN for
//     softmax there; 0 is our deliberate choice (an all-masked attention or
//     vocabulary row contributes nothing instead of poisoning the result).
//   - a NaN anywhere in a row makes the whole output row NaN.
//   - a +inf in a row (scale * x overflowing included) makes the whole output
//     row NaN, as PyTorch (inf - inf in the shifted exponent).
//   - -inf elements of a row with a finite maximum give 0 (log: -inf).
// Backward (y = the forward's output, dy = the gradient of y):
//   softmax:      dx = scale * y * (dy - sum_k dy_k * y_k)
//   log_softmax:  dx = scale * (dy - exp(y) * sum_k dy_k)
// plain formulas, no special cases (y = 0 rows give dx = 0 for softmax).
//
// Tensors: x, y, dy, dx all have `shape` and `dtype` and any non-negative
// strides (outputs must not write an element twice). y may be x itself and dx
// may be dy itself (in place, same data pointer and strides); any other
// overlap is InvalidProblem. Zero-size tensors (including a zero-length axis)
// are a no-op: nothing is read or written.
//
// Precision. f16 / bf16 are read, computed in f32 and rounded once (their
// output exp is the hardware exp2, flushing results below 2^-126 to 0: far
// below what an f16 holds, bf16 subnormals only); f32 in f32;
// f64 in f64. The CPU reference (Stream::cpu()) accumulates in double.
// Deterministic: every reduction is combined in a fixed order, no atomics,
// reruns are bit-identical.
//
// CUDA algorithms (sku().variant, chosen at select() for contiguous views;
// run() re-derives it from the actual views, see sku_for()):
//   "warp[.vec16]"        rows of up to 32 * 32 elements (2 KiB .. 8 KiB):
//                         one warp per row, the row held in registers
//                         (f32, f16, bf16; f64 rows this short take "block")
//   "block[.vec16]"       rows that fit the block's shared memory (about
//                         200 KiB on sm_90, 160 KiB on sm_80, 96 KiB on
//                         sm_86 / sm_89, 48 KiB before; softmax backward: y
//                         and dy together, log_softmax backward: dy only):
//                         one block per row, the row staged in shared
//                         memory, so x is read once (f64: 1024 threads per
//                         block, also for the rows "warp" takes in the others)
//   "split[.vec16]"       longer rows (e.g. 262,144 or 1M elements), or rows of
//                         >= 64K elements too few to fill the GPU: each row is
//                         split across blocks; pass 1 writes per-chunk partial
//                         (max, sum-exp) / sums to the WORKSPACE, pass 2
//                         merges them in chunk order and writes the output
//                         (x is read twice; the workspace is rows x chunks x 16
//                         + 16 bytes, any alignment, reported by workspace_size())
//   "generic"             any other layout (the axis not unit-stride, or the
//                         other dims not one row stride, e.g. softmax over a
//                         leading axis): one thread per row with strided loops
// ".vec16": 16-byte loads and stores (every view's data pointer and row stride
// 16-byte aligned); otherwise element loads.
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

struct SoftmaxDescriptor {
  DType dtype = DType::F32;  // every tensor: f32, f64, f16, bf16
  Dims shape;                // x, y (and dy, dx)
  int axis = -1;             // the reduced axis; negative counts from the end
  bool log = false;          // log_softmax instead of softmax
  double scale = 1.0;        // softmax(scale * x); finite and != 0
};

struct SoftmaxArgs {
  TensorRef x;  // shape, dtype
  TensorMut y;  // shape, dtype; may be x itself (in place)
};

class BARACUDA_API SoftmaxPlan : public PlanBase {
 public:
  SoftmaxPlan() : PlanBase("SoftmaxPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<SoftmaxPlan> select(const Stream& stream, const SoftmaxDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const SoftmaxArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const SoftmaxArgs& args) const;  // workspace: the "split" path
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const SoftmaxArgs& args) const;  // see PlanBase

  const SoftmaxDescriptor& descriptor() const { return desc_; }  // axis resolved to [0, rank) (0 for rank 0)

 private:
  SoftmaxDescriptor desc_;
};

struct SoftmaxBackwardDescriptor {
  DType dtype = DType::F32;
  Dims shape;
  int axis = -1;
  bool log = false;    // the forward was log_softmax
  double scale = 1.0;  // the forward's scale; finite and != 0
};

struct SoftmaxBackwardArgs {
  TensorRef y;   // the forward's output
  TensorRef dy;  // gradient of y
  TensorMut dx;  // gradient of x; may be dy itself (in place)
};

class BARACUDA_API SoftmaxBackwardPlan : public PlanBase {
 public:
  SoftmaxBackwardPlan() : PlanBase("SoftmaxBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<SoftmaxBackwardPlan> select(const Stream& stream, const SoftmaxBackwardDescriptor& desc,
                                            const PlanPreference& pref = {});
  Status can_implement(const SoftmaxBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& args) const;

  const SoftmaxBackwardDescriptor& descriptor() const { return desc_; }  // axis resolved

 private:
  SoftmaxBackwardDescriptor desc_;
};

}  // namespace baracuda

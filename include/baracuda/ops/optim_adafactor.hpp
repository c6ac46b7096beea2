// ---- Adafactor: the factored second-moment optimizer (torch.optim.Adafactor) -------------
//
// AdafactorPlan updates a LIST of parameters in place, one step of
// torch.optim.Adafactor (torch >= 2.5, its _single_tensor_adafactor path),
// formula by formula. For every parameter p (gradient g, step t >= 1):
//
//   g        = maximize ? -grad : grad
//   w        = t ^ beta2_decay                   (torch's one_minus_beta2_t; double, then f32)
//   rho      = min(lr, 1 / sqrt(t))              (double)
//   alpha    = max(eps2, ||p||_2 / sqrt(numel(p))) * rho     (double; ||p|| BEFORE weight decay)
//   p        = p * f32(1 - lr * weight_decay)    (always applied: a factor 1 changes no bit)
//   rank >= 2 (factored over the LAST TWO dims; every leading dim is a batch of
//   independent [R, C] matrices, as torch's keepdim reductions and batched @):
//     row_var[.., r, 0] = lerp(row_var, f32(sqrt(sum_c g^2))^2 / C, w)
//     col_var[.., 0, c] = lerp(col_var, f32(sqrt(sum_r g^2))^2 / R, w)
//     v[.., r, c]  = row_var[.., r] * col_var[.., c] / max(mean_r(row_var[.., r]), eps1)
//                    (the mean per batch matrix, over the UPDATED row_var)
//   rank 0 or 1:
//     variance     = lerp(variance, g * g, w);  v = variance
//   u        = g * (1 / sqrt(max(v, f32(eps1 * eps1))))
//   denom    = max(1, ||u||_2 / (sqrt(numel(p)) * d))          (double)
//   p        = fma(f32(-alpha / denom), u, p)
//   lerp(a, b, w) is torch's: fma(w, b - a, a) when |w| < 0.5, else fma(w - 1, b - a, b).
//   The norms' squares are sqrt-then-square in f32 as torch's vector_norm(..).square_().
//
// Hyper-parameters (descriptor; torch's defaults and checks): lr = 1e-2 (>= 0),
// beta2_decay = -0.8 (<= 0), eps1 = None -> torch.finfo(dtype).eps of the
// PARAMETER dtype (f32 2^-23, bf16 2^-7, f16 2^-10; >= 0 when given), eps2 = 1e-3
// (>= 0), d = 1.0 (>= 1), weight_decay = 0 (>= 0), maximize. Unlike torch, every
// value must also be finite (torch accepts an infinite lr).
//
// Step and learning rate.
//   device_scalars = false: Args::step is the step number t of THIS update (>= 1:
//     torch's state["step"] after its increment), lr is the descriptor's.
//   device_scalars = true (capture-safe: a replayed CUDA graph sees new values):
//     Args::step_tensor (F32 [], torch's float32 state["step"]: the steps done so
//     far) is incremented by run() on the stream first and t is its new value;
//     Args::lr_tensor (F32 [], read as is: not validated) replaces descriptor.lr
//     (which is then unused, as is the host step, which must stay 0). One step
//     for the whole list (torch keeps one per parameter; they are always equal).
//     On a CPU stream both are host tensors.
//
// Differences from torch, all documented choices:
//   * State is f32 for every parameter dtype (torch keeps row_var / col_var /
//     variance in the parameter's dtype). A bf16 / f16 step is the f32 step
//     above on the upcast p and g, rounded once to the dtype when p is stored
//     (torch rounds every intermediate to bf16 / f16). eps1's default still
//     follows the parameter dtype, as torch's.
//   * Reductions (row / column sums, the two norms) accumulate in f32 on CUDA in
//     a fixed order (deterministic, no atomics), in double on the CPU reference;
//     torch's orders are its own. Everything elementwise (lerp, the estimate,
//     u, the update) is the same f32 arithmetic on both backends: the CPU and
//     CUDA results agree to the reductions' rounding (tests: rel 1e-5 in f32).
//   * An empty parameter (numel 0) is skipped (torch divides 0 by 0 and raises).
//   * The CPU reference was checked against torch 2.11's torch.optim.Adafactor
//     (tests/optim/cpu_adafactor.cpp, MatchesTorchAdafactor: 2e-6).
//
// Tensors. The lists params (dtype, shapes[i]), grads (dtype, shapes[i]),
// row_vars, col_vars, variances (F32) have one entry per parameter; any
// non-negative strides on the CPU, dense row-major (contiguous) views on CUDA
// (Unsupported otherwise: optimizer state is always dense). For rank >= 2: row_vars[i] has shape
// shapes[i] with the last dim 1 ([.., R, 1]), col_vars[i] shapes[i] with the
// second-to-last dim 1 ([.., 1, C]) (torch's shapes: a torch state loads as
// is), variances[i] is not given; for rank 0 / 1: variances[i] has shapes[i]
// and row_vars[i] / col_vars[i] are not given (an empty list is accepted when
// no parameter needs that state). Written tensors (params, the states,
// step_tensor) overlap nothing else; grads may overlap each other.
// out_of_place (a functional step, e.g. to keep the previous parameters): the
// results go to params_out / row_vars_out / col_vars_out / variances_out (and
// step_out), the inputs are only read; an output may be exactly its own input
// (in place for that tensor) and overlaps nothing else. Without it those lists
// must be empty and step_out not given.
// dtypes: params / grads F32, BF16, F16 (the same); state, step, lr F32.
//
// CUDA (sku().variant "factored"): the host loops over the list inside run()
// (no host sync, no allocation, capture-safe); per parameter:
//   factored [B, R, C]: (1) row partial sums of g^2 per 32-vector column slice
//   and (2) column partial sums per chunk of 64 rows, both in ONE pass over g
//   (a block per 64-row x 32-vector tile; 16-byte loads when g is 16-byte
//   aligned and C a multiple of 16 / dtype size); (3) ||p||^2 partial sums per block of
//   4096 elements; (4) one block per batch matrix: row_var / col_var lerps
//   (row slices and column chunks summed in order), the mean of row_var (a
//   fixed block tree);
//   (5) ||u||^2 partial sums per block of 4096 (u recomputed, never stored);
//   (6) the update: each block sums the ||p||^2 and ||u||^2 partials in the
//   same fixed order, then p = fma(s, u, p * wd); a parameter of more than
//   1024 blocks (4 Mi elements) has one extra single-block kernel do that sum
//   once (the same code: the same bits) into the workspace, which the update
//   blocks read (else every block would read every partial). A parameter of at most 4096 elements
//   (one block) runs (5) / the vector pass and (6) as one single-block kernel
//   (the same bits: the two-kernel path's totals pass through one partial);
//   rank-0 / rank-1 parameters of that size go in batches of up to 64 per
//   launch (a block each; tensor table in the kernel parameters).
//   rank 0 / 1: (1) variance lerp with ||p||^2 and ||u||^2 partials in one
//   pass; (2) the update as (6).
//   device_scalars adds one single-thread kernel per run() (step += 1, the step
//   coefficients into the workspace). workspace_size(): 512 bytes (alignment
//   pad, the device scalars) + the largest parameter's scratch (row sums,
//   row slice partials, column partials, means, the two partial arrays, the
//   scale), reused by each parameter
//   in stream order. Out of place, the state of an empty parameter that has
//   elements ([R, 0]'s row_var) is copied (cudaMemcpyAsync).
//
// Backward: none (an optimizer step).

#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct AdafactorDescriptor {
  DType dtype = DType::F32;     // params and grads: f32, bf16, f16
  std::vector<Dims> shapes;     // one per parameter (rank 0..8)
  double lr = 1e-2;             // >= 0; unused with device_scalars
  double beta2_decay = -0.8;    // <= 0
  std::optional<double> eps1;   // >= 0; none: torch.finfo(dtype).eps
  double eps2 = 1e-3;           // >= 0
  double d = 1.0;               // >= 1: the update clipping threshold
  double weight_decay = 0.0;    // >= 0 (decoupled: p *= 1 - lr * weight_decay)
  bool maximize = false;
  bool device_scalars = false;  // step / lr from Args::step_tensor / lr_tensor
  bool out_of_place = false;    // results into the *_out lists (the inputs are only read)
};

struct AdafactorArgs {
  std::vector<TensorMut> params;     // shapes[i], dtype: updated in place
  std::vector<TensorRef> grads;      // shapes[i], dtype
  std::vector<TensorMut> row_vars;   // F32 [.., R, 1] for rank >= 2, else not given
  std::vector<TensorMut> col_vars;   // F32 [.., 1, C] for rank >= 2, else not given
  std::vector<TensorMut> variances;  // F32 shapes[i] for rank < 2, else not given
  int64_t step = 0;                  // host: this update's step number t >= 1 (0 with device_scalars)
  TensorMut step_tensor;             // device_scalars: F32 [], steps done; run() adds 1 first
  TensorRef lr_tensor;               // device_scalars: F32 [], the learning rate
  // out_of_place: where the results go (same lengths, shapes and dtypes as the
  // inputs above, which are then only read; each may be exactly its own input).
  std::vector<TensorMut> params_out, row_vars_out, col_vars_out, variances_out;
  TensorMut step_out;                // out_of_place with device_scalars: step_tensor + 1
};

class BARACUDA_API AdafactorPlan : public PlanBase {
 public:
  AdafactorPlan() : PlanBase("AdafactorPlan") {}
  static Result<AdafactorPlan> select(const Stream& stream, const AdafactorDescriptor& desc,
                                      const PlanPreference& pref = {});
  Status can_implement(const AdafactorArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const AdafactorArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const AdafactorArgs& args) const;

  const AdafactorDescriptor& descriptor() const { return desc_; }
  // eps1 in effect (the descriptor's, or finfo(dtype).eps).
  double eps1() const;
  // The state shapes of parameter i (torch's): row_var [.., R, 1], col_var
  // [.., 1, C] for rank >= 2; variance = shapes[i] for rank < 2.
  bool factored(size_t i) const { return desc_.shapes[i].rank >= 2; }
  Dims row_var_shape(size_t i) const;
  Dims col_var_shape(size_t i) const;

 private:
  AdafactorDescriptor desc_;
};

}  // namespace baracuda

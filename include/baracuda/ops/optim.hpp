// ---- optimizers and gradient utilities over tensor lists (optim) ----------------------------
//
// Every plan here works on a LIST of tensors of different shapes (a model's
// parameters), in one CUDA launch where the list fits the kernel-parameter
// table (below). The descriptor holds the list's shapes (no pointers); the
// Args hold one std::vector of views per role (params, grads, exp_avg, ...),
// each exactly as long as the descriptor's shape list.
//
// Tensor-list rules (every plan; errors name the list and the position):
//   * each list has descriptor.shapes.size() views; view k has shape
//     shapes[k] (any rank 0..8) and the role's dtype;
//   * every view is DENSE CONTIGUOUS (row-major strides; an error otherwise:
//     the kernels walk the memory linearly) and on the plan's device;
//   * no element is written twice: a tensor that is written overlaps no other
//     tensor of any list (read-only lists may overlap each other);
//   * a zero-size tensor is skipped; an empty list (or all tensors empty) is a
//     no-op, except the norm outputs, which are written (0).
//
// Scalars are f32 tensors of shape [] where they live on the device (lr,
// step, grad_scale, found_inf, inv_scale, norms): a captured CUDA graph then
// replays with new values. run() never synchronizes and never allocates
// device memory: capture-safe.
//
// ---- AdamPlan: torch.optim.AdamW (decoupled_weight_decay = true) / torch.optim.Adam -------
// Per element, f32 math (every operation rounded to f32, no fused
// multiply-add: the CPU reference and the CUDA kernel give the same bits):
//   g = grad                         (widened to f32)
//   g = g / grad_scale               if has_grad_scale (torch's fused grad_scale)
//   g = -g                           if maximize
//   weight_decay != 0:  AdamW: p = p * f32(1 - lr * wd)      (decoupled, torch's param.mul_(1 - lr*wd))
//                       Adam:  g = g + f32(wd) * p           (L2, torch's grad.add(param, alpha=wd))
//   m = lerp(m, g, w), w = f32(1 - beta1): w < 0.5 ? m + w * (g - m) : g - (g - m) * (1 - w)
//                                    (torch's for-loop / foreach exp_avg.lerp_(grad, 1 - beta1) and its
//                                    two-branch lerp; torch's fused kernel writes beta1 * m + (1 - beta1) * g:
//                                    the same value to f32 rounding)
//   v = beta2 * v + ((1 - beta2) * g) * g
//   amsgrad: vmax = maximum(vmax, v) (NaN-propagating as torch.maximum); v' = vmax, else v' = v
//   denom = sqrt(v') / bc2_sqrt + eps
//   p = p - (step_size * m) / denom
// with the per-step scalars computed in f64 and rounded once to f32:
//   bc1 = 1 - beta1^step, bc2 = 1 - beta2^step (beta^step by exponentiation
//   by squaring in f64, identical on host and device), step_size = lr / bc1,
//   bc2_sqrt = sqrt(bc2).
// step: the step number AFTER torch's increment (1 at the first step).
// torch's fused kernel rounds the same quantities in a slightly different
// order (a*b+c, FMAs): results agree with torch to f32 rounding, not bits.
// torch's fused kernel also writes the unscaled gradient back into grads
// when grad_scale is given; this plan treats grads as read-only (it never
// writes them).
//
// dtypes: params F32, BF16 or F16; grads the params' dtype; exp_avg,
// exp_avg_sq, max_exp_avg_sq F32. master_weights (BF16 / F16 params only):
// an F32 master list is the parameter the update reads and writes; the
// params list is only written: params = round(master) in the same pass
// (round to nearest even, or stochastic rounding below). Without master
// weights a BF16 / F16 param is widened, updated in f32 and rounded back.
//
// stochastic_rounding (BF16 params only, with or without master): the f32
// result x is rounded to BF16 by adding a random 16-bit integer r to its bits
// and truncating: bits(x) + r, low 16 bits cleared (unbiased: E[bf16] = x).
// Non-finite x rounds to nearest. r is the low 16 bits of Philox word
//   philox_block(seed.seed, seed.offset, e / 4).w[e % 4]
// (core/philox.hpp's layout), e = the element's GLOBAL index in the list: the
// elements of tensor 0, then tensor 1, ... (zero-size tensors count 0).
// Deterministic: the same (seed, offset) gives the same bits on CPU and CUDA;
// the caller advances seed.offset by one per step.
//
// Scalars: host values (Args::lr, Args::step), or, with device_scalars, an F32
// [] `lr_tensor` the kernel reads and an F32 [] `step_tensor` (torch's
// capturable float step) that run() itself increments by one on the stream
// before the update reads it (so a graph replay advances it; an f32 counts
// exactly up to 2^24 steps). The incremented value becomes the integer step
// the same way on the CPU and the GPU: NaN and values <= 0 give 0, values >=
// 2^62 give 2^62 (a plain cast is undefined there; contract finding O3).
// found_inf (has_found_inf, F32 []): nonzero -> the whole step is skipped:
// params, master and every state untouched, and step_tensor NOT incremented
// (torch's fused path increments the step and subtracts found_inf again: the
// same net effect). With host scalars the caller, who cannot see found_inf
// without a sync, keeps its own step count: use device_scalars with found_inf.
//
// ---- SgdPlan: torch.optim.SGD --------------------------------------------------------------
//   g = grad / grad_scale (optional); g = -g if maximize; g = g + f32(wd) * p if wd != 0
//   momentum != 0:  buf = g                                 if !buffers_initialized (torch's first step)
//                   buf = momentum * buf + (1 - dampening) * g  otherwise
//                   g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
// (momentum, 1 - dampening, lr, wd rounded to f32 once). The momentum_buffer
// list (F32) is used iff momentum != 0. buffers_initialized is an Args value
// (the first run passes false, later runs true). nesterov needs momentum > 0
// and dampening == 0 (torch's rule).
//
// ---- LionPlan: Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms") ---
// torch has no Lion; the formula is the paper's:
//   g = grad / grad_scale (optional); g = -g if maximize
//   c = beta1 * m + (1 - beta1) * g
//   p = p * f32(1 - lr * wd)          (decoupled weight decay)
//   p = p - lr * sign(c)              (sign(0) = 0, sign(NaN) = NaN)
//   m = beta2 * m + (1 - beta2) * g
// State exp_avg (F32). Defaults beta1 = 0.9, beta2 = 0.99.
//
// SGD and Lion take the same dtype / master weights / stochastic rounding /
// device scalars (lr; no step) / grad_scale / found_inf options as Adam.
//
// ---- gradient utilities ------------------------------------------------------------------
// GlobalNormPlan: the norm of all tensors together, as one vector:
//   L2:  sqrt(sum over every element of x^2)    Inf: max |x| (NaN if any NaN)
//   written to `out` (F32 [], on the plan's device). Tensors F32, BF16 or F16
//   (one dtype for the list). Accumulation: every square is summed in f64; a
//   fixed two-stage reduction: 1024 blocks (a constant, whatever the GPU)
//   each sum a fixed set of chunks in a fixed order into a partial at a fixed
//   workspace slot; one block then reduces the partials in slot order; the
//   f64 result's sqrt is rounded to f32. Run-to-run identical bits; the CPU
//   reference sums in f64 in element order (equal within f64 rounding, so the
//   f32 results agree to about 1 ulp).
// ClipGradNormPlan: torch.nn.utils.clip_grad_norm_(grads, max_norm, norm_type):
//   total = GlobalNorm(grads) (written to total_norm),
//   coef = min(f32(max_norm) / (total + 1e-6f), 1) (f32), grads *= coef in
//   place (each element widened to f32, multiplied, rounded back) — all on
//   the device, no host sync. torch's error_if_nonfinite needs the host to see
//   the norm; instead, has_found_inf sets found_inf (F32 []) to 1 when the
//   norm is not finite (never to 0: as torch's AMP flag, the caller clears it).
//   A non-finite norm gives coef NaN (or 0 for an infinite norm), as torch
//   with error_if_nonfinite = false.
// NonFiniteCheckUnscalePlan: torch._amp_foreach_non_finite_check_and_unscale_:
//   grads *= inv_scale (F32 [] on the device) in place; found_inf (F32 []) is
//   set to 1 if any element (before scaling) is inf or NaN, else left as is.
// MultiTensorScalePlan: tensors *= scale (a host double rounded to f32, or
//   with device_scalar an F32 [] tensor), in place.
// MultiTensorZeroPlan: tensors = 0.
// Utilities: tensors F32, BF16 or F16 (one dtype per list; math in f32).
//
// CUDA algorithm (sku().variant "multi_tensor" / "multi_tensor.split<N>"):
// each list's tensors are cut into chunks of 8192 elements; a table of
// (pointers of every role, numel, first chunk, first global element,
// 16-byte aligned?) for up to ~400 tensors is passed IN THE KERNEL PARAMETERS
// (up to 32 KiB, CUDA 12.1+ on sm_70+; built on the host's stack in run()),
// a grid of at most 8 blocks per SM walks the chunks (block b: chunks b,
// b + grid, ...), and each thread handles 16-byte vectors (4 f32 / 8 bf16
// elements per step; F32 lists beside BF16 ones load two vectors) where all of
// a tensor's pointers are 16-byte aligned, elements one by one otherwise and
// in the tail. A longer list is split into several launches ("split<N>").
// The norm plans use a fixed 1024-block grid (the deterministic partial
// slots) and a workspace of 8 bytes per partial.
#pragma once
#include <cstdint>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/philox.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// Options every optimizer shares.
struct OptimizerCommon {
  std::vector<Dims> shapes;         // one per parameter tensor
  DType param_dtype = DType::F32;   // params and grads: F32, BF16, F16
  bool master_weights = false;      // F32 master list (BF16 / F16 params)
  bool stochastic_rounding = false; // BF16 params: stochastic rounding of the written params
  bool maximize = false;
  bool device_scalars = false;      // lr (and Adam's step) as device F32 [] tensors
  bool has_grad_scale = false;      // grads are divided by grad_scale (F32 [])
  bool has_found_inf = false;       // found_inf (F32 []) nonzero skips the step
  double weight_decay = 0.0;
};

struct AdamDescriptor : OptimizerCommon {
  bool decoupled_weight_decay = true;  // true: AdamW; false: Adam (L2)
  bool amsgrad = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  AdamDescriptor() { weight_decay = 0.01; }  // torch.optim.AdamW's default (Adam's is 0: set it)
};

struct AdamArgs {
  std::vector<TensorMut> params;          // param_dtype
  std::vector<TensorRef> grads;           // param_dtype
  std::vector<TensorMut> exp_avg;         // F32
  std::vector<TensorMut> exp_avg_sq;      // F32
  std::vector<TensorMut> max_exp_avg_sq;  // F32, amsgrad only (else empty)
  std::vector<TensorMut> master;          // F32, master_weights only (else empty)
  double lr = 1e-3;                       // host scalars (device_scalars false)
  int64_t step = 1;                       //   step >= 1, after the increment
  TensorRef lr_tensor;                    // device_scalars: F32 []
  TensorMut step_tensor;                  // device_scalars: F32 [], incremented by run()
  TensorRef grad_scale;                   // has_grad_scale: F32 []
  TensorRef found_inf;                    // has_found_inf: F32 []
  RandomSeed seed;                        // stochastic_rounding
};

class BARACUDA_API AdamPlan : public PlanBase {
 public:
  AdamPlan() : PlanBase("AdamPlan") {}
  static Result<AdamPlan> select(const Stream& stream, const AdamDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const AdamArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const AdamArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const AdamArgs& args) const;
  const AdamDescriptor& descriptor() const { return desc_; }

 private:
  AdamDescriptor desc_;
};

struct SgdDescriptor : OptimizerCommon {
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false;
};

struct SgdArgs {
  std::vector<TensorMut> params;           // param_dtype
  std::vector<TensorRef> grads;            // param_dtype
  std::vector<TensorMut> momentum_buffer;  // F32, momentum != 0 only
  std::vector<TensorMut> master;           // F32, master_weights only
  bool buffers_initialized = false;        // false: buf = g (torch's first step)
  double lr = 1e-3;
  TensorRef lr_tensor;                     // device_scalars: F32 []
  TensorRef grad_scale;
  TensorRef found_inf;
  RandomSeed seed;
};

class BARACUDA_API SgdPlan : public PlanBase {
 public:
  SgdPlan() : PlanBase("SgdPlan") {}
  static Result<SgdPlan> select(const Stream& stream, const SgdDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const SgdArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const SgdArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const SgdArgs& args) const;
  const SgdDescriptor& descriptor() const { return desc_; }

 private:
  SgdDescriptor desc_;
};

struct LionDescriptor : OptimizerCommon {
  double beta1 = 0.9, beta2 = 0.99;
};

struct LionArgs {
  std::vector<TensorMut> params;
  std::vector<TensorRef> grads;
  std::vector<TensorMut> exp_avg;  // F32
  std::vector<TensorMut> master;   // F32, master_weights only
  double lr = 1e-4;
  TensorRef lr_tensor;             // device_scalars: F32 []
  TensorRef grad_scale;
  TensorRef found_inf;
  RandomSeed seed;
};

class BARACUDA_API LionPlan : public PlanBase {
 public:
  LionPlan() : PlanBase("LionPlan") {}
  static Result<LionPlan> select(const Stream& stream, const LionDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const LionArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const LionArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const LionArgs& args) const;
  const LionDescriptor& descriptor() const { return desc_; }

 private:
  LionDescriptor desc_;
};

// ---- gradient utilities ----
enum class NormType { L2, Inf };

struct TensorListDescriptor {
  std::vector<Dims> shapes;
  DType dtype = DType::F32;  // F32, BF16, F16
};

struct GlobalNormDescriptor : TensorListDescriptor {
  NormType norm_type = NormType::L2;
};

struct GlobalNormArgs {
  std::vector<TensorRef> tensors;
  TensorMut out;  // F32 []
};

class BARACUDA_API GlobalNormPlan : public PlanBase {
 public:
  GlobalNormPlan() : PlanBase("GlobalNormPlan") {}
  static Result<GlobalNormPlan> select(const Stream& stream, const GlobalNormDescriptor& desc,
                                       const PlanPreference& pref = {});
  Status can_implement(const GlobalNormArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const GlobalNormArgs& args) const;  // CUDA workspace: the partials
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const GlobalNormArgs& args) const;
  const GlobalNormDescriptor& descriptor() const { return desc_; }

 private:
  GlobalNormDescriptor desc_;
};

struct ClipGradNormDescriptor : TensorListDescriptor {
  NormType norm_type = NormType::L2;
  double max_norm = 1.0;       // > 0
  bool has_found_inf = false;  // set found_inf to 1 on a non-finite norm
};

struct ClipGradNormArgs {
  std::vector<TensorMut> grads;  // scaled in place
  TensorMut total_norm;          // F32 []
  TensorMut found_inf;           // has_found_inf: F32 []
};

class BARACUDA_API ClipGradNormPlan : public PlanBase {
 public:
  ClipGradNormPlan() : PlanBase("ClipGradNormPlan") {}
  static Result<ClipGradNormPlan> select(const Stream& stream, const ClipGradNormDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const ClipGradNormArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ClipGradNormArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ClipGradNormArgs& args) const;
  const ClipGradNormDescriptor& descriptor() const { return desc_; }

 private:
  ClipGradNormDescriptor desc_;
};

struct NonFiniteCheckUnscaleArgs {
  std::vector<TensorMut> grads;  // scaled in place
  TensorRef inv_scale;           // F32 []
  TensorMut found_inf;           // F32 []: set to 1 on a non-finite element
};

class BARACUDA_API NonFiniteCheckUnscalePlan : public PlanBase {
 public:
  NonFiniteCheckUnscalePlan() : PlanBase("NonFiniteCheckUnscalePlan") {}
  static Result<NonFiniteCheckUnscalePlan> select(const Stream& stream, const TensorListDescriptor& desc,
                                                  const PlanPreference& pref = {});
  Status can_implement(const NonFiniteCheckUnscaleArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const NonFiniteCheckUnscaleArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const NonFiniteCheckUnscaleArgs& args) const;
  const TensorListDescriptor& descriptor() const { return desc_; }

 private:
  TensorListDescriptor desc_;
};

struct MultiTensorScaleDescriptor : TensorListDescriptor {
  bool device_scalar = false;  // scale from an F32 [] tensor
};

struct MultiTensorScaleArgs {
  std::vector<TensorMut> tensors;  // in place
  double scale = 1.0;              // host scalar (rounded to f32)
  TensorRef scale_tensor;          // device_scalar: F32 []
};

class BARACUDA_API MultiTensorScalePlan : public PlanBase {
 public:
  MultiTensorScalePlan() : PlanBase("MultiTensorScalePlan") {}
  static Result<MultiTensorScalePlan> select(const Stream& stream, const MultiTensorScaleDescriptor& desc,
                                             const PlanPreference& pref = {});
  Status can_implement(const MultiTensorScaleArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MultiTensorScaleArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MultiTensorScaleArgs& args) const;
  const MultiTensorScaleDescriptor& descriptor() const { return desc_; }

 private:
  MultiTensorScaleDescriptor desc_;
};

struct MultiTensorZeroArgs {
  std::vector<TensorMut> tensors;
};

class BARACUDA_API MultiTensorZeroPlan : public PlanBase {
 public:
  MultiTensorZeroPlan() : PlanBase("MultiTensorZeroPlan") {}
  static Result<MultiTensorZeroPlan> select(const Stream& stream, const TensorListDescriptor& desc,
                                            const PlanPreference& pref = {});
  Status can_implement(const MultiTensorZeroArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MultiTensorZeroArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MultiTensorZeroArgs& args) const;
  const TensorListDescriptor& descriptor() const { return desc_; }

 private:
  TensorListDescriptor desc_;
};

}  // namespace baracuda

// Rotary position embeddings (RoPE): RopePlan (forward) and RopeBackwardPlan.
//
// Layout. q is a LOGICAL [B, H, S, D] view and k a logical [B, Hk, S, D] view
// (Hk may differ from H: grouped-query attention). Memory order is free: a
// [B, S, H, D] tensor is passed as the permuted-stride view
//   shape [B, H, S, D], strides [S*H*D, D, H*D, 1]
// and the q / k slices of a fused [B, S, 3, H, D] qkv projection are passed as
// views into that buffer (they may be rotated in place there).
//
// Rotation. Dimensions [0, R) of every row (R = rotary_dim, even, 2 <= R <= D,
// default D) form R/2 pairs; dimensions [R, D) pass through unchanged.
//   RopePairs::Interleaved  pair i = (2i, 2i+1)        (GPT-J, RoFormer, Meta's
//                                                     complex-number llama)
//   RopePairs::HalfSplit    pair i = (i, i + R/2)      (GPT-NeoX, HF rotate_half)
// For pair i of a row at position pos:
//   inv_freq_i = theta^(-2i / R)        angle = pos * inv_freq_i
//   forward:   (a, b) -> (a cos - b sin,  a sin + b cos)
//   backward:  the transpose, i.e. rotation by -angle applied to dy.
// Positions: RopePositions::None -> pos = s (the sequence index);
//   PerSequence -> positions[s] (shape [S]); PerBatch -> positions[b, s]
//   (shape [B, S]); dtype i32 or i64 (position_dtype). Any value is allowed.
// Cos/sin cache (use_cache): caller-supplied cos and sin tensors [P, R/2]
//   (P = cache_len) hold cos(angle) / sin(angle) per (position, i); row
//   `pos` is used. Their dtype is cache_dtype(): f32 for f32/f16/bf16 ops
//   (so a 16-bit op does not lose the table's precision), f64 for f64.
//   Positions outside [0, P) are CLAMPED to [0, P-1] by every backend (the
//   CUDA kernel never reads out of bounds, and the CPU reference clamps the
//   same way, so both agree); theta is not used with a cache.
//
// Precision. f16 / bf16 / f32: the rotation is computed in f32. Without a
// cache the angle pos * inv_freq_i is computed in DOUBLE (inv_freq_i =
// pow(theta, -2i/R) in double, evaluated on the host for i < 256 so the GPU
// uses the CPU reference's exact values), reduced modulo 2*pi in double (two-constant
// Cody-Waite with FMA, exact enough for any |angle| < 2^50), rounded to f32
// in [-pi, pi] and passed to the accurate sincosf: |cos/sin error| < 3e-7 for
// any position, where float(pos) * float(inv_freq) would be off by ~1e-4 at
// positions of a few thousand. f64: angle, sincos and rotation in f64.
// The CPU reference computes everything in double. Deterministic, no atomics.
//
// Aliasing. q_out may BE q (same data pointer and strides: in place), likewise
// k_out / k; any other overlap between an output and any input or the other
// output is InvalidProblem. Overlap is checked exactly for views with the
// same strides (the q / k slices of one qkv buffer do not overlap), by address
// range otherwise.
//
// Backends: CpuReference on Stream::cpu(), Bespoke CUDA on CUDA streams. No
// workspace. The CUDA kernel handles one group of tokens (b, s) per block:
// cos/sin of each (token, pair) is computed once into shared memory and reused
// by every head of q and k (both tensors in one launch); 16-byte vector loads
// and stores when every view has unit stride along D, 16-byte aligned rows and
// D, R (Interleaved) or R/2 (HalfSplit) multiples of 16 bytes of elements
// (variant "*.vec16"), else a generic strided path (variant "*.strided");
// R/2 > 2048 (1024 in f64) computes cos/sin per pair ("*.strided.direct").
// sku().variant reports the path a contiguous, aligned problem takes; run()
// falls back to the strided path when a given view does not allow vectors.
// When the output is the input (in place), pass-through dims are not touched.
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

enum class RopePairs : uint8_t { Interleaved /* (2i, 2i+1) */, HalfSplit /* (i, i + R/2), GPT-NeoX / HF */ };
enum class RopePositions : uint8_t { None /* pos = s */, PerSequence /* positions [S] */, PerBatch /* positions [B, S] */ };
BARACUDA_API const char* rope_pairs_name(RopePairs p);
BARACUDA_API const char* rope_positions_name(RopePositions p);

struct BARACUDA_API RopeDescriptor {
  DType dtype = DType::F32;  // q, k, outputs (and the gradients): f32, f64, f16, bf16
  int64_t batch = 1;         // B
  int64_t heads = 1;         // H  (q heads)
  int64_t kv_heads = 1;      // Hk (k heads; ignored when has_k is false)
  int64_t seq_len = 0;       // S
  int64_t head_dim = 0;      // D
  int64_t rotary_dim = -1;   // R: even, 2 <= R <= D; -1 = head_dim
  bool has_k = true;         // rotate k too (in the same launch)
  RopePairs pairs = RopePairs::HalfSplit;
  double theta = 10000.0;    // base; finite and > 0
  RopePositions positions = RopePositions::None;
  DType position_dtype = DType::I32;  // i32 or i64 (when positions != None)
  bool use_cache = false;    // cos / sin come from the caller's [P, R/2] tables
  int64_t cache_len = 0;     // P (>= 1 when use_cache)

  // The descriptor of these views: dtype, batch, heads, seq_len and head_dim
  // from q [B, H, S, D]; kv_heads from k [B, Hk, S, D], or has_k = false when
  // k is left empty (default-constructed). Every other field is `options'`
  // (its shape fields and has_k are ignored). InvalidProblem naming
  // "RopeDescriptor::from" when the views disagree (rank, dtype, B, S, D).
  static Result<RopeDescriptor> from(const TensorRef& q, const TensorRef& k, const RopeDescriptor& options);
  static Result<RopeDescriptor> from(const TensorRef& q, const TensorRef& k);  // default options
};

// Forward. Optional tensors are left default-constructed (data == nullptr)
// when the descriptor does not use them; giving one it does not use is an error.
struct RopeArgs {
  TensorRef q;          // [B, H, S, D]
  TensorRef k;          // [B, Hk, S, D]            (has_k)
  TensorRef positions;  // [S] or [B, S], i32/i64   (positions != None)
  TensorRef cos, sin;   // [P, R/2], cache_dtype()  (use_cache)
  TensorMut q_out;      // [B, H, S, D]; may be q itself (in place)
  TensorMut k_out;      // [B, Hk, S, D]; may be k itself (has_k)
};

class BARACUDA_API RopePlan : public PlanBase {
 public:
  RopePlan() : PlanBase("RopePlan") {}  // empty until assigned from select() (PlanBase)
  static Result<RopePlan> select(const Stream& stream, const RopeDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RopeArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const RopeArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const RopeArgs& args) const;  // see PlanBase

  const RopeDescriptor& descriptor() const { return desc_; }  // rotary_dim resolved
  Dims q_shape() const;          // [B, H, S, D]
  Dims k_shape() const;          // [B, Hk, S, D]
  Dims positions_shape() const;  // [S], [B, S], or rank 0 for None
  Dims cache_shape() const;      // [P, R/2]
  DType cache_dtype() const;     // f32, or f64 for an f64 op

 private:
  RopeDescriptor desc_;
};

// Backward: dq = R(-angle) dy_q, dk = R(-angle) dy_k (pass-through dims copy
// dy). Same positions / cache as the forward; dq may be dy_q itself.
struct RopeBackwardArgs {
  TensorRef dy_q;       // gradient of q_out, [B, H, S, D]
  TensorRef dy_k;       // gradient of k_out, [B, Hk, S, D]  (has_k)
  TensorRef positions;  // as the forward
  TensorRef cos, sin;   // as the forward
  TensorMut dq;         // [B, H, S, D]; may be dy_q itself
  TensorMut dk;         // [B, Hk, S, D]; may be dy_k itself (has_k)
};

class BARACUDA_API RopeBackwardPlan : public PlanBase {
 public:
  RopeBackwardPlan() : PlanBase("RopeBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<RopeBackwardPlan> select(const Stream& stream, const RopeDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const RopeBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const RopeBackwardArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const RopeBackwardArgs& args) const;  // see PlanBase

  const RopeDescriptor& descriptor() const { return desc_; }
  Dims q_shape() const;
  Dims k_shape() const;
  Dims positions_shape() const;
  Dims cache_shape() const;
  DType cache_dtype() const;

 private:
  RopeDescriptor desc_;
};

}  // namespace baracuda

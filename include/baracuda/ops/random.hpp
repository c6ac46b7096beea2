// ---- random numbers and dropout: identical bits on the CPU and on CUDA -------------------
//
// RandomPlan fills `out` with one distribution (torch.rand / uniform_,
// randn / normal_, nn.init.trunc_normal_, bernoulli, randint); DropoutPlan and
// DropoutBackwardPlan are nn.functional.dropout in training mode. Every plan
// draws from Philox-4x32-10 (core/philox.hpp) keyed by the Args' RandomSeed
// {seed, offset}: the CPU reference and the CUDA kernels produce the SAME bits
// for the same (seed, offset, descriptor), whatever out's strides (the CPU run
// of a GPU draw reproduces it exactly). torch's generators differ between its
// CPU and CUDA backends and from ours: the distributions match torch's, not
// the numbers.
//
// Stream layout (fixed; tests/random/cpu_random.cpp pins known answers).
//   Element i of out, i its row-major logical position (whatever out's
//   strides), uses Philox block i / K of (seed, offset) (counter = (block lo,
//   block hi, offset lo, offset hi), key = seed) and slot j = i % K of it:
//     K = 4, slot j = word j: uniform and truncated normal f32 / f16 / bf16,
//       bernoulli (all dtypes), randint with high - low <= 2^32, dropout
//       (block i / 4, word i % 4);
//     K = 4, Box-Muller (normal f32 / f16 / bf16): slots 2q and 2q + 1 are
//       the cos and sin results of the pair of words (2q, 2q + 1);
//     K = 2, slot j = words (2j, 2j + 1) as (low, high) 32 bits: uniform and
//       truncated normal f64, randint with high - low > 2^32;
//     K = 2, Box-Muller f64: slots 0 and 1 are the cos and sin results of
//       u1 = words (0, 1), u2 = words (2, 3).
//   Uniforms: u = (w >> 8) 2^-24 in [0, 1) from one word; (w >> 8 + 1) 2^-24
//   in (0, 1] for Box-Muller's log; 53-bit f64 uniforms from two words
//   (philox.hpp's uniform_* functions).
//
// Offsets: each run() consumes exactly one offset. A caller advances
//   RandomSeed::offset by one per run (distinct offsets are disjoint
//   streams). Descriptor flag device_offset: Args' `offset` (I64, shape [1],
//   on the plan's device) holds an offset o; the run draws with
//   (seed, seed.offset + o) (uint64 wrap) and then adds 1 to it, on the
//   stream (a one-thread kernel after the fill: capture-safe, so a captured
//   CUDA graph draws new numbers at every replay); on a CPU stream in host
//   memory. The tensor is also read and written when out is empty (one offset
//   per run). Without the flag the offset tensor must be absent.
//
// Distributions (RandomDescriptor::distribution), computed in f32 for
// f32 / f16 / bf16 outputs (rounded once to the dtype, nearest even), in f64
// for f64, every operation through exact:: (src/core/exact_math.hpp; f64:
// src/ops/random/transform.hpp; the f32 normal: src/ops/random/exact_fast.hpp,
// explicit fused multiply-adds, which round once on both backends) so both
// backends round identically:
//   Uniform(low, high): v = low + (high - low) u, [low, high). (high - low) is
//     computed in f64 and rounded to f32 for the f32 path. A value that rounds
//     to high in the output dtype (bf16 / f16 rounding, or f32 / f64 at the
//     top of the range) is replaced by low: torch's CUDA rule (the result
//     never equals high; low becomes a little more likely). low <= high,
//     both finite (low == high gives low everywhere).
//   Range rule (all float parameters): low, high, high - low, mean, std,
//     std sqrt(2), a, b must lie within the output dtype's finite range
//     (f16 65504, bf16 / f32 about 3.4e38, f64 DBL_MAX): InvalidProblem
//     otherwise (torch also refuses out-of-range bounds).
//   Normal(mean, std): Box-Muller, z = sqrt(-2 log u1) (cos, sin)(2 pi u2),
//     v = mean + std z. f32 / f16 / bf16: v = fma(std r, cos, mean) and
//     fma(std r, sin, mean), r = sqrt(-2 log u1), log and sincos of
//     exact_fast.hpp (FMA polynomials, no division, the angle reduced in
//     integers on the word; within 2 ulp). CHANGED 2026-11-25 (issue 14's
//     speed work): the f32 / f16 / bf16 normal stream's last bits differ from
//     the earlier unfused exact_math version (same words, same layout, same
//     distribution); nothing was released with the old bits. f64 outputs use
//     real f64 log / sincos (53-bit uniforms), unchanged. std >= 0 and
//     finite, mean finite.
//   TruncatedNormal(mean, std, a, b): torch.nn.init.trunc_normal_'s method:
//     l = Phi((a - mean) / std), h = Phi((b - mean) / std) (f64 on the host,
//     at select()), x = (2l - 1) + (2h - 2l) u, v = mean + std sqrt(2)
//     erfinv(x), clamped to [a, b]. erfinv in f32: Giles' polynomials (about
//     4e-7 relative); in f64 (53-bit uniforms): Giles' start and four Newton
//     steps on an exact f64 erf / erfc (within 3e-14 relative). x can round
//     to -1 or 1 only when a bound lies more than ~5 std from the mean:
//     erfinv then gives -inf / inf (f64) or about -+9.3 (f32), and the clamp
//     applies. std > 0, a < b, all finite.
//   Bernoulli(p): out = 1 where u < p, else 0 (u: 24-bit, for every dtype).
//     p a host scalar (descriptor.p, in [0, 1]: InvalidProblem otherwise, on
//     both backends, as torch's CPU), or with p_tensor a tensor p (Args::p,
//     any float dtype, out's shape, any strides: broadcast views included),
//     compared as u < p in f64. The tensor's values are not checked (a GPU
//     check would need a sync): p <= 0 or NaN gives 0, p >= 1 gives 1.
//   RandInt(int_low, int_high): integers in [low, high) (torch.randint),
//     r = high - low. r <= 2^32: low + floor(w r / 2^32) from one word
//     (Lemire's multiply-shift without the rejection step: rejection-free, so
//     the layout stays fixed; a value's probability is off by at most
//     r / 2^32 relative, none for r a power of two); r > 2^32: two words
//     x (64 bits), low + floor(x r / 2^64) (bias <= r / 2^64). low < high;
//     I32: both within int32 (high - 1 <= 2^31 - 1); float dtypes: |low| and
//     |high| at most 2^digits (f16 2^11, bf16 2^8, f32 2^24, f64 2^53: every
//     integer exact; the int64 value is rounded to float then to the dtype).
// dtypes: out F32, F64, F16, BF16 (RandInt also I32, I64). Anything else is
//   Unsupported. Args::p is used only by Bernoulli with p_tensor.
//
// DropoutPlan (training mode): keep_i = u_i >= p with u_i the 24-bit uniform
//   of word i % 4 of block i / 4 (the K = 4 layout above), out = x * scale
//   where kept, 0 where dropped (also for non-finite x: torch's fused kernel
//   also writes x * 0 = NaN there; we write 0), scale = 1 / (1 - p) computed
//   in f64 and rounded to f32 (f32 / f16 / bf16: out = round(float(x) * scale))
//   or kept in f64 (f64). p in [0, 1]: p == 0 gives out = x (every element
//   kept, scale 1), p == 1 gives out = 0 (torch). x any float dtype, any
//   strides; out may be x itself (in place). save_mask: Args::mask (U8,
//   shape [ceil(n / 8)], contiguous or not) receives 1 bit per element, little
//   endian: bit j of byte b is element 8b + j (1 = kept); the last byte's
//   unused bits are 0. device_offset: as RandomPlan (the forward increments
//   the tensor after use).
// DropoutBackwardPlan: dx = dy * scale where kept, 0 elsewhere, with keep
//   regenerated from (seed, offset) (use_mask = false) or read from the saved
//   mask (use_mask = true); both give the same bits. device_offset: Args'
//   offset (I64 [1]) is the SAME tensor the forward incremented; the backward
//   reads it and draws with seed.offset + o - 1, the forward's offset, and does
//   not modify it. So a captured forward + backward pair (backward after the
//   forward on the stream, no other draw from that tensor between them) stays
//   consistent at every replay. Without the flag, pass the forward's offset in
//   Args::seed. dx may be dy itself.
//
// Errors (InvalidProblem / Unsupported, messages start with the plan name):
//   dtype outside the lists above; invalid shape; parameters as listed; p
//   outside [0, 1] or NaN (dropout, bernoulli scalar); p_tensor with another
//   distribution or a non-float p_dtype; the offset tensor given without
//   device_offset or missing with it; the mask given without save_mask /
//   use_mask, or missing with it.
//
// CUDA algorithms (sku().variant):
//   fill "vec16": a grid-stride loop over chunks of max(16 / dtype size, K)
//     elements: a thread computes the chunk's Philox block(s), transforms them
//     and writes 16-byte vectors when out is contiguous and 16-byte aligned;
//     other views (and a partial last chunk) go element by element through
//     out's strides ("strided" in sku_for).
//   dropout "vec16": chunks of 8 elements (two Philox blocks, one mask byte)
//     in tiles of 256 U chunks (U = 4 for f16 / bf16, 2 for f32, 1 for f64),
//     a block per tile in a grid-stride loop: a thread takes U chunks 256
//     apart, issues all their 16-byte loads of x (or mask bytes) first, then
//     runs its 2U independent Philox blocks, then stores (x and out contiguous
//     and 16-byte aligned, whole tiles); the last tile chunk by chunk, other
//     views element by element through the strides; the backward with
//     use_mask reads one mask byte per chunk and computes no Philox.
//   Both: 256-thread blocks, grid = one wave at most (the kernel's resident
//     blocks per SM, from the occupancy query made once per kernel and
//     process, times the SM count); dropout spreads its tiles evenly over the
//     fewest blocks that take ceil(tiles / wave) each.
//   No workspace; no host synchronization; capture-safe.
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/philox.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class RandomDistribution : int { Uniform, Normal, TruncatedNormal, Bernoulli, RandInt };
BARACUDA_API const char* random_distribution_name(RandomDistribution d);

struct RandomDescriptor {
  RandomDistribution distribution = RandomDistribution::Uniform;
  DType dtype = DType::F32;   // out: F32, F64, F16, BF16 (RandInt also I32, I64)
  Dims shape;                 // out's shape, rank 0..8
  double low = 0, high = 1;   // Uniform: [low, high)
  double mean = 0, std = 1;   // Normal, TruncatedNormal
  double a = -2, b = 2;       // TruncatedNormal: absolute bounds (torch's trunc_normal_ defaults)
  double p = 0.5;             // Bernoulli with p_tensor false: in [0, 1]
  bool p_tensor = false;      // Bernoulli: p from Args::p (shape `shape`)
  DType p_dtype = DType::F32; //   its dtype: F32, F64, F16, BF16
  int64_t int_low = 0, int_high = 2;  // RandInt: [int_low, int_high)
  bool device_offset = false;         // Args::offset holds (and receives) the offset
};

struct RandomArgs {
  RandomSeed seed;   // key and offset (host values)
  TensorRef p;       // Bernoulli with p_tensor only
  TensorMut out;     // shape, dtype; any strides (no element twice)
  TensorMut offset;  // device_offset only: I64 [1] on the plan's device; read, then incremented
};

class BARACUDA_API RandomPlan : public PlanBase {
 public:
  RandomPlan() : PlanBase("RandomPlan") {}
  static Result<RandomPlan> select(const Stream& stream, const RandomDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const RandomArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const RandomArgs& args) const;  // no workspace
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const RandomArgs& args) const;

  const RandomDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.shape; }

 private:
  RandomDescriptor desc_;
};

struct DropoutDescriptor {
  DType dtype = DType::F32;  // x, out: F32, F64, F16, BF16
  Dims shape;                // rank 0..8
  double p = 0.5;            // drop probability in [0, 1]
  bool save_mask = false;    // write Args::mask (U8 [ceil(n / 8)])
  bool device_offset = false;
};

struct DropoutArgs {
  RandomSeed seed;
  TensorRef x;
  TensorMut out;     // may be x itself
  TensorMut mask;    // save_mask only
  TensorMut offset;  // device_offset only: I64 [1]; read, then incremented
};

class BARACUDA_API DropoutPlan : public PlanBase {
 public:
  DropoutPlan() : PlanBase("DropoutPlan") {}
  static Result<DropoutPlan> select(const Stream& stream, const DropoutDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const DropoutArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const DropoutArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const DropoutArgs& args) const;

  const DropoutDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.shape; }
  Dims mask_shape() const;  // [ceil(numel / 8)]

 private:
  DropoutDescriptor desc_;
};

struct DropoutBackwardDescriptor {
  DType dtype = DType::F32;
  Dims shape;
  double p = 0.5;            // the forward's p
  bool use_mask = false;     // read keep from Args::mask instead of regenerating it
  bool device_offset = false;  // Args::offset: the forward's tensor (after its increment)
};

struct DropoutBackwardArgs {
  RandomSeed seed;    // the forward's seed (and offset, without device_offset)
  TensorRef dy;
  TensorRef mask;     // use_mask only: U8 [ceil(n / 8)]
  TensorRef offset;   // device_offset only: I64 [1]; the forward used its value - 1
  TensorMut dx;       // may be dy itself
};

class BARACUDA_API DropoutBackwardPlan : public PlanBase {
 public:
  DropoutBackwardPlan() : PlanBase("DropoutBackwardPlan") {}
  static Result<DropoutBackwardPlan> select(const Stream& stream, const DropoutBackwardDescriptor& desc,
                                            const PlanPreference& pref = {});
  Status can_implement(const DropoutBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const DropoutBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const DropoutBackwardArgs& args) const;

  const DropoutBackwardDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.shape; }
  Dims mask_shape() const;

 private:
  DropoutBackwardDescriptor desc_;
};

}  // namespace baracuda

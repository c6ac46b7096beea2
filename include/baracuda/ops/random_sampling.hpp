// ---- randperm / multinomial: sampling from counter-based random numbers -------------------
//
// Both plans draw from baracuda's Philox-4x32-10 stream (core/philox.hpp):
// a draw is (seed, offset); block b of the draw is philox_block(seed, offset, b)
// (four 32-bit words). The CPU reference and the CUDA kernels compute the same
// words with the same integer / IEEE-exact operations (src/core/exact_math.hpp),
// so for the same (seed, offset, descriptor) the CPU and the GPU produce the
// SAME output, bit for bit: a CPU run reproduces a GPU run.
//
// RandpermPlan: out = torch.randperm(n): a uniformly random permutation of
//   0 .. n-1 in out [n].
//   Stream layout: element i gets the 64-bit key
//     key_i = words 0 (low half) and 1 (high half) of block i,
//   and out is the stable sort of (key_i, i) by key: out[p] = the i of rank p
//   (equal keys: the lower i first). Every permutation is equally likely up to
//   the (2^-64 per pair) chance of equal keys.
//   dtype: I64 (torch's default), I32, F64, F32, F16, BF16 (the values as
//   numbers); n must not exceed the largest count of consecutive integers the
//   dtype holds exactly (torch's rule): I32 2^31, F16 2^11, BF16 2^8, F32
//   2^24, F64 2^53 (InvalidProblem). out may have any stride.
//   CUDA: n < 2^31 (Unsupported otherwise).
//
// MultinomialPlan: out = torch.multinomial(probs, num_samples, replacement).
//   probs [C] or [R, C] (F32, F64, F16, BF16; any non-negative strides):
//   non-negative weights per row, they need not sum to 1. out [num_samples]
//   or [R, num_samples] (I64 as torch, or I32), any strides: category indices.
//   with replacement: per row, the cumulative sums cdf of the weights in f64 in
//     a fixed blocked order (chunks of K = max(1, ceil(C / 1024)) summed left
//     to right, chunk offsets summed left to right, cdf[j] = offset + partial:
//     src/ops/random/sampling_math.hpp), total = cdf[C-1]. Sample s of row r
//     reads block r * num_samples + s, words 0 (low) and 1 (high) ->
//     u = uniform_f64 in [0, 1), and is the first j with cdf[j] > u * total
//     (exact::mul). A category of weight zero is never chosen.
//   without replacement (num_samples <= C): the exponential race. Category j
//     of row r reads block r * C + j, word 0 -> u = uniform_open0_f32 in
//     (0, 1], E_j = 0 - exact::log(u) (an f32 Exp(1) variate), key_j =
//     min(E_j / w_j, DBL_MAX) in f64 (the clamp only touches subnormal f64
//     weights); w_j = 0 -> +inf. The samples are the num_samples smallest
//     keys in increasing key order (equal keys: the lower j first). This is
//     distributed as sequential sampling without replacement (the j's in the
//     order drawn), up to the f32 resolution of E (24-bit uniforms: E takes
//     2^24 values; E = 0 with probability 2^-24).
//   Semantics beyond torch: num_samples = 0 is allowed (nothing to write;
//   torch refuses it), I32 output, C above torch's 2^24 limit.
//
// Errors (message starts with the plan's name):
//   select(): probs rank not 1 or 2, probs dtype not F32/F64/F16/BF16, out
//     dtype not I32/I64 (Unsupported), num_samples < 0, num_samples > C
//     without replacement, C = 0 with num_samples > 0 (InvalidProblem).
//   Invalid rows, found by run() from the data: a negative, infinite or NaN
//   weight; with replacement a zero (or overflowing, f64) sum; without
//   replacement fewer than num_samples positive weights (torch's errors).
//     CPU:  run() returns InvalidProblem naming the first bad row, before
//           writing anything.
//     CUDA: never reads or writes out of bounds; every sample of a bad row is
//           written as -1; the lowest bad row is recorded in the workspace's
//           error word and check_probs(stream, ws) reports it (it synchronizes
//           the stream: not while capturing). The next run resets the word.
//
// Offsets. Args carry `RandomSeed seed` (host values). With the descriptor's
// device_offset = true, Args' `offset` (I64 [1], on the plan's device) holds
// the offset instead of seed.offset: run() reads it and adds 1 to it, on the
// stream (a one-thread kernel after the kernels that read it: capture-safe, so
// a replayed CUDA graph draws new numbers every replay); on the CPU in host
// memory. Each run consumes exactly one offset, also for an empty out. With
// device_offset = false, offset must be absent and seed.offset is used.
//
// CUDA algorithms (sku().variant); every variant returns the values above:
//   randperm "radix_sort": one kernel writes the keys' high 32 bits and 32-bit
//     indices, CUB DeviceRadixSort::SortPairs sorts on the top min(32,
//     ceil(log2 n) + 8 rounded up to 8) of those bits (at most 4 radix passes
//     instead of 8), and the kernel writing out in the dtype orders each run
//     of equal sorted bits by (64-bit key, index), the keys recomputed from
//     Philox: the stable sort of the 64-bit keys. workspace_size() = 256 (alignment) + high
//     keys and indices (double-buffered) + CUB's temporary storage (sized at
//     select()).
//   multinomial "cdf_scan" (with replacement, R * M <= 2^24, M = the number of
//     scan chunks): a thread per (row, chunk) sums the chunk (when K > 1), a
//     warp per row runs the chunk-offset chain (every lane the same left-to-
//     right adds) and stores each chunk's end in the workspace, then a thread
//     per (row, sample) binary-searches the chunk ends and walks the chunk.
//     workspace_size() = 256 + the error word + R row flags + R * M doubles.
//   multinomial "cdf_search" (with replacement, larger R * M): one block per
//     row computes the chunk totals and offsets in shared memory as above, then
//     each thread draws its samples: binary search over the chunk ends, then a
//     walk of the chunk. workspace_size() = 256 + the error word + row flags.
//   multinomial "race_topk" (without replacement, num_samples <= 256): a block
//     makes the keys of a tile of 4096 categories and selects the num_samples
//     smallest (key, j) in order in shared memory (bitonic top-k: runs of
//     kk = next_pow2(num_samples) sorted, then halved by keeping the smaller
//     of each run pair and re-sorting, until one run is left); further launches merge
//     each row's survivors in tiles of 4096 the same way until a row fits one
//     tile, whose first num_samples are written (a bad weight flags its row by
//     an integer atomicOr; a row whose num_samples-th key is +inf has too few
//     positive weights). workspace_size() = 256 + the error word + row flags +
//     2 * R * ceil(C / 4096) * num_samples survivors (none when C <= 4096).
//   multinomial "segmented_sort" (without replacement, num_samples > 256): one
//     thread per (row, category) computes the key, CUB DeviceSegmentedRadixSort
//     sorts (key, j) per row (stable; DeviceRadixSort when R = 1), one kernel
//     writes the first num_samples of each row. workspace_size() = 256 + the
//     error word + keys and indices (double-buffered), row offsets, row flags
//     and CUB's temporary storage. CUDA: R * C < 2^31.
//   Deterministic: no floating-point atomics, fixed summation orders.
//
// Backward: none (integer outputs).

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

struct RandpermDescriptor {
  int64_t n = 0;               // n >= 0
  DType dtype = DType::I64;    // I64, I32, F64, F32, F16, BF16
  bool device_offset = false;  // offset from Args::offset (read, then incremented)
};

struct RandpermArgs {
  RandomSeed seed;   // seed.offset is ignored when device_offset
  TensorMut out;     // [n]
  TensorMut offset;  // I64 [1] when device_offset, else absent
};

class BARACUDA_API RandpermPlan : public PlanBase {
 public:
  RandpermPlan() : PlanBase("RandpermPlan") {}
  static Result<RandpermPlan> select(const Stream& stream, const RandpermDescriptor& desc,
                                     const PlanPreference& pref = {});
  Status can_implement(const RandpermArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const RandpermArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const RandpermArgs& args) const;

  const RandpermDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return Dims{desc_.n}; }

 private:
  RandpermDescriptor desc_;
};

struct MultinomialDescriptor {
  DType dtype = DType::F32;      // probs: F32, F64, F16, BF16
  Dims probs_shape;              // [C] or [R, C]
  int64_t num_samples = 1;       // >= 0; <= C without replacement
  bool replacement = false;
  DType out_dtype = DType::I64;  // I64 or I32
  bool device_offset = false;    // offset from Args::offset (read, then incremented)
};

struct MultinomialArgs {
  RandomSeed seed;   // seed.offset is ignored when device_offset
  TensorRef probs;   // probs_shape
  TensorMut out;     // out_shape()
  TensorMut offset;  // I64 [1] when device_offset, else absent
};

class BARACUDA_API MultinomialPlan : public PlanBase {
 public:
  MultinomialPlan() : PlanBase("MultinomialPlan") {}
  static Result<MultinomialPlan> select(const Stream& stream, const MultinomialDescriptor& desc,
                                        const PlanPreference& pref = {});
  Status can_implement(const MultinomialArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MultinomialArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MultinomialArgs& args) const;
  // CUDA: the lowest invalid row the last run() found (see above); Ok on the CPU.
  Status check_probs(const Stream& stream, Workspace ws) const;

  const MultinomialDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const;  // [num_samples] or [R, num_samples]
  int64_t rows() const;    // R (1 for probs [C])
  int64_t categories() const;

 private:
  MultinomialDescriptor desc_;
};

}  // namespace baracuda

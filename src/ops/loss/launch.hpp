// Interface between the cross-entropy plans (plain C++) and the CUDA kernels
// (src/ops/loss/cuda/). Usable by another plan too (the fused linear +
// cross-entropy runs launch_rows on [n_chunk, classes] slices): everything is
// pointers + element strides + a row count, and the Mean divisor and dloss
// are read from DEVICE memory, so a chunked caller computes the divisor once
// (launch_divisor over all targets) and then runs any number of row chunks.
#pragma once
#include <cstdint>
#include <type_traits>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/loss.hpp"
#include "core/smem_limit.hpp"

namespace baracuda::loss::cuda {

enum class Mode : uint8_t {
  Forward,   // loss (+ lse)
  Backward,  // dlogits from the saved lse
  Fused,     // loss (+ lse) and dlogits in one pass over the logits
};
enum class Path : uint8_t { Block, Split };

// Block path thread counts (one instantiation each): rows up to this many
// 16-byte vectors take kSmallThreads, longer rows kLargeThreads.
inline constexpr int kSmallThreads = 128;
inline constexpr int kLargeThreads = 512;
inline constexpr int64_t kSmallRowVectors = 1024;
// Split path: classes per block, and the row length from which rows fewer
// than the SMs are split.
inline constexpr int64_t kSplitChunk = 16384;
inline constexpr int64_t kSplitMinLen = 65536;
// One split partial: (max, sum-exp, A, B) in the accumulator type, padded.
inline constexpr int64_t kPartialBytes = 32;
// Shared memory the Fused block path may stage one row of logits in.
inline int64_t stage_limit(int arch) { return baracuda::detail::row_staging_limit(arch); }

// Accumulator type of the kernels and of every device scalar below: double
// for f64 logits, float otherwise (the lse dtype).
struct Launch {
  Mode mode = Mode::Forward;
  DType dtype = DType::F32;        // logits, weight, probability targets, dlogits
  DType index_dtype = DType::I64;  // Index targets
  bool loss_f32 = true;            // loss / dloss are f32 (else the logits' dtype)
  bool probs = false;              // probability targets
  bool has_weight = false;
  double eps = 0.0;                // label smoothing
  double z = 0.0;                  // z-loss coefficient
  int64_t ignore_index = -100;
  LossReduction reduction = LossReduction::Mean;
  int64_t rows = 0, classes = 0;

  const void* logits = nullptr;
  int64_t logits_rs = 0;  // row stride (class stride 1)
  const void* target = nullptr;
  int64_t target_s = 0;   // Index: element stride; Probs: row stride (class stride 1)
  const void* weight = nullptr;
  int64_t weight_s = 0;
  void* loss = nullptr;   // Forward / Fused with reduction None: [rows] (stride loss_s)
  int64_t loss_s = 0;
  void* lse = nullptr;    // Forward / Fused: optional output [rows]; Backward: the saved lse (input)
  int64_t lse_s = 0;
  const void* dloss = nullptr;  // Backward / Fused: None [rows] (stride dloss_s), else one element
  int64_t dloss_s = 0;
  void* dlogits = nullptr;      // Backward / Fused
  int64_t dlogits_rs = 0;

  // Device scratch (accumulator type), from the workspace:
  void* row_loss = nullptr;  // Mean / Sum: [rows] per-row losses, reduced by launch_reduce
  void* divisor = nullptr;   // Mean: one value, written by launch_divisor
  void* partials = nullptr;  // Split: rows x chunks x kPartialBytes, then rows x 8 bytes (x_t)
  void* scalar_loss = nullptr;  // launch_reduce's output (Mean / Sum: the rank-0 loss)

  Path path = Path::Block;
  bool vec = false;          // 16-byte vectors on logits, dlogits and probability targets
  bool stage = false;        // Fused block path: the row staged in shared memory
  int threads = kLargeThreads;
  int64_t chunks = 0;        // Split: ceil(classes / kSplitChunk)
  void* stream = nullptr;    // cudaStream_t
  int sm_count = 0;
  int arch = 0;
};

// Rows [r0, r0 + n) of l: every per-row pointer (target, logits, dlogits,
// lse, and loss / dloss with reduction None, the row_loss scratch) moved to
// row r0, rows = n; the divisor, weight and scalars shared. For a chunked
// caller (the fused linear + cross-entropy), which then sets the path
// (path.hpp choose_path) and the split partials for the chunk.
inline Launch rows_slice(const Launch& l, int64_t r0, int64_t n) {
  auto at = [](auto* p, int64_t bytes) {
    using C = std::conditional_t<std::is_const_v<std::remove_pointer_t<decltype(p)>>, const unsigned char*, unsigned char*>;
    return p ? static_cast<decltype(p)>(reinterpret_cast<C>(p) + bytes) : p;
  };
  const int64_t es = static_cast<int64_t>(dtype_size(l.dtype));
  const int64_t acc = l.dtype == DType::F64 ? 8 : 4;
  const int64_t ls = l.loss_f32 ? 4 : es;
  Launch s = l;
  s.rows = n;
  s.target = at(l.target, r0 * l.target_s * static_cast<int64_t>(dtype_size(l.index_dtype)));
  s.logits = at(l.logits, r0 * l.logits_rs * es);
  s.dlogits = at(l.dlogits, r0 * l.dlogits_rs * es);
  s.lse = at(l.lse, r0 * l.lse_s * acc);
  if (l.reduction == LossReduction::None) {
    s.loss = at(l.loss, r0 * l.loss_s * ls);
    s.dloss = at(l.dloss, r0 * l.dloss_s * ls);
  }
  s.row_loss = at(l.row_loss, r0 * acc);
  return s;
}

// Mean: divisor = sum over rows of w[t_i] (Index, rows not ignored and in
// range; 1 without weights) or rows (Probs), summed in a fixed order.
Status launch_divisor(const Launch& l);
// Per-row work of l.mode over l.rows rows (nothing for rows == 0).
Status launch_rows(const Launch& l);
// Mean / Sum: scalar_loss = sum_i row_loss[i] (fixed order) / divisor (Mean).
Status launch_reduce(const Launch& l);
// What a plan runs: divisor (Mean and a gradient or a loss), rows, reduce.
Status launch(const Launch& l);

}  // namespace baracuda::loss::cuda

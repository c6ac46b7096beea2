// Interface between RandpermPlan / MultinomialPlan (plain C++) and their CUDA
// kernels (cuda/sampling_launch.cu). The plan fills the launch from the views;
// the kernels execute it. The workspace pointer is 256-byte aligned.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::random::cuda {

inline constexpr size_t kSamplingAlign = 256;
// The error word (uint64, all ones = none) padded to this many bytes.
inline constexpr size_t kErrorWordBytes = 256;
inline constexpr uint64_t kNoError = ~uint64_t{0};

// Byte offsets from the aligned workspace start.
struct RandpermWorkspace {
  size_t keys0 = 0, keys1 = 0, vals0 = 0, vals1 = 0, temp = 0, temp_bytes = 0, total = 0;
};
RandpermWorkspace randperm_workspace(int64_t n);  // CUB size query: call under the plan's device

struct RandpermLaunch {
  int64_t n = 0;
  DType dtype = DType::I64;
  void* out = nullptr;
  int64_t out_stride = 1;
  uint64_t seed = 0, offset = 0;
  int64_t* offset_ptr = nullptr;  // device_offset: read, then incremented
  void* workspace = nullptr;      // aligned
  RandpermWorkspace ws;
  void* stream = nullptr;
};
Status launch_randperm(const RandpermLaunch& l);

// Byte offsets from the aligned workspace start (the error word is at 0).
struct MultinomialWorkspace {
  size_t keys0 = 0, keys1 = 0, vals0 = 0, vals1 = 0, seg = 0, flags = 0, temp = 0, temp_bytes = 0, total = 0;
  size_t ends = 0;  // cdf_scan: R * M doubles, the cdf at each chunk's end
};
MultinomialWorkspace multinomial_workspace(int64_t R, int64_t C, int64_t S, bool replacement);

// With replacement: "cdf_scan" (the chunk totals by a thread per chunk, the
// chunk ends by a warp per row, the samples by a thread per sample) while the
// chunk-end table (R * M doubles) stays below kScanMaxElems; otherwise
// "cdf_search" (one block per row, no table). The same values either way.
inline constexpr int64_t kScanMaxElems = int64_t{1} << 24;  // 128 MiB of f64
inline bool use_cdf_scan(int64_t R, int64_t C) {
  const int64_t K = C < 1 ? 1 : (C + 1023) / 1024;  // sampling::scan_chunk_len
  const int64_t M = C < 1 ? 0 : (C + K - 1) / K;
  return R <= kScanMaxElems && R * M <= kScanMaxElems;
}
// Without replacement: "race_topk" (tiles of kTopkItems keys sorted in shared
// memory, each keeping its num_samples smallest, then the tiles' survivors
// merged the same way until one tile per row is left) for num_samples <=
// kTopkMaxSamples; otherwise "segmented_sort". The same values either way.
inline constexpr int64_t kTopkItems = 4096;
inline constexpr int64_t kTopkMaxSamples = 256;  // 1000 of 1M: race_topk 299.5 us (0.66x torch) vs segmented_sort ~200 us (H100)
inline bool use_race_topk(int64_t S) { return S <= kTopkMaxSamples; }
inline const char* multinomial_variant(int64_t R, int64_t C, int64_t S, bool replacement) {
  return replacement ? (use_cdf_scan(R, C) ? "cdf_scan" : "cdf_search")
                     : (use_race_topk(S) ? "race_topk" : "segmented_sort");
}

struct MultinomialLaunch {
  DType dtype = DType::F32;
  DType out_dtype = DType::I64;
  int64_t R = 0, C = 0, S = 0;
  bool replacement = false;
  const void* probs = nullptr;
  int64_t p_row_stride = 0, p_col_stride = 1;
  void* out = nullptr;
  int64_t o_row_stride = 0, o_col_stride = 1;
  uint64_t seed = 0, offset = 0;
  int64_t* offset_ptr = nullptr;
  void* workspace = nullptr;  // aligned; starts with the error word
  MultinomialWorkspace ws;
  void* stream = nullptr;
};
Status launch_multinomial(const MultinomialLaunch& l);

// Synchronizes the stream and reads the error word (-1: none).
Status read_sampling_error_word(const char* plan, void* stream, const void* word, int64_t* bad);

}  // namespace baracuda::random::cuda

// Interface between the embedding plans (plain C++) and the CUDA kernels
// (src/ops/indexing/cuda/). The plan fills the row maps from the actual views
// and chooses the vector path; the kernels only execute it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::indexing::cuda {

// Position p of the row-major flattened index tensor (coalesced over the
// index shape, last axis fastest) -> element offsets of the index and of the
// row of the [.., D] tensor (out / dout) it belongs to.
struct RowMap {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t idx_stride[kMaxRank] = {};
  int64_t row_stride[kMaxRank] = {};
};

// The error word (an unsigned 64-bit lowest bad position, all ones = none)
// at the start of the workspace, padded to this many bytes.
inline constexpr size_t kErrorWordBytes = 256;
inline constexpr uint64_t kNoError = ~uint64_t{0};

// Warps per block of every embedding kernel; column vectors per lane per task
// of the backward sums (a task covers 32 * kBwdVecsPerLane vectors of a row).
inline constexpr int kWarpsPerBlock = 8;
inline constexpr int kBwdVecsPerLane = 4;

struct ForwardLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int64_t V = 0, D = 0;
  int64_t n = 0;  // rows (numel of the index shape)
  RowMap map;     // idx_stride: indices; row_stride: out
  int64_t out_col_stride = 1;
  int64_t w_row_stride = 0, w_col_stride = 1;
  const void* weight = nullptr;
  const void* indices = nullptr;
  void* out = nullptr;
  bool vec = false;             // 16-byte vectors (unit column strides, 16-byte aligned rows)
  void* error_word = nullptr;   // workspace
  void* stream = nullptr;       // cudaStream_t
};

// Byte offsets of the backward's workspace pieces, 256-byte aligned.
struct BackwardWorkspace {
  // keys_in / pos_in feed the sort; afterwards compact reuses pos_in for the
  // run-start flags and keys_in for run_id (their inclusive scan). Dense:
  // row_start[v] = the first sorted entry of row v (V + 1 entries).
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, run_id = 0, row_start = 0, temp = 0, temp_bytes = 0,
         total = 0;
};

struct BackwardLaunch {
  DType dtype = DType::F32;       // dout
  DType grad_dtype = DType::F32;  // dweight / dweight_compact
  DType index_dtype = DType::I64;
  int64_t V = 0, D = 0, n = 0;
  int64_t padding_idx = -1;       // resolved; -1 = none
  bool compact = false;
  RowMap map;                     // idx_stride: indices; row_stride: dout
  int64_t dout_col_stride = 1;
  const void* indices = nullptr;
  const void* dout = nullptr;
  // Dense: dweight [V, D]. Compact: dweight_compact [n, D], unique_rows [n], count.
  void* grad = nullptr;
  int64_t g_row_stride = 0, g_col_stride = 1;
  void* unique_rows = nullptr;
  int64_t unique_stride = 1;
  void* count = nullptr;
  bool vec = false;               // 16-byte vectors on dout and the gradient
  void* workspace = nullptr;      // the error word, then BackwardWorkspace's pieces
  BackwardWorkspace ws;
  void* stream = nullptr;
};

// Workspace layout (after the error word) of the backward for n indices into
// V rows (CUB's temporary storage sizes come from the CUDA side; a build
// without the family's kernels gets 0).
BackwardWorkspace backward_workspace(int64_t n, int64_t V, bool compact);

// The dtype-independent steps of the backward (embedding_sort.cu): reset the
// error word, build the keys / positions, sort them, then the run starts
// (compact: flags + scan into run_id, and count when n = 0; dense: row_start).
Status sort_indices(const BackwardLaunch& l);

Status launch_forward(const ForwardLaunch& l);
Status launch_backward(const BackwardLaunch& l);
// Synchronizes the stream, reads the error word: *bad = the lowest bad
// position, or -1.
Status read_error_word(const char* plan, void* stream, const void* error_word, int64_t* bad);

}  // namespace baracuda::indexing::cuda

// The stable (key, position) radix sort and the run starts, shared by the
// embedding backward and IndexUpdatePlan (embedding_sort.cu). Keys are
// < 2^31 and at most `V` (the "skip" key, sorted last): only the bits V needs
// are sorted. row_start[v] (v in [0, V]) = the first sorted entry with key >= v.
namespace baracuda::indexing::cuda {
size_t sort_pairs_temp_bytes(int64_t n, int64_t V);
// The workspace of a sorted put (IndexPutPlan, PutPlan): byte offsets (after
// the error word) of keys / positions, double-buffered, and the sort's
// temporary storage, for n positions into destinations below V (CUB's size
// comes from the CUDA side; a build without the kernels gets zeros).
struct PutWorkspace {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, temp = 0, temp_bytes = 0, total = 0;
};
PutWorkspace put_workspace(int64_t n, int64_t V);
Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const int32_t* pos_in,
                  int32_t* pos_out, int64_t n, int64_t V, void* stream, const char* what);
Status run_starts(const uint32_t* keys, int64_t n, int64_t V, int32_t* row_start, void* stream, const char* what);
}  // namespace baracuda::indexing::cuda

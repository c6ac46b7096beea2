// Interface between the softmax plans (plain C++) and the CUDA kernels
// (src/ops/softmax/cuda/). The plan builds the row layout of the actual views
// and chooses the path (choose_path, in plan.cpp); the kernels only execute it.
#pragma once
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/softmax.hpp"
#include "core/smem_limit.hpp"

namespace baracuda::softmax::cuda {

enum class Path : uint8_t { Warp, Block, Split, Generic };

// Operands: 0 the output (y or dx), 1 the first input (x or y), 2 the second
// input (dy; backward only).
inline constexpr int kOperands = 3;

// A call as rows: `rows` rows of `len` elements. Row r's coordinates over the
// other axes (coalesced, row-major over outer_shape) give each operand's row
// offset; element j of a row is at row offset + j * axis_stride.
struct Rows {
  int64_t len = 1;
  int64_t rows = 1;
  int outer_rank = 0;
  int64_t outer_shape[kMaxRank] = {};
  int64_t outer_stride[kOperands][kMaxRank] = {};
  int64_t axis_stride[kOperands] = {};
};

// Row lengths per lane of the warp path (one instantiation each).
inline constexpr int kWarpLaneElems[] = {4, 8, 16, 32};
inline constexpr int64_t kWarpMaxLen = 32 * 32;
// Block path: threads per block chosen so that each thread stages at most
// this many 16-byte vectors of the row (128, 256, 512 or 1024 threads).
inline constexpr int kBlockVecsPerThread = 8;
// Elements per block of the split path's chunks (a multiple of every vector width).
inline constexpr int64_t kSplitChunk = 8192;
// Rows at least this long take the split path when there are fewer rows than SMs.
inline constexpr int64_t kSplitMinLen = 65536;
// Dynamic shared memory the block path may stage rows in, per architecture
// (core/smem_limit.hpp, shared with norm).
inline int64_t block_smem_limit(int arch) { return baracuda::detail::row_staging_limit(arch); }
// Rows the block path stages: x (forward), dy (log_softmax backward:
// dx = scale * (dy - exp(y) * sum(dy)) needs only sum(dy) before the output),
// y and dy (softmax backward: sum(dy * y)).
inline constexpr int block_staged_rows(bool backward, bool log) { return backward && !log ? 2 : 1; }
// Whether a dtype has the short-row kernels: the warp path and the block path
// below 1024 threads. f64 has not (its kernels took twice the nvcc time of
// the others', for a dtype rarely used in softmax): its short rows take the
// block path with 1024 threads, which handles any length up to the staging
// limit (choose_path).
inline constexpr bool has_short_row_kernels(DType t) { return t != DType::F64; }
// Bytes of one partial in the split path's workspace ((max, sum) or a sum, padded).
inline constexpr int64_t kPartialBytes = 16;

struct Launch {
  bool backward = false;
  bool log = false;
  double scale = 1.0;
  DType dtype = DType::F32;
  Rows rows;
  void* out = nullptr;
  const void* in[2] = {nullptr, nullptr};
  Path path = Path::Generic;
  bool vec = false;        // 16-byte vectors (fast paths only)
  int lane_elems = 0;      // Warp: elements per lane (one of kWarpLaneElems)
  int block_threads = 0;   // Block: 128, 256, 512 or 1024 (f64: 1024 only)
  int64_t chunks = 0;      // Split: chunks per row (kSplitChunk elements each)
  void* workspace = nullptr;  // Split: rows * chunks * kPartialBytes
  void* stream = nullptr;     // cudaStream_t
  int sm_count = 0;
  int arch = 0;
};

Status launch(const Launch& l);

}  // namespace baracuda::softmax::cuda

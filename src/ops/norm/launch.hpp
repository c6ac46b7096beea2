// Interface between the norm plans (plain C++) and the CUDA kernels
// (src/ops/norm/cuda/). The plan builds the row layout of the actual views and
// chooses the path (path.cpp); the kernels only execute it.
#pragma once
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/norm.hpp"

namespace baracuda::norm::cuda {

enum class Path : uint8_t { Warp, Block, Long, None };

// Row operands, each addressed as row offset + j (the normalized block is
// contiguous on CUDA). Forward: y, h, x, residual, mean, rstd. Backward: dx,
// dy, x, dh_in, mean, rstd. The stats' "row offset" is their element offset
// (their normalized-block stride is unused). A missing operand has null data.
inline constexpr int kOperands = 6;
enum Operand : int { kOut = 0, kIn1 = 1, kX = 2, kIn3 = 3, kMean = 4, kRstd = 5 };
inline constexpr int kRowTensors = 4;  // operands 0..3 hold whole rows

// A call as rows: `rows` rows of `len` elements; row r's coordinates over the
// leading axes (coalesced across operands, row-major over outer_shape) give
// each operand's row offset.
struct Rows {
  int64_t len = 1;
  int64_t rows = 1;
  int outer_rank = 0;
  int64_t outer_shape[kMaxRank] = {};
  int64_t outer_stride[kOperands][kMaxRank] = {};
};

// Elements per lane of the warp path (one instantiation each).
inline constexpr int kWarpLaneElems[] = {4, 8, 16, 32};
inline constexpr int64_t kWarpMaxLen = 32 * 32;
// Threads per block of the column-partial kernel (8 warps over a chunk's
// rows, each lane one vector of columns) and the least rows one chunk covers.
inline constexpr int kColThreads = 256;
inline constexpr int64_t kMinChunkRows = 64;
// The block path's dx kernel sums dweight / dbias itself ("fused") when each
// thread owns at most this many columns of a row (its partials stay in
// registers across rows): 16 (f32 / f16 / bf16; f64 never fuses).
inline constexpr int kFusedColsPerThread = 16;
// Blocks of the fused dx kernel resident per SM, as its register use allows
// (ptxas, sm_90a): 16-bit on 256 threads is bounded to 64 registers (4
// blocks); f32 on 256 threads takes 72 with prefetch (3 blocks), 102 without
// (2); 1024 threads allow at most 64 registers, one block. The chunk count
// (the grid) is the SMs times this (or fewer, by staging), so the grid runs
// as one full wave: measured on the H100, bf16 [32768, 4096] backward 420 us
// at 6 chunks per SM (1.5 waves) -> 363 us at 4. Without prefetch it is never
// more than with, so select()'s workspace (aligned views) covers any views.
inline constexpr int64_t fused_blocks_per_sm(int64_t esize, int threads, bool prefetch) {
  return threads >= 1024 ? 1 : esize == 2 ? 4 : prefetch ? 3 : 2;
}

// The forward's register path (".regs"): rows of at most 256 * kRegsMaxVecs
// 16-byte vectors. Measured on the H100 (LayerNorm, [32768, 4096]): bf16 (2
// vectors per thread, 64 registers, 4 blocks per SM) 271 -> 236 us against the
// staged path; f32 (4 vectors, 114 registers, 2 blocks per SM) 395 -> 537 us,
// too few rows in flight, so 4 vectors per thread stay staged. Also lost:
// LayerNorm's mean and variance as one block reduction of per-thread (count,
// mean, M2) triples (Chan's merge; exact divisions, a small spill): bf16
// 236 -> 368 us; and 1024 threads x 2 vectors for bf16 rows of 16384 (64
// registers, one block per SM): layer_norm 234 -> 264 us, rms_norm 204 -> 237,
// add_rms_norm 428 -> 393 (the staged path keeps them).
inline constexpr int kRegsMaxVecs = 2;

struct Launch {
  bool backward = false;
  bool rms = false;
  double eps = 0;
  bool zero_centered = false;
  bool need_dx = false;       // backward
  bool need_dweight = false;  // backward: dweight computed
  bool need_dbias = false;    // backward: dbias computed
  DType dtype = DType::F32;
  Rows rows;
  void* op[kOperands] = {};   // see Operand (inputs const-cast; never written)
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;
  Path path = Path::None;     // the row kernel (forward, backward dx)
  bool vec = false;           // 16-byte vectors on the row kernel
  int lane_elems = 0;         // Warp: elements per lane (one of kWarpLaneElems)
  int block_threads = 0;      // Block / Long: 256 or 1024
  int64_t chunks = 0;         // backward dweight / dbias: row chunks of the column partials
  bool fused_colsum = false;  // backward: the Block dx kernel writes the partials (its grid = chunks)
  bool prefetch = false;      // Block + vec, two rows fit: the next row's inputs (backward with fused_colsum:
                              // x, dy; forward: x, residual) are copied (cp.async) into a second staging
                              // buffer while this row is computed
  int regs_vecs = 0;          // forward Block + vec, f32 / f16 / bf16, rows of at most kRegsMaxVecs vectors per
                              // thread of 256: the row in registers (1 or 2 vectors per thread), no staging
  bool col_vec = false;       // backward: colsum_partials_kernel reads 16-byte vectors
  void* workspace = nullptr;  // chunks x len x 2 accumulators (16-byte aligned)
  void* stream = nullptr;     // cudaStream_t
  int sm_count = 0;
  int arch = 0;
};

Status launch_forward(const Launch& l);
Status launch_backward(const Launch& l);

}  // namespace baracuda::norm::cuda

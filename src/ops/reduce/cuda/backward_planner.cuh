// Reduction backward: the host-side choice of algorithm, launch geometry and
// workspace. Everything here depends only on the problem (shape, strides,
// alignment, dtype, sm_count, the workspace the plan reported), never on
// timing, so the reduction orders (and the bits) are reproducible. The typed
// launchers (backward_kernels.cuh) execute what these functions choose.
//
//   Sum, Mean, Norm2, LogSumExp   one elementwise pass (plan_elementwise: index
//                                 width, 16-byte vectors or not)
//   Max/Min, Var/Std, Prod        plan_tiled, first match:
//     RowSmem      contiguous, 16-byte aligned slice of 4-96 KiB: a block per
//                  slice through shared memory (x read once)
//     ColProd      Prod over strided columns, when the workspace allows
//     FusedTile    the slice fits one register tile (S == 1)
//     ProdTiles    Prod: partial tiles -> combine -> apply tiles
//     RowPartials  contiguous vectorisable slices: streaming partials
//     ColPartials  kept innermost dim contiguous: streaming partials over columns
//     TilePartials any other layout: register tiles looping over R-groups
//   (the three *Partials -> fixed-order combine -> elementwise pass backwards)
//
// backward_workspace_bytes() (backward.cu) bounds the workspace from the shape
// alone: tile_ws_bytes() at iters == 1 for both tile orders and, for Prod,
// colprod_ws_bytes(); every path below needs at most that.
#pragma once
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "core/align.hpp"
#include "core/int_math.hpp"
#include "ops/reduce/cuda/backward_problem.cuh"

namespace baracuda::reduce::cuda::bw {

using baracuda::detail::ceil_div;
using baracuda::detail::is_aligned16;

inline size_t align16(size_t b) { return (b + 15) & ~size_t{15}; }

// Elements of the dtype in one 16-byte vector (16 / sizeof(T) in the kernels).
inline int vec_elems(DType t) { return static_cast<int>(16 / dtype_size(t)); }

// ===========================================================================
// Elementwise pass
// ===========================================================================

struct EwPlan {
  bool idx32 = false;  // 32-bit index math (FastDiv decode)
  bool vec = false;    // VEC = 16 / sizeof(T) elements per thread and item
};

// use_x: the formula reads x (everything but Sum / Mean).
inline EwPlan plan_elementwise(const Problem& pb, bool use_x) {
  const int V = vec_elems(pb.dtype);
  EwPlan e;
  // 32-bit index math when the index space and every operand's reach fit.
  bool small = pb.numel < (int64_t{1} << 31);
  for (int k = 0; k < kEwOperands && small; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < pb.ew_nd; ++d) reach += (pb.ew_size[d] - 1) * pb.ew_st[k][d];
    small = reach < (int64_t{1} << 31);
  }
  // Vector path: the innermost dim is contiguous for dx (and x), splits into
  // whole vectors, and every vector starts 16-byte aligned.
  bool vec = pb.ew_nd >= 1 && pb.ew_size[0] % V == 0 && pb.ew_st[kDx][0] == 1 && is_aligned16(pb.dx) &&
             (!use_x || (pb.ew_st[kX][0] == 1 && is_aligned16(pb.x)));
  for (int d = 1; d < pb.ew_nd && vec; ++d)
    vec = pb.ew_st[kDx][d] % V == 0 && (!use_x || pb.ew_st[kX][d] % V == 0);
  e.idx32 = small;
  e.vec = vec;
  return e;
}

// ===========================================================================
// Register tiles (tile_kernel)
// ===========================================================================

constexpr int kTileMaxThreads = 1024;

struct TileCfg {
  int TX = 1, TY = 1, lgTX = 0, lgTY = 0;
  int iters = 1;  // R-element groups per thread (PARTIAL only; 1 otherwise)
  int64_t S = 1;  // tiles per slice
  int64_t G = 1;  // slice groups (ceil(M / TX))
  int row = 1;    // thread order: ty fastest (row) or tx fastest (column)
  int vec = 0;    // 16-byte loads along the (single, contiguous) reduced dim
};

// Elements per thread and R-group: 64 bytes of f32, 32 of 16-bit types (16
// values), 8 f64.
template <class T>
constexpr int tile_r() {
  return sizeof(T) == 8 ? 8 : 16;
}
inline int tile_r(DType t) { return t == DType::F64 ? 8 : 16; }

// Geometry of the register tiles with iters == 1. Row order: TY threads along
// a slice (up to 1024, so a slice of 16384 16/32-bit values is one tile), TX
// slices per block for short slices. Column order (kept dim contiguous): up to
// 32 slices across the lanes, up to 16 threads along the reduced dim.
// Depends only on (order, dtype, M, L), so the workspace bound needs no strides.
inline TileCfg choose_tile(bool row, int R, int64_t M, int64_t L) {
  TileCfg c;
  const int64_t need = ceil_div(L, R);
  if (row) {
    c.TY = static_cast<int>(baracuda::detail::pow2_ceil(std::min<int64_t>(need, kTileMaxThreads)));
    c.TX = c.TY >= 256 ? 1 : static_cast<int>(std::min<int64_t>(256 / c.TY, baracuda::detail::pow2_ceil(std::min<int64_t>(M, 256))));
  } else {
    c.TX = static_cast<int>(baracuda::detail::pow2_ceil(std::min<int64_t>(M, 32)));
    c.TY = static_cast<int>(baracuda::detail::pow2_ceil(std::min<int64_t>(need, 16)));
  }
  c.row = row ? 1 : 0;
  c.lgTX = baracuda::detail::log2_ceil(c.TX);
  c.lgTY = baracuda::detail::log2_ceil(c.TY);
  c.S = ceil_div(L, static_cast<int64_t>(c.TY) * R);
  c.G = ceil_div(M, c.TX);
  return c;
}

// Workspace of the multi-tile path for S tiles per slice (0 when S == 1).
//   Var/Std, Max/Min: aux[M] (acc) + partials[M][S] (8 bytes each)
//   Prod:             partials[M][S] (acc) + others[M][S] (acc)
inline size_t tile_ws_bytes(ReduceKind kind, DType dtype, int64_t M, int64_t S) {
  if (S <= 1) return 0;
  const size_t a = dtype == DType::F64 ? 8 : 4;
  const size_t ms = static_cast<size_t>(M) * static_cast<size_t>(S);
  if (kind == ReduceKind::Prod) return 2 * align16(ms * a);
  return align16(static_cast<size_t>(M) * a) + align16(ms * 8);
}

// ===========================================================================
// Row kernel through shared memory (row_smem_kernel)
// ===========================================================================

constexpr int kRowMaxThreads = 512;
constexpr int kRowMaxChunks = 16;            // 16-byte chunks per thread (Prod keeps their products)
constexpr size_t kRowMaxBytes = 96 * 1024;   // 2+ blocks per SM; larger slices take the tile path

// The slice is a single contiguous, 16-byte aligned run of 4 KiB to
// kRowMaxBytes (and every slice of x and dx starts 16-byte aligned).
inline bool row_smem_fits(const Problem& pb) {
  const int V = vec_elems(pb.dtype);
  const size_t bytes = static_cast<size_t>(pb.L) * dtype_size(pb.dtype);
  if (!pb.row_order || pb.nr != 1 || pb.rst[0][0] != 1 || pb.rst[1][0] != 1 || pb.L % V != 0 ||
      bytes > kRowMaxBytes || bytes < 4096 || pb.M > INT_MAX || !is_aligned16(pb.x) || !is_aligned16(pb.dx))
    return false;
  for (int d = 0; d < pb.nk; ++d)
    if (pb.kst[kKx][d] % V != 0 || pb.kst[kKdx][d] % V != 0) return false;
  return true;
}

// Threads per block for a slice of `nchunks` 16-byte chunks: 256 (16 chunks
// each at 64 KiB) leave room for 3 blocks per SM.
inline int row_smem_threads(int nchunks) { return nchunks <= 256 * kRowMaxChunks ? 256 : kRowMaxThreads; }

// ===========================================================================
// Streaming partials (row_partial_kernel, col_partial_kernel) and combine
// ===========================================================================

constexpr int kPartThreads = 256;
constexpr int kCombineThreads = 256;

// ===========================================================================
// Prod over strided columns (backward_prod_col.cuh)
// ===========================================================================

constexpr int kColWarps = 8;                 // warps per block (along the rows), at most
constexpr int kColThreads = 32 * kColWarps;
constexpr int kColCombineWarps = 32;         // combine: warps per block (along the segments), at most

// Rows a thread holds in registers, at most: 16 x 16 bytes (8 for f64, whose
// suffix products take two registers each).
template <class T>
constexpr int colprod_k() {
  return sizeof(T) == 8 ? 8 : 16;
}
inline int colprod_k(DType t) { return t == DType::F64 ? 8 : 16; }
inline int colprod_v(DType t) { return vec_elems(t); }

struct ColProdCfg {
  int warps = kColWarps;  // warps per block
  int k = 1;              // rows per thread
  int64_t CB = 1;         // column blocks (32 x V columns each)
  int64_t S = 1;          // row segments (warps * k rows each)
};

// Depends only on (dtype, M, L, sm_count), so backward_workspace_bytes() can
// size the workspace without the strides. Full-size blocks (8 warps x K rows),
// shrunk (k and warps halved in turn, down to 4 rows per block) while a block
// has twice the rows of the slice or the grid has fewer than ~2 waves of warps.
// Then k is evened out over the S segments (S unchanged, less idle work in the
// last segment).
inline ColProdCfg choose_colprod(int K, int V, int64_t M, int64_t L, int sm_count) {
  ColProdCfg c;
  c.k = K;
  c.CB = ceil_div(M, int64_t{32} * V);
  const int64_t target_warps = 32 * static_cast<int64_t>(std::max(sm_count, 1));
  auto rows = [&] { return static_cast<int64_t>(c.warps) * c.k; };
  auto warps_total = [&] { return c.CB * ceil_div(L, rows()) * c.warps; };
  while (rows() > 4 && (rows() >= 2 * L || warps_total() < target_warps)) {
    if (c.k >= c.warps) {
      c.k /= 2;
    } else {
      c.warps /= 2;
    }
  }
  c.S = ceil_div(L, rows());
  c.k = static_cast<int>(ceil_div(L, c.S * c.warps));  // <= k: S * warps * k >= L still
  return c;
}

// part[S][M] + others[S][M] in the accumulator type (0 when S == 1).
inline size_t colprod_ws_bytes(DType dtype, int64_t M, int64_t S) {
  if (S <= 1) return 0;
  const size_t a = dtype == DType::F64 ? 8 : 4;
  return 2 * align16(static_cast<size_t>(M) * static_cast<size_t>(S) * a);
}

// The column path's layout: one reduced dim (after coalescing), the innermost
// kept dim is contiguous for x and dx and splits into whole 16-byte vectors,
// every other stride of x and dx is a multiple of V, both are 16-byte aligned,
// and the workspace holds what choose_colprod asks for
// (backward_workspace_bytes() covers it). *cfg: the geometry when true.
inline bool colprod_fits(const Problem& pb, ColProdCfg* cfg) {
  const int V = vec_elems(pb.dtype);
  if (pb.row_order || pb.nk < 1 || pb.nr != 1 || pb.kst[kKx][0] != 1 || pb.kst[kKdx][0] != 1 || pb.ksize[0] % V != 0 ||
      !is_aligned16(pb.x) || !is_aligned16(pb.dx))
    return false;
  for (int d = 1; d < pb.nk; ++d)
    if (pb.kst[kKx][d] % V != 0 || pb.kst[kKdx][d] % V != 0) return false;
  if (pb.rst[0][0] % V != 0 || pb.rst[1][0] % V != 0) return false;
  const ColProdCfg c = choose_colprod(colprod_k(pb.dtype), V, pb.M, pb.L, pb.sm_count);
  const size_t need = colprod_ws_bytes(pb.dtype, pb.M, c.S);
  if (need > pb.ws_bytes || (need > 0 && pb.ws == nullptr) || c.CB * c.S > INT_MAX) return false;
  *cfg = c;
  return true;
}

// ===========================================================================
// Max/Min, Var/Std, Prod: which path, with which geometry
// ===========================================================================

enum class TiledPath { RowSmem, ColProd, FusedTile, ProdTiles, RowPartials, ColPartials, TilePartials };

struct TiledPlan {
  TiledPath path = TiledPath::FusedTile;
  ColProdCfg colprod;  // ColProd
  TileCfg tile;        // FusedTile, ProdTiles, TilePartials (vec, iters and S final)
  int64_t S = 1;       // partials per slice (every multi-pass path)
  int64_t seg = 0;     // RowPartials: 16-byte chunks per segment; ColPartials: reduced elements per segment
  int64_t GV = 0;      // ColPartials: groups of 32 vectors of slices
};

// First match of the list at the top of this file. Fails only when the
// workspace is smaller than backward_workspace_bytes() said (nothing launched).
inline Status plan_tiled(const Problem& pb, TiledPlan* plan) {
  const bool prod = pb.kind == ReduceKind::Prod;
  const int R = tile_r(pb.dtype);
  const int V = vec_elems(pb.dtype);
  TiledPlan pl;
  if (row_smem_fits(pb)) {
    pl.path = TiledPath::RowSmem;
    *plan = pl;
    return Status::ok();
  }
  if (prod && colprod_fits(pb, &pl.colprod)) {
    pl.path = TiledPath::ColProd;
    *plan = pl;
    return Status::ok();
  }

  TileCfg c = choose_tile(pb.row_order, R, pb.M, pb.L);
  // backward_workspace_bytes() covers tile_ws_bytes at iters == 1, the most
  // any configuration below needs.
  if (tile_ws_bytes(pb.kind, pb.dtype, pb.M, c.S) > pb.ws_bytes)
    return Status(StatusCode::WorkspaceTooSmall, "ReduceBackwardPlan: workspace smaller than backward_workspace_bytes()",
                  tile_ws_bytes(pb.kind, pb.dtype, pb.M, c.S), pb.ws_bytes);
  bool vec = c.row && pb.nr == 1 && pb.rst[0][0] == 1 && pb.rst[1][0] == 1 && pb.L % V == 0 && is_aligned16(pb.x) &&
             is_aligned16(pb.dx);
  for (int d = 0; d < pb.nk && vec; ++d) vec = pb.kst[kKx][d] % V == 0 && pb.kst[kKdx][d] % V == 0;
  c.vec = vec ? 1 : 0;

  if (c.S == 1) {  // one tile per slice: read x once, write dx from registers
    pl.path = TiledPath::FusedTile;
    pl.tile = c;
    *plan = pl;
    return Status::ok();
  }
  // Several tiles per slice: partials, a fixed-order combine, then the pass
  // that writes dx (Prod: a tile pass that applies the products of the other
  // tiles, so its PARTIAL tiles must be the APPLY tiles).
  if (prod) {
    pl.path = TiledPath::ProdTiles;
    pl.tile = c;
    pl.S = c.S;
    *plan = pl;
    return Status::ok();
  }
  const int64_t target = 8 * static_cast<int64_t>(std::max(pb.sm_count, 1));  // 256-thread blocks
  // Column kernel: the kept innermost dim is contiguous, splits into whole
  // vectors, and every row of V slices starts 16-byte aligned.
  bool col = !pb.row_order && pb.nk >= 1 && pb.kst[kKx][0] == 1 && pb.ksize[0] % V == 0 && is_aligned16(pb.x);
  for (int d = 1; d < pb.nk && col; ++d) col = pb.kst[kKx][d] % V == 0;
  for (int d = 0; d < pb.nr && col; ++d) col = pb.rst[0][d] % V == 0;
  if (c.vec && pb.M <= INT_MAX) {
    // Segments of at least 4096 chunks: never more segments than the
    // register tiles' S, which the workspace was sized for.
    const int64_t nch = pb.L / V;
    int64_t seg = ceil_div(pb.M * nch, target);
    seg = std::max<int64_t>(4096, ceil_div(seg, 1024) * 1024);
    pl.path = TiledPath::RowPartials;
    pl.seg = seg;
    pl.S = ceil_div(nch, seg);
  } else if (col) {
    // Segments of at least TY * R reduced elements (the column tiles' S bound).
    const int64_t GV = ceil_div(pb.M / V, 32);
    int64_t seg = ceil_div(pb.L * GV, target);
    seg = std::max<int64_t>(16 * R, ceil_div(seg, 32) * 32);
    pl.path = TiledPath::ColPartials;
    pl.seg = seg;
    pl.S = ceil_div(pb.L, seg);
    pl.GV = GV;
  } else {
    // Any other layout: register tiles, each thread looping over several
    // R-groups (fewer, longer-lived blocks).
    const int64_t iters = std::clamp<int64_t>(c.G * c.S / (target / 2), 1, c.S);
    c.iters = static_cast<int>(iters);
    c.S = ceil_div(c.S, iters);
    pl.path = TiledPath::TilePartials;
    pl.tile = c;
    pl.S = c.S;
  }
  *plan = pl;
  return Status::ok();
}

}  // namespace baracuda::reduce::cuda::bw

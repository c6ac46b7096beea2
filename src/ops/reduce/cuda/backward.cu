// Reduction backward (CUDA): problem setup and dispatch. The kernels live in
// backward_kernels.cuh; run_typed<T> below calls their parts, which are
// instantiated per (dtype, part) in the TUs generated from ../manifest.cmake.
//
// Algorithms per kind (every operand in the input's rank; dy, y broadcast):
//   Sum, Mean, Norm2, LogSumExp  one elementwise pass
//   Max/Min, Var/Std, Prod       contiguous slice of 4-96 KiB: one block per
//                                slice through shared memory (x read once);
//                                else slice fits one register tile: one fused
//                                pass; else partials (streaming row / column
//                                kernels, or register tiles) -> fixed-order
//                                combine -> elementwise pass walking memory
//                                backwards for L2 reuse (Prod: partial tiles ->
//                                combine -> a tile pass applying the products of
//                                the other tiles).
//   Prod over strided columns    innermost kept dim contiguous for x and dx
//                                (reducing a leading / middle axis): lanes own
//                                16-byte vectors of columns, threads hold runs
//                                of rows in registers; segment products ->
//                                fixed-order combine -> a pass applying them
//                                (backward_prod_col.cuh).
#include <cuda_runtime.h>

#include "ops/reduce/cuda/backward_kernels.cuh"
#include "ops/reduce/manifest.hpp"  // generated from ops/reduce/manifest.cmake

// The parts run_typed<T> calls are compiled once, in their generated TUs.
BARACUDA_REDUCE_BW_EW_EXTERN
BARACUDA_REDUCE_BW_TILED_EXTERN

namespace baracuda::reduce::cuda {

namespace {

bool is_fp(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
bool uses_tiles(ReduceKind k) {
  return k == ReduceKind::Max || k == ReduceKind::Min || k == ReduceKind::Var || k == ReduceKind::Std ||
         k == ReduceKind::Prod;
}

// Kept / reduced extents of a shape.
void split_numel(const int64_t* shape, int rank, uint32_t mask, int64_t* M, int64_t* L) {
  *M = 1;
  *L = 1;
  for (int i = 0; i < rank; ++i) ((mask >> i) & 1u ? *L : *M) *= shape[i];
}

// Reverses the first n entries (coalesce_dims keeps row-major order; the
// kernels want the innermost dim first).
void reverse_n(int64_t* a, int n) { std::reverse(a, a + n); }

}  // namespace

size_t backward_workspace_bytes(ReduceKind kind, DType dtype, const Dims& shape, uint32_t axis_mask, int sm_count) {
  if (!uses_tiles(kind) || !is_fp(dtype)) return 0;
  int64_t M, L;
  split_numel(shape.begin(), shape.rank, axis_mask, &M, &L);
  if (M * L == 0) return 0;
  // The tile order is picked from the strides at launch: cover both.
  const int R = bw::tile_r(dtype);
  size_t need = 0;
  for (bool row : {true, false}) {
    const bw::TileCfg c = bw::choose_tile(row, R, M, L);
    need = std::max(need, bw::tile_ws_bytes(kind, dtype, M, c.S));
  }
  // Prod's column path (picked from the strides at launch): its segments
  // depend on (dtype, M, L, sm_count) only.
  if (kind == ReduceKind::Prod) {
    const bw::ColProdCfg cc = bw::choose_colprod(bw::colprod_k(dtype), bw::colprod_v(dtype), M, L, sm_count);
    need = std::max(need, bw::colprod_ws_bytes(dtype, M, cc.S));
  }
  return need;
}

Status launch_backward(const BackwardLaunch& p) {
  using namespace bw;
  if (!is_fp(p.dtype)) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: CUDA backward needs f32/f64/f16/bf16");
  if (p.rank < 0 || p.rank > kMaxRank) return Status(StatusCode::InvalidProblem, "ReduceBackwardPlan: bad rank");
  switch (p.kind) {
    case ReduceKind::ArgMax:
    case ReduceKind::ArgMin: return Status(StatusCode::InvalidProblem, "ReduceBackwardPlan: no gradient for ArgMax/ArgMin");
    default: break;
  }
  const bool needs_x = p.kind != ReduceKind::Sum && p.kind != ReduceKind::Mean;
  const bool needs_y = p.kind == ReduceKind::Max || p.kind == ReduceKind::Min || p.kind == ReduceKind::Norm2 ||
                       p.kind == ReduceKind::LogSumExp || p.kind == ReduceKind::Std;
  if ((needs_x && p.x == nullptr) || (needs_y && p.y == nullptr) || p.dy == nullptr || p.dx == nullptr)
    return Status(StatusCode::InvalidProblem, "ReduceBackwardPlan: missing operand");

  Problem pb{};
  pb.kind = p.kind;
  pb.dtype = p.dtype;
  pb.correction = p.correction;
  pb.dy = p.dy;
  pb.x = needs_x ? p.x : nullptr;
  pb.y = needs_y ? p.y : nullptr;
  pb.dx = p.dx;
  pb.ws = p.ws;
  pb.ws_bytes = p.ws_bytes;
  pb.stream = static_cast<cudaStream_t>(p.stream);
  pb.sm_count = p.sm_count;
  split_numel(p.shape, p.rank, p.axis_mask, &pb.M, &pb.L);
  pb.numel = pb.M * pb.L;
  if (pb.numel == 0) return Status::ok();

  // ---- elementwise view: all five operands coalesced together ----------------
  // aux (per-slice mean / tie count in the workspace) is contiguous over the
  // kept dims in row-major order: the same index the tile kernels write.
  const bool ew_aux = p.kind == ReduceKind::Max || p.kind == ReduceKind::Min || p.kind == ReduceKind::Var ||
                      p.kind == ReduceKind::Std;
  {
    int64_t sh[kMaxRank], st[kEwOperands][kMaxRank];
    int64_t aux_stride = 1;
    for (int i = p.rank - 1; i >= 0; --i) {
      const bool red = (p.axis_mask >> i) & 1u;
      sh[i] = p.shape[i];
      st[kDx][i] = p.dx_stride[i];
      st[kDy][i] = p.dy_stride[i];
      st[kX][i] = pb.x ? p.x_stride[i] : 0;
      st[kY][i] = pb.y ? p.y_stride[i] : 0;
      st[kAux][i] = (ew_aux && !red) ? aux_stride : 0;
      if (!red) aux_stride *= p.shape[i];
    }
    int64_t* sp[kEwOperands] = {st[0], st[1], st[2], st[3], st[4]};
    pb.ew_nd = baracuda::detail::coalesce_dims(p.rank, sh, kEwOperands, sp);
    reverse_n(sh, pb.ew_nd);
    for (int k = 0; k < kEwOperands; ++k) reverse_n(st[k], pb.ew_nd);
    for (int d = 0; d < pb.ew_nd; ++d) {
      pb.ew_size[d] = sh[d];
      for (int k = 0; k < kEwOperands; ++k) pb.ew_st[k][d] = st[k][d];
    }
  }

  // ---- tile view: kept dims x reduced dims --------------------------------------
  // (baracuda::detail::make_reduce_layout coalesces one input with its output; here x, dx,
  // dy and y must share the kept dims and x, dx the reduced ones, so the same
  // coalesce_dims runs over all of them.)
  if (uses_tiles(p.kind)) {
    int64_t ks[kMaxRank], kst[kKeptOperands][kMaxRank], rs[kMaxRank], rst[2][kMaxRank];
    int nk = 0, nr = 0;
    for (int i = 0; i < p.rank; ++i) {
      if ((p.axis_mask >> i) & 1u) {
        rs[nr] = p.shape[i];
        rst[0][nr] = p.x_stride[i];
        rst[1][nr] = p.dx_stride[i];
        ++nr;
      } else {
        ks[nk] = p.shape[i];
        kst[kKx][nk] = p.x_stride[i];
        kst[kKdx][nk] = p.dx_stride[i];
        kst[kKdy][nk] = p.dy_stride[i];
        kst[kKy][nk] = pb.y ? p.y_stride[i] : 0;
        ++nk;
      }
    }
    int64_t* kp[kKeptOperands] = {kst[0], kst[1], kst[2], kst[3]};
    int64_t* rp[2] = {rst[0], rst[1]};
    pb.nk = baracuda::detail::coalesce_dims(nk, ks, kKeptOperands, kp);
    pb.nr = baracuda::detail::coalesce_dims(nr, rs, 2, rp);
    reverse_n(ks, pb.nk);
    reverse_n(rs, pb.nr);
    for (int k = 0; k < kKeptOperands; ++k) reverse_n(kst[k], pb.nk);
    for (int k = 0; k < 2; ++k) reverse_n(rst[k], pb.nr);
    for (int d = 0; d < kMaxRank; ++d) {
      pb.ksize[d] = d < pb.nk ? ks[d] : 1;
      pb.rsize[d] = d < pb.nr ? rs[d] : 1;
      for (int k = 0; k < kKeptOperands; ++k) pb.kst[k][d] = d < pb.nk ? kst[k][d] : 0;
      for (int k = 0; k < 2; ++k) pb.rst[k][d] = d < pb.nr ? rst[k][d] : 0;
    }
    // Column order when the innermost kept dim of x is denser than its
    // innermost reduced dim (e.g. reducing a leading or middle axis): then the
    // lanes of a warp take neighbouring slices and every load is coalesced.
    pb.row_order = !(pb.nk >= 1 && pb.nr >= 1 && pb.kst[kKx][0] < pb.rst[0][0]);
  }

  switch (p.dtype) {
#define CASE(DT, T) \
  case DType::DT: return run_typed<T>(pb);
    BARACUDA_REDUCE_BW_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "ReduceBackwardPlan: dtype");
}

}  // namespace baracuda::reduce::cuda

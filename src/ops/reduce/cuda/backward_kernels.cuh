// Reduction backward: every kernel template and the typed driver, included by
// the per-dtype instantiation TUs (backward_<dtype>.cu). One header per
// algorithm, the host-side choice between them in backward_planner.cuh:
//
//  backward_problem.cuh       Problem: the coalesced elementwise and tile views
//  backward_planner.cuh       algorithm, launch geometry and workspace choice
//  backward_common.cuh        vector loads / streaming stores, slice offsets
//  backward_block_reduce.cuh  fixed-order warp / block sums and product scans
//  backward_formulas.cuh      the gradient of each kind (coefficient x element)
//  backward_elementwise.cuh   ew_kernel: N-d strided pass over the input with up
//                             to five operands (dx, dy, x, y, aux) coalesced
//                             together; Sum, Mean, Norm2, LogSumExp, and the last
//                             pass of Max/Min/Var/Std when a slice spans blocks
//  backward_row_smem.cuh      row_smem_kernel: a block per contiguous slice of
//                             4-96 KiB through shared memory (x read once)
//  backward_tile.cuh          tile_kernel: register tiles of TX slices x TY
//                             threads x R elements for any strides (FUSED /
//                             PARTIAL / APPLY)
//  backward_partials.cuh      row_partial_kernel / col_partial_kernel: streaming
//                             partials of long contiguous slices, or of slices
//                             strided across a contiguous kept dim
//  backward_combine.cuh       combine_kernel: a warp per slice folds the
//                             partials in a fixed order
//  backward_prod_col.cuh      colprod_kernel / colprod_combine_kernel: Prod over
//                             strided columns (lanes own 16-byte vectors of
//                             columns, threads hold runs of rows in registers)
// Every reduction order is fixed by the launch geometry, which depends only on
// the problem (shape, strides, alignment, sm_count), so results are bitwise
// reproducible. No atomics, no allocation, no synchronisation.
//
// Private to src/ops/reduce/cuda/backward*.cu.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/reduce/cuda/backward_combine.cuh"
#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_elementwise.cuh"
#include "ops/reduce/cuda/backward_formulas.cuh"
#include "ops/reduce/cuda/backward_partials.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"
#include "ops/reduce/cuda/backward_problem.cuh"
#include "ops/reduce/cuda/backward_prod_col.cuh"
#include "ops/reduce/cuda/backward_row_smem.cuh"
#include "ops/reduce/cuda/backward_tile.cuh"

namespace baracuda::reduce::cuda::bw {

template <class T>
EwArgs<acc_t<T>> make_args(const Problem& pb) {
  using A = acc_t<T>;
  EwArgs<A> a{};
  a.n = static_cast<A>(pb.L);
  a.denom = static_cast<A>(std::max<int64_t>(0, pb.L - pb.correction));
  a.rn = A(1) / a.n;
  a.rdenom = A(1) / a.denom;
  a.flag = (pb.kind == ReduceKind::Mean || pb.kind == ReduceKind::Std) ? 1 : 0;
  a.tie_coef = 0;
  return a;
}

// Max/Min (TK_TIE), Var/Std (TK_MEAN), Prod (TK_PROD): runs the path
// plan_tiled() chose.
template <int TK, class T>
Status run_tiled(const Problem& pb) {
  using A = acc_t<T>;
  const EwArgs<A> args = make_args<T>(pb);
  TiledPlan pl;
  BARACUDA_RETURN_IF_ERROR(plan_tiled(pb, &pl));
  if (pl.path == TiledPath::RowSmem) return launch_row_smem<TK, T>(pb, args);
  if constexpr (TK == TK_PROD) {
    if (pl.path == TiledPath::ColProd) return launch_col_prod<T>(pb, pl.colprod);
  }
  TileParams<T> tp = make_tile_params<T>(pb, args);
  if (pl.path == TiledPath::FusedTile) {  // one tile per slice: read x once, write dx from registers
    tp.c = pl.tile;
    return launch_tile<TK, TM_FUSED, T>(tp, pb);
  }

  // Several tiles or segments per slice: partials, a fixed-order combine, then
  // the pass that writes dx.
  char* ws = static_cast<char*>(pb.ws);
  if constexpr (TK == TK_PROD) {
    if (pl.path != TiledPath::ProdTiles) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: no Prod path");
    // A tile pass that applies the products of the other tiles, so its
    // PARTIAL tiles must be the APPLY tiles.
    tp.c = pl.tile;
    void* part = ws;
    A* aux = reinterpret_cast<A*>(ws + align16(static_cast<size_t>(pb.M) * static_cast<size_t>(pl.S) * sizeof(A)));
    tp.part = part;
    tp.aux = aux;
    BARACUDA_RETURN_IF_ERROR((launch_tile<TK, TM_PARTIAL, T>(tp, pb)));
    BARACUDA_RETURN_IF_ERROR((launch_combine<TK, T>(pb, part, aux, pl.S, args.n)));
    return launch_tile<TK, TM_APPLY, T>(tp, pb);
  } else {
    A* aux = reinterpret_cast<A*>(ws);
    void* part = ws + align16(static_cast<size_t>(pb.M) * sizeof(A));
    if (pl.path == TiledPath::TilePartials) {
      tp.c = pl.tile;
      tp.part = part;
      tp.aux = aux;
      BARACUDA_RETURN_IF_ERROR((launch_tile<TK, TM_PARTIAL, T>(tp, pb)));
    } else if (pl.path == TiledPath::RowPartials || pl.path == TiledPath::ColPartials) {
      BARACUDA_RETURN_IF_ERROR((launch_partials<TK, T>(pb, pl, part, aux)));
    } else {
      return Status(StatusCode::Unsupported, "ReduceBackwardPlan: no path for this kind");
    }
    BARACUDA_RETURN_IF_ERROR((launch_combine<TK, T>(pb, part, aux, pl.S, args.n)));
    // Walk memory backwards: the last data the partial pass read are in L2.
    constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
    EwArgs<A> a = args;
    a.tie_coef = 1;  // combine_kernel stored dy / ties
    return launch_ew<OP, T>(pb, aux, a, /*reverse=*/true);
  }
}

// Sum, Mean, Norm2, LogSumExp: one elementwise pass.
template <class T>
Status run_elementwise(const Problem& pb) {
  const EwArgs<acc_t<T>> args = make_args<T>(pb);
  switch (pb.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: return launch_ew<EW_SUMMEAN, T>(pb, nullptr, args, false);
    case ReduceKind::Norm2: return launch_ew<EW_NORM2, T>(pb, nullptr, args, false);
    case ReduceKind::LogSumExp: return launch_ew<EW_LSE, T>(pb, nullptr, args, false);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ReduceBackwardPlan: kind has no CUDA backward");
}

// Every kind of one dtype. Four independent entry points (run_elementwise<T>,
// run_tiled<TK_TIE / TK_MEAN / TK_PROD, T>), so the instantiations can be
// split across translation units by family.
template <class T>
Status run_typed(const Problem& pb) {
  switch (pb.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
    case ReduceKind::Norm2:
    case ReduceKind::LogSumExp: return run_elementwise<T>(pb);
    case ReduceKind::Max:
    case ReduceKind::Min: return run_tiled<TK_TIE, T>(pb);
    case ReduceKind::Var:
    case ReduceKind::Std: return run_tiled<TK_MEAN, T>(pb);
    case ReduceKind::Prod: return run_tiled<TK_PROD, T>(pb);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ReduceBackwardPlan: kind has no CUDA backward");
}

// Defined in backward_<dtype>.cu (one TU per dtype, for build parallelism).
Status run_f32(const Problem& pb);
Status run_f64(const Problem& pb);
Status run_f16(const Problem& pb);
Status run_bf16(const Problem& pb);

}  // namespace baracuda::reduce::cuda::bw

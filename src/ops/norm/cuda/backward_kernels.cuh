// Norm backward: launch_backward_typed<T> runs dx on the path the plan chose
// (warp_rows.cuh / block_rows.cuh) and the column sums of dweight / dbias
// (colsum.cuh): fused into the block path's dx kernel, then the final
// kernel; or, unfused, the partials kernel and the final kernel BEFORE dx
// (they read dy, which dx may overwrite in place). Instantiated per dtype as
// listed in ../manifest.cmake.
#pragma once
#include <type_traits>

#include "core/cuda_device.hpp"
#include "ops/norm/cuda/block_rows.cuh"
#include "ops/norm/cuda/colsum.cuh"
#include "ops/norm/cuda/norm_common.cuh"
#include "ops/norm/cuda/warp_rows.cuh"

namespace baracuda::norm::cuda::kern {

template <class T>
Status launch_backward_typed(const Launch& l) {
  const Params p = params_of(l);
  const auto stream = static_cast<cudaStream_t>(l.stream);
  const char* what = "NormBackwardPlan: kernel launch";
  const bool colsum = p.chunks > 0 && p.len > 0;
  if constexpr (!std::is_same_v<T, double>) {
    if (colsum && p.fused_colsum) {
      constexpr int kF = kModeFused, kFP = kModeFusedPrefetch;
      const Status st =
          l.prefetch ? (l.block_threads == 1024 ? launch_block<T, 1024, true, true, kFP>(p, l.sm_count, l.arch, stream, what)
                                                : launch_block<T, 256, true, true, kFP>(p, l.sm_count, l.arch, stream, what))
                     : (l.block_threads == 1024 ? launch_block<T, 1024, true, true, kF>(p, l.sm_count, l.arch, stream, what)
                                                : launch_block<T, 256, true, true, kF>(p, l.sm_count, l.arch, stream, what));
      BARACUDA_RETURN_IF_ERROR(st);
      return launch_colsum_final<T>(p, stream, what);
    }
  }
  if (colsum) {
    BARACUDA_RETURN_IF_ERROR(launch_colsum_partials<T>(p, stream, what));
    BARACUDA_RETURN_IF_ERROR(launch_colsum_final<T>(p, stream, what));
  }
  if (p.rows == 0) return Status::ok();
  switch (l.path) {
    case Path::Warp:
      switch (l.lane_elems) {
        case 4: return launch_warp<T, 4, true>(p, l.sm_count, stream, what);
        case 8: return launch_warp<T, 8, true>(p, l.sm_count, stream, what);
        case 16: return launch_warp<T, 16, true>(p, l.sm_count, stream, what);
        default: return launch_warp<T, 32, true>(p, l.sm_count, stream, what);
      }
    case Path::Block:
      return l.block_threads == 1024 ? launch_block<T, 1024, true, true>(p, l.sm_count, l.arch, stream, what)
                                     : launch_block<T, 256, true, true>(p, l.sm_count, l.arch, stream, what);
    case Path::Long: return launch_block<T, 1024, false, true>(p, l.sm_count, l.arch, stream, what);
    case Path::None: break;
  }
  return Status::ok();
}

}  // namespace baracuda::norm::cuda::kern

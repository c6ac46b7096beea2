// Norm backward: launch_backward_typed<T> runs the column partials of dweight
// / dbias first (colsum.cuh; they read dy, which dx may overwrite in place),
// then dx on the path the plan chose (warp_rows.cuh / block_rows.cuh);
// instantiated per dtype as listed in ../manifest.cmake.
#pragma once
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
  if (p.chunks > 0 && p.len > 0) BARACUDA_RETURN_IF_ERROR(launch_colsum<T>(p, stream, what));
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

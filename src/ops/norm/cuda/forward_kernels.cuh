// Norm forward: launch_forward_typed<T> runs the path the plan chose
// (path.cpp) with the templates of warp_rows.cuh / block_rows.cuh;
// instantiated per dtype as listed in ../manifest.cmake (generated TUs;
// norm_launch.cu dispatches).
#pragma once
#include "core/cuda_device.hpp"
#include "ops/norm/cuda/block_rows.cuh"
#include "ops/norm/cuda/norm_common.cuh"
#include "ops/norm/cuda/regs_rows.cuh"
#include "ops/norm/cuda/warp_rows.cuh"

namespace baracuda::norm::cuda::kern {

template <class T>
Status launch_forward_typed(const Launch& l) {
  static_assert(sizeof(kWarpLaneElems) / sizeof(kWarpLaneElems[0]) == 4 && kWarpLaneElems[0] == 4 &&
                    kWarpLaneElems[3] == 32 && kWarpMaxLen == 32 * 32,
                "the warp cases mirror kWarpLaneElems");
  const Params p = params_of(l);
  if (p.rows == 0) return Status::ok();
  const auto stream = static_cast<cudaStream_t>(l.stream);
  const char* what = "NormPlan: kernel launch";
  switch (l.path) {
    case Path::Warp:
      switch (l.lane_elems) {
        case 4: return launch_warp<T, 4, false>(p, l.sm_count, stream, what);
        case 8: return launch_warp<T, 8, false>(p, l.sm_count, stream, what);
        case 16: return launch_warp<T, 16, false>(p, l.sm_count, stream, what);
        default: return launch_warp<T, 32, false>(p, l.sm_count, stream, what);
      }
    case Path::Block:
      if constexpr (sizeof(T) < 8) {
        switch (l.regs_vecs) {
          case 1: return launch_regs<T, 1>(p, l.sm_count, stream, what);
          case 2: return launch_regs<T, 2>(p, l.sm_count, stream, what);
          default: break;
        }
      }
      if (l.prefetch) {
        constexpr int kP = kModeForwardPrefetch;
        return l.block_threads == 1024 ? launch_block<T, 1024, true, false, kP>(p, l.sm_count, l.arch, stream, what)
                                       : launch_block<T, 256, true, false, kP>(p, l.sm_count, l.arch, stream, what);
      }
      return l.block_threads == 1024 ? launch_block<T, 1024, true, false>(p, l.sm_count, l.arch, stream, what)
                                     : launch_block<T, 256, true, false>(p, l.sm_count, l.arch, stream, what);
    case Path::Long: return launch_block<T, 1024, false, false>(p, l.sm_count, l.arch, stream, what);
    case Path::None: break;
  }
  return Status::ok();
}

}  // namespace baracuda::norm::cuda::kern

// Softmax CUDA kernels: the four algorithm templates and
// launch_forward_typed<T> / launch_backward_typed<T>, instantiated per dtype
// and direction as listed in ../manifest.cmake (generated TUs, so each TU
// compiles one direction's kernels; softmax_launch.cu dispatches). The path
// was chosen by the plan (path.cpp: choose_path) and arrives in the Launch.
#pragma once
#include <algorithm>
#include <string>

#include "baracuda/core/cuda_types.hpp"
#include "core/cuda_device.hpp"
#include "ops/softmax/cuda/block_rows.cuh"
#include "ops/softmax/cuda/generic_rows.cuh"
#include "ops/softmax/cuda/softmax_common.cuh"
#include "ops/softmax/cuda/split_rows.cuh"
#include "ops/softmax/cuda/warp_rows.cuh"

namespace baracuda::softmax::cuda::kern {

inline Params params_of(const Launch& l) {
  Params p;
  p.out = l.out;
  p.in0 = l.in[0];
  p.in1 = l.in[1];
  p.len = l.rows.len;
  p.rows = l.rows.rows;
  p.outer_rank = l.rows.outer_rank;
  for (int d = 0; d < l.rows.outer_rank; ++d) p.outer_shape[d] = l.rows.outer_shape[d];
  for (int k = 0; k < kOperands; ++k) {
    for (int d = 0; d < l.rows.outer_rank; ++d) p.outer_stride[k][d] = l.rows.outer_stride[k][d];
    p.axis_stride[k] = l.rows.axis_stride[k];
    p.row_stride[k] = l.rows.outer_rank == 1 ? l.rows.outer_stride[k][0] : 0;  // fast paths: at most one outer dim
  }
  p.scale = l.scale;
  p.log = l.log ? 1 : 0;
  p.vec = l.vec ? 1 : 0;
  p.chunks = l.chunks;
  p.workspace = l.workspace;
  return p;
}

// One direction's paths. Without the short-row kernels (f64: launch.hpp's
// has_short_row_kernels) only the block path's 1024-thread kernel, split and
// generic exist; choose_path never asks such a dtype for the others.
template <class T, bool kBackward>
Status launch_dir(const Launch& l) {
  static_assert(sizeof(kWarpLaneElems) / sizeof(kWarpLaneElems[0]) == 4 && kWarpLaneElems[0] == 4 &&
                    kWarpLaneElems[3] == 32 && kWarpMaxLen == 32 * 32,
                "the warp cases mirror kWarpLaneElems");
  const Params p = params_of(l);
  const auto stream = static_cast<cudaStream_t>(l.stream);
  const char* what = kBackward ? "SoftmaxBackwardPlan: kernel launch" : "SoftmaxPlan: kernel launch";
  switch (l.path) {
    case Path::Generic: return launch_generic<T, kBackward>(p, l.sm_count, stream, what);
    case Path::Split: return launch_split<T, kBackward>(p, stream, what);
    case Path::Block:
      if (l.block_threads == 1024) return launch_block<T, 1024, kBackward>(p, l.sm_count, l.arch, stream, what);
      break;
    case Path::Warp: break;
  }
  if constexpr (has_short_row_kernels(dtype_of_v<T>)) {
    if (l.path == Path::Block) {
      switch (l.block_threads) {
        case 128: return launch_block<T, 128, kBackward>(p, l.sm_count, l.arch, stream, what);
        case 256: return launch_block<T, 256, kBackward>(p, l.sm_count, l.arch, stream, what);
        case 512: return launch_block<T, 512, kBackward>(p, l.sm_count, l.arch, stream, what);
      }
    } else {
      switch (l.lane_elems) {
        case 4: return launch_warp<T, 4, kBackward>(p, l.sm_count, stream, what);
        case 8: return launch_warp<T, 8, kBackward>(p, l.sm_count, stream, what);
        case 16: return launch_warp<T, 16, kBackward>(p, l.sm_count, stream, what);
        case 32: return launch_warp<T, 32, kBackward>(p, l.sm_count, stream, what);
      }
    }
  }
  // Not reached from a plan: choose_path picks only kernels that exist.
  return Status(StatusCode::Unsupported, std::string(what) + ": no " + (l.path == Path::Warp ? "warp" : "block") +
                                             " kernel of this shape for " + std::string(dtype_name(l.dtype)));
}

template <class T>
Status launch_forward_typed(const Launch& l) {
  return launch_dir<T, false>(l);
}

template <class T>
Status launch_backward_typed(const Launch& l) {
  return launch_dir<T, true>(l);
}

}  // namespace baracuda::softmax::cuda::kern

// Reduction backward: the host-side description of one problem (built by
// backward.cu from BackwardLaunch, read by the planner and the typed
// launchers). Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/numeric.cuh"
#include "ops/reduce/launch.hpp"

namespace baracuda::reduce::cuda::bw {

template <class T>
using acc_t = dev::acc_t<T>;

// Operand slots of the elementwise layout.
enum EwSlot { kDx = 0, kDy = 1, kX = 2, kY = 3, kAux = 4, kEwOperands = 5 };
// Operand slots of the tile layout's kept dims (reduced dims carry x and dx only).
enum KeptSlot { kKx = 0, kKdx = 1, kKdy = 2, kKy = 3, kKeptOperands = 4 };

struct Problem {
  ReduceKind kind;
  DType dtype;
  int64_t numel;  // input elements
  int64_t M;      // slices (outputs)
  int64_t L;      // elements per slice
  int64_t correction;
  const void* dy;
  const void* x;
  const void* y;
  void* dx;
  void* ws;
  size_t ws_bytes;
  cudaStream_t stream;
  int sm_count;

  // Elementwise view: every operand coalesced together, innermost dim first.
  int ew_nd;
  int64_t ew_size[kMaxRank];
  int64_t ew_st[kEwOperands][kMaxRank];

  // Tile view: kept dims (coalesced across x, dx, dy, y) and reduced dims
  // (coalesced across x, dx), innermost first. A slice's index over the kept
  // dims (row-major) is also its index into the aux buffer.
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  bool row_order;  // reduced dims are the contiguous ones (else the kept dims are)
};

}  // namespace baracuda::reduce::cuda::bw

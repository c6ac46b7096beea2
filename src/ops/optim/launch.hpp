// Interface between the optim plans (plain C++) and their CUDA kernels
// (cuda/optim_launch.cu over the multi-tensor engine cuda/multi_tensor.cuh).
// The plans fill a ListLaunch: which op, the dtype, the role lists (views
// straight from the Args: no copies, no allocation) and the op's scalars; the
// launcher builds the kernel-parameter tables on its stack and launches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/optim/math.hpp"

namespace baracuda::optim::cuda {

inline constexpr int64_t kChunk = 8192;     // elements per (tensor, chunk) work item
inline constexpr int kThreads = 256;        // threads per block
inline constexpr int kBlocksPerSm = 8;      // the elementwise ops' grid: at most 8 blocks per SM
inline constexpr int kNormBlocks = 1024;    // the norms' fixed grid (deterministic partial slots)
inline constexpr int kMaxLists = 6;         // role lists per tensor (Adam: p, g, m, v, vmax, master)

// Tensors per launch (the kernel-parameter table, cuda/multi_tensor.cuh):
// sized so that the table and the op's scalars stay below 32 KiB.
inline constexpr int kTableTensors6 = 384;  // optimizers (6 role lists)
inline constexpr int kTableTensors1 = 960;  // utilities (1 list)

// Launches a list of n tensors needs with `per_launch` tensors per table
// (zero-size tensors take no slot).
inline int launches_for(const std::vector<Dims>& shapes, int per_launch) {
  int64_t used = 0;
  for (const Dims& s : shapes)
    if (shape_numel(s) > 0) ++used;
  return static_cast<int>((used + per_launch - 1) / per_launch);
}

enum class Op { Adam, Sgd, Lion, Norm, Clip, Unscale, Scale, Zero };

// One role list: mutable or read-only views, n of them (the descriptor's count).
struct RoleList {
  const TensorMut* mut = nullptr;
  const TensorRef* ref = nullptr;
  const void* data(int k) const { return mut ? mut[k].data : (ref ? ref[k].data : nullptr); }
};

struct ListLaunch {
  Op op = Op::Adam;
  DType dtype = DType::F32;  // params / the utility's tensors
  int n = 0;                 // tensors in the list
  const Dims* shapes = nullptr;
  // Role lists. Optimizers: 0 params, 1 grads, 2.. state (Adam: m, v, vmax;
  // SGD: buf; Lion: m), master last (index kMaster). Utilities: 0.
  RoleList lists[kMaxLists];
  static constexpr int kMaster = 5;

  // Optimizer options.
  bool master = false, stochastic = false;
  uint64_t seed = 0, offset = 0;
  double lr = 0.0;
  int64_t step = 1;
  const float* lr_ptr = nullptr;   // device_scalars
  float* step_ptr = nullptr;       // device_scalars (Adam): incremented first
  const float* grad_scale = nullptr;
  const float* found_inf_in = nullptr;
  AdamConsts adam;
  SgdConsts sgd;
  LionConsts lion;

  // Utilities.
  bool inf_norm = false;
  float max_norm = 1.0f;
  float scale = 1.0f;                  // Scale with a host scalar
  const float* scale_ptr = nullptr;    // Scale with a device scalar / Unscale's inv_scale
  float* norm_out = nullptr;           // Norm / Clip: F32 []
  float* found_inf_out = nullptr;      // Clip (optional) / Unscale
  void* workspace = nullptr;           // Norm / Clip: aligned, norm_workspace_bytes()

  int sm_count = 0;
  void* stream = nullptr;
};

// Norm / Clip workspace: up to 15 bytes of alignment pad, kNormBlocks f64
// partials per launch, then the f32 clip coefficient (16 bytes).
inline size_t norm_workspace_bytes(int launches) {
  return 16 + static_cast<size_t>(launches < 1 ? 1 : launches) * kNormBlocks * sizeof(double) + 16;
}

Status launch(const ListLaunch& l);

// Called by select() on a CUDA plan (under its device guard): the one-time
// queries of the kernels the op launches (occupancy), so that no run() -- one
// under stream capture included -- makes them first.
void prepare(Op op, DType dtype);

}  // namespace baracuda::optim::cuda

// Interface between ScatterReduceBackwardPlan (plain C++) and its CUDA kernels
// (src/ops/indexing/cuda/scatter_backward_launch.cu). The plan resolves dim
// and fills the strides of the actual views; the kernels only execute. The
// workspace is ScatterPlan's (gather_scatter_launch.hpp: scatter_workspace()
// with 4-byte values, here the positions).
#pragma once
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/indexing/gather_scatter_launch.hpp"

namespace baracuda::indexing::cuda {

struct ScatterBackwardLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int reduce = 1;                  // ScatterReduce
  bool include_self = true;
  bool want_self = true, want_src = true;
  bool src_larger = false;         // src_shape != index_shape: grad_src is zeroed first
  int rank = 1, dim = 0;
  int64_t n = 0;                   // numel(index)
  int64_t self_numel = 0, src_numel = 0;
  int64_t idx_shape[kMaxRank] = {}, self_shape[kMaxRank] = {}, src_shape[kMaxRank] = {};
  int64_t idx_stride[kMaxRank] = {};
  int64_t grad_stride[kMaxRank] = {}, self_stride[kMaxRank] = {}, result_stride[kMaxRank] = {};
  int64_t src_stride[kMaxRank] = {}, gself_stride[kMaxRank] = {}, gsrc_stride[kMaxRank] = {};
  const void* grad = nullptr;
  const void* index = nullptr;
  const void* self = nullptr;      // Prod / Amax / Amin
  const void* src = nullptr;       // Prod / Amax / Amin
  const void* result = nullptr;    // when the plan needs it
  void* grad_self = nullptr;       // when want_self
  void* grad_src = nullptr;        // when want_src
  void* workspace = nullptr;       // the aligned workspace: error word, then ScatterWorkspace's pieces
  ScatterWorkspace ws;             // scatter_workspace(n, self_numel, 4)
  void* stream = nullptr;
};

Status launch_scatter_backward(const ScatterBackwardLaunch& l);

}  // namespace baracuda::indexing::cuda

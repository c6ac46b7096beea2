// Interface between IndexGetPlan / IndexPutPlan (plain C++) and their CUDA
// kernels (cuda/advanced_launch.cu). The plan turns the indexing expression
// and the actual views into an AdvancedMap (every operand's strides over R's
// axes); the CPU reference walks the same map, the kernels only execute it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/indexing_advanced.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

// Position r of R (row-major) -> coordinates c over R's axes. Axis k of R is
// either a broadcast axis (axis_dim[k] = -1) or the slice of self's dim
// axis_dim[k]. Index tensor j (of self's dim dims[j], extent size[j]) is read
// at sum_k c[k] * idx_stride[j][k] (0 on sliced axes and broadcast axes).
struct AdvancedMap {
  int rank = 0;                                  // R's rank (0..8)
  int64_t shape[kMaxRank] = {};                  // R
  int64_t numel = 0;                             // numel(R)
  int axis_dim[kMaxRank] = {};                   // per R axis: the sliced self dim, or -1
  int n_idx = 0;                                 // indexed dims
  int dims[kMaxRank] = {};                       // self dim of index tensor j
  int64_t size[kMaxRank] = {};                   // self.size(dims[j])
  int64_t idx_stride[kMaxRank][kMaxRank] = {};   // [j][k]
  const void* idx[kMaxRank] = {};                // index tensor j's data
  int self_rank = 0;
  int64_t self_shape[kMaxRank] = {};
  int64_t self_numel = 0;
  int64_t self_rm_stride[kMaxRank] = {};         // self's row-major strides (put's keys)
};

// The put's workspace: put_workspace(n, self_numel) (launch.hpp).

struct AdvancedLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int elem_bytes = 4;                    // 1, 2, 4, 8 or 16: data moves as raw bits
  AdvancedMap m;
  int64_t x_stride[kMaxRank] = {};       // x / self, per self dim
  int64_t out_stride[kMaxRank] = {};     // get: out per R axis; put: out per self dim
  int64_t val_stride[kMaxRank] = {};     // put: values per R axis (0 where broadcast)
  const void* x = nullptr;               // x / self
  const void* values = nullptr;          // put
  void* out = nullptr;
  bool accumulate = false, in_place = false;
  void* workspace = nullptr;             // the aligned workspace: error word (then put's pieces)
  PutWorkspace ws;
  void* stream = nullptr;
};

Status launch_index_get(const AdvancedLaunch& l);
Status launch_index_put(const AdvancedLaunch& l);

}  // namespace baracuda::indexing::cuda

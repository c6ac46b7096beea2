// Interface between GatherPlan / ScatterPlan (plain C++) and their CUDA
// kernels (src/ops/indexing/cuda/gather_launch.cu, scatter_launch.cu). The
// plans resolve dim, fill the strides of the actual views and pre-round a
// scatter value to the dtype; the kernels only execute. The error word and
// its read-back are the embedding plans' (launch.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

struct GatherLaunch {
  int elem_bytes = 4;              // 1, 2, 4 or 8: gather copies raw elements
  DType index_dtype = DType::I64;
  int rank = 1, dim = 0;
  int64_t n = 0;                   // numel(index) = numel(out)
  int64_t size_dim = 0;            // x.size(dim): valid indices are [0, size_dim)
  int64_t shape[kMaxRank] = {};    // index / out shape
  int64_t x_stride[kMaxRank] = {}, idx_stride[kMaxRank] = {}, out_stride[kMaxRank] = {};
  const void* x = nullptr;
  const void* index = nullptr;
  void* out = nullptr;
  void* error_word = nullptr;      // the aligned workspace
  void* stream = nullptr;
};

// Byte offsets (after the error word) of the scatter's workspace pieces.
struct ScatterWorkspace {
  bool wide = false;  // 64-bit keys (numel(self) >= 2^32 - 1)
  size_t keys_in = 0, keys_out = 0, vals_in = 0, vals_out = 0, temp = 0, temp_bytes = 0, total = 0;
};
// value_bytes: the dtype's size (the sort carries each contribution's bits);
// rows / size_dim: index.size(dim) and self.size(dim), for the row path
// ("sorted.rows", an index constant along every other axis), which sorts rows
// (index value, position) pairs in the same pieces.
ScatterWorkspace scatter_workspace(int64_t n, int64_t self_numel, size_t value_bytes, int64_t rows = 0,
                                   int64_t size_dim = 0);

struct ScatterLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int reduce = 0;                  // ScatterReduce
  bool include_self = true;
  bool use_value = false;
  double value = 0.0;              // already rounded to dtype
  int64_t ivalue = 0;              // integer dtypes: the value (truncated, fits the dtype)
  bool in_place = false;           // out is self: no copy
  bool atomic = false;             // floats: reduce Sum only, opted in (require_deterministic = false): floating-point
                                   // atomics in dtype; i32 / i64: Sum / Amax / Amin always (integer atomics,
                                   // deterministic); no sort, no workspace beyond the error word
  bool rows = false;               // the sorted route's row path: index constant along every axis but dim
  int rank = 1, dim = 0;
  int64_t n = 0;                   // numel(index)
  int64_t self_numel = 0;
  int64_t idx_shape[kMaxRank] = {};
  int64_t idx_stride[kMaxRank] = {}, src_stride[kMaxRank] = {};
  int64_t self_shape[kMaxRank] = {};
  int64_t self_stride[kMaxRank] = {}, out_stride[kMaxRank] = {};
  const void* self = nullptr;
  const void* index = nullptr;
  const void* src = nullptr;
  void* out = nullptr;
  void* workspace = nullptr;       // the aligned workspace: error word, then ScatterWorkspace's pieces
  ScatterWorkspace ws;
  void* stream = nullptr;
};

Status launch_gather(const GatherLaunch& l);
Status launch_scatter(const ScatterLaunch& l);

}  // namespace baracuda::indexing::cuda

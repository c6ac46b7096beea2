// Interface between IndexSelectPlan / IndexUpdatePlan (plain C++) and their
// CUDA kernels (cuda/index_dim_*.cuh). The plan splits the actual views into
// [outer, S, inner] maps and chooses the vector path; the kernels execute it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/indexing.hpp"

namespace baracuda::indexing::cuda {

// The dims before `dim` (outer) or after it (inner), coalesced, with one
// stride set per operand: 0 self, 1 out, 2 source. A linear index over the
// map (row-major) gives each operand's element offset.
struct DimMap {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[3][kMaxRank] = {};
};

struct SelectLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int64_t outer = 0, S = 0, n = 0, inner = 0;
  DimMap outer_map, inner_map;       // operands 0 self, 1 out
  int64_t self_dim_stride = 0, out_dim_stride = 0, index_stride = 0;
  const void* self = nullptr;
  const void* index = nullptr;
  void* out = nullptr;
  bool vec = false;                  // inner rows copied as 16-byte vectors
  void* error_word = nullptr;        // workspace
  void* stream = nullptr;            // cudaStream_t
};

// Byte offsets (after the error word) of the update's workspace pieces.
struct UpdateWorkspace {
  size_t keys_in = 0, keys_out = 0, pos_in = 0, pos_out = 0, row_start = 0, temp = 0, temp_bytes = 0, total = 0;
};

struct UpdateLaunch {
  IndexUpdateMode mode = IndexUpdateMode::Add;
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  int64_t outer = 0, S = 0, n = 0, inner = 0;
  DimMap outer_map, inner_map;       // operands 0 self, 1 out, 2 source
  int64_t self_dim_stride = 0, out_dim_stride = 0, src_dim_stride = 0, index_stride = 0;
  double alpha = 1.0, value = 0.0;
  bool include_self = true;
  bool in_place = false;             // out is self: only the indexed slices are visited
  bool wrap_negative = false;        // Fill: an index in [-S, 0) counts from the end
  bool vec = false;                  // inner rows of self, out and source combined as 16-byte vectors
  const void* self = nullptr;
  const void* index = nullptr;
  const void* source = nullptr;
  void* out = nullptr;
  void* workspace = nullptr;         // the error word, then UpdateWorkspace's pieces
  UpdateWorkspace ws;
  void* stream = nullptr;
};

// Workspace layout for n indices into S slices (CUB's temporary storage size
// comes from the CUDA side; a build without the family's kernels gets 0).
UpdateWorkspace update_workspace(int64_t n, int64_t S);

Status launch_index_select(const SelectLaunch& l);
Status launch_index_update(const UpdateLaunch& l);

}  // namespace baracuda::indexing::cuda

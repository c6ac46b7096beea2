// Interface between the masked plans (NonzeroPlan, MaskedSelectPlan,
// MaskedScatterPlan; plain C++) and their one CUDA translation unit
// (cuda/masked_launch.cu). The plans bring every view to the row-major shape
// the predicate walks (stride 0 where a view broadcasts) and pre-round the
// fill value to the dtype's bits; the kernels only execute.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

// Byte offsets (after the error word) of the pieces of the masked plans'
// workspace, 256-byte aligned: positions [n] int32, the count (int32), CUB's
// temporary storage.
struct MaskedWorkspace {
  size_t positions = 0, count = 0, temp = 0, temp_bytes = 0, total = 0;
};
// n = the number of positions the predicate walks; pred_bytes = the size of
// the element the predicate reads (1 for a bool mask).
MaskedWorkspace masked_workspace(int64_t n, int pred_bytes);

enum class MaskedOp : uint8_t { Nonzero, Select, Scatter };

struct MaskedLaunch {
  MaskedOp op = MaskedOp::Nonzero;
  int rank = 0;                   // of the walked shape
  int64_t n = 0;                  // its numel (< 2^31)
  int64_t shape[kMaxRank] = {};
  // The predicate's operand (nonzero: x; select / scatter: the mask) through
  // strides over the walked shape; pred_float: compare without the sign bit.
  const void* pred = nullptr;
  int pred_bytes = 1;
  bool pred_float = false;
  int64_t pred_stride[kMaxRank] = {};
  // The data: x (select) / self (scatter) over the walked shape; out of
  // nonzero [m, rank] (out_stride[0..1]); out of select [m] (out_stride[0]);
  // out of scatter over the walked shape.
  int elem_bytes = 1;
  const void* data = nullptr;
  int64_t data_stride[kMaxRank] = {};
  void* out = nullptr;
  int64_t out_stride[kMaxRank] = {};
  int64_t capacity = 0;           // m (nonzero / select)
  uint64_t fill_bits = 0;         // the fill value's bits in the element (nonzero: int64)
  void* count = nullptr;          // I64 rank-0 (nonzero: required; select: optional; scatter: none)
  // Scatter: source [numel] through its own shape and strides; in_place: no copy.
  const void* source = nullptr;
  int source_rank = 0;
  int64_t source_numel = 0;
  int64_t source_shape[kMaxRank] = {}, source_stride[kMaxRank] = {};
  bool in_place = false;
  void* workspace = nullptr;      // aligned: the error word, then MaskedWorkspace's pieces
  MaskedWorkspace ws;
  void* stream = nullptr;
};

Status launch_masked(const MaskedLaunch& l);

}  // namespace baracuda::indexing::cuda

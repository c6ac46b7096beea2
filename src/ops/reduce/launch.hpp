// Interface between the reduction plans (plain C++) and the CUDA kernels
// (src/ops/reduce/cuda/*.cu). Only compiled in when BARACUDA_WITH_CUDA.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/ops/reduce.hpp"
#include "core/layout.hpp"

namespace baracuda::reduce::cuda {

// ---- forward ---------------------------------------------------------------
struct ForwardLaunch {
  ReduceKind kind;
  DType in_dtype;
  DType out_dtype;          // as ReducePlan::output_dtype()
  const void* x;            // points at element [0,...,0] of the input
  void* y;                  // points at element [0,...,0] of the output
  baracuda::detail::ReduceLayout layout;  // num_out > 0 guaranteed; red_numel may be 0
  int64_t correction;       // Var / Std
  void* ws;                 // device scratch (may be null when ws_bytes == 0)
  size_t ws_bytes;          // the plan's workspace_size(); decisions depend on it, never on more
  void* stream;             // cudaStream_t
  int sm_count;
  int arch;                 // sm_XY as XY, from the plan's cached device query
};

// Scratch the forward needs for a problem of this shape when the input is
// contiguous (used by ReducePlan::select). launch_forward must stay correct
// for ANY ws_bytes (it may only split less), so strided inputs still work.
size_t forward_workspace_bytes(ReduceKind kind, DType in_dtype, const baracuda::detail::ReduceLayout& contiguous_layout,
                               int sm_count);
// Name of the algorithm launch_forward uses for this layout ("row-block", ...).
std::string forward_variant(ReduceKind kind, DType in_dtype, const baracuda::detail::ReduceLayout& layout, int sm_count);
// The algorithm launch_forward(p) runs for these actual views and pointers
// (ReducePlan::sku_for): the layout re-derived from the strides, the vector
// width from the input's alignment, the split from the workspace.
std::string forward_variant_for(const ForwardLaunch& p);
Status launch_forward(const ForwardLaunch& p);

// ---- backward ----------------------------------------------------------------
// Every operand is described in the INPUT's rank: dy and y carry stride 0 on the
// reduced axes (they broadcast over the input shape).
struct BackwardLaunch {
  ReduceKind kind;          // one of the nine FP kinds
  DType dtype;              // dtype of dy, x, y, dx
  int rank;
  int64_t shape[kMaxRank];  // input shape (numel > 0 guaranteed)
  uint32_t axis_mask;       // reduced axes
  int64_t red_numel;        // elements per output (n)
  const void* dy; int64_t dy_stride[kMaxRank];
  const void* x;  int64_t x_stride[kMaxRank];   // null when the kind does not need it
  const void* y;  int64_t y_stride[kMaxRank];   // null when the kind does not need it
  void* dx;       int64_t dx_stride[kMaxRank];
  int64_t correction;
  void* ws;
  size_t ws_bytes;
  void* stream;
  int sm_count;
};

size_t backward_workspace_bytes(ReduceKind kind, DType dtype, const Dims& shape, uint32_t axis_mask, int sm_count);
Status launch_backward(const BackwardLaunch& p);

}  // namespace baracuda::reduce::cuda

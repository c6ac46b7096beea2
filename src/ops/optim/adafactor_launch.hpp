// Interface between AdafactorPlan (plain C++) and its CUDA kernels
// (cuda/adafactor_launch.cu), and the workspace layout both sides share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/optim/adafactor_math.hpp"

namespace baracuda::optim::adafactor {

inline int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }
// The narrowest column slice of the sums kernel (32 lanes x 16 bytes of f32).
inline constexpr int64_t kSliceColsMin = 128;
inline size_t round256(size_t b) { return (b + 255) / 256 * 256; }

// One parameter's scratch (byte offsets from its region's start; each piece
// 256-byte aligned). Factored: row partials [B*R, slices] (slices of 32
// 16-byte vectors: ceil(C / 128) at most, f32), column partials [B, chunks, C],
// divisors [B]; both: the ||p||^2 and ||u||^2 block partials and the step's
// scale s (one float, written by scale_kernel for large parameters).
struct TensorScratch {
  size_t row_sum = 0, col_part = 0, divisor = 0, p_part = 0, u_part = 0, scale = 0, bytes = 0;
};

// shape: the parameter's; B, R, C as the kernels see it (rank < 2: B = R = 1, C = n).
inline TensorScratch tensor_scratch(const Dims& shape) {
  TensorScratch s;
  const int64_t n = shape_numel(shape);
  const int64_t blocks = ceil_div64(n, kChunk);
  size_t at = 0;
  if (shape.rank >= 2) {
    const int64_t R = shape[shape.rank - 2], C = shape[shape.rank - 1];
    const int64_t B = R * C == 0 ? 0 : n / (R * C);
    s.row_sum = at, at += round256(static_cast<size_t>(B * R * ceil_div64(C, kSliceColsMin)) * 4);
    s.col_part = at, at += round256(static_cast<size_t>(B * ceil_div64(R, kColRows) * C) * 4);
    s.divisor = at, at += round256(static_cast<size_t>(B) * 4);
  }
  s.p_part = at, at += round256(static_cast<size_t>(blocks) * 4);
  s.u_part = at, at += round256(static_cast<size_t>(blocks) * 4);
  s.scale = at, at += 256;
  s.bytes = at;
  return s;
}

inline constexpr size_t kScalarBytes = 256;  // the device Scalars, first in the workspace

// The whole CUDA workspace: 256 bytes of alignment pad, the scalars, then the
// largest parameter's scratch.
inline size_t workspace_bytes(const std::vector<Dims>& shapes) {
  size_t most = 0;
  for (const Dims& s : shapes)
    if (shape_numel(s) > 0) most = most > tensor_scratch(s).bytes ? most : tensor_scratch(s).bytes;
  return 256 + kScalarBytes + most;
}

struct TensorLaunch {
  Dims shape;                    // the parameter's
  int64_t n = 0, B = 1, R = 1, C = 0;
  bool factored = false;
  const void* param_in = nullptr;  // dtype, contiguous
  void* param_out = nullptr;       // = param_in in place
  const void* grad = nullptr;
  const float* row_var_in = nullptr;  // factored: the state read ...
  const float* col_var_in = nullptr;
  float* row_var = nullptr;           // ... and written (= the input in place)
  float* col_var = nullptr;
  const float* variance_in = nullptr; // rank < 2
  float* variance = nullptr;
};

struct Launch {
  DType dtype = DType::F32;
  bool maximize = false;
  float eps1 = 0.f, eps1sq = 0.f;  // f32(eps1), f32(eps1 * eps1)
  double eps2 = 0.0, d = 1.0, beta2_decay = 0.0, weight_decay = 0.0;
  Scalars host;                    // !device_scalars
  bool device_scalars = false;
  const float* step_in = nullptr;  // device_scalars: step_out = step_in + 1 (the same tensor in place)
  float* step_out = nullptr;
  const float* lr_tensor = nullptr;
  std::vector<TensorLaunch> tensors;
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Copy> copies;        // out of place: states of empty parameters carried over
  void* workspace = nullptr;       // the caller's workspace (aligned to 256 bytes by the launch)
  void* stream = nullptr;
};

Status launch(const Launch& l);

}  // namespace baracuda::optim::adafactor

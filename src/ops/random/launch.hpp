// Interface between the random plans (plain C++) and their CUDA kernels
// (cuda/fill_launch.cu, cuda/dropout_launch.cu): the plans fill the views'
// shapes and strides, the transform parameters and the fast-path flags; the
// kernels only execute. Also used by the CPU reference (reference.cpp).
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/random/transform.hpp"

namespace baracuda::random::cuda {

// A row-major shape with one operand's strides: position p -> element offset.
struct FlatMap {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

struct FillLaunch {
  Gen gen = Gen::Uniform;
  DType dtype = DType::F32;
  FillParams prm;
  int64_t n = 0;
  void* out = nullptr;
  FlatMap out_map;
  bool vec = false;  // out contiguous and 16-byte aligned
  const void* p = nullptr;  // BernoulliTensor
  DType p_dtype = DType::F32;
  FlatMap p_map;
  uint64_t seed = 0, offset = 0;
  int64_t* offset_ptr = nullptr;  // device_offset: offset += *offset_ptr, then ++*offset_ptr
  void* stream = nullptr;
  int sm_count = 0;
};

struct DropoutLaunch {
  DType dtype = DType::F32;
  int64_t n = 0;
  uint32_t keep_thr = 0;    // ceil(p 2^24)
  float scale_f = 1.0f;     // f32 / f16 / bf16
  double scale = 1.0;       // f64
  bool zero = false;        // p == 1: out = 0
  const void* x = nullptr;  // forward x / backward dy
  void* out = nullptr;      // forward out / backward dx
  FlatMap x_map, out_map;
  bool vec = false;         // x and out contiguous and 16-byte aligned
  void* mask_out = nullptr;         // forward with save_mask
  const void* mask_in = nullptr;    // backward with use_mask
  int64_t mask_stride = 1;          // element stride of the mask (either)
  uint64_t seed = 0, offset = 0;
  int64_t* offset_ptr = nullptr;    // offset += *offset_ptr + offset_bias
  int64_t offset_bias = 0;          // forward 0, backward -1
  bool increment = false;           // forward with device_offset: ++*offset_ptr after
  bool backward = false;            // names DropoutBackwardPlan in errors
  void* stream = nullptr;
  int sm_count = 0;
};

inline FlatMap flat_map(const Dims& shape, const Dims& strides) {
  FlatMap m;
  m.rank = shape.rank;
  for (int i = 0; i < shape.rank; ++i) m.shape[i] = shape[i], m.stride[i] = strides[i];
  return m;
}

// "vec16" when the fast path applies, else "strided".
Status launch_fill(const FillLaunch& l);
Status launch_dropout(const DropoutLaunch& l);

}  // namespace baracuda::random::cuda

// Interface between TakePlan / PutPlan / OneHotPlan (plain C++) and their CUDA
// kernels (cuda/take_launch.cu). The plans wrap nothing: they fill the shapes
// and strides of the actual views, the element size and the fast-path flags;
// the kernels only execute. The error word is the family's (launch.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

// A row-major shape with one operand's strides: position p -> element offset.
struct FlatMap {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

struct TakeLaunch {
  int elem_bytes = 4;              // 1, 2, 4, 8 or 16: elements are copied as raw bits
  DType index_dtype = DType::I64;
  int64_t N = 0;                   // numel(x): valid indices are [-N, N)
  int64_t n = 0;                   // numel(index) = numel(out)
  FlatMap x;                       // x_shape, x's strides
  bool x_contiguous = false;       // flat index = element offset of x
  FlatMap index, out;              // index_shape with index's / out's strides
  const void* x_data = nullptr;
  const void* index_data = nullptr;
  void* out_data = nullptr;
  void* error_word = nullptr;      // the aligned workspace
  void* stream = nullptr;
};

// put_'s workspace: put_workspace(n, N) (launch.hpp).

struct PutLaunch {
  DType dtype = DType::F32;
  DType index_dtype = DType::I64;
  bool accumulate = false;
  bool in_place = false;           // out is self: no copy
  int64_t N = 0;                   // numel(self); N < 2^31
  int64_t n = 0;                   // numel(index) = numel(source); n < 2^31
  FlatMap self, out;               // self_shape with self's / out's strides
  FlatMap index, source;           // their own shapes and strides
  const void* self_data = nullptr;
  const void* index_data = nullptr;
  const void* source_data = nullptr;
  void* out_data = nullptr;
  void* workspace = nullptr;       // the aligned workspace: error word, then PutWorkspace's pieces
  PutWorkspace ws;
  void* stream = nullptr;
};

struct OneHotLaunch {
  int elem_bytes = 8;              // out's element size: 1, 2, 4, 8 or 16
  unsigned char one[16] = {};      // the bits of 1 in out's dtype (0 is all-zero bits in every dtype)
  DType index_dtype = DType::I64;
  int64_t C = 0;                   // num_classes >= 1
  int64_t rows = 0;                // numel(index_shape)
  FlatMap index;                   // index_shape, indices' strides
  FlatMap out_rows;                // index_shape, out's strides (the class axis is out_class_stride)
  int64_t out_class_stride = 1;
  bool vec = false;                // out contiguous: "fill" (a memset to zero, then the ones)
  const void* index_data = nullptr;
  void* out_data = nullptr;
  void* error_word = nullptr;
  void* stream = nullptr;
};

Status launch_take(const TakeLaunch& l);
Status launch_put(const PutLaunch& l);
Status launch_one_hot(const OneHotLaunch& l);

}  // namespace baracuda::indexing::cuda

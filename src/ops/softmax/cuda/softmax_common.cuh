// What every softmax kernel shares: the kernel parameters, 16-byte vector and
// element access, and the per-row math (the forward's special values and the
// backward's formulas, as documented in baracuda/ops/softmax.hpp).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/numeric.cuh"
#include "cuda/row_reduce.cuh"
#include "cuda/vector_io.cuh"
#include "ops/softmax/launch.hpp"

namespace baracuda::softmax::cuda::kern {

// Kernel arguments. Operand k: 0 output, 1 first input (x or y), 2 dy.
struct Params {
  void* out = nullptr;
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  int64_t len = 0, rows = 0;
  int64_t row_stride[kOperands] = {};  // fast paths: row r starts at r * row_stride[k]
  // Generic path: row coordinates over outer_shape (row-major) and element strides.
  int outer_rank = 0;
  int64_t outer_shape[kMaxRank] = {};
  int64_t outer_stride[kOperands][kMaxRank] = {};
  int64_t axis_stride[kOperands] = {};
  double scale = 1.0;
  int log = 0;
  int vec = 0;
  int64_t chunks = 0;       // split path
  void* workspace = nullptr;  // split path: rows x chunks partials of kPartialBytes
};

// ---- element access (cuda/vector_io.cuh) -----------------------------------------
using dev::load_elems;
using dev::store_elems;

// ---- row math -------------------------------------------------------------------
template <class Acc>
__device__ __forceinline__ Acc pos_inf() {
  return dev::highest_value<Acc>();
}

// The forward's output of one row from the row's (max, sum-exp) of v = scale * x.
template <class Acc>
struct ForwardRow {
  enum Mode { Normal, Masked, NaN };
  Mode mode;
  bool log;
  Acc max, inv_sum, lse;

  __device__ __forceinline__ static ForwardRow make(const dev::MaxSumExp<Acc>& s, bool log) {
    ForwardRow r;
    r.log = log;
    r.max = s.max;
    r.inv_sum = Acc(0);
    r.lse = Acc(0);
    if (s.sum != s.sum || s.max == pos_inf<Acc>()) {
      r.mode = NaN;  // a NaN in the row, or +inf (inf - inf, as PyTorch)
    } else if (s.max == dev::lowest_value<Acc>()) {
      r.mode = Masked;  // every value -inf: 0 probabilities (log: -inf)
    } else {
      r.mode = Normal;
      r.inv_sum = Acc(1) / s.sum;
      r.lse = s.max + dev::acc_log(s.sum);
    }
    return r;
  }
  // kFast (16-bit outputs): exp through the hardware exp2 (acc_exp_nonpos;
  // v - max <= 0), whose error is far below the output's rounding; f32 / f64
  // outputs use the accurate exp.
  template <bool kFast = false>
  __device__ __forceinline__ Acc out(Acc v) const {
    if (mode == Normal) {
      if (log) return v - lse;
      return (kFast ? dev::acc_exp_nonpos(v - max) : dev::acc_exp(v - max)) * inv_sum;
    }
    if (mode == Masked) return log ? dev::lowest_value<Acc>() : Acc(0);
    return dev::quiet_nan<Acc>();
  }
};

// Backward: the row sum's term and the gradient of one element.
template <class Acc>
__device__ __forceinline__ Acc backward_term(bool log, Acc y, Acc dy) {
  return log ? dy : dy * y;
}
template <class Acc>
__device__ __forceinline__ Acc backward_out(bool log, Acc scale, Acc sum, Acc y, Acc dy) {
  return log ? scale * (dy - dev::acc_exp(y) * sum) : scale * y * (dy - sum);
}

// The (max, sum-exp) of W values at once: their max first, then one exp per
// value, no branch per element (MaxSumExp::add rescales whenever the max
// grows). Same special values as add(): NaN never becomes the max and poisons
// the sum; all -inf gives max -inf.
template <class Acc, int W>
__device__ __forceinline__ dev::MaxSumExp<Acc> fold_vector(const Acc (&v)[W]) {
  Acc m = dev::lowest_value<Acc>();
#pragma unroll
  for (int w = 0; w < W; ++w) m = v[w] > m ? v[w] : m;
  Acc s = Acc(0);
#pragma unroll
  for (int w = 0; w < W; ++w) s += dev::MaxSumExp<Acc>::scale(v[w], m);
  return {m, s};
}

template <class Acc>
using MaxSumExpOp = dev::RowMaxSumExp<Acc>;
template <class Acc>
using SumOp = dev::RowSum<Acc>;

}  // namespace baracuda::softmax::cuda::kern

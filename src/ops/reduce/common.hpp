// Pieces shared by ReducePlan and ReduceBackwardPlan: descriptor validation,
// backend choice, and mapping output-shaped views into the input's rank.
#pragma once
#include <string>

#include "baracuda/ops/reduce.hpp"
#include "core/dispatch.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"

namespace baracuda::reduce::detail {

inline constexpr baracuda::detail::Family kFamily{"reduction", "reduce", BARACUDA_KERNELS_REDUCE};

struct Validated {
  ReduceDescriptor desc;  // axes normalised: sorted, non-negative
  uint32_t mask = 0;
  Dims out_shape;
  int64_t red_numel = 1;
};
// Checks the descriptor for `plan` ("ReducePlan", ...) and fills `v`.
Status validate(const char* plan, const ReduceDescriptor& d, Validated* v);

// The dtypes with a gradient (and every floating reduction kind).
inline bool is_gradient_dtype(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

// View of an output-shaped tensor (y, dy) in the input's rank: extent 1 and
// stride 0 on reduced axes, same extents/strides on kept axes.
template <class View>
View to_input_rank(const View& v, const Dims& in_shape, uint32_t mask, bool keepdim) {
  View r = v;
  r.shape = Dims::of_rank(in_shape.rank);
  r.strides = Dims::of_rank(in_shape.rank);
  int j = 0;
  for (int i = 0; i < in_shape.rank; ++i) {
    if (mask & (1u << i)) {
      r.shape[i] = 1;
      r.strides[i] = 0;
      if (keepdim) ++j;
    } else {
      r.shape[i] = v.shape[j];
      r.strides[i] = v.strides[j];
      ++j;
    }
  }
  return r;
}

}  // namespace baracuda::reduce::detail

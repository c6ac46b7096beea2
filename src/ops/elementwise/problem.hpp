// The elementwise problem as select() resolved it, and one call's operands:
// what the CPU reference and the CUDA launcher both consume.
#pragma once
#include <cstdint>

#include "baracuda/ops/elementwise.hpp"
#include "core/elementwise_layout.hpp"
#include "ops/elementwise/functors.hpp"

namespace baracuda::elementwise {

using Problem = baracuda::detail::ElementwiseResolved;

// The functors' parameters of a problem.
inline Params params_of(const Problem& p) {
  Params q;
  for (int i = 0; i < 3; ++i) q.p[i] = p.params[i];
  q.bits = p.bits;
  q.has = p.has;
  return q;
}

// Per call. in[k] is null for a scalar or absent operand; a scalar's value is
// in value_f[k] (compute F32 / F64) or value_i[k] (compute I64). out[m] is
// output m (layout operand m); null for an output not written (grad 3 / 4).
struct Call {
  detail::EwLayout layout;
  const void* in[4] = {nullptr, nullptr, nullptr, nullptr};
  double value_f[4] = {0, 0, 0, 0};
  int64_t value_i[4] = {0, 0, 0, 0};
  void* out[3] = {nullptr, nullptr, nullptr};
};

// Output m's dtype.
inline DType out_dtype_of(const Problem& p, int m) { return p.grad >= 3 ? p.grad_dtype[m] : p.out; }

// The paths of the CUDA engine (variant names in the SKU).
using Path = baracuda::detail::EwPath;
const char* path_name(Path p);

// UnaryOp::Copy into another dtype (a cast).
bool is_cast(const Problem& p);
// True when every tensor input has the common dtype (where's condition: bool)
// and the output the op's natural result dtype, in a dtype the typed kernels
// are built for: the typed paths apply; otherwise the generic path (which
// converts every operand at run time) runs.
bool typed_kernels_apply(const Problem& p);
// The path the CUDA launcher takes for this call's layout and pointers:
// Generic64 unless the typed kernels apply, else baracuda::detail::choose_ew_path.
Path choose_path(const Problem& p, const Call& c);
// Elements per thread of the vector path: 16 bytes of the common dtype (of
// the narrower of the two dtypes of a cast).
int vec_width(const Problem& p);
// The natural output dtype of the op (bool for predicates, else common).
DType natural_out(const Problem& p);

}  // namespace baracuda::elementwise

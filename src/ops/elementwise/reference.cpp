// CPU reference: one strided loop (an odometer over the coalesced layout) per
// op, instantiated per op and compute type (double / int64) from the op
// tables, so the per-element work is the functor and the conversions only.
// The operand gradients of binary / ternary ops (grad 3 / 4) write up to
// three outputs from one pass.
#include "ops/elementwise/reference.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "core/int_math.hpp"
#include "ops/elementwise/convert.hpp"
#include "ops/elementwise/functors_grad.hpp"

namespace baracuda::elementwise::ref {
namespace {

using baracuda::detail::load_f;
using baracuda::detail::load_i;

// Stores a computed value into the output element with the documented conversions.
inline void store(void* base, DType t, int64_t off, double v) {
  if (is_floating_point(t)) baracuda::detail::store_f(base, t, off, v);
  else if (t == DType::Bool) baracuda::detail::store_i(base, t, off, v != 0 ? 1 : 0);  // NaN is true
  else baracuda::detail::store_i(base, t, off, float_to_int64(v));
}
inline void store(void* base, DType t, int64_t off, int64_t v) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[off] = static_cast<float>(v); return;
    case DType::F64: static_cast<double*>(base)[off] = static_cast<double>(v); return;
    case DType::F16: static_cast<half*>(base)[off] = half(static_cast<float>(v)); return;
    case DType::BF16: static_cast<bfloat16*>(base)[off] = bfloat16(static_cast<float>(v)); return;
    default: baracuda::detail::store_i(base, t, off, v);
  }
}
inline void store(void* base, DType t, int64_t off, bool v) { store(base, t, off, static_cast<int64_t>(v)); }

template <class C>
inline C load(const Problem& p, const Call& c, int k, int64_t off) {
  if constexpr (std::is_integral_v<C>) return c.in[k] ? load_i(c.in[k], p.in_dtype[k], off) : c.value_i[k];
  else return c.in[k] ? load_f(c.in[k], p.in_dtype[k], off) : c.value_f[k];
}

// fn(values) for every element of the layout, in chunks on a few threads.
template <class C, class Fn>
Status strided_loop(const Problem& p, const Call& c, Fn fn) {
  const auto& L = c.layout;
  const int n_ops = L.operands;
  constexpr int64_t kChunk = 4096;
  baracuda::detail::parallel_for(baracuda::detail::ceil_div(L.numel, kChunk), kChunk * 16, [&](int64_t chunk) {
    const int64_t begin = chunk * kChunk, end = std::min(L.numel, begin + kChunk);
    int64_t idx[kMaxRank] = {};
    int64_t off[baracuda::detail::kEwMaxOperands] = {};
    int64_t rem = begin;
    for (int d = L.rank - 1; d >= 0; --d) {
      idx[d] = rem % L.shape[d];
      rem /= L.shape[d];
      for (int k = 0; k < n_ops; ++k) off[k] += idx[d] * L.stride[k][d];
    }
    const int M = L.outputs;
    for (int64_t i = begin; i < end; ++i) {
      C v[4] = {};
      for (int k = 0; k < p.arity; ++k) v[k] = load<C>(p, c, k, off[M + k]);
      const auto r = fn(v);
      if constexpr (std::is_arithmetic_v<decltype(r)>) {
        store(c.out[0], p.out, off[0], r);
      } else {  // several outputs (the operand gradients): the ones written
        for (int m = 0; m < M; ++m)
          if (c.out[m] != nullptr) store(c.out[m], p.grad_dtype[m], off[m], r.v[m]);
      }
      for (int d = L.rank - 1; d >= 0; --d) {
        ++idx[d];
        for (int k = 0; k < n_ops; ++k) off[k] += L.stride[k][d];
        if (idx[d] < L.shape[d]) break;
        for (int k = 0; k < n_ops; ++k) off[k] -= L.stride[k][d] * L.shape[d];
        idx[d] = 0;
      }
    }
  });
  return Status::ok();
}

Status not_computed(const char* what) {
  return baracuda::detail::invalid("elementwise reference", "op ", what, " reached a compute type it has no functor for");
}

template <UnaryOp Op, class C>
Status run_unary(const Problem& p, const Call& c) {
  if constexpr (!computes_in(Op, std::is_integral_v<C>)) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    return strided_loop<C>(p, c, [&](const C* v) { return fn::unary<Op, C>(v[0], q); });
  }
}
template <BinaryOp Op, class C>
Status run_binary(const Problem& p, const Call& c) {
  if constexpr (!computes_in(Op, std::is_integral_v<C>)) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    return strided_loop<C>(p, c, [&](const C* v) { return fn::binary<Op, C>(v[0], v[1], q); });
  }
}
template <TernaryOp Op, class C>
Status run_ternary(const Problem& p, const Call& c) {
  if constexpr (!computes_in(Op, std::is_integral_v<C>)) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    return strided_loop<C>(p, c, [&](const C* v) { return fn::ternary<Op, C>(v[0], v[1], v[2], q); });
  }
}

template <UnaryOp Op, class C>
Status run_unary_grad(const Problem& p, const Call& c) {
  if constexpr (std::is_integral_v<C> || !has_gradient(Op)) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    if (p.grad == 2) return strided_loop<C>(p, c, [&](const C* v) { return fn::unary_grad_from_y<Op, C>(v[0], v[1], q); });
    return strided_loop<C>(p, c, [&](const C* v) { return fn::unary_grad<Op, C>(v[0], v[1], q); });
  }
}

template <BinaryOp Op, class C>
Status run_binary_grad(const Problem& p, const Call& c) {
  if constexpr (std::is_integral_v<C> || !has_gradient(Op)) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    return strided_loop<C>(p, c, [&](const C* v) { return fn::binary_grad<Op, C>(v[0], v[1], v[2], q); });
  }
}
template <TernaryOp Op, class C>
Status run_ternary_grad(const Problem& p, const Call& c) {
  if constexpr (std::is_integral_v<C>) return not_computed(op_name(Op));
  else {
    const Params q = params_of(p);
    return strided_loop<C>(p, c, [&](const C* v) { return fn::ternary_grad<Op, C>(v[0], v[1], v[2], v[3], q); });
  }
}

template <class C>
Status dispatch(const Problem& p, const Call& c) {
  if (p.grad == 3) {
    switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case BinaryOp::E: return run_binary_grad<BinaryOp::E, C>(p, c);
      BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
    return not_computed("?");
  }
  if (p.grad == 4) {
    switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case TernaryOp::E: return run_ternary_grad<TernaryOp::E, C>(p, c);
      BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
    return not_computed("?");
  }
  if (p.grad != 0) {
    switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case UnaryOp::E: return run_unary_grad<UnaryOp::E, C>(p, c);
      BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
    return not_computed("?");
  }
  switch (p.arity) {
    case 1:
      switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case UnaryOp::E: return run_unary<UnaryOp::E, C>(p, c);
        BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
      }
      break;
    case 2:
      switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case BinaryOp::E: return run_binary<BinaryOp::E, C>(p, c);
        BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
      }
      break;
    case 3:
      switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case TernaryOp::E: return run_ternary<TernaryOp::E, C>(p, c);
        BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
      }
      break;
  }
  return not_computed("?");
}

}  // namespace

Status run(const Problem& p, const Call& c) {
  if (c.layout.numel == 0) return Status::ok();
  return p.compute == DType::I64 ? dispatch<int64_t>(p, c) : dispatch<double>(p, c);
}

}  // namespace baracuda::elementwise::ref

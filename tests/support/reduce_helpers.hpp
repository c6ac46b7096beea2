// Helpers for driving the reduction plans from tests: descriptors, running a
// plan on host storage with arbitrary layouts, and value expectations.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::ReduceArgs;
using baracuda::ReduceBackwardArgs;
using baracuda::ReduceBackwardPlan;
using baracuda::ReduceDescriptor;
using baracuda::ReduceKind;
using baracuda::ReducePlan;
using baracuda::ReduceToArgs;
using baracuda::ReduceToDescriptor;
using baracuda::ReduceToPlan;
using baracuda::Status;
using baracuda::StatusCode;
using baracuda::Stream;
using baracuda::Workspace;

inline constexpr ReduceKind kAllKinds[] = {ReduceKind::Sum,  ReduceKind::Mean,      ReduceKind::Max, ReduceKind::Min,
                                           ReduceKind::Prod, ReduceKind::Norm2,     ReduceKind::LogSumExp,
                                           ReduceKind::Var,  ReduceKind::Std,       ReduceKind::ArgMax,
                                           ReduceKind::ArgMin};
inline constexpr ReduceKind kGradKinds[] = {ReduceKind::Sum,   ReduceKind::Mean,      ReduceKind::Max,
                                            ReduceKind::Min,   ReduceKind::Prod,      ReduceKind::Norm2,
                                            ReduceKind::LogSumExp, ReduceKind::Var,   ReduceKind::Std};
inline constexpr DType kFpTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline bool int_capable(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Prod || k == ReduceKind::Max || k == ReduceKind::Min ||
         k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}
inline bool is_arg(ReduceKind k) { return k == ReduceKind::ArgMax || k == ReduceKind::ArgMin; }
inline bool needs_element(ReduceKind k) {
  return k == ReduceKind::Max || k == ReduceKind::Min || k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}
inline std::string kname(ReduceKind k) { return baracuda::reduce_kind_name(k); }
inline std::string tname(DType t) { return std::string(baracuda::dtype_name(t)); }

// The output dtype the documentation promises.
inline DType expected_out_dtype(ReduceKind k, DType in) {
  if (is_arg(k)) return DType::I64;
  if (baracuda::is_integral(in) && (k == ReduceKind::Sum || k == ReduceKind::Prod)) return DType::I64;
  return in;
}

inline ReduceDescriptor make_desc(ReduceKind k, DType t, Dims shape, Dims axes, bool keepdim = false,
                                  int64_t correction = 1) {
  ReduceDescriptor d;
  d.kind = k;
  d.dtype = t;
  d.shape = shape;
  d.axes = axes;
  d.keepdim = keepdim;
  d.correction = correction;
  return d;
}

// Result of one forward run on the CPU.
struct Fwd {
  Status st;
  Dims shape;
  DType dtype = DType::F32;
  std::vector<double> y;    // logical output values as double
  std::vector<int64_t> yi;  // logical output values as int64 (integer outputs)
};

// Runs a CPU ReducePlan on x (storage + layout) into a poisoned output of
// layout `yl` (contiguous by default); checks that the output's gaps keep the
// poison; returns the logical output.
inline Fwd cpu_forward(const ReduceDescriptor& d, const HostBuffer& x, const Layout& xl,
                       const std::optional<Layout>& yl_opt = std::nullopt) {
  Fwd r;
  auto plan = ReducePlan::select(Stream::cpu(), d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  r.shape = plan->output_shape();
  r.dtype = plan->output_dtype();
  const Layout yl = yl_opt ? *yl_opt : contiguous(r.shape);
  HostBuffer y(r.dtype, yl.storage);
  y.poison();
  ReduceArgs a{view(x, xl), view_mut(y, yl)};
  r.st = plan->run(Stream::cpu(), Workspace::none(), a);
  if (!r.st) return r;
  const std::string gaps = check_gaps(y, yl, poison_byte(r.dtype));
  EXPECT_TRUE(gaps.empty()) << gaps;
  r.y = gather(y, yl);
  if (!is_fp(r.dtype)) r.yi = gather_i64(y, yl);
  return r;
}
// Logical x values, stored contiguously in d.dtype.
inline Fwd cpu_forward(const ReduceDescriptor& d, const std::vector<double>& x) {
  const HostBuffer xb = host_from(d.dtype, x);
  return cpu_forward(d, xb, contiguous(d.shape));
}
inline Fwd cpu_forward_i64(const ReduceDescriptor& d, const std::vector<int64_t>& x) {
  const HostBuffer xb = host_from_i64(d.dtype, x);
  return cpu_forward(d, xb, contiguous(d.shape));
}

// Result of one backward run on the CPU.
struct Bwd {
  Status st;
  std::vector<double> dx;  // logical dx values
};

// Runs a CPU ReduceBackwardPlan on the given views into a poisoned dx of
// layout `dxl` (contiguous by default); checks dx's gaps keep the poison.
inline Bwd cpu_backward_views(const ReduceDescriptor& d, const TensorRef& dy, const TensorRef& x, const TensorRef& y,
                              const std::optional<Layout>& dxl_opt = std::nullopt) {
  Bwd r;
  auto plan = ReduceBackwardPlan::select(Stream::cpu(), d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const Layout dxl = dxl_opt ? *dxl_opt : contiguous(d.shape);
  HostBuffer dx(d.dtype, dxl.storage);
  dx.poison();
  // x and y only where the kind reads them (giving one it does not read is an error).
  const TensorRef xs = plan->needs_x() ? x : TensorRef(), ys = plan->needs_y() ? y : TensorRef();
  r.st = plan->run(Stream::cpu(), Workspace::none(), ReduceBackwardArgs{dy, xs, ys, view_mut(dx, dxl)});
  if (!r.st) return r;
  const std::string gaps = check_gaps(dx, dxl, poison_byte(d.dtype));
  EXPECT_TRUE(gaps.empty()) << gaps;
  r.dx = gather(dx, dxl);
  return r;
}

// Output shape of a descriptor (as ReducePlan reports it).
inline Dims reduced_shape(const ReduceDescriptor& d) {
  auto p = ReducePlan::select(Stream::cpu(), d);
  return p ? p->output_shape() : Dims();
}

// Contiguous convenience: x / y may be null (not passed).
inline Bwd cpu_backward(const ReduceDescriptor& d, const std::vector<double>& dy, const std::vector<double>* x,
                        const std::vector<double>* y) {
  const Dims os = reduced_shape(d);
  const HostBuffer dyb = host_from(d.dtype, dy);
  const HostBuffer xb = x ? host_from(d.dtype, *x) : HostBuffer();
  const HostBuffer yb = y ? host_from(d.dtype, *y) : HostBuffer();
  const TensorRef xv = x ? view(xb, contiguous(d.shape)) : TensorRef();
  const TensorRef yv = y ? view(yb, contiguous(os)) : TensorRef();
  return cpu_backward_views(d, view(dyb, contiguous(os)), xv, yv);
}

// One unit in the last place (relative) of each dtype: the tolerance for a
// value the reference computes in double and rounds once to the dtype.
inline double ulp_rel(DType t) {
  switch (t) {
    case DType::F64: return 1e-14;
    case DType::F32: return 1.2e-7;
    case DType::F16: return 9.8e-4;
    case DType::BF16: return 7.9e-3;
    default: return 0;
  }
}

// Element-wise expectation: NaN must be NaN, infinities exact, finite values
// within rtol * |expected| (exact when rtol == 0).
inline void expect_values(const Fwd& r, const Dims& shape, const std::vector<double>& expected, double rtol = 0) {
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  ASSERT_EQ(r.shape, shape) << "output shape";
  ASSERT_EQ(r.y.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const double g = r.y[i], e = expected[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": expected NaN, got " << g;
    } else if (std::isinf(e) || rtol == 0) {
      EXPECT_EQ(g, e) << "element " << i;
    } else {
      EXPECT_NEAR(g, e, rtol * std::fabs(e)) << "element " << i;
    }
  }
}
inline void expect_ints(const Fwd& r, const Dims& shape, const std::vector<int64_t>& expected) {
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  ASSERT_EQ(r.shape, shape) << "output shape";
  ASSERT_EQ(r.yi.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r.yi[i], expected[i]) << "element " << i;
}

// Status expectation: code and a substring of the message.
#define BT_EXPECT_STATUS(status_expr, code_, substr_)                                                         \
  do {                                                                                                        \
    const ::baracuda::Status _bt_st = (status_expr);                                                          \
    EXPECT_EQ(_bt_st.code(), (code_)) << _bt_st.to_string();                                                  \
    EXPECT_NE(_bt_st.message().find(substr_), std::string::npos)                                              \
        << "message \"" << _bt_st.message() << "\" lacks \"" << (substr_) << "\"";                            \
  } while (0)

}  // namespace bt

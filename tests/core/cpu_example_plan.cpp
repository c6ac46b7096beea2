// The "adding a plan" walkthrough of docs/ARCHITECTURE.md, compiled and tested:
// a complete plan (y = alpha * x over any strides, f32/f64) on the plan shell.
// Everything a real family adds beyond this is its kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "core/plan_shell.hpp"

namespace example {
using namespace baracuda;

// ---- the public header part: descriptor, args, plan ----------------------------
struct ScaleDescriptor {
  DType dtype = DType::F32;
  Dims shape;
  double alpha = 1.0;
};
struct ScaleArgs {
  TensorRef x;
  TensorMut y;  // may be x itself (in place)
};
class ScalePlan : public PlanBase {
 public:
  static Result<ScalePlan> select(const Stream& stream, const ScaleDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ScaleArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ScaleArgs& args) const;
  const ScaleDescriptor& descriptor() const { return desc_; }

 private:
  ScaleDescriptor desc_;
};

// ---- the plan.cpp part: descriptor rules, argument list, two dispatch calls -----
Result<ScalePlan> ScalePlan::select(const Stream& stream, const ScaleDescriptor& d, const PlanPreference& pref) {
  if (!dtype_in(d.dtype, {DType::F32, DType::F64}))
    return detail::unsupported("ScalePlan", "dtype ", d.dtype, " is not supported (f32, f64)");
  BARACUDA_RETURN_IF_ERROR(detail::check_shape("ScalePlan", "shape", d.shape));
  if (!std::isfinite(d.alpha)) return detail::invalid("ScalePlan", "alpha ", d.alpha, " must be finite");
  ScalePlan plan;
  plan.desc_ = d;
  auto be = detail::setup_plan(plan, "ScalePlan", detail::Family{"scale", "example", true}, stream, pref, d.dtype,
                               "example.scale");
  if (!be) return be.status();
  return plan;
}

namespace {
detail::ArgCheck check_args(const ScalePlan& p, const ScaleArgs& a) {
  const ScaleDescriptor& d = p.descriptor();
  detail::ArgCheck c(p.name(), p.device());
  c.input("x", a.x, d.dtype, d.shape).output("y", a.y, d.dtype, d.shape).allow_in_place("y", "x").disjoint();
  return c;
}
}  // namespace

Status ScalePlan::can_implement(const ScaleArgs& a) const { return check_args(*this, a).status(); }

Status ScalePlan::run(const Stream& stream, Workspace ws, const ScaleArgs& a) const {
  return detail::run_plan(
      *this, stream, ws, check_args(*this, a),
      [&] {  // CPU reference: an odometer over any strides
        const int r = desc_.shape.rank;
        std::vector<int64_t> idx(static_cast<size_t>(r), 0);
        const size_t es = dtype_size(desc_.dtype);
        for (int64_t n = 0; n < a.y.numel(); ++n) {
          int64_t ox = 0, oy = 0;
          for (int i = 0; i < r; ++i) ox += idx[i] * a.x.strides[i], oy += idx[i] * a.y.strides[i];
          const auto* px = static_cast<const char*>(a.x.data) + ox * static_cast<int64_t>(es);
          auto* py = static_cast<char*>(a.y.data) + oy * static_cast<int64_t>(es);
          if (desc_.dtype == DType::F32) *reinterpret_cast<float*>(py) = static_cast<float>(desc_.alpha * *reinterpret_cast<const float*>(px));
          else *reinterpret_cast<double*>(py) = desc_.alpha * *reinterpret_cast<const double*>(px);
          for (int i = r - 1; i >= 0 && ++idx[i] == desc_.shape[i]; --i) idx[i] = 0;
        }
        return Status::ok();
      },
      [&] { return detail::unsupported(name(), "the example has no CUDA kernel"); });
}
}  // namespace example

namespace {
using namespace baracuda;
using example::ScaleArgs, example::ScaleDescriptor, example::ScalePlan;

TEST(ExamplePlan, ScalesAnyStridesAndFollowsTheContract) {
  ScaleDescriptor d;
  d.shape = {2, 3};
  d.alpha = -2.0;
  auto plan = ScalePlan::select(Stream::cpu(), d).value();
  EXPECT_EQ(plan.sku().op, "example.scale");
  EXPECT_EQ(plan.sku().variant, "reference");
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6, NAN);
  ScaleArgs a;
  a.x = TensorRef(x.data(), DType::F32, Device::cpu(), {2, 3}, {1, 2}, 6);  // transposed view
  a.y = TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {2, 3});
  ASSERT_TRUE(plan.run(Stream::cpu(), Workspace::none(), a).is_ok());
  EXPECT_EQ(y, (std::vector<float>{-2, -6, -10, -4, -8, -12}));
  // In place is allowed, a partial overlap is not.
  a.y = TensorMut::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3});
  a.x = a.y;
  EXPECT_TRUE(plan.run(Stream::cpu(), Workspace::none(), a).is_ok());
  a.y = TensorMut(x.data(), DType::F32, Device::cpu(), {2, 3}, {1, 2}, 6);
  const Status st = plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_NE(st.message().find("ScalePlan: y partially overlaps x"), std::string::npos) << st.message();
  d.dtype = DType::I32;
  EXPECT_EQ(ScalePlan::select(Stream::cpu(), d).status().code(), StatusCode::Unsupported);
}
}  // namespace

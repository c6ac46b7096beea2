// ScaledMatmulPlan (fp8, torch._scaled_mm) on the CPU:
//   * the reference against a naive model written here (double, one rounding
//     into the output dtype) for every supported pair of fp8 input dtypes,
//     every output dtype, per-tensor and row-wise scales, bias and every
//     activation; strided views (column-major a, row-major b, row scales with
//     stride 2: the CPU takes any layout); K = 0 (out = act(bias)); M = 0;
//   * every validation rule of the header, one test each (StatusCode + text);
//   * fast_accum does not change the (exact) CPU result; the SKU.
// Tolerances relative to ||ref||_2 (bt::rel_error), for two double
// computations rounded once: they can differ only where the two double sums
// round to different neighbours, one unit of the output dtype in the last
// place on an element: f32 1e-7, f16 1e-3, bf16 8e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "gemm/gemm_oracle.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

struct Case {
  DType at = DType::F8E4M3, bt_ = DType::F8E4M3, out = DType::BF16;
  int64_t m = 7, k = 33, n = 5;
  Fp8Scaling scaling = Fp8Scaling::Tensor;
  bool bias = false;
  GemmActivation act = GemmActivation::None;
  bool fast_accum = false;
  bool strided = false;  // a column-major, b row-major with padding, row scales with stride 2
};

std::string name(const Case& c) {
  return std::string(dtype_name(c.at)) + "x" + std::string(dtype_name(c.bt_)) + "->" + std::string(dtype_name(c.out)) +
         " [" + std::to_string(c.m) + "," + std::to_string(c.k) + "," + std::to_string(c.n) + "] " +
         (c.scaling == Fp8Scaling::Row ? "row" : "tensor") + (c.bias ? " +bias " : " ") + gemm_activation_name(c.act) +
         (c.strided ? " strided" : "") + (c.fast_accum ? " fast-accum" : "");
}

ScaledMatmulDescriptor desc_of(const Case& c) {
  ScaledMatmulDescriptor d;
  d.a_dtype = c.at;
  d.b_dtype = c.bt_;
  d.out_dtype = c.out;
  d.a_shape = Dims{c.m, c.k};
  d.b_shape = Dims{c.k, c.n};
  d.scaling = c.scaling;
  d.has_bias = c.bias;
  d.activation = c.act;
  d.fast_accum = c.fast_accum;
  return d;
}

double tol_of(DType t) { return t == DType::F32 ? 1e-7 : t == DType::F16 ? 1e-3 : 8e-3; }

::testing::AssertionResult check(const Case& c) {
  auto plan = ScaledMatmulPlan::select(kCpu, desc_of(c));
  if (!plan) return ::testing::AssertionFailure() << name(c) << ": select: " << plan.status().to_string();
  bt::Rng rng(bt::fresh_seed(name(c)));
  const bool row = c.scaling == Fp8Scaling::Row;
  const auto av = bt::random_values(c.at, c.m * c.k, rng, -3, 3), bv = bt::random_values(c.bt_, c.k * c.n, rng, -3, 3);
  const auto sav = bt::random_values(DType::F32, row ? c.m : 1, rng, 0.25, 2.0);
  const auto sbv = bt::random_values(DType::F32, row ? c.n : 1, rng, 0.25, 2.0);
  const auto biasv = bt::random_values(c.out, c.n, rng, -2, 2);

  // The model: out[i, j] = act(sa * sb * sum a b + bias), rounded once.
  std::vector<double> want(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < c.k; ++k) s += av[i * c.k + k] * bv[k * c.n + j];
      double pre = s * sav[row ? i : 0] * sbv[row ? j : 0] + (c.bias ? biasv[j] : 0.0);
      want[i * c.n + j] = bt::round_to(c.out, gemm_oracle::act(c.act, pre));
    }

  const bt::Layout La = c.strided ? bt::transposed(Dims{c.m, c.k}) : bt::contiguous(Dims{c.m, c.k});
  const bt::Layout Lb = c.strided ? bt::padded(Dims{c.k, c.n}) : bt::contiguous(Dims{c.k, c.n});
  bt::Layout Lsa = bt::contiguous(plan->a_scale_shape()), Lsb = bt::contiguous(plan->b_scale_shape());
  if (c.strided && row) {
    Lsa = bt::every_other(plan->a_scale_shape());
    Lsb = bt::every_other(plan->b_scale_shape());
  }
  const bt::Layout Lout = c.strided ? bt::padded(plan->out_shape()) : bt::contiguous(plan->out_shape());
  auto store = [](DType t, const bt::Layout& L, const std::vector<double>& v) {
    bt::HostBuffer h(t, std::max<int64_t>(L.storage, 1));
    h.poison();
    bt::scatter(h, L, v);
    return h;
  };
  const bt::HostBuffer ah = store(c.at, La, av), bh = store(c.bt_, Lb, bv), sah = store(DType::F32, Lsa, sav),
                       sbh = store(DType::F32, Lsb, sbv), biash = store(c.out, bt::contiguous(Dims{c.n}), biasv);
  bt::HostBuffer oh(c.out, std::max<int64_t>(Lout.storage, 1));
  oh.poison();
  ScaledMatmulArgs args;
  args.a = bt::view(ah, La);
  args.b = bt::view(bh, Lb);
  args.a_scale = bt::view(sah, Lsa);
  args.b_scale = bt::view(sbh, Lsb);
  if (c.bias) args.bias = bt::view(biash, bt::contiguous(Dims{c.n}));
  args.out = bt::view_mut(oh, Lout);
  const Status st = plan->run(kCpu, Workspace::none(), args);
  if (!st) return ::testing::AssertionFailure() << name(c) << ": run: " << st.to_string();
  const std::string gaps = bt::check_gaps(oh, Lout, bt::poison_byte(c.out));
  if (!gaps.empty()) return ::testing::AssertionFailure() << name(c) << ": " << gaps;
  const auto got = bt::gather(oh, Lout);
  const double e = bt::rel_error(got, want);
  if (!(e <= tol_of(c.out)))
    return ::testing::AssertionFailure() << name(c) << ": rel error " << e << "; " << bt::describe_mismatch(got, want);
  return ::testing::AssertionSuccess();
}

constexpr DType kOutTypes[] = {DType::BF16, DType::F16, DType::F32};
struct Pair {
  DType a, b;
};
constexpr Pair kPairs[] = {{DType::F8E4M3, DType::F8E4M3}, {DType::F8E4M3, DType::F8E5M2}, {DType::F8E5M2, DType::F8E4M3}};

TEST(CpuScaledMatmul, EveryDtypePairOutputAndScaling) {
  for (const Pair& p : kPairs)
    for (DType out : kOutTypes)
      for (Fp8Scaling sc : {Fp8Scaling::Tensor, Fp8Scaling::Row}) {
        Case c;
        c.at = p.a;
        c.bt_ = p.b;
        c.out = out;
        c.scaling = sc;
        EXPECT_TRUE(check(c));
      }
}

TEST(CpuScaledMatmul, BiasAndEveryActivation) {
  for (GemmActivation act : {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh, GemmActivation::Gelu})
    for (bool bias : {false, true}) {
      Case c;
      c.scaling = Fp8Scaling::Row;
      c.bias = bias;
      c.act = act;
      EXPECT_TRUE(check(c));
    }
}

TEST(CpuScaledMatmul, AnyStridesOnTheCpu) {
  for (Fp8Scaling sc : {Fp8Scaling::Tensor, Fp8Scaling::Row}) {
    Case c;
    c.scaling = sc;
    c.strided = true;
    c.bias = true;
    c.out = DType::F32;
    EXPECT_TRUE(check(c));
  }
}

TEST(CpuScaledMatmul, OddAndDegenerateSizes) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {1, 16, 16}, {33, 7, 1}, {3, 0, 4}, {0, 5, 3}, {4, 5, 0}}) {
    Case c;
    c.m = m;
    c.k = k;
    c.n = n;
    c.bias = true;
    c.act = GemmActivation::GeluTanh;
    EXPECT_TRUE(check(c));
  }
}

TEST(CpuScaledMatmul, FastAccumIsExactOnTheCpu) {
  Case c;
  c.fast_accum = true;
  c.out = DType::F32;
  EXPECT_TRUE(check(c));
}

TEST(CpuScaledMatmul, Sku) {
  Case c;
  c.scaling = Fp8Scaling::Row;
  auto plan = ScaledMatmulPlan::select(kCpu, desc_of(c));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().backend, Backend::CpuReference);
  EXPECT_EQ(plan->sku().dtype, DType::F8E4M3);
  EXPECT_EQ(plan->sku().op, "scaled_mm.none");
  EXPECT_EQ(plan->out_shape(), (Dims{7, 5}));
  EXPECT_EQ(plan->a_scale_shape(), (Dims{7}));
  EXPECT_EQ(plan->b_scale_shape(), (Dims{5}));
  c.scaling = Fp8Scaling::Tensor;
  auto tensor = ScaledMatmulPlan::select(kCpu, desc_of(c));
  ASSERT_TRUE(tensor.is_ok());
  EXPECT_EQ(tensor->a_scale_shape(), (Dims{1}));
  EXPECT_EQ(tensor->b_scale_shape(), (Dims{1}));
}

// ---- descriptor rules ----------------------------------------------------------------
Status select_status(const ScaledMatmulDescriptor& d) { return ScaledMatmulPlan::select(kCpu, d).status(); }

TEST(CpuScaledMatmul, InputsMustBeFp8) {
  for (DType t : {DType::BF16, DType::F32, DType::I8}) {
    ScaledMatmulDescriptor d = desc_of(Case{});
    d.a_dtype = t;
    BT_EXPECT_STATUS(select_status(d), StatusCode::Unsupported, "must be f8e4m3 or f8e5m2");
    d = desc_of(Case{});
    d.b_dtype = t;
    BT_EXPECT_STATUS(select_status(d), StatusCode::Unsupported, "ScaledMatmulPlan");
  }
}

TEST(CpuScaledMatmul, E5m2TimesE5m2IsRefused) {
  ScaledMatmulDescriptor d = desc_of(Case{});
  d.a_dtype = d.b_dtype = DType::F8E5M2;
  BT_EXPECT_STATUS(select_status(d), StatusCode::Unsupported, "f8e5m2 x f8e5m2");
}

TEST(CpuScaledMatmul, OutputDtypes) {
  for (DType t : {DType::F64, DType::F8E4M3, DType::I32}) {
    ScaledMatmulDescriptor d = desc_of(Case{});
    d.out_dtype = t;
    BT_EXPECT_STATUS(select_status(d), StatusCode::Unsupported, "out_dtype");
  }
}

TEST(CpuScaledMatmul, ShapesAreTwoDimensionalAndMultiply) {
  ScaledMatmulDescriptor d = desc_of(Case{});
  d.a_shape = Dims{2, 7, 33};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "a_shape");
  d = desc_of(Case{});
  d.b_shape = Dims{33};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "b_shape");
  d = desc_of(Case{});
  d.b_shape = Dims{32, 5};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "do not multiply");
  d = desc_of(Case{});
  d.a_shape = Dims{-1, 33};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "negative");
}

TEST(CpuScaledMatmul, ScalingAndActivationAreKnownValues) {
  ScaledMatmulDescriptor d = desc_of(Case{});
  d.scaling = static_cast<Fp8Scaling>(7);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "Fp8Scaling");
  d = desc_of(Case{});
  d.activation = static_cast<GemmActivation>(9);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "GemmActivation");
}

// ---- argument rules --------------------------------------------------------------------
struct Args {
  bt::HostBuffer a{DType::F8E4M3, 7 * 33}, b{DType::F8E4M3, 33 * 5}, sa{DType::F32, 7}, sb{DType::F32, 5},
      bias{DType::BF16, 5}, out{DType::BF16, 35};
  ScaledMatmulArgs args(const ScaledMatmulPlan& p) {
    ScaledMatmulArgs r;
    r.a = bt::view(a, bt::contiguous(Dims{7, 33}));
    r.b = bt::view(b, bt::contiguous(Dims{33, 5}));
    r.a_scale = bt::view(sa, bt::contiguous(p.a_scale_shape()));
    r.b_scale = bt::view(sb, bt::contiguous(p.b_scale_shape()));
    if (p.descriptor().has_bias) r.bias = bt::view(bias, bt::contiguous(Dims{5}));
    r.out = bt::view_mut(out, bt::contiguous(Dims{7, 5}));
    return r;
  }
};

TEST(CpuScaledMatmul, ScaleShapesFollowTheScaling) {
  Args h;
  auto tensor = ScaledMatmulPlan::select(kCpu, desc_of(Case{}));
  ASSERT_TRUE(tensor.is_ok());
  ScaledMatmulArgs a = h.args(*tensor);
  a.a_scale = bt::view(h.sa, bt::contiguous(Dims{7}));  // a row scale given to a per-tensor plan
  BT_EXPECT_STATUS(tensor->can_implement(a), StatusCode::InvalidProblem, "a_scale");
  Case rc;
  rc.scaling = Fp8Scaling::Row;
  auto row = ScaledMatmulPlan::select(kCpu, desc_of(rc));
  ASSERT_TRUE(row.is_ok());
  a = h.args(*row);
  a.b_scale = bt::view(h.sb, bt::contiguous(Dims{1}));
  BT_EXPECT_STATUS(row->can_implement(a), StatusCode::InvalidProblem, "b_scale");
  EXPECT_TRUE(row->can_implement(h.args(*row)).is_ok());
}

TEST(CpuScaledMatmul, ScalesAreF32) {
  Args h;
  auto plan = ScaledMatmulPlan::select(kCpu, desc_of(Case{}));
  ASSERT_TRUE(plan.is_ok());
  bt::HostBuffer s16(DType::BF16, 1);
  ScaledMatmulArgs a = h.args(*plan);
  a.a_scale = bt::view(s16, bt::contiguous(Dims{1}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "a_scale");
}

TEST(CpuScaledMatmul, OperandDtypesAreTheDescriptors) {
  Args h;
  auto plan = ScaledMatmulPlan::select(kCpu, desc_of(Case{}));
  ASSERT_TRUE(plan.is_ok());
  bt::HostBuffer b5(DType::F8E5M2, 33 * 5), o32(DType::F32, 35);
  ScaledMatmulArgs a = h.args(*plan);
  a.b = bt::view(b5, bt::contiguous(Dims{33, 5}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "b");
  a = h.args(*plan);
  a.out = bt::view_mut(o32, bt::contiguous(Dims{7, 5}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out");
}

TEST(CpuScaledMatmul, BiasGivenExactlyWhenAskedFor) {
  Args h;
  auto plain = ScaledMatmulPlan::select(kCpu, desc_of(Case{}));
  ASSERT_TRUE(plain.is_ok());
  ScaledMatmulArgs a = h.args(*plain);
  a.bias = bt::view(h.bias, bt::contiguous(Dims{5}));
  BT_EXPECT_STATUS(plain->can_implement(a), StatusCode::InvalidProblem, "bias is given but descriptor.has_bias is false");
  Case bc;
  bc.bias = true;
  auto with_bias = ScaledMatmulPlan::select(kCpu, desc_of(bc));
  ASSERT_TRUE(with_bias.is_ok());
  a = h.args(*with_bias);
  a.bias = {};
  BT_EXPECT_STATUS(with_bias->can_implement(a), StatusCode::InvalidProblem, "bias is missing");
}

TEST(CpuScaledMatmul, OutputMayNotOverlapAnInput) {
  Args h;
  auto plan = ScaledMatmulPlan::select(kCpu, desc_of(Case{}));
  ASSERT_TRUE(plan.is_ok());
  bt::HostBuffer shared(DType::BF16, 64);
  ScaledMatmulArgs a = h.args(*plan);
  a.out = bt::view_mut(shared, bt::contiguous(Dims{7, 5}));
  // a_scale aliased onto out's bytes (as f32 over the same storage).
  a.a_scale = TensorRef(shared.data(), DType::F32, Device::cpu(), Dims{1}, Dims{1}, 1);
  EXPECT_FALSE(plan->can_implement(a).is_ok());
}

}  // namespace

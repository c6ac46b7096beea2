// ScaledMatmulPlan (fp8) on CUDA (cuBLASLt) against the CPU reference (the
// same descriptor on Stream::cpu(), fed the same fp8 values and scales):
//   * every supported fp8 pair (e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3) into
//     bf16, f16 and f32, per-tensor and row-wise (cuBLASLt's outer-vector
//     mode) scales, bias and every activation, fast_accum;
//   * M = 1, 7, 33, 1000 with K, N multiples of 16; a with a padded row stride
//     (a sub-matrix), an out transposed (column-major); K = 0 and M = 0;
//   * the layout rules: a column-major a, a row-major b, K or N not a multiple
//     of 16: Unsupported naming the problem; the SKU (".fp8", ".fp8-rowwise",
//     ".fast-accum").
// Every run is made twice into poisoned outputs (bt::run_twice: NaN bytes,
// then a finite pattern); both must agree bit for bit.
//
// Tolerances relative to ||ref||_2. The fp8 inputs are exact, so the error is
// the accumulation's plus the output's rounding. Hopper's fp8 tensor-core MMA
// keeps fewer accumulator bits than f32 (cuBLASLt promotes the partial sums to
// f32 periodically unless fast_accum): f32 out 2e-4 (1e-3 with fast_accum,
// which never promotes), f16 2e-3, bf16 1e-2 (the output's rounding dominates).
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::kGpu, bt::to_device;
const Stream kCpu = Stream::cpu();

struct Case {
  DType at = DType::F8E4M3, bt_ = DType::F8E4M3, out = DType::BF16;
  int64_t m = 33, k = 64, n = 48;
  Fp8Scaling scaling = Fp8Scaling::Tensor;
  bool bias = false;
  GemmActivation act = GemmActivation::None;
  bool fast_accum = false;
  int64_t a_pad = 0;      // extra elements per row of a (a multiple of 16 keeps cuBLASLt's rule)
  bool out_col = false;   // out column-major
};

std::string name(const Case& c) {
  return std::string(dtype_name(c.at)) + "x" + std::string(dtype_name(c.bt_)) + "->" + std::string(dtype_name(c.out)) +
         " [" + std::to_string(c.m) + "," + std::to_string(c.k) + "," + std::to_string(c.n) + "] " +
         (c.scaling == Fp8Scaling::Row ? "row" : "tensor") + (c.bias ? " +bias " : " ") + gemm_activation_name(c.act) +
         (c.fast_accum ? " fast-accum" : "") + (c.a_pad ? " a-padded" : "") + (c.out_col ? " out-col" : "");
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

double tol_of(const Case& c) {
  if (c.out == DType::F32) return c.fast_accum ? 1e-3 : 2e-4;
  return c.out == DType::F16 ? 2e-3 : 1e-2;
}

Buffer device_copy(DType t, const bt::Layout& L, const std::vector<double>& v) {
  bt::HostBuffer h(t, std::max<int64_t>(L.storage, 1));
  h.poison();
  bt::scatter(h, L, v);
  return to_device(h);
}

::testing::AssertionResult check(const Case& c, KernelSku* sku = nullptr) {
  const ScaledMatmulDescriptor d = desc_of(c);
  auto cpu = ScaledMatmulPlan::select(kCpu, d);
  if (!cpu) return ::testing::AssertionFailure() << name(c) << ": CPU select: " << cpu.status().to_string();
  auto gpu = ScaledMatmulPlan::select(kGpu, d);
  if (!gpu) return ::testing::AssertionFailure() << name(c) << ": CUDA select: " << gpu.status().to_string();
  if (sku) *sku = gpu->sku();
  bt::Rng rng(bt::fresh_seed(name(c)));
  const bool row = c.scaling == Fp8Scaling::Row;
  const auto av = bt::random_values(c.at, c.m * c.k, rng, -3, 3), bv = bt::random_values(c.bt_, c.k * c.n, rng, -3, 3);
  const auto sav = bt::random_values(DType::F32, row ? c.m : 1, rng, 0.25, 2.0);
  const auto sbv = bt::random_values(DType::F32, row ? c.n : 1, rng, 0.25, 2.0);
  const auto biasv = bt::random_values(c.out, c.n, rng, -2, 2);
  const Dims os = cpu->out_shape(), sas = cpu->a_scale_shape(), sbs = cpu->b_scale_shape();

  std::vector<double> ref;
  {
    const bt::HostBuffer ah = bt::host_from(c.at, av), bh = bt::host_from(c.bt_, bv), sah = bt::host_from(DType::F32, sav),
                         sbh = bt::host_from(DType::F32, sbv), biash = bt::host_from(c.out, biasv);
    bt::HostBuffer oh(c.out, bt::numel(os));
    ScaledMatmulArgs a;
    a.a = bt::view(ah, bt::contiguous(d.a_shape));
    a.b = bt::view(bh, bt::contiguous(d.b_shape));
    a.a_scale = bt::view(sah, bt::contiguous(sas));
    a.b_scale = bt::view(sbh, bt::contiguous(sbs));
    if (c.bias) a.bias = bt::view(biash, bt::contiguous(Dims{c.n}));
    a.out = bt::view_mut(oh, bt::contiguous(os));
    const Status st = cpu->run(kCpu, Workspace::none(), a);
    if (!st) return ::testing::AssertionFailure() << name(c) << ": CPU reference: " << st.to_string();
    ref = bt::all_values(oh);
  }

  bt::Layout La = bt::contiguous(d.a_shape);
  if (c.a_pad) {
    La.strides = Dims{c.k + c.a_pad, 1};
    La.storage = c.m * (c.k + c.a_pad);
    La.name = "padded-rows";
  }
  const bt::Layout Lb = bt::transposed(d.b_shape);  // b = w.t() of a row-major [N, K] w
  const bt::Layout Lout = c.out_col ? bt::transposed(os) : bt::contiguous(os);
  Buffer da = device_copy(c.at, La, av), db = device_copy(c.bt_, Lb, bv);
  Buffer dsa = device_copy(DType::F32, bt::contiguous(sas), sav), dsb = device_copy(DType::F32, bt::contiguous(sbs), sbv);
  Buffer dbias = device_copy(c.out, bt::contiguous(Dims{c.n}), biasv);
  Buffer dout = bt::device_storage(c.out, Lout);
  Buffer ws = bt::device_workspace(gpu->workspace_size());
  ScaledMatmulArgs args;
  args.a = bt::view(da, c.at, La);
  args.b = bt::view(db, c.bt_, Lb);
  args.a_scale = bt::view(dsa, DType::F32, bt::contiguous(sas));
  args.b_scale = bt::view(dsb, DType::F32, bt::contiguous(sbs));
  if (c.bias) args.bias = bt::view(dbias, c.out, bt::contiguous(Dims{c.n}));
  args.out = bt::view_mut(dout, c.out, Lout);
  const Workspace w(ws.data(), gpu->workspace_size());
  std::vector<bt::DeviceOut> outs = {{"out", &dout, c.out, Lout}};
  std::vector<bt::HostBuffer> first;
  const std::string err = bt::run_twice([&] { return gpu->run(kGpu, w, args); }, outs, &first);
  if (!err.empty()) return ::testing::AssertionFailure() << name(c) << ": " << err;
  const auto got = bt::gather(first[0], Lout);
  const double e = bt::rel_error(got, ref);
  std::printf("  %-70s rel error %.2e (tol %.0e) %s\n", name(c).c_str(), e, tol_of(c), gpu->sku().variant.c_str());
  if (!(e <= tol_of(c)))
    return ::testing::AssertionFailure() << name(c) << ": rel error " << e << " > " << tol_of(c) << "; "
                                         << bt::describe_mismatch(got, ref);
  return ::testing::AssertionSuccess();
}

constexpr DType kOutTypes[] = {DType::BF16, DType::F16, DType::F32};
struct Pair {
  DType a, b;
};
constexpr Pair kPairs[] = {{DType::F8E4M3, DType::F8E4M3}, {DType::F8E4M3, DType::F8E5M2}, {DType::F8E5M2, DType::F8E4M3}};

TEST(CudaScaledMatmul, EveryDtypePairOutputAndScaling) {
  BT_SKIP_WITHOUT_GPU();
  for (const Pair& p : kPairs)
    for (DType out : kOutTypes)
      for (Fp8Scaling sc : {Fp8Scaling::Tensor, Fp8Scaling::Row}) {
        Case c;
        c.at = p.a;
        c.bt_ = p.b;
        c.out = out;
        c.scaling = sc;
        KernelSku sku;
        EXPECT_TRUE(check(c, &sku));
        EXPECT_EQ(sku.backend, Backend::CuBlasLt);
        EXPECT_NE(sku.variant.find(sc == Fp8Scaling::Row ? ".fp8-rowwise" : ".fp8"), std::string::npos) << sku.variant;
      }
}

TEST(CudaScaledMatmul, BiasAndEveryActivation) {
  BT_SKIP_WITHOUT_GPU();
  for (DType out : kOutTypes)
    for (GemmActivation act :
         {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh, GemmActivation::Gelu})
      for (Fp8Scaling sc : {Fp8Scaling::Tensor, Fp8Scaling::Row}) {
        Case c;
        c.out = out;
        c.bias = true;
        c.act = act;
        c.scaling = sc;
        EXPECT_TRUE(check(c));
      }
}

TEST(CudaScaledMatmul, SizesAndLayouts) {
  BT_SKIP_WITHOUT_GPU();
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{1, 16, 16}, {7, 32, 48}, {33, 160, 16}, {1000, 256, 272}}) {
    for (Fp8Scaling sc : {Fp8Scaling::Tensor, Fp8Scaling::Row}) {
      Case c;
      c.m = m;
      c.k = k;
      c.n = n;
      c.scaling = sc;
      c.bias = true;
      EXPECT_TRUE(check(c));
    }
  }
  Case padded;
  padded.a_pad = 16;
  EXPECT_TRUE(check(padded));
  // A column-major out (the route's other orientation: out = a b, still "TN"
  // for cuBLASLt); its leading dim M must keep cuBLASLt's 16-byte rule.
  Case col;
  col.out_col = true;
  col.m = 64;
  for (DType out : kOutTypes) {
    col.out = out;
    EXPECT_TRUE(check(col));
  }
}

TEST(CudaScaledMatmul, FastAccum) {
  BT_SKIP_WITHOUT_GPU();
  for (DType out : kOutTypes) {
    Case c;
    c.out = out;
    c.k = 512;
    c.fast_accum = true;
    KernelSku sku;
    EXPECT_TRUE(check(c, &sku));
    EXPECT_NE(sku.variant.find(".fast-accum"), std::string::npos) << sku.variant;
  }
}

TEST(CudaScaledMatmul, ZeroSizes) {
  BT_SKIP_WITHOUT_GPU();
  Case k0;
  k0.k = 0;
  k0.bias = true;
  k0.act = GemmActivation::GeluTanh;
  EXPECT_TRUE(check(k0));
  Case m0;
  m0.m = 0;
  auto plan = ScaledMatmulPlan::select(kGpu, desc_of(m0));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().variant, "empty");
}

TEST(CudaScaledMatmul, SizesCuBlasLtCannotTakeAreUnsupportedAtSelect) {
  BT_SKIP_WITHOUT_GPU();
  Case c;
  c.k = 40;
  BT_EXPECT_STATUS(ScaledMatmulPlan::select(kGpu, desc_of(c)).status(), StatusCode::Unsupported, "multiples of 16");
  c = Case{};
  c.n = 20;
  BT_EXPECT_STATUS(ScaledMatmulPlan::select(kGpu, desc_of(c)).status(), StatusCode::Unsupported, "multiples of 16");
  // The CPU reference takes them.
  EXPECT_TRUE(ScaledMatmulPlan::select(kCpu, desc_of(c)).is_ok());
}

TEST(CudaScaledMatmul, LayoutsCuBlasLtCannotTakeAreUnsupportedNamingTheTensor) {
  BT_SKIP_WITHOUT_GPU();
  const Case c;
  auto plan = ScaledMatmulPlan::select(kGpu, desc_of(c));
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  Buffer a(Device::cuda(0), 64 * 64), b(Device::cuda(0), 64 * 64), s(Device::cuda(0), 256), out(Device::cuda(0), 64 * 64 * 2);
  ScaledMatmulArgs args;
  args.a = bt::view(a, c.at, bt::contiguous(Dims{c.m, c.k}));
  args.b = bt::view(b, c.bt_, bt::transposed(Dims{c.k, c.n}));
  args.a_scale = bt::view(s, DType::F32, bt::contiguous(Dims{1}));
  args.b_scale = bt::view(s, DType::F32, bt::contiguous(Dims{1}));
  args.out = bt::view_mut(out, c.out, bt::contiguous(Dims{c.m, c.n}));
  ASSERT_TRUE(plan->can_implement(args).is_ok()) << plan->can_implement(args).to_string();
  ScaledMatmulArgs bad = args;
  bad.a = bt::view(a, c.at, bt::transposed(Dims{c.m, c.k}));
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::Unsupported, "a has strides");
  bad = args;
  bad.b = bt::view(b, c.bt_, bt::contiguous(Dims{c.k, c.n}));
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::Unsupported, "b has strides");
  bad = args;
  bt::Layout La = bt::contiguous(Dims{c.m, c.k});
  La.strides = Dims{c.k + 8, 1};
  La.storage = c.m * (c.k + 8);
  bad.a = bt::view(a, c.at, La);
  BT_EXPECT_STATUS(plan->run(kGpu, Workspace::none(), bad), StatusCode::Unsupported, "multiple of 16");
}

}  // namespace

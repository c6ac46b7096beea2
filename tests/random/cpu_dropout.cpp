// DropoutPlan / DropoutBackwardPlan on the CPU reference:
//   * forward against the composition out = keep ? x * scale : 0 with keep
//     recomputed from philox_block (word i % 4 of block i / 4, u >= p), every
//     dtype, odd sizes; the saved mask's bits (little endian, tail bits 0);
//   * drop frequency ~ p; p = 0 (out = x) and p = 1 (out = 0);
//   * backward: regenerated keep == saved mask, both == the composition;
//   * in place, strided views, device_offset (forward increments, backward
//     reads offset - 1), zero size, every rule.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "random/random_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();
constexpr RandomSeed kSeed{0xfeedface12345678ull, 3};
const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

std::vector<double> xs(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.37 * static_cast<double>(i)) * 3 + 0.25;
  return v;
}

bool keep_of(RandomSeed s, int64_t i, double p) {
  return static_cast<double>(uniform_f32(philox_block(s.seed, s.offset, i / 4).w[i % 4])) >= p;
}

// The composition in the documented arithmetic.
double expected(DType t, double x, bool keep, double p) {
  if (!keep) return 0.0;
  if (t == DType::F64) return x * (1.0 / (1.0 - p));
  const float v = static_cast<float>(x) * static_cast<float>(1.0 / (1.0 - p));
  if (t == DType::F16) return static_cast<float>(half(v));
  if (t == DType::BF16) return static_cast<float>(bfloat16(v));
  return v;
}

DropoutDescriptor fwd(DType t, Dims shape, double p, bool save_mask = false) {
  DropoutDescriptor d;
  d.dtype = t, d.shape = shape, d.p = p, d.save_mask = save_mask;
  return d;
}

DropoutBackwardDescriptor bwd(DType t, Dims shape, double p, bool use_mask) {
  DropoutBackwardDescriptor d;
  d.dtype = t, d.shape = shape, d.p = p, d.use_mask = use_mask;
  return d;
}

TEST(DropoutCpu, ForwardMatchesCompositionAndMask) {
  for (DType t : kFloats)
    for (int64_t n : {1, 3, 8, 13, 4097}) {
      const double p = 0.3;
      const auto x = xs(n);
      const auto xraw = rt::bytes_of(t, x);
      auto r = rt::run_dropout(kCpu, fwd(t, {n}, p, true), kSeed, xraw);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = keep_of(kSeed, i, p);
        ASSERT_EQ(r.values[i], expected(t, rt::value_at(xraw, t, i), keep, p)) << dtype_name(t) << " " << i;
        ASSERT_EQ((r.mask[i / 8] >> (i % 8)) & 1, keep ? 1 : 0) << i;
      }
      if (n % 8) EXPECT_EQ(r.mask.back() >> (n % 8), 0) << "tail bits";
      // without the mask: the same out
      auto r2 = rt::run_dropout(kCpu, fwd(t, {n}, p, false), kSeed, xraw);
      EXPECT_EQ(r2.raw, r.raw);
    }
}

TEST(DropoutCpu, FrequencyAndEdgeProbabilities) {
  const int64_t n = int64_t{1} << 20;
  const auto xraw = rt::bytes_of(DType::BF16, std::vector<double>(n, 1.0));
  auto r = rt::run_dropout(kCpu, fwd(DType::BF16, {n}, 0.1), kSeed, xraw);
  double dropped = 0;
  for (double v : r.values) dropped += v == 0;
  EXPECT_NEAR(dropped / n, 0.1, 5 * std::sqrt(0.09 / n));
  const auto x = xs(1001);
  for (DType t : kFloats) {
    const auto raw = rt::bytes_of(t, x);
    auto r0 = rt::run_dropout(kCpu, fwd(t, {1001}, 0.0, true), kSeed, raw);
    for (int64_t i = 0; i < 1001; ++i) ASSERT_EQ(r0.values[i], rt::value_at(raw, t, i));
    for (size_t b = 0; b + 1 < r0.mask.size(); ++b) ASSERT_EQ(r0.mask[b], 0xff);
    auto r1 = rt::run_dropout(kCpu, fwd(t, {1001}, 1.0, true), kSeed, raw);
    for (double v : r1.values) ASSERT_EQ(v, 0.0);
    for (uint8_t b : r1.mask) ASSERT_EQ(b, 0);
  }
}

TEST(DropoutCpu, BackwardRegeneratedEqualsSavedMask) {
  for (DType t : kFloats)
    for (int64_t n : {1, 7, 4097}) {
      const double p = 0.25;
      const auto dy = rt::bytes_of(t, xs(n));
      auto f = rt::run_dropout(kCpu, fwd(t, {n}, p, true), kSeed, dy);
      auto regen = rt::run_dropout_backward(kCpu, bwd(t, {n}, p, false), kSeed, dy, {});
      auto saved = rt::run_dropout_backward(kCpu, bwd(t, {n}, p, true), RandomSeed{0, 0}, dy, f.mask);
      ASSERT_TRUE(regen.st.is_ok()) << regen.st.to_string();
      ASSERT_TRUE(saved.st.is_ok()) << saved.st.to_string();
      EXPECT_EQ(regen.raw, saved.raw) << dtype_name(t) << " " << n;
      EXPECT_EQ(regen.values, f.values) << "dx = dropout(dy) with the same keep";
    }
}

TEST(DropoutCpu, StridedAndInPlace) {
  const DType t = DType::F32;
  const Dims shape{6, 5};
  const auto x = xs(30);
  const auto raw = rt::bytes_of(t, x);
  auto c = rt::run_dropout(kCpu, fwd(t, shape, 0.5), kSeed, raw);
  rt::DropoutInputs in;
  in.x_strides = Dims{1, 6};  // x read transposed
  in.out_strides = Dims{7, 1};
  auto s = rt::run_dropout(kCpu, fwd(t, shape, 0.5), kSeed, raw, in);
  for (int64_t i = 0; i < 30; ++i) {
    const double xv = rt::value_at(raw, t, (i % 5) * 6 + i / 5);
    ASSERT_EQ(s.values[i], expected(t, xv, keep_of(kSeed, i, 0.5), 0.5)) << i;
  }
  // in place
  std::vector<float> buf(x.begin(), x.end());
  auto plan = DropoutPlan::select(kCpu, fwd(t, shape, 0.5)).value();
  DropoutArgs a;
  a.seed = kSeed;
  a.x = TensorRef::contiguous(buf.data(), Device::cpu(), shape, 30);
  a.out = TensorMut::contiguous(buf.data(), Device::cpu(), shape, 30);
  ASSERT_TRUE(plan.run(kCpu, {}, a).is_ok());
  for (int64_t i = 0; i < 30; ++i) ASSERT_EQ(static_cast<double>(buf[i]), c.values[i]);
}

TEST(DropoutCpu, DeviceOffset) {
  const auto raw = rt::bytes_of(DType::BF16, xs(100));
  DropoutDescriptor d = fwd(DType::BF16, {100}, 0.4, true);
  d.device_offset = true;
  rt::DropoutInputs in;
  in.offset_value = 10;
  auto r = rt::run_dropout(kCpu, d, RandomSeed{77, 5}, raw, in);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.offset_after, 11);
  auto ref = rt::run_dropout(kCpu, fwd(DType::BF16, {100}, 0.4, true), RandomSeed{77, 15}, raw);
  EXPECT_EQ(r.raw, ref.raw);
  EXPECT_EQ(r.mask, ref.mask);
  // the backward reads the incremented tensor and uses value - 1
  DropoutBackwardDescriptor b = bwd(DType::BF16, {100}, 0.4, false);
  b.device_offset = true;
  auto g = rt::run_dropout_backward(kCpu, b, RandomSeed{77, 5}, raw, {}, r.offset_after);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_EQ(g.raw, ref.raw);
  // an empty forward still consumes one offset
  d.shape = Dims{0};
  r = rt::run_dropout(kCpu, d, RandomSeed{77, 5}, {}, in);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.offset_after, 11);
}

TEST(DropoutCpu, ZeroSize) {
  for (DType t : kFloats) {
    auto r = rt::run_dropout(kCpu, fwd(t, {3, 0}, 0.5, true), kSeed, {});
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    auto g = rt::run_dropout_backward(kCpu, bwd(t, {0}, 0.5, true), kSeed, {}, {});
    EXPECT_TRUE(g.st.is_ok()) << g.st.to_string();
  }
}

TEST(DropoutCpu, Rules) {
  BT_EXPECT_STATUS(DropoutPlan::select(kCpu, fwd(DType::I32, {4}, 0.5)).status(), StatusCode::Unsupported,
                   "DropoutPlan: dtype i32 is not supported (f32, f64, f16, bf16)");
  BT_EXPECT_STATUS(DropoutPlan::select(kCpu, fwd(DType::F32, {4}, 1.5)).status(), StatusCode::InvalidProblem,
                   "DropoutPlan: p 1.5 must be in [0, 1]");
  BT_EXPECT_STATUS(DropoutPlan::select(kCpu, fwd(DType::F32, {4}, NAN)).status(), StatusCode::InvalidProblem,
                   "DropoutPlan: p nan must be in [0, 1]");
  BT_EXPECT_STATUS(DropoutPlan::select(kCpu, fwd(DType::F32, {-4}, 0.5)).status(), StatusCode::InvalidProblem,
                   "DropoutPlan: shape");
  BT_EXPECT_STATUS(DropoutBackwardPlan::select(kCpu, bwd(DType::F32, {4}, -0.1, false)).status(),
                   StatusCode::InvalidProblem, "DropoutBackwardPlan: p -0.1 must be in [0, 1]");
  BT_EXPECT_STATUS(DropoutBackwardPlan::select(kCpu, bwd(DType::U8, {4}, 0.1, false)).status(),
                   StatusCode::Unsupported, "DropoutBackwardPlan: dtype u8 is not supported");

  const Device cpu = Device::cpu();
  std::vector<float> x(16), out(16);
  std::vector<uint8_t> mask(2);
  std::vector<int64_t> off(1);
  auto plan = DropoutPlan::select(kCpu, fwd(DType::F32, {9}, 0.5)).value();
  EXPECT_EQ(plan.mask_shape(), (Dims{2}));
  DropoutArgs a;
  a.x = TensorRef::contiguous(x.data(), cpu, {9}, 16);
  a.out = TensorMut::contiguous(out.data(), cpu, {9}, 16);
  EXPECT_TRUE(plan.can_implement(a).is_ok());
  a.mask = TensorMut::contiguous(mask.data(), cpu, {2}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem,
                   "DropoutPlan: mask is given but descriptor.save_mask is false");
  a.mask = {};
  a.offset = TensorMut::contiguous(off.data(), cpu, {1}, 1);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem,
                   "DropoutPlan: offset is given but descriptor.device_offset is false");
  a.offset = {};
  a.out = TensorMut::contiguous(x.data() + 1, cpu, {9}, 15);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "DropoutPlan: out partially overlaps x");
  DropoutDescriptor dm = fwd(DType::F32, {9}, 0.5, true);
  dm.device_offset = true;
  plan = DropoutPlan::select(kCpu, dm).value();
  a.out = TensorMut::contiguous(out.data(), cpu, {9}, 16);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "DropoutPlan: mask is missing");
  a.mask = TensorMut::contiguous(mask.data(), cpu, {1}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "DropoutPlan: mask");
  a.mask = TensorMut::contiguous(mask.data(), cpu, {2}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "DropoutPlan: offset is missing");
  a.offset = TensorMut::contiguous(off.data(), cpu, {1}, 1);
  EXPECT_TRUE(plan.can_implement(a).is_ok());

  auto bplan = DropoutBackwardPlan::select(kCpu, bwd(DType::F32, {9}, 0.5, false)).value();
  DropoutBackwardArgs b;
  b.dy = TensorRef::contiguous(x.data(), cpu, {9}, 16);
  b.dx = TensorMut::contiguous(out.data(), cpu, {9}, 16);
  EXPECT_TRUE(bplan.can_implement(b).is_ok());
  b.mask = TensorRef::contiguous(mask.data(), cpu, {2}, 2);
  BT_EXPECT_STATUS(bplan.can_implement(b), StatusCode::InvalidProblem,
                   "DropoutBackwardPlan: mask is given but descriptor.use_mask is false");
  b.mask = {};
  b.offset = TensorRef::contiguous(off.data(), cpu, {1}, 1);
  BT_EXPECT_STATUS(bplan.can_implement(b), StatusCode::InvalidProblem,
                   "DropoutBackwardPlan: offset is given but descriptor.device_offset is false");
  DropoutBackwardDescriptor bm = bwd(DType::F32, {9}, 0.5, true);
  bm.device_offset = true;
  bplan = DropoutBackwardPlan::select(kCpu, bm).value();
  b.offset = {};
  BT_EXPECT_STATUS(bplan.can_implement(b), StatusCode::InvalidProblem,
                   "DropoutBackwardPlan: mask is missing (descriptor.use_mask is true)");
  b.mask = TensorRef::contiguous(mask.data(), cpu, {2}, 2);
  BT_EXPECT_STATUS(bplan.can_implement(b), StatusCode::InvalidProblem,
                   "DropoutBackwardPlan: offset is missing (descriptor.device_offset is true)");
  b.offset = TensorRef::contiguous(off.data(), cpu, {1}, 1);
  EXPECT_TRUE(bplan.can_implement(b).is_ok());
  b.dx = TensorMut::contiguous(x.data(), cpu, {9}, 16);  // in place
  EXPECT_TRUE(bplan.can_implement(b).is_ok());
  DropoutBackwardPlan empty;
  BT_EXPECT_STATUS(empty.run(kCpu, {}, b), StatusCode::InvalidProblem, "DropoutBackwardPlan: the plan is empty");
}

}  // namespace

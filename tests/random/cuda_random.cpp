// RandomPlan / DropoutPlan / DropoutBackwardPlan on the GPU against the CPU
// reference, byte for byte (the whole out buffer, gaps included):
//   * every distribution and dtype on odd sizes (1, 3, 4097, 2^20 + 5), a
//     strided (transposed, gapped) out, a misaligned out, rank 0;
//   * statistics of GPU draws (uniform / normal KS, bernoulli frequency);
//   * device_offset: the tensor is read and incremented on the stream; graph
//     capture: each replay draws new numbers, equal to the CPU draw at the
//     offsets 0, 1, 2, ...;
//   * dropout forward (mask), backward regenerated and from the saved mask,
//     strided and in-place views, p = 0 / 1, device_offset forward + backward
//     in one captured graph, 2^24 + 1001 elements (several tiles per block);
//   * sku_for: "vec16" for dense aligned views, "strided" otherwise.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "random/random_helpers.hpp"
#include "support/cuda_test_utils.hpp"

using namespace baracuda;
using RD = RandomDistribution;

namespace {

const Stream kCpu = Stream::cpu();
constexpr RandomSeed kSeed{0x0123456789abcdefull, 11};
const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

std::vector<RandomDescriptor> all_descs(Dims shape) {
  std::vector<RandomDescriptor> v;
  for (DType t : kFloats) {
    RandomDescriptor u = rt::desc(RD::Uniform, t, shape);
    u.low = -1, u.high = 1;
    v.push_back(u);
    RandomDescriptor n = rt::desc(RD::Normal, t, shape);
    n.mean = 0.5, n.std = 3;
    v.push_back(n);
    RandomDescriptor tn = rt::desc(RD::TruncatedNormal, t, shape);
    tn.a = -1, tn.b = 0.5;
    v.push_back(tn);
    RandomDescriptor b = rt::desc(RD::Bernoulli, t, shape);
    b.p = 0.37;
    v.push_back(b);
    RandomDescriptor r = rt::desc(RD::RandInt, t, shape);
    r.int_low = -100, r.int_high = 100;
    v.push_back(r);
  }
  for (DType t : {DType::I32, DType::I64}) {
    RandomDescriptor r = rt::desc(RD::RandInt, t, shape);
    r.int_low = -100000, r.int_high = 100001;
    v.push_back(r);
    if (t == DType::I64) r.int_low = INT64_MIN, r.int_high = INT64_MAX, v.push_back(r);
  }
  return v;
}

std::string name(const RandomDescriptor& d) {
  return std::string(random_distribution_name(d.distribution)) + " " + std::string(dtype_name(d.dtype)) + " " +
         d.shape.to_string();
}

void expect_same(const RandomDescriptor& d, const rt::RandomInputs& in, const char* variant) {
  auto g = rt::run_random(bt::kGpu, d, kSeed, in);
  auto c = rt::run_random(kCpu, d, kSeed, in);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string() << " " << name(d);
  ASSERT_TRUE(c.st.is_ok()) << c.st.to_string() << " " << name(d);
  EXPECT_EQ(g.raw, c.raw) << "GPU differs from the CPU reference: " << name(d);
  if (variant && shape_numel(d.shape) > 0) EXPECT_EQ(g.variant, variant) << name(d);
}

TEST(RandomCuda, MatchesCpuEveryDistributionAndDtype) {
  BT_SKIP_WITHOUT_GPU();
  for (Dims shape : {Dims{1}, Dims{3}, Dims{4097}, Dims{(int64_t{1} << 20) + 5}, Dims{}})
    for (const RandomDescriptor& d : all_descs(shape)) expect_same(d, {}, "vec16");
}

TEST(RandomCuda, MatchesCpuStridedAndMisaligned) {
  BT_SKIP_WITHOUT_GPU();
  for (const RandomDescriptor& d : all_descs({37, 29})) {
    rt::RandomInputs in;
    in.strides = Dims{1, 38};  // transposed, gapped
    expect_same(d, in, "strided");
    in.strides = Dims{30, 1};  // rows of 29 in a pitch of 30: not contiguous
    expect_same(d, in, "strided");
  }
  // a bernoulli p tensor, broadcast along rows, in every float dtype
  for (DType pt : kFloats) {
    RandomDescriptor d = rt::desc(RD::Bernoulli, DType::BF16, {513, 7});
    d.p_tensor = true, d.p_dtype = pt;
    rt::RandomInputs in;
    in.p = rt::bytes_of(pt, {0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.7});
    in.p_strides = Dims{0, 1};
    expect_same(d, in, "vec16");
  }
}

TEST(RandomCuda, MisalignedOutTakesTheStridedPath) {
  BT_SKIP_WITHOUT_GPU();
  for (const RandomDescriptor& d0 : all_descs({1001})) {
    const size_t es = dtype_size(d0.dtype);
    Buffer gbuf(Device::cuda(0), 1002 * es + 16), cbuf(Device::cpu(), 1002 * es + 16);
    std::vector<uint8_t> g(1002 * es), c(1002 * es);
    for (int side = 0; side < 2; ++side) {
      Buffer& b = side ? cbuf : gbuf;
      const Stream& s = side ? kCpu : bt::kGpu;
      ASSERT_TRUE(b.fill_bytes(0).is_ok());
      auto plan = RandomPlan::select(s, d0).value();
      RandomArgs a;
      a.seed = kSeed;
      a.out = TensorMut::contiguous(static_cast<char*>(b.data()) + es, d0.dtype, b.device(), {1001}, 1001);
      if (side == 0) EXPECT_EQ(plan.sku_for(s, {}, a).value().variant, "strided") << name(d0);
      ASSERT_TRUE(plan.run(s, {}, a).is_ok());
      ASSERT_TRUE(b.copy_to_host((side ? c : g).data(), 1002 * es).is_ok());
    }
    EXPECT_EQ(g, c) << name(d0);
  }
}

TEST(RandomCuda, GpuStatistics) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{1} << 20;
  const double crit = 1.95 / std::sqrt(static_cast<double>(n));
  RandomDescriptor d = rt::desc(RD::Normal, DType::F32, {n});
  auto g = rt::run_random(bt::kGpu, d, kSeed);
  ASSERT_TRUE(g.st.is_ok());
  EXPECT_LT(rt::ks_statistic(g.values, rt::normal_cdf), crit);
  d = rt::desc(RD::Uniform, DType::F64, {n});
  g = rt::run_random(bt::kGpu, d, kSeed);
  EXPECT_LT(rt::ks_statistic(g.values, [](double x) { return x; }), crit);
  d = rt::desc(RD::Bernoulli, DType::BF16, {n});
  d.p = 0.2;
  g = rt::run_random(bt::kGpu, d, kSeed);
  double ones = 0;
  for (double v : g.values) ones += v;
  EXPECT_NEAR(ones / n, 0.2, 5 * std::sqrt(0.16 / n));
}

TEST(RandomCuda, DeviceOffsetIncrements) {
  BT_SKIP_WITHOUT_GPU();
  for (const RandomDescriptor& d0 : all_descs({4099})) {
    RandomDescriptor d = d0;
    d.device_offset = true;
    rt::RandomInputs in;
    in.offset_value = 1000;
    auto g = rt::run_random(bt::kGpu, d, kSeed, in);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    EXPECT_EQ(g.offset_after, 1001);
    auto c = rt::run_random(kCpu, d0, RandomSeed{kSeed.seed, kSeed.offset + 1000});
    EXPECT_EQ(g.raw, c.raw) << name(d);
    d.shape = Dims{0};
    g = rt::run_random(bt::kGpu, d, kSeed, in);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    EXPECT_EQ(g.offset_after, 1001) << "an empty draw consumes one offset";
  }
}

TEST(RandomCuda, GraphReplaysDrawNewNumbers) {
  BT_SKIP_WITHOUT_GPU();
  bt::CapturedGraph cg;
  ASSERT_EQ(cudaStreamCreateWithFlags(&cg.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, cg.stream);
  RandomDescriptor d = rt::desc(RD::Normal, DType::BF16, {3, 1001});
  d.device_offset = true;
  auto plan = RandomPlan::select(s, d).value();
  const int64_t n = 3003;
  Buffer out(Device::cuda(0), n * 2), off(Device::cuda(0), 8);
  ASSERT_TRUE(off.fill_bytes(0).is_ok());
  RandomArgs a;
  a.seed = RandomSeed{99, 0};
  a.out = out.view_mut(DType::BF16, d.shape);
  a.offset = off.view_mut(DType::I64, {1});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(cg.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan.run(s, {}, a);
  ASSERT_EQ(cudaStreamEndCapture(cg.stream, &cg.graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&cg.exec, cg.graph, 0), cudaSuccess);
  RandomDescriptor dc = d;
  dc.device_offset = false;
  std::vector<uint8_t> prev;
  for (uint64_t replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(cg.exec, cg.stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cg.stream), cudaSuccess);
    auto got = rt::download(out, n * 2);
    auto c = rt::run_random(kCpu, dc, RandomSeed{99, replay});
    EXPECT_EQ(got, c.raw) << "replay " << replay;
    EXPECT_NE(got, prev);
    prev = got;
  }
  int64_t o = 0;
  ASSERT_TRUE(off.copy_to_host(&o, 8).is_ok());
  EXPECT_EQ(o, 3);
}

// ---- dropout -------------------------------------------------------------------------------
std::vector<double> xs(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::cos(0.61 * static_cast<double>(i)) * 2 - 0.1;
  return v;
}

DropoutDescriptor fwd(DType t, Dims shape, double p, bool save_mask) {
  DropoutDescriptor d;
  d.dtype = t, d.shape = shape, d.p = p, d.save_mask = save_mask;
  return d;
}

TEST(DropoutCuda, ForwardAndBackwardMatchCpu) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloats)
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{4097}, (int64_t{1} << 20) + 5})
      for (double p : {0.0, 0.1, 0.5, 1.0}) {
        const auto x = rt::bytes_of(t, xs(n));
        const std::string w = std::string(dtype_name(t)) + " n " + std::to_string(n) + " p " + std::to_string(p);
        auto g = rt::run_dropout(bt::kGpu, fwd(t, {n}, p, true), kSeed, x);
        auto c = rt::run_dropout(kCpu, fwd(t, {n}, p, true), kSeed, x);
        ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
        EXPECT_EQ(g.variant, "vec16");
        EXPECT_EQ(g.raw, c.raw) << w;
        EXPECT_EQ(g.mask, c.mask) << w;
        auto g2 = rt::run_dropout(bt::kGpu, fwd(t, {n}, p, false), kSeed, x);
        EXPECT_EQ(g2.raw, c.raw) << w;
        for (bool use_mask : {false, true}) {
          DropoutBackwardDescriptor b;
          b.dtype = t, b.shape = {n}, b.p = p, b.use_mask = use_mask;
          auto gb = rt::run_dropout_backward(bt::kGpu, b, kSeed, x, c.mask);
          auto cb = rt::run_dropout_backward(kCpu, b, kSeed, x, c.mask);
          ASSERT_TRUE(gb.st.is_ok()) << gb.st.to_string();
          EXPECT_EQ(gb.raw, cb.raw) << w << (use_mask ? " mask" : " regen");
          EXPECT_EQ(gb.raw, c.raw) << "dx = dropout(dy) with the same keep: " << w;
        }
      }
}

// Large enough that the grid (one wave at most) takes several tiles per block
// (bf16: 2049 tiles of 8192 elements, f32: 4097 of 4096) plus a partial tile.
TEST(DropoutCuda, SeveralTilesPerBlockMatchCpu) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 24) + 1001;
  for (DType t : {DType::BF16, DType::F32}) {
    const auto x = rt::bytes_of(t, xs(n));
    auto g = rt::run_dropout(bt::kGpu, fwd(t, {n}, 0.1, true), kSeed, x);
    auto c = rt::run_dropout(kCpu, fwd(t, {n}, 0.1, true), kSeed, x);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    EXPECT_TRUE(g.raw == c.raw) << dtype_name(t);
    EXPECT_TRUE(g.mask == c.mask) << dtype_name(t);
    DropoutBackwardDescriptor b;
    b.dtype = t, b.shape = {n}, b.p = 0.1;
    auto gb = rt::run_dropout_backward(bt::kGpu, b, kSeed, x, c.mask);
    ASSERT_TRUE(gb.st.is_ok()) << gb.st.to_string();
    EXPECT_TRUE(gb.raw == c.raw) << dtype_name(t) << " regenerated backward";
  }
}

TEST(DropoutCuda, StridedMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloats) {
    const auto x = rt::bytes_of(t, xs(40 * 41));
    rt::DropoutInputs in;
    in.x_strides = Dims{1, 41};
    in.out_strides = Dims{42, 1};
    auto g = rt::run_dropout(bt::kGpu, fwd(t, {41, 40}, 0.3, true), kSeed, x, in);
    auto c = rt::run_dropout(kCpu, fwd(t, {41, 40}, 0.3, true), kSeed, x, in);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    EXPECT_EQ(g.variant, "strided");
    EXPECT_EQ(g.raw, c.raw) << dtype_name(t);
    EXPECT_EQ(g.mask, c.mask) << dtype_name(t);
  }
}

TEST(DropoutCuda, CapturedForwardBackwardWithDeviceOffset) {
  BT_SKIP_WITHOUT_GPU();
  bt::CapturedGraph cg;
  ASSERT_EQ(cudaStreamCreateWithFlags(&cg.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, cg.stream);
  const int64_t n = 5000;
  const DType t = DType::BF16;
  DropoutDescriptor fd = fwd(t, {n}, 0.3, false);
  fd.device_offset = true;
  DropoutBackwardDescriptor bd;
  bd.dtype = t, bd.shape = {n}, bd.p = 0.3, bd.device_offset = true;
  auto fp = DropoutPlan::select(s, fd).value();
  auto bp = DropoutBackwardPlan::select(s, bd).value();
  const auto xr = rt::bytes_of(t, xs(n));
  Buffer x = rt::upload(Device::cuda(0), xr), out(Device::cuda(0), n * 2), dx(Device::cuda(0), n * 2),
         off(Device::cuda(0), 8);
  ASSERT_TRUE(off.fill_bytes(0).is_ok());
  DropoutArgs fa;
  fa.seed = RandomSeed{5, 100};
  fa.x = x.view(t, {n});
  fa.out = out.view_mut(t, {n});
  fa.offset = off.view_mut(DType::I64, {1});
  DropoutBackwardArgs ba;
  ba.seed = fa.seed;
  ba.dy = x.view(t, {n});
  ba.dx = dx.view_mut(t, {n});
  ba.offset = off.view(DType::I64, {1});
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(cg.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status s1 = fp.run(s, {}, fa);
  const Status s2 = bp.run(s, {}, ba);
  ASSERT_EQ(cudaStreamEndCapture(cg.stream, &cg.graph), cudaSuccess);
  ASSERT_TRUE(s1.is_ok()) << s1.to_string();
  ASSERT_TRUE(s2.is_ok()) << s2.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&cg.exec, cg.graph, 0), cudaSuccess);
  std::vector<uint8_t> prev;
  for (uint64_t replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(cg.exec, cg.stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(cg.stream), cudaSuccess);
    auto o = rt::download(out, n * 2), g = rt::download(dx, n * 2);
    auto c = rt::run_dropout(kCpu, fwd(t, {n}, 0.3, false), RandomSeed{5, 100 + replay}, xr);
    EXPECT_EQ(o, c.raw) << "replay " << replay;
    EXPECT_EQ(g, c.raw) << "the backward used the forward's offset, replay " << replay;
    EXPECT_NE(o, prev);
    prev = o;
  }
}

}  // namespace

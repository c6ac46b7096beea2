// NormPlan / NormBackwardPlan on CUDA (PlanPreference requiring
// Backend::Bespoke) against the CPU reference on random data:
//   every dtype x both kinds x row lengths 1, 7, 33, 768, 1000, 4096, 16384,
//   65536 (forward and backward), which covers the warp, block and long paths
//   with and without 16-byte vectors; strided rows (aligned and misaligned
//   row padding), strided stats, k = 2, weight / bias / zero-centred weight,
//   the fused residual and residual_grad, each optional output, in place;
//   the SKU / sku_for variants; a non-contiguous normalized block is refused.
// Outputs are poisoned before each run (NaN bytes first, a finite pattern
// second); both runs must succeed, leave the gaps of strided outputs alone and
// agree bit for bit (dweight / dbias included: the column sums are
// deterministic). Tolerances relative to ||ref|| (bt::tolerance). Without a
// GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/norm_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::kGpu, bt::to_device, bt::to_host;

constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr NormKind kLN = NormKind::LayerNorm, kRMS = NormKind::RMSNorm;

struct Case {
  NormDescriptor d;
  // Backward flags (need_dx, need_dweight, need_dbias, residual_grad).
  bool dx = true, dw = true, db = true, rg = false;
  int64_t row_pad = 0, offset = 0;  // rank-2 shapes: rows of len + row_pad elements, starting `offset` in
  int64_t stats_stride = 1;
  bool in_place = false;            // y = x and h = residual; dx = dy
};

std::string name(const Case& c, bool backward) {
  const NormDescriptor& d = c.d;
  return std::string(dtype_name(d.dtype)) + " " + norm_kind_name(d.kind) + (backward ? " bwd " : " fwd ") +
         d.shape.to_string() + " k " + std::to_string(d.normalized_dims) + " w " + std::to_string(d.has_weight) + " b " +
         std::to_string(d.has_bias) + " zc " + std::to_string(d.zero_centered_weight) + " res " +
         std::to_string(d.residual) + " stats " + std::to_string(d.save_stats) + " needs " + std::to_string(c.dx) +
         std::to_string(c.dw) + std::to_string(c.db) + " rg " + std::to_string(c.rg) + " pad " + std::to_string(c.row_pad) +
         " offset " + std::to_string(c.offset) + " stats_stride " + std::to_string(c.stats_stride) +
         (c.in_place ? " in place" : "");
}

bt::Layout row_layout(const Case& c) {
  if (c.row_pad == 0 && c.offset == 0) return bt::contiguous(c.d.shape);
  const int64_t rows = c.d.shape[0], len = c.d.shape[1];
  bt::Layout L;
  L.shape = c.d.shape;
  L.strides = {len + c.row_pad, 1};
  L.offset = c.offset;
  L.storage = c.offset + rows * (len + c.row_pad);
  L.name = "row_padded";
  return L;
}
bt::Layout stats_layout(int64_t rows, int64_t stride) {
  bt::Layout L;
  L.shape = {rows};
  L.strides = {stride};
  L.storage = std::max<int64_t>(rows * stride, 1);
  return L;
}

// One tensor: its layout, host staging and device buffer.
struct Tensor {
  DType t = DType::F32;
  bt::Layout L;
  bt::HostBuffer host;
  Buffer dev;
  Tensor() = default;
  Tensor(DType dt, const bt::Layout& layout, const std::vector<double>* values) : t(dt), L(layout), host(dt, layout.storage) {
    host.poison();
    if (values) bt::scatter(host, L, *values);
    dev = to_device(host, 16);
  }
  TensorRef ref() const { return bt::view(dev, t, L); }
  TensorMut mut() { return bt::view_mut(dev, t, L); }
  std::vector<double> values() const { return bt::gather(to_host(dev, t, L.storage), L); }
};

std::string compare(const char* what, const std::vector<double>& got, const std::vector<double>& ref, DType t) {
  double worst = 0;
  return bt::check_close(what, got, ref, bt::tolerance(t), &worst);
}

// CPU reference of the forward on contiguous host copies.
bt::norm_model::Forward cpu_forward(const NormDescriptor& d, const bt::NormInputs& in) {
  const bt::Layout C = bt::contiguous(d.shape), W = bt::contiguous(bt::norm_weight_shape(d));
  const int64_t rows = bt::norm_rows(d);
  const DType sd = bt::norm_stats_dtype(d);
  bt::HostBuffer x = bt::host_from(d.dtype, in.x), r = bt::host_from(d.dtype, in.res), w = bt::host_from(d.dtype, in.w),
                 b = bt::host_from(d.dtype, in.b), y(d.dtype, C.storage), h(d.dtype, C.storage), m(sd, rows), s(sd, rows);
  const bt::Layout S = bt::contiguous({rows});
  NormDescriptor full = d;
  full.save_stats = true;
  NormArgs a;
  a.x = bt::view(x, C);
  if (d.residual) a.residual = bt::view(r, C), a.h = bt::view_mut(h, C);
  if (d.has_weight) a.weight = bt::view(w, W);
  if (d.has_bias) a.bias = bt::view(b, W);
  a.y = bt::view_mut(y, C);
  if (d.kind == kLN) a.mean = bt::view_mut(m, S);
  a.rstd = bt::view_mut(s, S);
  const Status st = NormPlan::select(Stream::cpu(), full).value().run(Stream::cpu(), {}, a);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  bt::norm_model::Forward f;
  f.y = bt::all_values(y);
  if (d.residual) f.h = bt::all_values(h);
  f.mean = d.kind == kLN ? bt::all_values(m) : std::vector<double>(static_cast<size_t>(rows), 0.0);
  f.rstd = bt::all_values(s);
  return f;
}

::testing::AssertionResult check_forward(const Case& c, std::string* variant = nullptr) {
  const NormDescriptor& d = c.d;
  bt::Rng rng(bt::fresh_seed(name(c, false)));
  const bt::NormInputs in = bt::norm_inputs(d, rng);
  const auto ref = cpu_forward(d, in);
  const bt::Layout L = row_layout(c), W = bt::contiguous(bt::norm_weight_shape(d));
  const int64_t rows = bt::norm_rows(d);
  const DType sd = bt::norm_stats_dtype(d);
  const bool rms = d.kind == kRMS;
  Tensor x(d.dtype, L, &in.x), r(d.dtype, L, &in.res), w(d.dtype, W, &in.w), b(d.dtype, W, &in.b);
  Tensor y(d.dtype, L, nullptr), h(d.dtype, L, nullptr), m(sd, stats_layout(rows, c.stats_stride), nullptr),
      s(sd, stats_layout(rows, c.stats_stride), nullptr);
  auto plan = NormPlan::select(kGpu, d, bespoke());
  if (!plan) return ::testing::AssertionFailure() << name(c, false) << ": " << plan.status().to_string();
  Tensor& yt = c.in_place ? x : y;
  Tensor& ht = c.in_place ? r : h;
  auto args = [&] {
    NormArgs a;
    a.x = x.ref();
    if (d.residual) a.residual = r.ref(), a.h = ht.mut();
    if (d.has_weight) a.weight = w.ref();
    if (d.has_bias) a.bias = b.ref();
    a.y = yt.mut();
    if (d.save_stats && !rms) a.mean = m.mut();
    if (d.save_stats) a.rstd = s.mut();
    return a;
  };
  std::vector<bt::DeviceOut> outs;
  if (!c.in_place) {
    outs.push_back({"y", &y.dev, d.dtype, L});
    if (d.residual) outs.push_back({"h", &h.dev, d.dtype, L});
  }
  if (d.save_stats && !rms) outs.push_back({"mean", &m.dev, sd, m.L});
  if (d.save_stats) outs.push_back({"rstd", &s.dev, sd, s.L});
  auto run = [&]() -> Status {
    if (c.in_place) {  // fresh inputs for every run
      BARACUDA_RETURN_IF_ERROR(x.dev.copy_from_host(x.host.data(), x.host.bytes()));
      BARACUDA_RETURN_IF_ERROR(r.dev.copy_from_host(r.host.data(), r.host.bytes()));
    }
    return plan->run(kGpu, {}, args());
  };
  std::vector<bt::HostBuffer> first;
  const std::string err = bt::run_twice(run, outs, &first);
  if (!err.empty()) return ::testing::AssertionFailure() << name(c, false) << ": " << err;
  if (variant) {
    auto k = plan->sku_for(kGpu, {}, args());
    if (!k) return ::testing::AssertionFailure() << name(c, false) << ": sku_for: " << k.status().to_string();
    *variant = k->variant;
  }
  std::string e = compare("y", yt.values(), ref.y, d.dtype);
  if (e.empty() && d.residual) e = compare("h", ht.values(), ref.h, d.dtype);
  if (e.empty() && d.save_stats && !rms) e = compare("mean", m.values(), ref.mean, sd);
  if (e.empty() && d.save_stats) e = compare("rstd", s.values(), ref.rstd, sd);
  if (!e.empty()) return ::testing::AssertionFailure() << name(c, false) << ": " << e;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult check_backward(const Case& c, std::string* variant = nullptr) {
  const NormDescriptor& d = c.d;
  NormBackwardDescriptor bd;
  bd.forward = d;
  bd.forward.save_stats = true;
  bd.need_dx = c.dx;
  bd.need_dweight = c.dw;
  bd.need_dbias = c.db;
  bd.residual_grad = c.rg;
  bt::Rng rng(bt::fresh_seed(name(c, true)));
  const bt::NormInputs in = bt::norm_inputs(d, rng);
  // The saved stats of x, from the CPU forward (without the residual: x is the normalized input).
  NormDescriptor plain = d;
  plain.residual = false;
  const auto f = cpu_forward(plain, in);
  const bt::Layout C = bt::contiguous(d.shape), L = row_layout(c), W = bt::contiguous(bt::norm_weight_shape(d));
  const int64_t rows = bt::norm_rows(d);
  const DType sd = bt::norm_stats_dtype(d);
  const bool rms = d.kind == kRMS;
  const bool dw = c.dw && d.has_weight, db = c.db && d.has_bias;
  // CPU reference.
  bt::norm_model::Backward ref;
  {
    bt::HostBuffer hx = bt::host_from(d.dtype, in.x), hg = bt::host_from(d.dtype, in.dy), hh = bt::host_from(d.dtype, in.dh),
                   hw = bt::host_from(d.dtype, in.w), hm = bt::host_from(sd, f.mean), hs = bt::host_from(sd, f.rstd),
                   hdx(d.dtype, C.storage), hdw(d.dtype, W.storage), hdb(d.dtype, W.storage);
    const bt::Layout S = bt::contiguous({rows});
    NormBackwardArgs a;
    a.dy = bt::view(hg, C);
    a.x = bt::view(hx, C);
    if (d.has_weight && c.dx) a.weight = bt::view(hw, W);
    if (!rms) a.mean = bt::view(hm, S);
    a.rstd = bt::view(hs, S);
    if (c.rg) a.dh_in = bt::view(hh, C);
    if (c.dx) a.dx = bt::view_mut(hdx, C);
    if (dw) a.dweight = bt::view_mut(hdw, W);
    if (db) a.dbias = bt::view_mut(hdb, W);
    auto p = NormBackwardPlan::select(Stream::cpu(), bd);
    if (!p) return ::testing::AssertionFailure() << name(c, true) << ": CPU: " << p.status().to_string();
    const Status st = p->run(Stream::cpu(), {}, a);
    if (!st) return ::testing::AssertionFailure() << name(c, true) << ": CPU: " << st.to_string();
    ref.dx = bt::all_values(hdx);
    ref.dw = bt::all_values(hdw);
    ref.db = bt::all_values(hdb);
  }
  Tensor x(d.dtype, L, &in.x), g(d.dtype, L, &in.dy), hin(d.dtype, L, &in.dh), w(d.dtype, W, &in.w);
  Tensor m(sd, stats_layout(rows, c.stats_stride), &f.mean), s(sd, stats_layout(rows, c.stats_stride), &f.rstd);
  Tensor dx(d.dtype, L, nullptr), dwt(d.dtype, W, nullptr), dbt(d.dtype, W, nullptr);
  auto plan = NormBackwardPlan::select(kGpu, bd, bespoke());
  if (!plan) return ::testing::AssertionFailure() << name(c, true) << ": " << plan.status().to_string();
  Buffer ws = bt::device_workspace(plan->workspace_size());
  Tensor& dxt = c.in_place ? g : dx;
  auto args = [&] {
    NormBackwardArgs a;
    a.dy = g.ref();
    a.x = x.ref();
    if (d.has_weight && c.dx) a.weight = w.ref();
    if (!rms) a.mean = m.ref();
    a.rstd = s.ref();
    if (c.rg) a.dh_in = hin.ref();
    if (c.dx) a.dx = dxt.mut();
    if (dw) a.dweight = dwt.mut();
    if (db) a.dbias = dbt.mut();
    return a;
  };
  std::vector<bt::DeviceOut> outs;
  if (c.dx && !c.in_place) outs.push_back({"dx", &dx.dev, d.dtype, L});
  if (dw) outs.push_back({"dweight", &dwt.dev, d.dtype, W});
  if (db) outs.push_back({"dbias", &dbt.dev, d.dtype, W});
  auto run = [&]() -> Status {
    if (c.in_place) BARACUDA_RETURN_IF_ERROR(g.dev.copy_from_host(g.host.data(), g.host.bytes()));
    return plan->run(kGpu, Workspace(ws.data(), ws.bytes()), args());
  };
  std::vector<bt::HostBuffer> first;
  const std::string err = bt::run_twice(run, outs, &first);
  if (!err.empty()) return ::testing::AssertionFailure() << name(c, true) << ": " << err;
  if (variant) {
    auto k = plan->sku_for(kGpu, Workspace(ws.data(), ws.bytes()), args());
    if (!k) return ::testing::AssertionFailure() << name(c, true) << ": sku_for: " << k.status().to_string();
    *variant = k->variant;
  }
  std::string e;
  if (c.dx) e = compare("dx", dxt.values(), ref.dx, d.dtype);
  if (e.empty() && dw) e = compare("dweight", dwt.values(), ref.dw, d.dtype);
  if (e.empty() && db) e = compare("dbias", dbt.values(), ref.db, d.dtype);
  if (!e.empty()) return ::testing::AssertionFailure() << name(c, true) << ": " << e;
  return ::testing::AssertionSuccess();
}

int64_t rows_for(int64_t len) { return std::clamp<int64_t>((int64_t{1} << 18) / len, 2, 96); }

Case make(NormKind kind, DType t, Dims shape, int k = 1, bool weight = true, bool bias = false, bool res = false,
          bool zc = false) {
  Case c;
  c.d = bt::norm_desc(kind, t, shape, k, weight, bias, res, zc);
  return c;
}

// ---- tests -------------------------------------------------------------------------------
TEST(NormCuda, ForwardEveryDtypeKindAndRowLength) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (NormKind kind : {kLN, kRMS})
      for (int64_t len : {1, 7, 33, 768, 1000, 4096, 16384, 65536}) {
        Case c = make(kind, t, {rows_for(len), len}, 1, true, kind == kLN);
        EXPECT_TRUE(check_forward(c));
      }
}

TEST(NormCuda, BackwardEveryDtypeKindAndRowLength) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (NormKind kind : {kLN, kRMS})
      for (int64_t len : {1, 7, 33, 768, 1000, 4096, 16384, 65536}) {
        Case c = make(kind, t, {rows_for(len), len}, 1, true, kind == kLN);
        EXPECT_TRUE(check_backward(c));
      }
}

TEST(NormCuda, FusedResidualAndResidualGrad) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::BF16})
    for (NormKind kind : {kLN, kRMS})
      for (int64_t len : {33, 1000, 8192, 65536}) {
        Case c = make(kind, t, {rows_for(len), len}, 1, true, kind == kLN, true, kind == kRMS);
        EXPECT_TRUE(check_forward(c));
        c.rg = true;
        EXPECT_TRUE(check_backward(c));
      }
}

TEST(NormCuda, StridedRowsStatsAndTwoNormalizedDims) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::F16, DType::F64})
    for (NormKind kind : {kLN, kRMS})
      for (int64_t len : {7, 1000, 4096, 65536})
        for (int pad_case = 0; pad_case < 2; ++pad_case) {
          Case c = make(kind, t, {rows_for(len), len}, 1, true, kind == kLN, pad_case == 1);
          c.row_pad = pad_case == 0 ? 16 : 3;  // aligned rows (vectors) or misaligned ones (elements)
          c.offset = pad_case == 0 ? 0 : 1;
          c.stats_stride = 2;
          EXPECT_TRUE(check_forward(c));
          c.rg = pad_case == 1;
          EXPECT_TRUE(check_backward(c));
        }
  // k = 2: a normalized block of two axes.
  for (NormKind kind : {kLN, kRMS}) {
    Case c = make(kind, DType::F32, {3, 5, 4, 48}, 2, true, kind == kLN);
    EXPECT_TRUE(check_forward(c));
    EXPECT_TRUE(check_backward(c));
  }
}

TEST(NormCuda, EachOptionalOutputAndInput) {
  BT_SKIP_WITHOUT_GPU();
  for (NormKind kind : {kLN, kRMS})
    for (int64_t len : {768, 4096}) {
      // No weight; zero-centred weight; no stats.
      EXPECT_TRUE(check_forward(make(kind, DType::BF16, {16, len}, 1, false)));
      EXPECT_TRUE(check_forward(make(kind, DType::BF16, {16, len}, 1, true, false, false, true)));
      Case nostats = make(kind, DType::F32, {16, len});
      nostats.d.save_stats = false;
      EXPECT_TRUE(check_forward(nostats));
      // Backward: every subset of dx / dweight / dbias.
      for (int mask = 1; mask < 8; ++mask) {
        Case c = make(kind, DType::F32, {40, len}, 1, true, kind == kLN, false, mask == 5);
        c.dx = mask & 1, c.dw = mask & 2, c.db = mask & 4;
        if (!c.dx && !c.dw && !(c.db && kind == kLN)) continue;
        EXPECT_TRUE(check_backward(c));
      }
    }
}

// The block path's fused column sums with several rows per block (the grid
// is at most 4 blocks per SM): vectors (double-buffered: "prefetch") and
// elements, 256 and 1024 threads, one row per block, both kinds, the fused
// residual, in place.
TEST(NormCuda, FusedColumnSumsOverManyRows) {
  BT_SKIP_WITHOUT_GPU();
  struct S {
    DType t;
    int64_t rows, len, pad;
  };
  for (const S& s : {S{DType::BF16, 3000, 4096, 0}, S{DType::F16, 2500, 2048, 0}, S{DType::F32, 600, 16384, 0},
                     S{DType::F32, 1200, 3000, 3}, S{DType::BF16, 1100, 1032, 0}, S{DType::BF16, 700, 16384, 0},
                     S{DType::BF16, 100, 16384, 0}})
    for (NormKind kind : {kLN, kRMS}) {
      Case c = make(kind, s.t, {s.rows, s.len}, 1, true, kind == kLN, kind == kRMS);
      c.row_pad = s.pad;
      c.rg = kind == kRMS;
      std::string got;
      EXPECT_TRUE(check_forward(c, &got));  // many rows per persistent block (prefetch) too
      EXPECT_TRUE(check_backward(c, &got));
      EXPECT_NE(got.find("+colsum.fused"), std::string::npos) << got;
      c.dx = false;  // the same sums from the separate kernel
      c.rg = false;
      EXPECT_TRUE(check_backward(c, &got));
      EXPECT_EQ(got, "colsum");
    }
  Case c = make(kLN, DType::BF16, {3000, 4096}, 1, true, true);
  c.in_place = true;
  EXPECT_TRUE(check_backward(c));
}

TEST(NormCuda, InPlace) {
  BT_SKIP_WITHOUT_GPU();
  for (NormKind kind : {kLN, kRMS})
    for (int64_t len : {33, 4096, 65536}) {
      Case c = make(kind, DType::F32, {8, len}, 1, true, kind == kLN, true);
      c.in_place = true;
      EXPECT_TRUE(check_forward(c));
      EXPECT_TRUE(check_backward(c));
    }
}

TEST(NormCuda, VariantsNameThePath) {
  BT_SKIP_WITHOUT_GPU();
  if (!bt::device_is_sm90()) GTEST_SKIP() << "the block path's limit is sm_90's here";
  struct V {
    int64_t len;
    const char* fwd;
    const char* bwd;
  };
  // f32: warp up to 1024, staged block up to 200 KiB (backward: x and dy), then long.
  for (const V& v : {V{7, "warp", "warp+colsum"}, V{768, "warp.vec16", "warp.vec16+colsum"},
                     V{2048, "block.vec16.regs", "block.vec16.prefetch+colsum.fused"}, V{4096, "block.vec16.prefetch", "block.vec16.prefetch+colsum.fused"}, V{32768, "block.vec16", "long.vec16+colsum"},
                     V{65536, "long.vec16", "long.vec16+colsum"}}) {
    std::string got;
    Case c = make(kLN, DType::F32, {4, v.len}, 1, true, true);
    EXPECT_TRUE(check_forward(c, &got));
    EXPECT_EQ(got, v.fwd) << v.len;
    EXPECT_TRUE(check_backward(c, &got));
    EXPECT_EQ(got, v.bwd) << v.len;
    auto plan = NormPlan::select(kGpu, c.d, bespoke()).value();
    EXPECT_EQ(plan.sku().variant, v.fwd) << v.len;
  }
  // Misaligned rows fall back to element access.
  std::string got;
  Case c = make(kRMS, DType::F32, {4, 768});
  c.row_pad = 1;
  EXPECT_TRUE(check_forward(c, &got));
  EXPECT_EQ(got, "warp");
}

TEST(NormCuda, NonContiguousNormalizedBlockIsUnsupported) {
  BT_SKIP_WITHOUT_GPU();
  const NormDescriptor d = bt::norm_desc(kRMS, DType::F32, {4, 8});
  auto plan = NormPlan::select(kGpu, d, bespoke()).value();
  Buffer bx(Device::cuda(0), 64 * 4), by(Device::cuda(0), 32 * 4), bw(Device::cuda(0), 8 * 4), bs(Device::cuda(0), 4 * 4);
  NormArgs a;
  a.x = TensorRef(bx.data(), DType::F32, Device::cuda(0), {4, 8}, {1, 4}, 32);  // transposed
  a.weight = TensorRef::contiguous(bw.data(), DType::F32, Device::cuda(0), {8}, 8);
  a.y = TensorMut::contiguous(by.data(), DType::F32, Device::cuda(0), {4, 8}, 32);
  a.rstd = TensorMut::contiguous(bs.data(), DType::F32, Device::cuda(0), {4}, 4);
  const Status st = plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::Unsupported) << st.to_string();
  EXPECT_NE(st.message().find("NormPlan: x strides [1,4] for shape [4,8]: the CUDA kernels need the normalized block"),
            std::string::npos)
      << st.to_string();
}

}  // namespace

// SoftmaxPlan / SoftmaxBackwardPlan on CUDA (PlanPreference requiring
// Backend::Bespoke) against the CPU reference on random data:
//   every dtype x row lengths 1, 7, 33, 1000, 4096, 50304, 262144 (and 1M in
//   f32 / bf16) x softmax / log_softmax x forward / backward, which covers
//   every path (warp, block, split) with and without 16-byte vectors;
//   strided rows (aligned and misaligned row padding), softmax over a leading
//   and a middle axis and transposed views (generic path), in place, all -inf
//   rows, NaN and +inf rows, scale, the SKU / sku_for variants, zero size.
// Outputs are poisoned before each run (NaN bytes first, a finite pattern
// second); both runs must succeed, leave the gaps of strided outputs alone and
// agree bit for bit. Tolerances relative to ||ref|| (bt::tolerance): f64
// 1e-12, f32 1e-5, f16 2e-3, bf16 1e-2. Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::kGpu, bt::to_device, bt::to_host;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

enum class Fill { Random, Special };  // Special: rows of -inf, NaN, +inf, partly -inf, then random rows

struct Spec {
  DType t = DType::F32;
  Dims shape;
  int axis = -1;
  bool log = false;
  double scale = 1.0;
  bool backward = false;
  bt::Layout in, out;  // layouts of the inputs and of the output
  bool in_place = false;
  Fill fill = Fill::Random;
};

std::string name(const Spec& s) {
  return std::string(dtype_name(s.t)) + (s.backward ? " bwd" : " fwd") + (s.log ? " log" : "") + " " +
         s.shape.to_string() + " axis " + std::to_string(s.axis) + " scale " + std::to_string(s.scale) + " in " +
         bt::describe(s.in) + (s.in_place ? " in place" : " out " + bt::describe(s.out));
}

// [rows, len] with each row `pad` elements longer than len, starting `offset` elements in.
bt::Layout row_padded(int64_t rows, int64_t len, int64_t pad, int64_t offset) {
  bt::Layout L;
  L.shape = {rows, len};
  L.strides = {len + pad, 1};
  L.offset = offset;
  L.storage = offset + rows * (len + pad);
  L.name = "row_padded(" + std::to_string(pad) + ", offset " + std::to_string(offset) + ")";
  return L;
}

Spec spec(DType t, Dims shape, int axis = -1, bool log = false, bool backward = false) {
  Spec s;
  s.t = t;
  s.shape = shape;
  s.axis = axis;
  s.log = log;
  s.backward = backward;
  s.in = s.out = bt::contiguous(shape);
  return s;
}

// Logical input values: x (forward) or y and dy (backward).
std::vector<double> input_values(const Spec& s, bt::Rng& rng, int which) {
  const int64_t n = bt::numel(s.shape);
  std::vector<double> v = s.backward && which == 0 ? bt::random_values(s.t, n, rng, -1.0, 1.0)  // y
                                                    : bt::random_values(s.t, n, rng, -4.0, 4.0);
  if (s.fill == Fill::Special && !s.backward && s.axis == -1 && s.shape.rank == 2) {
    const int64_t len = s.shape[1];
    const double specials[4] = {-kInf, kNaN, kInf, -kInf};
    for (int64_t r = 0; r < std::min<int64_t>(4, s.shape[0]); ++r)
      for (int64_t j = 0; j < len; ++j) {
        double& e = v[static_cast<size_t>(r * len + j)];
        if (r == 0) e = -kInf;                          // all masked
        else if (r == 3) e = j % 3 == 0 ? e : -kInf;    // partly masked
        else if (j == len / 2) e = specials[r];         // one NaN / one +inf
      }
  }
  return v;
}

// Finite entries compared by rel_error; specials (NaN, +-inf) must match exactly.
::testing::AssertionResult compare(const Spec& s, const std::vector<double>& got, const std::vector<double>& ref) {
  std::vector<double> g, r;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isfinite(ref[i])) {
      g.push_back(got[i]);
      r.push_back(ref[i]);
    } else if (!bt::same_value(got[i], ref[i])) {
      return ::testing::AssertionFailure() << name(s) << ": element " << i << " is " << got[i] << ", reference " << ref[i];
    }
  }
  const double e = bt::rel_error(g, r), tol = bt::tolerance(s.t);
  if (!(e <= tol))
    return ::testing::AssertionFailure() << name(s) << ": rel error " << e << " > " << tol << "; "
                                         << bt::describe_mismatch(g, r);
  return ::testing::AssertionSuccess();
}

// Runs the plan of spec s on `stream` over the given views.
Status run_on(const Stream& stream, const Spec& s, const PlanPreference& pref, Workspace ws_given, bool use_ws,
              TensorRef a, TensorRef b, TensorMut o, Buffer* ws_buf, KernelSku* sku = nullptr) {
  if (!s.backward) {
    SoftmaxDescriptor d{s.t, s.shape, s.axis, s.log, s.scale};
    auto plan = SoftmaxPlan::select(stream, d, pref);
    if (!plan) return plan.status();
    Workspace ws = ws_given;
    if (!use_ws && plan->workspace_size() > 0) {
      *ws_buf = bt::device_workspace(plan->workspace_size());
      ws = Workspace(ws_buf->data(), ws_buf->bytes());
    }
    if (sku) {
      auto k = plan->sku_for(stream, ws, {a, o});
      if (!k) return k.status();
      *sku = *k;
    }
    return plan->run(stream, ws, {a, o});
  }
  SoftmaxBackwardDescriptor d{s.t, s.shape, s.axis, s.log, s.scale};
  auto plan = SoftmaxBackwardPlan::select(stream, d, pref);
  if (!plan) return plan.status();
  Workspace ws = ws_given;
  if (!use_ws && plan->workspace_size() > 0) {
    *ws_buf = bt::device_workspace(plan->workspace_size());
    ws = Workspace(ws_buf->data(), ws_buf->bytes());
  }
  if (sku) {
    auto k = plan->sku_for(stream, ws, {a, b, o});
    if (!k) return k.status();
    *sku = *k;
  }
  return plan->run(stream, ws, {a, b, o});
}

// CUDA vs the CPU reference for one spec; *variant receives sku_for's variant.
::testing::AssertionResult check(const Spec& s, std::string* variant = nullptr) {
  bt::Rng rng(bt::fresh_seed(name(s)));
  const auto v0 = input_values(s, rng, 0);
  const auto v1 = s.backward ? input_values(s, rng, 1) : std::vector<double>{};
  const bt::Layout C = bt::contiguous(s.shape);

  // CPU reference on contiguous copies.
  bt::HostBuffer h0 = bt::host_from(s.t, v0), h1 = bt::host_from(s.t, v1), href(s.t, bt::numel(s.shape));
  {
    Buffer unused;
    const Status st = run_on(Stream::cpu(), s, {}, {}, true, bt::view(h0, C), s.backward ? bt::view(h1, C) : TensorRef(),
                             bt::view_mut(href, C), &unused);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": CPU reference failed: " << st.to_string();
  }
  const auto ref = bt::all_values(href);

  // Device inputs in their layout.
  bt::HostBuffer in0(s.t, s.in.storage), in1(s.t, s.in.storage);
  in0.poison();
  in1.poison();
  bt::scatter(in0, s.in, v0);
  if (s.backward) bt::scatter(in1, s.in, v1);
  Buffer d0 = to_device(in0, 16), d1 = to_device(in1, 16);
  Buffer dout = bt::device_storage(s.t, s.out);
  Buffer ws;
  const bt::Layout& Lo = s.in_place ? s.in : s.out;
  Buffer& out_buf = s.in_place ? (s.backward ? d1 : d0) : dout;

  bt::HostBuffer first;
  for (int pass = 0; pass < 2; ++pass) {
    const uint8_t pb = pass == 0 ? bt::poison_byte(s.t) : bt::alt_poison_byte(s.t);
    if (s.in_place) {  // fresh inputs for every run
      EXPECT_TRUE(d0.copy_from_host(in0.data(), in0.bytes()).is_ok());
      EXPECT_TRUE(d1.copy_from_host(in1.data(), in1.bytes()).is_ok());
    } else {
      EXPECT_TRUE(dout.fill_bytes(pb).is_ok());
    }
    KernelSku sku;
    Status st = run_on(kGpu, s, bespoke(), {}, false, bt::view(d0, s.t, s.in),
                       s.backward ? bt::view(d1, s.t, s.in) : TensorRef(), bt::view_mut(out_buf, s.t, Lo), &ws, &sku);
    if (st) st = synchronize(kGpu);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": run " << pass + 1 << ": " << st.to_string();
    if (variant) *variant = sku.variant;
    bt::HostBuffer h = to_host(out_buf, s.t, Lo.storage);
    const std::string gaps = bt::check_gaps(h, Lo, s.in_place ? bt::poison_byte(s.t) : pb);
    if (!gaps.empty()) return ::testing::AssertionFailure() << name(s) << ": run " << pass + 1 << ": " << gaps;
    if (pass == 0) {
      first = std::move(h);
      continue;
    }
    if (bt::materialize(first, Lo).raw() != bt::materialize(h, Lo).raw())
      return ::testing::AssertionFailure() << name(s) << ": the two runs differ (unwritten elements or not deterministic)";
  }
  return compare(s, bt::gather(first, Lo), ref);
}

// Rows per length: enough rows to cross blocks, a moderate element count.
int64_t rows_for(int64_t len) { return len <= 33 ? 129 : len <= 1000 ? 67 : len <= 4096 ? 33 : len <= 50304 ? 7 : 3; }

}  // namespace

// Every row length on contiguous rows: every path, every dtype, both
// directions, softmax and log_softmax.
TEST(SoftmaxCuda, RowLengthsMatchReference) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (int64_t len : {1, 7, 33, 1000, 4096, 50304, 262144})
      for (bool backward : {false, true})
        for (bool log : {false, true}) {
          Spec s = spec(t, {rows_for(len), len}, -1, log, backward);
          s.scale = log ? 0.5 : 1.0;
          EXPECT_TRUE(check(s));
        }
}

TEST(SoftmaxCuda, MillionElementRows) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::BF16})
    for (bool backward : {false, true}) {
      std::string variant;
      EXPECT_TRUE(check(spec(t, {2, 1 << 20}, -1, backward, backward), &variant));
      EXPECT_EQ(variant, "split.vec16");
    }
}

// Strided rows: row padding that keeps 16-byte alignment (vector path with a
// row stride) and padding that breaks it (element path).
TEST(SoftmaxCuda, StridedRows) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (int64_t len : {33, 1000, 4096, 262144})
      for (bool backward : {false, true})
        for (int64_t offset : {0, 1}) {
          const int64_t rows = len > 4096 ? 2 : 9;
          Spec s = spec(t, {rows, len}, -1, false, backward);
          s.in = row_padded(rows, len, 8, offset);
          s.out = row_padded(rows, len, 16, 0);
          std::string variant;
          EXPECT_TRUE(check(s, &variant));
          if (offset == 1) EXPECT_EQ(variant.find("vec16"), std::string::npos) << name(s) << ": " << variant;
        }
}

// The generic path: a leading axis, a middle axis, transposed and
// every-other views.
TEST(SoftmaxCuda, AnyAxisAndLayout) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (bool backward : {false, true})
      for (bool log : {false, true}) {
        Spec lead = spec(t, {300, 257}, 0, log, backward);
        std::string variant;
        EXPECT_TRUE(check(lead, &variant));
        EXPECT_EQ(variant, "generic");
        EXPECT_TRUE(check(spec(t, {5, 67, 9}, 1, log, backward)));
        Spec tr = spec(t, {40, 1000}, -1, log, backward);
        tr.in = bt::transposed(tr.shape);
        EXPECT_TRUE(check(tr));
        Spec eo = spec(t, {6, 4, 300}, -1, log, backward);
        eo.in = bt::every_other(eo.shape);
        eo.out = bt::padded(eo.shape);
        EXPECT_TRUE(check(eo));
      }
}

TEST(SoftmaxCuda, InPlace) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (int64_t len : {7, 1000, 4096, 262144})
      for (bool backward : {false, true}) {
        Spec s = spec(t, {len > 4096 ? 2 : 5, len}, -1, !backward, backward);
        s.in_place = true;
        EXPECT_TRUE(check(s));
      }
}

// All -inf rows give 0 (log: -inf), NaN and +inf rows give NaN, partly masked
// rows are finite, on every path.
TEST(SoftmaxCuda, SpecialValueRows) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kTypes)
    for (int64_t len : {7, 1000, 4096, 262144})
      for (bool log : {false, true}) {
        Spec s = spec(t, {5, len}, -1, log);
        s.fill = Fill::Special;
        EXPECT_TRUE(check(s));
        Spec g = s;  // the generic path on the same rows
        g.in = bt::transposed(g.shape);
        EXPECT_TRUE(check(g));
      }
}

TEST(SoftmaxCuda, ScaleAndNegativeScale) {
  BT_SKIP_WITHOUT_GPU();
  for (double scale : {0.125, -1.5, 3.0})
    for (bool backward : {false, true}) {
      Spec s = spec(DType::F32, {17, 4096}, -1, false, backward);
      s.scale = scale;
      EXPECT_TRUE(check(s));
      Spec l = spec(DType::BF16, {9, 262144}, -1, true, backward);
      l.scale = scale;
      EXPECT_TRUE(check(l));
    }
}

// sku() names the contiguous choice; sku_for() the path of the actual views.
TEST(SoftmaxCuda, VariantsPerLength) {
  BT_SKIP_WITHOUT_GPU();
  const std::pair<int64_t, const char*> want[] = {
      {7, "warp"}, {1000, "warp.vec16"}, {4096, "block.vec16"}, {262144, "split.vec16"}};
  for (const auto& [len, variant] : want) {
    auto plan = SoftmaxPlan::select(kGpu, {DType::F32, Dims{8, len}}, bespoke()).value();
    EXPECT_EQ(plan.sku().variant, variant) << len;
    EXPECT_EQ(plan.workspace_size() > 0, len == 262144) << len;
  }
  EXPECT_EQ(SoftmaxPlan::select(kGpu, {DType::F32, Dims{64, 50}, 0}, bespoke()).value().sku().variant, "generic");
  EXPECT_EQ(SoftmaxBackwardPlan::select(kGpu, {DType::F32, Dims{8, 4096}}, bespoke()).value().sku().variant, "block.vec16");
  // f64 has no warp path (block, 1024 threads); the log_softmax backward stages only dy, so f32 rows of
  // 50304 fit the block path on sm_90 where the softmax backward's y and dy do not.
  EXPECT_EQ(SoftmaxPlan::select(kGpu, {DType::F64, Dims{8, 1000}}, bespoke()).value().sku().variant, "block.vec16");
  if (SoftmaxPlan::select(kGpu, {DType::F32, Dims{8, 1000}}, bespoke()).value().sku().arch == 90) {
    EXPECT_EQ(SoftmaxBackwardPlan::select(kGpu, {DType::F32, Dims{9, 50304}, -1, true}, bespoke()).value().sku().variant,
              "block.vec16");
    EXPECT_EQ(SoftmaxBackwardPlan::select(kGpu, {DType::F32, Dims{9, 50304}, -1, false}, bespoke()).value().sku().variant,
              "split.vec16");
  }
  EXPECT_EQ(SoftmaxPlan::select(kGpu, {DType::F32, Dims{0, 4096}}, bespoke()).value().sku().variant, "empty");
}

TEST(SoftmaxCuda, ZeroSizeWritesNothing) {
  BT_SKIP_WITHOUT_GPU();
  for (Dims shape : {Dims{0, 7}, Dims{3, 0}}) {
    auto plan = SoftmaxPlan::select(kGpu, {DType::F32, shape}, bespoke()).value();
    Buffer x(Device::cuda(0), 64), y(Device::cuda(0), 64);
    ASSERT_TRUE(y.fill_bytes(0x5a).is_ok());
    ASSERT_TRUE(plan.run(kGpu, {}, {bt::view(x, DType::F32, bt::contiguous(shape)),
                                    bt::view_mut(y, DType::F32, bt::contiguous(shape))})
                    .is_ok());
    ASSERT_TRUE(synchronize(kGpu).is_ok());
    const bt::HostBuffer h = to_host(y, DType::F32, 16);
    for (uint8_t b : h.raw()) EXPECT_EQ(b, 0x5a);
  }
}

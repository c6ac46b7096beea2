// GroupedLinearPlan / GroupedLinearBackwardPlan (mixture-of-experts experts)
// on the CPU reference:
//   * every validation rule of the header's "Grouped linear" section: the
//     descriptor's (select) and the arguments' (can_implement and run), the
//     host offsets' five rules each with its own test;
//   * values against a naive model written here (plain double loops over the
//     definitions): uneven groups with empty ones, every group empty, per-group
//     and shared weights, every activation, save_aux; rows at and past
//     offsets[G] keep their poison (never written);
//   * the backward against the model (empty groups give zero dw / db rows, a
//     shared weight's gradients sum over every group) and against central
//     finite differences of the forward in f64 for every activation;
//   * f32 / f16 / bf16 against the model within bt::tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "gemm/gemm_oracle.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();
constexpr GemmActivation kActs[] = {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh,
                                    GemmActivation::Gelu};
bool needs_aux(GemmActivation a) { return a == GemmActivation::Gelu || a == GemmActivation::GeluTanh; }

GroupedLinearDescriptor gdesc(DType t, int64_t G, int64_t K, int64_t N, int64_t T, bool shared = false,
                              bool bias = true, GemmActivation act = GemmActivation::None, bool aux = false) {
  GroupedLinearDescriptor d;
  d.dtype = t;
  d.groups = G;
  d.in_features = K;
  d.out_features = N;
  d.capacity = T;
  d.shared_weight = shared;
  d.has_bias = bias;
  d.activation = act;
  d.save_aux = aux;
  return d;
}

Dims wshape(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features, d.in_features} : Dims{d.groups, d.out_features, d.in_features};
}
Dims bshape(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features} : Dims{d.groups, d.out_features};
}

TensorRef host_offsets(const std::vector<int64_t>& o) {
  return TensorRef::contiguous(o.data(), Device::cpu(), Dims{static_cast<int64_t>(o.size())},
                               static_cast<int64_t>(o.size()));
}

// ---- the model ------------------------------------------------------------------------
// The group of row r (-1 past offsets[G]).
int64_t group_of(const std::vector<int64_t>& o, int64_t r) {
  for (size_t g = 0; g + 1 < o.size(); ++g)
    if (r >= o[g] && r < o[g + 1]) return static_cast<int64_t>(g);
  return -1;
}
double w_at(const GroupedLinearDescriptor& d, const std::vector<double>& w, int64_t g, int64_t n, int64_t k) {
  const int64_t N = d.out_features, K = d.in_features;
  return w[static_cast<size_t>((d.shared_weight ? 0 : g * N * K) + n * K + k)];
}
double b_at(const GroupedLinearDescriptor& d, const std::vector<double>& b, int64_t g, int64_t n) {
  return d.has_bias ? b[static_cast<size_t>((d.shared_weight ? 0 : g * d.out_features) + n)] : 0.0;
}
// pre [T, N] (NaN for rows past offsets[G]).
std::vector<double> model_pre(const GroupedLinearDescriptor& d, const std::vector<int64_t>& o,
                              const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b) {
  const int64_t T = d.capacity, N = d.out_features, K = d.in_features;
  std::vector<double> pre(static_cast<size_t>(T * N), bt::kNaN);
  for (int64_t r = 0; r < T; ++r) {
    const int64_t g = group_of(o, r);
    if (g < 0) continue;
    for (int64_t n = 0; n < N; ++n) {
      double s = b_at(d, b, g, n);
      for (int64_t k = 0; k < K; ++k) s += x[static_cast<size_t>(r * K + k)] * w_at(d, w, g, n, k);
      pre[static_cast<size_t>(r * N + n)] = s;
    }
  }
  return pre;
}

struct Grads {
  std::vector<double> dx, dw, db;
};
Grads model_backward(const GroupedLinearDescriptor& d, const std::vector<int64_t>& o, const std::vector<double>& dy,
                     const std::vector<double>& pre, const std::vector<double>& x, const std::vector<double>& w) {
  const int64_t T = d.capacity, N = d.out_features, K = d.in_features, G = d.groups;
  const int64_t S = d.shared_weight ? 1 : G;
  Grads r{std::vector<double>(static_cast<size_t>(T * K), bt::kNaN), std::vector<double>(static_cast<size_t>(S * N * K), 0.0),
          std::vector<double>(static_cast<size_t>(S * N), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    const int64_t g = group_of(o, t);
    if (g < 0) continue;
    const int64_t s = d.shared_weight ? 0 : g;
    std::vector<double> gr(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(t * N + n);
      gr[static_cast<size_t>(n)] = dy[i] * (d.activation == GemmActivation::None ? 1.0 : gemm_oracle::act_grad(d.activation, pre[i]));
    }
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0;
      for (int64_t n = 0; n < N; ++n) acc += gr[static_cast<size_t>(n)] * w_at(d, w, g, n, k);
      r.dx[static_cast<size_t>(t * K + k)] = acc;
    }
    for (int64_t n = 0; n < N; ++n) {
      r.db[static_cast<size_t>(s * N + n)] += gr[static_cast<size_t>(n)];
      for (int64_t k = 0; k < K; ++k)
        r.dw[static_cast<size_t>((s * N + n) * K + k)] += gr[static_cast<size_t>(n)] * x[static_cast<size_t>(t * K + k)];
    }
  }
  return r;
}

// Elements of `got` where `ref` is NaN must still be the poison; the others within tol.
void expect_close(const char* what, const bt::HostBuffer& got, const std::vector<double>& ref, DType t,
                  const std::string& ctx) {
  std::vector<double> g, r;
  const uint8_t pb = bt::poison_byte(t);
  const size_t es = dtype_size(t);
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i])) {
      const uint8_t* p = static_cast<const uint8_t*>(got.data()) + i * es;
      for (size_t b = 0; b < es; ++b) ASSERT_EQ(p[b], pb) << what << " element " << i << " past offsets[G] was written; " << ctx;
      continue;
    }
    g.push_back(got.get(static_cast<int64_t>(i)));
    r.push_back(ref[i]);
  }
  const double e = bt::rel_error(g, r);
  EXPECT_LE(e, bt::tolerance(t)) << what << "; " << ctx << "; " << bt::describe_mismatch(g, r);
}

// ---- one forward + backward on the CPU against the model -------------------------------
struct Case {
  GroupedLinearDescriptor d;
  std::vector<int64_t> offs;
  std::string str() const {
    std::string s = std::string(dtype_name(d.dtype)) + " G" + std::to_string(d.groups) + " K" + std::to_string(d.in_features) +
                    " N" + std::to_string(d.out_features) + " T" + std::to_string(d.capacity) + " offsets [";
    for (int64_t v : offs) s += std::to_string(v) + " ";
    s += "]";
    s += d.shared_weight ? " shared" : " per-group";
    s += d.has_bias ? " +bias" : "";
    s += std::string(" ") + gemm_activation_name(d.activation) + (d.save_aux ? " +aux" : "");
    return s;
  }
};

void check_case(const Case& c, bt::Rng& rng) {
  const GroupedLinearDescriptor& d = c.d;
  const DType t = d.dtype;
  const int64_t T = d.capacity, N = d.out_features, K = d.in_features;
  const std::string ctx = c.str();
  const auto xv = bt::random_values(t, T * K, rng), wv = bt::random_values(t, shape_numel(wshape(d)), rng),
             bv = bt::random_values(t, shape_numel(bshape(d)), rng);
  bt::HostBuffer x = bt::host_from(t, xv), w = bt::host_from(t, wv), b = bt::host_from(t, bv);
  bt::HostBuffer y(t, T * N), aux(t, T * N);
  y.poison();
  aux.poison();
  auto plan = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string() << "; " << ctx;
  GroupedLinearArgs a;
  a.x = TensorRef::contiguous(x.data(), t, Device::cpu(), Dims{T, K});
  a.offsets = host_offsets(c.offs);
  a.weight = TensorRef::contiguous(w.data(), t, Device::cpu(), wshape(d));
  if (d.has_bias) a.bias = TensorRef::contiguous(b.data(), t, Device::cpu(), bshape(d));
  a.y = TensorMut::contiguous(y.data(), t, Device::cpu(), Dims{T, N});
  if (d.save_aux) a.aux = TensorMut::contiguous(aux.data(), t, Device::cpu(), Dims{T, N});
  const Status st = plan->run(kCpu, Workspace::none(), a);
  ASSERT_TRUE(st.is_ok()) << st.to_string() << "; " << ctx;
  const std::vector<double> pre = model_pre(d, c.offs, xv, wv, bv);
  std::vector<double> yref(pre.size());
  for (size_t i = 0; i < pre.size(); ++i) yref[i] = std::isnan(pre[i]) ? pre[i] : gemm_oracle::act(d.activation, pre[i]);
  expect_close("y", y, yref, t, ctx);
  if (d.save_aux) expect_close("aux", aux, pre, t, ctx);

  // Backward: aux = the pre-activation as stored (Relu: y).
  GroupedLinearBackwardDescriptor bd;
  bd.forward = d;
  bd.forward.save_aux = false;
  bd.need_db = d.has_bias;
  auto bplan = GroupedLinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(bplan.is_ok()) << bplan.status().to_string() << "; " << ctx;
  const auto dyv = bt::random_values(t, T * N, rng);
  bt::HostBuffer dy = bt::host_from(t, dyv), dx(t, T * K), dw(t, shape_numel(wshape(d))), db(t, shape_numel(bshape(d)));
  dx.poison();
  dw.poison();
  db.poison();
  // The stored pre-activation (rounded to the dtype), poison-free: past offsets[G] zeros.
  std::vector<double> pre_stored(pre.size(), 0.0);
  for (size_t i = 0; i < pre.size(); ++i)
    if (!std::isnan(pre[i])) pre_stored[i] = bt::round_to(t, d.activation == GemmActivation::Relu ? yref[i] : pre[i]);
  bt::HostBuffer auxin = bt::host_from(t, pre_stored);
  GroupedLinearBackwardArgs ba;
  ba.dy = TensorRef::contiguous(dy.data(), t, Device::cpu(), Dims{T, N});
  ba.offsets = host_offsets(c.offs);
  ba.x = a.x;
  ba.weight = a.weight;
  if (d.activation != GemmActivation::None) ba.aux = TensorRef::contiguous(auxin.data(), t, Device::cpu(), Dims{T, N});
  ba.dx = TensorMut::contiguous(dx.data(), t, Device::cpu(), Dims{T, K});
  ba.dw = TensorMut::contiguous(dw.data(), t, Device::cpu(), wshape(d));
  if (d.has_bias) ba.db = TensorMut::contiguous(db.data(), t, Device::cpu(), bshape(d));
  const Status bst = bplan->run(kCpu, Workspace::none(), ba);
  ASSERT_TRUE(bst.is_ok()) << bst.to_string() << "; " << ctx;
  // The model's backward from the stored pre-activation (Relu's grad of y equals that of pre).
  std::vector<double> pre_model = pre;
  for (size_t i = 0; i < pre.size(); ++i)
    if (!std::isnan(pre[i])) pre_model[i] = pre_stored[i];
  const Grads gr = model_backward(d, c.offs, dyv, pre_model, xv, wv);
  expect_close("dx", dx, gr.dx, t, ctx);
  expect_close("dw", dw, gr.dw, t, ctx);
  if (d.has_bias) expect_close("db", db, gr.db, t, ctx);
}

// ---- values ------------------------------------------------------------------------------
TEST(GroupedLinearCpu, UnevenGroupsWithEmptyOnesEveryActivation) {
  bt::Rng rng(bt::fresh_seed());
  for (bool shared : {false, true})
    for (GemmActivation act : kActs)
      for (bool bias : {true, false}) {
        Case c{gdesc(DType::F64, 5, 7, 6, 20, shared, bias, act, needs_aux(act)), {0, 3, 3, 11, 11, 17}};  // groups 1, 3 empty; rows 17.. unused
        check_case(c, rng);
      }
}

TEST(GroupedLinearCpu, EveryGroupEmptyAndFullCapacity) {
  bt::Rng rng(bt::fresh_seed());
  for (bool shared : {false, true}) {
    check_case({gdesc(DType::F64, 3, 4, 5, 6, shared, true, GemmActivation::GeluTanh, true), {0, 0, 0, 0}}, rng);
    check_case({gdesc(DType::F64, 3, 4, 5, 6, shared, true, GemmActivation::Relu), {0, 6, 6, 6}}, rng);  // one group takes all
    check_case({gdesc(DType::F64, 1, 3, 2, 4, shared), {0, 4}}, rng);                                     // G = 1: a plain linear
  }
}

TEST(GroupedLinearCpu, OddSizesAndKZero) {
  bt::Rng rng(bt::fresh_seed());
  check_case({gdesc(DType::F64, 4, 1, 1, 9, false, true, GemmActivation::Gelu, true), {0, 1, 5, 5, 9}}, rng);
  check_case({gdesc(DType::F64, 2, 0, 3, 5, false, true, GemmActivation::Relu), {0, 2, 4}}, rng);  // K = 0: y = act(bias)
  check_case({gdesc(DType::F64, 3, 33, 7, 40, true, true, GemmActivation::None), {0, 13, 13, 37}}, rng);
}

TEST(GroupedLinearCpu, ReducedPrecisionWithinTolerance) {
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (bool shared : {false, true})
      check_case({gdesc(t, 4, 24, 16, 30, shared, true, GemmActivation::GeluTanh, true), {0, 7, 7, 19, 26}}, rng);
}

// A strided x and y (columns of bigger matrices) on the CPU reference.
TEST(GroupedLinearCpu, StridedViews) {
  bt::Rng rng(bt::fresh_seed());
  const GroupedLinearDescriptor d = gdesc(DType::F64, 2, 3, 4, 5, false, true, GemmActivation::None);
  const std::vector<int64_t> offs{0, 2, 5};
  std::vector<double> xs(5 * 6), w = bt::random_values(DType::F64, 2 * 4 * 3, rng), b = bt::random_values(DType::F64, 8, rng);
  for (auto& v : xs) v = bt::uniform(rng, -1, 1);
  std::vector<double> ys(5 * 8, -7.0);
  GroupedLinearArgs a;
  a.x = TensorRef(xs.data(), DType::F64, Device::cpu(), Dims{5, 3}, Dims{6, 2}, 30);  // every other column
  a.offsets = host_offsets(offs);
  a.weight = TensorRef::contiguous(w.data(), Device::cpu(), Dims{2, 4, 3}, 24);
  a.bias = TensorRef::contiguous(b.data(), Device::cpu(), Dims{2, 4}, 8);
  a.y = TensorMut(ys.data(), DType::F64, Device::cpu(), Dims{5, 4}, Dims{8, 2}, 40);
  auto p = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  ASSERT_TRUE(p->run(kCpu, Workspace::none(), a).is_ok());
  std::vector<double> x(15);
  for (int r = 0; r < 5; ++r)
    for (int k = 0; k < 3; ++k) x[static_cast<size_t>(r * 3 + k)] = xs[static_cast<size_t>(r * 6 + 2 * k)];
  const auto pre = model_pre(d, offs, x, w, b);
  for (int r = 0; r < 5; ++r)
    for (int n = 0; n < 4; ++n) {
      EXPECT_NEAR(ys[static_cast<size_t>(r * 8 + 2 * n)], pre[static_cast<size_t>(r * 4 + n)], 1e-12);
      EXPECT_EQ(ys[static_cast<size_t>(r * 8 + 2 * n + 1)], -7.0) << "gap written";
    }
}

// ---- backward vs finite differences (f64) ------------------------------------------------
// L = sum(c * y) for fixed random c: dL/dx, dw, db by central differences of
// the forward plan against the backward plan with dy = c.
TEST(GroupedLinearCpu, BackwardMatchesFiniteDifferences) {
  bt::Rng rng(bt::fresh_seed());
  for (bool shared : {false, true})
    for (GemmActivation act : kActs) {
      const GroupedLinearDescriptor d = gdesc(DType::F64, 3, 3, 2, 7, shared, true, act, needs_aux(act));
      const std::vector<int64_t> offs{0, 2, 2, 6};
      const int64_t T = 7, N = 2, K = 3;
      std::vector<double> x = bt::random_values(DType::F64, T * K, rng), w = bt::random_values(DType::F64, shape_numel(wshape(d)), rng),
                          b = bt::random_values(DType::F64, shape_numel(bshape(d)), rng), cw = bt::random_values(DType::F64, T * N, rng);
      auto fwd = GroupedLinearPlan::select(kCpu, d);
      ASSERT_TRUE(fwd.is_ok());
      std::vector<double> y(static_cast<size_t>(T * N), 0.0), aux(static_cast<size_t>(T * N), 0.0);
      auto loss = [&]() {
        GroupedLinearArgs a;
        a.x = TensorRef::contiguous(x.data(), Device::cpu(), Dims{T, K}, T * K);
        a.offsets = host_offsets(offs);
        a.weight = TensorRef::contiguous(w.data(), Device::cpu(), wshape(d), shape_numel(wshape(d)));
        a.bias = TensorRef::contiguous(b.data(), Device::cpu(), bshape(d), shape_numel(bshape(d)));
        a.y = TensorMut::contiguous(y.data(), Device::cpu(), Dims{T, N}, T * N);
        if (d.save_aux) a.aux = TensorMut::contiguous(aux.data(), Device::cpu(), Dims{T, N}, T * N);
        EXPECT_TRUE(fwd->run(kCpu, Workspace::none(), a).is_ok());
        double s = 0;
        for (int64_t i = 0; i < T * N; ++i) s += cw[static_cast<size_t>(i)] * y[static_cast<size_t>(i)];  // rows >= 6 stay 0
        return s;
      };
      auto fd = [&](std::vector<double>& v, size_t i) {
        const double h = 1e-6, keep = v[i];
        v[i] = keep + h;
        const double lp = loss();
        v[i] = keep - h;
        const double lm = loss();
        v[i] = keep;
        return (lp - lm) / (2 * h);
      };
      loss();  // y and aux at the unperturbed point
      GroupedLinearBackwardDescriptor bd;
      bd.forward = d;
      bd.forward.save_aux = false;
      auto bwd = GroupedLinearBackwardPlan::select(kCpu, bd);
      ASSERT_TRUE(bwd.is_ok());
      std::vector<double> dx(static_cast<size_t>(T * K), -5.0), dw(w.size()), db(b.size());
      const std::vector<double> pre = act == GemmActivation::Relu ? y : aux;
      GroupedLinearBackwardArgs ba;
      ba.dy = TensorRef::contiguous(cw.data(), Device::cpu(), Dims{T, N}, T * N);
      ba.offsets = host_offsets(offs);
      ba.x = TensorRef::contiguous(x.data(), Device::cpu(), Dims{T, K}, T * K);
      ba.weight = TensorRef::contiguous(w.data(), Device::cpu(), wshape(d), shape_numel(wshape(d)));
      if (act != GemmActivation::None) ba.aux = TensorRef::contiguous(pre.data(), Device::cpu(), Dims{T, N}, T * N);
      ba.dx = TensorMut::contiguous(dx.data(), Device::cpu(), Dims{T, K}, T * K);
      ba.dw = TensorMut::contiguous(dw.data(), Device::cpu(), wshape(d), shape_numel(wshape(d)));
      ba.db = TensorMut::contiguous(db.data(), Device::cpu(), bshape(d), shape_numel(bshape(d)));
      ASSERT_TRUE(bwd->run(kCpu, Workspace::none(), ba).is_ok());
      const std::string ctx = std::string(gemm_activation_name(act)) + (shared ? " shared" : " per-group");
      for (size_t i = 0; i < static_cast<size_t>(6 * K); ++i) EXPECT_NEAR(dx[i], fd(x, i), 1e-6) << "dx " << i << " " << ctx;
      for (size_t i = static_cast<size_t>(6 * K); i < dx.size(); ++i) EXPECT_EQ(dx[i], -5.0) << "dx row past offsets[G] written";
      for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(dw[i], fd(w, i), 1e-6) << "dw " << i << " " << ctx;
      for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(db[i], fd(b, i), 1e-6) << "db " << i << " " << ctx;
      if (!shared) {  // group 1 is empty: zeros
        for (int64_t i = 0; i < N * K; ++i) EXPECT_EQ(dw[static_cast<size_t>(N * K + i)], 0.0);
        for (int64_t i = 0; i < N; ++i) EXPECT_EQ(db[static_cast<size_t>(N + i)], 0.0);
      }
    }
}

// ---- validation --------------------------------------------------------------------------
TEST(GroupedLinearCpu, DescriptorRules) {
  auto sel = [](GroupedLinearDescriptor d) { return GroupedLinearPlan::select(kCpu, d).status(); };
  GroupedLinearDescriptor d = gdesc(DType::F32, 2, 3, 4, 5);
  EXPECT_TRUE(sel(d).is_ok());
  auto with = [&](auto fn) {
    GroupedLinearDescriptor e = d;
    fn(e);
    return e;
  };
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.groups = 0; })), StatusCode::InvalidProblem, "GroupedLinearPlan: groups 0 must be in [1, ");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.groups = (int64_t{1} << 20) + 1; })), StatusCode::InvalidProblem, "groups");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.in_features = -1; })), StatusCode::InvalidProblem, "in_features -1 must be >= 0");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.out_features = -2; })), StatusCode::InvalidProblem, "out_features -2 must be >= 0");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.capacity = -3; })), StatusCode::InvalidProblem, "capacity -3 must be >= 0");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.dtype = DType::I32; })), StatusCode::Unsupported, "dtype");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.activation = GemmActivation::Relu, e.save_aux = true; })),
                   StatusCode::InvalidProblem, "save_aux");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.save_aux = true; })), StatusCode::InvalidProblem, "save_aux");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.activation = static_cast<GemmActivation>(9); })), StatusCode::InvalidProblem,
                   "unknown GemmActivation");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.capacity = int64_t{1} << 40, e.in_features = int64_t{1} << 30; })),
                   StatusCode::InvalidProblem, "x");
  BT_EXPECT_STATUS(sel(with([](auto& e) { e.groups = 1 << 20, e.in_features = 1 << 22, e.out_features = 1 << 22; })),
                   StatusCode::InvalidProblem, "weight");
  GroupedLinearBackwardDescriptor bd;
  bd.forward = with([](auto& e) { e.has_bias = false; });
  bd.need_db = true;
  BT_EXPECT_STATUS(GroupedLinearBackwardPlan::select(kCpu, bd).status(), StatusCode::InvalidProblem,
                   "GroupedLinearBackwardPlan: need_db is set but forward.has_bias is false");
}

struct FwdBufs {
  std::vector<float> x, w, b, y;
  std::vector<int64_t> offs;
  GroupedLinearArgs a;
  explicit FwdBufs(const GroupedLinearDescriptor& d, std::vector<int64_t> o)
      : x(static_cast<size_t>(d.capacity * d.in_features), 0.5f),
        w(static_cast<size_t>(shape_numel(wshape(d))), 0.25f),
        b(static_cast<size_t>(shape_numel(bshape(d))), 1.0f),
        y(static_cast<size_t>(d.capacity * d.out_features), 0.0f),
        offs(std::move(o)) {
    a.x = TensorRef::contiguous(x.data(), Device::cpu(), Dims{d.capacity, d.in_features}, static_cast<int64_t>(x.size()));
    a.offsets = host_offsets(offs);
    a.weight = TensorRef::contiguous(w.data(), Device::cpu(), wshape(d), static_cast<int64_t>(w.size()));
    if (d.has_bias) a.bias = TensorRef::contiguous(b.data(), Device::cpu(), bshape(d), static_cast<int64_t>(b.size()));
    a.y = TensorMut::contiguous(y.data(), Device::cpu(), Dims{d.capacity, d.out_features}, static_cast<int64_t>(y.size()));
  }
};

TEST(GroupedLinearCpu, OffsetsRules) {
  const GroupedLinearDescriptor d = gdesc(DType::F32, 3, 2, 2, 6);
  auto p = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  auto check = [&](std::vector<int64_t> o, const char* msg) {
    FwdBufs f(d, std::move(o));
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, msg);
    BT_EXPECT_STATUS(p->run(kCpu, Workspace::none(), f.a), StatusCode::InvalidProblem, msg);
    for (float v : f.y) EXPECT_EQ(v, 0.0f) << "y written after a refused call";
  };
  check({1, 2, 3, 4}, "GroupedLinearPlan: offsets[0] is 1, expected 0");
  check({0, 4, 2, 6}, "offsets must be non-decreasing: offsets[2] = 2 < offsets[1] = 4");
  check({0, 2, 4, 7}, "offsets[3] = 7 exceeds the capacity 6");
  {
    FwdBufs f(d, {0, 1, 2, 3});
    EXPECT_TRUE(p->can_implement(f.a).is_ok());
    f.a.offsets = TensorRef();
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, "offsets is missing");
    f.a.offsets = host_offsets(f.offs);
    f.a.offsets.device = Device::cuda(0);
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, "offsets is on cuda:0: the group offsets are a host tensor");
    f.a.offsets = host_offsets(f.offs);
    f.a.offsets.dtype = DType::I32;
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, "offsets");
    f.a.offsets = TensorRef::contiguous(f.offs.data(), Device::cpu(), Dims{3}, 4);  // [G] instead of [G + 1]
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, "offsets");
    f.a.offsets = TensorRef::contiguous(f.offs.data(), Device::cpu(), Dims{4}, 3);  // buffer one short
    EXPECT_EQ(p->can_implement(f.a).code(), StatusCode::BufferTooSmall);
    // An output over the offsets' memory.
    f.a.offsets = host_offsets(f.offs);
    f.a.y = TensorMut(f.offs.data(), DType::F32, Device::cpu(), Dims{6, 2}, Dims{2, 1}, 12);
    BT_EXPECT_STATUS(p->can_implement(f.a), StatusCode::InvalidProblem, "y overlaps offsets in memory");
  }
  // A strided offsets view is read with its stride.
  {
    FwdBufs f(d, {0, 1, 2, 3});
    std::vector<int64_t> spread{0, -1, 1, -1, 1, -1, 6};
    f.a.offsets = TensorRef(spread.data(), DType::I64, Device::cpu(), Dims{4}, Dims{2}, 7);
    EXPECT_TRUE(p->run(kCpu, Workspace::none(), f.a).is_ok());
    for (int64_t r = 0; r < 6; ++r) EXPECT_EQ(f.y[static_cast<size_t>(r * 2)], 1.0f + 2 * 0.5f * 0.25f) << r;
  }
}

TEST(GroupedLinearCpu, ArgumentRules) {
  const GroupedLinearDescriptor d = gdesc(DType::F32, 2, 3, 4, 5, false, false, GemmActivation::GeluTanh, true);
  auto p = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  FwdBufs f(d, {0, 2, 5});
  std::vector<float> aux(20);
  f.a.aux = TensorMut::contiguous(aux.data(), Device::cpu(), Dims{5, 4}, 20);
  EXPECT_TRUE(p->can_implement(f.a).is_ok());
  GroupedLinearArgs a = f.a;
  a.bias = TensorRef::contiguous(f.b.data(), Device::cpu(), Dims{2, 4}, 8);
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem, "bias is given but descriptor.has_bias is false");
  a = f.a;
  a.aux = TensorMut();
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem, "aux");
  a = f.a;
  a.weight = TensorRef::contiguous(f.w.data(), Device::cpu(), Dims{4, 3}, 12);  // shared shape on a per-group plan
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem, "weight");
  a = f.a;
  a.x = TensorRef::contiguous(f.x.data(), Device::cpu(), Dims{4, 3}, 15);  // fewer rows than the capacity
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem, "x");
  a = f.a;
  a.aux = TensorMut(f.y.data(), DType::F32, Device::cpu(), Dims{5, 4}, Dims{4, 1}, 20);
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem, "overlaps");
  // Backward: tensors only an unneeded output reads are refused when given.
  GroupedLinearBackwardDescriptor bd;
  bd.forward = d;
  bd.forward.save_aux = false;
  bd.need_db = false;
  bd.need_dw = false;
  auto b = GroupedLinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(b.is_ok());
  std::vector<float> dy(20, 1.0f), dx(15);
  GroupedLinearBackwardArgs ba;
  ba.dy = TensorRef::contiguous(dy.data(), Device::cpu(), Dims{5, 4}, 20);
  ba.offsets = f.a.offsets;
  ba.weight = f.a.weight;
  ba.aux = TensorRef::contiguous(aux.data(), Device::cpu(), Dims{5, 4}, 20);
  ba.dx = TensorMut::contiguous(dx.data(), Device::cpu(), Dims{5, 3}, 15);
  EXPECT_TRUE(b->can_implement(ba).is_ok()) << b->can_implement(ba).to_string();
  GroupedLinearBackwardArgs bb = ba;
  bb.x = f.a.x;
  BT_EXPECT_STATUS(b->can_implement(bb), StatusCode::InvalidProblem, "x is given but need_dw is false");
  bb = ba;
  bb.aux = TensorRef();
  BT_EXPECT_STATUS(b->can_implement(bb), StatusCode::InvalidProblem, "aux is missing (forward.activation is gelu-tanh");
  bb = ba;
  bb.offsets = TensorRef();
  BT_EXPECT_STATUS(b->can_implement(bb), StatusCode::InvalidProblem, "GroupedLinearBackwardPlan: offsets is missing");
  std::vector<int64_t> bad{0, 3, 2};
  bb.offsets = host_offsets(bad);
  BT_EXPECT_STATUS(b->run(kCpu, Workspace::none(), bb), StatusCode::InvalidProblem, "non-decreasing");
}

TEST(GroupedLinearCpu, SkuAndShapes) {
  const GroupedLinearDescriptor d = gdesc(DType::BF16, 8, 16, 32, 64, true, true, GemmActivation::Gelu, true);
  auto p = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->sku().op, "grouped_linear.gelu");
  EXPECT_EQ(p->sku().backend, Backend::CpuReference);
  EXPECT_EQ(p->weight_shape(), (Dims{32, 16}));
  EXPECT_EQ(p->bias_shape(), (Dims{32}));
  EXPECT_EQ(p->offsets_shape(), (Dims{9}));
  EXPECT_EQ(p->y_shape(), (Dims{64, 32}));
  GroupedLinearBackwardDescriptor bd;
  bd.forward = d;
  bd.forward.shared_weight = false;
  auto b = GroupedLinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->sku().op, "grouped_linear_backward.gelu");
  EXPECT_EQ(b->weight_shape(), (Dims{8, 32, 16}));
  EXPECT_EQ(b->bias_shape(), (Dims{8, 32}));
}

}  // namespace

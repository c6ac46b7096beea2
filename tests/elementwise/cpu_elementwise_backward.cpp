// BinaryBackwardPlan / TernaryBackwardPlan on the CPU: every differentiable
// op against central finite differences of the forward plan in f64 (through
// broadcasting, so the sums down to each operand's shape are checked too),
// PyTorch's conventions at the kinks written out by hand, broadcast gradients
// against the gradient of the expanded operands summed here, the need_*
// combinations, and every refusal rule with its message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "ops/elementwise/functors_grad.hpp"
#include "support/tensor_utils.hpp"

namespace {

using namespace baracuda;
using bt::HostBuffer;
using bt::kInf;
using bt::kNaN;
using Operand = ElementwiseOperand;

const Stream kCpu = Stream::cpu();

// One forward operand: a tensor (values row-major), a host scalar or absent.
struct Opnd {
  enum Kind { Tensor, Scalar_, Absent } kind = Tensor;
  DType dtype = DType::F64;
  Dims shape;
  std::vector<double> v;  // a tensor's values, or v[0] a scalar's
};
Opnd tensor(Dims shape, std::vector<double> v, DType dt = DType::F64) { return {Opnd::Tensor, dt, shape, std::move(v)}; }
Opnd scalar(double x) { return {Opnd::Scalar_, DType::F64, {}, {x}}; }
Opnd absent() { return {Opnd::Absent, DType::F64, {}, {}}; }

// A binary (arity 2) or ternary (arity 3) problem.
struct Case {
  int arity = 2;
  int op = 0;  // BinaryOp or TernaryOp
  std::optional<double> alpha;
  Opnd o[3];
  bool need[3] = {true, true, true};
};

Operand operand_of(const Opnd& p) {
  if (p.kind == Opnd::Scalar_) return Operand::scalar(DType::F64);
  if (p.kind == Opnd::Absent) return Operand::absent();
  return Operand::tensor(p.dtype, p.shape);
}

Dims broadcast_of(const Case& c) {
  Dims s;
  for (int k = 0; k < c.arity; ++k)
    if (c.o[k].kind == Opnd::Tensor) s = *broadcast_shapes(s, c.o[k].shape);
  return s;
}

int64_t numel(const Dims& s) { return shape_numel(s); }

// The forward output (f64).
std::vector<double> forward(const Case& c) {
  std::vector<HostBuffer> bufs;
  bufs.reserve(3);
  const Dims out = broadcast_of(c);
  HostBuffer ho(DType::F64, numel(out));
  TensorRef t[3];
  std::optional<Scalar> val[3];
  for (int k = 0; k < c.arity; ++k) {
    if (c.o[k].kind == Opnd::Tensor) {
      bufs.push_back(bt::host_from(c.o[k].dtype, c.o[k].v));
      t[k] = TensorRef::contiguous(bufs.back().data(), c.o[k].dtype, Device::cpu(), c.o[k].shape);
    } else if (c.o[k].kind == Opnd::Scalar_) {
      val[k] = Scalar(c.o[k].v[0]);
    }
  }
  const TensorMut y = TensorMut::contiguous(ho.data(), DType::F64, Device::cpu(), out);
  Status st;
  if (c.arity == 2) {
    BinaryDescriptor d;
    d.op = static_cast<BinaryOp>(c.op);
    d.a = operand_of(c.o[0]);
    d.b = operand_of(c.o[1]);
    d.alpha = c.alpha;
    auto plan = BinaryPlan::select(kCpu, d);
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan) return {};
    st = plan->run(kCpu, {}, {t[0], t[1], val[0], val[1], y});
  } else {
    TernaryDescriptor d;
    d.op = static_cast<TernaryOp>(c.op);
    d.a = operand_of(c.o[0]);
    d.b = operand_of(c.o[1]);
    d.c = operand_of(c.o[2]);
    d.alpha = c.alpha;
    auto plan = TernaryPlan::select(kCpu, d);
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan) return {};
    st = plan->run(kCpu, {}, {t[0], t[1], t[2], val[0], val[1], val[2], y});
  }
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values(ho);
}

BinaryBackwardDescriptor binary_desc(const Case& c) {
  BinaryBackwardDescriptor d;
  d.forward.op = static_cast<BinaryOp>(c.op);
  d.forward.a = operand_of(c.o[0]);
  d.forward.b = operand_of(c.o[1]);
  d.forward.alpha = c.alpha;
  d.need_a = c.need[0];
  d.need_b = c.need[1];
  return d;
}
TernaryBackwardDescriptor ternary_desc(const Case& c) {
  TernaryBackwardDescriptor d;
  d.forward.op = static_cast<TernaryOp>(c.op);
  d.forward.a = operand_of(c.o[0]);
  d.forward.b = operand_of(c.o[1]);
  d.forward.c = operand_of(c.o[2]);
  d.forward.alpha = c.alpha;
  d.need_a = c.need[0];
  d.need_b = c.need[1];
  d.need_c = c.need[2];
  return d;
}

// The operands the needed gradients read (the plan refuses any other).
int reads_of(const Case& c) {
  int r = 0;
  for (int m = 0; m < c.arity; ++m)
    if (c.need[m])
      r |= c.arity == 2 ? elementwise::grad_reads(static_cast<BinaryOp>(c.op), m)
                        : elementwise::grad_reads(static_cast<TernaryOp>(c.op), m);
  return r;
}

// The gradients (f64) of the needed operands; an empty vector for the others.
std::vector<std::vector<double>> backward(const Case& c, const std::vector<double>& dy) {
  const Dims out = broadcast_of(c);
  const int reads = reads_of(c);
  std::vector<HostBuffer> bufs;
  bufs.reserve(8);
  auto ref = [&](DType dt, const Dims& s, const std::vector<double>& v) {
    bufs.push_back(bt::host_from(dt, v));
    return TensorRef::contiguous(bufs.back().data(), dt, Device::cpu(), s);
  };
  TensorRef dyt = ref(DType::F64, out, dy);
  TensorRef t[3];
  std::optional<Scalar> val[3];
  TensorMut g[3];
  HostBuffer gb[3];
  for (int k = 0; k < c.arity; ++k) {
    if (reads >> k & 1) {
      if (c.o[k].kind == Opnd::Tensor) t[k] = ref(c.o[k].dtype, c.o[k].shape, c.o[k].v);
      if (c.o[k].kind == Opnd::Scalar_) val[k] = Scalar(c.o[k].v[0]);
    }
    if (c.need[k]) {
      gb[k] = HostBuffer(c.o[k].dtype, numel(c.o[k].shape));
      gb[k].poison();
      g[k] = TensorMut::contiguous(gb[k].data(), c.o[k].dtype, Device::cpu(), c.o[k].shape);
    }
  }
  Status st;
  std::vector<uint64_t> ws;
  if (c.arity == 2) {
    auto plan = BinaryBackwardPlan::select(kCpu, binary_desc(c));
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan) return {};
    ws.resize(plan->workspace_size() / 8 + 1);
    st = plan->run(kCpu, {ws.data(), plan->workspace_size()}, {dyt, t[0], t[1], val[0], val[1], g[0], g[1]});
  } else {
    auto plan = TernaryBackwardPlan::select(kCpu, ternary_desc(c));
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan) return {};
    ws.resize(plan->workspace_size() / 8 + 1);
    st = plan->run(kCpu, {ws.data(), plan->workspace_size()},
                   {dyt, t[0], t[1], t[2], val[0], val[1], val[2], g[0], g[1], g[2]});
  }
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  std::vector<std::vector<double>> r(3);
  for (int k = 0; k < c.arity; ++k)
    if (c.need[k]) r[k] = bt::all_values(gb[k]);
  return r;
}

const char* name_of(const Case& c) {
  return c.arity == 2 ? op_name(static_cast<BinaryOp>(c.op)) : op_name(static_cast<TernaryOp>(c.op));
}

// Operand values where the op is smooth: inside the domain, away from the
// kinks (ties, bounds, integer quotients, zero signs).
bool smooth(const Case& c, const std::vector<double>& x) {
  const double a = x[0], b = x[1], cc = x.size() > 2 ? x[2] : 0;
  if (c.arity == 2) {
    switch (static_cast<BinaryOp>(c.op)) {
      case BinaryOp::Maximum:
      case BinaryOp::Minimum:
      case BinaryOp::Fmax:
      case BinaryOp::Fmin: return std::fabs(a - b) > 0.05;
      case BinaryOp::Remainder:
      case BinaryOp::Fmod:
      case BinaryOp::DivFloor:
      case BinaryOp::DivTrunc: {
        const double q = a / b;
        return std::fabs(q - std::round(q)) > 0.05;
      }
      case BinaryOp::Copysign: return std::fabs(a) > 0.05 && std::fabs(b) > 0.05;
      case BinaryOp::ReGlu: return std::fabs(a) > 0.05;
      default: return true;
    }
  }
  if (static_cast<TernaryOp>(c.op) == TernaryOp::Clamp)
    return std::fabs(a - b) > 0.05 && std::fabs(a - cc) > 0.05 && std::fabs(b - cc) > 0.05;
  return true;
}

// Operands of positive values only (logs, powers, quotients).
bool positive_domain(const Case& c) {
  if (c.arity == 3) return static_cast<TernaryOp>(c.op) == TernaryOp::Addcdiv;
  switch (static_cast<BinaryOp>(c.op)) {
    case BinaryOp::Pow:
    case BinaryOp::Xlogy:
    case BinaryOp::Xlog1py:
    case BinaryOp::Div:
    case BinaryOp::Remainder:
    case BinaryOp::Fmod:
    case BinaryOp::DivFloor:
    case BinaryOp::DivTrunc: return true;
    default: return false;
  }
}

// Fills the tensors of c with random values where the op is smooth (each
// element of the broadcast checked against the elements it combines).
void fill_smooth(Case& c, bt::Rng& rng) {
  const double lo = positive_domain(c) ? 0.3 : -2.0, hi = positive_domain(c) ? 2.5 : 2.0;
  const Dims out = broadcast_of(c);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    for (int k = 0; k < c.arity; ++k) {
      if (c.o[k].kind != Opnd::Tensor) continue;
      c.o[k].v.resize(static_cast<size_t>(numel(c.o[k].shape)));
      for (double& x : c.o[k].v) x = c.o[k].dtype == DType::Bool ? (bt::uniform(rng, 0, 1) < 0.5) : bt::uniform(rng, lo, hi);
    }
    // Check every broadcast element.
    bool ok = true;
    const int R = out.rank;
    for (int64_t i = 0; i < numel(out) && ok; ++i) {
      std::vector<double> x(static_cast<size_t>(c.arity), 0.0);
      for (int k = 0; k < c.arity; ++k) {
        if (c.o[k].kind == Opnd::Scalar_) x[k] = c.o[k].v[0];
        if (c.o[k].kind != Opnd::Tensor) continue;
        const Dims& s = c.o[k].shape;
        int64_t rem = i, off = 0, mul = 1;
        for (int d = R - 1; d >= 0; --d) {
          const int64_t idx = rem % out[d];
          rem /= out[d];
          const int sd = d - (R - s.rank);
          if (sd >= 0) {
            if (s[sd] != 1) off += idx * mul;
            mul *= s[sd];
          }
        }
        x[k] = c.o[k].v[static_cast<size_t>(off)];
      }
      ok = smooth(c, x);
    }
    if (ok) return;
  }
  FAIL() << name_of(c) << ": no smooth point in 1000 draws";
}

// Checks every needed gradient against central differences of sum(dy * f).
void expect_matches_finite_differences(Case c, bt::Rng& rng) {
  fill_smooth(c, rng);
  const Dims out = broadcast_of(c);
  std::vector<double> dy(static_cast<size_t>(numel(out)));
  for (double& v : dy) v = bt::uniform(rng, -2.0, 2.0);
  const auto g = backward(c, dy);
  ASSERT_EQ(g.size(), 3u) << name_of(c);
  for (int k = 0; k < c.arity; ++k) {
    if (!c.need[k]) continue;
    ASSERT_EQ(g[k].size(), c.o[k].v.size()) << name_of(c);
    for (size_t i = 0; i < c.o[k].v.size(); ++i) {
      Case p = c, m = c;
      const double h = 1e-6 * std::max(1.0, std::fabs(c.o[k].v[i]));
      p.o[k].v[i] += h;
      m.o[k].v[i] -= h;
      const auto fp = forward(p), fm = forward(m);
      double fd = 0;
      for (size_t j = 0; j < dy.size(); ++j) fd += dy[j] * (fp[j] - fm[j]) / (2 * h);
      EXPECT_NEAR(g[k][i], fd, 1e-6 * std::max(1.0, std::fabs(fd)))
          << name_of(c) << ": d" << "abc"[k] << "[" << i << "] at " << c.o[k].v[i];
    }
  }
}

Case binary_case(BinaryOp op, Dims sa, Dims sb) {
  Case c;
  c.arity = 2;
  c.op = static_cast<int>(op);
  c.o[0] = tensor(sa, {});
  c.o[1] = tensor(sb, {});
  return c;
}
Case ternary_case(TernaryOp op, Dims sa, Dims sb, Dims sc) {
  Case c;
  c.arity = 3;
  c.op = static_cast<int>(op);
  c.o[0] = tensor(sa, {});
  c.o[1] = tensor(sb, {});
  c.o[2] = tensor(sc, {});
  return c;
}

}  // namespace

// Every differentiable binary op, same shapes and broadcast (row, column,
// 0-dim), against central differences; alpha where the op takes one.
TEST(ElementwiseBinaryBackward, GradientsMatchFiniteDifferences) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<BinaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    if (!elementwise::has_gradient(op)) continue;
    const std::vector<std::pair<Dims, Dims>> shapes = {{{5}, {5}}, {{3, 4}, {4}}, {{3, 4}, {3, 1}}, {{2, 3}, {}}};
    for (const auto& [sa, sb] : shapes) {
      Case c = binary_case(op, sa, sb);
      if (op == BinaryOp::Add || op == BinaryOp::Sub) c.alpha = -1.5;
      expect_matches_finite_differences(c, rng);
      std::swap(c.o[0], c.o[1]);  // the broadcast operand first
      expect_matches_finite_differences(c, rng);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 26);  // 42 ops less 16 without a gradient
}

TEST(ElementwiseTernaryBackward, GradientsMatchFiniteDifferences) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  for (TernaryOp op : {TernaryOp::Clamp, TernaryOp::Lerp, TernaryOp::Addcmul, TernaryOp::Addcdiv}) {
    for (const auto& s : std::vector<std::vector<Dims>>{{{6}, {6}, {6}}, {{2, 3}, {3}, {2, 1}}, {{3}, {2, 3}, {}}}) {
      Case c = ternary_case(op, s[0], s[1], s[2]);
      if (op == TernaryOp::Addcmul || op == TernaryOp::Addcdiv) c.alpha = 0.75;
      expect_matches_finite_differences(c, rng);
    }
  }
  // where: the condition (bool) gets no gradient.
  Case w = ternary_case(TernaryOp::Where, {2, 3}, {3}, {2, 1});
  w.o[0].dtype = DType::Bool;
  w.need[0] = false;
  expect_matches_finite_differences(w, rng);
  // lerp with a scalar weight, clamp with one scalar and one absent bound.
  Case l = ternary_case(TernaryOp::Lerp, {4}, {2, 4}, {});
  l.o[2] = scalar(0.3);
  l.need[2] = false;
  expect_matches_finite_differences(l, rng);
  Case cl = ternary_case(TernaryOp::Clamp, {7}, {7}, {});
  cl.o[2] = absent();
  cl.need[2] = false;
  expect_matches_finite_differences(cl, rng);
  cl.o[1] = scalar(0.25);
  cl.need[1] = false;
  expect_matches_finite_differences(cl, rng);
}

// PyTorch's values at the kinks, written out.
TEST(ElementwiseBinaryBackward, KinksFollowPyTorch) {
  auto grads = [](BinaryOp op, std::vector<double> a, std::vector<double> b) {
    const int64_t n = static_cast<int64_t>(a.size());
    Case c;
    c.op = static_cast<int>(op);
    c.o[0] = tensor({n}, a);
    c.o[1] = tensor({n}, b);
    return backward(c, std::vector<double>(a.size(), 1.0));
  };
  using V = std::vector<double>;
  auto g = grads(BinaryOp::Maximum, {1, 2, kNaN, 3}, {1, 1, 0, kNaN});  // tie, a wins, NaN a, NaN b
  EXPECT_EQ(g[0], (V{0.5, 1, 1, 1}));
  EXPECT_EQ(g[1], (V{0.5, 0, 1, 1}));
  g = grads(BinaryOp::Minimum, {1, 2}, {1, 1});
  EXPECT_EQ(g[0], (V{0.5, 0}));
  EXPECT_EQ(g[1], (V{0.5, 1}));
  g = grads(BinaryOp::Fmax, {1, kNaN, 2, 1}, {1, 3, kNaN, 2});  // ties go to a; a NaN b gives a the gradient
  EXPECT_EQ(g[0], (V{1, 0, 1, 0}));
  EXPECT_EQ(g[1], (V{0, 1, 0, 1}));
  g = grads(BinaryOp::Fmin, {1, kNaN, 2, 1}, {1, 3, kNaN, 2});
  EXPECT_EQ(g[0], (V{1, 0, 1, 1}));
  EXPECT_EQ(g[1], (V{0, 1, 0, 0}));
  g = grads(BinaryOp::Pow, {0, 0, 0, 2}, {0, 2, 0.5, 0});  // exponent 0: no da; base 0, exponent >= 0: no db
  EXPECT_EQ(g[0], (V{0, 0, kInf, 0}));
  EXPECT_EQ(g[1], (V{0, 0, 0, std::log(2.0)}));
  g = grads(BinaryOp::Xlogy, {0, 0, 1, 2}, {0, -1, kNaN, 4});
  EXPECT_EQ(g[0][0], 0);
  EXPECT_EQ(g[0][1], 0);
  EXPECT_TRUE(std::isnan(g[0][2]));
  EXPECT_EQ(g[0][3], std::log(4.0));
  EXPECT_TRUE(std::isnan(g[1][0]));  // 0 / 0, as PyTorch
  EXPECT_EQ(g[1][3], 0.5);
  g = grads(BinaryOp::Xlog1py, {0, 0, 3}, {-1, -2, 1});
  EXPECT_EQ(g[0], (V{0, 0, std::log1p(1.0)}));
  g = grads(BinaryOp::Copysign, {0, 2, -3}, {-1, -1, 1});
  EXPECT_EQ(g[0], (V{0, -1, -1}));
  EXPECT_EQ(g[1], (V{0, 0, 0}));
  g = grads(BinaryOp::ReGlu, {0, -1, 2}, {3, 3, 3});
  EXPECT_EQ(g[0], (V{0, 0, 3}));
  EXPECT_EQ(g[1], (V{0, 0, 2}));
  g = grads(BinaryOp::DivFloor, {7, -7}, {2, 2});
  EXPECT_EQ(g[0], (V{0, 0}));
  EXPECT_EQ(g[1], (V{0, 0}));
  g = grads(BinaryOp::Remainder, {7, -7}, {2, 2});  // db = -floor(a / b)
  EXPECT_EQ(g[0], (V{1, 1}));
  EXPECT_EQ(g[1], (V{-3, 4}));
  g = grads(BinaryOp::Fmod, {7, -7}, {2, 2});  // db = -trunc(a / b)
  EXPECT_EQ(g[1], (V{-3, 3}));
}

TEST(ElementwiseTernaryBackward, KinksFollowPyTorch) {
  using V = std::vector<double>;
  // clamp with tensor bounds: x passes at the bounds; min > max sends everything to max.
  Case c = ternary_case(TernaryOp::Clamp, {6}, {6}, {6});
  c.o[0].v = {0, 1, 2, 3, 5, 0};
  c.o[1].v = {1, 1, 1, 1, 4, 4};
  c.o[2].v = {2, 2, 2, 2, 3, 3};
  auto g = backward(c, V(6, 1.0));
  EXPECT_EQ(g[0], (V{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(g[1], (V{1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(g[2], (V{0, 0, 0, 1, 1, 1}));
  // Only a min (scalar), max absent: x passes where x >= min.
  Case s = ternary_case(TernaryOp::Clamp, {3}, {}, {});
  s.o[0].v = {0, 1, 2};
  s.o[1] = scalar(1.0);
  s.o[2] = absent();
  s.need[1] = s.need[2] = false;
  EXPECT_EQ(backward(s, V(3, 1.0))[0], (V{0, 1, 1}));
  // Only a max tensor: dmax where x > max.
  Case m = ternary_case(TernaryOp::Clamp, {3}, {}, {3});
  m.o[0].v = {0, 1, 2};
  m.o[1] = absent();
  m.o[2].v = {1, 1, 1};
  m.need[1] = false;
  g = backward(m, V(3, 1.0));
  EXPECT_EQ(g[0], (V{1, 1, 0}));
  EXPECT_EQ(g[2], (V{0, 0, 1}));
  // where routes dy to the branch taken.
  Case w = ternary_case(TernaryOp::Where, {3}, {3}, {3});
  w.o[0] = tensor({3}, {1, 0, 1}, DType::Bool);
  w.o[1].v = {9, 9, 9};
  w.o[2].v = {8, 8, 8};
  w.need[0] = false;
  g = backward(w, {1, 2, 3});
  EXPECT_EQ(g[1], (V{1, 0, 3}));
  EXPECT_EQ(g[2], (V{0, 2, 0}));
}

// Broadcast gradients equal the gradients of the expanded operands summed
// over the broadcast dims (row, column, 0-dim, rank 4 with several dims).
TEST(ElementwiseBinaryBackward, BroadcastGradientsAreSummedFullGradients) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  struct S {
    Dims a, b;
  };
  const std::vector<S> shapes = {{{3, 4}, {4}}, {{3, 4}, {3, 1}}, {{3, 4}, {}}, {{2, 1, 3, 4}, {1, 5, 1, 4}}, {{2, 3}, {1, 1, 1}}};
  for (BinaryOp op : {BinaryOp::Mul, BinaryOp::Add, BinaryOp::Atan2, BinaryOp::SwiGlu}) {
    for (const S& s : shapes) {
      Case c = binary_case(op, s.a, s.b);
      c.alpha = op == BinaryOp::Add ? std::optional<double>(2.5) : std::nullopt;
      fill_smooth(c, rng);
      const Dims out = broadcast_of(c);
      const int64_t n = numel(out);
      std::vector<double> dy(static_cast<size_t>(n));
      for (double& v : dy) v = bt::uniform(rng, -1.0, 1.0);
      // The expanded problem: both operands materialised at the broadcast shape.
      Case e = c;
      std::vector<std::vector<int64_t>> src(2, std::vector<int64_t>(static_cast<size_t>(n)));
      for (int k = 0; k < 2; ++k) {
        const Dims& sh = c.o[k].shape;
        e.o[k].shape = out;
        e.o[k].v.assign(static_cast<size_t>(n), 0.0);
        for (int64_t i = 0; i < n; ++i) {
          int64_t rem = i, off = 0, mul = 1;
          for (int d = out.rank - 1; d >= 0; --d) {
            const int64_t idx = rem % out[d];
            rem /= out[d];
            const int sd = d - (out.rank - sh.rank);
            if (sd >= 0) {
              if (sh[sd] != 1) off += idx * mul;
              mul *= sh[sd];
            }
          }
          src[k][static_cast<size_t>(i)] = off;
          e.o[k].v[static_cast<size_t>(i)] = c.o[k].v[static_cast<size_t>(off)];
        }
      }
      const auto g = backward(c, dy), ge = backward(e, dy);
      for (int k = 0; k < 2; ++k) {
        std::vector<double> sum(c.o[k].v.size(), 0.0);
        for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(src[k][static_cast<size_t>(i)])] += ge[k][static_cast<size_t>(i)];
        ASSERT_EQ(g[k].size(), sum.size());
        for (size_t i = 0; i < sum.size(); ++i)
          EXPECT_NEAR(g[k][i], sum[i], 1e-12 * std::max(1.0, std::fabs(sum[i])))
              << op_name(op) << " " << s.a.to_string() << " x " << s.b.to_string() << " d" << "ab"[k] << "[" << i << "]";
      }
    }
  }
}

// need_* chooses the gradients; each alone equals its part of both.
TEST(ElementwiseBinaryBackward, NeedCombinationsAgree) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  for (BinaryOp op : {BinaryOp::Mul, BinaryOp::Div, BinaryOp::Glu, BinaryOp::Copysign}) {
    Case c = binary_case(op, {3, 4}, {4});
    fill_smooth(c, rng);
    std::vector<double> dy(12);
    for (double& v : dy) v = bt::uniform(rng, -1.0, 1.0);
    const auto both = backward(c, dy);
    Case only_a = c, only_b = c;
    only_a.need[1] = false;
    only_b.need[0] = false;
    const auto ga = backward(only_a, dy), gb = backward(only_b, dy);
    EXPECT_EQ(ga[0], both[0]) << op_name(op);
    EXPECT_TRUE(ga[1].empty());
    EXPECT_EQ(gb[1], both[1]) << op_name(op);
    EXPECT_TRUE(gb[0].empty());
  }
  // A scalar operand: only the tensor's gradient (add's alpha still scales db).
  Case s;
  s.op = static_cast<int>(BinaryOp::Sub);
  s.alpha = 3.0;
  s.o[0] = scalar(2.0);
  s.o[1] = tensor({2}, {5, 6});
  s.need[0] = false;
  EXPECT_EQ(backward(s, {1.0, -2.0})[1], (std::vector<double>{-3.0, 6.0}));
}

TEST(ElementwiseBinaryBackward, WorkspaceHoldsTheBroadcastGradient) {
  BinaryBackwardDescriptor d;
  d.forward.op = BinaryOp::Mul;
  d.forward.a = Operand::tensor(DType::F32, {3, 4});
  d.forward.b = Operand::tensor(DType::F32, {3, 4});
  auto same = BinaryBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(same->workspace_size(), 0u);  // no broadcast operand: written directly
  d.forward.b = Operand::tensor(DType::F32, {4});
  auto bc = BinaryBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(bc.is_ok());
  EXPECT_GE(bc->workspace_size(), 12 * sizeof(float));
  d.need_b = false;  // only a's gradient, of the full shape: no scratch
  EXPECT_EQ(BinaryBackwardPlan::select(kCpu, d)->workspace_size(), 0u);
  d.need_b = true;
  // Too small a workspace is refused like every plan's.
  std::vector<float> dy(12, 1.f), a(12, 2.f), b(4, 3.f), da(12), db(4);
  BinaryBackwardArgs args;
  args.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {3, 4}, 12);
  args.a = TensorRef::contiguous(a.data(), Device::cpu(), {3, 4}, 12);
  args.b = TensorRef::contiguous(b.data(), Device::cpu(), {4}, 4);
  args.da = TensorMut::contiguous(da.data(), Device::cpu(), {3, 4}, 12);
  args.db = TensorMut::contiguous(db.data(), Device::cpu(), {4}, 4);
  EXPECT_EQ(bc->run(kCpu, {}, args).code(), StatusCode::WorkspaceTooSmall);
  std::vector<uint64_t> ws(bc->workspace_size() / 8 + 1);
  ASSERT_TRUE(bc->run(kCpu, {ws.data(), bc->workspace_size()}, args).is_ok());
  EXPECT_EQ(db, (std::vector<float>{6, 6, 6, 6}));  // dy * a summed over 3 rows
  EXPECT_EQ(da[5], 3.f);
  // Strict workspace mode: the scribbled workspace does not leak into the result.
  PlanPreference strict;
  strict.strict_workspace = true;
  auto sp = BinaryBackwardPlan::select(kCpu, d, strict);
  ASSERT_TRUE(sp.is_ok());
  std::vector<uint64_t> ws2(sp->workspace_size() / 8 + 1);
  std::fill(db.begin(), db.end(), 0.f);
  ASSERT_TRUE(sp->run(kCpu, {ws2.data(), sp->workspace_size()}, args).is_ok());
  EXPECT_EQ(db, (std::vector<float>{6, 6, 6, 6}));
  // Zero rows: db is the sum over nothing.
  BinaryBackwardDescriptor z = d;
  z.forward.a.shape = {0, 4};
  auto zp = BinaryBackwardPlan::select(kCpu, z);
  ASSERT_TRUE(zp.is_ok());
  BinaryBackwardArgs za = args;
  za.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {0, 4}, 12);
  za.a = TensorRef::contiguous(a.data(), Device::cpu(), {0, 4}, 12);
  za.da = TensorMut::contiguous(da.data(), Device::cpu(), {0, 4}, 12);
  std::vector<uint64_t> ws3(zp->workspace_size() / 8 + 1);
  ASSERT_TRUE(zp->run(kCpu, {ws3.data(), zp->workspace_size()}, za).is_ok());
  EXPECT_EQ(db, (std::vector<float>{0, 0, 0, 0}));
}

TEST(ElementwiseBinaryBackward, RulesNameTheProblem) {
  auto msg = [](const BinaryBackwardDescriptor& d) {
    auto r = BinaryBackwardPlan::select(kCpu, d);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  BinaryBackwardDescriptor d;
  d.forward.a = Operand::tensor(DType::F32, {4});
  d.forward.b = Operand::tensor(DType::F32, {4});
  for (BinaryOp op : {BinaryOp::Eq, BinaryOp::IsClose, BinaryOp::LogicalAnd, BinaryOp::NextAfter}) {
    d.forward.op = op;
    auto r = BinaryBackwardPlan::select(kCpu, d);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
    EXPECT_NE(r.status().message().find(std::string("BinaryBackwardPlan: ") + op_name(op) + " has no gradient"),
              std::string::npos)
        << r.status().message();
  }
  d.forward.op = BinaryOp::BitwiseAnd;
  d.forward.a.dtype = d.forward.b.dtype = DType::I32;
  EXPECT_NE(msg(d).find("no gradient"), std::string::npos) << msg(d);
  d.forward.op = BinaryOp::Mul;
  EXPECT_NE(msg(d).find("the gradient of mul needs floating operands, got a of dtype i32"), std::string::npos) << msg(d);
  d.forward.a.dtype = d.forward.b.dtype = DType::F32;
  d.forward.out_dtype = DType::F64;
  EXPECT_NE(msg(d).find("dy has the forward's out_dtype f64 but the operands' common dtype is f32"), std::string::npos)
      << msg(d);
  d.forward.out_dtype.reset();
  d.forward.b = Operand::scalar();
  EXPECT_NE(msg(d).find("need_b is true but descriptor.b is a scalar: a host scalar gets no gradient"), std::string::npos)
      << msg(d);
  d.need_b = false;
  EXPECT_EQ(msg(d), "ok");
  d.need_a = false;
  EXPECT_NE(msg(d).find("every need_* is false"), std::string::npos) << msg(d);
  d.need_a = true;
  EXPECT_EQ(BinaryBackwardPlan::select(kCpu, d)->sku().op, "elementwise_backward.mul");

  // Arguments: mul's da reads b only; a given is refused, and so is db when not needed.
  d.forward.b = Operand::tensor(DType::F32, {4});
  auto plan = BinaryBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok());
  std::vector<float> dy = {1, 2, 3, 4}, a = {1, 1, 1, 1}, b = {2, 2, 2, 2}, da(4), db(4);
  BinaryBackwardArgs args;
  args.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {4}, 4);
  args.a = TensorRef::contiguous(a.data(), Device::cpu(), {4}, 4);
  args.b = TensorRef::contiguous(b.data(), Device::cpu(), {4}, 4);
  args.da = TensorMut::contiguous(da.data(), Device::cpu(), {4}, 4);
  EXPECT_NE(plan->run(kCpu, {}, args).message().find("a is given but the gradients computed (da) do not read a"),
            std::string::npos)
      << plan->run(kCpu, {}, args).message();
  args.a = {};
  args.db = TensorMut::contiguous(db.data(), Device::cpu(), {4}, 4);
  EXPECT_NE(plan->run(kCpu, {}, args).message().find("db is given but descriptor.need_b is false"), std::string::npos);
  args.db = {};
  args.da = TensorMut::contiguous(da.data(), Device::cpu(), {2}, 2);
  EXPECT_FALSE(plan->run(kCpu, {}, args).is_ok());
  // da may be dy itself.
  args.da = TensorMut::contiguous(dy.data(), Device::cpu(), {4}, 4);
  ASSERT_TRUE(plan->run(kCpu, {}, args).is_ok());
  EXPECT_EQ(dy, (std::vector<float>{2, 4, 6, 8}));
  // A scalar value the gradient does not read is refused (add reads neither operand).
  BinaryBackwardDescriptor ad;
  ad.forward.op = BinaryOp::Add;
  ad.forward.a = Operand::tensor(DType::F32, {4});
  ad.forward.b = Operand::scalar();
  ad.need_b = false;
  auto ap = BinaryBackwardPlan::select(kCpu, ad);
  ASSERT_TRUE(ap.is_ok());
  BinaryBackwardArgs aa;
  aa.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {4}, 4);
  aa.b_value = Scalar(2.0);
  aa.da = TensorMut::contiguous(da.data(), Device::cpu(), {4}, 4);
  EXPECT_NE(ap->run(kCpu, {}, aa).message().find("b_value is given but the gradients computed (da) do not read b"),
            std::string::npos)
      << ap->run(kCpu, {}, aa).message();
  aa.b_value.reset();
  EXPECT_TRUE(ap->run(kCpu, {}, aa).is_ok());
}

TEST(ElementwiseTernaryBackward, RulesNameTheProblem) {
  auto msg = [](const TernaryBackwardDescriptor& d) {
    auto r = TernaryBackwardPlan::select(kCpu, d);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  TernaryBackwardDescriptor d;
  d.forward.op = TernaryOp::Where;
  d.forward.a = Operand::tensor(DType::Bool, {4});
  d.forward.b = Operand::tensor(DType::F32, {4});
  d.forward.c = Operand::tensor(DType::F32, {4});
  EXPECT_NE(msg(d).find("TernaryBackwardPlan: where's condition a is bool and has no gradient: need_a must be false"),
            std::string::npos)
      << msg(d);
  d.need_a = false;
  EXPECT_EQ(msg(d), "ok");
  d.forward.op = TernaryOp::Clamp;
  d.forward.a.dtype = DType::F32;
  d.forward.c = Operand::absent();
  d.need_a = true;
  EXPECT_NE(msg(d).find("need_c is true but descriptor.c is absent"), std::string::npos) << msg(d);
  d.need_c = false;
  EXPECT_EQ(msg(d), "ok");
  d.forward.a.dtype = DType::I64;
  d.forward.b.dtype = DType::I64;
  EXPECT_NE(msg(d).find("needs floating operands"), std::string::npos) << msg(d);
  // Clamp's absent bound: its tensor slot must stay empty.
  d.forward.a.dtype = d.forward.b.dtype = DType::F32;
  auto plan = TernaryBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok());
  std::vector<float> dy = {1, 1, 1, 1}, x = {0, 1, 2, 3}, lo = {1, 1, 1, 1}, dx(4), dlo(4);
  TernaryBackwardArgs args;
  args.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {4}, 4);
  args.a = TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4);
  args.b = TensorRef::contiguous(lo.data(), Device::cpu(), {4}, 4);
  args.c = args.b;
  args.da = TensorMut::contiguous(dx.data(), Device::cpu(), {4}, 4);
  args.db = TensorMut::contiguous(dlo.data(), Device::cpu(), {4}, 4);
  EXPECT_NE(plan->run(kCpu, {}, args).message().find("c is given but descriptor.c is absent"), std::string::npos)
      << plan->run(kCpu, {}, args).message();
  args.c = {};
  ASSERT_TRUE(plan->run(kCpu, {}, args).is_ok());
  EXPECT_EQ(dx, (std::vector<float>{0, 1, 1, 1}));
  EXPECT_EQ(dlo, (std::vector<float>{1, 0, 0, 0}));
  EXPECT_EQ(plan->sku().op, "elementwise_backward.clamp");
}

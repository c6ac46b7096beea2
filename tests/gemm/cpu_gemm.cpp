// Matrix multiply family (MatmulPlan, LinearPlan, LinearBackwardPlan) on the
// CPU reference:
//   * every validation rule of include/baracuda/ops/gemm.hpp: its StatusCode
//     and a substring of its message (descriptor rules at select(), argument
//     rules at can_implement() and run());
//   * values against a naive model written here (gemm/gemm_oracle.hpp, plain
//     double loops, independent of src/): torch.matmul's shape rules (1-D . 1-D,
//     2-D . 1-D, 1-D . 2-D, N-D broadcast batches), strided / transposed /
//     broadcast views, odd sizes, K = 0, alpha / beta with broadcast c, c in
//     place, bias, each activation, save_aux, zero-size outputs (which succeed
//     and write nothing);
//   * LinearBackwardPlan against central finite differences of LinearPlan in
//     f64, for every activation with and without bias (x of rank 3);
//   * f16 / bf16 against the model within the design's tolerances.
// Tolerances relative to ||ref|| (bt::tolerance): f64 1e-12, f32 1e-5,
// f16 2e-3, bf16 1e-2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "gemm/gemm_oracle.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();
constexpr DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr GemmActivation kActs[] = {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh,
                                    GemmActivation::Gelu};

bool needs_aux(GemmActivation a) { return a == GemmActivation::Gelu || a == GemmActivation::GeluTanh; }

MatmulDescriptor mm_desc(DType t, const Dims& a, const Dims& b) {
  MatmulDescriptor d;
  d.dtype = t;
  d.a_shape = a;
  d.b_shape = b;
  return d;
}

// ---------------------------------------------------------------------------
// One MatmulPlan call on the CPU: random inputs stored in the given layouts,
// poisoned outputs whose gaps must stay poisoned.
// ---------------------------------------------------------------------------
struct MmCase {
  MatmulDescriptor d;
  std::optional<bt::Layout> la, lb, lc, lout;
  bool c_is_out = false;  // c is out itself (addmm_): out's storage holds c's values
};
struct MmRun {
  Status st;
  Dims out_shape;
  std::vector<double> a, b, c, bias;  // inputs as stored (rounded to the dtype)
  std::vector<double> out, aux;
  KernelSku sku;
};

std::string describe(const MmCase& k) {
  const MatmulDescriptor& d = k.d;
  std::string s = std::string(dtype_name(d.dtype)) + " a" + d.a_shape.to_string() + " b" + d.b_shape.to_string();
  if (k.la) s += " a:" + k.la->name;
  if (k.lb) s += " b:" + k.lb->name;
  if (d.has_c) s += " c" + d.c_shape.to_string() + (k.c_is_out ? "(in place)" : "") + " alpha " +
                    std::to_string(d.alpha) + " beta " + std::to_string(d.beta);
  if (d.has_bias) s += " +bias";
  s += std::string(" act ") + gemm_activation_name(d.activation) + (d.save_aux ? " +aux" : "");
  return s;
}

MmRun run_matmul(const MmCase& k, bt::Rng& rng) {
  MmRun r;
  const MatmulDescriptor& d = k.d;
  auto plan = MatmulPlan::select(kCpu, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  r.sku = plan->sku();
  r.out_shape = plan->out_shape();
  const bt::Layout la = k.la.value_or(bt::contiguous(d.a_shape));
  const bt::Layout lb = k.lb.value_or(bt::contiguous(d.b_shape));
  const bt::Layout lout = k.lout.value_or(bt::contiguous(r.out_shape));
  const bt::Layout lc = k.c_is_out ? lout : k.lc.value_or(bt::contiguous(d.c_shape));
  const bt::Layout lbias = bt::contiguous(plan->bias_shape());
  const bt::Layout laux = bt::contiguous(r.out_shape);

  auto fill = [&](bt::HostBuffer& buf, const bt::Layout& L) {
    buf.poison();
    bt::scatter(buf, L, bt::random_values(d.dtype, L.numel(), rng));
    return bt::gather(buf, L);  // what a broadcast view really holds
  };
  bt::HostBuffer ab(d.dtype, la.storage), bb(d.dtype, lb.storage), cb(d.dtype, lc.storage);
  bt::HostBuffer biasb(d.dtype, lbias.storage), outb(d.dtype, lout.storage), auxb(d.dtype, laux.storage);
  r.a = fill(ab, la);
  r.b = fill(bb, lb);
  outb.poison();
  auxb.poison();
  if (d.has_c) r.c = fill(k.c_is_out ? outb : cb, lc);
  if (d.has_bias) r.bias = fill(biasb, lbias);

  MatmulArgs args;
  args.a = bt::view(ab, la);
  args.b = bt::view(bb, lb);
  if (d.has_c) args.c = k.c_is_out ? TensorRef(bt::view(outb, lout)) : bt::view(cb, lc);
  if (d.has_bias) args.bias = bt::view(biasb, lbias);
  args.out = bt::view_mut(outb, lout);
  if (d.save_aux) args.aux = bt::view_mut(auxb, laux);
  r.st = plan->run(kCpu, Workspace::none(), args);
  if (!r.st) return r;
  EXPECT_EQ(bt::check_gaps(outb, lout, bt::poison_byte(d.dtype)), "") << "out of " << describe(k);
  r.out = bt::gather(outb, lout);
  if (d.save_aux) r.aux = bt::gather(auxb, laux);
  return r;
}

// Runs the case and compares out (and aux) with the model.
void expect_model(const MmCase& k, double tol = -1) {
  SCOPED_TRACE(describe(k));
  const MatmulDescriptor& d = k.d;
  if (tol < 0) tol = bt::tolerance(d.dtype);
  bt::Rng rng(bt::fresh_seed(describe(k)));
  const MmRun r = run_matmul(k, rng);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  const Dims cs = k.c_is_out ? r.out_shape : d.c_shape;
  const auto m = gemm_oracle::matmul(d.a_shape, r.a, d.b_shape, r.b, d.alpha, d.has_c ? &cs : nullptr,
                                     d.has_c ? &r.c : nullptr, d.beta, d.has_bias ? &r.bias : nullptr, d.activation);
  ASSERT_TRUE(m.ok);
  ASSERT_EQ(r.out_shape, m.out_shape);
  EXPECT_LE(bt::rel_error(r.out, m.out), tol) << bt::describe_mismatch(r.out, m.out);
  if (d.save_aux) {
    EXPECT_LE(bt::rel_error(r.aux, m.pre), tol) << "aux: " << bt::describe_mismatch(r.aux, m.pre);
  }
}

// A transposed view of the last two dims (column-major matrices).
bt::Layout transposed_matrices(const Dims& s) {
  std::vector<int> perm;
  for (int i = 0; i < s.rank; ++i) perm.push_back(i);
  if (s.rank >= 2) std::swap(perm[static_cast<size_t>(s.rank - 1)], perm[static_cast<size_t>(s.rank - 2)]);
  bt::Layout L = bt::permuted(s, perm);
  L.name = "transposed matrices";
  return L;
}

// ---------------------------------------------------------------------------
// LinearPlan / LinearBackwardPlan on contiguous host storage.
// ---------------------------------------------------------------------------
struct LinRun {
  Status st;
  std::vector<double> y, aux;
};

LinRun run_linear(const LinearDescriptor& d, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& bias) {
  LinRun r;
  auto plan = LinearPlan::select(kCpu, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const bt::HostBuffer xb = bt::host_from(d.dtype, x), wb = bt::host_from(d.dtype, w), bb = bt::host_from(d.dtype, bias);
  bt::HostBuffer yb(d.dtype, bt::numel(plan->y_shape())), auxb(d.dtype, bt::numel(plan->y_shape()));
  yb.poison();
  auxb.poison();
  LinearArgs a;
  a.x = bt::view(xb, bt::contiguous(d.x_shape));
  a.weight = bt::view(wb, bt::contiguous(plan->weight_shape()));
  if (d.has_bias) a.bias = bt::view(bb, bt::contiguous(plan->bias_shape()));
  a.y = bt::view_mut(yb, bt::contiguous(plan->y_shape()));
  if (d.save_aux) a.aux = bt::view_mut(auxb, bt::contiguous(plan->y_shape()));
  r.st = plan->run(kCpu, Workspace::none(), a);
  r.y = bt::all_values(yb);
  if (d.save_aux) r.aux = bt::all_values(auxb);
  return r;
}

struct BwdRun {
  Status st;
  std::vector<double> dx, dw, db;
};

// Tensors only the needed outputs read are passed (x for dw, weight for dx,
// aux with an activation). dw0 / db0: dw's and db's values before the run
// (for accumulate; otherwise they start poisoned).
BwdRun run_linear_backward(const LinearBackwardDescriptor& d, const std::vector<double>& x,
                           const std::vector<double>& w, const std::vector<double>& dy,
                           const std::vector<double>& aux, const std::vector<double>* dw0 = nullptr,
                           const std::vector<double>* db0 = nullptr) {
  BwdRun r;
  auto plan = LinearBackwardPlan::select(kCpu, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const DType t = d.forward.dtype;
  const bt::HostBuffer xb = bt::host_from(t, x), wb = bt::host_from(t, w), dyb = bt::host_from(t, dy),
                       auxb = bt::host_from(t, aux);
  bt::HostBuffer dxb(t, bt::numel(d.forward.x_shape)), dwb(t, bt::numel(plan->weight_shape())),
      dbb(t, bt::numel(plan->bias_shape()));
  dxb.poison();
  dwb.poison();
  dbb.poison();
  if (dw0) dwb = bt::host_from(t, *dw0);
  if (db0) dbb = bt::host_from(t, *db0);
  std::vector<uint8_t> ws(plan->workspace_size() + 1);
  LinearBackwardArgs a;
  a.dy = bt::view(dyb, bt::contiguous(plan->y_shape()));
  if (d.need_dw) a.x = bt::view(xb, bt::contiguous(d.forward.x_shape));
  if (d.need_dx) a.weight = bt::view(wb, bt::contiguous(plan->weight_shape()));
  if (d.forward.activation != GemmActivation::None) a.aux = bt::view(auxb, bt::contiguous(plan->y_shape()));
  if (d.need_dx) a.dx = bt::view_mut(dxb, bt::contiguous(d.forward.x_shape));
  if (d.need_dw) a.dw = bt::view_mut(dwb, bt::contiguous(plan->weight_shape()));
  if (d.need_db) a.db = bt::view_mut(dbb, bt::contiguous(plan->bias_shape()));
  r.st = plan->run(kCpu, Workspace(ws.data(), plan->workspace_size()), a);
  if (d.need_dx) r.dx = bt::all_values(dxb);
  if (d.need_dw) r.dw = bt::all_values(dwb);
  if (d.need_db) r.db = bt::all_values(dbb);
  return r;
}

LinearDescriptor lin_desc(DType t, const Dims& x, int64_t n, bool bias, GemmActivation act = GemmActivation::None,
                          bool save_aux = false) {
  LinearDescriptor d;
  d.dtype = t;
  d.x_shape = x;
  d.out_features = n;
  d.has_bias = bias;
  d.activation = act;
  d.save_aux = save_aux;
  return d;
}

// =============================================================================
// Validation: descriptor rules (select)
// =============================================================================
Status select_status(const MatmulDescriptor& d) { return MatmulPlan::select(kCpu, d).status(); }

TEST(GemmValidation, ValidDescriptorSelects) {
  auto plan = MatmulPlan::select(kCpu, mm_desc(DType::F32, {2, 4, 3}, {3, 5}));
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan->out_shape(), (Dims{2, 4, 5}));
  EXPECT_EQ(plan->m(), 4);
  EXPECT_EQ(plan->n(), 5);
  EXPECT_EQ(plan->k(), 3);
  EXPECT_EQ(plan->bias_shape(), (Dims{5}));
  EXPECT_EQ(plan->sku().backend, Backend::CpuReference);
}

TEST(GemmValidation, DtypeMustBeFloating) {
  for (DType t : {DType::I32, DType::I64, DType::Bool, DType::I8}) {
    SCOPED_TRACE(dtype_name(t));
    BT_EXPECT_STATUS(select_status(mm_desc(t, {2, 3}, {3, 4})), StatusCode::Unsupported, "MatmulPlan");
    BT_EXPECT_STATUS(select_status(mm_desc(t, {2, 3}, {3, 4})), StatusCode::Unsupported, dtype_name(t));
    BT_EXPECT_STATUS(LinearPlan::select(kCpu, lin_desc(t, {2, 3}, 4, true)).status(), StatusCode::Unsupported,
                     "LinearPlan");
    LinearBackwardDescriptor bd;
    bd.forward = lin_desc(t, {2, 3}, 4, true);
    BT_EXPECT_STATUS(LinearBackwardPlan::select(kCpu, bd).status(), StatusCode::Unsupported, "LinearBackwardPlan");
  }
}

TEST(GemmValidation, OperandRanks) {
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {}, {3, 4})), StatusCode::InvalidProblem, "a has rank 0");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 3}, {})), StatusCode::InvalidProblem, "b has rank 0");
  Dims nine;  // a broken rank (Dims' fields are public): rejected, never indexed past its 8 entries
  nine.rank = 9;
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, nine, {3, 4})), StatusCode::InvalidProblem, "a has rank 9");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 3}, nine)), StatusCode::InvalidProblem, "b has rank 9");
  // rank 8 is fine.
  EXPECT_TRUE(select_status(mm_desc(DType::F32, {1, 1, 1, 1, 1, 2, 2, 3}, {3, 4})).is_ok());
}

TEST(GemmValidation, InnerDimensionsMustMatch) {
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 3}, {4, 5})), StatusCode::InvalidProblem, "do not multiply");
  const Status st = select_status(mm_desc(DType::F32, {2, 3}, {4, 5}));
  EXPECT_NE(st.message().find('3'), std::string::npos) << st.message();
  EXPECT_NE(st.message().find('4'), std::string::npos) << st.message();
  // 1-D operands: [K] . [K', N], [M, K] . [K'], [K] . [K'].
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {3}, {4, 5})), StatusCode::InvalidProblem, "MatmulPlan");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 3}, {4})), StatusCode::InvalidProblem, "MatmulPlan");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {3}, {4})), StatusCode::InvalidProblem, "MatmulPlan");
}

TEST(GemmValidation, BatchDimsMustBroadcast) {
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 4, 3}, {3, 3, 5})), StatusCode::InvalidProblem, "broadcast");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 2, 4, 3}, {3, 3, 5})), StatusCode::InvalidProblem,
                   "broadcast");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 4, 3}, {0, 3, 5})), StatusCode::InvalidProblem, "broadcast");
  // 1 and a missing dim broadcast.
  EXPECT_TRUE(select_status(mm_desc(DType::F32, {2, 1, 4, 3}, {7, 3, 5})).is_ok());
}

TEST(GemmValidation, CMustBroadcastToOut) {
  MatmulDescriptor d = mm_desc(DType::F32, {2, 4, 3}, {3, 5});
  d.has_c = true;
  for (const Dims& bad : {Dims{4}, Dims{3, 5}, Dims{3, 4, 5}, Dims{1, 2, 4, 5}, Dims{2, 4, 5, 1}}) {
    SCOPED_TRACE(bad.to_string());
    d.c_shape = bad;
    BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "c_shape");
  }
  for (const Dims& good : {Dims{}, Dims{1}, Dims{5}, Dims{4, 1}, Dims{4, 5}, Dims{2, 1, 5}, Dims{2, 4, 5}}) {
    SCOPED_TRACE(good.to_string());
    d.c_shape = good;
    EXPECT_TRUE(select_status(d).is_ok()) << select_status(d).to_string();
  }
  d.c_shape = Dims{-1, 5};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "c_shape");
}

TEST(GemmValidation, AlphaAndBetaMustBeFinite) {
  MatmulDescriptor d = mm_desc(DType::F32, {2, 3}, {3, 4});
  d.has_c = true;
  d.c_shape = {2, 4};
  for (double bad : {bt::kNaN, bt::kInf, -bt::kInf}) {
    d.alpha = bad;
    d.beta = 1.0;
    BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "alpha");
    d.alpha = 1.0;
    d.beta = bad;
    BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "beta");
  }
}

TEST(GemmValidation, BiasNeedsAMatrixB) {
  MatmulDescriptor d = mm_desc(DType::F32, {2, 3}, {3});
  d.has_bias = true;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "bias");
  d.a_shape = {3};
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "bias");
  d.b_shape = {3, 4};  // 1-D a with a matrix b: bias [N] is fine
  EXPECT_TRUE(select_status(d).is_ok()) << select_status(d).to_string();
}

TEST(GemmValidation, SaveAuxOnlyWithGelu) {
  MatmulDescriptor d = mm_desc(DType::F32, {2, 3}, {3, 4});
  d.save_aux = true;
  d.activation = GemmActivation::Relu;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "save_aux");
  d.activation = GemmActivation::None;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "save_aux");
  for (GemmActivation a : {GemmActivation::Gelu, GemmActivation::GeluTanh}) {
    d.activation = a;
    EXPECT_TRUE(select_status(d).is_ok()) << select_status(d).to_string();
  }
  LinearDescriptor ld = lin_desc(DType::F32, {2, 3}, 4, true, GemmActivation::Relu, true);
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, ld).status(), StatusCode::InvalidProblem, "save_aux");
}

TEST(GemmValidation, UnknownActivation) {
  MatmulDescriptor d = mm_desc(DType::F32, {2, 3}, {3, 4});
  d.activation = static_cast<GemmActivation>(7);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "unknown GemmActivation");
  LinearDescriptor ld = lin_desc(DType::F32, {2, 3}, 4, true, static_cast<GemmActivation>(9));
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, ld).status(), StatusCode::InvalidProblem, "unknown GemmActivation");
  LinearBackwardDescriptor bd;
  bd.forward = ld;
  BT_EXPECT_STATUS(LinearBackwardPlan::select(kCpu, bd).status(), StatusCode::InvalidProblem, "unknown GemmActivation");
}

TEST(GemmValidation, NegativeExtents) {
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {-1, 3}, {3, 4})), StatusCode::InvalidProblem, "negative");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {2, 3}, {3, -4})), StatusCode::InvalidProblem, "negative");
  BT_EXPECT_STATUS(select_status(mm_desc(DType::F32, {-2, 2, 3}, {3, 4})), StatusCode::InvalidProblem, "negative");
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, lin_desc(DType::F32, {-2, 3}, 4, true)).status(),
                   StatusCode::InvalidProblem, "negative");
}

TEST(GemmValidation, FromTakesTheViewsShapes) {
  bt::HostBuffer a(DType::F64, 24), b(DType::F64, 12);
  auto d = MatmulDescriptor::from(bt::view(a, bt::contiguous({2, 4, 3})), bt::view(b, bt::contiguous({3, 4})));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->dtype, DType::F64);
  EXPECT_EQ(d->a_shape, (Dims{2, 4, 3}));
  EXPECT_EQ(d->b_shape, (Dims{3, 4}));
  EXPECT_FALSE(d->has_c);
  EXPECT_FALSE(d->has_bias);
  EXPECT_EQ(d->activation, GemmActivation::None);
  bt::HostBuffer c(DType::F32, 12);
  auto mixed = MatmulDescriptor::from(bt::view(a, bt::contiguous({4, 3})), bt::view(c, bt::contiguous({3, 4})));
  EXPECT_FALSE(mixed) << "a f64 with b f32 must not make a descriptor";
}

// =============================================================================
// Validation: argument rules (can_implement / run)
// =============================================================================
struct ArgFixture {
  MatmulDescriptor d;
  bt::HostBuffer a{DType::F32, 12}, b{DType::F32, 15}, c{DType::F32, 20}, bias{DType::F32, 5}, out{DType::F32, 20},
      aux{DType::F32, 20}, big{DType::F32, 64};
  ArgFixture() {
    d = mm_desc(DType::F32, {4, 3}, {3, 5});
    d.has_c = true;
    d.c_shape = {4, 5};
    d.has_bias = true;
    d.activation = GemmActivation::Gelu;
    d.save_aux = true;
    for (auto* h : {&a, &b, &c, &bias, &big}) {
      for (int64_t i = 0; i < h->size(); ++i) h->set(i, 0.25 * static_cast<double>(i % 7) - 0.5);
    }
  }
  MatmulArgs args() {
    MatmulArgs r;
    r.a = bt::view(a, bt::contiguous({4, 3}));
    r.b = bt::view(b, bt::contiguous({3, 5}));
    r.c = bt::view(c, bt::contiguous({4, 5}));
    r.bias = bt::view(bias, bt::contiguous({5}));
    r.out = bt::view_mut(out, bt::contiguous({4, 5}));
    r.aux = bt::view_mut(aux, bt::contiguous({4, 5}));
    return r;
  }
};

TEST(GemmArgs, ValidArgumentsPass) {
  ArgFixture f;
  auto plan = MatmulPlan::select(kCpu, f.d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_TRUE(plan->can_implement(f.args()).is_ok()) << plan->can_implement(f.args()).to_string();
  EXPECT_TRUE(plan->run(kCpu, Workspace::none(), f.args()).is_ok());
}

TEST(GemmArgs, MissingOptionalTensorsAreNamed) {
  ArgFixture f;
  auto plan = MatmulPlan::select(kCpu, f.d);
  ASSERT_TRUE(plan);
  MatmulArgs a = f.args();
  a.c = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "c is missing");
  BT_EXPECT_STATUS(plan->run(kCpu, Workspace::none(), a), StatusCode::InvalidProblem, "c is missing");
  a = f.args();
  a.bias = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "bias is missing");
  a = f.args();
  a.aux = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "aux is missing");
  a = f.args();
  a.a = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "a is missing");
  a = f.args();
  a.b = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "b is missing");
  a = f.args();
  a.out = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out is missing");
}

TEST(GemmArgs, UnusedOptionalTensorsAreRefused) {
  ArgFixture f;
  MatmulDescriptor d = f.d;
  d.has_c = false;
  d.has_bias = false;
  d.save_aux = false;
  auto plan = MatmulPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  MatmulArgs a = f.args();
  a.bias = {};
  a.aux = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "has_c");
  a = f.args();
  a.c = {};
  a.aux = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "has_bias");
  a = f.args();
  a.c = {};
  a.bias = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "save_aux");
  a.aux = {};
  EXPECT_TRUE(plan->can_implement(a).is_ok()) << plan->can_implement(a).to_string();
}

TEST(GemmArgs, ShapesAndDtypes) {
  ArgFixture f;
  auto plan = MatmulPlan::select(kCpu, f.d);
  ASSERT_TRUE(plan);
  MatmulArgs a = f.args();
  a.a = bt::view(f.a, bt::contiguous({3, 4}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "a shape [3,4] must be [4,3]");
  a = f.args();
  a.b = bt::view(f.b, bt::contiguous({5, 3}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "b shape");
  a = f.args();
  a.c = bt::view(f.c, bt::contiguous({5}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "c shape");
  a = f.args();
  a.bias = bt::view(f.bias, bt::contiguous({4}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "bias shape");
  a = f.args();
  a.out = bt::view_mut(f.out, bt::contiguous({5, 4}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out shape");
  a = f.args();
  a.aux = bt::view_mut(f.aux, bt::contiguous({4, 4}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "aux shape");
  bt::HostBuffer a64(DType::F64, 12), bias16(DType::F16, 5), out16(DType::BF16, 20);
  a = f.args();
  a.a = bt::view(a64, bt::contiguous({4, 3}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "a dtype f64 must be f32");
  a = f.args();
  a.bias = bt::view(bias16, bt::contiguous({5}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "bias dtype f16 must be f32");
  a = f.args();
  a.out = bt::view_mut(out16, bt::contiguous({4, 5}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out dtype bf16 must be f32");
  // A buffer too short for its view.
  a = f.args();
  a.b = TensorRef(f.b.data(), DType::F32, Device::cpu(), {3, 5}, {5, 1}, 14);
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::BufferTooSmall, "b view reaches 15");
  // A CUDA view on a CPU plan.
  a = f.args();
  a.a = TensorRef(f.a.data(), DType::F32, Device::cuda(0), {4, 3}, {3, 1}, 12);
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "a is on cuda");
}

TEST(GemmArgs, OutputsMustNotOverlapInputs) {
  ArgFixture f;
  MatmulDescriptor d = mm_desc(DType::F32, {4, 4}, {4, 4});
  auto plan = MatmulPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  MatmulArgs a;
  a.a = bt::view(f.big, bt::contiguous({4, 4}));
  a.b = TensorRef(f.c.data(), DType::F32, Device::cpu(), {4, 4}, {4, 1}, 20);
  a.out = bt::view_mut(f.big, bt::contiguous({4, 4}));  // out is a itself: no in-place matmul
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out overlaps a");
  a.out = TensorMut(static_cast<float*>(f.big.data()) + 8, DType::F32, Device::cpu(), {4, 4}, {4, 1}, 56);
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out overlaps a");
  a.out = TensorMut(f.c.data(), DType::F32, Device::cpu(), {4, 4}, {4, 1}, 20);  // out is b
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out overlaps b");
  // aux overlapping out.
  MatmulDescriptor g = d;
  g.activation = GemmActivation::GeluTanh;
  g.save_aux = true;
  auto gp = MatmulPlan::select(kCpu, g);
  ASSERT_TRUE(gp);
  a.out = bt::view_mut(f.out, bt::contiguous({4, 4}));
  a.aux = TensorMut(static_cast<float*>(f.out.data()) + 4, DType::F32, Device::cpu(), {4, 4}, {4, 1}, 16);
  BT_EXPECT_STATUS(gp->can_implement(a), StatusCode::InvalidProblem, "overlaps");
  // An output that writes one element twice.
  a.aux = {};
  a.out = TensorMut(f.out.data(), DType::F32, Device::cpu(), {4, 4}, {0, 1}, 20);
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "out strides");
}

TEST(GemmArgs, COverlappingOutOnlyInPlace) {
  ArgFixture f;
  MatmulDescriptor d = mm_desc(DType::F32, {4, 3}, {3, 5});
  d.has_c = true;
  d.c_shape = {4, 5};
  auto plan = MatmulPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  MatmulArgs a = f.args();
  a.bias = {};
  a.aux = {};
  a.out = bt::view_mut(f.big, bt::contiguous({4, 5}));
  a.c = TensorRef(a.out);  // exactly out: addmm_
  EXPECT_TRUE(plan->can_implement(a).is_ok()) << plan->can_implement(a).to_string();
  // Shifted by one element: a partial overlap.
  a.c = TensorRef(static_cast<const float*>(f.big.data()) + 1, DType::F32, Device::cpu(), {4, 5}, {5, 1}, 63);
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "overlaps c");
  // The same storage read transposed is no in-place pair either.
  MatmulDescriptor sq = mm_desc(DType::F32, {4, 3}, {3, 4});
  sq.has_c = true;
  sq.c_shape = {4, 4};
  auto sp = MatmulPlan::select(kCpu, sq);
  ASSERT_TRUE(sp);
  a.b = bt::view(f.b, bt::contiguous({3, 4}));
  a.out = bt::view_mut(f.big, bt::contiguous({4, 4}));
  a.c = TensorRef(f.big.data(), DType::F32, Device::cpu(), {4, 4}, {1, 4}, 64);
  BT_EXPECT_STATUS(sp->can_implement(a), StatusCode::InvalidProblem, "overlaps c");
}

TEST(GemmArgs, StreamAndEmptyPlan) {
  ArgFixture f;
  MatmulPlan empty;
  BT_EXPECT_STATUS(empty.can_implement(f.args()), StatusCode::InvalidProblem, "empty");
  LinearPlan lempty;
  BT_EXPECT_STATUS(lempty.can_implement(LinearArgs{}), StatusCode::InvalidProblem, "LinearPlan");
  LinearBackwardPlan bempty;
  BT_EXPECT_STATUS(bempty.can_implement(LinearBackwardArgs{}), StatusCode::InvalidProblem, "LinearBackwardPlan");
}

TEST(GemmValidation, LinearDescriptor) {
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, lin_desc(DType::F32, {2, 3}, -1, true)).status(),
                   StatusCode::InvalidProblem, "out_features");
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, lin_desc(DType::F32, {}, 4, true)).status(), StatusCode::InvalidProblem,
                   "x_shape");
  Dims nine;
  nine.rank = 9;
  BT_EXPECT_STATUS(LinearPlan::select(kCpu, lin_desc(DType::F32, nine, 4, true)).status(),
                   StatusCode::InvalidProblem, "x_shape");
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F32, {2, 3}, -1, true);
  BT_EXPECT_STATUS(LinearBackwardPlan::select(kCpu, bd).status(), StatusCode::InvalidProblem, "out_features");
  bd.forward = lin_desc(DType::F32, {}, 4, true);
  BT_EXPECT_STATUS(LinearBackwardPlan::select(kCpu, bd).status(), StatusCode::InvalidProblem, "x_shape");

  auto plan = LinearPlan::select(kCpu, lin_desc(DType::F32, {2, 3, 5}, 4, true));
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan->y_shape(), (Dims{2, 3, 4}));
  EXPECT_EQ(plan->weight_shape(), (Dims{4, 5}));
  EXPECT_EQ(plan->bias_shape(), (Dims{4}));
}

TEST(GemmArgs, LinearWeightShapeAndOptionalTensors) {
  auto plan = LinearPlan::select(kCpu, lin_desc(DType::F32, {2, 3}, 4, true));
  ASSERT_TRUE(plan);
  bt::HostBuffer x(DType::F32, 6), w(DType::F32, 12), b(DType::F32, 4), y(DType::F32, 8), aux(DType::F32, 8);
  LinearArgs a;
  a.x = bt::view(x, bt::contiguous({2, 3}));
  a.weight = bt::view(w, bt::contiguous({4, 3}));
  a.bias = bt::view(b, bt::contiguous({4}));
  a.y = bt::view_mut(y, bt::contiguous({2, 4}));
  EXPECT_TRUE(plan->can_implement(a).is_ok()) << plan->can_implement(a).to_string();
  LinearArgs bad = a;
  bad.weight = bt::view(w, bt::contiguous({3, 4}));  // [K, N]: not nn.Linear's layout
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::InvalidProblem, "weight shape [3,4] must be [4,3]");
  bad = a;
  bad.bias = {};
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::InvalidProblem, "bias is missing");
  bad = a;
  bad.aux = bt::view_mut(aux, bt::contiguous({2, 4}));
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::InvalidProblem, "save_aux");
  bad = a;
  bad.y = bt::view_mut(y, bt::contiguous({4, 2}));
  BT_EXPECT_STATUS(plan->can_implement(bad), StatusCode::InvalidProblem, "y shape");
  auto nobias = LinearPlan::select(kCpu, lin_desc(DType::F32, {2, 3}, 4, false));
  ASSERT_TRUE(nobias);
  BT_EXPECT_STATUS(nobias->can_implement(a), StatusCode::InvalidProblem, "has_bias");
}

TEST(GemmValidation, LinearBackwardNeeds) {
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F32, {2, 3}, 4, false);
  bd.need_db = true;
  BT_EXPECT_STATUS(LinearBackwardPlan::select(kCpu, bd).status(), StatusCode::InvalidProblem, "need_db");
  bd.need_db = false;
  EXPECT_TRUE(LinearBackwardPlan::select(kCpu, bd).status().is_ok());
  // The forward's descriptor as it was: its save_aux is not used by the backward.
  bd.forward = lin_desc(DType::F32, {2, 3}, 4, true, GemmActivation::Gelu, true);
  bd.need_db = true;
  EXPECT_TRUE(LinearBackwardPlan::select(kCpu, bd).status().is_ok()) << LinearBackwardPlan::select(kCpu, bd).status().to_string();
}

// A LinearBackwardPlan's argument list with every tensor given.
struct BwdFixture {
  bt::HostBuffer x{DType::F32, 6}, w{DType::F32, 12}, dy{DType::F32, 8}, aux{DType::F32, 8}, dx{DType::F32, 6},
      dw{DType::F32, 12}, db{DType::F32, 4};
  LinearBackwardArgs all() {
    LinearBackwardArgs a;
    a.dy = bt::view(dy, bt::contiguous({2, 4}));
    a.x = bt::view(x, bt::contiguous({2, 3}));
    a.weight = bt::view(w, bt::contiguous({4, 3}));
    a.aux = bt::view(aux, bt::contiguous({2, 4}));
    a.dx = bt::view_mut(dx, bt::contiguous({2, 3}));
    a.dw = bt::view_mut(dw, bt::contiguous({4, 3}));
    a.db = bt::view_mut(db, bt::contiguous({4}));
    return a;
  }
};

TEST(GemmArgs, LinearBackwardRefusesUnusedTensors) {
  BwdFixture f;
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F32, {2, 3}, 4, true, GemmActivation::Gelu);
  auto full = LinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(full) << full.status().to_string();
  EXPECT_TRUE(full->can_implement(f.all()).is_ok()) << full->can_implement(f.all()).to_string();
  LinearBackwardArgs a = f.all();
  a.aux = {};
  BT_EXPECT_STATUS(full->can_implement(a), StatusCode::InvalidProblem, "aux is missing");
  a = f.all();
  a.dy = {};
  BT_EXPECT_STATUS(full->can_implement(a), StatusCode::InvalidProblem, "dy is missing");

  // need_dw = need_db = false (frozen weights): x is read by dw only.
  bd.need_dw = false;
  bd.need_db = false;
  auto frozen = LinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(frozen);
  a = f.all();
  a.dw = {};
  a.db = {};
  BT_EXPECT_STATUS(frozen->can_implement(a), StatusCode::InvalidProblem, "x is given");
  a.x = {};
  EXPECT_TRUE(frozen->can_implement(a).is_ok()) << frozen->can_implement(a).to_string();
  a.dw = f.all().dw;
  BT_EXPECT_STATUS(frozen->can_implement(a), StatusCode::InvalidProblem, "dw is given");

  // need_dx = false (first layer): the weight is read by dx only.
  bd.need_dw = true;
  bd.need_db = true;
  bd.need_dx = false;
  auto first = LinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(first);
  a = f.all();
  a.dx = {};
  BT_EXPECT_STATUS(first->can_implement(a), StatusCode::InvalidProblem, "weight is given");
  a.weight = {};
  EXPECT_TRUE(first->can_implement(a).is_ok()) << first->can_implement(a).to_string();
  a.dx = f.all().dx;
  BT_EXPECT_STATUS(first->can_implement(a), StatusCode::InvalidProblem, "dx is given");

  // No activation: aux is refused.
  bd.forward.activation = GemmActivation::None;
  bd.need_dx = true;
  auto plain = LinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(plain);
  BT_EXPECT_STATUS(plain->can_implement(f.all()), StatusCode::InvalidProblem, "aux is given");
  a = f.all();
  a.aux = {};
  EXPECT_TRUE(plain->can_implement(a).is_ok()) << plain->can_implement(a).to_string();
  a.db = {};
  BT_EXPECT_STATUS(plain->can_implement(a), StatusCode::InvalidProblem, "db is missing");

  // Shapes.
  a = f.all();
  a.aux = {};
  a.dy = bt::view(f.dy, bt::contiguous({4, 2}));
  BT_EXPECT_STATUS(plain->can_implement(a), StatusCode::InvalidProblem, "dy shape");
  a = f.all();
  a.aux = {};
  a.dw = bt::view_mut(f.dw, bt::contiguous({3, 4}));
  BT_EXPECT_STATUS(plain->can_implement(a), StatusCode::InvalidProblem, "dw shape");
  // An output overlapping an input.
  a = f.all();
  a.aux = {};
  a.dx = bt::view_mut(f.x, bt::contiguous({2, 3}));
  BT_EXPECT_STATUS(plain->can_implement(a), StatusCode::InvalidProblem, "dx overlaps x");
}

// =============================================================================
// Values against the model
// =============================================================================
TEST(GemmValues, HandComputed) {
  // [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]; + bias [1,-1]; relu after
  // alpha 2 and beta 0.5 * c = [[-100, 2], [0, 0]].
  const bt::HostBuffer a = bt::host_from(DType::F64, {1, 2, 3, 4}), b = bt::host_from(DType::F64, {5, 6, 7, 8});
  const bt::HostBuffer c = bt::host_from(DType::F64, {-100, 2, 0, 0}), bias = bt::host_from(DType::F64, {1, -1});
  bt::HostBuffer out(DType::F64, 4);
  MatmulDescriptor d = mm_desc(DType::F64, {2, 2}, {2, 2});
  d.has_c = true;
  d.c_shape = {2, 2};
  d.alpha = 2;
  d.beta = 0.5;
  d.has_bias = true;
  d.activation = GemmActivation::Relu;
  auto plan = MatmulPlan::select(kCpu, d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  MatmulArgs args;
  args.a = bt::view(a, bt::contiguous({2, 2}));
  args.b = bt::view(b, bt::contiguous({2, 2}));
  args.c = bt::view(c, bt::contiguous({2, 2}));
  args.bias = bt::view(bias, bt::contiguous({2}));
  args.out = bt::view_mut(out, bt::contiguous({2, 2}));
  ASSERT_TRUE(plan->run(kCpu, Workspace::none(), args).is_ok());
  // 2*19 - 50 + 1 = -11 -> 0; 2*22 + 1 - 1 = 44; 2*43 + 1 = 87; 2*50 - 1 = 99.
  EXPECT_EQ(bt::all_values(out), (std::vector<double>{0, 44, 87, 99}));
}

TEST(GemmValues, TorchMatmulShapeRules) {
  const std::vector<std::pair<Dims, Dims>> cases = {
      {{7}, {7}},                // dot -> []
      {{5, 7}, {7}},             // matrix . vector -> [5]
      {{7}, {7, 3}},             // vector . matrix -> [3]
      {{4, 7}, {7, 3}},          // mm
      {{2, 4, 7}, {7, 3}},       // [B,M,K] . [K,N]
      {{7}, {2, 7, 3}},          // vector . batched -> [2,3]
      {{2, 5, 7}, {7}},          // batched . vector -> [2,5]
      {{2, 1, 4, 7}, {3, 7, 5}}, // broadcast batch -> [2,3,4,5]
      {{1, 4, 7}, {3, 7, 5}},    // a [1,..] vs b [B,..]
      {{3, 4, 7}, {1, 7, 5}},
      {{2, 3, 4, 7}, {3, 7, 2}},
  };
  for (DType t : {DType::F64, DType::F32})
    for (const auto& [as, bs] : cases) {
      MmCase k;
      k.d = mm_desc(t, as, bs);
      expect_model(k);
    }
  // Output shapes as torch.matmul gives them.
  EXPECT_EQ(MatmulPlan::select(kCpu, mm_desc(DType::F32, {7}, {7}))->out_shape(), Dims{});
  EXPECT_EQ(MatmulPlan::select(kCpu, mm_desc(DType::F32, {5, 7}, {7}))->out_shape(), (Dims{5}));
  EXPECT_EQ(MatmulPlan::select(kCpu, mm_desc(DType::F32, {7}, {7, 3}))->out_shape(), (Dims{3}));
  EXPECT_EQ(MatmulPlan::select(kCpu, mm_desc(DType::F32, {7}, {2, 7, 3}))->out_shape(), (Dims{2, 3}));
  EXPECT_EQ(MatmulPlan::select(kCpu, mm_desc(DType::F32, {2, 1, 4, 7}, {3, 7, 5}))->out_shape(), (Dims{2, 3, 4, 5}));
  auto v = MatmulPlan::select(kCpu, mm_desc(DType::F32, {7}, {7, 3}));
  EXPECT_EQ(v->m(), 1);
  EXPECT_EQ(v->n(), 3);
  EXPECT_EQ(v->k(), 7);
}

TEST(GemmValues, OddSizes) {
  for (int64_t m : {1, 7, 33})
    for (int64_t n : {1, 7, 33})
      for (int64_t kk : {1, 7, 33}) {
        MmCase k;
        k.d = mm_desc(DType::F64, {m, kk}, {kk, n});
        expect_model(k);
      }
}

TEST(GemmValues, StridedTransposedAndBroadcastViews) {
  const Dims as{3, 7, 5}, bs{3, 5, 6};
  const std::vector<bt::Layout> la = {bt::contiguous(as), transposed_matrices(as), bt::transposed(as),
                                      bt::padded(as), bt::every_other(as), bt::broadcast(as, 0),
                                      bt::permuted(as, {1, 0, 2})};
  const std::vector<bt::Layout> lb = {bt::contiguous(bs), transposed_matrices(bs), bt::padded(bs),
                                      bt::every_other(bs), bt::broadcast(bs, 0), bt::broadcast(bs, 2)};
  const Dims os{3, 7, 6};
  const std::vector<bt::Layout> lo = {bt::contiguous(os), transposed_matrices(os), bt::padded(os), bt::every_other(os)};
  for (DType t : {DType::F64, DType::F32})
    for (size_t i = 0; i < la.size(); ++i)
      for (size_t j = 0; j < lb.size(); ++j) {
        MmCase k;
        k.d = mm_desc(t, as, bs);
        k.la = la[i];
        k.lb = lb[j];
        k.lout = lo[(i + j) % lo.size()];
        expect_model(k);
      }
}

TEST(GemmValues, KZeroIsBetaCPlusBiasThenActivation) {
  for (GemmActivation act : kActs) {
    MmCase k;
    k.d = mm_desc(DType::F64, {2, 3, 0}, {0, 4});
    k.d.has_c = true;
    k.d.c_shape = {3, 4};
    k.d.beta = -1.5;
    k.d.alpha = 3;
    k.d.has_bias = true;
    k.d.activation = act;
    k.d.save_aux = needs_aux(act);
    expect_model(k);
    k.d.has_c = false;  // out = act(bias)
    expect_model(k);
    k.d.has_bias = false;  // out = act(0)
    expect_model(k);
  }
  // 1-D . 1-D of length 0: a 0-D zero (plus beta * c).
  MmCase dot;
  dot.d = mm_desc(DType::F64, {0}, {0});
  dot.d.has_c = true;
  dot.d.c_shape = {};
  dot.d.beta = 2;
  expect_model(dot);
}

TEST(GemmValues, AlphaBetaAndBroadcastC) {
  const Dims as{2, 5, 7}, bs{7, 6};  // out [2, 5, 6]
  for (DType t : {DType::F64, DType::F32})
    for (const Dims& cs : {Dims{2, 5, 6}, Dims{5, 6}, Dims{6}, Dims{5, 1}, Dims{1}, Dims{}, Dims{2, 1, 6}, Dims{2, 1, 1}})
      for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {0.5, -2.0}, {0.0, 1.0}, {-1.25, 0.0}, {2.0, 0.75}}) {
        MmCase k;
        k.d = mm_desc(t, as, bs);
        k.d.has_c = true;
        k.d.c_shape = cs;
        k.d.alpha = alpha;
        k.d.beta = beta;
        expect_model(k);
      }
  // Broadcast c given as a stride-0 view of out's full shape.
  MmCase k;
  k.d = mm_desc(DType::F64, {5, 7}, {7, 6});
  k.d.has_c = true;
  k.d.c_shape = {5, 6};
  k.lc = bt::broadcast({5, 6}, 0);
  k.d.beta = 0.5;
  expect_model(k);
  k.lc = bt::transposed({5, 6});
  expect_model(k);
}

TEST(GemmValues, BetaZeroIgnoresC) {
  // torch.addmm: with beta = 0, NaN / inf in c do not propagate.
  bt::HostBuffer a = bt::host_from(DType::F32, {1, 2, 3, 4, 5, 6}), b = bt::host_from(DType::F32, {1, 0, 0, 1, 1, 1});
  bt::HostBuffer c = bt::host_from(DType::F32, {bt::kNaN, bt::kInf, -bt::kInf, bt::kNaN}), out(DType::F32, 4);
  MatmulDescriptor d = mm_desc(DType::F32, {2, 3}, {3, 2});
  d.has_c = true;
  d.c_shape = {2, 2};
  d.beta = 0;
  auto plan = MatmulPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  MatmulArgs args;
  args.a = bt::view(a, bt::contiguous({2, 3}));
  args.b = bt::view(b, bt::contiguous({3, 2}));
  args.c = bt::view(c, bt::contiguous({2, 2}));
  args.out = bt::view_mut(out, bt::contiguous({2, 2}));
  ASSERT_TRUE(plan->run(kCpu, Workspace::none(), args).is_ok());
  EXPECT_EQ(bt::all_values(out), (std::vector<double>{4, 5, 10, 11}));
}

TEST(GemmValues, CInPlace) {
  for (DType t : {DType::F64, DType::F32})
    for (const Dims& as : {Dims{5, 7}, Dims{3, 5, 7}}) {
      MmCase k;
      k.d = mm_desc(t, as, {7, 6});
      k.d.has_c = true;
      k.d.c_shape = as.rank == 2 ? Dims{5, 6} : Dims{3, 5, 6};
      k.d.alpha = 0.5;
      k.d.beta = -1;
      k.c_is_out = true;
      expect_model(k);
      k.lout = transposed_matrices(k.d.c_shape);
      k.d.has_bias = true;
      k.d.activation = GemmActivation::GeluTanh;
      expect_model(k);
    }
}

TEST(GemmValues, BiasAndEveryActivationWithAux) {
  for (DType t : {DType::F64, DType::F32})
    for (GemmActivation act : kActs)
      for (bool bias : {false, true})
        for (bool c : {false, true}) {
          MmCase k;
          k.d = mm_desc(t, {2, 9, 11}, {2, 11, 13});
          k.d.has_bias = bias;
          k.d.has_c = c;
          k.d.c_shape = {13};
          k.d.alpha = 1.5;
          k.d.beta = 0.5;
          k.d.activation = act;
          k.d.save_aux = needs_aux(act);
          expect_model(k);
        }
  // 1-D a (its M axis dropped) with bias and aux.
  MmCase v;
  v.d = mm_desc(DType::F64, {11}, {3, 11, 13});
  v.d.has_bias = true;
  v.d.activation = GemmActivation::Gelu;
  v.d.save_aux = true;
  expect_model(v);
}

TEST(GemmValues, GeluFormulasDiffer) {
  // The three activations must be told apart: GeluTanh and Gelu differ by up
  // to ~5e-4 near |x| = 2, far above f64 rounding (a swapped formula fails).
  const bt::HostBuffer a = bt::host_from(DType::F64, {-2.0, -1.0, 0.5, 1.7, 2.2, 3.0}), b = bt::host_from(DType::F64, {1});
  for (GemmActivation act : kActs) {
    MatmulDescriptor d = mm_desc(DType::F64, {6, 1}, {1, 1});
    d.activation = act;
    auto plan = MatmulPlan::select(kCpu, d);
    ASSERT_TRUE(plan);
    bt::HostBuffer out(DType::F64, 6);
    MatmulArgs args;
    args.a = bt::view(a, bt::contiguous({6, 1}));
    args.b = bt::view(b, bt::contiguous({1, 1}));
    args.out = bt::view_mut(out, bt::contiguous({6, 1}));
    ASSERT_TRUE(plan->run(kCpu, Workspace::none(), args).is_ok());
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_NEAR(out.get(i), gemm_oracle::act(act, a.get(i)), 1e-15) << gemm_activation_name(act) << " at " << a.get(i);
  }
  EXPECT_GT(std::fabs(gemm_oracle::act(GemmActivation::Gelu, 2.2) - gemm_oracle::act(GemmActivation::GeluTanh, 2.2)), 1e-5);
}

TEST(GemmValues, ZeroSizeOutputsSucceedAndWriteNothing) {
  struct Z {
    Dims a, b;
  };
  for (const Z& z : {Z{{0, 5}, {5, 4}}, Z{{3, 5}, {5, 0}}, Z{{0, 3, 5}, {5, 4}}, Z{{1, 3, 5}, {0, 5, 4}},
                     Z{{0, 0}, {0, 0}}, Z{{0}, {0, 0}}, Z{{3, 0}, {0, 0}}})
    for (bool extras : {false, true}) {
      SCOPED_TRACE(z.a.to_string() + " . " + z.b.to_string() + (extras ? " +c +bias +aux" : ""));
      MatmulDescriptor d = mm_desc(DType::F32, z.a, z.b);
      if (extras) {
        d.has_c = true;
        d.c_shape = {1};
        d.has_bias = true;
        d.activation = GemmActivation::Gelu;
        d.save_aux = true;
      }
      auto plan = MatmulPlan::select(kCpu, d);
      ASSERT_TRUE(plan) << plan.status().to_string();
      ASSERT_EQ(bt::numel(plan->out_shape()), 0);
      // Inputs may be non-empty (a [3, 5] with b [5, 0]); outputs are all empty.
      bt::HostBuffer a(DType::F32, 64), b(DType::F32, 64), c(DType::F32, 8), bias(DType::F32, 8), out(DType::F32, 8),
          aux(DType::F32, 8);
      bt::Rng rng(bt::fresh_seed());
      for (auto* h : {&a, &b, &c, &bias}) bt::fill_random(*h, rng);
      out.poison();
      aux.poison();
      auto ref = [](const bt::HostBuffer& h, const Dims& s) {
        return TensorRef(h.data(), h.dtype(), Device::cpu(), s, contiguous_strides(s), h.size());
      };
      auto mut = [](bt::HostBuffer& h, const Dims& s) {
        return TensorMut(h.data(), h.dtype(), Device::cpu(), s, contiguous_strides(s), h.size());
      };
      MatmulArgs args;
      args.a = ref(a, z.a);
      args.b = ref(b, z.b);
      if (extras) {
        args.c = ref(c, {1});
        args.bias = ref(bias, plan->bias_shape());
        args.aux = mut(aux, plan->out_shape());
      }
      args.out = mut(out, plan->out_shape());
      EXPECT_TRUE(plan->can_implement(args).is_ok()) << plan->can_implement(args).to_string();
      const Status st = plan->run(kCpu, Workspace::none(), args);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      const bt::Layout whole = bt::contiguous({0});
      bt::Layout storage = whole;
      storage.storage = 8;
      EXPECT_EQ(bt::check_gaps(out, storage, bt::poison_byte(DType::F32)), "");
      EXPECT_EQ(bt::check_gaps(aux, storage, bt::poison_byte(DType::F32)), "");
    }
}

TEST(GemmValues, SkuOfTheCpuPlans) {
  auto mm = MatmulPlan::select(kCpu, mm_desc(DType::BF16, {4, 3}, {3, 5}));
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->sku().backend, Backend::CpuReference);
  EXPECT_EQ(mm->sku().dtype, DType::BF16);
  EXPECT_EQ(mm->sku().arch, 0);
  EXPECT_FALSE(mm->sku().op.empty());
  auto lin = LinearPlan::select(kCpu, lin_desc(DType::F32, {4, 3}, 5, true));
  ASSERT_TRUE(lin);
  EXPECT_EQ(lin->sku().backend, Backend::CpuReference);
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F32, {4, 3}, 5, true);
  auto bwd = LinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(bwd);
  EXPECT_EQ(bwd->sku().backend, Backend::CpuReference);
  EXPECT_NE(mm->sku().op, bwd->sku().op);
}

TEST(GemmValues, LinearMatchesTheModel) {
  for (DType t : kFloatTypes)
    for (const Dims& xs : {Dims{7}, Dims{5, 7}, Dims{2, 3, 7}, Dims{2, 1, 3, 7}, Dims{0, 7}})
      for (GemmActivation act : kActs)
        for (bool bias : {false, true}) {
          const LinearDescriptor d = lin_desc(t, xs, 6, bias, act, needs_aux(act));
          SCOPED_TRACE(std::string(dtype_name(t)) + " x" + xs.to_string() + " " + gemm_activation_name(act) +
                       (bias ? " +bias" : ""));
          bt::Rng rng(bt::fresh_seed());
          const int64_t K = xs[xs.rank - 1], rows = bt::numel(xs) / K;
          const auto x = bt::random_values(t, bt::numel(xs), rng), w = bt::random_values(t, 6 * K, rng),
                     b = bt::random_values(t, 6, rng);
          const LinRun r = run_linear(d, x, w, b);
          ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
          const auto m = gemm_oracle::linear(rows, K, 6, x, w, bias ? &b : nullptr, act);
          EXPECT_LE(bt::rel_error(r.y, m.out), bt::tolerance(t)) << bt::describe_mismatch(r.y, m.out);
          if (d.save_aux) {
            EXPECT_LE(bt::rel_error(r.aux, m.pre), bt::tolerance(t)) << bt::describe_mismatch(r.aux, m.pre);
          }
        }
}

TEST(GemmValues, HalfTypesWithinTolerance) {
  for (DType t : {DType::F16, DType::BF16}) {
    for (GemmActivation act : kActs) {
      MmCase k;
      k.d = mm_desc(t, {2, 33, 65}, {65, 17});
      k.d.has_bias = true;
      k.d.has_c = true;
      k.d.c_shape = {33, 1};
      k.d.alpha = 0.5;
      k.d.beta = 2;
      k.d.activation = act;
      k.d.save_aux = needs_aux(act);
      expect_model(k);
    }
    MmCase tv;
    tv.d = mm_desc(t, {7, 33}, {33, 9});
    tv.la = transposed_matrices({7, 33});
    tv.lb = bt::padded({33, 9});
    expect_model(tv);
    MmCase dot;
    dot.d = mm_desc(t, {100}, {100});
    expect_model(dot);
  }
}

// =============================================================================
// LinearBackwardPlan
// =============================================================================

// The loss sum(y * r) of a LinearPlan forward.
double loss(const LinearDescriptor& d, const std::vector<double>& x, const std::vector<double>& w,
            const std::vector<double>& b, const std::vector<double>& r) {
  const LinRun f = run_linear(d, x, w, b);
  EXPECT_TRUE(f.st.is_ok()) << f.st.to_string();
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i) s += f.y[i] * r[i];
  return s;
}

// Central differences of loss() along every entry of `v`.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> v) {
  const double h = 1e-6;
  std::vector<double> g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = f(v);
    v[i] = keep - h;
    const double down = f(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

TEST(GemmBackward, MatchesFiniteDifferencesInF64) {
  const Dims xs{2, 3, 5};
  const int64_t K = 5, N = 4, rows = 6;
  for (GemmActivation act : kActs)
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(gemm_activation_name(act)) + (bias ? " +bias" : ""));
      const LinearDescriptor fd = lin_desc(DType::F64, xs, N, bias, act, needs_aux(act));
      bt::Rng rng(bt::fresh_seed());
      std::vector<double> x, w, b;
      // Relu: keep every pre-activation away from the kink (|pre| > 0.05 >> h).
      for (int tries = 0;; ++tries) {
        ASSERT_LT(tries, 1000);
        x = bt::random_values(DType::F64, rows * K, rng);
        w = bt::random_values(DType::F64, N * K, rng);
        b = bt::random_values(DType::F64, N, rng);
        const auto m = gemm_oracle::linear(rows, K, N, x, w, bias ? &b : nullptr, act);
        bool far = true;
        for (double p : m.pre) far &= std::fabs(p) > 0.05;
        if (act != GemmActivation::Relu || far) break;
      }
      const auto r = bt::random_values(DType::F64, rows * N, rng);
      const LinRun fwd = run_linear(fd, x, w, b);
      ASSERT_TRUE(fwd.st.is_ok()) << fwd.st.to_string();
      const std::vector<double>& aux = act == GemmActivation::Relu ? fwd.y : fwd.aux;

      LinearBackwardDescriptor bd;
      bd.forward = fd;  // the forward's descriptor as it was (save_aux is not used by the backward)
      bd.need_db = bias;
      const BwdRun g = run_linear_backward(bd, x, w, r, aux);
      ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();

      const LinearDescriptor plain = lin_desc(DType::F64, xs, N, bias, act);
      const auto ndx = numeric_grad([&](const std::vector<double>& v) { return loss(plain, v, w, b, r); }, x);
      const auto ndw = numeric_grad([&](const std::vector<double>& v) { return loss(plain, x, v, b, r); }, w);
      EXPECT_LE(bt::rel_error(g.dx, ndx), 1e-7) << "dx: " << bt::describe_mismatch(g.dx, ndx);
      EXPECT_LE(bt::rel_error(g.dw, ndw), 1e-7) << "dw: " << bt::describe_mismatch(g.dw, ndw);
      if (bias) {
        const auto ndb = numeric_grad([&](const std::vector<double>& v) { return loss(plain, x, w, v, r); }, b);
        EXPECT_LE(bt::rel_error(g.db, ndb), 1e-7) << "db: " << bt::describe_mismatch(g.db, ndb);
      }
    }
}

TEST(GemmBackward, EveryNeedSubsetMatchesTheModel) {
  const Dims xs{3, 4, 9};
  const int64_t K = 9, N = 7, rows = 12;
  for (DType t : kFloatTypes)
    for (GemmActivation act : kActs)
      for (int mask = 1; mask < 8; ++mask) {
        const bool dx = mask & 1, dw = mask & 2, db = mask & 4;
        LinearBackwardDescriptor bd;
        bd.forward = lin_desc(t, xs, N, true, act);
        bd.need_dx = dx;
        bd.need_dw = dw;
        bd.need_db = db;
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + gemm_activation_name(act) + " need" + (dx ? " dx" : "") +
                     (dw ? " dw" : "") + (db ? " db" : ""));
        bt::Rng rng(bt::fresh_seed());
        const auto x = bt::random_values(t, rows * K, rng), w = bt::random_values(t, N * K, rng),
                   dy = bt::random_values(t, rows * N, rng);
        // aux: a pre-activation (Gelu*) or a forward y (Relu, with exact zeros).
        std::vector<double> aux = bt::random_values(t, rows * N, rng, -2, 2);
        if (act == GemmActivation::Relu)
          for (double& v : aux) v = v > 0 ? v : 0.0;
        const BwdRun g = run_linear_backward(bd, x, w, dy, aux);
        ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
        const auto m = gemm_oracle::linear_backward(rows, K, N, x, w, dy, aux, act);
        const double tol = bt::tolerance(t);
        if (dx) {
          EXPECT_LE(bt::rel_error(g.dx, m.dx), tol) << "dx: " << bt::describe_mismatch(g.dx, m.dx);
        }
        if (dw) {
          EXPECT_LE(bt::rel_error(g.dw, m.dw), tol) << "dw: " << bt::describe_mismatch(g.dw, m.dw);
        }
        if (db) {
          EXPECT_LE(bt::rel_error(g.db, m.db), tol) << "db: " << bt::describe_mismatch(g.db, m.db);
        }
      }
}

TEST(GemmBackward, ReluGradientIsZeroAtZero) {
  // y == 0 exactly (a pre-activation at the kink or below): no gradient flows,
  // like PyTorch's threshold_backward.
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F64, {2, 2}, 2, true, GemmActivation::Relu);
  const std::vector<double> x{1, 2, 3, 4}, w{1, 0, 0, 1}, dy{1, 1, 1, 1}, y{0, 3, 5, 0};
  const BwdRun g = run_linear_backward(bd, x, w, dy, y);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_EQ(g.db, (std::vector<double>{1, 1}));
  EXPECT_EQ(g.dx, (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(g.dw, (std::vector<double>{3, 4, 1, 2}));
}

TEST(GemmBackward, ZeroRowsGiveZeroWeightGradients) {
  // x [0, K]: dw and db are sums over no rows, i.e. zeros (every output is overwritten).
  LinearBackwardDescriptor bd;
  bd.forward = lin_desc(DType::F32, {0, 3}, 4, true, GemmActivation::GeluTanh);
  const BwdRun g = run_linear_backward(bd, {}, std::vector<double>(12, 1.0), {}, {});
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_EQ(g.dw, std::vector<double>(12, 0.0));
  EXPECT_EQ(g.db, std::vector<double>(4, 0.0));
}

TEST(GemmBackward, AccumulateAddsTheFreshGradientToTheOldValues) {
  // f64: the reference adds the old value to the exact double sum, so old + fresh is exact here.
  for (const Dims& xs : {Dims{5, 3}, Dims{2, 3, 3}, Dims{0, 3}}) {
    SCOPED_TRACE(xs.to_string());
    LinearBackwardDescriptor bd;
    bd.forward = lin_desc(DType::F64, xs, 4, true);
    bt::Rng rng(bt::fresh_seed("accumulate " + xs.to_string()));
    const int64_t K = 3, N = 4, M = bt::numel(xs) / K;
    const auto x = bt::random_values(DType::F64, M * K, rng), w = bt::random_values(DType::F64, N * K, rng),
               dy = bt::random_values(DType::F64, M * N, rng), dw0 = bt::random_values(DType::F64, N * K, rng),
               db0 = bt::random_values(DType::F64, N, rng);
    const BwdRun fresh = run_linear_backward(bd, x, w, dy, {});
    ASSERT_TRUE(fresh.st.is_ok()) << fresh.st.to_string();
    bd.accumulate = true;
    const BwdRun acc = run_linear_backward(bd, x, w, dy, {}, &dw0, &db0);
    ASSERT_TRUE(acc.st.is_ok()) << acc.st.to_string();
    EXPECT_EQ(acc.dx, fresh.dx);  // dx is overwritten either way
    for (int64_t i = 0; i < N * K; ++i) EXPECT_EQ(acc.dw[i], dw0[i] + fresh.dw[i]) << "dw[" << i << "]";
    for (int64_t i = 0; i < N; ++i) EXPECT_EQ(acc.db[i], db0[i] + fresh.db[i]) << "db[" << i << "]";
    if (M == 0) {
      EXPECT_EQ(acc.dw, dw0);  // nothing to add: the old values stay
      EXPECT_EQ(acc.db, db0);
    }
  }
}

}  // namespace

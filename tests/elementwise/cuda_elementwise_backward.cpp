// BinaryBackwardPlan / TernaryBackwardPlan on CUDA against the CPU reference:
// every differentiable op x every floating dtype (f32 f64 f16 bf16) x
// layouts that reach every path (contiguous: vec16; odd extents and
// every-other views: strided32; mixed operand dtypes: generic64) and the
// broadcast shapes whose gradients go through the workspace and ReduceToPlan
// (row, column, 0-dim, rank 4 with several broadcast dims); each run twice on
// the GPU into differently poisoned outputs and workspaces: bit-identical.
// Tolerance per gradient: |got - ref| <= tol * terms * (1 + max |ref|), tol
// as in cuda_elementwise.cpp (f64 1e-10, f32 4e-6, f16 2^-10, bf16 2^-7),
// terms = the elements summed into one (1 without broadcasting): the GPU
// sums in f32 what the CPU sums in double, and each term carries the
// compute's rounding. Direct (unreduced) gradients also see NaN, +-inf, -0
// and huge (1e10) inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "ops/elementwise/functors_grad.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::HostBuffer, bt::kGpu, bt::to_device, bt::to_host;
using Operand = ElementwiseOperand;
const Stream kCpu = Stream::cpu();
const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

bool too_many_failures() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > 8;
}

double tol_of(DType t) {
  switch (t) {
    case DType::F64: return 1e-10;
    case DType::F32: return 4e-6;
    case DType::F16: return 1.0 / 1024;
    default: return 1.0 / 128;
  }
}

HostBuffer make_input(DType t, int64_t n, bt::Rng& rng, double lo, double hi, bool specials) {
  HostBuffer b(t, n);
  if (t == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) b.set_i(i, bt::uniform_int(rng, 0, 1));
    return b;
  }
  bt::fill_random(b, rng, lo, hi);
  if (specials) {
    // "Huge" is 1e10, not 1e30: a gradient multiplies up to three operands
    // (xlogy's db = dy * a / b), and a product that overflows f32 in the
    // kernel (as in PyTorch) stays finite in the reference's double.
    const double sp[] = {bt::kNaN, bt::kInf, -bt::kInf, -0.0, 0.0, 1e10, -1e10, 1.0, -1.0, 0.5};
    for (int64_t i = 0; i < n; i += 7) b.set(i, sp[(i / 7) % 10]);
  }
  return b;
}

// One operand of the forward: a tensor with its layout, a scalar or absent.
struct Opnd {
  Operand::Kind kind = Operand::Kind::Tensor;
  DType dtype = DType::F32;
  bt::Layout lay;
  double value = 0;  // a scalar's
};

struct GradCase {
  int arity = 2;
  int op = 0;
  Opnd o[3];
  bool need[3] = {true, true, true};
  std::optional<double> alpha;
  std::string what;
};

Operand operand_of(const Opnd& p) {
  if (p.kind == Operand::Kind::Scalar) return Operand::scalar();
  if (p.kind == Operand::Kind::Absent) return Operand::absent();
  return Operand::tensor(p.dtype, p.lay.shape);
}

int reads_of(const GradCase& c) {
  int r = 0;
  for (int m = 0; m < c.arity; ++m)
    if (c.need[m])
      r |= c.arity == 2 ? elementwise::grad_reads(static_cast<BinaryOp>(c.op), m)
                        : elementwise::grad_reads(static_cast<TernaryOp>(c.op), m);
  return r;
}

// The plan of either arity behind one interface.
struct AnyPlan {
  std::optional<BinaryBackwardPlan> bin;
  std::optional<TernaryBackwardPlan> ter;
  Status status;
  static AnyPlan select(const Stream& s, const GradCase& c) {
    AnyPlan p;
    if (c.arity == 2) {
      BinaryBackwardDescriptor d;
      d.forward.op = static_cast<BinaryOp>(c.op);
      d.forward.a = operand_of(c.o[0]);
      d.forward.b = operand_of(c.o[1]);
      d.forward.alpha = c.alpha;
      d.need_a = c.need[0];
      d.need_b = c.need[1];
      auto r = BinaryBackwardPlan::select(s, d);
      if (r) p.bin = *r;
      else p.status = r.status();
    } else {
      TernaryBackwardDescriptor d;
      d.forward.op = static_cast<TernaryOp>(c.op);
      d.forward.a = operand_of(c.o[0]);
      d.forward.b = operand_of(c.o[1]);
      d.forward.c = operand_of(c.o[2]);
      d.forward.alpha = c.alpha;
      d.need_a = c.need[0];
      d.need_b = c.need[1];
      d.need_c = c.need[2];
      auto r = TernaryBackwardPlan::select(s, d);
      if (r) p.ter = *r;
      else p.status = r.status();
    }
    return p;
  }
  bool ok() const { return bin || ter; }
  const ElementwisePlanBase& base() const { return bin ? static_cast<const ElementwisePlanBase&>(*bin) : *ter; }
  Status run(const Stream& s, Workspace ws, const TensorRef& dy, const TensorRef* in,
             const std::optional<Scalar>* val, const TensorMut* g) const {
    if (bin) return bin->run(s, ws, {dy, in[0], in[1], val[0], val[1], g[0], g[1]});
    return ter->run(s, ws, {dy, in[0], in[1], in[2], val[0], val[1], val[2], g[0], g[1], g[2]});
  }
};

// Runs the case on both backends and compares every needed gradient.
void check_case(const GradCase& c, bt::Rng& rng, double lo, double hi, bool specials) {
  const AnyPlan cpu = AnyPlan::select(kCpu, c), gpu = AnyPlan::select(kGpu, c);
  ASSERT_EQ(cpu.ok(), gpu.ok()) << c.what << ": " << cpu.status.to_string() << " / " << gpu.status.to_string();
  ASSERT_TRUE(cpu.ok()) << c.what << ": " << cpu.status.to_string();
  const Dims out = cpu.base().output_shape();
  const DType common = cpu.base().common_dtype();
  const int reads = reads_of(c);
  // Inputs.
  const bt::Layout dyl = bt::contiguous(out);
  HostBuffer hdy = make_input(common, dyl.storage, rng, -2.0, 2.0, specials);
  HostBuffer hin[3];
  std::optional<Scalar> val[3];
  for (int k = 0; k < c.arity; ++k) {
    if (!(reads >> k & 1)) continue;
    if (c.o[k].kind == Operand::Kind::Tensor) hin[k] = make_input(c.o[k].dtype, c.o[k].lay.storage, rng, lo, hi, specials);
    if (c.o[k].kind == Operand::Kind::Scalar) val[k] = Scalar(c.o[k].value);
  }
  auto gout_layout = [&](int m) { return bt::contiguous(c.o[m].lay.shape); };
  // CPU.
  TensorRef cin[3];
  TensorMut cg[3];
  HostBuffer hg[3];
  for (int k = 0; k < c.arity; ++k) {
    if (hin[k].size() > 0) cin[k] = bt::view(hin[k], c.o[k].lay);
    if (c.need[k]) {
      hg[k] = HostBuffer(c.o[k].dtype, gout_layout(k).storage);
      hg[k].poison();
      cg[k] = bt::view_mut(hg[k], gout_layout(k));
    }
  }
  std::vector<uint64_t> cws(cpu.base().workspace_size() / 8 + 1);
  const Status cs = cpu.run(kCpu, {cws.data(), cpu.base().workspace_size()}, bt::view(hdy, dyl), cin, val, cg);
  ASSERT_TRUE(cs.is_ok()) << c.what << ": " << cs.to_string();
  // CUDA, twice.
  Buffer ddy = to_device(hdy, 16);
  Buffer din[3];
  TensorRef gin[3];
  for (int k = 0; k < c.arity; ++k) {
    if (hin[k].size() == 0) continue;
    din[k] = to_device(hin[k], 16);
    gin[k] = bt::view(din[k], c.o[k].dtype, c.o[k].lay);
  }
  std::vector<uint8_t> first[3];
  for (int pass = 0; pass < 2; ++pass) {
    Buffer dg[3];
    TensorMut gg[3];
    for (int k = 0; k < c.arity; ++k) {
      if (!c.need[k]) continue;
      HostBuffer poison(c.o[k].dtype, gout_layout(k).storage);
      poison.fill_bytes(pass == 0 ? bt::poison_byte(c.o[k].dtype) : bt::alt_poison_byte(c.o[k].dtype));
      dg[k] = to_device(poison, 16);
      gg[k] = bt::view_mut(dg[k], c.o[k].dtype, gout_layout(k));
    }
    const size_t wsb = gpu.base().workspace_size();
    Buffer ws = bt::device_workspace(wsb);
    {
      HostBuffer wpoison(DType::U8, static_cast<int64_t>(std::max<size_t>(wsb, 16)));
      wpoison.fill_bytes(pass == 0 ? 0xff : 0x5a);
      ASSERT_TRUE(ws.copy_from_host(wpoison.data(), wpoison.bytes()).is_ok());
    }
    const Status gs = gpu.run(kGpu, {ws.data(), wsb}, bt::view(ddy, common, dyl), gin, val, gg);
    ASSERT_TRUE(gs.is_ok()) << c.what << ": " << gs.to_string();
    for (int k = 0; k < c.arity; ++k) {
      if (!c.need[k]) continue;
      const int64_t n = gout_layout(k).storage;
      HostBuffer back = to_host(dg[k], c.o[k].dtype, n);
      const auto got = bt::all_values(back), ref = bt::all_values(hg[k]);
      const double terms = static_cast<double>(shape_numel(out)) / static_cast<double>(std::max<int64_t>(n, 1));
      double scale = 0;
      for (double r : ref)
        if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
      const double tol = std::max(tol_of(c.o[k].dtype), tol_of(common)) * std::max(terms, 1.0) * (1 + scale);
      for (size_t i = 0; i < ref.size(); ++i) {
        const double g = got[i], r = ref[i];
        const bool ok = std::isnan(r) ? std::isnan(g) : std::isinf(r) ? g == r : std::fabs(g - r) <= tol;
        ASSERT_TRUE(ok) << c.what << ": d" << "abc"[k] << "[" << i << "] cuda " << g << " cpu " << r << " (sku "
                        << gpu.base().sku().to_string() << ")";
      }
      if (pass == 0) first[k] = back.raw();
      else ASSERT_TRUE(back.raw() == first[k]) << c.what << ": d" << "abc"[k] << ": two runs differ";
    }
  }
}

bool positive_domain(int arity, int op) {
  if (arity == 3) return static_cast<TernaryOp>(op) == TernaryOp::Addcdiv;
  switch (static_cast<BinaryOp>(op)) {
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

// Operand layouts of a case: {a, b[, c]}.
struct Shapes {
  const char* name;
  std::vector<bt::Layout> lay;
  bool broadcast;  // some gradient is reduced
};
std::vector<Shapes> shape_sets(int arity) {
  using bt::contiguous;
  if (arity == 2)
    return {{"contiguous", {contiguous({1024}), contiguous({1024})}, false},
            {"odd", {contiguous({37, 29}), contiguous({37, 29})}, false},
            {"every_other", {bt::every_other({16, 24}), bt::transposed({16, 24})}, false},
            {"row", {contiguous({33, 40}), contiguous({40})}, true},
            {"column", {contiguous({33, 40}), contiguous({33, 1})}, true},
            {"zero_dim", {contiguous({}), contiguous({7, 9})}, true},
            {"rank4", {contiguous({2, 1, 5, 8}), contiguous({1, 3, 1, 8})}, true}};
  return {{"contiguous", {contiguous({512}), contiguous({512}), contiguous({512})}, false},
          {"odd", {contiguous({13, 11}), bt::every_other({13, 11}), contiguous({13, 11})}, false},
          {"broadcast", {contiguous({6, 40}), contiguous({40}), contiguous({6, 1})}, true},
          {"rank4", {contiguous({2, 3, 1, 8}), contiguous({1, 3, 4, 1}), contiguous({})}, true}};
}

}  // namespace

TEST(CudaElementwiseBackward, EveryBinaryGradientMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<BinaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    if (!elementwise::has_gradient(op)) continue;
    for (DType dt : kFloats) {
      for (const Shapes& s : shape_sets(2)) {
        GradCase c;
        c.arity = 2;
        c.op = o;
        for (int k = 0; k < 2; ++k) c.o[k] = {Operand::Kind::Tensor, dt, s.lay[static_cast<size_t>(k)], 0};
        if (op == BinaryOp::Add || op == BinaryOp::Sub) c.alpha = -1.5;
        c.what = std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + s.name;
        const bool pos = positive_domain(2, o);
        check_case(c, rng, pos ? 0.3 : -2.0, pos ? 2.5 : 2.0, !s.broadcast);
        if (too_many_failures()) return;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 26 * 4 * 7);
}

TEST(CudaElementwiseBackward, EveryTernaryGradientMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  for (TernaryOp op : {TernaryOp::Where, TernaryOp::Clamp, TernaryOp::Lerp, TernaryOp::Addcmul, TernaryOp::Addcdiv}) {
    for (DType dt : kFloats) {
      for (const Shapes& s : shape_sets(3)) {
        GradCase c;
        c.arity = 3;
        c.op = static_cast<int>(op);
        for (int k = 0; k < 3; ++k) c.o[k] = {Operand::Kind::Tensor, dt, s.lay[static_cast<size_t>(k)], 0};
        if (op == TernaryOp::Where) {
          c.o[0].dtype = DType::Bool;
          c.need[0] = false;
        }
        if (op == TernaryOp::Addcmul || op == TernaryOp::Addcdiv) c.alpha = 0.75;
        c.what = std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + s.name;
        const bool pos = positive_domain(3, c.op);
        check_case(c, rng, pos ? 0.3 : -2.0, pos ? 2.5 : 2.0, !s.broadcast);
        if (too_many_failures()) return;
      }
    }
  }
}

// Scalars, absent bounds, need_* subsets and mixed dtypes (the generic path).
TEST(CudaElementwiseBackward, ScalarsNeedsAndMixedDtypes) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  GradCase mixed;
  mixed.op = static_cast<int>(BinaryOp::Mul);
  mixed.o[0] = {Operand::Kind::Tensor, DType::F32, bt::contiguous({48, 40}), 0};
  mixed.o[1] = {Operand::Kind::Tensor, DType::BF16, bt::contiguous({40}), 0};
  mixed.what = "mul f32 x bf16 row";
  check_case(mixed, rng, -2.0, 2.0, false);
  GradCase hyp = mixed;
  hyp.op = static_cast<int>(BinaryOp::Hypot);
  hyp.o[1] = {Operand::Kind::Tensor, DType::F16, bt::every_other({48, 40}), 0};
  hyp.what = "hypot f32 x f16 every_other";
  check_case(hyp, rng, -2.0, 2.0, true);
  GradCase sc;
  sc.op = static_cast<int>(BinaryOp::Pow);
  sc.o[0] = {Operand::Kind::Tensor, DType::BF16, bt::contiguous({1000}), 0};
  sc.o[1] = {Operand::Kind::Scalar, DType::F64, {}, 2.5};
  sc.need[1] = false;
  sc.what = "pow bf16 ^ scalar";
  check_case(sc, rng, 0.3, 2.5, true);
  GradCase only_b = mixed;
  only_b.o[1].dtype = DType::F32;
  only_b.op = static_cast<int>(BinaryOp::SwiGlu);
  only_b.need[0] = false;
  only_b.what = "swiglu row, db only";
  check_case(only_b, rng, -2.0, 2.0, false);
  GradCase cl;
  cl.arity = 3;
  cl.op = static_cast<int>(TernaryOp::Clamp);
  cl.o[0] = {Operand::Kind::Tensor, DType::F16, bt::contiguous({64, 16}), 0};
  cl.o[1] = {Operand::Kind::Absent, DType::F16, {}, 0};
  cl.o[2] = {Operand::Kind::Tensor, DType::F16, bt::contiguous({16}), 0};
  cl.need[1] = false;
  cl.what = "clamp f16, max only (row)";
  check_case(cl, rng, -2.0, 2.0, false);
  GradCase le;
  le.arity = 3;
  le.op = static_cast<int>(TernaryOp::Lerp);
  le.o[0] = {Operand::Kind::Tensor, DType::F32, bt::contiguous({64, 16}), 0};
  le.o[1] = {Operand::Kind::Tensor, DType::F32, bt::contiguous({64, 16}), 0};
  le.o[2] = {Operand::Kind::Scalar, DType::F64, {}, 0.3};
  le.need[2] = false;
  le.what = "lerp f32, scalar weight";
  check_case(le, rng, -2.0, 2.0, true);
}

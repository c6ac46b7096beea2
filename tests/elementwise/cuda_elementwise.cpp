// Elementwise family on CUDA against the CPU reference:
//   every op of the three tables x every dtype its domain admits (f32 f64 f16
//   bf16 i32 i64 i8 u8 i16 bool; select() decides, and CPU and CUDA must
//   agree on what is unsupported) x layouts that reach every path: contiguous
//   (vec16), odd extents and misaligned slices (strided32), every-other and
//   transposed views, row / column / 0-dim / scalar broadcasts; float inputs
//   mix NaN, +-inf, -0, denormals and huge values into random data. Mixed
//   dtypes and non-natural output dtypes (generic64), > 2^31 elements
//   (generic64 with 64-bit indices), in place, the SKU's path, and run-twice
//   bit equality with poisoned outputs.
// Tolerance |got - ref| <= tol * (1 + |ref|): f64 1e-10; f32 4e-6 (the CUDA
// math library's few-ulp functions against double); f16 2^-10 and bf16 2^-7
// (one ulp: the GPU rounds its f32 result, the CPU its double). Integers and
// predicates exactly. NaN must meet NaN and an infinity the same infinity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::HostBuffer, bt::kGpu, bt::to_device, bt::to_host;
using Operand = ElementwiseOperand;
const Stream kCpu = Stream::cpu();

const DType kDtypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32,
                         DType::I64, DType::I8,  DType::U8,  DType::I16,  DType::Bool};

// A sweep goes on past a mismatch (so one run shows several) and stops after eight.
bool too_many_failures() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > 8;
}

double tol_of(DType t) {
  switch (t) {
    case DType::F64: return 1e-10;
    case DType::F32: return 4e-6;
    case DType::F16: return 1.0 / 1024;
    case DType::BF16: return 1.0 / 128;
    default: return 0;
  }
}

// First mismatch between got and ref ("" when none).
// The tolerance is the coarser of the output's and the compute's (an f32 op
// stored to f64 carries f32 rounding).
std::string compare(const std::vector<double>& got, const std::vector<double>& ref, DType out, DType common) {
  const double tol = is_floating_point(out) ? std::max(tol_of(out), tol_of(common)) : 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i], r = ref[i];
    bool ok;
    if (std::isnan(r)) ok = std::isnan(g);
    else if (std::isinf(r)) ok = g == r;
    else ok = std::fabs(g - r) <= tol * (1 + std::fabs(r));
    if (!ok) return "element " + std::to_string(i) + ": cuda " + std::to_string(g) + " cpu " + std::to_string(r);
  }
  return "";
}

// Input values for an operand of dtype t: random in [lo, hi] (integers in a
// small range), with special values mixed in for floating dtypes.
HostBuffer make_input(DType t, int64_t n, bt::Rng& rng, double lo, double hi, bool specials) {
  HostBuffer b(t, n);
  if (t == DType::Bool) {
    for (int64_t i = 0; i < n; ++i) b.set_i(i, bt::uniform_int(rng, 0, 1));
    return b;
  }
  if (!is_floating_point(t)) {
    const int64_t l = t == DType::U8 ? 0 : -20, h = t == DType::U8 ? 40 : 20;
    for (int64_t i = 0; i < n; ++i) b.set_i(i, bt::uniform_int(rng, l, h));
    return b;
  }
  bt::fill_random(b, rng, lo, hi);
  if (specials) {
    const double sp[] = {bt::kNaN, bt::kInf, -bt::kInf, -0.0, 0.0, 1e-40, -3e-39, 1e30, -1e30, 1.0, -1.0, 0.5};
    for (int64_t i = 0; i < n; i += 7) b.set(i, sp[(i / 7) % 12]);
  }
  return b;
}

// A plan's output on the CPU and on CUDA for the same host inputs and layouts.
struct Io {
  std::vector<HostBuffer> in;    // storage of each tensor input
  std::vector<bt::Layout> lay;   // their layouts
  bt::Layout out_lay;
};

template <class Plan, class Args, class Fill>
void check_plan(const char* what, const Plan& cpu, const Plan& gpu, Io& io, Fill fill_args) {
  const DType od = cpu.out_dtype();
  // CPU.
  HostBuffer ho(od, io.out_lay.storage);
  ho.poison();
  Args ca;
  std::vector<TensorRef> hin;
  for (size_t k = 0; k < io.in.size(); ++k) hin.push_back(bt::view(io.in[k], io.lay[k]));
  fill_args(ca, hin, bt::view_mut(ho, io.out_lay));
  const Status cs = cpu.run(kCpu, {}, ca);
  ASSERT_TRUE(cs.is_ok()) << what << ": " << cs.to_string();
  // CUDA, twice, into differently poisoned outputs.
  std::vector<Buffer> din;
  std::vector<TensorRef> dv;
  for (size_t k = 0; k < io.in.size(); ++k) {
    din.push_back(to_device(io.in[k], 16));
    dv.push_back(bt::view(din.back(), io.in[k].dtype(), io.lay[k]));
  }
  std::vector<uint8_t> first;
  for (int pass = 0; pass < 2; ++pass) {
    HostBuffer poison(od, io.out_lay.storage);
    poison.fill_bytes(pass == 0 ? bt::poison_byte(od) : bt::alt_poison_byte(od));
    Buffer dout = to_device(poison, 16);
    Args ga;
    fill_args(ga, dv, bt::view_mut(dout, od, io.out_lay));
    const Status gs = gpu.run(kGpu, {}, ga);
    ASSERT_TRUE(gs.is_ok()) << what << ": " << gs.to_string();
    HostBuffer back = to_host(dout, od, io.out_lay.storage);
    const std::string m = compare(bt::gather(back, io.out_lay), bt::gather(ho, io.out_lay), od, cpu.common_dtype());
    ASSERT_EQ(m, "") << what << " (sku " << gpu.sku_for(kGpu, {}, ga)->to_string() << ")";
    ASSERT_EQ(bt::check_gaps(back, io.out_lay, pass == 0 ? bt::poison_byte(od) : bt::alt_poison_byte(od)), "") << what;
    auto raw = bt::materialize(back, io.out_lay).raw();
    if (pass == 0) first = raw;
    else ASSERT_TRUE(raw == first) << what << ": two runs differ";
  }
}

// Value range each unary op is exercised on (outside it, NaN results are
// still compared, through the special values).
std::pair<double, double> range_of(UnaryOp op) {
  switch (op) {
    case UnaryOp::Asin:
    case UnaryOp::Acos:
    case UnaryOp::Atanh:
    case UnaryOp::Erfinv: return {-0.99, 0.99};
    case UnaryOp::Acosh: return {1.0, 6.0};
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt: return {0.01, 20.0};
    case UnaryOp::Logit: return {0.01, 0.99};
    case UnaryOp::Lgamma:
    case UnaryOp::Digamma: return {0.1, 6.0};
    default: return {-4.0, 4.0};
  }
}

std::vector<bt::Layout> unary_layouts() {
  return {bt::contiguous({1024}), bt::contiguous({37, 29}), bt::every_other({16, 24}), bt::transposed({24, 40}),
          bt::padded({8, 64}, 1)};
}

TEST(CudaElementwise, EveryUnaryOpAndDtypeMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<UnaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    for (DType dt : kDtypes) {
      for (const bt::Layout& L : unary_layouts()) {
        UnaryDescriptor d;
        d.op = op;
        d.x = Operand::tensor(dt, L.shape);
        if (op == UnaryOp::Threshold) d.alpha = 0.25, d.beta = -2.0;
        auto cpu = UnaryPlan::select(kCpu, d);
        auto gpu = UnaryPlan::select(kGpu, d);
        ASSERT_EQ(cpu.is_ok(), gpu.is_ok()) << op_name(op) << " " << dtype_name(dt);
        if (!cpu) break;
        const auto [lo, hi] = range_of(op);
        Io io;
        io.in.push_back(make_input(dt, L.storage, rng, lo, hi, true));
        io.lay.push_back(L);
        io.out_lay = bt::contiguous(L.shape);
        const std::string what = std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + bt::describe(L);
        check_plan<UnaryPlan, UnaryArgs>(what.c_str(), *cpu, *gpu, io, [](UnaryArgs& a, std::vector<TensorRef>& in, TensorMut out) {
          a.x = in[0];
          a.y = out;
        });
        if (too_many_failures()) return;  // report several, then stop
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// Layout pairs for two operands of an output [R, C].
struct Pair {
  const char* name;
  Dims a, b;
  bool b_scalar = false;
};
std::vector<Pair> binary_pairs() {
  return {{"same", {64, 96}, {64, 96}}, {"row-bcast", {64, 96}, {96}}, {"col-bcast", {64, 96}, {64, 1}},
          {"0-dim", {64, 96}, {}},      {"scalar", {64, 96}, {}, true}, {"odd", {33, 17}, {33, 17}},
          {"a-bcast", {1, 96}, {64, 96}}};
}

std::pair<double, double> range_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Pow: return {0.1, 3.0};
    case BinaryOp::Xlogy:
    case BinaryOp::Xlog1py: return {0.01, 5.0};
    default: return {-4.0, 4.0};
  }
}
// Ops with discontinuities evaluate on integer-valued floats, where f32 and
// double compute agree exactly.
bool integer_valued(BinaryOp op) {
  return op == BinaryOp::DivFloor || op == BinaryOp::DivTrunc || op == BinaryOp::Remainder || op == BinaryOp::Fmod;
}

TEST(CudaElementwise, EveryBinaryOpAndDtypeMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<BinaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    for (DType dt : kDtypes) {
      for (const Pair& pr : binary_pairs()) {
        BinaryDescriptor d;
        d.op = op;
        d.a = Operand::tensor(dt, pr.a);
        d.b = pr.b_scalar ? Operand::scalar(is_floating_point(dt) ? DType::F64 : (dt == DType::Bool ? DType::Bool : DType::I64))
                          : Operand::tensor(dt, pr.b);
        auto cpu = BinaryPlan::select(kCpu, d);
        auto gpu = BinaryPlan::select(kGpu, d);
        ASSERT_EQ(cpu.is_ok(), gpu.is_ok()) << op_name(op) << " " << dtype_name(dt);
        if (!cpu) break;
        auto [lo, hi] = range_of(op);
        const bool ints = integer_valued(op);
        Io io;
        io.in.push_back(make_input(dt, bt::numel(pr.a), rng, lo, hi, !ints));
        io.lay.push_back(bt::contiguous(pr.a));
        if (!pr.b_scalar) {
          io.in.push_back(make_input(dt, bt::numel(pr.b), rng, lo, hi, !ints));
          io.lay.push_back(bt::contiguous(pr.b));
        }
        if (ints)
          for (auto& b : io.in)
            for (int64_t i = 0; i < b.size(); ++i) b.set(i, std::round(b.get(i) * 3));
        io.out_lay = bt::contiguous(cpu->output_shape());
        std::optional<Scalar> sv;
        if (pr.b_scalar) sv = is_floating_point(dt) ? Scalar(1.75) : (dt == DType::Bool ? Scalar(true) : Scalar(3));
        const std::string what = std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " " + pr.name;
        check_plan<BinaryPlan, BinaryArgs>(what.c_str(), *cpu, *gpu, io,
                                           [&](BinaryArgs& a, std::vector<TensorRef>& in, TensorMut out) {
                                             a.a = in[0];
                                             if (pr.b_scalar) a.b_value = sv;
                                             else a.b = in[1];
                                             a.out = out;
                                           });
        if (too_many_failures()) return;  // report several, then stop
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 400);
}

TEST(CudaElementwise, EveryTernaryOpMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<TernaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    for (DType dt : kDtypes) {
      for (int variant = 0; variant < 5; ++variant) {
        // 0: all tensors, same shape; 1: broadcast b / c; 2: clamp with one absent bound / scalar c;
        // 3, 4: b and c both scalars (the kernels bind them into a one-operand functor), an
        // aligned shape (vec16) and an odd one (strided32).
        TernaryDescriptor d;
        d.op = op;
        const Dims s = variant == 4 ? Dims{33, 17} : Dims{48, 40};
        const DType adt = op == TernaryOp::Where ? DType::Bool : dt;
        const Operand scalar =
            Operand::scalar(is_floating_point(dt) ? DType::F64 : (dt == DType::Bool ? DType::Bool : DType::I64));
        d.a = Operand::tensor(adt, s);
        d.b = Operand::tensor(dt, variant == 1 ? Dims{40} : s);
        d.c = Operand::tensor(dt, variant == 1 ? Dims{48, 1} : s);
        if (variant == 2) {
          if (op == TernaryOp::Clamp) d.b = Operand::absent();
          d.c = scalar;
        }
        if (variant >= 3) d.b = d.c = scalar;
        auto cpu = TernaryPlan::select(kCpu, d);
        auto gpu = TernaryPlan::select(kGpu, d);
        ASSERT_EQ(cpu.is_ok(), gpu.is_ok()) << op_name(op) << " " << dtype_name(dt);
        if (!cpu) break;
        Io io;
        for (const Operand* x : {&d.a, &d.b, &d.c}) {
          if (x->kind != Operand::Kind::Tensor) continue;
          io.in.push_back(make_input(x->dtype, bt::numel(x->shape), rng, 0.5, 3.0, true));
          io.lay.push_back(bt::contiguous(x->shape));
        }
        io.out_lay = bt::contiguous(s);
        const std::string what = std::string(op_name(op)) + " " + std::string(dtype_name(dt)) + " v" + std::to_string(variant);
        check_plan<TernaryPlan, TernaryArgs>(what.c_str(), *cpu, *gpu, io,
                                             [&](TernaryArgs& a, std::vector<TensorRef>& in, TensorMut out) {
                                               size_t k = 0;
                                               a.a = in[k++];
                                               if (d.b.kind == Operand::Kind::Tensor) a.b = in[k++];
                                               else if (d.b.kind == Operand::Kind::Scalar)
                                                 a.b_value = is_floating_point(dt) ? Scalar(-0.75) : (dt == DType::Bool ? Scalar(false) : Scalar(-1));
                                               if (d.c.kind == Operand::Kind::Tensor) a.c = in[k++];
                                               else a.c_value = is_floating_point(dt) ? Scalar(2.0) : (dt == DType::Bool ? Scalar(true) : Scalar(2));
                                               a.out = out;
                                             });
        if (too_many_failures()) return;  // report several, then stop
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 40);
}

// Mixed dtypes, non-natural outputs and casts take the generic path.
TEST(CudaElementwise, MixedDtypesAndCastsTakeTheGenericPath) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{40, 33};
  for (DType from : kDtypes) {
    for (DType to : kDtypes) {
      UnaryDescriptor d;
      d.op = UnaryOp::Copy;
      d.x = Operand::tensor(from, s);
      d.out_dtype = to;
      auto cpu = UnaryPlan::select(kCpu, d);
      auto gpu = UnaryPlan::select(kGpu, d);
      ASSERT_TRUE(cpu.is_ok() && gpu.is_ok()) << cpu.status().to_string();
      // Transposed (tile path for the six typed dtypes), contiguous (vec16),
      // odd contiguous (strided32); other dtypes take the generic path.
      for (const bt::Layout& L : {bt::transposed(s), bt::contiguous({40, 32}), bt::contiguous({7, 5})}) {
        d.x.shape = L.shape;
        cpu = UnaryPlan::select(kCpu, d);
        gpu = UnaryPlan::select(kGpu, d);
        ASSERT_TRUE(cpu.is_ok() && gpu.is_ok());
        Io io;
        // Values beyond every integer range and the specials exercise the conversion rules.
        io.in.push_back(make_input(from, L.storage, rng, -300.0, 300.0, true));
        io.lay.push_back(L);
        io.out_lay = bt::contiguous(L.shape);
        const std::string what =
            std::string("copy ") + std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)) + " " + bt::describe(L);
        check_plan<UnaryPlan, UnaryArgs>(what.c_str(), *cpu, *gpu, io, [](UnaryArgs& a, std::vector<TensorRef>& in, TensorMut out) {
          a.x = in[0];
          a.y = out;
        });
        if (HasFatalFailure()) return;
      }
    }
  }
  // bf16 + f32 -> f32 (generic); f32 + f32 -> f64 output (generic).
  for (auto [da, db, out] : {std::tuple{DType::BF16, DType::F32, std::optional<DType>{}},
                             std::tuple{DType::F32, DType::F32, std::optional<DType>{DType::F64}},
                             std::tuple{DType::I8, DType::U8, std::optional<DType>{}}}) {
    BinaryDescriptor d;
    d.op = BinaryOp::Mul;
    d.a = Operand::tensor(da, s);
    d.b = Operand::tensor(db, {33});
    d.out_dtype = out;
    auto cpu = BinaryPlan::select(kCpu, d);
    auto gpu = BinaryPlan::select(kGpu, d);
    ASSERT_TRUE(cpu.is_ok() && gpu.is_ok());
    Io io;
    io.in.push_back(make_input(da, bt::numel(s), rng, -3, 3, true));
    io.in.push_back(make_input(db, 33, rng, -3, 3, true));
    io.lay = {bt::contiguous(s), bt::contiguous({33})};
    io.out_lay = bt::contiguous(s);
    check_plan<BinaryPlan, BinaryArgs>("mixed mul", *cpu, *gpu, io, [](BinaryArgs& a, std::vector<TensorRef>& in, TensorMut o) {
      a.a = in[0];
      a.b = in[1];
      a.out = o;
    });
    if (HasFatalFailure()) return;
    EXPECT_EQ(gpu->sku().variant, "generic64");
  }
}

TEST(CudaElementwise, SkuForNamesThePathOfTheViews) {
  BT_SKIP_WITHOUT_GPU();
  {
    UnaryDescriptor u;
    u.op = UnaryOp::Copy;
    u.x = Operand::tensor(DType::F32, {64, 96});
    u.out_dtype = DType::BF16;
    auto c = UnaryPlan::select(kGpu, u);
    ASSERT_TRUE(c.is_ok());
    EXPECT_EQ(c->sku().variant, "vec16");
    Buffer x(Device::cuda(0), 64 * 96 * 4), y(Device::cuda(0), 64 * 96 * 2);
    UnaryArgs ua;
    ua.x = TensorRef(x.data(), DType::F32, Device::cuda(0), {64, 96}, {1, 64}, 64 * 96);  // transposed view
    ua.y = TensorMut::contiguous(y.data(), DType::BF16, Device::cuda(0), {64, 96}, 64 * 96);
    EXPECT_EQ(c->sku_for(kGpu, {}, ua)->variant, "transpose");
  }
  BinaryDescriptor d;
  d.a = Operand::tensor(DType::BF16, {64, 128});
  d.b = Operand::tensor(DType::BF16, {128});
  auto p = BinaryPlan::select(kGpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->sku().variant, "vec16");
  EXPECT_EQ(p->sku().backend, Backend::Bespoke);
  Buffer a(Device::cuda(0), 64 * 128 * 2 + 16), b(Device::cuda(0), 256 + 16), o(Device::cuda(0), 64 * 128 * 2 + 16);
  BinaryArgs args;
  args.a = TensorRef::contiguous(a.data(), DType::BF16, Device::cuda(0), {64, 128}, 64 * 128);
  args.b = TensorRef::contiguous(b.data(), DType::BF16, Device::cuda(0), {128}, 128);
  args.out = TensorMut::contiguous(o.data(), DType::BF16, Device::cuda(0), {64, 128}, 64 * 128);
  EXPECT_EQ(p->sku_for(kGpu, {}, args)->variant, "vec16");
  args.b = TensorRef::contiguous(static_cast<char*>(b.data()) + 2, DType::BF16, Device::cuda(0), {128}, 128);
  EXPECT_EQ(p->sku_for(kGpu, {}, args)->variant, "strided32");  // misaligned
}

// > 2^31 output elements: 64-bit indices (a stride-0 input keeps the test cheap).
TEST(CudaElementwise, MoreThanTwoToThe31ElementsUse64BitIndices) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = (int64_t{1} << 31) + 37;
  UnaryDescriptor d;
  d.op = UnaryOp::Neg;
  d.x = Operand::tensor(DType::I8, {n});
  auto p = UnaryPlan::select(kGpu, d);
  ASSERT_TRUE(p.is_ok());
  Buffer x(Device::cuda(0), 16), y(Device::cuda(0), static_cast<size_t>(n));
  const int8_t v = 5;
  ASSERT_TRUE(x.copy_from_host(&v, 1).is_ok());
  UnaryArgs args;
  args.x = TensorRef(x.data(), DType::I8, Device::cuda(0), {n}, {0}, 1);
  args.y = TensorMut::contiguous(y.data(), DType::I8, Device::cuda(0), {n}, n);
  EXPECT_EQ(p->sku_for(kGpu, {}, args)->variant, "generic64");
  ASSERT_TRUE(p->run(kGpu, {}, args).is_ok());
  std::vector<int8_t> tail(64);
  ASSERT_EQ(cudaMemcpy(tail.data(), static_cast<char*>(y.data()) + n - 64, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int8_t t : tail) ASSERT_EQ(t, -5);
  int8_t head = 0;
  ASSERT_EQ(cudaMemcpy(&head, y.data(), 1, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(head, -5);
}

TEST(CudaElementwise, InPlaceOnTheDevice) {
  BT_SKIP_WITHOUT_GPU();
  BinaryDescriptor d;
  d.op = BinaryOp::Add;
  d.alpha = -2.0;
  d.a = Operand::tensor(DType::F32, {1000});
  d.b = Operand::tensor(DType::F32, {1000});
  auto p = BinaryPlan::select(kGpu, d);
  ASSERT_TRUE(p.is_ok());
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[i] = static_cast<float>(i), b[i] = 0.5f * static_cast<float>(i);
  Buffer da(Device::cuda(0), 4000), db(Device::cuda(0), 4000);
  ASSERT_TRUE(da.copy_from_host(a.data(), 4000).is_ok());
  ASSERT_TRUE(db.copy_from_host(b.data(), 4000).is_ok());
  BinaryArgs args;
  args.a = TensorRef::contiguous(static_cast<const float*>(da.data()), Device::cuda(0), {1000}, 1000);
  args.b = TensorRef::contiguous(static_cast<const float*>(db.data()), Device::cuda(0), {1000}, 1000);
  args.out = TensorMut::contiguous(static_cast<float*>(da.data()), Device::cuda(0), {1000}, 1000);
  ASSERT_TRUE(p->run(kGpu, {}, args).is_ok());
  ASSERT_TRUE(da.copy_to_host(a.data(), 4000).is_ok());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 0.0f) << i;
}

// Every unary gradient x floating dtype x layouts x from x / from y, against the CPU reference.
TEST(CudaElementwise, EveryUnaryGradientMatchesTheReference) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<UnaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      for (int from_y = 0; from_y < 2; ++from_y) {
        for (const bt::Layout& L : {bt::contiguous({1024}), bt::contiguous({37, 29}), bt::every_other({16, 24})}) {
          UnaryBackwardDescriptor d;
          d.forward.op = op;
          d.forward.x = Operand::tensor(dt, L.shape);
          if (op == UnaryOp::Threshold) d.forward.alpha = 0.25, d.forward.beta = -2.0;
          d.from_output = from_y != 0;
          auto cpu = UnaryBackwardPlan::select(kCpu, d);
          auto gpu = UnaryBackwardPlan::select(kGpu, d);
          ASSERT_EQ(cpu.is_ok(), gpu.is_ok()) << op_name(op) << " " << dtype_name(dt);
          if (!cpu) break;
          const auto [lo, hi] = range_of(op);
          Io io;
          io.in.push_back(make_input(dt, L.storage, rng, -2.0, 2.0, true));  // dy
          io.lay.push_back(L);
          if (op != UnaryOp::Copy) {
            io.in.push_back(make_input(dt, L.storage, rng, lo, hi, true));  // x or y
            io.lay.push_back(L);
          }
          io.out_lay = bt::contiguous(L.shape);
          const std::string what = std::string("grad ") + op_name(op) + " " + std::string(dtype_name(dt)) +
                                   (from_y ? " from y " : " from x ") + bt::describe(L);
          check_plan<UnaryBackwardPlan, UnaryBackwardArgs>(
              what.c_str(), *cpu, *gpu, io, [&](UnaryBackwardArgs& a, std::vector<TensorRef>& in, TensorMut out) {
                a.dy = in[0];
                if (in.size() > 1) (from_y ? a.y : a.x) = in[1];
                a.dx = out;
              });
          if (too_many_failures()) return;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 600);
}

}  // namespace

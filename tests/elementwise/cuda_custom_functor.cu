// baracuda::cuda::elementwise (include/baracuda/cuda/elementwise.cuh): a
// framework's own functors through the engine, against host-computed values.
//   runs (need a GPU): 1, 2 and 3 inputs; f32 / f64 / bf16 / i32 storage and a
//   bf16 -> f32 mixed signature; row / column broadcasts; every-other and
//   transposed views; a scalar operand; in place; each run's path asserted
//   (Vec16, Strided32, Transpose) through elementwise_path().
//   rules (no GPU: fake device addresses, nothing launches): every refusal
//   names "baracuda::cuda::elementwise" and the operand; zero-size is a no-op;
//   the path of huge and misaligned layouts.
// Tolerance |got - ref| <= tol * (1 + |ref|): bf16 out 2^-7 (one ulp of the
// rounded f32 result), f32 4e-6 (f32 math against double), f64 1e-12;
// integers exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/cuda/elementwise.cuh"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
namespace bc = baracuda::cuda;
using bt::HostBuffer, bt::Layout;
using bf16 = __nv_bfloat16;

namespace {

// ---- functors (compute type in, compute type out) ----------------------------------------
template <class C>
struct Affine {  // a * x + b
  C a, b;
  __device__ C operator()(C x) const { return a * x + b; }
};
template <class C>
struct MulPlusFirst {  // x * y + x
  __device__ C operator()(C x, C y) const { return x * y + x; }
};
struct SiluMulAdd {  // silu(a) * b + c
  __device__ float operator()(float a, float b, float c) const { return a / (1.0f + expf(-a)) * b + c; }
};
template <class C>
struct Fma3 {  // x * y + z
  __device__ C operator()(C x, C y, C z) const { return x * y + z; }
};

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// ---- host side of one operand ---------------------------------------------------------------
// Random values of dtype t (rounded to it) in storage for layout L, on the device.
struct Operand {
  DType t;
  Layout L;
  HostBuffer host;
  Buffer dev;
  std::vector<double> values;  // logical, row-major over L.shape

  Operand(DType dt, const Layout& layout, bt::Rng& rng, double lo = -2.0, double hi = 2.0) : t(dt), L(layout) {
    host = HostBuffer(t, std::max<int64_t>(L.storage, 1));
    host.poison();
    values = bt::random_values(t, L.numel(), rng, lo, hi);
    bt::scatter(host, L, values);
    values = bt::gather(host, L);  // what the view really holds
    dev = bt::to_device(host, 16);
  }
  TensorRef ref() const { return bt::view(dev, t, L); }
  TensorMut mut() { return bt::view_mut(dev, t, L); }
  // The logical values the view holds now (after a kernel wrote it).
  std::vector<double> read() {
    host = bt::to_host(dev, t, std::max<int64_t>(L.storage, 1));
    return bt::gather(host, L);
  }
};

// Logical index into an input of shape `in` for output element i of shape `out` (NumPy broadcasting).
int64_t bcast_index(int64_t i, const Dims& out, const Dims& in) {
  int64_t idx = 0, mul = 1;
  for (int d = out.rank - 1; d >= 0; --d) {
    const int64_t c = i % out[d];
    i /= out[d];
    const int di = d - (out.rank - in.rank);
    if (di < 0) continue;
    if (in[di] != 1) idx += c * mul;
    mul *= in[di];
  }
  return idx;
}

double tol_of(DType t) {
  switch (t) {
    case DType::BF16: return 1.0 / 128;
    case DType::F32: return 4e-6;
    case DType::F64: return 1e-12;
    default: return 0;
  }
}

std::string compare(const std::vector<double>& got, const std::vector<double>& ref, DType t) {
  EXPECT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= tol_of(t) * (1 + std::fabs(ref[i]))))
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " + std::to_string(ref[i]);
  return "";
}

// The reference out[i] = f(inputs broadcast to out's shape at i).
template <class F>
std::vector<double> reference(const Dims& out, const std::vector<const Operand*>& ins, F f) {
  const int64_t n = shape_numel(out);
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double x[3] = {0, 0, 0};
    for (size_t k = 0; k < ins.size(); ++k) x[k] = ins[k]->values[static_cast<size_t>(bcast_index(i, out, ins[k]->L.shape))];
    r[static_cast<size_t>(i)] = f(x);
  }
  return r;
}

#define EXPECT_OK(expr)                                   \
  do {                                                    \
    const ::baracuda::Status _st = (expr);                \
    EXPECT_TRUE(_st.is_ok()) << _st.to_string();          \
  } while (0)

void wait_for_gpu() { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }

}  // namespace

// ---- runs --------------------------------------------------------------------------------

TEST(CustomElementwise, UnaryF32ContiguousTakesTheVectorPath) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{33, 64};
  Operand x(DType::F32, bt::contiguous(m), rng), y(DType::F32, bt::contiguous(m), rng);
  const Affine<float> fn{1.5f, -0.25f};
  EXPECT_EQ((bc::elementwise_path<float, float(float)>(bt::kGpu, y.mut(), x.ref()).value()), bc::ElementwisePath::Vec16);
  EXPECT_OK((bc::elementwise<float, float(float)>(bt::kGpu, fn, y.mut(), x.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&x}, [](const double* v) { return 1.5 * v[0] - 0.25; }), DType::F32), "");
}

TEST(CustomElementwise, UnaryF64TransposedInputTakesTheTransposePath) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{70, 45};
  Operand x(DType::F64, bt::transposed(m), rng), y(DType::F64, bt::contiguous(m), rng);
  const Affine<double> fn{-3.0, 0.5};
  EXPECT_EQ((bc::elementwise_path<double, double(double)>(bt::kGpu, y.mut(), x.ref()).value()),
            bc::ElementwisePath::Transpose);
  EXPECT_OK((bc::elementwise<double, double(double)>(bt::kGpu, fn, y.mut(), x.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&x}, [](const double* v) { return -3.0 * v[0] + 0.5; }), DType::F64), "");
}

TEST(CustomElementwise, BinaryBf16RowAndColumnBroadcastsTakeTheVectorPath) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{24, 128};
  for (const Dims& bshape : {Dims{128}, Dims{24, 1}, Dims{1, 1}}) {
    Operand a(DType::BF16, bt::contiguous(m), rng), b(DType::BF16, bt::contiguous(bshape), rng);
    Operand y(DType::BF16, bt::contiguous(m), rng);
    EXPECT_EQ((bc::elementwise_path<float, bf16(bf16, bf16)>(bt::kGpu, y.mut(), a.ref(), b.ref()).value()),
              bc::ElementwisePath::Vec16)
        << bshape.to_string();
    EXPECT_OK((bc::elementwise<float, bf16(bf16, bf16)>(bt::kGpu, MulPlusFirst<float>{}, y.mut(), a.ref(), b.ref())));
    wait_for_gpu();
    EXPECT_EQ(compare(y.read(), reference(m, {&a, &b}, [](const double* v) { return v[0] * v[1] + v[0]; }), DType::BF16),
              "")
        << bshape.to_string();
  }
}

TEST(CustomElementwise, BinaryI32StridedViewsTakeTheStridedPath) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{9, 31};
  Operand a(DType::I32, bt::every_other(m), rng, -1000, 1000), b(DType::I32, bt::padded(m), rng, -1000, 1000);
  Operand y(DType::I32, bt::every_other(m), rng);
  EXPECT_EQ((bc::elementwise_path<int64_t, int32_t(int32_t, int32_t)>(bt::kGpu, y.mut(), a.ref(), b.ref()).value()),
            bc::ElementwisePath::Strided32);
  EXPECT_OK((bc::elementwise<int64_t, int32_t(int32_t, int32_t)>(bt::kGpu, MulPlusFirst<int64_t>{}, y.mut(), a.ref(),
                                                                  b.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&a, &b}, [](const double* v) { return v[0] * v[1] + v[0]; }), DType::I32), "");
}

TEST(CustomElementwise, TernarySiluMulAddBf16WithABiasRow) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{16, 256};
  Operand a(DType::BF16, bt::contiguous(m), rng), b(DType::BF16, bt::contiguous(m), rng);
  Operand bias(DType::BF16, bt::contiguous({256}), rng), y(DType::BF16, bt::contiguous(m), rng);
  using Sig = bf16(bf16, bf16, bf16);
  EXPECT_EQ((bc::elementwise_path<float, Sig>(bt::kGpu, y.mut(), a.ref(), b.ref(), bias.ref()).value()),
            bc::ElementwisePath::Vec16);
  EXPECT_OK((bc::elementwise<float, Sig>(bt::kGpu, SiluMulAdd{}, y.mut(), a.ref(), b.ref(), bias.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&a, &b, &bias}, [](const double* v) { return silu(v[0]) * v[1] + v[2]; }),
                    DType::BF16),
            "");
}

TEST(CustomElementwise, TernaryF64TransposedAndBroadcastInputsTakeTheStridedPath) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{3, 17, 10};
  Operand a(DType::F64, bt::transposed(m), rng), b(DType::F64, bt::contiguous({17, 1}), rng);
  Operand c(DType::F64, bt::permuted(m, {1, 0, 2}), rng), y(DType::F64, bt::contiguous(m), rng);
  using Sig = double(double, double, double);
  EXPECT_EQ((bc::elementwise_path<double, Sig>(bt::kGpu, y.mut(), a.ref(), b.ref(), c.ref()).value()),
            bc::ElementwisePath::Strided32);
  EXPECT_OK((bc::elementwise<double, Sig>(bt::kGpu, Fma3<double>{}, y.mut(), a.ref(), b.ref(), c.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&a, &b, &c}, [](const double* v) { return v[0] * v[1] + v[2]; }), DType::F64),
            "");
}

TEST(CustomElementwise, ScalarOperandAndMixedStorage) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{8, 40};
  // f32 out of bf16 in and a scalar: y = x * 0.75 + x.
  Operand x(DType::BF16, bt::contiguous(m), rng), y(DType::F32, bt::contiguous(m), rng);
  using Sig = float(bf16, float);
  EXPECT_EQ((bc::elementwise_path<float, Sig>(bt::kGpu, y.mut(), x.ref(), bc::scalar(0.75f)).value()),
            bc::ElementwisePath::Vec16);
  EXPECT_OK((bc::elementwise<float, Sig>(bt::kGpu, MulPlusFirst<float>{}, y.mut(), x.ref(), bc::scalar(0.75f))));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference(m, {&x}, [](const double* v) { return v[0] * 0.75 + v[0]; }), DType::F32), "");
  // The scalar first, on the strided path (odd extent).
  Operand u(DType::F32, bt::contiguous({5, 7}), rng), w(DType::F32, bt::contiguous({5, 7}), rng);
  EXPECT_OK((bc::elementwise<float, float(float, float)>(bt::kGpu, MulPlusFirst<float>{}, w.mut(), bc::scalar(2.0), u.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(w.read(), reference({5, 7}, {&u}, [](const double* v) { return 2.0 * v[0] + 2.0; }), DType::F32), "");
}

TEST(CustomElementwise, InPlace) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  const Dims m{12, 64};
  Operand x(DType::F32, bt::contiguous(m), rng), b(DType::F32, bt::contiguous({64}), rng);
  const std::vector<double> before = x.values;
  EXPECT_OK((bc::elementwise<float, float(float, float)>(bt::kGpu, MulPlusFirst<float>{}, x.mut(), x.ref(), b.ref())));
  wait_for_gpu();
  std::vector<double> ref(before.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = before[i] * b.values[i % 64] + before[i];
  EXPECT_EQ(compare(x.read(), ref, DType::F32), "");
}

TEST(CustomElementwise, IntegerConversionFollowsToStorage) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  // f32 compute into i32 storage: truncation toward zero (to_storage).
  Operand x(DType::F32, bt::contiguous({64}), rng, -50, 50), y(DType::I32, bt::contiguous({64}), rng);
  EXPECT_OK((bc::elementwise<float, int32_t(float)>(bt::kGpu, Affine<float>{2.5f, 0.0f}, y.mut(), x.ref())));
  wait_for_gpu();
  EXPECT_EQ(compare(y.read(), reference({64}, {&x}, [](const double* v) { return std::trunc(double(float(2.5 * v[0]))); }),
                    DType::I32),
            "");
}

// ---- rules (no kernel runs: fake device addresses) ----------------------------------------

namespace {
TensorMut fake(uintptr_t a, DType t, const Dims& shape, Dims strides = {}) {
  if (strides.rank != shape.rank) strides = contiguous_strides(shape);
  int64_t reach = 1;
  for (int d = 0; d < shape.rank; ++d) reach += (shape[d] - 1) * strides[d];
  return TensorMut(reinterpret_cast<void*>(a), t, Device::cuda(0), shape, strides, reach);
}
void expect_refused(const Status& st, const std::string& part) {
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
  EXPECT_NE(st.message().find("baracuda::cuda::elementwise: "), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find(part), std::string::npos) << st.to_string() << " (wanted: " << part << ")";
}
}  // namespace

TEST(CustomElementwise, RefusesWithTheOperandsName) {
  const Dims m{4, 8};
  const TensorMut y = fake(0x100000, DType::BF16, m);
  const TensorRef a = fake(0x200000, DType::BF16, m), b = fake(0x300000, DType::BF16, {8});
  using Sig = bf16(bf16, bf16);
  const MulPlusFirst<float> fn{};
  // dtype mismatch against the signature (input and output).
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, y, a, TensorRef(fake(0x300000, DType::F32, {8}))),
                 "in1 dtype f32 must be bf16");
  expect_refused(bc::elementwise<float, float(bf16, bf16)>(bt::kGpu, fn, y, a, b), "out dtype bf16 must be f32");
  // A CPU stream.
  expect_refused(bc::elementwise<float, Sig>(Stream::cpu(), fn, y, a, b), "needs a CUDA stream");
  // out broadcasting: writes elements twice.
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, fake(0x100000, DType::BF16, m, {0, 1}), a, b),
                 "out strides [0,1] for shape [4,8] make elements overlap");
  // out overlapping an input other than being exactly it.
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, y, TensorRef(fake(0x100000 + 16, DType::BF16, m)), b),
                 "out partially overlaps in0");
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, y, a, TensorRef(fake(0x100000, DType::BF16, {8}))),
                 "out partially overlaps in1");
  // An input that does not broadcast to out's shape.
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, y, a, TensorRef(fake(0x300000, DType::BF16, {4}))),
                 "in1 shape [4] does not broadcast to out's shape [4,8]");
  // An input on another device.
  const TensorRef host(reinterpret_cast<void*>(0x400000), DType::BF16, Device::cpu(), m, contiguous_strides(m), 32);
  expect_refused(bc::elementwise<float, Sig>(bt::kGpu, fn, y, host, b), "in0 is on cpu");
  // The path query applies the same rules.
  expect_refused(bc::elementwise_path<float, Sig>(Stream::cpu(), y, a, b).status(), "needs a CUDA stream");
}

TEST(CustomElementwise, ZeroSizeDoesNothing) {
  // Null data on a zero-size out: no launch, no device needed.
  const TensorMut y(nullptr, DType::F32, Device::cuda(0), {0, 16}, {16, 1}, 0);
  const TensorRef x(nullptr, DType::F32, Device::cuda(0), {0, 16}, {16, 1}, 0);
  EXPECT_OK((bc::elementwise<float, float(float)>(bt::kGpu, Affine<float>{1, 1}, y, x)));
  EXPECT_OK((bc::elementwise<float, float(float, float)>(bt::kGpu, MulPlusFirst<float>{}, y, x, bc::scalar(1.0f))));
}

TEST(CustomElementwise, PathOfMisalignedAndHugeLayouts) {
  using Sig = float(float, float);
  const Dims m{64, 128};
  const TensorMut y = fake(0x100000, DType::F32, m);
  const TensorRef b = fake(0x300000, DType::F32, m);
  EXPECT_EQ((bc::elementwise_path<float, Sig>(bt::kGpu, y, TensorRef(fake(0x200000, DType::F32, m)), b).value()),
            bc::ElementwisePath::Vec16);
  // 4 bytes off a 16-byte vector: strided.
  EXPECT_EQ((bc::elementwise_path<float, Sig>(bt::kGpu, y, TensorRef(fake(0x200004, DType::F32, m)), b).value()),
            bc::ElementwisePath::Strided32);
  // > 2^31 elements with a stride-0 input row: still vectorized while the
  // vectors number fewer than 2^31 (2^28 here), 64-bit indices beyond.
  const int64_t big = int64_t{1} << 16;
  const TensorMut huge = fake(0x10000000, DType::U8, {big, big + 16});
  const TensorRef row = fake(0x100000, DType::U8, {big + 16});
  EXPECT_EQ((bc::elementwise_path<int64_t, uint8_t(uint8_t)>(bt::kGpu, huge, row).value()), bc::ElementwisePath::Vec16);
  const TensorMut huger = fake(0x10000000, DType::U8, {int64_t{1} << 20, (int64_t{1} << 15) + 16});
  const TensorRef row2 = fake(0x100000, DType::U8, {(int64_t{1} << 15) + 16});
  EXPECT_EQ((bc::elementwise_path<int64_t, uint8_t(uint8_t)>(bt::kGpu, huger, row2).value()),
            bc::ElementwisePath::Generic64);
  // A scalar's slot type does not narrow the vector: f32 tensors and a bf16
  // slot holding a scalar keep V = 4, so 12 elements still vectorize (V = 8
  // would not divide them).
  const TensorMut y12 = fake(0x100000, DType::F32, {3, 4});
  EXPECT_EQ((bc::elementwise_path<float, float(float, bf16)>(bt::kGpu, y12, TensorRef(fake(0x200000, DType::F32, {3, 4})),
                                                             bc::scalar(1.0f))
                 .value()),
            bc::ElementwisePath::Vec16);
}

// The kernels' arguments of a layout with an extent of 2^31 or more: no
// FastDiv decoder for it (2^32 would truncate to a zero divisor on the host).
TEST(CustomElementwise, ArgsOfLayoutGiveHugeExtentsNoDecoder) {
  const Dims flat{int64_t{1} << 32};
  const Dims strides{1};
  const Dims shapes[1] = {flat};
  const Dims* in_strides[1] = {&strides};
  const auto L = baracuda::detail::make_ew_layout(flat, strides, 1, shapes, in_strides);
  ASSERT_EQ(L.rank, 1);
  const void* in[1] = {reinterpret_cast<const void*>(0x2000)};
  const DType dt[1] = {DType::BF16};
  const auto a = baracuda::dev::ew::args_of_layout<1>(L, true, reinterpret_cast<void*>(0x1000), DType::BF16, in, dt);
  EXPECT_EQ(a.div[0].d, 1u);
  EXPECT_EQ(a.shape[0], int64_t{1} << 32);
  EXPECT_TRUE(a.use32);
  const Dims small{7, 9};
  const Dims small_strides{9, 1}, col_strides{1, 0};
  const Dims col_shape[1] = {Dims{7, 1}};
  const Dims* col[1] = {&col_strides};
  const auto S = baracuda::detail::make_ew_layout(small, small_strides, 1, col_shape, col);
  const auto b = baracuda::dev::ew::args_of_layout<1>(S, true, reinterpret_cast<void*>(0x1000), DType::BF16, in, dt);
  EXPECT_EQ(b.div[0].d, 7u);
  EXPECT_EQ(b.div[1].d, 9u);
  EXPECT_TRUE(b.bcast_inner[0]);
}

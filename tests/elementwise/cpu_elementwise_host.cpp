// The engine's public host helpers (include/baracuda/cuda/detail/elementwise_host.hpp),
// which the plans and baracuda/cuda/elementwise.cuh share: the layout, the
// path choice and the argument rules of a custom-functor call. No kernel runs:
// views carry fake device addresses (the rules never dereference them).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "baracuda/baracuda.hpp"
#include "baracuda/cuda/detail/elementwise_host.hpp"

using namespace baracuda;
using baracuda::detail::EwLayout;
using baracuda::detail::EwPath;

namespace {

constexpr const char* kWho = "baracuda::cuda::elementwise";

// A fake device pointer (never dereferenced).
void* addr(uintptr_t a) { return reinterpret_cast<void*>(a); }

TensorMut dev_view(uintptr_t a, DType t, const Dims& shape, const Dims& strides) {
  int64_t reach = 1;
  for (int d = 0; d < shape.rank; ++d) reach += (shape[d] - 1) * strides[d];
  return TensorMut(addr(a), t, Device::cuda(0), shape, strides, reach);
}
TensorMut dev_dense(uintptr_t a, DType t, const Dims& shape) { return dev_view(a, t, shape, contiguous_strides(shape)); }

EwLayout layout2(const Dims& out, const Dims& out_strides, const Dims& a, const Dims& a_strides) {
  const Dims shapes[1] = {a};
  const Dims* strides[1] = {&a_strides};
  return baracuda::detail::make_ew_layout(out, out_strides, 1, shapes, strides);
}

// Path of out = f(a) for these views (a == nullptr: a scalar).
EwPath path_of(const EwLayout& L, int V, uintptr_t out, size_t out_size, const void* a, size_t a_size) {
  const void* in[1] = {a};
  const size_t sizes[1] = {a_size};
  return baracuda::detail::choose_ew_path(L, V, addr(out), out_size, in, sizes);
}

}  // namespace

TEST(ElementwiseHost, LayoutBroadcastsSortsAndCoalesces) {
  // A [4, 1, 6] input broadcast to [2, 4, 5, 6]: leading dim and dim 2 stride 0.
  const Dims out{2, 4, 5, 6};
  const EwLayout L = layout2(out, contiguous_strides(out), {4, 1, 6}, {6, 6, 1});
  EXPECT_EQ(L.operands, 2);
  EXPECT_EQ(L.numel, 240);
  ASSERT_EQ(L.rank, 4);  // no two neighbours merge for both operands
  const int64_t in_strides[4] = {0, 6, 0, 1};
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(L.shape[d], out[d]) << d;
    EXPECT_EQ(L.stride[1][d], in_strides[d]) << d;
  }
  // Same shape, both contiguous: one dim.
  const EwLayout C = layout2(out, contiguous_strides(out), out, contiguous_strides(out));
  ASSERT_EQ(C.rank, 1);
  EXPECT_EQ(C.shape[0], 240);
  // A transposed output is walked in its memory order (dims sorted by the
  // output's strides): [3, 5] with strides [1, 3] becomes [5, 3] with [3, 1].
  const EwLayout T = layout2({3, 5}, {1, 3}, {3, 5}, {5, 1});
  ASSERT_EQ(T.rank, 2);
  EXPECT_EQ(T.shape[0], 5);
  EXPECT_EQ(T.stride[0][1], 1);
  EXPECT_EQ(T.stride[1][0], 1);
  EXPECT_EQ(T.stride[1][1], 5);
  // A scalar input: stride 0 everywhere, the output alone decides the merge.
  const Dims shapes[1] = {Dims{}};
  const Dims* none[1] = {nullptr};
  const EwLayout S = baracuda::detail::make_ew_layout(out, contiguous_strides(out), 1, shapes, none);
  ASSERT_EQ(S.rank, 1);
  EXPECT_EQ(S.stride[1][0], 0);
  // Zero-size: rank 0, numel 0.
  const EwLayout Z = layout2({3, 0}, {0, 1}, {3, 0}, {0, 1});
  EXPECT_EQ(Z.numel, 0);
  EXPECT_EQ(Z.rank, 0);
}

TEST(ElementwiseHost, OperandExtentAndThirtyTwoBitFit) {
  const EwLayout L = layout2({8, 16}, {16, 1}, {16}, {1});
  EXPECT_EQ(baracuda::detail::ew_operand_extent(L, 0), 128);
  EXPECT_EQ(baracuda::detail::ew_operand_extent(L, 1), 16);
  EXPECT_TRUE(baracuda::detail::ew_fits32(L));
  // > 2^31 elements through a stride-0 input: the output's count decides.
  const int64_t big = int64_t{1} << 16;
  const EwLayout H = layout2({big, big + 1}, {big + 1, 1}, {big + 1}, {1});
  EXPECT_FALSE(baracuda::detail::ew_fits32(H));
  // Few elements, but an input reaching past 2^31 (a huge stride).
  const EwLayout R = layout2({2, 4}, {4, 1}, {2, 4}, {int64_t{1} << 31, 1});
  EXPECT_FALSE(baracuda::detail::ew_fits32(R));
}

TEST(ElementwiseHost, PathChoice) {
  const Dims m{64, 128};
  const Dims cs = contiguous_strides(m);
  const void* a = addr(0x2000);
  // Contiguous, aligned: vector path (V = 8 for 2-byte types).
  EXPECT_EQ(path_of(layout2(m, cs, m, cs), 8, 0x1000, 2, a, 2), EwPath::Vec16);
  // Row and column broadcasts stay on the vector path.
  EXPECT_EQ(path_of(layout2(m, cs, {128}, {1}), 8, 0x1000, 2, a, 2), EwPath::Vec16);
  EXPECT_EQ(path_of(layout2(m, cs, {64, 1}, {1, 1}), 8, 0x1000, 2, a, 2), EwPath::Vec16);
  // A scalar input is never read from memory.
  EXPECT_EQ(path_of(layout2(m, cs, m, cs), 8, 0x1000, 2, nullptr, 2), EwPath::Vec16);
  // Misaligned input (4 bytes off a 16-byte vector of f32): strided.
  EXPECT_EQ(path_of(layout2(m, cs, m, cs), 4, 0x1000, 4, addr(0x2004), 4), EwPath::Strided32);
  // Inner extent not a multiple of V: strided.
  EXPECT_EQ(path_of(layout2({63, 127}, {127, 1}, {63, 127}, {127, 1}), 4, 0x1000, 4, a, 4), EwPath::Strided32);
  // Outer stride not a multiple of V (a padded row): strided.
  EXPECT_EQ(path_of(layout2(m, cs, m, {130, 1}), 8, 0x1000, 2, a, 2), EwPath::Strided32);
  // One input read along the output's outer dim: the tiled transpose.
  EXPECT_EQ(path_of(layout2(m, cs, m, {1, 64}), 4, 0x1000, 4, a, 4), EwPath::Transpose);
  // Two inputs, one transposed: strided (the transpose kernel takes one).
  {
    const EwLayout L = [&] {
      const Dims shapes[2] = {m, m};
      const Dims t{1, 64};
      const Dims* strides[2] = {&t, &cs};
      return baracuda::detail::make_ew_layout(m, cs, 2, shapes, strides);
    }();
    const void* in[2] = {a, addr(0x4000)};
    const size_t sizes[2] = {4, 4};
    EXPECT_EQ(baracuda::detail::choose_ew_path(L, 4, addr(0x1000), 4, in, sizes), EwPath::Strided32);
  }
  // > 2^31 elements: 64-bit indices.
  const int64_t big = int64_t{1} << 16;
  EXPECT_EQ(path_of(layout2({big, big + 1}, {big + 1, 1}, {big + 1}, {1}), 4, 0x1000, 4, a, 4), EwPath::Generic64);
  // The vector path past 2^31 elements: fine while its chunk indices (numel /
  // V) stay below 2^31 or the layout is one dim (nothing to decode) ...
  EXPECT_EQ(path_of(layout2({big, big + 16}, {big + 16, 1}, {big + 16}, {1}), 4, 0x1000, 4, a, 4), EwPath::Vec16);
  const Dims flat{int64_t{1} << 34};
  EXPECT_EQ(path_of(layout2(flat, {1}, flat, {1}), 4, 0x1000, 4, a, 4), EwPath::Vec16);
  // ... but 2^31 chunks of a row broadcast take the 64-bit path.
  EXPECT_EQ(path_of(layout2({2 * big, big}, {big, 1}, {big}, {1}), 4, 0x1000, 4, a, 4), EwPath::Generic64);
}

TEST(ElementwiseHost, CallRules) {
  const Stream gpu = Stream::cuda(0);
  const Dims m{4, 8};
  const TensorMut out = dev_dense(0x10000, DType::BF16, m);
  const TensorRef a = dev_dense(0x20000, DType::BF16, m);
  const TensorRef row = dev_dense(0x30000, DType::BF16, {8});
  const DType bf[2] = {DType::BF16, DType::BF16};
  auto check = [&](const Stream& s, const TensorMut& o, const TensorRef* x, const TensorRef* y) {
    const TensorRef* in[2] = {x, y};
    return baracuda::detail::check_ew_call(kWho, s, o, DType::BF16, 2, in, bf);
  };
  auto expect_error = [](const Status& st, const std::string& part) {
    EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    EXPECT_NE(st.message().find(kWho), std::string::npos) << st.to_string();
    EXPECT_NE(st.message().find(part), std::string::npos) << st.to_string() << " (wanted: " << part << ")";
  };
  EXPECT_TRUE(check(gpu, out, &a, &row).is_ok());
  EXPECT_TRUE(check(gpu, out, &a, nullptr).is_ok());  // in1 a scalar
  // In place: out is exactly in0.
  const TensorRef same = out;
  EXPECT_TRUE(check(gpu, out, &same, &row).is_ok());
  expect_error(check(Stream::cpu(), out, &a, &row), "CUDA stream");
  // dtype of an operand against the caller's types.
  const TensorRef f32 = dev_dense(0x40000, DType::F32, m);
  expect_error(check(gpu, out, &a, &f32), "in1 dtype f32 must be bf16");
  const DType want_f32[2] = {DType::BF16, DType::F32};
  {
    const TensorRef* in[2] = {&a, &f32};
    EXPECT_TRUE(baracuda::detail::check_ew_call(kWho, gpu, out, DType::BF16, 2, in, want_f32).is_ok());
    expect_error(baracuda::detail::check_ew_call(kWho, gpu, out, DType::F32, 2, in, want_f32), "out dtype bf16 must be f32");
  }
  // Shapes: [8] and [4, 1] broadcast to [4, 8]; [3] and [2, 4, 8] do not.
  const TensorRef col = dev_dense(0x50000, DType::BF16, {4, 1});
  EXPECT_TRUE(check(gpu, out, &col, &row).is_ok());
  const TensorRef three = dev_dense(0x60000, DType::BF16, {3});
  expect_error(check(gpu, out, &a, &three), "in1 shape [3] does not broadcast");
  const TensorRef bigger = dev_dense(0x60000, DType::BF16, {2, 4, 8});
  expect_error(check(gpu, out, &bigger, &row), "in0 shape [2,4,8] does not broadcast");
  // out broadcasting (stride 0 along an extent > 1) writes elements twice.
  expect_error(check(gpu, dev_view(0x70000, DType::BF16, m, {0, 1}), &a, &row), "out strides [0,1] for shape [4,8] make elements overlap");
  // out overlapping an input other than being exactly it.
  const TensorRef shifted = dev_dense(0x10000 + 2 * 8, DType::BF16, m);  // out one row further on
  expect_error(check(gpu, out, &shifted, &row), "out partially overlaps in0");
  const TensorRef across = dev_view(0x10000, DType::BF16, m, {1, 4});  // same memory, other strides
  expect_error(check(gpu, out, &a, &across), "out partially overlaps in1");
  // Device of a view.
  const TensorRef host = TensorRef(addr(0x80000), DType::BF16, Device::cpu(), m, contiguous_strides(m), 32);
  expect_error(check(gpu, out, &host, &row), "in0 is on cpu");
  // Zero-size views pass with null data (nothing is read or written).
  const TensorMut empty(nullptr, DType::BF16, Device::cuda(0), {0, 8}, {8, 1}, 0);
  const TensorRef empty_in(nullptr, DType::BF16, Device::cuda(0), {0, 8}, {8, 1}, 0);
  EXPECT_TRUE(check(gpu, empty, &empty_in, &row).is_ok());
  // 1 to 3 inputs.
  expect_error(baracuda::detail::check_ew_call(kWho, gpu, out, DType::BF16, 4, nullptr, nullptr), "1 to 3 inputs");
}

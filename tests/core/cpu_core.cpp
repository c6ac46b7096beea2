// Core types: half / bfloat16 conversions, Dims, Device, TensorRef helpers,
// Status / Result, Buffer on the CPU, names, DLPack round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/dlpack.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

uint32_t fbits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float bitsf(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint16_t h(float f) { return half(f).bits; }
uint16_t b(float f) { return bfloat16(f).bits; }
float hf(uint16_t bits) { return static_cast<float>(half::from_bits(bits)); }
float bf(uint16_t bits) { return static_cast<float>(bfloat16::from_bits(bits)); }
bool h_is_nan(uint16_t x) { return (x & 0x7c00u) == 0x7c00u && (x & 0x3ffu) != 0; }
bool b_is_nan(uint16_t x) { return (x & 0x7f80u) == 0x7f80u && (x & 0x7fu) != 0; }

}  // namespace

// ---------------------------------------------------------------------------
// half
// ---------------------------------------------------------------------------
TEST(Half, ExactValues) {
  EXPECT_EQ(h(0.0f), 0x0000);
  EXPECT_EQ(h(-0.0f), 0x8000);
  EXPECT_EQ(h(1.0f), 0x3c00);
  EXPECT_EQ(h(-2.0f), 0xc000);
  EXPECT_EQ(h(0.5f), 0x3800);
  EXPECT_EQ(h(65504.0f), 0x7bff);        // largest finite half
  EXPECT_EQ(h(6.103515625e-05f), 0x0400);  // 2^-14, smallest normal
  EXPECT_EQ(h(1.0f + 1.0f / 1024), 0x3c01);
  EXPECT_EQ(hf(0x3555), 0.333251953125f);
  EXPECT_EQ(hf(0x3c00), 1.0f);
  EXPECT_EQ(hf(0xc000), -2.0f);
  EXPECT_EQ(hf(0x7bff), 65504.0f);
  EXPECT_EQ(half(1.5).bits, 0x3e00);  // from double
  EXPECT_EQ(static_cast<double>(half::from_bits(0x3e00)), 1.5);
}

TEST(Half, RoundToNearestEven) {
  // Halfway between 1 and 1 + 2^-10 -> even (1).
  EXPECT_EQ(h(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // Halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even) -> up.
  EXPECT_EQ(h(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above halfway -> up; just below -> down.
  EXPECT_EQ(h(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(h(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)), 0x3c00);
  // Negative numbers mirror.
  EXPECT_EQ(h(-(1.0f + 3 * std::ldexp(1.0f, -11))), 0xbc02);
  // 2049 is halfway between 2048 and 2050 -> 2048 (even mantissa).
  EXPECT_EQ(hf(h(2049.0f)), 2048.0f);
  EXPECT_EQ(hf(h(2051.0f)), 2052.0f);
  // Carry into the exponent: just below 2 rounds to 2.
  EXPECT_EQ(h(2.0f - std::ldexp(1.0f, -12)), 0x4000);
}

TEST(Half, Subnormals) {
  const float u = std::ldexp(1.0f, -24);  // half's subnormal unit
  EXPECT_EQ(h(u), 0x0001);
  EXPECT_EQ(h(-u), 0x8001);
  EXPECT_EQ(h(1023 * u), 0x03ff);          // largest subnormal
  EXPECT_EQ(h(0.5f * u), 0x0000);          // halfway 0 / unit -> even (0)
  EXPECT_EQ(h(1.5f * u), 0x0002);          // halfway 1 / 2 -> even (2)
  EXPECT_EQ(h(2.5f * u), 0x0002);          // halfway 2 / 3 -> even (2)
  EXPECT_EQ(h(0.51f * u), 0x0001);
  EXPECT_EQ(h(0.25f * u), 0x0000);         // underflow to zero
  EXPECT_EQ(h(-0.25f * u), 0x8000);        // keeps the sign
  EXPECT_EQ(h(1023.5f * u), 0x0400);       // rounds up into the smallest normal
  EXPECT_EQ(h(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(hf(0x0001), u);
  EXPECT_EQ(hf(0x03ff), 1023 * u);
  EXPECT_EQ(hf(0x8001), -u);
  EXPECT_EQ(h(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(Half, InfNaNOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(h(inf), 0x7c00);
  EXPECT_EQ(h(-inf), 0xfc00);
  EXPECT_EQ(h(65519.0f), 0x7bff);  // below the halfway point to 65536 -> max finite
  EXPECT_EQ(h(65520.0f), 0x7c00);  // halfway to 2^16 -> even -> overflows to inf
  EXPECT_EQ(h(1e6f), 0x7c00);
  EXPECT_EQ(h(-1e6f), 0xfc00);
  EXPECT_EQ(h(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_TRUE(std::isinf(hf(0x7c00)) && hf(0x7c00) > 0);
  EXPECT_TRUE(std::isinf(hf(0xfc00)) && hf(0xfc00) < 0);
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(h_is_nan(h(qnan)));
  EXPECT_TRUE(h_is_nan(h(-qnan)));
  EXPECT_TRUE(h_is_nan(h(bitsf(0x7f800001u))));  // signalling NaN with a low payload stays NaN
  EXPECT_TRUE(h_is_nan(h(bitsf(0x7fc00000u))));
  EXPECT_TRUE(std::isnan(hf(0x7e00)));
  EXPECT_TRUE(std::isnan(hf(0x7c01)));
  EXPECT_TRUE(std::isnan(static_cast<double>(half(std::nan("")))));
}

TEST(Half, ExhaustiveRoundTrip) {
  // Every non-NaN half survives half -> float -> half unchanged; NaNs stay NaN.
  for (uint32_t x = 0; x <= 0xffff; ++x) {
    const uint16_t bits = static_cast<uint16_t>(x);
    const float f = hf(bits);
    if (h_is_nan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << x;
      ASSERT_TRUE(h_is_nan(h(f))) << std::hex << x;
    } else {
      ASSERT_EQ(h(f), bits) << std::hex << x;
    }
  }
}

TEST(Half, MatchesIndependentRounding) {
  // Against an independent RNE computed in double: nearest half value, ties to
  // the even significand.
  bt::Rng rng(bt::fresh_seed());
  auto ref = [](float f) -> uint16_t {
    // Enumerate: find the two neighbouring finite halves by scanning bits (monotone for positives).
    const double v = std::fabs(static_cast<double>(f));
    uint16_t lo = 0, hi = 0x7bff;
    while (lo < hi) {  // largest half <= v
      const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
      if (static_cast<double>(hf(mid)) <= v) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
    }
    uint16_t r;
    if (lo == 0x7bff) {
      r = v >= 65520.0 ? 0x7c00 : 0x7bff;
    } else {
      const double a = hf(lo), c = hf(static_cast<uint16_t>(lo + 1));
      if (v - a < c - v) r = lo;
      else if (v - a > c - v) r = static_cast<uint16_t>(lo + 1);
      else r = (lo & 1) ? static_cast<uint16_t>(lo + 1) : lo;
    }
    return static_cast<uint16_t>(r | (std::signbit(f) ? 0x8000 : 0));
  };
  for (int i = 0; i < 20000; ++i) {
    const float f = static_cast<float>(std::ldexp(bt::uniform(rng, -1.0, 1.0), static_cast<int>(bt::uniform_int(rng, -27, 17))));
    ASSERT_EQ(h(f), ref(f)) << "f = " << f << " bits 0x" << std::hex << fbits(f);
  }
}

// ---------------------------------------------------------------------------
// bfloat16
// ---------------------------------------------------------------------------
TEST(BFloat16, ExactValues) {
  EXPECT_EQ(b(0.0f), 0x0000);
  EXPECT_EQ(b(-0.0f), 0x8000);
  EXPECT_EQ(b(1.0f), 0x3f80);
  EXPECT_EQ(b(-2.0f), 0xc000);
  EXPECT_EQ(b(3.0f), 0x4040);
  EXPECT_EQ(bf(0x3f80), 1.0f);
  EXPECT_EQ(bf(0x4040), 3.0f);
  EXPECT_EQ(bf(0x7f7f), bitsf(0x7f7f0000u));  // largest finite bf16
  EXPECT_EQ(bfloat16(0.5).bits, 0x3f00);      // from double
}

TEST(BFloat16, RoundToNearestEven) {
  EXPECT_EQ(b(1.0f + std::ldexp(1.0f, -8)), 0x3f80);                            // tie -> even
  EXPECT_EQ(b(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);                        // tie -> even (up)
  EXPECT_EQ(b(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);    // above tie -> up
  EXPECT_EQ(b(1.0f + std::ldexp(1.0f, -8) - std::ldexp(1.0f, -20)), 0x3f80);    // below tie -> down
  EXPECT_EQ(b(-(1.0f + 3 * std::ldexp(1.0f, -8))), 0xbf82);
  EXPECT_EQ(b(2.0f - std::ldexp(1.0f, -10)), 0x4000);                           // carry into exponent
  EXPECT_EQ(bf(b(257.0f)), 256.0f);
  EXPECT_EQ(bf(b(259.0f)), 260.0f);
}

TEST(BFloat16, SubnormalsInfNaNOverflow) {
  EXPECT_EQ(b(bitsf(0x00080000u)), 0x0008);  // f32 subnormal, exact in bf16
  EXPECT_EQ(b(bitsf(0x00008000u)), 0x0000);  // tie 0 / 1 -> even (0)
  EXPECT_EQ(b(bitsf(0x00018000u)), 0x0002);  // tie 1 / 2 -> even (2)
  EXPECT_EQ(b(bitsf(0x00008001u)), 0x0001);
  EXPECT_EQ(bf(0x0001), bitsf(0x00010000u));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(b(inf), 0x7f80);
  EXPECT_EQ(b(-inf), 0xff80);
  EXPECT_EQ(b(std::numeric_limits<float>::max()), 0x7f80);   // rounds past the largest bf16 -> inf
  EXPECT_EQ(b(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(b(bitsf(0x7f7f7fffu)), 0x7f7f);                  // just below the tie -> max finite
  EXPECT_EQ(b(bitsf(0x7f7f8000u)), 0x7f80);                  // tie, odd mantissa -> up -> inf
  EXPECT_TRUE(b_is_nan(b(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(b_is_nan(b(bitsf(0x7f800001u))));  // NaN whose payload lives in the low bits
  EXPECT_TRUE(b_is_nan(b(bitsf(0xff800001u))));
  EXPECT_TRUE(b_is_nan(b(bitsf(0x7fffffffu))));  // must not round into the sign / inf
  EXPECT_TRUE(std::isnan(bf(0x7fc0)));
  EXPECT_TRUE(std::isinf(bf(0x7f80)));
}

TEST(BFloat16, ExhaustiveRoundTrip) {
  for (uint32_t x = 0; x <= 0xffff; ++x) {
    const uint16_t bits = static_cast<uint16_t>(x);
    const float f = bf(bits);
    if (b_is_nan(bits)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << x;
      ASSERT_TRUE(b_is_nan(b(f))) << std::hex << x;
    } else {
      ASSERT_EQ(b(f), bits) << std::hex << x;
    }
  }
}

TEST(BFloat16, MatchesIndependentRounding) {
  bt::Rng rng(bt::fresh_seed());
  for (int i = 0; i < 20000; ++i) {
    const uint32_t x = static_cast<uint32_t>(bt::uniform_int(rng, 0, 0x7f7fffff)) |
                       (bt::uniform_int(rng, 0, 1) ? 0x80000000u : 0u);
    // Independent RNE on the 16 dropped bits.
    const uint32_t hi = x >> 16, lo = x & 0xffffu;
    uint32_t r = hi;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) r = hi + 1;
    ASSERT_EQ(b(bitsf(x)), static_cast<uint16_t>(r)) << std::hex << x;
  }
}

// ---------------------------------------------------------------------------
// Dims, Device, names
// ---------------------------------------------------------------------------
TEST(Dims, Basics) {
  Dims d{4, 1, 7};
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d[0], 4);
  EXPECT_EQ(d[2], 7);
  EXPECT_EQ(d.to_string(), "[4,1,7]");
  EXPECT_EQ(Dims().to_string(), "[]");
  EXPECT_TRUE(d == (Dims{4, 1, 7}));
  EXPECT_FALSE(d == (Dims{4, 1}));
  EXPECT_FALSE(d == (Dims{4, 1, 8}));
  int64_t s = 0;
  for (int64_t x : d) s += x;
  EXPECT_EQ(s, 12);
  const Dims f = Dims::of_rank(3, 5);
  EXPECT_EQ(f, (Dims{5, 5, 5}));
  EXPECT_EQ(Dims::of_rank(2), (Dims{0, 0}));
  EXPECT_EQ(Dims::of_rank(-1).rank, 0);
  EXPECT_EQ(Dims::of_rank(12).rank, 8);
  Dims g;
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(g.push_back(i));
  EXPECT_FALSE(g.push_back(8));
  EXPECT_EQ(g.rank, 8);
  EXPECT_EQ(g[7], 7);
  EXPECT_NO_THROW((Dims{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW((Dims{1, 2, 3, 4, 5, 6, 7, 8, 9}), std::length_error);
}

TEST(Dims, NumelAndStrides) {
  EXPECT_EQ(shape_numel(Dims{}), 1);
  EXPECT_EQ(shape_numel(Dims{2, 3, 4}), 24);
  EXPECT_EQ(shape_numel(Dims{2, 0, 4}), 0);
  EXPECT_EQ(contiguous_strides(Dims{2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Dims{5}), (Dims{1}));
  EXPECT_EQ(contiguous_strides(Dims{}), Dims{});
  // A zero extent must not zero the outer strides.
  EXPECT_EQ(contiguous_strides(Dims{2, 0, 3}), (Dims{3, 3, 1}));
}

TEST(Device, Basics) {
  EXPECT_TRUE(Device::cpu().is_cpu());
  EXPECT_TRUE(Device::cuda(1).is_cuda());
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  EXPECT_EQ(Device::cuda(1).to_string(), "cuda:1");
  EXPECT_TRUE(Device::cuda(0) == Device::cuda(0));
  EXPECT_FALSE(Device::cuda(0) == Device::cuda(1));
  EXPECT_FALSE(Device::cpu() == Device::cuda(0));
  EXPECT_TRUE((Device{Device::Kind::Cpu, 3} == Device::cpu()));  // CPU ordinals do not matter
}

TEST(Names, DTypesBackendsKindsCodes) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::I8), 1u);
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_size(DType::I32), 4u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_name(DType::U8), "u8");
  EXPECT_TRUE(is_floating_point(DType::F16));
  EXPECT_FALSE(is_floating_point(DType::I32));
  EXPECT_TRUE(is_integral(DType::U8));
  EXPECT_FALSE(is_integral(DType::Bool));
  EXPECT_STREQ(backend_name(Backend::CpuReference), "cpu-reference");
  EXPECT_STREQ(backend_name(Backend::Bespoke), "bespoke-cuda");
  EXPECT_STREQ(backend_name(Backend::CuBlasLt), "cublaslt");
  EXPECT_STREQ(backend_name(Backend::CuDnn), "cudnn");
  EXPECT_STREQ(reduce_kind_name(ReduceKind::Sum), "sum");
  EXPECT_STREQ(reduce_kind_name(ReduceKind::LogSumExp), "logsumexp");
  EXPECT_STREQ(reduce_kind_name(ReduceKind::Norm2), "norm2");
  EXPECT_STREQ(reduce_kind_name(ReduceKind::ArgMin), "argmin");
  EXPECT_STREQ(status_code_name(StatusCode::Ok), "Ok");
  EXPECT_STREQ(status_code_name(StatusCode::BufferTooSmall), "BufferTooSmall");
  EXPECT_STREQ(status_code_name(StatusCode::WorkspaceTooSmall), "WorkspaceTooSmall");
  EXPECT_STREQ(status_code_name(StatusCode::Unsupported), "Unsupported");
  EXPECT_STREQ(status_code_name(StatusCode::CudaError), "CudaError");
  EXPECT_STREQ(status_code_name(StatusCode::LibraryError), "LibraryError");
}

TEST(KernelSku, ToString) {
  KernelSku s;
  s.backend = Backend::Bespoke;
  s.arch = 90;
  s.dtype = DType::BF16;
  s.op = "reduce.mean";
  s.variant = "column-split";
  s.precision.accumulator = DType::F32;
  EXPECT_EQ(s.to_string(), "reduce.mean [bespoke-cuda sm_90, bf16, column-split, acc f32, deterministic]");
  s.arch = 0;
  s.backend = Backend::CpuReference;
  s.precision.deterministic = false;
  s.precision.accumulator = DType::F64;
  EXPECT_EQ(s.to_string(), "reduce.mean [cpu-reference, bf16, column-split, acc f64, non-deterministic]");
}

// ---------------------------------------------------------------------------
// TensorRef / TensorMut
// ---------------------------------------------------------------------------
TEST(TensorRef, ContiguousHelpers) {
  float buf[24] = {};
  const TensorRef t = TensorRef::contiguous(buf, DType::F32, Device::cpu(), Dims{2, 3, 4});
  EXPECT_EQ(t.data, buf);
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.capacity, 24);
  EXPECT_EQ(t.strides, (Dims{12, 4, 1}));
  EXPECT_EQ(t.span(), 24);
  EXPECT_TRUE(t.is_contiguous());
  TensorMut m = TensorMut::contiguous(buf, DType::F32, Device::cpu(), Dims{6});
  const TensorRef r = m;  // a mutable view is also readable
  EXPECT_EQ(r.data, buf);
  EXPECT_EQ(r.shape, Dims{6});
  EXPECT_EQ(r.strides, Dims{1});
  EXPECT_EQ(r.capacity, 6);
  EXPECT_EQ(r.dtype, DType::F32);
}

TEST(TensorRef, SpanAndContiguity) {
  float buf[64] = {};
  auto v = [&](Dims shape, Dims strides) { return TensorRef(buf, DType::F32, Device::cpu(), shape, strides, 64); };
  // Transposed [2,3] view of a [3,2] buffer.
  EXPECT_EQ(v({2, 3}, {1, 2}).span(), 6);
  EXPECT_FALSE(v({2, 3}, {1, 2}).is_contiguous());
  // Broadcast (stride 0) axis.
  EXPECT_EQ(v({3, 4}, {0, 1}).span(), 4);
  EXPECT_FALSE(v({3, 4}, {0, 1}).is_contiguous());
  // Every other element.
  EXPECT_EQ(v({5}, {2}).span(), 9);
  EXPECT_FALSE(v({5}, {2}).is_contiguous());
  // Extent-1 axes may carry any stride and stay contiguous.
  EXPECT_TRUE(v({2, 1, 3}, {3, 99, 1}).is_contiguous());
  EXPECT_TRUE(v({1}, {0}).is_contiguous());
  // Empty views reach nothing.
  EXPECT_EQ(v({2, 0, 3}, {0, 3, 1}).span(), 0);
  EXPECT_EQ(v({2, 0, 3}, {0, 3, 1}).numel(), 0);
  // Rank 0: one element.
  EXPECT_EQ(v({}, {}).span(), 1);
  EXPECT_EQ(v({}, {}).numel(), 1);
  EXPECT_TRUE(v({}, {}).is_contiguous());
  // Padded slice: [2,3] inside rows of 5.
  EXPECT_EQ(v({2, 3}, {5, 1}).span(), 8);
  EXPECT_FALSE(v({2, 3}, {5, 1}).is_contiguous());
}

TEST(TensorUtils, LayoutsDescribeTheirViews) {
  // The helpers the other suites rely on.
  const Dims s{2, 3, 4};
  for (const bt::Layout& L : {bt::contiguous(s), bt::transposed(s), bt::padded(s), bt::every_other(s), bt::broadcast(s, 1)}) {
    SCOPED_TRACE(bt::describe(L));
    EXPECT_LE(L.offset + L.span(), L.storage);
    bt::HostBuffer hb(DType::F32, L.storage);
    const TensorRef t = bt::view(hb, L);
    EXPECT_EQ(t.span(), L.span());
    EXPECT_LE(t.span(), t.capacity);
    EXPECT_EQ(t.shape, s);
  }
  EXPECT_TRUE(bt::view(bt::HostBuffer(DType::F32, 24), bt::contiguous(s)).is_contiguous());
  EXPECT_FALSE(bt::view(bt::HostBuffer(DType::F32, 24), bt::transposed(s)).is_contiguous());
  EXPECT_EQ(bt::transposed(s).strides, (Dims{1, 2, 6}));
  EXPECT_EQ(bt::broadcast(s, 1).strides, (Dims{4, 0, 1}));
  EXPECT_EQ(bt::every_other(s).strides, (Dims{24, 8, 2}));
  // Every logical element of a non-broadcast layout lands on a distinct storage slot.
  for (const bt::Layout& L : {bt::transposed(s), bt::padded(s), bt::every_other(s)}) {
    std::vector<int> hits(static_cast<size_t>(L.storage), 0);
    for (int64_t i = 0; i < L.numel(); ++i) ++hits[static_cast<size_t>(L.offset_of(i))];
    for (int x : hits) EXPECT_LE(x, 1) << bt::describe(L);
  }
  // rel_error: NaN must match NaN position-wise.
  EXPECT_EQ(bt::rel_error({1, bt::kNaN}, {1, bt::kNaN}), 0.0);
  EXPECT_TRUE(std::isinf(bt::rel_error({1, 2}, {1, bt::kNaN})));
  EXPECT_TRUE(std::isinf(bt::rel_error({bt::kNaN, 2}, {1, 2})));
  EXPECT_TRUE(std::isinf(bt::rel_error({bt::kInf, 2}, {-bt::kInf, 2})));
  EXPECT_NEAR(bt::rel_error({3, 4.5}, {3, 4}), 0.5 / 5.0, 1e-15);
  // Random fills are never all zeros, for every dtype.
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    bt::Rng rng(bt::fresh_seed(dtype_name(t)));
    const auto v = bt::random_values(t, 1, rng, 0.0, 0.0);
    EXPECT_NE(v[0], 0.0);
  }
}

// ---------------------------------------------------------------------------
// Status / Result
// ---------------------------------------------------------------------------
TEST(Status, Basics) {
  const Status ok;
  EXPECT_TRUE(ok.is_ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.code(), StatusCode::Ok);
  EXPECT_EQ(ok.to_string(), "Ok");
  EXPECT_TRUE(Status::ok().is_ok());
  const Status e(StatusCode::InvalidProblem, "ReducePlan: axis 2 out of range for rank 2");
  EXPECT_FALSE(e.is_ok());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_EQ(e.message(), "ReducePlan: axis 2 out of range for rank 2");
  EXPECT_EQ(e.to_string(), "InvalidProblem: ReducePlan: axis 2 out of range for rank 2");
  const Status small(StatusCode::BufferTooSmall, "x", 10, 4);
  EXPECT_EQ(small.needed(), 10u);
  EXPECT_EQ(small.got(), 4u);
  EXPECT_EQ(small.to_string(), "BufferTooSmall: x");
}

namespace {
Result<int> make_result(bool good) {
  if (good) return 42;
  return Status(StatusCode::Unsupported, "Thing: not here");
}
Status propagate(bool good) {
  BARACUDA_RETURN_IF_ERROR(good ? Status::ok() : Status(StatusCode::CudaError, "Inner: failed"));
  return Status(StatusCode::LibraryError, "reached the end");
}
}  // namespace

TEST(Result, ValueAndErrors) {
  auto good = make_result(true);
  EXPECT_TRUE(good.is_ok());
  EXPECT_TRUE(static_cast<bool>(good));
  EXPECT_EQ(good.value(), 42);
  EXPECT_EQ(*good, 42);
  EXPECT_TRUE(good.status().is_ok());

  auto bad = make_result(false);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(bad.status().message(), "Thing: not here");
  try {
    (void)bad.value();
    FAIL() << "value() on an error must throw";
  } catch (const StatusError& err) {
    EXPECT_EQ(err.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(err.status().message(), "Thing: not here");
    EXPECT_NE(std::string(err.what()).find("Thing: not here"), std::string::npos);
    EXPECT_NE(std::string(err.what()).find("Unsupported"), std::string::npos);
  }
  EXPECT_THROW((void)*bad, StatusError);
  EXPECT_THROW((void)std::move(bad).value(), StatusError);

  // A Result built from an ok Status has no value: it must be an error.
  Result<int> weird{Status::ok()};
  EXPECT_FALSE(weird.is_ok());
  EXPECT_FALSE(weird.status().is_ok());
  EXPECT_THROW((void)weird.value(), StatusError);

  Result<std::string> s{std::string("abc")};
  EXPECT_EQ(s->size(), 3u);
  EXPECT_EQ(std::move(s).value(), "abc");
}

TEST(Status, ReturnIfError) {
  const Status a = propagate(false);
  EXPECT_EQ(a.code(), StatusCode::CudaError);
  EXPECT_EQ(a.message(), "Inner: failed");
  EXPECT_EQ(propagate(true).code(), StatusCode::LibraryError);
}

// ---------------------------------------------------------------------------
// Buffer on the CPU
// ---------------------------------------------------------------------------
TEST(Buffer, CpuAllocateCopyFill) {
  Buffer buf(Device::cpu(), 40);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.bytes(), 40u);
  EXPECT_TRUE(buf.device().is_cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % 8, 0u);

  const float src[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ASSERT_TRUE(buf.copy_from_host(src, sizeof(src)).is_ok());
  float dst[10] = {};
  ASSERT_TRUE(buf.copy_to_host(dst, sizeof(dst)).is_ok());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(dst[i], src[i]);
  // Offsets.
  const float two[2] = {-1, -2};
  ASSERT_TRUE(buf.copy_from_host(two, sizeof(two), 8 * sizeof(float)).is_ok());
  float tail[3] = {};
  ASSERT_TRUE(buf.copy_to_host(tail, sizeof(tail), 7 * sizeof(float)).is_ok());
  EXPECT_EQ(tail[0], 8.0f);
  EXPECT_EQ(tail[1], -1.0f);
  EXPECT_EQ(tail[2], -2.0f);
  // Out of range -> BufferTooSmall with needed / got in bytes.
  Status st = buf.copy_from_host(src, 8, 36);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.needed(), 44u);
  EXPECT_EQ(st.got(), 40u);
  EXPECT_NE(st.message().find("Buffer::copy_from_host"), std::string::npos) << st.message();
  st = buf.copy_to_host(dst, 44);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_NE(st.message().find("Buffer::copy_to_host"), std::string::npos) << st.message();
  st = buf.copy_to_host(dst, 1, 41);  // offset past the end
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);

  ASSERT_TRUE(buf.fill_bytes(0xab).is_ok());
  uint8_t bytes[40];
  ASSERT_TRUE(buf.copy_to_host(bytes, 40).is_ok());
  for (uint8_t x : bytes) EXPECT_EQ(x, 0xab);
}

TEST(Buffer, CpuViewsAndMove) {
  Buffer buf(Device::cpu(), 26);  // 6 floats + 2 bytes: capacity rounds down
  const TensorRef v = buf.view(DType::F32, Dims{2, 3});
  EXPECT_EQ(v.data, buf.data());
  EXPECT_EQ(v.capacity, 6);
  EXPECT_EQ(v.strides, (Dims{3, 1}));
  EXPECT_TRUE(v.device.is_cpu());
  const TensorMut m = buf.view_mut(DType::F16, Dims{3, 2}, Dims{1, 3});
  EXPECT_EQ(m.capacity, 13);
  EXPECT_EQ(m.strides, (Dims{1, 3}));
  EXPECT_EQ(m.dtype, DType::F16);

  void* p = buf.data();
  Buffer moved(std::move(buf));
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(moved.bytes(), 26u);
  EXPECT_EQ(buf.data(), nullptr);  // NOLINT(bugprone-use-after-move): documented moved-from state
  EXPECT_EQ(buf.bytes(), 0u);
  Buffer other(Device::cpu(), 8);
  other = std::move(moved);
  EXPECT_EQ(other.data(), p);
  EXPECT_EQ(other.bytes(), 26u);

  Buffer empty(Device::cpu(), 0);
  EXPECT_EQ(empty.bytes(), 0u);
  EXPECT_TRUE(empty.fill_bytes(1).is_ok());
  EXPECT_TRUE(empty.copy_from_host(nullptr, 0).is_ok());
  Buffer defaulted;
  EXPECT_EQ(defaulted.data(), nullptr);
  EXPECT_EQ(defaulted.bytes(), 0u);
}

TEST(Buffer, CudaWithoutCuda) {
  EXPECT_TRUE(synchronize(Stream::cpu()).is_ok());
  EXPECT_GE(cuda_device_count(), 0);
  EXPECT_EQ(cuda_available(), cuda_device_count() > 0);
#ifndef BARACUDA_WITH_CUDA
  EXPECT_FALSE(cuda_available());
  EXPECT_EQ(cuda_device_count(), 0);
  try {
    Buffer b(Device::cuda(0), 16);
    FAIL() << "CUDA memory from a CPU-only build must throw";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status().code(), StatusCode::Unsupported);
    EXPECT_NE(e.status().message().find("Buffer"), std::string::npos) << e.status().message();
  }
  EXPECT_EQ(synchronize(Stream::cuda(0)).code(), StatusCode::Unsupported);
#endif
}

TEST(Stream, Basics) {
  const Stream c = Stream::cpu();
  EXPECT_TRUE(c.is_cpu());
  EXPECT_FALSE(c.is_cuda());
  EXPECT_EQ(c.native_handle(), nullptr);
  int dummy = 0;
  const Stream g = Stream::cuda(2, &dummy);
  EXPECT_TRUE(g.is_cuda());
  EXPECT_EQ(g.device(), Device::cuda(2));
  EXPECT_EQ(g.native_handle(), &dummy);
  const Workspace w = Workspace::none();
  EXPECT_EQ(w.ptr, nullptr);
  EXPECT_EQ(w.bytes, 0u);
}

// ---------------------------------------------------------------------------
// DLPack
// ---------------------------------------------------------------------------
#if BARACUDA_HAS_DLPACK
TEST(DLPack, RoundTripStridedView) {
  std::vector<float> buf(64);
  const TensorRef v(buf.data() + 1, DType::F32, Device::cpu(), Dims{3, 4}, Dims{1, 6}, 40);
  DLTensor t{};
  int64_t shape[8], strides[8];
  ASSERT_TRUE(to_dlpack(v, &t, shape, strides).is_ok());
  EXPECT_EQ(t.data, buf.data() + 1);
  EXPECT_EQ(t.ndim, 2);
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(t.dtype.code, kDLFloat);
  EXPECT_EQ(t.dtype.bits, 32);
  EXPECT_EQ(t.dtype.lanes, 1);
  EXPECT_EQ(t.shape[0], 3);
  EXPECT_EQ(t.shape[1], 4);
  EXPECT_EQ(t.strides[0], 1);
  EXPECT_EQ(t.strides[1], 6);
  EXPECT_EQ(t.byte_offset, 0u);

  auto back = from_dlpack(t);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->data, v.data);
  EXPECT_EQ(back->dtype, DType::F32);
  EXPECT_TRUE(back->device.is_cpu());
  EXPECT_EQ(back->shape, v.shape);
  EXPECT_EQ(back->strides, v.strides);
  EXPECT_EQ(back->capacity, v.span());  // a DLTensor tells no more than the span
  auto with_cap = from_dlpack_mut(t, 40);
  ASSERT_TRUE(with_cap.is_ok());
  EXPECT_EQ(with_cap->capacity, 40);
  EXPECT_EQ(with_cap->data, buf.data() + 1);
}

TEST(DLPack, DTypesDevicesOffsets) {
  std::vector<double> buf(16);
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::I32, DType::I64, DType::U8}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const TensorRef v = TensorRef::contiguous(buf.data(), dt, Device::cuda(1), Dims{2, 2});
    DLTensor t{};
    int64_t shape[8], strides[8];
    ASSERT_TRUE(to_dlpack(v, &t, shape, strides).is_ok());
    EXPECT_EQ(t.device.device_type, kDLCUDA);
    EXPECT_EQ(t.device.device_id, 1);
    EXPECT_EQ(t.dtype.bits, dtype_size(dt) * 8);
    auto back = from_dlpack(t);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->dtype, dt);
    EXPECT_EQ(back->device, Device::cuda(1));
    EXPECT_EQ(back->strides, (Dims{2, 1}));
  }
  // Null strides = contiguous; byte_offset is applied.
  int64_t shape[2] = {2, 3};
  DLTensor t{};
  t.data = buf.data();
  t.device = {kDLCPU, 0};
  t.ndim = 2;
  t.dtype = {kDLFloat, 64, 1};
  t.shape = shape;
  t.strides = nullptr;
  t.byte_offset = 16;
  auto v = from_dlpack(t);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->strides, (Dims{3, 1}));
  EXPECT_EQ(v->data, buf.data() + 2);
  EXPECT_EQ(v->capacity, 6);
  // bf16 code.
  t.dtype = {kDLBfloat, 16, 1};
  t.byte_offset = 0;
  ASSERT_TRUE(from_dlpack(t).is_ok());
  EXPECT_EQ(from_dlpack(t)->dtype, DType::BF16);
}

TEST(DLPack, Rejections) {
  std::vector<float> buf(16);
  int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t strides[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  DLTensor t{};
  t.data = buf.data();
  t.device = {kDLCPU, 0};
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = strides;
  t.ndim = 9;
  auto r = from_dlpack(t);
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  EXPECT_NE(r.status().message().find("rank 9"), std::string::npos) << r.status().message();

  t.ndim = 2;
  int64_t neg[2] = {-1, 1};
  t.strides = neg;
  r = from_dlpack(t);
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  EXPECT_NE(r.status().message().find("negative strides"), std::string::npos) << r.status().message();
  t.strides = strides;

  t.dtype = {kDLFloat, 32, 4};
  r = from_dlpack(t);
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  EXPECT_NE(r.status().message().find("lanes"), std::string::npos) << r.status().message();

  t.dtype = {kDLFloat, 8, 1};
  r = from_dlpack(t);
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  t.dtype = {kDLComplex, 32, 1};  // complex32: no baracuda dtype (c64 and c128 are, see test_dtype.cpp)
  EXPECT_EQ(from_dlpack(t).status().code(), StatusCode::Unsupported);
  t.dtype = {kDLFloat, 32, 1};

  t.device = {kDLMetal, 0};
  r = from_dlpack(t);
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  EXPECT_NE(r.status().message().find("device"), std::string::npos) << r.status().message();
  t.device = {kDLCPU, 0};

  int64_t negshape[2] = {-2, 1};
  t.shape = negshape;
  EXPECT_EQ(from_dlpack(t).status().code(), StatusCode::InvalidProblem);
  t.shape = shape;

  t.byte_offset = 2;  // not a multiple of 4
  EXPECT_EQ(from_dlpack(t).status().code(), StatusCode::InvalidProblem);
  t.byte_offset = 0;

  EXPECT_EQ(to_dlpack(TensorRef::contiguous(buf.data(), DType::F32, Device::cpu(), Dims{2}), nullptr, shape, strides).code(),
            StatusCode::InvalidProblem);
}
#else
TEST(DLPack, NotAvailable) { GTEST_SKIP() << "no DLPack: dlpack/dlpack.h not found, or the library was built without it"; }
#endif

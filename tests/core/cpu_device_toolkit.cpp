// The shared device toolkit's host-usable helpers (src/core/int_math.hpp,
// align.hpp, strided_view.hpp): the kernels rely on the same code, so an error
// here is an error in every index decode and vector-path test that uses them.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "core/align.hpp"
#include "core/int_math.hpp"
#include "core/strided_view.hpp"

namespace {

using baracuda::detail::FastDiv;

// Every quotient FastDiv gives for divisor d at dividends around the
// multiples of d near n0 (the places a rounding error would show first).
void expect_exact_near(uint32_t d, uint32_t n0) {
  const FastDiv f(d);
  const uint32_t q0 = n0 / d;
  for (uint32_t k = q0 == 0 ? 0 : q0 - 1; k <= q0 + 1; ++k) {
    const uint64_t m = uint64_t{k} * d;
    for (int64_t delta = -1; delta <= 1; ++delta) {
      const int64_t n = static_cast<int64_t>(m) + delta;
      if (n < 0 || n >= (int64_t{1} << 31)) continue;
      const uint32_t un = static_cast<uint32_t>(n);
      ASSERT_EQ(f.div(un), un / d) << "n = " << un << ", d = " << d;
    }
  }
}

TEST(DeviceToolkit, FastDivIsExactOnSmallDivisorsAndDividends) {
  for (uint32_t d = 1; d <= 300; ++d) {
    const FastDiv f(d);
    for (uint32_t n = 0; n < 5000; ++n) ASSERT_EQ(f.div(n), n / d) << "n = " << n << ", d = " << d;
  }
}

TEST(DeviceToolkit, FastDivIsExactAtTheEdgesOfItsRange) {
  const uint32_t top = (uint32_t{1} << 31) - 1;  // the largest dividend it supports
  std::vector<uint32_t> divisors;
  for (int l = 0; l <= 31; ++l) {
    const uint32_t p = uint32_t{1} << l;
    for (int64_t delta = -3; delta <= 3; ++delta) {
      const int64_t d = static_cast<int64_t>(p) + delta;
      if (d >= 1 && d <= (int64_t{1} << 31)) divisors.push_back(static_cast<uint32_t>(d));
    }
  }
  for (uint32_t d : {3u, 7u, 641u, 6700417u, 2147483647u}) divisors.push_back(d);
  for (uint32_t d : divisors) {
    expect_exact_near(d, top);
    expect_exact_near(d, top / 2);
    expect_exact_near(d, d);
    const FastDiv f(d);
    EXPECT_EQ(f.div(top), top / d) << "d = " << d;
    EXPECT_EQ(f.div(0), 0u) << "d = " << d;
  }
}

TEST(DeviceToolkit, FastDivIsExactOnRandomPairs) {
  std::mt19937_64 rng(20240607);
  for (int i = 0; i < 200000; ++i) {
    // Divisors spread over every magnitude, not only large ones.
    const int bits = static_cast<int>(rng() % 31) + 1;
    const uint32_t d = static_cast<uint32_t>(rng() % (uint64_t{1} << bits)) + 1;
    const uint32_t n = static_cast<uint32_t>(rng() % (uint64_t{1} << 31));
    ASSERT_EQ(FastDiv(d).div(n), n / d) << "n = " << n << ", d = " << d;
  }
}

TEST(DeviceToolkit, DefaultFastDivDividesByOne) {
  const FastDiv f;
  for (uint32_t n : {0u, 1u, 12345u, (uint32_t{1} << 31) - 1}) EXPECT_EQ(f.div(n), n);
}

TEST(DeviceToolkit, IntegerRounding) {
  using namespace baracuda::detail;
  EXPECT_EQ(ceil_div(0, 4), 0);
  EXPECT_EQ(ceil_div(1, 4), 1);
  EXPECT_EQ(ceil_div(8, 4), 2);
  EXPECT_EQ(ceil_div(9, 4), 3);
  EXPECT_EQ(ceil_div(int64_t{1} << 40, 3), ((int64_t{1} << 40) + 2) / 3);
  EXPECT_EQ(round_up(13, 8), 16);
  EXPECT_EQ(round_up(16, 8), 16);
  EXPECT_EQ(pow2_ceil(0), 1);
  EXPECT_EQ(pow2_ceil(1), 1);
  EXPECT_EQ(pow2_ceil(5), 8);
  EXPECT_EQ(pow2_ceil(1024), 1024);
  EXPECT_EQ(pow2_floor(0), 1);
  EXPECT_EQ(pow2_floor(5), 4);
  EXPECT_EQ(pow2_floor(1024), 1024);
  EXPECT_EQ(pow2_floor(1023), 512);
  EXPECT_EQ(pow2_floor(int64_t{1} << 62), int64_t{1} << 62);
  EXPECT_EQ(log2_ceil(1), 0);
  EXPECT_EQ(log2_ceil(2), 1);
  EXPECT_EQ(log2_ceil(256), 8);
  EXPECT_EQ(log2_ceil(257), 9);
}

TEST(DeviceToolkit, Alignment) {
  using namespace baracuda::detail;
  alignas(16) unsigned char buf[64] = {};
  EXPECT_TRUE(is_aligned16(buf));
  EXPECT_TRUE(is_aligned16(buf + 16));
  EXPECT_FALSE(is_aligned16(buf + 8));
  EXPECT_FALSE(is_aligned16(buf + 1));
  EXPECT_TRUE(is_aligned(buf + 8, 8));
  EXPECT_FALSE(is_aligned(buf + 4, 8));
  EXPECT_TRUE(is_aligned16(nullptr));
}

TEST(DeviceToolkit, StridedViewAddressesLikeTheTensor) {
  using namespace baracuda;
  std::vector<float> data(2 * 3 * 5 * 7);
  // A [2, 3, 5, 4] slice of a [2, 3, 5, 7] buffer, heads and rows swapped in memory.
  const TensorRef t(data.data(), DType::F32, Device::cpu(), {2, 3, 5, 4}, {105, 7, 21, 1},
                    static_cast<int64_t>(data.size()));
  const detail::StridedView<4> v = detail::view_of<4>(t);
  EXPECT_EQ(v.data, t.data);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(v.stride[i], t.strides[i]);
  EXPECT_EQ(v.offset(1, 2, 3, 3), 105 + 2 * 7 + 3 * 21 + 3);
  EXPECT_EQ(v.offset(1, 2), 105 + 2 * 7);  // a leading sub-view
  EXPECT_EQ(v.as<const float>(), data.data());

  // Aggregate initialisation, as the launch structs are filled.
  const detail::StridedView<4, void*> w = {data.data(), 1, 2, 3, 4};
  EXPECT_EQ(w.offset(1, 1, 1, 1), 10);
  const auto f = w.typed<float>();
  EXPECT_EQ(f.data, data.data());
  EXPECT_EQ(f.offset(0, 0, 2, 0), 6);
  const auto moved = w.with_data(static_cast<const void*>(data.data() + 3));
  EXPECT_EQ(moved.data, data.data() + 3);
  EXPECT_EQ(moved.offset(0, 1), 2);
}

}  // namespace

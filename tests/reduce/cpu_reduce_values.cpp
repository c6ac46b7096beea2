// ReducePlan / ReduceToPlan on the CPU (Stream::cpu()) against hand-computed
// values: every kind, f32/f64/f16/bf16 and i32/i64 where allowed, single /
// multiple / all / negative axes, keepdim, strided and broadcast inputs,
// strided outputs, and the documented semantics (NaN, ties, empty
// reductions, small-n Var/Std, LogSumExp stability).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::cpu_forward;
using bt::cpu_forward_i64;
using bt::expect_ints;
using bt::expect_values;
using bt::make_desc;
using bt::ulp_rel;

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();
constexpr double Inf = std::numeric_limits<double>::infinity();

// x = [[1,2,3],[4,5,6]]
const std::vector<double> kX23 = {1, 2, 3, 4, 5, 6};
// x[2][2][3] = [[[3,9,1],[4,2,8]], [[7,0,5],[9,6,2]]]
const std::vector<double> kX223 = {3, 9, 1, 4, 2, 8, 7, 0, 5, 9, 6, 2};

std::vector<double> rounded(DType t, std::vector<double> v) {
  for (double& x : v) x = bt::round_to(t, x);
  return v;
}

class FpTypes : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(All, FpTypes, ::testing::Values(DType::F32, DType::F64, DType::F16, DType::BF16),
                         [](const auto& info) { return bt::tname(info.param); });

class IntTypes : public ::testing::TestWithParam<DType> {};
INSTANTIATE_TEST_SUITE_P(All, IntTypes, ::testing::Values(DType::I32, DType::I64),
                         [](const auto& info) { return bt::tname(info.param); });

}  // namespace

// ---------------------------------------------------------------------------
// Basic kinds on [2,3]
// ---------------------------------------------------------------------------
TEST_P(FpTypes, Sum) {
  const DType t = GetParam();
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}), kX23), {2}, {6, 15});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {0}), kX23), {3}, {5, 7, 9});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {}), kX23), {}, {21});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {0, 1}), kX23), {}, {21});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {-1}), kX23), {2}, {6, 15});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {-2}), kX23), {3}, {5, 7, 9});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {-1, -2}), kX23), {}, {21});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}, true), kX23), {2, 1}, {6, 15});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {0}, true), kX23), {1, 3}, {5, 7, 9});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {}, true), kX23), {1, 1}, {21});
  // Rank 1 and rank 0.
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {4}, {0}), {0.5, 0.25, -1, 2}), {}, {1.75});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {}, {}), {3}), {}, {3});
  // Output dtype is the input dtype.
  EXPECT_EQ(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}), kX23).dtype, t);
}

TEST_P(FpTypes, MeanMaxMinProd) {
  const DType t = GetParam();
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {2, 3}, {1}), kX23), {2}, {2, 5});
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {2, 3}, {0}), kX23), {3}, {2.5, 3.5, 4.5});
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {2, 3}, {}), kX23), {}, {3.5});
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {2, 3}, {-1}, true), kX23), {2, 1}, {2, 5});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2, 3}, {1}), kX23), {2}, {3, 6});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2, 3}, {0}), kX23), {3}, {4, 5, 6});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2, 3}, {}), kX23), {}, {6});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {2, 3}, {1}), kX23), {2}, {1, 4});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {2, 3}, {0}, true), kX23), {1, 3}, {1, 2, 3});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {2, 3}, {}), {5, -2, 3, 4, -7, 6}), {}, {-7});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, {2, 3}, {1}), kX23), {2}, {6, 120});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, {2, 3}, {0}), kX23), {3}, {4, 10, 18});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, {2, 3}, {}), kX23), {}, {720});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, {2, 3}, {1}), {1, -2, 0.5, -1, -2, -4}), {2}, {-1, -8});
}

TEST_P(FpTypes, Norm2AndLogSumExp) {
  const DType t = GetParam();
  const double tol = ulp_rel(t);
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, t, {2, 3}, {1}), kX23), {2},
                rounded(t, {std::sqrt(14.0), std::sqrt(77.0)}), tol);
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, t, {2, 3}, {0}), kX23), {3},
                rounded(t, {std::sqrt(17.0), std::sqrt(29.0), std::sqrt(45.0)}), tol);
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, t, {2, 3}, {}), kX23), {}, rounded(t, {std::sqrt(91.0)}), tol);
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, t, {2}, {0}), {3, -4}), {}, {5});
  const double e = std::exp(1.0);
  expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, t, {2, 3}, {1}), kX23), {2},
                rounded(t, {std::log(e + e * e + e * e * e), 6.0 + std::log(1.0 + 1.0 / e + 1.0 / (e * e))}), tol);
  expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, t, {2, 3}, {0}, true), kX23), {1, 3},
                rounded(t, {4 + std::log1p(std::exp(-3.0)), 5 + std::log1p(std::exp(-3.0)), 6 + std::log1p(std::exp(-3.0))}),
                tol);
  expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, t, {4}, {}), {0, 0, 0, 0}), {}, rounded(t, {std::log(4.0)}), tol);
}

TEST_P(FpTypes, VarStdWithCorrections) {
  const DType t = GetParam();
  const double tol = ulp_rel(t);
  struct Case { Dims axes; Dims out; std::vector<double> m2; double n; };
  // Sum of squared deviations per output, by hand.
  const Case cases[] = {
      {{1}, {2}, {2, 2}, 3},            // rows [1,2,3], [4,5,6]: mean 2 / 5
      {{0}, {3}, {4.5, 4.5, 4.5}, 2},   // columns [1,4], [2,5], [3,6]
      {{}, {}, {17.5}, 6},              // all: mean 3.5
  };
  for (const Case& c : cases) {
    for (int64_t corr : {0, 1, 2}) {
      SCOPED_TRACE("axes " + c.axes.to_string() + " correction " + std::to_string(corr));
      std::vector<double> var, sd;
      for (double m2 : c.m2) {
        const double div = std::max(0.0, c.n - static_cast<double>(corr));
        var.push_back(m2 / div);  // m2 > 0, div == 0 -> +inf
        sd.push_back(std::sqrt(m2 / div));
      }
      expect_values(cpu_forward(make_desc(ReduceKind::Var, t, {2, 3}, c.axes, false, corr), kX23), c.out, rounded(t, var), tol);
      expect_values(cpu_forward(make_desc(ReduceKind::Std, t, {2, 3}, c.axes, false, corr), kX23), c.out, rounded(t, sd), tol);
    }
  }
  // Spot values written out: rows, correction 1 -> 1; columns, correction 2 -> inf.
  expect_values(cpu_forward(make_desc(ReduceKind::Var, t, {2, 3}, {1}), kX23), {2}, {1, 1});
  expect_values(cpu_forward(make_desc(ReduceKind::Std, t, {2, 3}, {0}, false, 2), kX23), {3}, {Inf, Inf, Inf});
  expect_values(cpu_forward(make_desc(ReduceKind::Var, t, {2, 3}, {0}, true, 0), kX23), {1, 3}, {2.25, 2.25, 2.25});
  // Default correction is 1 (Bessel).
  EXPECT_EQ(ReduceDescriptor{}.correction, 1);
}

TEST_P(FpTypes, ArgMaxArgMin) {
  const DType t = GetParam();
  auto r = cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 3}, {1}), kX23);
  EXPECT_EQ(r.dtype, DType::I64);
  expect_ints(r, {2}, {2, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 3}, {0}), kX23), {3}, {1, 1, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {2, 3}, {0}, true), kX23), {1, 3}, {0, 0, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 3}, {}), kX23), {}, {5});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {2, 3}, {}), {5, -2, 3, 4, -7, 6}), {}, {4});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 3}, {1}), {5, -2, 3, 4, -7, 6}), {2}, {0, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {2, 3}, {-1}), {5, -2, 3, 4, -7, 6}), {2}, {1, 1});
}

// ---------------------------------------------------------------------------
// Multiple axes on [2,2,3]
// ---------------------------------------------------------------------------
TEST_P(FpTypes, MultiAxis) {
  const DType t = GetParam();
  const Dims s{2, 2, 3};
  for (const Dims& ax : {Dims{0, 2}, Dims{2, 0}, Dims{-1, -3}, Dims{0, -1}}) {
    SCOPED_TRACE("axes " + ax.to_string());
    expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, ax), kX223), {2}, {25, 31});
    expect_values(cpu_forward(make_desc(ReduceKind::Max, t, s, ax), kX223), {2}, {9, 9});
    expect_values(cpu_forward(make_desc(ReduceKind::Min, t, s, ax), kX223), {2}, {0, 2});
    expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, s, ax), kX223), {2}, rounded(t, {25.0 / 6, 31.0 / 6}), ulp_rel(t));
    // Reduced sub-space (i, k) linearised row-major in the axes' order.
    expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, ax), kX223), {2}, {1, 3});
    expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, ax), kX223), {2}, {4, 1});
    // Var: j=0 {3,9,1,7,0,5}: m2 = 165 - 625/6; j=1 {4,2,8,9,6,2}: m2 = 205 - 961/6.
    expect_values(cpu_forward(make_desc(ReduceKind::Var, t, s, ax), kX223), {2}, rounded(t, {365.0 / 30, 269.0 / 30}),
                  ulp_rel(t));
    expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, ax, true), kX223), {1, 2, 1}, {25, 31});
  }
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {1, 2}, true), kX223), {2, 1, 1}, {27, 29});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {1}), kX223), {2, 3}, {7, 11, 9, 16, 6, 7});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {0, 1}), kX223), {3}, {23, 17, 16});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {}), kX223), {}, {56});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {0, 1, 2}, true), kX223), {1, 1, 1}, {56});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, s, {0, 1}), kX223), {3}, {756, 0, 80});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {1, 2}), kX223), {2}, {1, 3});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {1, 2}), kX223), {2}, {2, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {}), kX223), {}, {1});  // 9 at 1 and 9: first
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {}), kX223), {}, {7});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {0, 1}, true), kX223), {1, 1, 3}, {3, 0, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {2}), kX223), {2, 2}, {1, 2, 0, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {-1}, true), kX223), {2, 2, 1}, {2, 1, 1, 2});
}

// ---------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------
TEST_P(IntTypes, AllIntegerKinds) {
  const DType t = GetParam();
  const Dims s{2, 2, 3};
  auto sum = cpu_forward(make_desc(ReduceKind::Sum, t, s, {0, 2}), kX223);
  EXPECT_EQ(sum.dtype, DType::I64);  // integer Sum -> I64
  expect_ints(sum, {2}, {25, 31});
  expect_ints(cpu_forward(make_desc(ReduceKind::Sum, t, s, {}), kX223), {}, {56});
  expect_ints(cpu_forward(make_desc(ReduceKind::Sum, t, s, {1}, true), kX223), {2, 1, 3}, {7, 11, 9, 16, 6, 7});
  auto prod = cpu_forward(make_desc(ReduceKind::Prod, t, s, {2}), kX223);
  EXPECT_EQ(prod.dtype, DType::I64);
  expect_ints(prod, {2, 2}, {27, 64, 0, 108});
  auto mx = cpu_forward(make_desc(ReduceKind::Max, t, s, {2}), kX223);
  EXPECT_EQ(mx.dtype, t);  // Max/Min keep the input dtype
  expect_ints(mx, {2, 2}, {9, 8, 7, 9});
  expect_ints(cpu_forward(make_desc(ReduceKind::Min, t, s, {2}), kX223), {2, 2}, {1, 2, 0, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::Min, t, s, {0, 2}), kX223), {2}, {0, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::Max, t, s, {-1, 0}, true), kX223), {1, 2, 1}, {9, 9});
  auto am = cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {2}), kX223);
  EXPECT_EQ(am.dtype, DType::I64);
  expect_ints(am, {2, 2}, {1, 2, 0, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {2}), kX223), {2, 2}, {2, 1, 1, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {0, 2}), kX223), {2}, {4, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {}), kX223), {}, {1});
  // Negative values.
  expect_ints(cpu_forward(make_desc(ReduceKind::Prod, t, {4}, {0}), {-3, 2, -5, 7}), {}, {210});
  expect_ints(cpu_forward(make_desc(ReduceKind::Min, t, {4}, {0}), {-3, 2, -5, 7}), {}, {-5});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {4}, {0}), {-3, 2, -5, -5}), {}, {2});
}

TEST(ReduceValuesInt, Int64Accumulation) {
  // i32 inputs accumulate in int64: no 32-bit overflow.
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Sum, DType::I32, {2}, {0}), {2147483647, 2147483647}), {}, {4294967294LL});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Sum, DType::I32, {2}, {0}), {-2147483647 - 1, -1}), {}, {-2147483649LL});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Prod, DType::I32, {3}, {0}), {100000, 100000, 100000}), {},
              {1000000000000000LL});
  // i64 values beyond 2^53 stay exact (no detour through double).
  const int64_t big = (int64_t{1} << 60);
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Sum, DType::I64, {2}, {0}), {big + 1, 2}), {}, {big + 3});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Max, DType::I64, {3}, {0}), {big, big + 1, big}), {}, {big + 1});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Min, DType::I64, {3}, {0}), {big + 1, big, big + 1}), {}, {big});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::ArgMax, DType::I64, {3}, {0}), {big, big + 1, big}), {}, {1});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::ArgMin, DType::I64, {3}, {0}), {big + 1, big + 2, big}), {}, {2});
  // Documented (docs/OPS.md): integer sums / products wrap modulo 2^64.
  const int64_t p62 = int64_t{1} << 62;
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Sum, DType::I64, {2}, {0}), {p62, p62}), {},
              {std::numeric_limits<int64_t>::min()});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Prod, DType::I64, {2}, {0}), {int64_t{1} << 32, int64_t{1} << 32}), {}, {0});
  expect_ints(cpu_forward_i64(make_desc(ReduceKind::Prod, DType::I64, {2}, {0}), {(int64_t{1} << 32) + 1, (int64_t{1} << 32) - 1}),
              {}, {-1});  // 2^64 - 1 wraps to -1
}

// ---------------------------------------------------------------------------
// Strided / broadcast inputs, strided outputs
// ---------------------------------------------------------------------------
TEST_P(FpTypes, StridedInputs) {
  const DType t = GetParam();
  const Dims s{2, 3};
  for (const bt::Layout& xl : {bt::transposed(s), bt::padded(s, 2), bt::every_other(s)}) {
    SCOPED_TRACE(bt::describe(xl));
    bt::HostBuffer x(t, xl.storage);
    x.poison();  // gaps hold NaN: reading one would show
    bt::scatter(x, xl, kX23);
    ASSERT_EQ(bt::gather(x, xl), kX23);
    expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {1}), x, xl), {2}, {6, 15});
    expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s, {0}), x, xl), {3}, {5, 7, 9});
    expect_values(cpu_forward(make_desc(ReduceKind::Max, t, s, {}), x, xl), {}, {6});
    expect_values(cpu_forward(make_desc(ReduceKind::Min, t, s, {1}), x, xl), {2}, {1, 4});
    expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, s, {1}), x, xl), {2}, {6, 120});
    expect_values(cpu_forward(make_desc(ReduceKind::Var, t, s, {1}), x, xl), {2}, {1, 1});
    expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, s, {0}), x, xl), {3}, {1, 1, 1});
    expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s, {}), x, xl), {}, {0});
  }
  // A 3-D permuted view: memory order (1, 2, 0).
  const Dims s3{2, 2, 3};
  const bt::Layout pl = bt::permuted(s3, {1, 2, 0});
  bt::HostBuffer x3(t, pl.storage);
  bt::scatter(x3, pl, kX223);
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s3, {0, 2}), x3, pl), {2}, {25, 31});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, s3, {0, 2}), x3, pl), {2}, {4, 1});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, s3, {1}), x3, pl), {2, 3}, {7, 11, 9, 16, 6, 7});
}

TEST_P(FpTypes, StridedOutputs) {
  const DType t = GetParam();
  const bt::HostBuffer x = bt::host_from(t, kX23);
  const bt::Layout xl = bt::contiguous({2, 3});
  // Every other element: gaps must keep their poison (checked in cpu_forward).
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}), x, xl, bt::every_other({2})), {2}, {6, 15});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2, 3}, {0}), x, xl, bt::every_other({3})), {3}, {4, 5, 6});
  // keepdim output [2,1]: the extent-1 axis may carry any stride.
  bt::Layout odd;
  odd.shape = {2, 1};
  odd.strides = {3, 7};
  odd.offset = 1;
  odd.storage = 8;
  odd.name = "odd-keepdim";
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {2, 3}, {1}, true), x, xl, odd), {2, 1}, {2, 5});
  // Transposed output of a [2,2,3] -> [2,3] reduction.
  const bt::HostBuffer x3 = bt::host_from(t, kX223);
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 2, 3}, {1}), x3, bt::contiguous({2, 2, 3}), bt::transposed({2, 3})),
                {2, 3}, {7, 11, 9, 16, 6, 7});
  auto arg = cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 2, 3}, {2}), x3, bt::contiguous({2, 2, 3}), bt::padded({2, 2}));
  expect_ints(arg, {2, 2}, {1, 2, 0, 0});
}

TEST(ReduceValuesInt, StridedOutputI64) {
  const bt::HostBuffer x = bt::host_from(DType::I32, kX223);
  auto r = cpu_forward(make_desc(ReduceKind::Sum, DType::I32, {2, 2, 3}, {1}), x, bt::transposed({2, 2, 3}), bt::every_other({2, 3}));
  // x was written contiguously but read through a transposed view: logical
  // x'[i][j][k] = storage[i + 2j + 4k].
  std::vector<int64_t> expect;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) expect.push_back(static_cast<int64_t>(kX223[static_cast<size_t>(i + 4 * k)] + kX223[static_cast<size_t>(i + 2 + 4 * k)]));
  expect_ints(r, {2, 3}, expect);
}

TEST_P(FpTypes, BroadcastInputs) {
  const DType t = GetParam();
  // x [3,4] with stride 0 on axis 0 over the storage [1,2,3,4].
  const bt::HostBuffer row = bt::host_from(t, {1, 2, 3, 4});
  bt::Layout bl;
  bl.shape = {3, 4};
  bl.strides = {0, 1};
  bl.storage = 4;
  bl.name = "broadcast-rows";
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {3, 4}, {0}), row, bl), {4}, {3, 6, 9, 12});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {3, 4}, {1}), row, bl), {3}, {10, 10, 10});
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, t, {3, 4}, {}), row, bl), {}, {2.5});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {3, 4}, {1}), row, bl), {3}, {4, 4, 4});
  expect_values(cpu_forward(make_desc(ReduceKind::Prod, t, {3, 4}, {0}), row, bl), {4}, {1, 8, 27, 64});
  expect_values(cpu_forward(make_desc(ReduceKind::Var, t, {3, 4}, {0}), row, bl), {4}, {0, 0, 0, 0});
  expect_values(cpu_forward(make_desc(ReduceKind::Std, t, {3, 4}, {0}, true, 0), row, bl), {1, 4}, {0, 0, 0, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {3, 4}, {0}), row, bl), {4}, {0, 0, 0, 0});  // ties: first
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {3, 4}, {}), row, bl), {}, {3});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {3, 4}, {1}), row, bl), {3}, {0, 0, 0});
  // Stride 0 on the inner axis: [3,4] over the storage [1,2,3].
  const bt::HostBuffer col = bt::host_from(t, {1, 2, 3});
  bt::Layout cl;
  cl.shape = {3, 4};
  cl.strides = {1, 0};
  cl.storage = 3;
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {3, 4}, {1}), col, cl), {3}, {4, 8, 12});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {3, 4}, {0}), col, cl), {4}, {6, 6, 6, 6});
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, t, {3, 4}, {1}), col, cl), {3}, {2, 4, 6});
  // A scalar broadcast to [2,3] (all strides 0).
  const bt::HostBuffer one = bt::host_from(t, {1.5});
  bt::Layout sl;
  sl.shape = {2, 3};
  sl.strides = {0, 0};
  sl.storage = 1;
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {}), one, sl), {}, {9});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}), one, sl), {2}, {4.5, 4.5});
}

// ---------------------------------------------------------------------------
// Semantics
// ---------------------------------------------------------------------------
TEST_P(FpTypes, NaNPropagation) {
  const DType t = GetParam();
  for (ReduceKind k : {ReduceKind::Max, ReduceKind::Min, ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Prod,
                       ReduceKind::Norm2, ReduceKind::LogSumExp, ReduceKind::Var, ReduceKind::Std}) {
    SCOPED_TRACE(bt::kname(k));
    expect_values(cpu_forward(make_desc(k, t, {3}, {0}), {1, NaN, 3}), {}, {NaN});
    expect_values(cpu_forward(make_desc(k, t, {3}, {0}), {NaN, 1, 3}), {}, {NaN});
    expect_values(cpu_forward(make_desc(k, t, {3}, {0}), {1, 3, NaN}), {}, {NaN});
  }
  // Row-wise: only the row with the NaN is NaN.
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2, 3}, {1}), {1, NaN, 3, 4, 5, 6}), {2}, {NaN, 6});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {2, 3}, {0}), {1, NaN, 3, 4, 5, -6}), {3}, {1, NaN, -6});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2}, {0}), {Inf, NaN}), {}, {NaN});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {2}, {0}), {-Inf, NaN}), {}, {NaN});
  expect_values(cpu_forward(make_desc(ReduceKind::Max, t, {2}, {0}), {-Inf, -Inf}), {}, {-Inf});
  expect_values(cpu_forward(make_desc(ReduceKind::Min, t, {3}, {0}), {Inf, -Inf, 2}), {}, {-Inf});
  // ArgMax / ArgMin: NaN is the extreme, the first NaN wins.
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {4}, {0}), {1, NaN, 5, NaN}), {}, {1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {4}, {0}), {Inf, 5, NaN, NaN}), {}, {2});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {3}, {0}), {1, NaN, -5}), {}, {1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {4}, {0}), {-Inf, 0, 2, NaN}), {}, {3});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2}, {0}), {NaN, NaN}), {}, {0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 3}, {1}), {1, NaN, 3, 4, 5, 6}), {2}, {1, 2});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {2, 3}, {0}), {1, NaN, 3, NaN, 5, -6}), {3}, {1, 0, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 2, 3}, {0, 2}), {1, 2, 3, 4, 5, 6, 7, NaN, 9, NaN, 11, NaN}),
              {2}, {4, 3});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {3}, {0}), {-Inf, -Inf, -Inf}), {}, {0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {3}, {0}), {Inf, -Inf, -Inf}), {}, {1});
}

TEST_P(FpTypes, TiesPickTheFirstIndex) {
  const DType t = GetParam();
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {4}, {0}), {5, 7, 7, 1}), {}, {1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {3}, {0}), {3, 1, 1}), {}, {1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {3}, {0}), {2, 2, 2}), {}, {0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {5}, {0}), {4, 0, 4, 0, 0}), {}, {1});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2}, {0}), {-0.0, 0.0}), {}, {0});  // -0 == +0
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2}, {0}), {0.0, -0.0}), {}, {0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMax, t, {2, 4}, {1}), {1, 3, 3, 3, 8, 2, 8, 8}), {2}, {1, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::ArgMin, t, {4, 2}, {0}), {3, 1, 2, 1, 2, 0, 5, 0}), {2}, {1, 2});
}

TEST_P(FpTypes, EmptyReductions) {
  const DType t = GetParam();
  const std::vector<double> none;
  struct Case { ReduceKind k; double v; };
  const Case cases[] = {{ReduceKind::Sum, 0},       {ReduceKind::Prod, 1}, {ReduceKind::Mean, NaN},
                        {ReduceKind::Norm2, 0},     {ReduceKind::LogSumExp, -Inf},
                        {ReduceKind::Var, NaN},     {ReduceKind::Std, NaN}};
  for (const Case& c : cases) {
    SCOPED_TRACE(bt::kname(c.k));
    expect_values(cpu_forward(make_desc(c.k, t, {0, 3}, {0}), none), {3}, {c.v, c.v, c.v});
    expect_values(cpu_forward(make_desc(c.k, t, {2, 0}, {1}), none), {2}, {c.v, c.v});
    expect_values(cpu_forward(make_desc(c.k, t, {2, 0}, {1}, true), none), {2, 1}, {c.v, c.v});
    expect_values(cpu_forward(make_desc(c.k, t, {0, 3}, {}), none), {}, {c.v});
    expect_values(cpu_forward(make_desc(c.k, t, {0}, {0}), none), {}, {c.v});
    expect_values(cpu_forward(make_desc(c.k, t, {2, 0, 3}, {1}), none), {2, 3}, std::vector<double>(6, c.v));
    for (int64_t corr : {0, 2}) expect_values(cpu_forward(make_desc(c.k, t, {0, 2}, {0}, false, corr), none), {2}, {c.v, c.v});
    // Empty output (the reduced extent is not zero): nothing to do.
    auto r = cpu_forward(make_desc(c.k, t, {0, 3}, {1}), none);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.shape, Dims{0});
  }
  // Max / Min / Arg* with an empty output but a non-empty reduced extent are fine.
  for (ReduceKind k : {ReduceKind::Max, ReduceKind::Min, ReduceKind::ArgMax, ReduceKind::ArgMin}) {
    auto r = cpu_forward(make_desc(k, t, {0, 3}, {1}), none);
    ASSERT_TRUE(r.st.is_ok()) << bt::kname(k) << ": " << r.st.to_string();
    EXPECT_EQ(r.shape, Dims{0});
  }
}

TEST_P(IntTypes, EmptyReductions) {
  const DType t = GetParam();
  expect_ints(cpu_forward(make_desc(ReduceKind::Sum, t, {0, 3}, {0}), {}), {3}, {0, 0, 0});
  expect_ints(cpu_forward(make_desc(ReduceKind::Prod, t, {0, 3}, {0}), {}), {3}, {1, 1, 1});
  expect_ints(cpu_forward(make_desc(ReduceKind::Sum, t, {4, 0}, {}), {}), {}, {0});
  expect_ints(cpu_forward(make_desc(ReduceKind::Prod, t, {4, 0}, {1}, true), {}), {4, 1}, {1, 1, 1, 1});
}

TEST_P(FpTypes, VarStdSmallN) {
  const DType t = GetParam();
  for (ReduceKind k : {ReduceKind::Var, ReduceKind::Std}) {
    SCOPED_TRACE(bt::kname(k));
    // n = 1, correction 1: 0 / 0 -> NaN (PyTorch).
    expect_values(cpu_forward(make_desc(k, t, {1}, {0}), {5}), {}, {NaN});
    expect_values(cpu_forward(make_desc(k, t, {3, 1}, {1}), {5, 6, 7}), {3}, {NaN, NaN, NaN});
    // n = 1, correction 0: 0.
    expect_values(cpu_forward(make_desc(k, t, {1}, {0}, false, 0), {5}), {}, {0});
    // n = 2, correction 2: m2 = 0.5 > 0 over 0 -> inf.
    expect_values(cpu_forward(make_desc(k, t, {2}, {0}, false, 2), {1, 2}), {}, {Inf});
    // n = 1 < correction 2: divisor max(0, -1) = 0, m2 = 0 -> NaN.
    expect_values(cpu_forward(make_desc(k, t, {1}, {0}, false, 2), {3}), {}, {NaN});
    // Constant data, n == correction: 0 / 0 -> NaN.
    expect_values(cpu_forward(make_desc(k, t, {2}, {0}, false, 2), {5, 5}), {}, {NaN});
    // n = 3, correction 3: inf.
    expect_values(cpu_forward(make_desc(k, t, {3}, {0}, false, 3), {1, 2, 3}), {}, {Inf});
    // Large correction, more data than correction: m2 / (n - c).
    expect_values(cpu_forward(make_desc(k, t, {4}, {0}, false, 3), {1, 2, 3, 6}), {},
                  {k == ReduceKind::Var ? 14.0 : bt::round_to(t, std::sqrt(14.0))}, ulp_rel(t));
  }
}

TEST(ReduceValuesSemantics, LogSumExpStability) {
  const double l2 = std::log(2.0);
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(bt::tname(t));
    const double tol = ulp_rel(t);
    auto lse = [&](std::vector<double> x) { return cpu_forward(make_desc(ReduceKind::LogSumExp, t, {static_cast<int64_t>(x.size())}, {0}), x); };
    expect_values(lse({1000, 1000}), {}, {bt::round_to(t, 1000 + l2)}, tol);
    expect_values(lse({-1000, -1000}), {}, {bt::round_to(t, -1000 + l2)}, tol);
    expect_values(lse({89, 89}), {}, {bt::round_to(t, 89 + l2)}, tol);  // exp(89) overflows f32
    expect_values(lse({1000, 0}), {}, {1000});
    expect_values(lse({-Inf, 0}), {}, {0});
    expect_values(lse({-Inf, -Inf}), {}, {-Inf});
    expect_values(lse({Inf, 1}), {}, {Inf});
    expect_values(lse({Inf, -Inf}), {}, {Inf});
    expect_values(lse({Inf, Inf}), {}, {Inf});
    expect_values(lse({-Inf, NaN}), {}, {NaN});
    expect_values(lse({Inf, NaN}), {}, {NaN});
    expect_values(lse({-Inf, std::log(3.0), -Inf}), {}, {bt::round_to(t, std::log(3.0))}, tol);
    // Rows: one stable, one all -inf.
    expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, t, {2, 2}, {1}), {1000, 1000, -Inf, -Inf}), {2},
                  {bt::round_to(t, 1000 + l2), -Inf}, tol);
  }
  expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, DType::BF16, {2}, {0}), {100, 100}), {},
                {bt::round_to(DType::BF16, 100 + l2)}, ulp_rel(DType::BF16));
  expect_values(cpu_forward(make_desc(ReduceKind::LogSumExp, DType::F16, {2}, {0}), {11, 11}), {},
                {bt::round_to(DType::F16, 11 + l2)}, ulp_rel(DType::F16));
}

TEST(ReduceValuesSemantics, WideAccumulationOnTheCpu) {
  // The CPU reference accumulates in double: squares that overflow the input
  // dtype still give the right norm.
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, DType::F32, {2}, {0}), {3e30, 4e30}), {},
                {bt::round_to(DType::F32, 5e30)}, ulp_rel(DType::F32));
  expect_values(cpu_forward(make_desc(ReduceKind::Norm2, DType::F16, {2}, {0}), {300, 400}), {}, {500});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, DType::F16, {3}, {0}), {60000, 60000, -60000}), {}, {60000});
  expect_values(cpu_forward(make_desc(ReduceKind::Mean, DType::F16, {2}, {0}), {60000, 60000}), {}, {60000});
  // ... and rounds once at the end: 2049 is not a half; 2048 + 1 + 1 = 2050 is.
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, DType::F16, {3}, {0}), {2048, 1, 1}), {}, {2050});
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, DType::BF16, {3}, {0}), {256, 1, 1}), {}, {258});
  // Output rounding overflows to inf when the result does not fit the dtype.
  expect_values(cpu_forward(make_desc(ReduceKind::Sum, DType::F16, {2}, {0}), {60000, 60000}), {}, {Inf});
}

// ---------------------------------------------------------------------------
// ReduceToPlan
// ---------------------------------------------------------------------------
namespace {
struct ToRun {
  Status st;
  std::vector<double> y;
};
ToRun reduce_to(DType t, const Dims& shape, const Dims& target, const bt::HostBuffer& x, const bt::Layout& xl,
                const std::optional<bt::Layout>& yl_opt = std::nullopt) {
  ToRun r;
  ReduceToDescriptor d;
  d.dtype = t;
  d.shape = shape;
  d.target = target;
  auto plan = ReduceToPlan::select(Stream::cpu(), d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  EXPECT_EQ(plan->workspace_size(), 0u);
  const bt::Layout yl = yl_opt ? *yl_opt : bt::contiguous(target);
  bt::HostBuffer y(t, yl.storage);
  y.poison();
  r.st = plan->run(Stream::cpu(), Workspace::none(), ReduceToArgs{bt::view(x, xl), bt::view_mut(y, yl)});
  if (!r.st) return r;
  const std::string gaps = bt::check_gaps(y, yl, bt::poison_byte(t));
  EXPECT_TRUE(gaps.empty()) << gaps;
  r.y = bt::gather(y, yl);
  return r;
}
}  // namespace

TEST_P(FpTypes, ReduceTo) {
  const DType t = GetParam();
  const Dims s{4, 3, 5};
  std::vector<double> xv(60);
  for (int i = 0; i < 60; ++i) xv[static_cast<size_t>(i)] = i;  // x[i][j][k] = 15i + 5j + k
  const bt::HostBuffer x = bt::host_from(t, xv);
  const bt::Layout xl = bt::contiguous(s);
  const double tol = ulp_rel(t);  // sums up to 1770 are exact in f32/f64, rounded once in f16/bf16
  auto check = [&](const Dims& target, const std::vector<double>& expect, const ToRun& r) {
    SCOPED_TRACE("target " + target.to_string());
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    ASSERT_EQ(r.y.size(), expect.size());
    for (size_t i = 0; i < expect.size(); ++i) EXPECT_NEAR(r.y[i], bt::round_to(t, expect[i]), tol * std::fabs(expect[i])) << i;
  };
  // [3,1]: sum over axes 0 and 2: 490 + 100 j.
  check({3, 1}, {490, 590, 690}, reduce_to(t, s, {3, 1}, x, xl));
  check({1}, {1770}, reduce_to(t, s, {1}, x, xl));
  check({}, {1770}, reduce_to(t, s, {}, x, xl));
  check({1, 1, 1}, {1770}, reduce_to(t, s, {1, 1, 1}, x, xl));
  check(s, rounded(t, xv), reduce_to(t, s, s, x, xl));  // identity
  // [3,5]: sum over axis 0: 90 + 20 j + 4 k.
  std::vector<double> e35;
  for (int j = 0; j < 3; ++j)
    for (int k = 0; k < 5; ++k) e35.push_back(90 + 20 * j + 4 * k);
  check({3, 5}, e35, reduce_to(t, s, {3, 5}, x, xl));
  // [4,1,5]: sum over axis 1: 45 i + 15 + 3 k.
  std::vector<double> e415;
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 5; ++k) e415.push_back(45 * i + 15 + 3 * k);
  check({4, 1, 5}, e415, reduce_to(t, s, {4, 1, 5}, x, xl));
  // [5]: sum over axes 0, 1: 12 * (30 + ... ) = sum_i sum_j (15 i + 5 j + k) = 270 + 12 k? -> 90*3 + 20*... by hand:
  // sum_i 15 i * 3 = 270, sum_j 5 j * 4 = 60, 12 k  => 330 + 12 k.
  check({5}, {330, 342, 354, 366, 378}, reduce_to(t, s, {5}, x, xl));
  // Strided input and strided output.
  const bt::Layout tl = bt::transposed(s);
  bt::HostBuffer xt(t, tl.storage);
  bt::scatter(xt, tl, xv);
  check({3, 1}, {490, 590, 690}, reduce_to(t, s, {3, 1}, xt, tl, bt::every_other({3, 1})));
  check(s, rounded(t, xv), reduce_to(t, s, s, xt, tl, bt::padded(s)));
  check({}, {1770}, reduce_to(t, s, {}, xt, tl, bt::every_other({})));
  // Incompatible target.
  auto bad = reduce_to(t, s, {2, 5}, x, xl);
  EXPECT_EQ(bad.st.code(), StatusCode::InvalidProblem);
  EXPECT_NE(bad.st.message().find("not broadcast-compatible"), std::string::npos) << bad.st.message();
}

// ---------------------------------------------------------------------------
// Metamorphic: strided / broadcast views give exactly what a contiguous copy
// of the same logical values gives (the CPU reference sums in a fixed order).
// ---------------------------------------------------------------------------
TEST(ReduceValuesLayouts, StridedViewsMatchContiguousCopies) {
  const Dims s{3, 4, 5};
  const Dims axes_list[] = {{2}, {1}, {0}, {0, 2}, {1, 2}, {}, {-1, 0}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    for (ReduceKind k : bt::kAllKinds) {
      if (!bt::is_fp(t) && !bt::int_capable(k)) continue;
      for (const bt::Layout& xl : {bt::transposed(s), bt::padded(s), bt::every_other(s), bt::broadcast(s, 1),
                                   bt::permuted(s, {2, 0, 1})}) {
        for (size_t ai = 0; ai < std::size(axes_list); ++ai) {
          const Dims& ax = axes_list[ai];
          const bool keep = ai % 2 == 1;
          SCOPED_TRACE(bt::tname(t) + " " + bt::kname(k) + " " + bt::describe(xl) + " axes " + ax.to_string());
          const uint64_t seed = bt::fresh_seed();
          bt::Rng rng(seed);
          bt::HostBuffer xs(t, xl.storage);
          xs.poison();
          const bool fp = bt::is_fp(t);
          const auto logical = k == ReduceKind::Prod && fp ? bt::random_values(t, xl.numel(), rng, 0.5, 1.5)
                               : fp                        ? bt::random_values(t, xl.numel(), rng, -3, 3)
                                                           : bt::random_values(t, xl.numel(), rng, -9, 9);
          bt::scatter(xs, xl, logical);
          const auto actual = bt::gather(xs, xl);  // broadcast: the last write won
          const bt::HostBuffer xc = bt::host_from(t, actual);
          const auto d = make_desc(k, t, s, ax, keep);
          auto a = cpu_forward(d, xs, xl, bt::every_other(ReducePlan::select(Stream::cpu(), d)->output_shape()));
          auto b = cpu_forward(d, xc, bt::contiguous(s));
          ASSERT_TRUE(a.st.is_ok() && b.st.is_ok()) << a.st.to_string() << " / " << b.st.to_string();
          ASSERT_EQ(a.shape, b.shape);
          if (bt::is_fp(a.dtype)) {
            for (size_t i = 0; i < b.y.size(); ++i) ASSERT_TRUE(bt::same_value(a.y[i], b.y[i])) << i << ": " << a.y[i] << " vs " << b.y[i] << " seed " << seed;
          } else {
            ASSERT_EQ(a.yi, b.yi) << "seed " << seed;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// An independent, naive oracle on random shapes / axes (f64): group the input
// elements by output index in row-major order and apply the textbook formula.
// ---------------------------------------------------------------------------
namespace {
double naive_kind(ReduceKind k, const std::vector<double>& g, int64_t corr) {
  const double n = static_cast<double>(g.size());
  double s = 0, sq = 0, p = 1, mx = -Inf, mn = Inf;
  int64_t amax = 0, amin = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    s += g[i];
    sq += g[i] * g[i];
    p *= g[i];
    if (g[i] > mx) { mx = g[i]; amax = static_cast<int64_t>(i); }
    if (g[i] < mn) { mn = g[i]; amin = static_cast<int64_t>(i); }
  }
  switch (k) {
    case ReduceKind::Sum: return s;
    case ReduceKind::Mean: return s / n;
    case ReduceKind::Max: return mx;
    case ReduceKind::Min: return mn;
    case ReduceKind::Prod: return p;
    case ReduceKind::Norm2: return std::sqrt(sq);
    case ReduceKind::LogSumExp: {
      double e = 0;
      for (double v : g) e += std::exp(v - mx);
      return mx + std::log(e);
    }
    case ReduceKind::Var:
    case ReduceKind::Std: {
      const double mean = s / n;
      double m2 = 0;
      for (double v : g) m2 += (v - mean) * (v - mean);
      const double var = m2 / (n - static_cast<double>(corr));
      return k == ReduceKind::Var ? var : std::sqrt(var);
    }
    case ReduceKind::ArgMax: return static_cast<double>(amax);
    case ReduceKind::ArgMin: return static_cast<double>(amin);
  }
  return NaN;
}
}  // namespace

TEST(ReduceValuesLayouts, RandomShapesAgainstNaiveOracle) {
  bt::Rng rng(bt::fresh_seed());
  for (int iter = 0; iter < 60; ++iter) {
    const int rank = static_cast<int>(bt::uniform_int(rng, 1, 5));
    Dims shape;
    for (int i = 0; i < rank; ++i) shape.push_back(bt::uniform_int(rng, 1, 4));
    // Random axis subset (possibly empty = all), random sign / order.
    Dims axes;
    std::vector<int> order(static_cast<size_t>(rank));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int a : order)
      if (bt::uniform_int(rng, 0, 1)) axes.push_back(bt::uniform_int(rng, 0, 1) ? a : a - rank);
    uint32_t mask = 0;
    if (axes.rank == 0) mask = (1u << rank) - 1;
    for (int64_t a : axes) mask |= 1u << (a < 0 ? a + rank : a);
    const bool keep = bt::uniform_int(rng, 0, 1);
    const int64_t n = bt::numel(shape);
    // Distinct values so Max/Min/Arg* are unambiguous.
    auto x = bt::permutation_values(DType::F64, n, rng, 0.37);
    Dims out_shape;
    for (int i = 0; i < rank; ++i) {
      if (mask & (1u << i)) { if (keep) out_shape.push_back(1); }
      else out_shape.push_back(shape[i]);
    }
    // Group by output index.
    std::map<int64_t, std::vector<double>> groups;
    for (int64_t i = 0; i < n; ++i) {
      const Dims idx = bt::unravel(i, shape);
      int64_t o = 0;
      for (int a = 0; a < rank; ++a)
        if (!(mask & (1u << a))) o = o * shape[a] + idx[a];
      groups[o].push_back(x[static_cast<size_t>(i)]);
    }
    for (ReduceKind k : bt::kAllKinds) {
      const int64_t corr = k == ReduceKind::Var || k == ReduceKind::Std ? bt::uniform_int(rng, 0, 1) : 1;
      if ((k == ReduceKind::Var || k == ReduceKind::Std) && static_cast<int64_t>(groups.begin()->second.size()) <= corr) continue;
      SCOPED_TRACE("iter " + std::to_string(iter) + " " + bt::kname(k) + " shape " + shape.to_string() + " axes " +
                   axes.to_string() + (keep ? " keepdim" : ""));
      auto r = cpu_forward(make_desc(k, DType::F64, shape, axes, keep, corr), x);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      ASSERT_EQ(r.shape, out_shape);
      ASSERT_EQ(r.y.size(), groups.size());
      std::vector<double> expect;
      for (const auto& [o, g] : groups) expect.push_back(naive_kind(k, g, corr));
      if (bt::is_arg(k)) {
        std::vector<int64_t> ei(expect.begin(), expect.end());
        EXPECT_EQ(r.yi, ei);
      } else {
        EXPECT_LE(bt::rel_error(r.y, expect), 1e-13) << bt::describe_mismatch(r.y, expect);
      }
    }
  }
}

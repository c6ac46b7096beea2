// The dtype layer: the table (names, sizes, categories, predicates), the host
// types (fp8 conversions bit by bit, complex layout), dispatch (visit_dtype),
// the dtype sets today's plans accept, promotion (promote_types / result_type /
// can_cast against PyTorch's documented behaviour) and DLPack codes of the new
// dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/dlpack.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using Cat = DTypeCategory;

// Written from the formats' definitions, independently of the X-macro.
struct Expected {
  DType t;
  const char* name;
  size_t bytes;
  Cat cat;
  bool is_signed;
};
const Expected kExpected[] = {
    {DType::Bool, "bool", 1, Cat::Bool, false},        {DType::I8, "i8", 1, Cat::Integer, true},
    {DType::U8, "u8", 1, Cat::Integer, false},         {DType::I16, "i16", 2, Cat::Integer, true},
    {DType::I32, "i32", 4, Cat::Integer, true},        {DType::I64, "i64", 8, Cat::Integer, true},
    {DType::F16, "f16", 2, Cat::Floating, true},       {DType::BF16, "bf16", 2, Cat::Floating, true},
    {DType::F32, "f32", 4, Cat::Floating, true},       {DType::F64, "f64", 8, Cat::Floating, true},
    {DType::F8E4M3, "f8e4m3", 1, Cat::Floating, true}, {DType::F8E5M2, "f8e5m2", 1, Cat::Floating, true},
    {DType::C64, "c64", 8, Cat::Complex, true},        {DType::C128, "c128", 16, Cat::Complex, true},
};

constexpr DType kInvalid = static_cast<DType>(200);

}  // namespace

// ---------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------
TEST(DTypeTable, NamesSizesCategoriesInOrder) {
  ASSERT_EQ(kDTypeCount, std::size(kExpected));
  for (size_t i = 0; i < kDTypeCount; ++i) {
    const Expected& e = kExpected[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(kAllDTypes[i], e.t);
    EXPECT_EQ(static_cast<size_t>(e.t), i);  // the enum order the brief fixes
    EXPECT_EQ(dtype_name(e.t), e.name);
    EXPECT_EQ(dtype_size(e.t), e.bytes);
    EXPECT_EQ(dtype_category(e.t), e.cat);
    EXPECT_EQ(is_signed(e.t), e.is_signed);
    EXPECT_TRUE(dtype_is_valid(e.t));
    ASSERT_TRUE(dtype_from_name(e.name).has_value());
    EXPECT_EQ(*dtype_from_name(e.name), e.t);
  }
  EXPECT_FALSE(dtype_from_name("float32").has_value());
  EXPECT_FALSE(dtype_from_name("F32").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(dtype_from_name("?").has_value());
}

TEST(DTypeTable, PredicatesHaveTorchMeanings) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const bool fp = e.cat == Cat::Floating;
    EXPECT_EQ(is_floating_point(e.t), fp);
    EXPECT_EQ(is_complex(e.t), e.cat == Cat::Complex);
    EXPECT_EQ(is_integral(e.t), e.cat == Cat::Integer);
    EXPECT_EQ(is_integral(e.t, /*include_bool=*/true), e.cat == Cat::Integer || e.cat == Cat::Bool);
    EXPECT_EQ(is_float8(e.t), e.t == DType::F8E4M3 || e.t == DType::F8E5M2);
  }
  // The fixed set today's floating plans accept: the fp8 types are floating
  // point but not in it.
  const auto plan_set = [](DType t) { return dtype_in(t, {DType::F32, DType::F64, DType::F16, DType::BF16}); };
  int n = 0;
  for (DType t : kAllDTypes) n += plan_set(t);
  EXPECT_EQ(n, 4);
  EXPECT_FALSE(plan_set(DType::F8E4M3));
  EXPECT_FALSE(plan_set(DType::C64));
  EXPECT_FALSE(plan_set(DType::I16));
  EXPECT_FALSE(dtype_in(DType::F32, {}));
}

TEST(DTypeTable, InvalidValueIsUnknownNotOutOfBounds) {
  EXPECT_FALSE(dtype_is_valid(kInvalid));
  EXPECT_FALSE(dtype_is_valid(static_cast<DType>(kDTypeCount)));
  EXPECT_EQ(dtype_size(kInvalid), 0u);
  EXPECT_EQ(dtype_name(kInvalid), "?");
  EXPECT_FALSE(is_floating_point(kInvalid));
  EXPECT_FALSE(is_complex(kInvalid));
  EXPECT_FALSE(is_integral(kInvalid, true));
  EXPECT_FALSE(is_signed(kInvalid));
}

TEST(DTypeTable, HostTypesMapBothWays) {
  static_assert(std::is_same_v<host_type_t<DType::Bool>, bool>);
  static_assert(std::is_same_v<host_type_t<DType::U8>, uint8_t>);
  static_assert(std::is_same_v<host_type_t<DType::I16>, int16_t>);
  static_assert(std::is_same_v<host_type_t<DType::F16>, half>);
  static_assert(std::is_same_v<host_type_t<DType::BF16>, bfloat16>);
  static_assert(std::is_same_v<host_type_t<DType::F8E4M3>, float8_e4m3>);
  static_assert(std::is_same_v<host_type_t<DType::F8E5M2>, float8_e5m2>);
  static_assert(std::is_same_v<host_type_t<DType::C64>, std::complex<float>>);
  static_assert(std::is_same_v<host_type_t<DType::C128>, std::complex<double>>);
  static_assert(dtype_of_v<float> == DType::F32);
  static_assert(dtype_of_v<int64_t> == DType::I64);
  static_assert(dtype_of_v<complex128> == DType::C128);
  static_assert(dtype_of_v<float8_e5m2> == DType::F8E5M2);
  // Every dtype: the host type has the table's size and maps back.
  int checked = 0;
  dispatch_dtype<AllTypes>(DType::Bool, [](auto) {}, [] {});  // compiles for the whole list
  for (DType t : kAllDTypes) {
    dispatch_dtype<AllTypes>(
        t,
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          EXPECT_EQ(sizeof(T), dtype_size(t)) << dtype_name(t);
          EXPECT_EQ(dtype_of_v<T>, t) << dtype_name(t);
          ++checked;
        },
        [] { ADD_FAILURE() << "a table dtype is missing from AllTypes"; });
  }
  EXPECT_EQ(checked, static_cast<int>(kDTypeCount));
}

TEST(DTypeTable, ComplexLayoutIsRealThenImaginary) {
  // The layout of cuFloatComplex / cuDoubleComplex (float2 / double2).
  const complex64 c(1.5f, -2.25f);
  float parts[2];
  std::memcpy(parts, &c, sizeof(c));
  EXPECT_EQ(parts[0], 1.5f);
  EXPECT_EQ(parts[1], -2.25f);
  const complex128 z(3.0, 0.125);
  double dparts[2];
  std::memcpy(dparts, &z, sizeof(z));
  EXPECT_EQ(dparts[0], 3.0);
  EXPECT_EQ(dparts[1], 0.125);
}

// ---------------------------------------------------------------------------
// fp8 host types
// ---------------------------------------------------------------------------
namespace {
uint8_t e4(double v) { return float8_e4m3(v).bits; }
uint8_t e5(double v) { return float8_e5m2(v).bits; }
double d4(uint8_t b) { return static_cast<double>(float8_e4m3::from_bits(b)); }
double d5(uint8_t b) { return static_cast<double>(float8_e5m2::from_bits(b)); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Value of a code from the format definition: sign, exponent field e,
// mantissa m; normal (1 + m/2^M) * 2^(e - bias), subnormal m/2^M * 2^(1 - bias).
double reference_value(uint8_t code, int E, int M) {
  const int bias = (1 << (E - 1)) - 1;
  const int e = (code >> M) & ((1 << E) - 1);
  const int m = code & ((1 << M) - 1);
  const double frac = static_cast<double>(m) / static_cast<double>(1 << M);
  const double mag = e == 0 ? frac * std::pow(2.0, 1 - bias) : (1.0 + frac) * std::pow(2.0, e - bias);
  return (code & 0x80) ? -mag : mag;
}

// Round-to-nearest-even by brute force over every finite non-negative code up
// to `max_code`: the nearest value, a tie to the code with an even last bit.
uint8_t brute_force_rne(double x, uint8_t max_code, double (*decode)(uint8_t)) {
  uint8_t best = 0;
  double best_err = kInf;
  for (int c = 0; c <= max_code; ++c) {
    const double err = std::fabs(decode(static_cast<uint8_t>(c)) - x);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = static_cast<uint8_t>(c);
      best_err = err;
    }
  }
  return best;
}
}  // namespace

TEST(Float8, E4M3DecodesEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    SCOPED_TRACE(c);
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(d4(code)));
      EXPECT_EQ(std::signbit(d4(code)), (code & 0x80) != 0);
    } else {
      EXPECT_EQ(d4(code), reference_value(code, 4, 3));
      EXPECT_EQ(static_cast<float>(float8_e4m3::from_bits(code)), static_cast<float>(d4(code)));
    }
    EXPECT_EQ(e4(d4(code)), code);  // every code, NaNs included, round-trips
  }
  EXPECT_EQ(d4(0x7e), 448.0);
  EXPECT_EQ(d4(0x38), 1.0);
  EXPECT_EQ(d4(0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(d4(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(d4(0x07), 7 * std::ldexp(1.0, -9));
}

TEST(Float8, E5M2DecodesEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    SCOPED_TRACE(c);
    const uint8_t mag = code & 0x7f;
    if (mag == 0x7c) {
      EXPECT_EQ(d5(code), (code & 0x80) ? -kInf : kInf);
    } else if (mag > 0x7c) {
      EXPECT_TRUE(std::isnan(d5(code)));
      EXPECT_EQ(e5(d5(code)), (code & 0x80) | 0x7f);  // any NaN encodes as 0x7f with its sign
      continue;
    } else {
      EXPECT_EQ(d5(code), reference_value(code, 5, 2));
    }
    EXPECT_EQ(e5(d5(code)), code);
  }
  EXPECT_EQ(d5(0x7b), 57344.0);
  EXPECT_EQ(d5(0x3c), 1.0);
  EXPECT_EQ(d5(0x04), std::ldexp(1.0, -14));
  EXPECT_EQ(d5(0x01), std::ldexp(1.0, -16));
}

TEST(Float8, E4M3ExactBitPatterns) {
  EXPECT_EQ(e4(0.0), 0x00);
  EXPECT_EQ(e4(-0.0), 0x80);
  EXPECT_EQ(e4(1.0), 0x38);
  EXPECT_EQ(e4(-2.0), 0xc0);
  EXPECT_EQ(e4(448.0), 0x7e);  // max normal
  EXPECT_EQ(e4(-448.0), 0xfe);
  EXPECT_EQ(e4(std::ldexp(1.0, -6)), 0x08);      // min normal
  EXPECT_EQ(e4(std::ldexp(1.0, -9)), 0x01);      // min subnormal
  EXPECT_EQ(e4(7 * std::ldexp(1.0, -9)), 0x07);  // max subnormal
  // Ties to even: halfway between 1 and 1.125 -> 1 (0x38, even); between
  // 1.125 and 1.25 -> 1.25 (0x3a); between 1.875 and 2 -> 2 (carry into the exponent).
  EXPECT_EQ(e4(1.0625), 0x38);
  EXPECT_EQ(e4(1.1875), 0x3a);
  EXPECT_EQ(e4(1.9375), 0x40);
  EXPECT_EQ(e4(std::nextafter(1.0625, 2.0)), 0x39);
  // Subnormal ties: half the smallest subnormal -> 0; 1.5 and 2.5 units -> 2.
  EXPECT_EQ(e4(std::ldexp(1.0, -10)), 0x00);
  EXPECT_EQ(e4(std::nextafter(std::ldexp(1.0, -10), 1.0)), 0x01);
  EXPECT_EQ(e4(3 * std::ldexp(1.0, -10)), 0x02);
  EXPECT_EQ(e4(5 * std::ldexp(1.0, -10)), 0x02);
  EXPECT_EQ(e4(7.5 * std::ldexp(1.0, -9)), 0x08);  // max subnormal + half unit -> min normal (even)
  EXPECT_EQ(e4(1e-40), 0x00);
  EXPECT_EQ(e4(-1e-300), 0x80);
  // Overflow, PyTorch's Float8_e4m3fn: 464 is the tie between 448 and the
  // (NaN) code above it and rounds to 448; anything larger is NaN.
  EXPECT_EQ(e4(464.0), 0x7e);
  EXPECT_EQ(e4(std::nextafter(464.0, 1e9)), 0x7f);
  EXPECT_EQ(e4(480.0), 0x7f);
  EXPECT_EQ(e4(1e6), 0x7f);
  EXPECT_EQ(e4(-1e6), 0xff);
  EXPECT_EQ(e4(1e300), 0x7f);
  EXPECT_EQ(e4(kInf), 0x7f);
  EXPECT_EQ(e4(-kInf), 0xff);
  EXPECT_EQ(e4(kNaN), 0x7f);
  EXPECT_EQ(e4(-kNaN), 0xff);
  EXPECT_EQ(float8_e4m3(std::numeric_limits<float>::infinity()).bits, 0x7f);
}

TEST(Float8, E5M2ExactBitPatterns) {
  EXPECT_EQ(e5(0.0), 0x00);
  EXPECT_EQ(e5(-0.0), 0x80);
  EXPECT_EQ(e5(1.0), 0x3c);
  EXPECT_EQ(e5(57344.0), 0x7b);  // max normal
  EXPECT_EQ(e5(std::ldexp(1.0, -14)), 0x04);  // min normal
  EXPECT_EQ(e5(std::ldexp(1.0, -16)), 0x01);  // min subnormal
  EXPECT_EQ(e5(std::ldexp(1.0, -17)), 0x00);  // tie -> 0
  EXPECT_EQ(e5(3 * std::ldexp(1.0, -17)), 0x02);
  EXPECT_EQ(e5(1.125), 0x3c);  // tie between 1 and 1.25 -> 1
  EXPECT_EQ(e5(1.375), 0x3e);  // tie between 1.25 and 1.5 -> 1.5
  // Overflow, PyTorch's Float8_e5m2: from the tie 61440 up -> infinity.
  EXPECT_EQ(e5(std::nextafter(61440.0, 0.0)), 0x7b);
  EXPECT_EQ(e5(61440.0), 0x7c);
  EXPECT_EQ(e5(-61440.0), 0xfc);
  EXPECT_EQ(e5(1e30), 0x7c);
  EXPECT_EQ(e5(kInf), 0x7c);
  EXPECT_EQ(e5(-kInf), 0xfc);
  EXPECT_EQ(e5(kNaN), 0x7f);
  EXPECT_EQ(e5(-kNaN), 0xff);
}

TEST(Float8, RoundToNearestEvenMatchesBruteForce) {
  bt::Rng rng(bt::fresh_seed());
  std::uniform_real_distribution<double> frac(1.0, 2.0);
  std::uniform_int_distribution<int> exp4(-12, 8), exp5(-19, 15), sign(0, 1);
  std::vector<double> xs;
  for (int i = 0; i < 4000; ++i) xs.push_back(std::ldexp(frac(rng), exp4(rng)));
  for (int i = 0; i < 4000; ++i) xs.push_back(std::ldexp(frac(rng), exp5(rng)));
  // Every midpoint between neighbouring codes, and its two double neighbours.
  for (auto [decode, max_code] : {std::pair{&d4, 0x7e}, std::pair{&d5, 0x7b}})
    for (int c = 0; c < max_code; ++c) {
      const double mid = (decode(static_cast<uint8_t>(c)) + decode(static_cast<uint8_t>(c + 1))) / 2;
      xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInf)});
    }
  int checked4 = 0, checked5 = 0;
  for (double x : xs) {
    const double v = sign(rng) ? -x : x;
    const uint8_t s = v < 0 ? 0x80 : 0x00;
    if (x <= 448.0) {
      ASSERT_EQ(e4(v), s | brute_force_rne(x, 0x7e, &d4)) << "e4m3 of " << v;
      ++checked4;
    }
    if (x <= 57344.0) {
      ASSERT_EQ(e5(v), s | brute_force_rne(x, 0x7b, &d5)) << "e5m2 of " << v;
      ++checked5;
    }
    // float and double constructors agree when the value is a float.
    const float f = static_cast<float>(v);
    ASSERT_EQ(float8_e4m3(f).bits, e4(static_cast<double>(f)));
    ASSERT_EQ(float8_e5m2(f).bits, e5(static_cast<double>(f)));
  }
  EXPECT_GT(checked4, 2000);
  EXPECT_GT(checked5, 2000);
}

TEST(Float8, DoubleRoundsOnceNotThroughFloat) {
  // 1.0625 + 2^-40 is just above the e4m3 tie between 1 and 1.125; as a float
  // it would become the tie itself and round down.
  const double x = 1.0625 + std::ldexp(1.0, -40);
  EXPECT_EQ(float8_e4m3(x).bits, 0x39);
  EXPECT_EQ(float8_e4m3(static_cast<float>(x)).bits, 0x38);
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------
TEST(VisitDType, CallsTheFunctorWithTheTypeOfTheDType) {
  std::vector<DType> seen;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const Status st = visit_dtype<FloatingTypes>(t, "TestPlan", [&](auto tag) {
      using T = typename decltype(tag)::type;
      static_assert(std::is_same_v<T, host_type_t<decltype(tag)::value>>);
      EXPECT_EQ(sizeof(T), dtype_size(t));
      seen.push_back(decltype(tag)::value);
    });
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  EXPECT_EQ(seen, (std::vector<DType>{DType::F32, DType::F64, DType::F16, DType::BF16}));
}

TEST(VisitDType, OtherDTypesAreUnsupportedNamingPlanAndList) {
  for (DType t : kAllDTypes) {
    if (FloatingTypes::contains(t)) continue;
    bool called = false;
    const Status st = visit_dtype<FloatingTypes>(t, "TestPlan", [&](auto) { called = true; });
    EXPECT_FALSE(called);
    EXPECT_EQ(st.code(), StatusCode::Unsupported);
    EXPECT_EQ(st.message(), "TestPlan: dtype " + std::string(dtype_name(t)) + " is not supported (f32, f64, f16, bf16)");
  }
  const Status bad = visit_dtype<AllTypes>(kInvalid, "TestPlan", [](auto) {});
  EXPECT_EQ(bad.code(), StatusCode::Unsupported);
  EXPECT_NE(bad.message().find("TestPlan: dtype ?"), std::string::npos) << bad.message();
}

TEST(VisitDType, ForwardsResultsAndStatuses) {
  auto size_of = [](DType t) {
    return visit_dtype<IntegralTypes>(t, "SizePlan", [](auto tag) -> Result<size_t> {
      return sizeof(typename decltype(tag)::type);
    });
  };
  ASSERT_TRUE(size_of(DType::I16).is_ok());
  EXPECT_EQ(*size_of(DType::I16), 2u);
  EXPECT_EQ(*size_of(DType::U8), 1u);
  EXPECT_EQ(size_of(DType::Bool).status().message(), "SizePlan: dtype bool is not supported (i8, u8, i16, i32, i64)");
  const Status inner = visit_dtype<ComplexTypes>(DType::C128, "P", [](auto) {
    return Status(StatusCode::InvalidProblem, "P: from the functor");
  });
  EXPECT_EQ(inner.code(), StatusCode::InvalidProblem);
  EXPECT_EQ(inner.message(), "P: from the functor");
}

TEST(VisitDType, Lists) {
  EXPECT_EQ(AllTypes::size, kDTypeCount);
  EXPECT_EQ(FloatingTypes::names(), "f32, f64, f16, bf16");
  EXPECT_EQ(Float8Types::names(), "f8e4m3, f8e5m2");
  EXPECT_EQ(ComplexTypes::names(), "c64, c128");
  std::string all;
  for (DType t : kAllDTypes) all += (all.empty() ? "" : ", ") + std::string(dtype_name(t));
  EXPECT_EQ(AllTypes::names(), all);
  for (DType t : kAllDTypes) {
    EXPECT_TRUE(AllTypes::contains(t));
    EXPECT_EQ(IntegralTypes::contains(t), is_integral(t));
    EXPECT_EQ(ComplexTypes::contains(t), is_complex(t));
    EXPECT_EQ(Float8Types::contains(t), is_float8(t));
  }
  EXPECT_FALSE(AllTypes::contains(kInvalid));
  const int r = dispatch_dtype<Float8Types>(DType::F32, [](auto) { return 1; }, [] { return -1; });
  EXPECT_EQ(r, -1);
}

// ---------------------------------------------------------------------------
// Today's plans accept exactly their dtype sets: every other dtype of the
// table (the new i16, fp8 and complex ones included) is Unsupported.
// ---------------------------------------------------------------------------
namespace {
template <class Plan, class Desc>
void expect_dtype_set(const char* plan, Desc d, std::initializer_list<DType> accepted) {
  for (DType t : kAllDTypes) {
    d.dtype = t;
    const auto r = Plan::select(Stream::cpu(), d);
    SCOPED_TRACE(std::string(plan) + " " + std::string(dtype_name(t)));
    if (dtype_in(t, accepted)) {
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_EQ(r.status().code(), StatusCode::Unsupported) << r.status().to_string();
      EXPECT_EQ(r.status().message().rfind(std::string(plan) + ": ", 0), 0u) << r.status().message();
      EXPECT_NE(r.status().message().find("dtype " + std::string(dtype_name(t))), std::string::npos)
          << r.status().message();
    }
  }
}
}  // namespace

TEST(DTypePlans, EachPlanAcceptsExactlyItsSet) {
  const std::initializer_list<DType> fp = {DType::F32, DType::F64, DType::F16, DType::BF16};
  ReduceDescriptor red;
  red.shape = {2, 3};
  red.axes = {1};
  expect_dtype_set<ReducePlan>("ReducePlan", red, {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64});
  red.kind = ReduceKind::Mean;
  expect_dtype_set<ReducePlan>("ReducePlan", red, fp);
  red.kind = ReduceKind::Sum;
  expect_dtype_set<ReduceBackwardPlan>("ReduceBackwardPlan", red, fp);
  ReduceToDescriptor to;
  to.shape = {2, 3};
  to.target = {3};
  expect_dtype_set<ReduceToPlan>("ReduceToPlan", to, fp);
  RopeDescriptor rope;
  rope.seq_len = 4;
  rope.head_dim = 8;
  expect_dtype_set<RopePlan>("RopePlan", rope, fp);
  expect_dtype_set<RopeBackwardPlan>("RopeBackwardPlan", rope, fp);
  SdpaDescriptor sdpa;
  sdpa.q_len = sdpa.kv_len = 2;
  sdpa.head_dim = 4;
  expect_dtype_set<SdpaPlan>("SdpaPlan", sdpa, fp);
  expect_dtype_set<SdpaBackwardPlan>("SdpaBackwardPlan", sdpa, fp);
  FlashSdpaDescriptor flash;
  flash.q_len = flash.kv_len = 2;
  flash.head_dim = 32;
  expect_dtype_set<FlashSdpaPlan>("FlashSdpaPlan", flash, fp);
  expect_dtype_set<FlashSdpaBackwardPlan>("FlashSdpaBackwardPlan", flash, fp);
}

// ---------------------------------------------------------------------------
// Promotion, from PyTorch's documented behaviour (torch.promote_types,
// torch.result_type, the "type promotion" section of the tensor attributes
// page) and its promotion rules for each dtype pair.
// ---------------------------------------------------------------------------
namespace {
struct PromoteCase {
  DType a, b, want;
};
const PromoteCase kPromote[] = {
    // The docs' examples.
    {DType::I32, DType::F32, DType::F32},
    {DType::U8, DType::I64, DType::I64},
    // Integers: the wider; u8 with a signed type needs a wider signed one.
    {DType::I8, DType::U8, DType::I16},
    {DType::U8, DType::I16, DType::I16},
    {DType::U8, DType::I32, DType::I32},
    {DType::I8, DType::I16, DType::I16},
    {DType::I16, DType::I32, DType::I32},
    {DType::I8, DType::I64, DType::I64},
    // Bool promotes to anything.
    {DType::Bool, DType::U8, DType::U8},
    {DType::Bool, DType::I8, DType::I8},
    {DType::Bool, DType::F16, DType::F16},
    {DType::Bool, DType::C128, DType::C128},
    // Floating: the wider; f16 and bf16 meet in f32.
    {DType::F16, DType::BF16, DType::F32},
    {DType::F16, DType::F32, DType::F32},
    {DType::BF16, DType::F32, DType::F32},
    {DType::BF16, DType::F64, DType::F64},
    {DType::F32, DType::F64, DType::F64},
    // Integer with floating: the floating type, however narrow.
    {DType::I64, DType::F16, DType::F16},
    {DType::U8, DType::BF16, DType::BF16},
    {DType::I32, DType::F64, DType::F64},
    // Complex: wide enough for the floating operand.
    {DType::C64, DType::F64, DType::C128},
    {DType::C64, DType::F32, DType::C64},
    {DType::C64, DType::F16, DType::C64},
    {DType::C64, DType::BF16, DType::C64},
    {DType::C128, DType::F32, DType::C128},
    {DType::C64, DType::C128, DType::C128},
    {DType::I64, DType::C64, DType::C64},
    {DType::U8, DType::C128, DType::C128},
};
}  // namespace

TEST(Promotion, PromoteTypesTable) {
  for (const PromoteCase& c : kPromote) {
    for (auto [x, y] : {std::pair{c.a, c.b}, std::pair{c.b, c.a}}) {
      const Result<DType> r = promote_types(x, y);
      ASSERT_TRUE(r.is_ok()) << dtype_name(x) << " + " << dtype_name(y) << ": " << r.status().to_string();
      EXPECT_EQ(*r, c.want) << dtype_name(x) << " + " << dtype_name(y) << " gave " << dtype_name(*r);
    }
  }
  for (DType t : kAllDTypes) {
    ASSERT_TRUE(promote_types(t, t).is_ok()) << dtype_name(t);
    EXPECT_EQ(*promote_types(t, t), t);
    if (!is_float8(t)) {
      EXPECT_EQ(*promote_types(DType::Bool, t), t);
    }
  }
}

TEST(Promotion, Float8PromotesOnlyWithItself) {
  for (DType f8 : {DType::F8E4M3, DType::F8E5M2})
    for (DType t : kAllDTypes) {
      if (t == f8) continue;
      for (auto [x, y] : {std::pair{f8, t}, std::pair{t, f8}}) {
        const Result<DType> r = promote_types(x, y, "AddPlan");
        ASSERT_FALSE(r.is_ok()) << dtype_name(x) << " + " << dtype_name(y);
        EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
        EXPECT_EQ(r.status().message().rfind("AddPlan: ", 0), 0u) << r.status().message();
        EXPECT_NE(r.status().message().find("float8"), std::string::npos) << r.status().message();
      }
    }
}

TEST(Promotion, EveryPairIsSymmetricAndNeverLowersACategory) {
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) {
      const Result<DType> ab = promote_types(a, b), ba = promote_types(b, a);
      ASSERT_EQ(ab.is_ok(), ba.is_ok()) << dtype_name(a) << ", " << dtype_name(b);
      if (!ab.is_ok()) continue;
      EXPECT_EQ(*ab, *ba) << dtype_name(a) << ", " << dtype_name(b);
      EXPECT_EQ(dtype_category(*ab), std::max(dtype_category(a), dtype_category(b)));
      EXPECT_TRUE(can_cast(a, *ab) && can_cast(b, *ab));
    }
  EXPECT_EQ(promote_types(kInvalid, DType::F32).status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(promote_types(DType::F32, kInvalid).status().code(), StatusCode::InvalidProblem);
}

namespace {
using Op = ResultTypeOperand;
Op T(DType t) { return Op::tensor(t); }
Op Z(DType t) { return Op::zero_dim(t); }
const Op kBoolScalar = Op::scalar(Cat::Bool);
const Op kIntScalar = Op::scalar(Cat::Integer);
const Op kFloatScalar = Op::scalar(Cat::Floating);
const Op kComplexScalar = Op::scalar(Cat::Complex);

struct ResultCase {
  std::vector<Op> ops;
  DType want;
  const char* what;
};
}  // namespace

TEST(Promotion, ResultTypeTable) {
  const std::vector<ResultCase> cases = {
      // torch.result_type's examples.
      {{T(DType::I32), kFloatScalar}, DType::F32, "int tensor + 1.0"},
      {{T(DType::U8), Z(DType::I64)}, DType::U8, "uint8 tensor + tensor(1)"},
      // The type promotion page's examples.
      {{kIntScalar, kIntScalar}, DType::I64, "add(5, 5)"},
      {{T(DType::I32), kIntScalar}, DType::I32, "int_tensor + 5"},
      {{T(DType::I32), Z(DType::I64)}, DType::I32, "int_tensor + long_zerodim"},
      {{T(DType::I64), T(DType::I32)}, DType::I64, "long_tensor + int_tensor"},
      {{T(DType::Bool), T(DType::I64)}, DType::I64, "bool_tensor + long_tensor"},
      {{T(DType::Bool), T(DType::U8)}, DType::U8, "bool_tensor + uint_tensor"},
      {{T(DType::F32), T(DType::F64)}, DType::F64, "float_tensor + double_tensor"},
      {{T(DType::C64), T(DType::C128)}, DType::C128, "complex_float_tensor + complex_double_tensor"},
      {{T(DType::Bool), T(DType::I32)}, DType::I32, "bool_tensor + int_tensor"},
      {{T(DType::I64), T(DType::F32)}, DType::F32, "add(long_tensor, float_tensor)"},
      // A lower-priority operand never widens within its category...
      {{T(DType::F16), kFloatScalar}, DType::F16, "half tensor + 2.5"},
      {{T(DType::BF16), Z(DType::F64)}, DType::BF16, "bf16 tensor + f64 rank-0"},
      {{T(DType::I8), Z(DType::I64)}, DType::I8, "i8 tensor + i64 rank-0"},
      {{T(DType::U8), kBoolScalar}, DType::U8, "u8 tensor + True"},
      {{T(DType::C64), Z(DType::F64)}, DType::C64, "c64 tensor + f64 rank-0"},
      {{T(DType::C64), kFloatScalar}, DType::C64, "c64 tensor + 2.5"},
      // ...but a higher category counts: a scalar with its default dtype, a
      // rank-0 tensor with its own.
      {{T(DType::I8), kFloatScalar}, DType::F32, "i8 tensor + 2.5"},
      {{T(DType::I64), kFloatScalar}, DType::F32, "i64 tensor + 2.5"},
      {{T(DType::I8), Z(DType::F64)}, DType::F64, "i8 tensor + f64 rank-0"},
      {{T(DType::Bool), kIntScalar}, DType::I64, "bool tensor + 5"},
      {{T(DType::Bool), kFloatScalar}, DType::F32, "bool tensor + 2.5"},
      {{T(DType::Bool), Z(DType::I8)}, DType::I8, "bool tensor + i8 rank-0"},
      {{T(DType::Bool), kBoolScalar}, DType::Bool, "bool tensor + True"},
      // Complex over floating: the complex type of the tensors' precision.
      {{T(DType::F64), kComplexScalar}, DType::C128, "f64 tensor * 1j"},
      {{T(DType::F32), kComplexScalar}, DType::C64, "f32 tensor * 1j"},
      {{T(DType::BF16), kComplexScalar}, DType::C64, "bf16 tensor * 1j"},
      {{T(DType::F16), kComplexScalar}, DType::C64, "f16 tensor * 1j (PyTorch: complex32)"},
      {{T(DType::F32), Z(DType::C128)}, DType::C64, "f32 tensor + c128 rank-0"},
      {{T(DType::I32), Z(DType::C128)}, DType::C128, "i32 tensor + c128 rank-0"},
      {{T(DType::I32), kComplexScalar}, DType::C64, "i32 tensor * 1j"},
      // No dimensioned tensor: rank-0 tensors over scalars.
      {{Z(DType::I32), kIntScalar}, DType::I32, "i32 rank-0 + 5"},
      {{Z(DType::I32), kFloatScalar}, DType::F32, "i32 rank-0 + 2.5"},
      {{Z(DType::F64), kComplexScalar}, DType::C128, "f64 rank-0 * 1j"},
      {{Z(DType::F16), Z(DType::BF16)}, DType::F32, "f16 rank-0 + bf16 rank-0"},
      {{kFloatScalar, kIntScalar}, DType::F32, "2.5 + 5"},
      {{kComplexScalar, kFloatScalar}, DType::C64, "1j + 2.5"},
      {{kBoolScalar}, DType::Bool, "True"},
      // All three groups.
      {{T(DType::I32), Z(DType::F16), kFloatScalar}, DType::F16, "i32 tensor + f16 rank-0 + 2.5"},
      {{T(DType::I32), Z(DType::I64), kFloatScalar}, DType::F32, "i32 tensor + i64 rank-0 + 2.5"},
      {{T(DType::U8), T(DType::I8), kFloatScalar}, DType::F32, "u8 + i8 tensors + 2.5"},
      {{T(DType::U8), T(DType::I8), kIntScalar}, DType::I16, "u8 + i8 tensors + 5"},
      // A scalar contributes its category's default whatever dtype it is given as.
      {{T(DType::I32), Op{Op::Kind::Scalar, DType::F64}}, DType::F32, "i32 tensor + double scalar"},
      {{T(DType::Bool), Op{Op::Kind::Scalar, DType::I8}}, DType::I64, "bool tensor + int scalar"},
      // fp8: a same-or-lower category operand does not count, so no promotion happens.
      {{T(DType::F8E4M3), kFloatScalar}, DType::F8E4M3, "f8e4m3 tensor * 2.0"},
      {{T(DType::F8E5M2), Z(DType::F32)}, DType::F8E5M2, "f8e5m2 tensor + f32 rank-0"},
      {{T(DType::F8E4M3), kIntScalar}, DType::F8E4M3, "f8e4m3 tensor + 1"},
  };
  for (const ResultCase& c : cases) {
    const Result<DType> r = result_type(std::span<const Op>(c.ops));
    ASSERT_TRUE(r.is_ok()) << c.what << ": " << r.status().to_string();
    EXPECT_EQ(*r, c.want) << c.what << " gave " << dtype_name(*r);
  }
}

TEST(Promotion, ResultTypeErrors) {
  const std::vector<std::vector<Op>> f8_errors = {
      {T(DType::I32), Z(DType::F8E5M2)},
      {T(DType::F8E4M3), T(DType::F16)},
      {T(DType::F8E4M3), T(DType::F8E5M2)},
      {T(DType::F8E4M3), kComplexScalar},
      {Z(DType::F8E4M3), Z(DType::F32)},
  };
  for (const auto& ops : f8_errors) {
    const Result<DType> r = result_type(std::span<const Op>(ops), "MulPlan");
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(r.status().message().rfind("MulPlan: ", 0), 0u) << r.status().message();
  }
  const Result<DType> empty = result_type({}, "MulPlan");
  EXPECT_EQ(empty.status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(empty.status().message().rfind("MulPlan: ", 0), 0u);
  EXPECT_EQ(result_type({T(DType::F32), T(kInvalid)}).status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(result_type({Op{Op::Kind::Scalar, kInvalid}}).status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(result_type({Op{static_cast<Op::Kind>(9), DType::F32}}).status().code(), StatusCode::InvalidProblem);
}

TEST(Promotion, CanCastIsSameKind) {
  EXPECT_TRUE(can_cast(DType::F64, DType::F32));
  EXPECT_TRUE(can_cast(DType::I64, DType::I8));
  EXPECT_TRUE(can_cast(DType::I32, DType::F16));
  EXPECT_TRUE(can_cast(DType::Bool, DType::F8E4M3));
  EXPECT_TRUE(can_cast(DType::F16, DType::C64));
  EXPECT_FALSE(can_cast(DType::F32, DType::I32));
  EXPECT_FALSE(can_cast(DType::I64, DType::Bool));
  EXPECT_FALSE(can_cast(DType::F32, DType::Bool));
  EXPECT_FALSE(can_cast(DType::C64, DType::F64));
  EXPECT_FALSE(can_cast(kInvalid, DType::F64));
}

// ---------------------------------------------------------------------------
// Test-support element access and DLPack for the new dtypes
// ---------------------------------------------------------------------------
TEST(DTypeElements, HostBufferRoundsIntoNewDTypes) {
  bt::HostBuffer f8(DType::F8E4M3, 4);
  f8.set(0, 448.0);
  f8.set(1, 1000.0);
  f8.set(2, 1.0625);
  f8.set(3, -0.0);
  EXPECT_EQ(f8.get(0), 448.0);
  EXPECT_TRUE(std::isnan(f8.get(1)));
  EXPECT_EQ(f8.get(2), 1.0);
  EXPECT_EQ(static_cast<const uint8_t*>(f8.data())[3], 0x80);
  bt::HostBuffer e5(DType::F8E5M2, 1);
  e5.set(0, 1e9);
  EXPECT_EQ(e5.get(0), bt::kInf);
  bt::HostBuffer i16(DType::I16, 3);
  i16.set(0, 40000.0);
  i16.set(1, -2.5);
  i16.set_i(2, -1234);
  EXPECT_EQ(i16.get_i(0), 32767);
  EXPECT_EQ(i16.get_i(1), -3);
  EXPECT_EQ(i16.get(2), -1234.0);
  EXPECT_EQ(bt::round_to(DType::I16, -40000.0), -32768.0);
  bt::HostBuffer c(DType::C64, 1);
  c.set(0, 2.5);
  EXPECT_EQ(c.get(0), 2.5);
  EXPECT_EQ(static_cast<const complex64*>(c.data())[0], complex64(2.5f, 0.0f));
  EXPECT_EQ(bt::round_to(DType::C64, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(bt::poison_byte(DType::C128), 0xff);  // NaN components
  EXPECT_EQ(bt::poison_byte(DType::F8E5M2), 0xff);
}

#if BARACUDA_HAS_DLPACK
TEST(DLPack, NewDTypes) {
  std::vector<double> buf(16);
  const auto round_trip = [&](DType dt) -> Result<TensorRef> {
    const TensorRef v = TensorRef::contiguous(buf.data(), dt, Device::cpu(), Dims{2, 2});
    DLTensor t{};
    int64_t shape[8], strides[8];
    BARACUDA_RETURN_IF_ERROR(to_dlpack(v, &t, shape, strides));
    EXPECT_EQ(t.dtype.bits, dtype_size(dt) * 8);
    EXPECT_EQ(t.dtype.lanes, 1);
    return from_dlpack(t);
  };
  for (DType dt : {DType::I16, DType::C64, DType::C128}) {
    auto back = round_trip(dt);
    ASSERT_TRUE(back.is_ok()) << dtype_name(dt) << ": " << back.status().to_string();
    EXPECT_EQ(back->dtype, dt);
  }
  DLTensor t{};
  int64_t shape[2], strides[2];
  ASSERT_TRUE(to_dlpack(TensorRef::contiguous(buf.data(), DType::C64, Device::cpu(), Dims{2, 2}), &t, shape, strides).is_ok());
  EXPECT_EQ(t.dtype.code, kDLComplex);
  ASSERT_TRUE(to_dlpack(TensorRef::contiguous(buf.data(), DType::I16, Device::cpu(), Dims{2, 2}), &t, shape, strides).is_ok());
  EXPECT_EQ(t.dtype.code, kDLInt);
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
  constexpr bool kHasBool = true;
  constexpr bool kHasFp8 = DLPACK_MAJOR_VERSION > 1 || DLPACK_MINOR_VERSION >= 1;
#elif defined(DLPACK_VERSION) && DLPACK_VERSION >= 80
  constexpr bool kHasBool = true;
  constexpr bool kHasFp8 = false;
#else
  constexpr bool kHasBool = false;
  constexpr bool kHasFp8 = false;
#endif
  EXPECT_EQ(to_dlpack(TensorRef::contiguous(buf.data(), kInvalid, Device::cpu(), Dims{2}), &t, shape, strides).code(),
            StatusCode::InvalidProblem);
  // Before DLPack 0.8 bool travels as uint8 and comes back as u8.
  auto b = round_trip(DType::Bool);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->dtype, kHasBool ? DType::Bool : DType::U8);
  for (DType dt : {DType::F8E4M3, DType::F8E5M2}) {
    auto f8 = round_trip(dt);
    if (kHasFp8) {
      ASSERT_TRUE(f8.is_ok()) << f8.status().to_string();
      EXPECT_EQ(f8->dtype, dt);
    } else {
      EXPECT_EQ(f8.status().code(), StatusCode::Unsupported);
      EXPECT_NE(f8.status().message().find(std::string(dtype_name(dt))), std::string::npos) << f8.status().message();
    }
  }
}
#endif

// RandpermPlan / MultinomialPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message;
//   * the stream layout from philox_block by hand (randperm keys, multinomial
//     uniforms and exponential keys), so the layout cannot drift;
//   * randperm: a permutation for n in {0, 1, 2, 3, 1000, 100003} in every
//     dtype, uniformity (chi-square of the position of element 0 over seeds),
//     offsets give different permutations, strided out (gaps untouched);
//   * multinomial: frequencies against the probabilities (chi-square) with and
//     without replacement (the second draw's law too), zero weights never
//     chosen, distinct samples without replacement, num_samples == C gives a
//     permutation, every probs dtype, I32 out, strided probs and out, large C
//     (several scan chunks), invalid rows (InvalidProblem naming the row,
//     nothing written), zero-size problems;
//   * device_offset: the tensor's offset is used and incremented, also for an
//     empty out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/philox.hpp"
#include "baracuda/ops/random_sampling.hpp"
#include "core/exact_math.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/sampling_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

bool is_permutation_of_n(const std::vector<int64_t>& v) {
  std::vector<char> seen(v.size(), 0);
  for (int64_t x : v) {
    if (x < 0 || x >= static_cast<int64_t>(v.size()) || seen[static_cast<size_t>(x)]) return false;
    seen[static_cast<size_t>(x)] = 1;
  }
  return true;
}

// ---- RandpermPlan ----------------------------------------------------------------------
TEST(RandpermCpu, DescriptorRules) {
  auto expect = [](const RandpermDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(RandpermPlan::select(kCpu, d).status(), code, "RandpermPlan: " + what);
  };
  expect(bt::randperm_desc(4, DType::U8), StatusCode::Unsupported, "dtype");
  expect(bt::randperm_desc(4, static_cast<DType>(77)), StatusCode::Unsupported, "dtype 77 (not a dtype)");
  expect(bt::randperm_desc(-1), StatusCode::InvalidProblem, "n -1 must be non-negative");
  expect(bt::randperm_desc(2049, DType::F16), StatusCode::InvalidProblem, "n 2049 is too large for dtype f16");
  expect(bt::randperm_desc(257, DType::BF16), StatusCode::InvalidProblem, "n 257 is too large for dtype bf16");
  expect(bt::randperm_desc((int64_t{1} << 24) + 1, DType::F32), StatusCode::InvalidProblem, "n 16777217 is too large");
  expect(bt::randperm_desc((int64_t{1} << 31) + 1, DType::I32), StatusCode::InvalidProblem, "n 2147483649 is too large");
  for (const auto& d : {bt::randperm_desc(2048, DType::F16), bt::randperm_desc(256, DType::BF16),
                        bt::randperm_desc(int64_t{1} << 31, DType::I32)}) {
    auto p = RandpermPlan::select(kCpu, d);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  }
  auto p = RandpermPlan::select(kCpu, bt::randperm_desc(5));
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->out_shape(), (Dims{5}));
  EXPECT_EQ(p->sku().op, "random.randperm");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(RandpermPlan::select(kCpu, bt::randperm_desc(0))->sku().variant, "empty");
  EXPECT_EQ(RandpermPlan::select(kCpu, bt::randperm_desc(0, DType::I64, true))->sku().variant, "reference");
}

TEST(RandpermCpu, ArgumentRules) {
  auto plan = RandpermPlan::select(kCpu, bt::randperm_desc(4)).value();
  std::vector<int64_t> out(8, 0), off(2, 0);
  RandpermArgs a;
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 8);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.offset = TensorMut::contiguous(off.data(), Device::cpu(), {1}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem,
                   "RandpermPlan: offset is given but descriptor.device_offset is false");
  a.offset = TensorMut();
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {3}, 8);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "RandpermPlan: out shape [3] must be [4]");
  auto dev = RandpermPlan::select(kCpu, bt::randperm_desc(4, DType::I64, true)).value();
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 8);
  BT_EXPECT_STATUS(dev.can_implement(a), StatusCode::InvalidProblem, "RandpermPlan: offset is missing");
  std::vector<int32_t> off32(2, 0);
  a.offset = TensorMut::contiguous(off32.data(), Device::cpu(), {1}, 2);
  BT_EXPECT_STATUS(dev.can_implement(a), StatusCode::InvalidProblem, "RandpermPlan: offset dtype i32 must be i64");
  a.offset = TensorMut::contiguous(out.data() + 2, Device::cpu(), {1}, 1);
  BT_EXPECT_STATUS(dev.can_implement(a), StatusCode::InvalidProblem, "RandpermPlan: ");  // overlaps out
  EXPECT_EQ(RandpermPlan().run(kCpu, Workspace::none(), {}).code(), StatusCode::InvalidProblem);
}

// The layout by hand: key_i = words 0 | 1 << 32 of philox_block(seed, offset, i),
// stable sort by key.
TEST(RandpermCpu, KnownAnswerFromTheLayout) {
  for (const RandomSeed seed : {RandomSeed{0, 0}, RandomSeed{42, 7}, RandomSeed{0x123456789abcdefull, 1ull << 40}}) {
    const int64_t n = 37;
    std::vector<std::pair<uint64_t, int64_t>> kv;
    for (int64_t i = 0; i < n; ++i) {
      const PhiloxWords w = philox_block(seed.seed, seed.offset, static_cast<uint64_t>(i));
      kv.push_back({(uint64_t{w.w[1]} << 32) | w.w[0], i});
    }
    std::sort(kv.begin(), kv.end());  // keys distinct here; ties would sort by i
    std::vector<int64_t> want;
    for (const auto& p : kv) want.push_back(p.second);
    const auto r = bt::run_randperm(kCpu, bt::randperm_desc(n), seed);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.values, want) << seed.seed << " " << seed.offset;
  }
}

TEST(RandpermCpu, PermutationsInEveryDtype) {
  for (const int64_t n : {0, 1, 2, 3, 1000, 100003})
    for (const DType t : {DType::I64, DType::I32, DType::F64, DType::F32, DType::F16, DType::BF16}) {
      if ((t == DType::F16 && n > 2048) || (t == DType::BF16 && n > 256)) continue;
      const auto r = bt::run_randperm(kCpu, bt::randperm_desc(n, t), RandomSeed{7, 3});
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      ASSERT_EQ(static_cast<int64_t>(r.values.size()), n);
      EXPECT_TRUE(is_permutation_of_n(r.values)) << n << " " << dtype_name(t);
      if (t != DType::I64) {
        const auto ref = bt::run_randperm(kCpu, bt::randperm_desc(n), RandomSeed{7, 3});
        EXPECT_EQ(r.values, ref.values) << "the same permutation in every dtype: " << dtype_name(t);
      }
    }
}

TEST(RandpermCpu, PositionOfElementZeroIsUniform) {
  const int64_t n = 8, draws = 8000;
  std::vector<double> count(n, 0.0);
  for (int64_t k = 0; k < draws; ++k) {
    const auto r = bt::run_randperm(kCpu, bt::randperm_desc(n), RandomSeed{1000 + static_cast<uint64_t>(k), 0});
    ASSERT_TRUE(r.st.is_ok());
    count[static_cast<size_t>(std::find(r.values.begin(), r.values.end(), 0) - r.values.begin())] += 1;
  }
  const double chi = bt::chi_square(count, std::vector<double>(n, static_cast<double>(draws) / n));
  EXPECT_LT(chi, 29.0) << "7 degrees of freedom: p < 1e-4";  // deterministic seeds: no flakiness
  // And over consecutive offsets of one seed.
  std::fill(count.begin(), count.end(), 0.0);
  for (int64_t k = 0; k < draws; ++k) {
    const auto r = bt::run_randperm(kCpu, bt::randperm_desc(n), RandomSeed{99, static_cast<uint64_t>(k)});
    count[static_cast<size_t>(std::find(r.values.begin(), r.values.end(), 0) - r.values.begin())] += 1;
  }
  EXPECT_LT(bt::chi_square(count, std::vector<double>(n, static_cast<double>(draws) / n)), 29.0);
}

TEST(RandpermCpu, OffsetsAndSeedsDiffer) {
  const auto a = bt::run_randperm(kCpu, bt::randperm_desc(1000), RandomSeed{5, 0});
  const auto b = bt::run_randperm(kCpu, bt::randperm_desc(1000), RandomSeed{5, 1});
  const auto c = bt::run_randperm(kCpu, bt::randperm_desc(1000), RandomSeed{6, 0});
  const auto a2 = bt::run_randperm(kCpu, bt::randperm_desc(1000), RandomSeed{5, 0});
  EXPECT_NE(a.values, b.values);
  EXPECT_NE(a.values, c.values);
  EXPECT_EQ(a.values, a2.values);
}

TEST(RandpermCpu, DeviceOffsetIsReadAndIncremented) {
  for (const int64_t n : {0, 1, 100}) {
    const auto dev = bt::run_randperm(kCpu, bt::randperm_desc(n, DType::I64, true), RandomSeed{11, 41});
    ASSERT_TRUE(dev.st.is_ok()) << dev.st.to_string();
    EXPECT_EQ(dev.offset_after, 42) << "each run consumes one offset (n = " << n << ")";
    const auto host = bt::run_randperm(kCpu, bt::randperm_desc(n), RandomSeed{11, 41});
    EXPECT_EQ(dev.values, host.values);
  }
  // Wraps at 2^64.
  const auto w = bt::run_randperm(kCpu, bt::randperm_desc(3, DType::I64, true), RandomSeed{1, ~uint64_t{0}});
  ASSERT_TRUE(w.st.is_ok());
  EXPECT_EQ(w.offset_after, 0);
}

TEST(RandpermCpu, StridedOutKeepsGaps) {
  const int64_t n = 101;
  const bt::Layout L = bt::every_other(Dims{n});
  const auto s = bt::run_randperm(kCpu, bt::randperm_desc(n, DType::I32), RandomSeed{3, 9}, &L, 0x77);
  const auto c = bt::run_randperm(kCpu, bt::randperm_desc(n, DType::I32), RandomSeed{3, 9});
  ASSERT_TRUE(s.st.is_ok()) << s.st.to_string();
  EXPECT_EQ(s.values, c.values);
  EXPECT_EQ(bt::check_gaps(bt::host_of(DType::I32, s.raw), L, 0x77), "");
}

// ---- MultinomialPlan -------------------------------------------------------------------
TEST(MultinomialCpu, DescriptorRules) {
  auto expect = [](const MultinomialDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(MultinomialPlan::select(kCpu, d).status(), code, "MultinomialPlan: " + what);
  };
  using bt::multinomial_desc;
  expect(multinomial_desc(DType::I32, {3, 4}, 2, true), StatusCode::Unsupported, "dtype");
  expect(multinomial_desc(DType::F32, {3, 4}, 2, true, DType::F32), StatusCode::Unsupported, "out_dtype");
  expect(multinomial_desc(DType::F32, {}, 1, true), StatusCode::InvalidProblem, "probs_shape [] has rank 0");
  expect(multinomial_desc(DType::F32, {2, 3, 4}, 1, true), StatusCode::InvalidProblem, "probs_shape [2,3,4] has rank 3");
  expect(multinomial_desc(DType::F32, {3, -4}, 1, true), StatusCode::InvalidProblem, "probs_shape");
  expect(multinomial_desc(DType::F32, {3, 4}, -1, true), StatusCode::InvalidProblem, "num_samples -1 must be non-negative");
  expect(multinomial_desc(DType::F32, {3, 4}, 5, false), StatusCode::InvalidProblem, "num_samples 5 exceeds the 4 categories");
  expect(multinomial_desc(DType::F32, {3, 0}, 1, true), StatusCode::InvalidProblem, "probs_shape [3,0] has no category");
  auto p = MultinomialPlan::select(kCpu, multinomial_desc(DType::BF16, {3, 4}, 9, true, DType::I32));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->out_shape(), (Dims{3, 9}));
  EXPECT_EQ(p->rows(), 3);
  EXPECT_EQ(p->categories(), 4);
  EXPECT_EQ(p->sku().op, "random.multinomial_replacement");
  EXPECT_EQ(p->workspace_size(), 0u);
  auto q = MultinomialPlan::select(kCpu, multinomial_desc(DType::F64, {4}, 4, false));
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->out_shape(), (Dims{4}));
  EXPECT_EQ(q->sku().op, "random.multinomial");
  for (const auto& d : {multinomial_desc(DType::F32, {3, 4}, 0, false), multinomial_desc(DType::F32, {0, 4}, 2, true),
                        multinomial_desc(DType::F32, {3, 0}, 0, true)})
    EXPECT_EQ(MultinomialPlan::select(kCpu, d)->sku().variant, "empty");
}

TEST(MultinomialCpu, ArgumentRules) {
  auto plan = MultinomialPlan::select(kCpu, bt::multinomial_desc(DType::F32, {2, 3}, 2, true)).value();
  std::vector<float> probs(6, 1.f);
  std::vector<int64_t> out(4, 0), off(1, 0);
  MultinomialArgs a;
  a.probs = TensorRef::contiguous(probs.data(), Device::cpu(), {2, 3}, 6);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {2, 2}, 4);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.offset = TensorMut::contiguous(off.data(), Device::cpu(), {1}, 1);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem,
                   "MultinomialPlan: offset is given but descriptor.device_offset is false");
  a.offset = TensorMut();
  a.probs = TensorRef::contiguous(probs.data(), Device::cpu(), {3, 2}, 6);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MultinomialPlan: probs shape [3,2] must be [2,3]");
  a.probs = TensorRef::contiguous(probs.data(), Device::cpu(), {2, 3}, 6);
  std::vector<int32_t> o32(4, 0);
  a.out = TensorMut::contiguous(o32.data(), Device::cpu(), {2, 2}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MultinomialPlan: out dtype i32 must be i64");
  EXPECT_TRUE(plan.check_probs(kCpu, Workspace::none()).is_ok());
  EXPECT_EQ(MultinomialPlan().check_probs(kCpu, Workspace::none()).code(), StatusCode::InvalidProblem);
}

TEST(MultinomialCpu, InvalidRowsAreNamedAndNothingIsWritten) {
  struct Case {
    std::vector<double> w;
    bool replacement;
    int64_t S;
    int64_t row;
    const char* what;
  };
  const double nan = std::nan(""), inf = INFINITY;
  const Case cases[] = {
      {{1, 2, 3, 1, -1, 3}, true, 2, 1, "probs row 1 has an invalid weight -1 at category 1"},
      {{1, 2, 3, 1, -1, 3}, false, 2, 1, "probs row 1 has an invalid weight -1"},
      {{1, nan, 3, 1, 1, 3}, true, 2, 0, "probs row 0 has an invalid weight nan"},
      {{1, 1, 3, 1, inf, 3}, false, 1, 1, "probs row 1 has an invalid weight inf"},
      {{1, 1, 3, 0, 0, 0}, true, 2, 1, "probs row 1 sums to 0"},
      {{1, 1, 3, 0, 0, 0}, false, 1, 1, "probs row 1 has 0 positive weights, fewer than num_samples 1"},
      {{1, 1, 3, 0, 2, 0}, false, 2, 1, "probs row 1 has 1 positive weights, fewer than num_samples 2"},
  };
  for (const Case& c : cases) {
    const auto d = bt::multinomial_desc(DType::F32, {2, 3}, c.S, c.replacement);
    const auto r = bt::run_multinomial(kCpu, d, c.w, RandomSeed{1, 2});
    BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem, std::string("MultinomialPlan: ") + c.what);
    for (uint8_t b : r.raw) EXPECT_EQ(b, 0xff) << "written before the error: " << c.what;
  }
  // F64 weights whose sum overflows.
  const auto d = bt::multinomial_desc(DType::F64, {2}, 1, true);
  const auto r = bt::run_multinomial(kCpu, d, {1.5e308, 1.5e308}, RandomSeed{1, 2});
  BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem, "MultinomialPlan: probs row 0 sums to inf");
}

// The layout by hand (C = 5: one category per chunk, so the cdf is the plain
// left-to-right sum).
TEST(MultinomialCpu, KnownAnswerFromTheLayout) {
  const std::vector<double> w = {0.5, 2, 0, 1.25, 3};
  const RandomSeed seed{77, 5};
  const int64_t S = 9;
  {
    std::vector<double> cdf(w.size());
    std::partial_sum(w.begin(), w.end(), cdf.begin());
    std::vector<int64_t> want;
    for (int64_t s = 0; s < S; ++s) {
      const PhiloxWords pw = philox_block(seed.seed, seed.offset, static_cast<uint64_t>(S + s));  // row 1
      const double x = uniform_f64(pw.w[0], pw.w[1]) * cdf.back();
      want.push_back(std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin());
    }
    std::vector<double> probs = {1, 1, 1, 1, 1};
    probs.insert(probs.end(), w.begin(), w.end());
    const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {2, 5}, S, true), probs, seed);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(std::vector<int64_t>(r.values.begin() + S, r.values.end()), want);
  }
  {
    const int64_t C = static_cast<int64_t>(w.size());
    std::vector<std::pair<double, int64_t>> keys;
    for (int64_t j = 0; j < C; ++j) {
      const PhiloxWords pw = philox_block(seed.seed, seed.offset, static_cast<uint64_t>(j));
      const float e = 0.0f - exact::log(uniform_open0_f32(pw.w[0]));
      keys.push_back({w[static_cast<size_t>(j)] > 0 ? static_cast<double>(e) / w[static_cast<size_t>(j)] : INFINITY, j});
    }
    std::sort(keys.begin(), keys.end());
    const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {C}, 4, false), w, seed);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.values, (std::vector<int64_t>{keys[0].second, keys[1].second, keys[2].second, keys[3].second}));
  }
}

TEST(MultinomialCpu, WithReplacementFrequencies) {
  for (const int64_t C : {5, 3000}) {  // 3000: three categories per scan chunk
    std::vector<double> w(static_cast<size_t>(C), 0.0);
    for (int64_t j = 0; j < C; ++j) w[static_cast<size_t>(j)] = j % 5 == 2 ? 0.0 : static_cast<double>(1 + j % 7);
    const int64_t S = 200000;
    const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {C}, S, true), w, RandomSeed{3, 4});
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    // Bins: the category's weight class (j % 7), zero-weight categories apart.
    std::vector<double> obs(7, 0.0), exp(7, 0.0);
    const double W = std::accumulate(w.begin(), w.end(), 0.0);
    for (int64_t j = 0; j < C; ++j) exp[static_cast<size_t>(j % 7)] += w[static_cast<size_t>(j)] / W * S;
    for (int64_t v : r.values) {
      ASSERT_TRUE(v >= 0 && v < C);
      ASSERT_NE(w[static_cast<size_t>(v)], 0.0) << "a zero-weight category was drawn: " << v;
      obs[static_cast<size_t>(v % 7)] += 1;
    }
    EXPECT_LT(bt::chi_square(obs, exp), 27.9) << "6 degrees of freedom, p < 1e-4; C = " << C;
  }
}

TEST(MultinomialCpu, WithoutReplacementFrequencies) {
  const std::vector<double> w = {1, 2, 0, 3, 4};
  const int64_t R = 20000, C = 5;
  std::vector<double> probs;
  for (int64_t r = 0; r < R; ++r) probs.insert(probs.end(), w.begin(), w.end());
  const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {R, C}, 2, false), probs, RandomSeed{8, 1});
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  std::vector<double> first(5, 0.0), second(5, 0.0), e1(5, 0.0), e2(5, 0.0);
  const double W = 10;
  for (int64_t i = 0; i < R; ++i) {
    const int64_t a = r.values[static_cast<size_t>(2 * i)], b = r.values[static_cast<size_t>(2 * i + 1)];
    ASSERT_NE(a, b);
    ASSERT_NE(a, 2);
    ASSERT_NE(b, 2);
    first[static_cast<size_t>(a)] += 1, second[static_cast<size_t>(b)] += 1;
  }
  for (size_t j = 0; j < 5; ++j) {
    e1[j] = w[j] / W * R;
    for (size_t i = 0; i < 5; ++i)
      if (i != j) e2[j] += w[i] / W * w[j] / (W - w[i]) * R;
  }
  EXPECT_LT(bt::chi_square(first, e1), 21.1) << "3 degrees of freedom, p < 1e-4";
  EXPECT_LT(bt::chi_square(second, e2), 21.1) << "the second draw follows sequential sampling";
}

TEST(MultinomialCpu, WithoutReplacementDistinctAndFullPermutation) {
  const int64_t R = 7, C = 50;
  std::vector<double> probs(static_cast<size_t>(R * C));
  bt::Rng rng(5);
  for (auto& p : probs) p = bt::uniform(rng, 0.01, 1.0);
  const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F64, {R, C}, C, false), probs, RandomSeed{2, 2});
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  for (int64_t i = 0; i < R; ++i)
    EXPECT_TRUE(is_permutation_of_n(std::vector<int64_t>(r.values.begin() + i * C, r.values.begin() + (i + 1) * C)));
  // Zero weights sort last only when needed: with exactly S positive weights the samples are those.
  std::vector<double> w(20, 0.0);
  for (int j : {3, 7, 11, 19}) w[static_cast<size_t>(j)] = 0.25 * (j % 4 + 1);
  const auto z = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {20}, 4, false), w, RandomSeed{2, 3});
  ASSERT_TRUE(z.st.is_ok());
  std::vector<int64_t> got = z.values;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int64_t>{3, 7, 11, 19}));
}

// Subnormal f64 weights: E / w overflows, the key is clamped to DBL_MAX (not
// +inf, which marks a zero weight): such a category still counts as positive.
TEST(MultinomialCpu, SubnormalWeightsArePositive) {
  const std::vector<double> w = {1e-310, 0.0, 4e-320, 1.0};
  const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F64, {4}, 3, false), w, RandomSeed{5, 5});
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.values[0], 3);
  std::vector<int64_t> got = r.values;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int64_t>{0, 2, 3}));
  const auto bad = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F64, {4}, 4, false), w, RandomSeed{5, 5});
  BT_EXPECT_STATUS(bad.st, StatusCode::InvalidProblem, "MultinomialPlan: probs row 0 has 3 positive weights");
}

TEST(MultinomialCpu, EveryDtypeStridesAndOutDtype) {
  const int64_t R = 6, C = 40, S = 25;
  std::vector<double> probs(static_cast<size_t>(R * C));
  bt::Rng rng(9);
  for (auto& p : probs) p = static_cast<double>(bt::uniform_int(rng, 0, 8));  // exact in every dtype, some zeros
  for (const bool repl : {true, false}) {
    const auto ref = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {R, C}, S, repl), probs, RandomSeed{4, 4});
    ASSERT_TRUE(ref.st.is_ok()) << ref.st.to_string();
    for (const DType t : {DType::F64, DType::F16, DType::BF16}) {
      const auto r = bt::run_multinomial(kCpu, bt::multinomial_desc(t, {R, C}, S, repl), probs, RandomSeed{4, 4});
      EXPECT_EQ(r.values, ref.values) << dtype_name(t);
    }
    const auto i32 = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {R, C}, S, repl, DType::I32), probs,
                                         RandomSeed{4, 4});
    EXPECT_EQ(i32.values, ref.values);
    const bt::Layout PT = bt::transposed(Dims{R, C}), OP = bt::padded(Dims{R, S}, 3);
    const auto st = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {R, C}, S, repl), probs,
                                        RandomSeed{4, 4}, &PT, &OP, 0x66);
    ASSERT_TRUE(st.st.is_ok()) << st.st.to_string();
    EXPECT_EQ(st.values, ref.values) << "strided probs / out";
    EXPECT_EQ(bt::check_gaps(bt::host_of(DType::I64, st.raw), OP, 0x66), "");
    // probs [C]: row 0 of the [R, C] draw.
    const std::vector<double> row0(probs.begin(), probs.begin() + C);
    const auto one = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {C}, S, repl), row0, RandomSeed{4, 4});
    EXPECT_EQ(one.values, std::vector<int64_t>(ref.values.begin(), ref.values.begin() + S));
  }
}

TEST(MultinomialCpu, ZeroSizeAndDeviceOffset) {
  for (const auto& d : {bt::multinomial_desc(DType::F32, {3, 4}, 0, false), bt::multinomial_desc(DType::F32, {0, 4}, 2, true),
                        bt::multinomial_desc(DType::F32, {0}, 0, true)}) {
    const auto r = bt::run_multinomial(kCpu, d, std::vector<double>(static_cast<size_t>(shape_numel(d.probs_shape)), 1.0),
                                       RandomSeed{1, 1});
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    auto dd = d;
    dd.device_offset = true;
    const auto o = bt::run_multinomial(kCpu, dd, std::vector<double>(static_cast<size_t>(shape_numel(d.probs_shape)), 1.0),
                                       RandomSeed{1, 1});
    EXPECT_TRUE(o.st.is_ok()) << o.st.to_string();
    EXPECT_EQ(o.offset_after, 2) << "an empty run consumes an offset too";
  }
  const std::vector<double> w = {1, 2, 3, 4, 5, 6};
  for (const bool repl : {true, false}) {
    const auto dev = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {2, 3}, 3, repl, DType::I64, true), w,
                                         RandomSeed{9, 100});
    const auto host = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {2, 3}, 3, repl), w, RandomSeed{9, 100});
    const auto next = bt::run_multinomial(kCpu, bt::multinomial_desc(DType::F32, {2, 3}, 3, repl), w, RandomSeed{9, 101});
    ASSERT_TRUE(dev.st.is_ok()) << dev.st.to_string();
    EXPECT_EQ(dev.values, host.values);
    EXPECT_EQ(dev.offset_after, 101);
    (void)next;
  }
}

}  // namespace

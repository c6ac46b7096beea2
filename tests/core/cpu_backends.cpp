// The library-backend rules that need no GPU: the device cache every backend
// uses (src/backends/device_cache.hpp), the cuBLASLt problem key, problem
// checks and workspace policy (src/backends/cublaslt/), cuDNN's availability
// answer and the core capture query on CPU streams.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cublaslt/matmul_problem.hpp"
#include "backends/cublaslt/workspace.hpp"
#include "backends/cudnn/library.hpp"
#include "backends/device_cache.hpp"
#include "baracuda/baracuda.hpp"
#include "core/capture.hpp"

using namespace baracuda;

namespace {

struct Entry {
  int value;
};

Status refusal() { return Status(StatusCode::Unsupported, "TestPlan: capturing"); }

TEST(DeviceCache, BuildsOncePerDeviceAndKey) {
  backends::DeviceCache<Entry> cache;
  int builds = 0;
  auto build = [&](int v) {
    return [&builds, v]() -> Result<std::unique_ptr<Entry>> {
      ++builds;
      return std::make_unique<Entry>(Entry{v});
    };
  };
  auto a = cache.find_or_build(0, {1, 2, 3}, false, build(7), refusal);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ((*a)->value, 7);
  auto again = cache.find_or_build(0, {1, 2, 3}, false, build(8), refusal);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *a);  // the same entry, not rebuilt
  EXPECT_EQ(builds, 1);
  auto other_device = cache.find_or_build(1, {1, 2, 3}, false, build(9), refusal);
  ASSERT_TRUE(other_device.is_ok());
  EXPECT_NE(*other_device, *a);
  EXPECT_EQ((*other_device)->value, 9);
  auto other_key = cache.find_or_build(0, {1, 2, 4}, false, build(10), refusal);
  ASSERT_TRUE(other_key.is_ok());
  EXPECT_EQ((*other_key)->value, 10);
  EXPECT_EQ(builds, 3);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(DeviceCache, NeverBuildsWhileCapturingButServesCachedEntries) {
  backends::DeviceCache<Entry> cache;
  int builds = 0;
  auto build = [&]() -> Result<std::unique_ptr<Entry>> {
    ++builds;
    return std::make_unique<Entry>(Entry{1});
  };
  auto refused = cache.find_or_build(0, {5}, /*capturing=*/true, build, refusal);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::Unsupported);
  EXPECT_EQ(refused.status().message(), "TestPlan: capturing");
  EXPECT_EQ(builds, 0);
  EXPECT_EQ(cache.size(), 0u);  // a refusal is not remembered
  auto built = cache.find_or_build(0, {5}, false, build, refusal);
  ASSERT_TRUE(built.is_ok());
  auto during_capture = cache.find_or_build(0, {5}, /*capturing=*/true, build, refusal);
  ASSERT_TRUE(during_capture.is_ok());
  EXPECT_EQ(*during_capture, *built);
  EXPECT_EQ(builds, 1);
}

TEST(DeviceCache, RemembersUnsupportedAndRetriesOtherFailures) {
  backends::DeviceCache<Entry> cache;
  int builds = 0;
  auto unsupported = [&]() -> Result<std::unique_ptr<Entry>> {
    ++builds;
    return Status(StatusCode::Unsupported, "TestPlan: no engine");
  };
  for (int i = 0; i < 3; ++i) {
    auto r = cache.find_or_build(0, {1}, false, unsupported, refusal);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(r.status().message(), "TestPlan: no engine");
  }
  EXPECT_EQ(builds, 1);
  // A remembered failure is returned even while capturing (nothing is built).
  auto captured = cache.find_or_build(0, {1}, true, unsupported, refusal);
  EXPECT_EQ(captured.status().message(), "TestPlan: no engine");

  int lib_builds = 0;
  auto flaky = [&]() -> Result<std::unique_ptr<Entry>> {
    if (++lib_builds == 1) return Status(StatusCode::LibraryError, "TestPlan: out of memory");
    return std::make_unique<Entry>(Entry{2});
  };
  auto first = cache.find_or_build(0, {2}, false, flaky, refusal);
  ASSERT_FALSE(first.is_ok());
  EXPECT_EQ(first.status().code(), StatusCode::LibraryError);
  auto second = cache.find_or_build(0, {2}, false, flaky, refusal);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ((*second)->value, 2);
  EXPECT_EQ(lib_builds, 2);
}

// ---------------------------------------------------------------------------
// cuBLASLt problem rules

cublaslt::MatmulProblem small_problem() {
  cublaslt::MatmulProblem p;
  p.a_type = p.b_type = p.c_type = p.d_type = DType::BF16;
  p.m = 37;
  p.n = 29;
  p.k = 53;
  p.lda = 37;
  p.ldb = 53;
  p.ldc = p.ldd = 37;
  return p;
}

TEST(CublasLtKey, EqualProblemsShareAKey) {
  const auto p = small_problem();
  EXPECT_EQ(cublaslt::heuristic_key(p, 1024), cublaslt::heuristic_key(small_problem(), 1024));
}

TEST(CublasLtKey, EveryFieldTheHeuristicsSeeChangesTheKey) {
  const auto base = small_problem();
  const auto key = cublaslt::heuristic_key(base, 1024);
  std::vector<std::pair<const char*, std::function<void(cublaslt::MatmulProblem&)>>> edits = {
      {"a_type", [](auto& p) { p.a_type = DType::F16; }},
      {"b_type", [](auto& p) { p.b_type = DType::F16; }},
      {"c_type", [](auto& p) { p.c_type = DType::F32; }},
      {"d_type", [](auto& p) { p.d_type = DType::F32; }},
      {"scale_type", [](auto& p) { p.scale_type = DType::F64; }},
      {"compute", [](auto& p) { p.compute = cublaslt::ComputeType::F32FastTF32; }},
      {"trans_a", [](auto& p) { p.trans_a = true; }},
      {"trans_b", [](auto& p) { p.trans_b = true; }},
      {"m", [](auto& p) { p.m = 38; }},
      {"n", [](auto& p) { p.n = 30; }},
      {"k", [](auto& p) { p.k = 54; }},
      {"lda", [](auto& p) { p.lda = 40; }},
      {"ldb", [](auto& p) { p.ldb = 56; }},
      {"ldc", [](auto& p) { p.ldc = 40; }},
      {"ldd", [](auto& p) { p.ldd = 40; }},
      {"batch", [](auto& p) { p.batch = 2; }},
      {"epilogue", [](auto& p) { p.epilogue = cublaslt::Epilogue::Relu; }},
      {"align_a", [](auto& p) { p.align_a = 8; }},
      {"align_b", [](auto& p) { p.align_b = 4; }},
      {"align_c", [](auto& p) { p.align_c = 2; }},
      {"align_d", [](auto& p) { p.align_d = 1; }},
  };
  for (auto& [name, edit] : edits) {
    auto p = base;
    edit(p);
    EXPECT_NE(cublaslt::heuristic_key(p, 1024), key) << name;
  }
  EXPECT_NE(cublaslt::heuristic_key(base, 2048), key) << "workspace limit";

  // Batch strides count only for batched problems, the bias type only with a bias.
  auto batched = base;
  batched.batch = 3;
  batched.stride_a = 37 * 53;
  batched.stride_b = 53 * 29;
  batched.stride_c = batched.stride_d = 37 * 29;
  const auto batched_key = cublaslt::heuristic_key(batched, 1024);
  for (int which = 0; which < 4; ++which) {
    auto q = batched;
    int64_t* s[] = {&q.stride_a, &q.stride_b, &q.stride_c, &q.stride_d};
    *s[which] += 1;
    EXPECT_NE(cublaslt::heuristic_key(q, 1024), batched_key) << "stride " << which;
  }
  auto unbatched_strides = base;
  unbatched_strides.stride_a = 999;
  EXPECT_EQ(cublaslt::heuristic_key(unbatched_strides, 1024), key);
  auto bias_type_unused = base;
  bias_type_unused.bias_type = DType::BF16;
  EXPECT_EQ(cublaslt::heuristic_key(bias_type_unused, 1024), key);
  auto with_bias = base;
  with_bias.epilogue = cublaslt::Epilogue::Bias;
  auto with_bias_bf16 = with_bias;
  with_bias_bf16.bias_type = DType::BF16;
  EXPECT_NE(cublaslt::heuristic_key(with_bias, 1024), cublaslt::heuristic_key(with_bias_bf16, 1024));
}

TEST(CublasLtWorkspace, DefaultLimitPerArchitectureAndOverride) {
  EXPECT_EQ(cublaslt::default_workspace_limit(80), 4u << 20);
  EXPECT_EQ(cublaslt::default_workspace_limit(89), 4u << 20);
  EXPECT_EQ(cublaslt::default_workspace_limit(90), 32u << 20);
  EXPECT_EQ(cublaslt::default_workspace_limit(100), 32u << 20);
  EXPECT_EQ(cublaslt::workspace_limit(90), 32u << 20);
  EXPECT_EQ(cublaslt::workspace_limit(90, size_t{0}), 0u);
  EXPECT_EQ(cublaslt::workspace_limit(80, size_t{1} << 30), size_t{1} << 30);
}

TEST(CublasLtProblem, PointerAlignment) {
  auto at = [](uintptr_t a) { return reinterpret_cast<const void*>(a); };
  EXPECT_EQ(cublaslt::pointer_alignment(nullptr), 16u);
  EXPECT_EQ(cublaslt::pointer_alignment(at(0x1000)), 16u);
  EXPECT_EQ(cublaslt::pointer_alignment(at(0x1008)), 8u);
  EXPECT_EQ(cublaslt::pointer_alignment(at(0x1004)), 4u);
  EXPECT_EQ(cublaslt::pointer_alignment(at(0x1002)), 2u);
  EXPECT_EQ(cublaslt::pointer_alignment(at(0x1001)), 1u);
  const auto p = cublaslt::with_pointer_alignment(small_problem(), at(0x1000), at(0x1004), nullptr, at(0x1002));
  EXPECT_EQ(p.align_a, 16u);
  EXPECT_EQ(p.align_b, 4u);
  EXPECT_EQ(p.align_c, 16u);  // null: keeps the declared value
  EXPECT_EQ(p.align_d, 2u);
  auto declared8 = small_problem();
  declared8.align_a = 8;
  EXPECT_EQ(cublaslt::with_pointer_alignment(declared8, at(0x1000), nullptr, nullptr, nullptr).align_a, 8u);
}

TEST(CublasLtProblem, ChecksNameThePlanAndTheProblem) {
  EXPECT_TRUE(cublaslt::check_problem("GemmPlan", small_problem()).is_ok());
  auto expect_invalid = [](const cublaslt::MatmulProblem& p, const std::string& part) {
    const Status st = cublaslt::check_problem("GemmPlan", p);
    EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << part;
    EXPECT_EQ(st.message().rfind("GemmPlan: cuBLASLt: ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
  };
  auto p = small_problem();
  p.k = -1;
  expect_invalid(p, "must be >= 0");
  p = small_problem();
  p.batch = 0;
  expect_invalid(p, "batch 0");
  p = small_problem();
  p.lda = 36;  // A is m x k = 37 x 53
  expect_invalid(p, "lda 36");
  p = small_problem();
  p.trans_a = true;  // A stored k x m: lda >= 53
  p.lda = 37;
  expect_invalid(p, "lda 37");
  p.lda = 53;
  EXPECT_TRUE(cublaslt::check_problem("GemmPlan", p).is_ok());
  p = small_problem();
  p.ldb = 52;
  expect_invalid(p, "ldb 52");
  p = small_problem();
  p.ldd = 0;
  expect_invalid(p, "ldd 0");
  p = small_problem();
  p.batch = 2;
  p.stride_c = -1;
  expect_invalid(p, "batch strides");
  p = small_problem();
  p.align_b = 3;
  expect_invalid(p, "alignments");
  p = small_problem();
  p.compute = cublaslt::ComputeType::F64;  // needs an f64 scale
  expect_invalid(p, "scale type f32");
}

// ---------------------------------------------------------------------------
TEST(CudnnLibrary, AvailabilityAndReasonAgree) {
  if (cudnn::available()) {
    EXPECT_TRUE(cudnn::in_build());
    EXPECT_GE(cudnn::version(), 90000u);
    EXPECT_TRUE(cudnn::unavailable_reason().empty());
  } else {
    EXPECT_FALSE(cudnn::unavailable_reason().empty());
    if (!cudnn::in_build()) {
      EXPECT_EQ(cudnn::version(), 0u);
    }
  }
  const Status st = cudnn::unsupported("FlashSdpaPlan", "varlen");
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_EQ(st.message(), "FlashSdpaPlan: cuDNN: varlen");
}

TEST(Capture, CpuStreamsNeverCapture) { EXPECT_FALSE(detail::stream_is_capturing(Stream::cpu())); }

}  // namespace

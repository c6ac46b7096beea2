// src/cuda/row_reduce.cuh on the GPU (kernels in row_reduce_kernels.cu):
// warp (32 and 8 lanes per row), block and sm_90 cluster (2 and 4 blocks)
// row reductions with the block's own ops (sum, NaN-propagating max, the
// online (max, sum-exp) pair) and the reduce family's Op traits (ArgMax with
// first-index ties, Welford variance), against a host loop in double, on odd
// row lengths (shorter and longer than the scope). Every thread of the scope
// must hold the same result, bit for bit. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

#include "row_reduce_kernels.hpp"

using namespace baracuda;
namespace rr = baracuda::row_reduce_test;

namespace {

constexpr int kRows = 3;
const int kLengths[] = {1, 7, 31, 33, 100, 257, 1000, 4099};

const char* scope_name(rr::Scope s) {
  switch (s) {
    case rr::Scope::Warp32: return "warp32";
    case rr::Scope::Warp8: return "warp8";
    case rr::Scope::Block: return "block";
    case rr::Scope::Cluster2: return "cluster2";
    case rr::Scope::Cluster4: return "cluster4";
  }
  return "?";
}

bool is_cluster(rr::Scope s) { return s == rr::Scope::Cluster2 || s == rr::Scope::Cluster4; }

int device_arch() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major * 10 + minor;
}

// Row data per kind: plain random values, plus the special rows each op must
// get right (row 2: NaN for Max / ArgMax, all -inf for LogSumExp; ArgMax
// values from a small integer set so the maximum repeats).
std::vector<float> make_rows(rr::Kind k, int len, bt::Rng& rng) {
  std::vector<float> x(static_cast<size_t>(kRows) * len);
  for (float& v : x) v = static_cast<float>(bt::uniform(rng, -1.0, 1.0));
  if (k == rr::Kind::LogSumExp)
    for (float& v : x) v *= 30.0f;  // exercises the rescaling of the running sum
  if (k == rr::Kind::Var)
    for (float& v : x) v += 3.0f;
  if (k == rr::Kind::ArgMax)
    for (float& v : x) v = static_cast<float>(bt::uniform_int(rng, -3, 3));
  float* row2 = x.data() + 2 * static_cast<size_t>(len);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (k == rr::Kind::Max) row2[bt::uniform_int(rng, 0, len - 1)] = nan;
  if (k == rr::Kind::ArgMax && len >= 3) {
    row2[len / 3] = nan;
    row2[len - 1] = nan;  // the first NaN (len / 3) must win
  }
  if (k == rr::Kind::LogSumExp)
    for (int i = 0; i < len; ++i) row2[i] = -std::numeric_limits<float>::infinity();
  return x;
}

struct Ref {
  double val;
  int64_t idx;
};

Ref reference(rr::Kind k, const float* r, int len) {
  switch (k) {
    case rr::Kind::Sum: {
      double s = 0;
      for (int i = 0; i < len; ++i) s += r[i];
      return {s, 0};
    }
    case rr::Kind::Max: {
      double m = -INFINITY;
      for (int i = 0; i < len; ++i) {
        if (std::isnan(r[i])) return {NAN, 0};
        m = std::max(m, static_cast<double>(r[i]));
      }
      return {m, 0};
    }
    case rr::Kind::LogSumExp: {
      double m = -INFINITY;
      for (int i = 0; i < len; ++i) m = std::max(m, static_cast<double>(r[i]));
      if (std::isinf(m)) return {m, 0};
      double s = 0;
      for (int i = 0; i < len; ++i) s += std::exp(r[i] - m);
      return {m + std::log(s), 0};
    }
    case rr::Kind::ArgMax: {
      int64_t best = 0;
      for (int i = 0; i < len; ++i) {
        if (std::isnan(r[i])) return {NAN, i};
        if (r[i] > r[best]) best = i;
      }
      return {r[best], best};
    }
    case rr::Kind::Var: {
      double mean = 0;
      for (int i = 0; i < len; ++i) mean += r[i];
      mean /= len;
      double m2 = 0;
      for (int i = 0; i < len; ++i) m2 += (r[i] - mean) * (r[i] - mean);
      return {m2 / len, len};
    }
  }
  return {0, 0};
}

void check(rr::Kind k, rr::Scope s) {
  BT_SKIP_WITHOUT_GPU();
  if (is_cluster(s) && (device_arch() < 90 || !rr::cluster_code_present()))
    GTEST_SKIP() << "thread-block clusters need an sm_90 device and sm_90 code in the build";
  auto rng = bt::make_rng(bt::fresh_seed());
  const int copies = rr::threads_per_row(s);
  const bool has_idx = k == rr::Kind::ArgMax || k == rr::Kind::Var;
  for (int len : kLengths) {
    SCOPED_TRACE(std::string(scope_name(s)) + " len " + std::to_string(len));
    const std::vector<float> x = make_rows(k, len, rng);
    Buffer dx(Device::cuda(0), x.size() * sizeof(float));
    ASSERT_TRUE(dx.copy_from_host(x.data(), x.size() * sizeof(float)).is_ok());
    const size_t n_out = static_cast<size_t>(kRows) * copies;
    Buffer dval(Device::cuda(0), n_out * sizeof(float)), didx(Device::cuda(0), n_out * sizeof(int64_t));
    ASSERT_TRUE(dval.fill_bytes(0xff).is_ok());  // NaN: an unwritten copy cannot pass
    ASSERT_TRUE(didx.fill_bytes(0x7f).is_ok());
    const int err = rr::run(s, k, static_cast<const float*>(dx.data()), kRows, len, static_cast<float*>(dval.data()),
                            has_idx ? static_cast<int64_t*>(didx.data()) : nullptr);
    ASSERT_EQ(err, 0) << cudaGetErrorString(static_cast<cudaError_t>(err));
    std::vector<float> val(n_out);
    std::vector<int64_t> idx(n_out);
    ASSERT_TRUE(dval.copy_to_host(val.data(), n_out * sizeof(float)).is_ok());
    ASSERT_TRUE(didx.copy_to_host(idx.data(), n_out * sizeof(int64_t)).is_ok());

    std::vector<double> got, ref;
    for (int row = 0; row < kRows; ++row) {
      const size_t first = static_cast<size_t>(row) * copies;
      for (int c = 1; c < copies; ++c) {
        ASSERT_EQ(std::memcmp(&val[first + c], &val[first], sizeof(float)), 0)
            << "row " << row << ": thread " << c << " holds " << val[first + c] << ", thread 0 " << val[first];
        if (has_idx) ASSERT_EQ(idx[first + c], idx[first]) << "row " << row << ", thread " << c;
      }
      const Ref r = reference(k, x.data() + static_cast<size_t>(row) * len, len);
      got.push_back(val[first]);
      ref.push_back(r.val);
      if (has_idx) EXPECT_EQ(idx[first], r.idx) << "row " << row;
    }
    if (k == rr::Kind::Max || k == rr::Kind::ArgMax) {
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bt::same_value(got[i], ref[i])) << "row " << i << ": " << got[i] << " vs " << ref[i];
    } else {
      const double e = bt::rel_error(got, ref);
      EXPECT_LE(e, 1e-5) << bt::describe_mismatch(got, ref);
    }
  }
}

struct Case {
  rr::Kind kind;
  rr::Scope scope;
};

class RowReduce : public ::testing::TestWithParam<Case> {};

TEST_P(RowReduce, MatchesHostLoopInEveryThread) { check(GetParam().kind, GetParam().scope); }

std::vector<Case> all_cases() {
  std::vector<Case> c;
  for (rr::Kind k : {rr::Kind::Sum, rr::Kind::Max, rr::Kind::LogSumExp, rr::Kind::ArgMax, rr::Kind::Var})
    for (rr::Scope s : {rr::Scope::Warp32, rr::Scope::Warp8, rr::Scope::Block, rr::Scope::Cluster2, rr::Scope::Cluster4})
      c.push_back({k, s});
  return c;
}

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  const char* kinds[] = {"sum", "max", "logsumexp", "argmax", "var"};
  return std::string(kinds[static_cast<int>(i.param.kind)]) + "_" + scope_name(i.param.scope);
}

INSTANTIATE_TEST_SUITE_P(Scopes, RowReduce, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace

#endif  // BARACUDA_WITH_CUDA

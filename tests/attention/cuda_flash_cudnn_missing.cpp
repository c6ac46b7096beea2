// The flash plans without cuDNN (loaded at first use, never linked). Runs as
// cuda.CudnnMissing (tests/CMakeLists.txt) with BARACUDA_CUDNN_LIBRARY naming
// a file that does not exist; skipped when run as discovered.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"

namespace {

using namespace baracuda;

FlashSdpaDescriptor cudnn_shaped() {  // bf16, q_len > 64: a problem the plans route to cuDNN by default
  FlashSdpaDescriptor d;
  d.dtype = DType::BF16;
  d.batch = 1;
  d.heads = 2;
  d.kv_heads = 2;
  d.q_len = 128;
  d.kv_len = 128;
  d.head_dim = 64;
  return d;
}

TEST(CudnnMissing, FlashPlansFallBackOrNameTheLibrary) {
  const char* missing = std::getenv("BARACUDA_CUDNN_LIBRARY");
  if (std::getenv("BARACUDA_TEST_EXPECT_MISSING") == nullptr || missing == nullptr)
    GTEST_SKIP() << "runs as ctest's cuda.CudnnMissing, with cuDNN hidden";
  BT_SKIP_WITHOUT_GPU();
  const FlashSdpaDescriptor d = cudnn_shaped();

  // Preferred by default: the plans stay on the bespoke kernels.
  auto fwd = FlashSdpaPlan::select(bt::kGpu, d);
  ASSERT_TRUE(fwd.is_ok()) << fwd.status().to_string();
  EXPECT_EQ(fwd->sku().backend, Backend::Bespoke) << fwd->sku().to_string();
  auto bwd = FlashSdpaBackwardPlan::select(bt::kGpu, d);
  ASSERT_TRUE(bwd.is_ok()) << bwd.status().to_string();
  EXPECT_EQ(bwd->sku().backend, Backend::Bespoke) << bwd->sku().to_string();

  // Required: Unsupported, naming the library that could not be loaded.
  PlanPreference need;
  need.backend = Backend::CuDnn;
  need.require_backend = true;
  auto req = FlashSdpaPlan::select(bt::kGpu, d, need);
  ASSERT_FALSE(req.is_ok());
  EXPECT_EQ(req.status().code(), StatusCode::Unsupported);
  const std::string m = req.status().message();
  EXPECT_NE(m.find("FlashSdpaPlan: backend cudnn required"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string("cuDNN could not be loaded (") + missing), std::string::npos) << m;
}

}  // namespace

// Inference-only flash forwards (FlashSdpaDescriptor::save_lse = false): the
// same y as a training forward, no lse written or accepted; the backward
// refuses such a descriptor; a missing lse is named with the flag asking for it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

using namespace baracuda;

namespace {

struct Problem {
  FlashSdpaDescriptor d;
  std::vector<float> q, k, v, y, lse;
  explicit Problem(bool varlen) {
    d.dtype = DType::F32;
    d.heads = 2;
    d.kv_heads = 1;
    d.head_dim = 32;
    d.causal = true;
    if (varlen) {
      d.varlen = true;
      d.batch = 2;
      d.q_len = 3;
      d.kv_len = 4;
      d.total_q = 5;   // sequences of 3 and 2 queries
      d.total_kv = 7;  // ... over 4 and 3 keys
    } else {
      d.batch = 2;
      d.q_len = 3;
      d.kv_len = 5;
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto fill = [&](std::vector<float>& x, size_t n) {
      x.resize(n);
      for (float& e : x) e = u(rng);
    };
    const size_t nq = varlen ? 5 * 2 * 32 : 2 * 2 * 3 * 32, nkv = varlen ? 7 * 1 * 32 : 2 * 1 * 5 * 32;
    fill(q, nq);
    fill(k, nkv);
    fill(v, nkv);
    y.assign(nq, -1.f);
    lse.assign(varlen ? 2 * 5 : 2 * 2 * 3, -7.f);  // a poison no row's lse can be
  }
  std::vector<int32_t> cu_q{0, 3, 5}, cu_kv{0, 4, 7};

  FlashSdpaArgs args(const FlashSdpaPlan& p, bool with_lse) {
    FlashSdpaArgs a;
    a.q = TensorRef::contiguous(q.data(), Device::cpu(), p.q_shape(), static_cast<int64_t>(q.size()));
    a.k = TensorRef::contiguous(k.data(), Device::cpu(), p.kv_shape(), static_cast<int64_t>(k.size()));
    a.v = TensorRef::contiguous(v.data(), Device::cpu(), p.kv_shape(), static_cast<int64_t>(v.size()));
    a.y = TensorMut::contiguous(y.data(), Device::cpu(), p.y_shape(), static_cast<int64_t>(y.size()));
    if (with_lse) a.lse = TensorMut::contiguous(lse.data(), Device::cpu(), p.lse_shape(), static_cast<int64_t>(lse.size()));
    if (d.varlen) {
      a.cu_seqlens_q = TensorRef::contiguous(cu_q.data(), Device::cpu(), p.cu_seqlens_shape(), 3);
      a.cu_seqlens_kv = TensorRef::contiguous(cu_kv.data(), Device::cpu(), p.cu_seqlens_shape(), 3);
    }
    return a;
  }
};

}  // namespace

TEST(FlashInference, SameOutputWithoutLseAndLseUntouched) {
  for (const bool varlen : {false, true}) {
    SCOPED_TRACE(varlen ? "varlen" : "dense");
    Problem pr(varlen);
    auto train = FlashSdpaPlan::select(Stream::cpu(), pr.d);
    ASSERT_TRUE(train.is_ok()) << train.status().to_string();
    ASSERT_TRUE(train->run(Stream::cpu(), Workspace::none(), pr.args(*train, true)).is_ok());
    const std::vector<float> y_train = pr.y, lse_train = pr.lse;
    for (float l : lse_train) EXPECT_NE(l, -7.f);  // the training forward wrote every lse

    pr.d.save_lse = false;
    auto infer = FlashSdpaPlan::select(Stream::cpu(), pr.d);
    ASSERT_TRUE(infer.is_ok()) << infer.status().to_string();
    pr.y.assign(pr.y.size(), -1.f);
    pr.lse.assign(pr.lse.size(), -7.f);
    const FlashSdpaArgs a = pr.args(*infer, false);
    ASSERT_TRUE(infer->can_implement(a).is_ok());
    auto sku = infer->sku_for(Stream::cpu(), Workspace::none(), a);
    ASSERT_TRUE(sku.is_ok()) << sku.status().to_string();
    ASSERT_TRUE(infer->run(Stream::cpu(), Workspace::none(), a).is_ok());
    EXPECT_EQ(pr.y, y_train);  // bit for bit: lse is a by-product
    for (float l : pr.lse) EXPECT_EQ(l, -7.f);  // never written (it was not even given)

    // An lse given to an inference-only forward is refused, like any unused tensor.
    const Status st = infer->run(Stream::cpu(), Workspace::none(), pr.args(*infer, true));
    EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
    EXPECT_EQ(st.message(),
              "FlashSdpaPlan: lse is given but descriptor.save_lse is false (an inference-only forward writes no lse)");
  }
}

TEST(FlashInference, MissingLseNamesTheFlag) {
  Problem pr(false);
  auto plan = FlashSdpaPlan::select(Stream::cpu(), pr.d);
  ASSERT_TRUE(plan.is_ok());
  const Status st = plan->can_implement(pr.args(*plan, false));
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_EQ(st.message(),
            "FlashSdpaPlan: lse is missing (descriptor.save_lse is true, the default; set it to false for an "
            "inference-only forward): expected a f32 view of shape [2,2,3]");
  EXPECT_EQ(plan->run(Stream::cpu(), Workspace::none(), pr.args(*plan, false)).to_string(), st.to_string());
}

TEST(FlashInference, BackwardNeedsTheSavedLse) {
  Problem pr(false);
  pr.d.save_lse = false;
  auto bad = FlashSdpaBackwardPlan::select(Stream::cpu(), pr.d);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(bad.status().message(),
            "FlashSdpaBackwardPlan: descriptor.save_lse is false, but the backward reads the forward's lse (run the "
            "forward with save_lse = true and pass its lse)");

  pr.d.save_lse = true;
  auto bwd = FlashSdpaBackwardPlan::select(Stream::cpu(), pr.d);
  ASSERT_TRUE(bwd.is_ok());
  std::vector<float> dy(pr.y.size(), 0.5f), dq(pr.q.size()), dk(pr.k.size()), dv(pr.v.size());
  FlashSdpaBackwardArgs a;
  a.dy = TensorRef::contiguous(dy.data(), Device::cpu(), bwd->y_shape(), static_cast<int64_t>(dy.size()));
  a.q = TensorRef::contiguous(pr.q.data(), Device::cpu(), bwd->q_shape(), static_cast<int64_t>(pr.q.size()));
  a.k = TensorRef::contiguous(pr.k.data(), Device::cpu(), bwd->kv_shape(), static_cast<int64_t>(pr.k.size()));
  a.v = TensorRef::contiguous(pr.v.data(), Device::cpu(), bwd->kv_shape(), static_cast<int64_t>(pr.v.size()));
  a.y = TensorRef::contiguous(pr.y.data(), Device::cpu(), bwd->y_shape(), static_cast<int64_t>(pr.y.size()));
  a.dq = TensorMut::contiguous(dq.data(), Device::cpu(), bwd->q_shape(), static_cast<int64_t>(dq.size()));
  a.dk = TensorMut::contiguous(dk.data(), Device::cpu(), bwd->kv_shape(), static_cast<int64_t>(dk.size()));
  a.dv = TensorMut::contiguous(dv.data(), Device::cpu(), bwd->kv_shape(), static_cast<int64_t>(dv.size()));
  const Status st = bwd->can_implement(a);  // lse left empty
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_EQ(st.message(),
            "FlashSdpaBackwardPlan: lse is missing (the backward reads the lse its forward saved): expected a f32 view "
            "of shape [2,2,3]");
}

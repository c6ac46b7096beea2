// FlashSdpaPlan / FlashSdpaBackwardPlan::sku_for: what run() launches for the
// actual views. K and V broadcast over the heads (stride 0) are accepted by the
// plans, but cuDNN refuses stride-0 tensors and TMA cannot describe them: a
// cuDNN plan then runs the bespoke kernels and a Hopper wgmma plan the mma.sync
// tiles, and sku_for says so before the run. The fallback runs are checked
// against the CPU reference on the same views.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::kGpu, bt::to_device, bt::to_host;

struct Views {
  bt::Layout q, kv, kv_dense, y, lse;
};

FlashSdpaDescriptor desc() {
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

std::vector<PlanPreference> preferences() { return {PlanPreference{}, bespoke()}; }

TEST(FlashSkuFor, RefusedStridesFallBackVisibly) {
  BT_SKIP_WITHOUT_GPU();
  const FlashSdpaDescriptor d = desc();
  const DType t = d.dtype;
  const Dims qs{d.batch, d.heads, d.q_len, d.head_dim}, ls{d.batch, d.heads, d.q_len};
  const bt::Layout ql = bt::contiguous(qs), dense = bt::contiguous(qs), bcast = bt::broadcast(qs, 1),
                   ll = bt::contiguous(ls);
  bt::Rng rng(bt::fresh_seed());
  const bt::HostBuffer qh = bt::host_from(t, bt::random_values(t, ql.storage, rng));
  const bt::HostBuffer kh = bt::host_from(t, bt::random_values(t, dense.storage, rng));
  const bt::HostBuffer vh = bt::host_from(t, bt::random_values(t, dense.storage, rng));
  const bt::HostBuffer dyh = bt::host_from(t, bt::random_values(t, ql.storage, rng));
  Buffer q = to_device(qh), k = to_device(kh), v = to_device(vh), dy = to_device(dyh);
  Buffer y = bt::device_storage(t, ql), lse = bt::device_storage(DType::F32, ll);
  Buffer dq = bt::device_storage(t, ql), dk = bt::device_storage(t, dense), dv = bt::device_storage(t, dense);

  // CPU reference on the broadcast views (k/v storage: the first head's rows).
  bt::HostBuffer yr(t, ql.storage), lr(DType::F32, ll.storage);
  bt::HostBuffer dqr(t, ql.storage), dkr(t, dense.storage), dvr(t, dense.storage);
  {
    auto f = FlashSdpaPlan::select(Stream::cpu(), d).value();
    FlashSdpaArgs a{bt::view(qh, ql), bt::view(kh, bcast), bt::view(vh, bcast), {}, {}, {}, {},
                    bt::view_mut(yr, ql), bt::view_mut(lr, ll)};
    ASSERT_TRUE(f.run(Stream::cpu(), Workspace::none(), a).is_ok());
    auto b = FlashSdpaBackwardPlan::select(Stream::cpu(), d).value();
    FlashSdpaBackwardArgs ba{bt::view(dyh, ql), bt::view(qh, ql), bt::view(kh, bcast), bt::view(vh, bcast),
                             bt::view(yr, ql), bt::view(lr, ll), {}, {}, {}, {},
                             bt::view_mut(dqr, ql), bt::view_mut(dkr, dense), bt::view_mut(dvr, dense)};
    ASSERT_TRUE(b.run(Stream::cpu(), Workspace::none(), ba).is_ok());
  }
  const double tol = bt::tolerance(t);

  for (const PlanPreference& pref : preferences()) {
    auto fwd = FlashSdpaPlan::select(kGpu, d, pref);
    ASSERT_TRUE(fwd.is_ok()) << fwd.status().to_string();
    Buffer fws = bt::device_workspace(fwd->workspace_size());
    const Workspace fw(fws.data(), fwd->workspace_size());
    auto fargs = [&](const bt::Layout& kvl) {
      return FlashSdpaArgs{bt::view(q, t, ql), bt::view(k, t, kvl), bt::view(v, t, kvl), {}, {}, {}, {},
                           bt::view_mut(y, t, ql), bt::view_mut(lse, DType::F32, ll)};
    };
    const std::string chosen = fwd->sku().to_string();
    // Dense, aligned views: exactly the select()-time choice.
    auto s_dense = fwd->sku_for(kGpu, fw, fargs(dense));
    ASSERT_TRUE(s_dense.is_ok()) << s_dense.status().to_string();
    EXPECT_EQ(s_dense->to_string(), chosen);
    // Broadcast K/V: never cuDNN, never the TMA kernels.
    auto s_bc = fwd->sku_for(kGpu, fw, fargs(bcast));
    ASSERT_TRUE(s_bc.is_ok()) << s_bc.status().to_string();
    EXPECT_EQ(s_bc->backend, Backend::Bespoke) << chosen << " -> " << s_bc->to_string();
    EXPECT_EQ(s_bc->variant.find("wgmma"), std::string::npos) << chosen << " -> " << s_bc->to_string();
    EXPECT_NE(s_bc->variant.find("mma16816"), std::string::npos) << s_bc->to_string();
    if (fwd->sku().backend == Backend::Bespoke && fwd->sku().variant.find("wgmma") == std::string::npos)
      EXPECT_EQ(s_bc->to_string(), chosen);  // nothing to fall back from
    ASSERT_TRUE(y.fill_bytes(0xff).is_ok());
    Status st = fwd->run(kGpu, fw, fargs(bcast));
    if (st.is_ok()) st = synchronize(kGpu);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_LE(bt::rel_error(bt::gather(to_host(y, t, ql.storage), ql), bt::all_values(yr)), tol) << chosen;

    auto bwd = FlashSdpaBackwardPlan::select(kGpu, d, pref);
    ASSERT_TRUE(bwd.is_ok()) << bwd.status().to_string();
    Buffer bws = bt::device_workspace(bwd->workspace_size());
    const Workspace bw(bws.data(), bwd->workspace_size());
    auto bargs = [&](const bt::Layout& kvl) {
      return FlashSdpaBackwardArgs{bt::view(dy, t, ql), bt::view(q, t, ql), bt::view(k, t, kvl), bt::view(v, t, kvl),
                                   bt::view(y, t, ql), bt::view(lse, DType::F32, ll), {}, {}, {}, {},
                                   bt::view_mut(dq, t, ql), bt::view_mut(dk, t, dense), bt::view_mut(dv, t, dense)};
    };
    const std::string bchosen = bwd->sku().to_string();
    auto b_dense = bwd->sku_for(kGpu, bw, bargs(dense));
    ASSERT_TRUE(b_dense.is_ok()) << b_dense.status().to_string();
    EXPECT_EQ(b_dense->to_string(), bchosen);
    auto b_bc = bwd->sku_for(kGpu, bw, bargs(bcast));
    ASSERT_TRUE(b_bc.is_ok()) << b_bc.status().to_string();
    EXPECT_EQ(b_bc->backend, Backend::Bespoke) << bchosen << " -> " << b_bc->to_string();
    EXPECT_EQ(b_bc->variant.find("wgmma"), std::string::npos) << bchosen << " -> " << b_bc->to_string();
    st = bwd->run(kGpu, bw, bargs(bcast));
    if (st.is_ok()) st = synchronize(kGpu);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    // y / lse came from the GPU forward; compare with the reference's gradients.
    EXPECT_LE(bt::rel_error(bt::gather(to_host(dq, t, ql.storage), ql), bt::all_values(dqr)), 2 * tol) << bchosen;
    EXPECT_LE(bt::rel_error(bt::gather(to_host(dk, t, dense.storage), dense), bt::all_values(dkr)), 2 * tol) << bchosen;
    EXPECT_LE(bt::rel_error(bt::gather(to_host(dv, t, dense.storage), dense), bt::all_values(dvr)), 2 * tol) << bchosen;
  }
}

// A cuDNN plan that cuDNN was *required* for does not fall back: sku_for
// reports run()'s refusal instead of a route.
TEST(FlashSkuFor, RequiredCudnnReportsTheRefusal) {
  BT_SKIP_WITHOUT_GPU();
  const FlashSdpaDescriptor d = desc();
  PlanPreference pref;
  pref.backend = Backend::CuDnn;
  pref.require_backend = true;
  auto fwd = FlashSdpaPlan::select(kGpu, d, pref);
  if (!fwd) GTEST_SKIP() << fwd.status().to_string();
  const DType t = d.dtype;
  const Dims qs{d.batch, d.heads, d.q_len, d.head_dim}, ls{d.batch, d.heads, d.q_len};
  const bt::Layout ql = bt::contiguous(qs), bcast = bt::broadcast(qs, 1), ll = bt::contiguous(ls);
  Buffer q = bt::device_storage(t, ql), k = bt::device_storage(t, ql), y = bt::device_storage(t, ql);
  Buffer lse = bt::device_storage(DType::F32, ll);
  Buffer ws = bt::device_workspace(fwd->workspace_size());
  const FlashSdpaArgs a{bt::view(q, t, ql), bt::view(k, t, bcast), bt::view(k, t, bcast), {}, {}, {}, {},
                        bt::view_mut(y, t, ql), bt::view_mut(lse, DType::F32, ll)};
  const Workspace w(ws.data(), fwd->workspace_size());
  auto s = fwd->sku_for(kGpu, w, a);
  EXPECT_EQ(s.status().code(), StatusCode::Unsupported) << s.status().to_string();
  EXPECT_EQ(s.status().to_string(), fwd->run(kGpu, w, a).to_string());
}

}  // namespace

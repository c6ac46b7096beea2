// PagedAttentionPlan / PagedKvAppendPlan on the CPU reference:
//   * paged == dense: random, shuffled, non-contiguous page tables (unused
//     table entries hold out-of-range garbage that must never be read),
//     compared with a dense model in double (support/paged_helpers.hpp) over
//     dtypes f32 / f16 / bf16, MHA / GQA / MQA, decode (Lq = 1) and causal
//     chunked prefill (Lq > 1), non-causal, softcap, page sizes 1, 3, 16, 32,
//     seq_lens on page boundaries, seq_len 1 and seq_len == Lq, [B,L,H,D] views;
//   * zero batch / zero q_len; two runs bit-identical;
//   * append: values land in the right slots, other slots untouched, then
//     attention over the appended cache == dense;
//   * every error rule (descriptor, shapes, dtypes, index tensors).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/attention_paged.hpp"
#include "support/paged_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

void check_against_dense(const bt::PagedSpec& s, uint64_t salt = 0) {
  SCOPED_TRACE(std::string("dtype ") + std::string(dtype_name(s.t)) + " B " + std::to_string(s.B) + " Hq " + std::to_string(s.Hq) +
               " Hkv " + std::to_string(s.Hkv) + " Lq " + std::to_string(s.Lq) + " D " + std::to_string(s.D) + " P " +
               std::to_string(s.P) + " causal " + std::to_string(s.causal) + " softcap " + std::to_string(s.softcap));
  auto rng = bt::make_rng(bt::fresh_seed(std::to_string(salt)));
  bt::PagedProblem p = bt::make_paged(s, rng);
  auto plan = PagedAttentionPlan::select(kCpu, p.desc);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().variant, "reference");
  const Status st = plan->run(kCpu, Workspace::none(), p.args());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<double> ref_out, ref_lse;
  bt::paged_model(p, plan->scale(), &ref_out, &ref_lse);
  const double tol = bt::tolerance(s.t);
  EXPECT_LE(bt::rel_error(bt::gather(p.out, p.Lq_), ref_out), tol);
  if (s.save_lse) {
    const std::vector<double> got = bt::gather(p.lse, p.Llse);
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isinf(ref_lse[i])) EXPECT_EQ(got[i], ref_lse[i]) << i;
      else EXPECT_NEAR(got[i], ref_lse[i], 1e-5 * (1 + std::fabs(ref_lse[i]))) << i;
    }
  }
}

TEST(CpuPagedAttention, DecodeMatchesDenseEveryDtype) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    bt::PagedSpec s;
    s.t = t;
    s.B = 3, s.Hq = 8, s.Hkv = 2, s.Lq = 1, s.D = 64, s.P = 16, s.max_pages = 5;
    check_against_dense(s, 1);
  }
}

TEST(CpuPagedAttention, HeadLayouts) {
  for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{4, 4}, {6, 3}, {8, 1}}) {
    bt::PagedSpec s;
    s.Hq = hq, s.Hkv = hkv, s.D = 16, s.P = 3, s.max_pages = 7;
    check_against_dense(s, 2);
  }
}

TEST(CpuPagedAttention, ChunkedPrefillCausal) {
  for (int64_t lq : {2, 4, 7}) {
    bt::PagedSpec s;
    s.Lq = lq, s.Hq = 4, s.Hkv = 2, s.D = 32, s.P = 16, s.max_pages = 3;
    s.lens = {lq, 16, 33, 48};  // seq_len == Lq (whole prefill), page boundaries
    s.B = 4;
    check_against_dense(s, 3);
    s.causal = false;
    check_against_dense(s, 4);
    s.bshd = true;
    s.causal = true;
    check_against_dense(s, 5);
  }
}

TEST(CpuPagedAttention, PageSizesAndBoundaries) {
  for (int64_t P : {1, 16, 32}) {
    bt::PagedSpec s;
    s.P = P, s.max_pages = 64 / P + 1, s.D = 8, s.Lq = 1;
    s.lens = {1, P, P + 1, 2 * P, 2 * P - 1};
    s.B = 5;
    check_against_dense(s, 6);
  }
}

TEST(CpuPagedAttention, Softcap) {
  bt::PagedSpec s;
  s.softcap = 0.5;
  s.Lq = 3;
  check_against_dense(s, 7);
}

TEST(CpuPagedAttention, NoLseAndCustomScale) {
  bt::PagedSpec s;
  s.save_lse = false;
  auto rng = bt::make_rng(bt::fresh_seed());
  bt::PagedProblem p = bt::make_paged(s, rng);
  p.desc.scale = 0.3;
  auto plan = PagedAttentionPlan::select(kCpu, p.desc);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_TRUE(plan->run(kCpu, {}, p.args()).is_ok());
  std::vector<double> ro, rl;
  bt::paged_model(p, 0.3, &ro, &rl);
  EXPECT_LE(bt::rel_error(bt::gather(p.out, p.Lq_), ro), 1e-5);
}

TEST(CpuPagedAttention, ZeroSize) {
  for (int which = 0; which < 2; ++which) {
    bt::PagedSpec s;
    if (which == 0) s.B = 0;
    else s.Lq = 0, s.lens = {0, 5};
    auto rng = bt::make_rng(1);
    bt::PagedProblem p = bt::make_paged(s, rng);
    auto plan = PagedAttentionPlan::select(kCpu, p.desc);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_TRUE(plan->run(kCpu, {}, p.args()).is_ok());
  }
}

TEST(CpuPagedAttention, RunTwiceBitIdentical) {
  bt::PagedSpec s;
  s.t = DType::BF16;
  s.Lq = 2;
  auto rng = bt::make_rng(bt::fresh_seed());
  bt::PagedProblem p = bt::make_paged(s, rng);
  auto plan = PagedAttentionPlan::select(kCpu, p.desc);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_TRUE(plan->run(kCpu, {}, p.args()).is_ok());
  const auto first = p.out.raw(), first_lse = p.lse.raw();
  p.out.fill_bytes(0x5a);
  ASSERT_TRUE(plan->run(kCpu, {}, p.args()).is_ok());
  EXPECT_EQ(first, p.out.raw());
  EXPECT_EQ(first_lse, p.lse.raw());
}

// ---- errors ----------------------------------------------------------------------------
TEST(CpuPagedAttention, DescriptorErrors) {
  auto base = [] {
    PagedAttentionDescriptor d;
    d.dtype = DType::F16, d.batch = 2, d.heads = 4, d.kv_heads = 2, d.head_dim = 8, d.num_pages = 4, d.max_pages = 2;
    return d;
  };
  auto expect = [&](auto fn, StatusCode code, const char* msg) {
    PagedAttentionDescriptor d = base();
    fn(d);
    auto r = PagedAttentionPlan::select(kCpu, d);
    ASSERT_FALSE(r.is_ok()) << msg;
    BT_EXPECT_STATUS(r.status(), code, msg);
    EXPECT_EQ(r.status().message().rfind("PagedAttentionPlan", 0), 0u);
  };
  using D = PagedAttentionDescriptor;
  expect([](D& d) { d.heads = 3; }, StatusCode::InvalidProblem, "multiple of kv_heads");
  expect([](D& d) { d.page_size = 0; }, StatusCode::InvalidProblem, "page_size");
  expect([](D& d) { d.batch = -1; }, StatusCode::InvalidProblem, "batch");
  expect([](D& d) { d.q_len = -2; }, StatusCode::InvalidProblem, "q_len");
  expect([](D& d) { d.scale = std::nan(""); }, StatusCode::InvalidProblem, "scale");
  expect([](D& d) { d.softcap = -1; }, StatusCode::InvalidProblem, "softcap");
  expect([](D& d) { d.dtype = DType::F64; }, StatusCode::Unsupported, "dtype");
  expect([](D& d) { d.dtype = DType::I32; }, StatusCode::Unsupported, "dtype");
  expect([](D& d) { d.max_pages = int64_t{1} << 40; }, StatusCode::InvalidProblem, "int32");
}

TEST(CpuPagedAttention, VariantOverrides) {
  PagedAttentionDescriptor d;
  d.dtype = DType::BF16, d.batch = 2, d.heads = 4, d.kv_heads = 2, d.head_dim = 64, d.num_pages = 8, d.max_pages = 4;
  for (const char* bad : {"bogus=1", "splits=0", "splits=65", "splits=x", "fewrows=2", "splits", "splits=2,"}) {
    PlanPreference pref;
    pref.variant = bad;
    auto r = PagedAttentionPlan::select(kCpu, d, pref);
    if (std::string(bad) == "splits=2,") {  // a trailing comma ends the list
      EXPECT_TRUE(r.is_ok()) << bad;
      continue;
    }
    ASSERT_FALSE(r.is_ok()) << bad;
    BT_EXPECT_STATUS(r.status(), StatusCode::InvalidProblem, "PagedAttentionPlan: unknown or malformed variant key");
  }
  PlanPreference pref;
  pref.variant = "splits=4,fewrows=0";
  auto r = PagedAttentionPlan::select(kCpu, d, pref);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->sku().variant, "reference");
}

struct ErrCase {
  bt::PagedProblem p;
  Result<PagedAttentionPlan> plan = Status(StatusCode::InvalidProblem, "unset");
};
ErrCase err_case() {
  bt::PagedSpec s;
  s.B = 2, s.Lq = 2, s.lens = {5, 20};
  auto rng = bt::make_rng(11);
  ErrCase c{bt::make_paged(s, rng)};
  c.plan = PagedAttentionPlan::select(kCpu, c.p.desc);
  return c;
}

TEST(CpuPagedAttention, BlockTableOutOfRange) {
  for (int64_t bad : {int64_t{-1}, int64_t{-100}, int64_t{0} /* = num_pages, set below */}) {
    ErrCase c = err_case();
    ASSERT_TRUE(c.plan.is_ok());
    c.p.table.set_i(1 * c.p.s.max_pages + 1, bad == 0 ? c.p.desc.num_pages : bad);  // sequence 1 uses 2 pages
    BT_EXPECT_STATUS(c.plan->run(kCpu, {}, c.p.args()), StatusCode::InvalidProblem, "block_table[1, 1]");
  }
}

TEST(CpuPagedAttention, SeqLenErrors) {
  {
    ErrCase c = err_case();
    c.p.lens.set_i(0, c.p.s.max_pages * c.p.s.P + 1);
    BT_EXPECT_STATUS(c.plan->run(kCpu, {}, c.p.args()), StatusCode::InvalidProblem, "exceeds max_pages * page_size");
  }
  {
    ErrCase c = err_case();
    c.p.lens.set_i(1, 1);  // < Lq = 2
    BT_EXPECT_STATUS(c.plan->run(kCpu, {}, c.p.args()), StatusCode::InvalidProblem, "less than q_len");
  }
}

TEST(CpuPagedAttention, ArgumentErrors) {
  ErrCase c = err_case();
  ASSERT_TRUE(c.plan.is_ok());
  {  // q of the wrong shape
    auto a = c.p.args();
    a.q.shape = Dims{2, 4, 3, c.p.s.D};
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "q");
  }
  {  // pages of the wrong shape (page_size)
    auto a = c.p.args();
    a.k_pages.shape = Dims{c.p.desc.num_pages, c.p.s.P + 1, c.p.s.Hkv, c.p.s.D};
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "k_pages");
  }
  {  // block_table as i64
    bt::HostBuffer t64(DType::I64, c.p.s.B * c.p.s.max_pages);
    auto a = c.p.args();
    a.block_table = bt::view(t64, bt::contiguous({c.p.s.B, c.p.s.max_pages}));
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "block_table");
  }
  {  // seq_lens as f32
    bt::HostBuffer l(DType::F32, c.p.s.B);
    auto a = c.p.args();
    a.seq_lens = bt::view(l, bt::contiguous({c.p.s.B}));
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "seq_lens");
  }
  {  // v_pages in another dtype
    bt::HostBuffer v(DType::F16, c.p.Lpages.storage);
    auto a = c.p.args();
    a.v_pages = bt::view(v, c.p.Lpages);
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "v_pages");
  }
  {  // lse given without save_lse
    bt::PagedSpec s;
    s.save_lse = false;
    auto rng = bt::make_rng(3);
    bt::PagedProblem p = bt::make_paged(s, rng);
    auto plan = PagedAttentionPlan::select(kCpu, p.desc);
    auto a = p.args();
    a.lse = bt::view_mut(p.lse, p.Llse);
    BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "lse is given");
  }
  {  // missing out
    auto a = c.p.args();
    a.out = TensorMut();
    BT_EXPECT_STATUS(c.plan->can_implement(a), StatusCode::InvalidProblem, "out");
  }
}

// ---- append ------------------------------------------------------------------------------
struct AppendCase {
  bt::PagedProblem p;  // the cache (lens = lengths before the append)
  PagedKvAppendDescriptor d;
  bt::Layout Lnew;
  bt::HostBuffer kn, vn;
  PagedKvAppendArgs args() {
    PagedKvAppendArgs a;
    a.k_new = bt::view(kn, Lnew);
    a.v_new = bt::view(vn, Lnew);
    a.block_table = bt::view(p.table, p.Ltable);
    a.seq_lens = bt::view(p.lens, p.Llens);
    a.k_pages = bt::view_mut(p.kp, p.Lpages);
    a.v_pages = bt::view_mut(p.vp, p.Lpages);
    return a;
  }
};

// A cache whose sequences have room for lnew more keys (the table covers
// final lengths; lens holds the lengths before the append).
AppendCase append_case(DType t, int64_t lnew, std::vector<int64_t> before, int64_t P, bool bshd, bt::Rng& rng) {
  bt::PagedSpec s;
  s.t = t, s.B = static_cast<int64_t>(before.size()), s.Hq = 2, s.Hkv = 2, s.Lq = 1, s.D = 16, s.P = P;
  int64_t mx = 0;
  for (int64_t n : before) mx = std::max(mx, n + lnew);
  s.max_pages = (mx + P - 1) / P + 1;
  for (int64_t n : before) s.lens.push_back(std::max<int64_t>(n + lnew, 1));
  AppendCase c{bt::make_paged(s, rng)};
  for (size_t b = 0; b < before.size(); ++b) c.p.lens.set_i(static_cast<int64_t>(b), before[b]);
  c.d.dtype = t, c.d.batch = s.B, c.d.kv_heads = s.Hkv, c.d.new_len = lnew, c.d.head_dim = s.D;
  c.d.num_pages = c.p.desc.num_pages, c.d.page_size = P, c.d.max_pages = s.max_pages;
  const Dims nd{s.B, s.Hkv, lnew, s.D};
  c.Lnew = bshd ? bt::permuted(nd, {0, 2, 1, 3}) : bt::contiguous(nd);
  c.kn = bt::HostBuffer(t, c.Lnew.storage);
  c.vn = bt::HostBuffer(t, c.Lnew.storage);
  bt::scatter(c.kn, c.Lnew, bt::random_values(t, c.Lnew.numel(), rng));
  bt::scatter(c.vn, c.Lnew, bt::random_values(t, c.Lnew.numel(), rng));
  return c;
}

// Expected pages after appending (model: slot by slot through the table).
void expect_appended(const AppendCase& c, const bt::HostBuffer& k_before, const bt::HostBuffer& v_before) {
  const auto& s = c.p.s;
  std::vector<double> ek = bt::all_values(k_before), ev = bt::all_values(v_before);
  const auto kn = bt::gather(c.kn, c.Lnew), vn = bt::gather(c.vn, c.Lnew);
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t n = c.p.lens.get_i(b);
    for (int64_t i = 0; i < c.d.new_len; ++i) {
      const int64_t j = n + i, pg = c.p.table.get_i(b * s.max_pages + j / s.P), slot = j % s.P;
      for (int64_t h = 0; h < s.Hkv; ++h)
        for (int64_t e = 0; e < s.D; ++e) {
          const size_t dst = static_cast<size_t>(((pg * s.P + slot) * s.Hkv + h) * s.D + e);
          const size_t src = static_cast<size_t>(((b * s.Hkv + h) * c.d.new_len + i) * s.D + e);
          ek[dst] = kn[src];
          ev[dst] = vn[src];
        }
    }
  }
  EXPECT_EQ(bt::all_values(c.p.kp), ek);
  EXPECT_EQ(bt::all_values(c.p.vp), ev);
}

TEST(CpuPagedKvAppend, WritesThroughTable) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int64_t lnew : {1, 5, 17})
      for (bool bshd : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " lnew " + std::to_string(lnew) + " bshd " + std::to_string(bshd));
        auto rng = bt::make_rng(bt::fresh_seed(std::to_string(lnew)));
        AppendCase c = append_case(t, lnew, {0, 15, 16, 31}, 16, bshd, rng);
        const bt::HostBuffer kb = c.p.kp, vb = c.p.vp;
        auto plan = PagedKvAppendPlan::select(kCpu, c.d);
        ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
        const Status st = plan->run(kCpu, {}, c.args());
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        expect_appended(c, kb, vb);
      }
}

TEST(CpuPagedKvAppend, AppendThenAttendEqualsDense) {
  // Chunked prefill: append Lq keys, then attend with seq_lens = before + Lq.
  auto rng = bt::make_rng(bt::fresh_seed());
  const int64_t lq = 3;
  AppendCase c = append_case(DType::F32, lq, {4, 13, 0}, 4, false, rng);
  auto ap = PagedKvAppendPlan::select(kCpu, c.d);
  ASSERT_TRUE(ap.is_ok());
  ASSERT_TRUE(ap->run(kCpu, {}, c.args()).is_ok());
  // Attention problem over the same pool.
  bt::PagedProblem& p = c.p;
  for (int64_t b = 0; b < p.s.B; ++b) p.lens.set_i(b, p.lens.get_i(b) + lq);
  p.s.Lq = lq;
  p.desc.q_len = lq;
  p.Lq_ = bt::qo_layout(p.s);
  p.Llse = bt::contiguous({p.s.B, p.s.Hq, lq});
  p.q = bt::HostBuffer(p.s.t, p.Lq_.storage);
  bt::scatter(p.q, p.Lq_, bt::random_values(p.s.t, p.Lq_.numel(), rng));
  p.out = bt::HostBuffer(p.s.t, p.Lq_.storage);
  p.lse = bt::HostBuffer(DType::F32, p.Llse.storage);
  // Rebuild the dense copy from the pages now written.
  for (int64_t b = 0; b < p.s.B; ++b) {
    const int64_t n = p.lens.get_i(b);
    auto& K = p.kd[static_cast<size_t>(b)];
    auto& V = p.vd[static_cast<size_t>(b)];
    K.assign(static_cast<size_t>(p.s.Hkv * n * p.s.D), 0);
    V.assign(K.size(), 0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t h = 0; h < p.s.Hkv; ++h)
        for (int64_t e = 0; e < p.s.D; ++e) {
          const int64_t pg = p.table.get_i(b * p.s.max_pages + j / p.s.P);
          const int64_t src = ((pg * p.s.P + j % p.s.P) * p.s.Hkv + h) * p.s.D + e;
          K[static_cast<size_t>((h * n + j) * p.s.D + e)] = p.kp.get(src);
          V[static_cast<size_t>((h * n + j) * p.s.D + e)] = p.vp.get(src);
        }
  }
  auto plan = PagedAttentionPlan::select(kCpu, p.desc);
  ASSERT_TRUE(plan.is_ok());
  ASSERT_TRUE(plan->run(kCpu, {}, p.args()).is_ok());
  std::vector<double> ro, rl;
  bt::paged_model(p, plan->scale(), &ro, &rl);
  EXPECT_LE(bt::rel_error(bt::gather(p.out, p.Lq_), ro), 1e-5);
  // The appended keys are the dense model's last ones (sanity of the model).
  const auto kn = bt::gather(c.kn, c.Lnew);
  EXPECT_EQ(p.kd[0][static_cast<size_t>(4 * p.s.D)], kn[0]);
}

TEST(CpuPagedKvAppend, Errors) {
  auto rng = bt::make_rng(5);
  {
    AppendCase c = append_case(DType::F16, 2, {3, 8}, 4, false, rng);
    auto plan = PagedKvAppendPlan::select(kCpu, c.d);
    ASSERT_TRUE(plan.is_ok());
    c.p.lens.set_i(1, c.d.max_pages * c.d.page_size - 1);
    BT_EXPECT_STATUS(plan->run(kCpu, {}, c.args()), StatusCode::InvalidProblem, "exceeds max_pages * page_size");
    c.p.lens.set_i(1, -1);
    BT_EXPECT_STATUS(plan->run(kCpu, {}, c.args()), StatusCode::InvalidProblem, "negative");
  }
  {
    AppendCase c = append_case(DType::F16, 2, {3, 8}, 4, false, rng);
    auto plan = PagedKvAppendPlan::select(kCpu, c.d);
    c.p.table.set_i(0 * c.d.max_pages + 1, -3);  // sequence 0 writes positions 3, 4: pages 0 and 1
    const bt::HostBuffer kb = c.p.kp;
    BT_EXPECT_STATUS(plan->run(kCpu, {}, c.args()), StatusCode::InvalidProblem, "block_table[0, 1]");
    EXPECT_EQ(bt::all_values(c.p.kp), bt::all_values(kb));  // nothing written
  }
  {
    AppendCase c = append_case(DType::F16, 2, {3, 8}, 4, false, rng);
    auto plan = PagedKvAppendPlan::select(kCpu, c.d);
    auto a = c.args();
    a.k_new.shape = Dims{2, 2, 3, 16};
    BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "k_new");
    a = c.args();
    bt::HostBuffer t64(DType::I64, c.p.Ltable.storage);
    a.block_table = bt::view(t64, c.p.Ltable);
    BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "block_table");
  }
  PagedKvAppendDescriptor d;
  d.head_dim = 8, d.page_size = 0;
  BT_EXPECT_STATUS(PagedKvAppendPlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "PagedKvAppendPlan: page_size");
  d.page_size = 16, d.new_len = -1;
  BT_EXPECT_STATUS(PagedKvAppendPlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "new_len");
  d.new_len = 1, d.dtype = DType::F64;
  BT_EXPECT_STATUS(PagedKvAppendPlan::select(kCpu, d).status(), StatusCode::Unsupported, "dtype");
}

TEST(CpuPagedKvAppend, ZeroBatchAndZeroLen) {
  auto rng = bt::make_rng(6);
  AppendCase c = append_case(DType::F32, 0, {3, 0}, 4, false, rng);
  const bt::HostBuffer kb = c.p.kp;
  auto plan = PagedKvAppendPlan::select(kCpu, c.d);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_TRUE(plan->run(kCpu, {}, c.args()).is_ok());
  EXPECT_EQ(bt::all_values(c.p.kp), bt::all_values(kb));
}

}  // namespace

// Family "attention_paged": PagedAttentionPlan (split-KV decode / chunked
// prefill over a paged KV cache), bandwidth of the KV bytes read against the
// device's own copy bandwidth (bench/torch/attention_paged.py times PyTorch SDPA
// with enable_gqa on the equivalent DENSE KV, same case names):
//   paged.q<Lq>.bf16.<B>x<ctx>x<Hq>x<Hkv>x<D>.p<page>
//     B 64 x ctx 4096 and B 8 x ctx 32768, Hq 32, Hkv 8, D 128, page 16,
//     Lq 1 (decode) and 4 (causal, bottom-right: speculative / chunked decode).
// Every sequence holds ctx keys (seq_lens = ctx); the block table is a random
// permutation of the pool (non-contiguous pages). q / out [B, Hq, Lq, D]
// contiguous, no lse.
//  * bytes counted: the K and V pages read (B * ctx * Hkv * D * 2 * 2 bytes); q,
//    out, the table and the split partials are not counted;
//  * the pools (1 GiB for K + V at both shapes) are far larger than L2: one set.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../bandwidth.hpp"
#include "baracuda/ops/attention_paged.hpp"

namespace baracuda::bench {
namespace {

struct PagedShape {
  int64_t B, ctx, Hq, Hkv, D, P, Lq;
};

void run_case(const Env& env, const BandwidthCase& c, const PagedShape& s, BandwidthResult& r) {
  PagedAttentionDescriptor d;
  d.dtype = c.dtype;
  d.batch = s.B;
  d.heads = s.Hq;
  d.kv_heads = s.Hkv;
  d.q_len = s.Lq;
  d.head_dim = s.D;
  d.page_size = s.P;
  d.max_pages = (s.ctx + s.P - 1) / s.P;
  d.num_pages = s.B * d.max_pages;
  d.causal = true;
  auto plan = PagedAttentionPlan::select(env.stream, d);
  status_check(plan.status(), "PagedAttentionPlan::select");
  record_sku(r, plan->sku());

  const size_t esz = dtype_size(c.dtype);
  const Dims qs{s.B, s.Hq, s.Lq, s.D};
  const Dims ps{d.num_pages, s.P, s.Hkv, s.D};
  const size_t qn = static_cast<size_t>(shape_numel(qs)), pn = static_cast<size_t>(shape_numel(ps));
  Buffer q = device_buffer(qn * esz), out = device_buffer(qn * esz);
  Buffer kp = device_buffer(pn * esz), vp = device_buffer(pn * esz);
  uint64_t seed = 7;
  cuda_check(bench_fill_uniform(q.data(), c.dtype, qn, -1.f, 1.f, seed++, env.cs), "fill q");
  cuda_check(bench_fill_uniform(kp.data(), c.dtype, pn, -1.f, 1.f, seed++, env.cs), "fill k");
  cuda_check(bench_fill_uniform(vp.data(), c.dtype, pn, -1.f, 1.f, seed++, env.cs), "fill v");
  std::vector<int32_t> table(static_cast<size_t>(d.num_pages));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(42));
  std::vector<int32_t> lens(static_cast<size_t>(s.B), static_cast<int32_t>(s.ctx));
  Buffer dt = device_buffer(table.size() * 4), dl = device_buffer(lens.size() * 4);
  status_check(dt.copy_from_host(table.data(), table.size() * 4), "upload block_table");
  status_check(dl.copy_from_host(lens.data(), lens.size() * 4), "upload seq_lens");
  Buffer ws = device_buffer(plan->workspace_size(), 16);

  PagedAttentionArgs a;
  a.q = q.view(c.dtype, qs);
  a.k_pages = kp.view(c.dtype, ps);
  a.v_pages = vp.view(c.dtype, ps);
  a.block_table = dt.view(DType::I32, {s.B, d.max_pages});
  a.seq_lens = dl.view(DType::I32, {s.B});
  a.out = out.view_mut(c.dtype, qs);
  status_check(plan->can_implement(a), "can_implement");
  r.bytes = static_cast<double>(2 * s.B * s.ctx * s.Hkv * s.D) * static_cast<double>(esz);
  r.sets = 1;
  const Workspace w(ws.data(), ws.bytes());
  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int) {
    status_check(plan->run(env.stream, w, a), "run");
  });
  r.us = ms * 1e3;
}

}  // namespace

void register_attention_paged(Registry& reg) {
  reg.add_family(Family{"attention_paged", "paged", 30, 5, bandwidth_start("baracuda_attention_paged_bench")});
  const PagedShape shapes[] = {{64, 4096, 32, 8, 128, 16, 1}, {64, 4096, 32, 8, 128, 16, 4},
                               {8, 32768, 32, 8, 128, 16, 1}, {8, 32768, 32, 8, 128, 16, 4}};
  for (const PagedShape& s : shapes) {
    BandwidthCase c{{}, "paged", false, DType::BF16, Dims{s.B, s.ctx, s.Hq, s.Hkv, s.D}, Dims{}};
    c.name = "paged.q" + std::to_string(s.Lq) + "." + std::string(dtype_name(c.dtype)) + "." + join(c.shape, "x") + ".p" +
             std::to_string(s.P);
    reg.add_case(bandwidth_case("attention_paged", c, [c, s](Env& env, BandwidthResult& r) { run_case(env, c, s, r); }));
  }
}

}  // namespace baracuda::bench

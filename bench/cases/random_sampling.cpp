// Family "random_sampling": RandpermPlan and MultinomialPlan, time and the
// bandwidth of the bytes they must move (out written, probs read; the sorts'
// scratch traffic is not counted, so %copy is a lower bound of the work);
// bench/torch/random_sampling.py times torch on the same case names:
//   randperm.i64.<n>                          n = 10^6, 10^7 (torch.randperm(n, device="cuda"))
//   multinomial.repl.f32.<R>x<C>.s<S>         LLM-style sampling: 1024 x 50304 and 64 x 50304,
//                                             1 sample per row; 4096 x 1000, 8 samples
//                                             (torch.multinomial(probs, S, replacement=True))
//   multinomial.norepl.f32.<R>x<C>.s<S>       64 x 50304, 16 samples; 1 x 2^20, 1000 / 256 / 257 samples
//                                             (256 | 257: race_topk's limit | segmented_sort)
//                                             (replacement=False)
// Bytes counted: n * 8 written (randperm); R C 4 read + R S 8 written (multinomial).
#include <algorithm>
#include <string>
#include <vector>

#include "../bandwidth.hpp"
#include "baracuda/ops/random_sampling.hpp"

namespace baracuda::bench {

namespace {

void run_randperm(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  RandpermDescriptor d;
  d.n = c.shape[0];
  d.dtype = c.dtype;
  auto p = RandpermPlan::select(env.stream, d);
  status_check(p.status(), "RandpermPlan::select");
  record_sku(r, p->sku());
  const size_t bytes = static_cast<size_t>(d.n) * dtype_size(d.dtype);
  Buffer out = device_buffer(bytes), ws = device_buffer(std::max<size_t>(p->workspace_size(), 1));
  r.bytes = static_cast<double>(bytes);
  r.sets = 1;
  RandpermArgs a;
  a.out = out.view_mut(d.dtype, {d.n});
  status_check(p->can_implement(a), "can_implement");
  const Workspace W(ws.data(), p->workspace_size());
  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    a.seed = RandomSeed{1234, static_cast<uint64_t>(i)};
    status_check(p->run(env.stream, W, a), "run");
  });
  r.us = ms * 1e3;
}

void run_multinomial(const Env& env, const BandwidthCase& c, BandwidthResult& r, int64_t S, bool replacement) {
  MultinomialDescriptor d;
  d.dtype = c.dtype;
  d.probs_shape = c.shape;
  d.num_samples = S;
  d.replacement = replacement;
  auto p = MultinomialPlan::select(env.stream, d);
  status_check(p.status(), "MultinomialPlan::select");
  record_sku(r, p->sku());
  const int64_t R = c.shape[0], C = c.shape[1];
  const size_t pb = static_cast<size_t>(R * C) * dtype_size(d.dtype), ob = static_cast<size_t>(R * S) * 8;
  Buffer probs = device_buffer(pb), out = device_buffer(ob), ws = device_buffer(std::max<size_t>(p->workspace_size(), 1));
  cuda_check(bench_fill_uniform(probs.data(), d.dtype, static_cast<size_t>(R * C), 0.01f, 1.f, 7, env.cs), "fill");
  r.bytes = static_cast<double>(pb + ob);
  r.sets = 1;
  MultinomialArgs a;
  a.probs = probs.view(d.dtype, {R, C});
  a.out = out.view_mut(DType::I64, {R, S});
  status_check(p->can_implement(a), "can_implement");
  const Workspace W(ws.data(), p->workspace_size());
  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    a.seed = RandomSeed{99, static_cast<uint64_t>(i)};
    status_check(p->run(env.stream, W, a), "run");
  });
  r.us = ms * 1e3;
}

}  // namespace

void register_random_sampling(Registry& reg) {
  reg.add_family(Family{"random_sampling", "", 20, 3, bandwidth_start("baracuda_random_sampling_bench")});
  for (const int64_t n : {int64_t{1000000}, int64_t{10000000}}) {
    BandwidthCase c{{}, "randperm", false, DType::I64, Dims{n}, Dims{}};
    c.name = "randperm.i64." + std::to_string(n);
    reg.add_case(bandwidth_case("random_sampling", c, [c](Env& env, BandwidthResult& r) { run_randperm(env, c, r); }));
  }
  struct M {
    int64_t R, C, S;
    bool replacement;
  };
  for (const M m : {M{1024, 50304, 1, true}, M{64, 50304, 1, true}, M{4096, 1000, 8, true}, M{64, 50304, 16, false},
                    M{1, int64_t{1} << 20, 1000, false}, M{1, int64_t{1} << 20, 256, false},
                    M{1, int64_t{1} << 20, 257, false}}) {
    BandwidthCase c{{}, m.replacement ? "multinomial_repl" : "multinomial_norepl", false, DType::F32, Dims{m.R, m.C},
                    Dims{}};
    c.name = std::string("multinomial.") + (m.replacement ? "repl" : "norepl") + ".f32." + join(c.shape, "x") + ".s" +
             std::to_string(m.S);
    reg.add_case(bandwidth_case("random_sampling", c,
                                [c, m](Env& env, BandwidthResult& r) { run_multinomial(env, c, r, m.S, m.replacement); }));
  }
}

}  // namespace baracuda::bench

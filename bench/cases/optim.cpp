// Family "optim": the optimizers and gradient utilities over GPT-2 124M's
// parameter list (148 tensors: wte [50304, 768], wpe [1024, 768], 12 layers of
// ln_1 w, b [768], attn.c_attn w [768, 2304] b [2304], attn.c_proj w [768, 768]
// b [768], ln_2 w, b, mlp.c_fc w [768, 3072] b [3072], mlp.c_proj w [3072, 768]
// b [768], ln_f w, b: 124,475,904 parameters), bandwidth against the device's
// copy bandwidth (bench/torch/optim.py times torch on the same case names):
//   adamw.f32.gpt2           AdamPlan (AdamW, wd 0.01), f32 params / grads / m / v
//                            bytes counted 28 per parameter: p r/w, g r, m r/w, v r/w
//   adamw.bf16_master.gpt2   bf16 params + grads, f32 master, m, v
//                            bytes counted 28 per parameter: p (bf16) w 2, g (bf16) r 2,
//                            master r/w 8, m r/w 8, v r/w 8 (the bf16 params are not read)
//   sgd_momentum.f32.gpt2    SgdPlan (momentum 0.9, wd 0.01, buffers initialized):
//                            bytes counted 20 per parameter: p r/w, g r, buf r/w
//   sgd_nesterov.f32.gpt2    the same with nesterov (dampening 0): 20 per parameter
//   lion.f32.gpt2            LionPlan (betas 0.9 / 0.99, wd 0.01): 20 per parameter:
//                            p r/w, g r, m r/w (torch has no Lion: % of copy only)
//   adafactor.f32.gpt2       AdafactorPlan (torch's defaults, lr 1e-2): bytes counted 12
//                            per parameter, the least any implementation moves (p r/w,
//                            g r; the factored state is R + C floats per matrix). Ours
//                            reads g four times and p twice (row sums, column sums,
//                            ||u||, update), so 100 % of copy is out of its reach.
//   clip_grad_norm.f32.gpt2  ClipGradNormPlan (L2, max_norm 1): bytes 12 per parameter
//                            (the norm reads g, the scaling reads and writes it)
//   global_norm.f32.gpt2     GlobalNormPlan (L2): bytes 4 per parameter
// One buffer set (the list is ~2 GB: far beyond L2). The optimizer runs with a
// small lr and a host step that grows with the iteration.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"
#include "baracuda/ops/optim.hpp"
#include "baracuda/ops/optim_adafactor.hpp"

namespace baracuda::bench {
namespace {

std::vector<Dims> gpt2_shapes() {
  const int64_t C = 768;
  std::vector<Dims> s = {Dims{50304, C}, Dims{1024, C}};
  for (int l = 0; l < 12; ++l) {
    s.push_back(Dims{C}), s.push_back(Dims{C});
    s.push_back(Dims{C, 3 * C}), s.push_back(Dims{3 * C});
    s.push_back(Dims{C, C}), s.push_back(Dims{C});
    s.push_back(Dims{C}), s.push_back(Dims{C});
    s.push_back(Dims{C, 4 * C}), s.push_back(Dims{4 * C});
    s.push_back(Dims{4 * C, C}), s.push_back(Dims{C});
  }
  s.push_back(Dims{C}), s.push_back(Dims{C});
  return s;
}

// One list of tensors, each in its own 256-byte aligned slice of one buffer.
struct DeviceList {
  Buffer buf;
  std::vector<size_t> off;
  DType t = DType::F32;
  DeviceList(const Env& env, DType dt, const std::vector<Dims>& shapes, float lo, float hi) : t(dt) {
    size_t total = 0;
    for (const Dims& d : shapes) {
      off.push_back(total);
      total += (static_cast<size_t>(shape_numel(d)) * dtype_size(dt) + 255) / 256 * 256;
    }
    buf = device_buffer(total);
    for (size_t k = 0; k < shapes.size(); ++k)
      cuda_check(bench_fill_uniform(static_cast<char*>(buf.data()) + off[k], dt, static_cast<size_t>(shape_numel(shapes[k])),
                                    lo, hi, g_seed++, env.cs),
                 "fill");
  }
  std::vector<TensorMut> muts(const std::vector<Dims>& shapes) {
    std::vector<TensorMut> v;
    for (size_t k = 0; k < shapes.size(); ++k)
      v.push_back(TensorMut::contiguous(static_cast<char*>(buf.data()) + off[k], t, Device::cuda(0), shapes[k]));
    return v;
  }
  std::vector<TensorRef> refs(const std::vector<Dims>& shapes) {
    std::vector<TensorRef> v;
    for (const TensorMut& m : muts(shapes)) v.push_back(m);
    return v;
  }
};

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const std::vector<Dims> shapes = gpt2_shapes();
  int64_t n = 0;
  for (const Dims& d : shapes) n += shape_numel(d);
  r.sets = 1;
  double ms = 0;
  if (c.op == "adamw") {
    const bool master = c.name.find("bf16_master") != std::string::npos;
    AdamDescriptor d;
    d.shapes = shapes;
    d.param_dtype = master ? DType::BF16 : DType::F32;
    d.master_weights = master;
    auto plan = AdamPlan::select(env.stream, d);
    status_check(plan.status(), "AdamPlan::select");
    record_sku(r, plan->sku());
    DeviceList p(env, d.param_dtype, shapes, -1, 1), g(env, d.param_dtype, shapes, -1, 1),
        m(env, DType::F32, shapes, -0.1f, 0.1f), v(env, DType::F32, shapes, 0, 0.01f);
    std::optional<DeviceList> mw;
    if (master) mw.emplace(env, DType::F32, shapes, -1, 1);
    AdamArgs a;
    a.params = p.muts(shapes), a.grads = g.refs(shapes), a.exp_avg = m.muts(shapes), a.exp_avg_sq = v.muts(shapes);
    if (master) a.master = mw->muts(shapes);
    a.lr = 1e-4;
    status_check(plan->can_implement(a), "can_implement");
    r.bytes = 28.0 * static_cast<double>(n);
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      a.step = i + 1;
      status_check(plan->run(env.stream, Workspace::none(), a), "run");
    });
  } else if (c.op == "sgd_momentum" || c.op == "sgd_nesterov") {
    SgdDescriptor d;
    d.shapes = shapes;
    d.momentum = 0.9;
    d.nesterov = c.op == "sgd_nesterov";
    d.weight_decay = 0.01;
    auto plan = SgdPlan::select(env.stream, d);
    status_check(plan.status(), "SgdPlan::select");
    record_sku(r, plan->sku());
    DeviceList p(env, DType::F32, shapes, -1, 1), g(env, DType::F32, shapes, -1, 1),
        b(env, DType::F32, shapes, -0.1f, 0.1f);
    SgdArgs a;
    a.params = p.muts(shapes), a.grads = g.refs(shapes), a.momentum_buffer = b.muts(shapes);
    a.buffers_initialized = true;
    a.lr = 1e-4;
    status_check(plan->can_implement(a), "can_implement");
    r.bytes = 20.0 * static_cast<double>(n);
    ms = time_median_ms(env.cs, env.warmup, env.iters,
                        [&](int) { status_check(plan->run(env.stream, Workspace::none(), a), "run"); });
  } else if (c.op == "lion") {
    LionDescriptor d;
    d.shapes = shapes;
    d.weight_decay = 0.01;
    auto plan = LionPlan::select(env.stream, d);
    status_check(plan.status(), "LionPlan::select");
    record_sku(r, plan->sku());
    DeviceList p(env, DType::F32, shapes, -1, 1), g(env, DType::F32, shapes, -1, 1),
        m(env, DType::F32, shapes, -0.1f, 0.1f);
    LionArgs a;
    a.params = p.muts(shapes), a.grads = g.refs(shapes), a.exp_avg = m.muts(shapes);
    a.lr = 1e-4;
    status_check(plan->can_implement(a), "can_implement");
    r.bytes = 20.0 * static_cast<double>(n);
    ms = time_median_ms(env.cs, env.warmup, env.iters,
                        [&](int) { status_check(plan->run(env.stream, Workspace::none(), a), "run"); });
  } else if (c.op == "adafactor") {
    AdafactorDescriptor d;
    d.shapes = shapes;
    auto plan = AdafactorPlan::select(env.stream, d);
    status_check(plan.status(), "AdafactorPlan::select");
    record_sku(r, plan->sku());
    // State shapes: [R, 1] and [1, C] for matrices, the parameter's for vectors.
    std::vector<Dims> rows, cols, vars;
    for (const Dims& sh : shapes) {
      if (sh.rank >= 2) {
        Dims rr = sh, cc = sh;
        rr[sh.rank - 1] = 1, cc[sh.rank - 2] = 1;
        rows.push_back(rr), cols.push_back(cc);
      } else {
        vars.push_back(sh);
      }
    }
    DeviceList p(env, DType::F32, shapes, -1, 1), g(env, DType::F32, shapes, -1, 1),
        rv(env, DType::F32, rows, 0, 0.01f), cv(env, DType::F32, cols, 0, 0.01f), vv(env, DType::F32, vars, 0, 0.01f);
    const std::vector<TensorMut> rm = rv.muts(rows), cm = cv.muts(cols), vm = vv.muts(vars);
    AdafactorArgs a;
    a.params = p.muts(shapes), a.grads = g.refs(shapes);
    size_t ir = 0, iv = 0;
    for (const Dims& sh : shapes) {
      const bool f = sh.rank >= 2;
      a.row_vars.push_back(f ? rm[ir] : TensorMut());
      a.col_vars.push_back(f ? cm[ir] : TensorMut());
      a.variances.push_back(f ? TensorMut() : vm[iv]);
      (f ? ir : iv) += 1;
    }
    a.step = 1;
    status_check(plan->can_implement(a), "can_implement");
    Buffer ws = device_buffer(std::max<size_t>(plan->workspace_size(), 1));
    const Workspace W(ws.data(), plan->workspace_size());
    r.bytes = 12.0 * static_cast<double>(n);
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      a.step = i + 1;
      status_check(plan->run(env.stream, W, a), "run");
    });
  } else {
    DeviceList g(env, DType::F32, shapes, -1, 1);
    Buffer out = device_buffer(16);
    const TensorMut o = TensorMut::contiguous(out.data(), DType::F32, Device::cuda(0), Dims{});
    if (c.op == "clip_grad_norm") {
      ClipGradNormDescriptor d;
      d.shapes = shapes;
      auto plan = ClipGradNormPlan::select(env.stream, d);
      status_check(plan.status(), "ClipGradNormPlan::select");
      record_sku(r, plan->sku());
      Buffer ws = device_buffer(plan->workspace_size());
      const ClipGradNormArgs a{g.muts(shapes), o, TensorMut{}};
      r.bytes = 12.0 * static_cast<double>(n);
      ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int) {
        status_check(plan->run(env.stream, Workspace(ws.data(), ws.bytes()), a), "run");
      });
    } else {
      GlobalNormDescriptor d;
      d.shapes = shapes;
      auto plan = GlobalNormPlan::select(env.stream, d);
      status_check(plan.status(), "GlobalNormPlan::select");
      record_sku(r, plan->sku());
      Buffer ws = device_buffer(plan->workspace_size());
      const GlobalNormArgs a{g.refs(shapes), o};
      r.bytes = 4.0 * static_cast<double>(n);
      ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int) {
        status_check(plan->run(env.stream, Workspace(ws.data(), ws.bytes()), a), "run");
      });
    }
  }
  r.us = ms * 1e3;
}

}  // namespace

void register_optim(Registry& reg) {
  reg.add_family(Family{"optim", "", 20, 5, bandwidth_start("baracuda_optim_bench")});
  const char* names[][2] = {{"adamw", "adamw.f32.gpt2"},
                            {"adamw", "adamw.bf16_master.gpt2"},
                            {"sgd_momentum", "sgd_momentum.f32.gpt2"},
                            {"sgd_nesterov", "sgd_nesterov.f32.gpt2"},
                            {"lion", "lion.f32.gpt2"},
                            {"adafactor", "adafactor.f32.gpt2"},
                            {"clip_grad_norm", "clip_grad_norm.f32.gpt2"},
                            {"global_norm", "global_norm.f32.gpt2"}};
  for (const auto& nm : names) {
    BandwidthCase c{nm[1], nm[0], false, DType::F32, Dims{}, Dims{}};
    reg.add_case(bandwidth_case("optim", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
  }
}

}  // namespace baracuda::bench

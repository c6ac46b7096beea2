// Helpers for the AdafactorPlan tests (CPU and CUDA): a parameter list with its
// state on one device, stepped several times with fresh gradients, read back
// as doubles.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "baracuda/core/buffer.hpp"
#include "baracuda/ops/optim_adafactor.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::AdafactorArgs;
using baracuda::AdafactorDescriptor;
using baracuda::AdafactorPlan;
using baracuda::Device;
using baracuda::Dims;
using baracuda::Status;
using baracuda::Stream;
using baracuda::TensorMut;
using baracuda::TensorRef;

// Storage of one tensor on the CPU (a HostBuffer) or on CUDA device 0.
struct AfStore {
  baracuda::DType t = baracuda::DType::F32;
  Dims shape;
  HostBuffer host;
  std::unique_ptr<baracuda::Buffer> dev;
  AfStore(const Stream& s, const HostBuffer& init, Dims shp) : t(init.dtype()), shape(shp), host(init) {
    if (s.is_cuda()) {
      dev = std::make_unique<baracuda::Buffer>(baracuda::Device::cuda(0), std::max<size_t>(init.bytes(), 16));
      if (init.bytes()) EXPECT_TRUE(dev->copy_from_host(init.data(), init.bytes()).is_ok());
    }
  }
  void* ptr() { return dev ? dev->data() : host.data(); }
  Device device() const { return dev ? Device::cuda(0) : Device::cpu(); }
  TensorMut mut() { return TensorMut::contiguous(ptr(), t, device(), shape); }
  TensorRef ref() { return mut(); }
  void upload(const HostBuffer& h) {
    if (dev) {
      if (h.bytes()) EXPECT_TRUE(dev->copy_from_host(h.data(), h.bytes()).is_ok());
    } else if (h.bytes()) {
      std::memcpy(host.data(), h.data(), h.bytes());  // the views keep pointing at host
    }
  }
  std::vector<double> read() {
    HostBuffer h(t, host.size());
    if (dev) {
      if (h.bytes()) EXPECT_TRUE(dev->copy_to_host(h.data(), h.bytes()).is_ok());
    } else {
      h = host;
    }
    std::vector<double> v(static_cast<size_t>(h.size()));
    for (int64_t i = 0; i < h.size(); ++i) v[static_cast<size_t>(i)] = h.get(i);
    return v;
  }
};

struct AfResult {
  Status st;
  std::string variant;
  std::vector<std::vector<double>> params, row_vars, col_vars, variances;
  double step = 0;  // step_tensor after the run (device_scalars)
};

// Initial parameters and one gradient list per step, random in [-1, 1) (rounded
// to the dtype), from `seed`.
struct AfProblem {
  AdafactorDescriptor d;
  std::vector<HostBuffer> params;
  std::vector<std::vector<HostBuffer>> grads;  // [step][param]
  std::vector<float> lrs;                      // device_scalars: lr per step (default d.lr)
};

inline AfProblem af_problem(const AdafactorDescriptor& d, int steps, uint64_t seed, double grad_scale = 1.0) {
  Rng rng(seed);
  AfProblem p;
  p.d = d;
  for (const Dims& s : d.shapes) {
    HostBuffer h(d.dtype, numel(s));
    for (int64_t i = 0; i < h.size(); ++i) h.set(i, uniform(rng, -1.0, 1.0));
    p.params.push_back(h);
  }
  for (int k = 0; k < steps; ++k) {
    std::vector<HostBuffer> gs;
    for (const Dims& s : d.shapes) {
      HostBuffer h(d.dtype, numel(s));
      for (int64_t i = 0; i < h.size(); ++i) h.set(i, uniform(rng, -1.0, 1.0) * grad_scale);
      gs.push_back(h);
    }
    p.grads.push_back(gs);
    p.lrs.push_back(static_cast<float>(d.lr));
  }
  return p;
}

// A plan's whole argument set on one device, from zero state: parameters
// from `p.params`, gradients p.grads[0], step_tensor 0 and lr_tensor p.lrs[0]
// (device_scalars), a workspace of workspace_size().
struct AfSetup {
  std::vector<std::unique_ptr<AfStore>> params, grads, rows, cols, vars;
  std::unique_ptr<AfStore> step, lr;
  std::unique_ptr<baracuda::Buffer> ws_dev;
  std::vector<uint64_t> ws_host;
  baracuda::Workspace ws = baracuda::Workspace::none();
  AdafactorArgs a;

  AfSetup(const Stream& s, const AdafactorPlan& plan, const AfProblem& p) {
    for (size_t i = 0; i < p.d.shapes.size(); ++i) {
      const Dims& shp = p.d.shapes[i];
      params.push_back(std::make_unique<AfStore>(s, p.params[i], shp));
      grads.push_back(std::make_unique<AfStore>(s, p.grads[0][i], shp));
      a.params.push_back(params.back()->mut());
      a.grads.push_back(grads.back()->ref());
      auto zeros = [](const Dims& d) {
        HostBuffer h(baracuda::DType::F32, numel(d));
        h.fill_bytes(0);
        return h;
      };
      if (plan.factored(i)) {
        rows.push_back(std::make_unique<AfStore>(s, zeros(plan.row_var_shape(i)), plan.row_var_shape(i)));
        cols.push_back(std::make_unique<AfStore>(s, zeros(plan.col_var_shape(i)), plan.col_var_shape(i)));
        vars.push_back(nullptr);
        a.row_vars.push_back(rows.back()->mut());
        a.col_vars.push_back(cols.back()->mut());
        a.variances.push_back(TensorMut());
      } else {
        rows.push_back(nullptr), cols.push_back(nullptr);
        vars.push_back(std::make_unique<AfStore>(s, zeros(shp), shp));
        a.row_vars.push_back(TensorMut());
        a.col_vars.push_back(TensorMut());
        a.variances.push_back(vars.back()->mut());
      }
    }
    if (p.d.device_scalars) {
      step = std::make_unique<AfStore>(s, host_from(baracuda::DType::F32, {0.0}), Dims{});
      lr = std::make_unique<AfStore>(s, host_from(baracuda::DType::F32, {p.lrs[0]}), Dims{});
      a.step_tensor = step->mut();
      a.lr_tensor = lr->ref();
    }
    ws_host.resize((plan.workspace_size() + 7) / 8 + 1);
    if (plan.workspace_size()) {
      if (s.is_cuda()) {
        ws_dev = std::make_unique<baracuda::Buffer>(baracuda::Device::cuda(0), plan.workspace_size());
        ws = baracuda::Workspace(ws_dev->data(), plan.workspace_size());
      } else {
        ws = baracuda::Workspace(ws_host.data(), plan.workspace_size());
      }
    }
  }
  // Step k's inputs: its gradients, and lr_tensor or the host step k + 1.
  void set_step(const AfProblem& p, size_t k) {
    for (size_t i = 0; i < grads.size(); ++i) grads[i]->upload(p.grads[k][i]);
    if (p.d.device_scalars) lr->upload(host_from(baracuda::DType::F32, {p.lrs[k]}));
    else a.step = static_cast<int64_t>(k) + 1;
  }
  void read_into(AfResult& r) {
    for (size_t i = 0; i < params.size(); ++i) {
      r.params.push_back(params[i]->read());
      r.row_vars.push_back(rows[i] ? rows[i]->read() : std::vector<double>{});
      r.col_vars.push_back(cols[i] ? cols[i]->read() : std::vector<double>{});
      r.variances.push_back(vars[i] ? vars[i]->read() : std::vector<double>{});
    }
    if (step) r.step = step->read()[0];
  }
};

// Runs every step of `p` on `s` from zero state (host steps 1, 2, ...; or the
// device step tensor from 0 with lr_tensor = lrs[k]).
inline AfResult af_run(const Stream& s, const AfProblem& p, const baracuda::PlanPreference& pref = {}) {
  AfResult r;
  auto plan = AdafactorPlan::select(s, p.d, pref);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  r.variant = plan->sku().variant;
  AfSetup u(s, *plan, p);
  for (size_t k = 0; k < p.grads.size(); ++k) {
    u.set_step(p, k);
    r.st = plan->run(s, u.ws, u.a);
    if (r.st.is_ok()) r.st = baracuda::synchronize(s);
    if (!r.st.is_ok()) return r;
  }
  u.read_into(r);
  return r;
}

inline AdafactorDescriptor af_desc(baracuda::DType t, std::vector<Dims> shapes) {
  AdafactorDescriptor d;
  d.dtype = t;
  d.shapes = std::move(shapes);
  return d;
}

}  // namespace bt

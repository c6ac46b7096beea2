// Optim test helpers shared by tests/optim/cpu_optim.cpp and cuda_optim.cpp:
// tensor lists held one Buffer per tensor on any device, built from f32
// values, read back as raw bytes (bit comparisons) or values; a problem
// (shapes, initial state, per-step gradients) and runners that apply an
// optimizer for several steps on a stream and return every list's bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/half.hpp"
#include "baracuda/ops/optim.hpp"
#include "support/tensor_utils.hpp"

namespace bt::optim {

using baracuda::Buffer;
using baracuda::Device;
using baracuda::Dims;
using baracuda::DType;
using baracuda::Status;
using baracuda::Stream;
using baracuda::TensorMut;
using baracuda::TensorRef;
using Values = std::vector<std::vector<float>>;  // one vector per tensor
using Bytes = std::vector<uint8_t>;

inline uint16_t bits16(DType t, float x) {
  return t == DType::BF16 ? baracuda::detail::f32_to_bf16_bits(x) : baracuda::detail::f32_to_f16_bits(x);
}
inline float from_bits16(DType t, uint16_t b) {
  return t == DType::BF16 ? baracuda::detail::bf16_bits_to_f32(b) : baracuda::detail::f16_bits_to_f32(b);
}
// x rounded to t (f32: unchanged).
inline float round_to_dtype(DType t, float x) { return t == DType::F32 ? x : from_bits16(t, bits16(t, x)); }

inline Bytes encode(DType t, const std::vector<float>& v) {
  Bytes b(v.size() * baracuda::dtype_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) std::memcpy(&b[i * 4], &v[i], 4);
    else {
      const uint16_t h = bits16(t, v[i]);
      std::memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}
inline std::vector<float> decode(DType t, const Bytes& b) {
  const size_t es = baracuda::dtype_size(t), n = b.size() / es;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::F32) std::memcpy(&v[i], &b[i * 4], 4);
    else {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      v[i] = from_bits16(t, h);
    }
  }
  return v;
}

// One tensor list on a device: a Buffer per tensor (16-byte aligned, at
// least 16 bytes), optionally `misalign` bytes into it (a multiple of the
// element size: the scalar path).
struct List {
  DType t = DType::F32;
  std::vector<Dims> shapes;
  std::vector<Buffer> bufs;
  size_t misalign = 0;
  List() = default;
  List(Device d, DType dt, const std::vector<Dims>& s, const Values& init, size_t mis = 0)
      : t(dt), shapes(s), misalign(mis) {
    for (size_t k = 0; k < s.size(); ++k) {
      const Bytes b = encode(dt, init[k]);
      bufs.emplace_back(d, std::max<size_t>(b.size() + mis, 16) + 16);
      if (!b.empty()) EXPECT_TRUE(bufs.back().copy_from_host(b.data(), b.size(), mis).is_ok());
    }
  }
  void* ptr(size_t k) const { return static_cast<uint8_t*>(bufs[k].data()) + misalign; }
  int64_t numel(size_t k) const { return baracuda::shape_numel(shapes[k]); }
  std::vector<TensorMut> muts() const {
    std::vector<TensorMut> v;
    for (size_t k = 0; k < bufs.size(); ++k)
      v.push_back(TensorMut::contiguous(ptr(k), t, bufs[k].device(), shapes[k]));
    return v;
  }
  std::vector<TensorRef> refs() const {
    std::vector<TensorRef> v;
    for (size_t k = 0; k < bufs.size(); ++k)
      v.push_back(TensorRef::contiguous(ptr(k), t, bufs[k].device(), shapes[k]));
    return v;
  }
  Bytes bytes() const {
    Bytes all;
    for (size_t k = 0; k < bufs.size(); ++k) {
      Bytes b(static_cast<size_t>(numel(k)) * baracuda::dtype_size(t));
      if (!b.empty()) EXPECT_TRUE(bufs[k].copy_to_host(b.data(), b.size(), misalign).is_ok());
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  }
  std::vector<float> values() const { return decode(t, bytes()); }
  void set(const Values& v) {
    for (size_t k = 0; k < bufs.size(); ++k) {
      const Bytes b = encode(t, v[k]);
      if (!b.empty()) EXPECT_TRUE(bufs[k].copy_from_host(b.data(), b.size(), misalign).is_ok());
    }
  }
};

// An F32 [] scalar on a device.
struct ScalarBuf {
  Buffer buf;
  ScalarBuf() = default;
  ScalarBuf(Device d, float v) : buf(d, 16) { set(v); }
  void set(float v) { EXPECT_TRUE(buf.copy_from_host(&v, 4).is_ok()); }
  float get() const {
    float v = 0;
    EXPECT_TRUE(buf.copy_to_host(&v, 4).is_ok());
    return v;
  }
  TensorRef ref() const { return TensorRef::contiguous(buf.data(), DType::F32, buf.device(), Dims{}); }
  TensorMut mut() { return TensorMut::contiguous(buf.data(), DType::F32, buf.device(), Dims{}); }
};

inline Device device_of(const Stream& s) { return s.device(); }

// Shapes with sizes 0, 1, odd, and a few larger ones.
inline std::vector<Dims> mixed_shapes(bool big) {
  std::vector<Dims> s = {Dims{0}, Dims{1}, Dims{7}, Dims{3, 5}, Dims{}, Dims{33, 31}, Dims{2, 0, 3}, Dims{4096}};
  if (big) s.push_back(Dims{100003});
  return s;
}

inline Values random_values(const std::vector<Dims>& shapes, Rng& rng, float lo, float hi) {
  Values v;
  for (const Dims& d : shapes) {
    std::vector<float> x(static_cast<size_t>(baracuda::shape_numel(d)));
    for (float& e : x) e = static_cast<float>(uniform(rng, lo, hi));
    v.push_back(std::move(x));
  }
  return v;
}
inline Values zeros(const std::vector<Dims>& shapes) {
  Values v;
  for (const Dims& d : shapes) v.emplace_back(static_cast<size_t>(baracuda::shape_numel(d)), 0.0f);
  return v;
}

// Initial state and per-step gradients of an optimizer problem.
struct Problem {
  std::vector<Dims> shapes;
  DType dtype = DType::F32;
  Values p0, s0, s1, s2;          // params (f32 values: the master's too), state lists
  std::vector<Values> grads;      // per step
  std::vector<double> lrs;        // per step
};

inline Problem make_problem(const std::vector<Dims>& shapes, DType t, int steps, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.shapes = shapes;
  p.dtype = t;
  p.p0 = random_values(shapes, rng, -1, 1);
  if (t != DType::F32)  // params representable: the master starts equal to them
    for (auto& v : p.p0)
      for (float& x : v) x = round_to_dtype(t, x);
  p.s0 = random_values(shapes, rng, -0.1f, 0.1f);
  p.s1 = random_values(shapes, rng, 0.0f, 0.01f);
  p.s2 = random_values(shapes, rng, 0.0f, 0.02f);
  for (int s = 0; s < steps; ++s) {
    p.grads.push_back(random_values(shapes, rng, -1, 1));
    for (auto& v : p.grads.back())
      for (float& x : v) x = round_to_dtype(t, x);
    p.lrs.push_back(1e-3 * (1 + s));
  }
  return p;
}

// Every list's bytes after the run, in a fixed order.
struct Outcome {
  Status st;
  std::vector<Bytes> lists;  // params, master, state lists...
  float step = 0;            // device step after the run (device_scalars)
};

struct Extras {
  bool misalign = false;     // params / grads 2 elements into their buffers (scalar path)
  float grad_scale = 1.0f;   // has_grad_scale
  float found_inf = 0.0f;    // has_found_inf
  baracuda::RandomSeed seed{1234, 0};
};

inline Outcome run_adam(const Stream& s, const baracuda::AdamDescriptor& d, const Problem& pb, const Extras& x = {}) {
  const Device dev = s.device();
  const size_t mis = x.misalign ? 2 * baracuda::dtype_size(d.param_dtype) : 0;
  List p(dev, d.param_dtype, pb.shapes, pb.p0, mis), m(dev, DType::F32, pb.shapes, pb.s0),
      v(dev, DType::F32, pb.shapes, pb.s1), vm(dev, DType::F32, pb.shapes, pb.s2),
      master(dev, DType::F32, pb.shapes, pb.p0);
  ScalarBuf lr(dev, 0), step(dev, 0), gs(dev, x.grad_scale), inf(dev, x.found_inf);
  Outcome o;
  auto plan = baracuda::AdamPlan::select(s, d);
  if (!plan) {
    o.st = plan.status();
    return o;
  }
  Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 16));
  for (size_t k = 0; k < pb.grads.size(); ++k) {
    List g(dev, d.param_dtype, pb.shapes, pb.grads[k], mis);
    baracuda::AdamArgs a;
    a.params = p.muts();
    a.grads = g.refs();
    a.exp_avg = m.muts();
    a.exp_avg_sq = v.muts();
    if (d.amsgrad) a.max_exp_avg_sq = vm.muts();
    if (d.master_weights) a.master = master.muts();
    a.lr = pb.lrs[k];
    a.step = static_cast<int64_t>(k + 1);
    if (d.device_scalars) {
      lr.set(static_cast<float>(pb.lrs[k]));
      a.lr_tensor = lr.ref();
      a.step_tensor = step.mut();
    }
    if (d.has_grad_scale) a.grad_scale = gs.ref();
    if (d.has_found_inf) a.found_inf = inf.ref();
    a.seed = x.seed;
    a.seed.offset += k;
    o.st = plan->run(s, baracuda::Workspace{ws.data(), ws.bytes()}, a);
    if (!o.st.is_ok()) return o;
  }
  EXPECT_TRUE(baracuda::synchronize(s).is_ok());
  o.lists = {p.bytes(), master.bytes(), m.bytes(), v.bytes(), vm.bytes()};
  o.step = step.get();
  return o;
}

inline Outcome run_sgd(const Stream& s, const baracuda::SgdDescriptor& d, const Problem& pb, const Extras& x = {}) {
  const Device dev = s.device();
  const size_t mis = x.misalign ? 2 * baracuda::dtype_size(d.param_dtype) : 0;
  List p(dev, d.param_dtype, pb.shapes, pb.p0, mis), buf(dev, DType::F32, pb.shapes, pb.s0),
      master(dev, DType::F32, pb.shapes, pb.p0);
  ScalarBuf lr(dev, 0), gs(dev, x.grad_scale), inf(dev, x.found_inf);
  Outcome o;
  auto plan = baracuda::SgdPlan::select(s, d);
  if (!plan) {
    o.st = plan.status();
    return o;
  }
  for (size_t k = 0; k < pb.grads.size(); ++k) {
    List g(dev, d.param_dtype, pb.shapes, pb.grads[k], mis);
    baracuda::SgdArgs a;
    a.params = p.muts();
    a.grads = g.refs();
    if (d.momentum != 0.0) a.momentum_buffer = buf.muts();
    if (d.master_weights) a.master = master.muts();
    a.buffers_initialized = k > 0;
    a.lr = pb.lrs[k];
    if (d.device_scalars) {
      lr.set(static_cast<float>(pb.lrs[k]));
      a.lr_tensor = lr.ref();
    }
    if (d.has_grad_scale) a.grad_scale = gs.ref();
    if (d.has_found_inf) a.found_inf = inf.ref();
    a.seed = x.seed;
    a.seed.offset += k;
    o.st = plan->run(s, baracuda::Workspace{}, a);
    if (!o.st.is_ok()) return o;
  }
  EXPECT_TRUE(baracuda::synchronize(s).is_ok());
  o.lists = {p.bytes(), master.bytes(), buf.bytes()};
  return o;
}

inline Outcome run_lion(const Stream& s, const baracuda::LionDescriptor& d, const Problem& pb, const Extras& x = {}) {
  const Device dev = s.device();
  const size_t mis = x.misalign ? 2 * baracuda::dtype_size(d.param_dtype) : 0;
  List p(dev, d.param_dtype, pb.shapes, pb.p0, mis), m(dev, DType::F32, pb.shapes, pb.s0),
      master(dev, DType::F32, pb.shapes, pb.p0);
  ScalarBuf lr(dev, 0), gs(dev, x.grad_scale), inf(dev, x.found_inf);
  Outcome o;
  auto plan = baracuda::LionPlan::select(s, d);
  if (!plan) {
    o.st = plan.status();
    return o;
  }
  for (size_t k = 0; k < pb.grads.size(); ++k) {
    List g(dev, d.param_dtype, pb.shapes, pb.grads[k], mis);
    baracuda::LionArgs a;
    a.params = p.muts();
    a.grads = g.refs();
    a.exp_avg = m.muts();
    if (d.master_weights) a.master = master.muts();
    a.lr = pb.lrs[k];
    if (d.device_scalars) {
      lr.set(static_cast<float>(pb.lrs[k]));
      a.lr_tensor = lr.ref();
    }
    if (d.has_grad_scale) a.grad_scale = gs.ref();
    if (d.has_found_inf) a.found_inf = inf.ref();
    a.seed = x.seed;
    a.seed.offset += k;
    o.st = plan->run(s, baracuda::Workspace{}, a);
    if (!o.st.is_ok()) return o;
  }
  EXPECT_TRUE(baracuda::synchronize(s).is_ok());
  o.lists = {p.bytes(), master.bytes(), m.bytes()};
  return o;
}

}  // namespace bt::optim

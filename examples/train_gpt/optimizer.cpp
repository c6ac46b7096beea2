// Optimizer (optimizer.hpp).
#include "optimizer.hpp"

#include "util.hpp"

#include <algorithm>

namespace train_gpt {

using namespace baracuda;

namespace {
TensorMut f32_view(const Buffer& b, const ParamInfo& p, Device dev) {
  return TensorMut(static_cast<float*>(b.data()) + p.offset, DType::F32, dev, p.shape, contiguous_strides(p.shape),
                   p.numel);
}
}  // namespace

Optimizer::Optimizer(const Stream& stream, Model& model, const AdamWOptions& o, const std::vector<double>& initial)
    : stream_(stream), model_(model), o_(o) {
  const Device dev = stream.device();
  const size_t n = static_cast<size_t>(model.param_count());
  master_ = model.dtype() != DType::F32;
  m_ = Buffer(dev, std::max<size_t>(n, 1) * 4);
  v_ = Buffer(dev, std::max<size_t>(n, 1) * 4);
  if (!m_.fill_bytes(0) || !v_.fill_bytes(0)) throw StatusError(Status(StatusCode::CudaError, "Optimizer: zeroing the moments failed"));
  if (master_) {
    master_buf_ = Buffer(dev, std::max<size_t>(n, 1) * 4);
    std::vector<float> f(initial.begin(), initial.end());
    const Status st = master_buf_.copy_from_host(f.data(), n * 4);
    if (!st) throw StatusError(st);
  }
  norm_ = Buffer(dev, 4);
  if (o.device_scalars) {
    lr_buf_ = Buffer(dev, 4);
    step_buf_ = Buffer(dev, 8);  // one F32 step per group, both from 0
    if (!step_buf_.fill_bytes(0)) throw StatusError(Status(StatusCode::CudaError, "Optimizer: zeroing the steps failed"));
  }
  size_t ws = 0;
  for (int g = 0; g < 2; ++g) {
    Group& grp = g == 0 ? decay_ : no_decay_;
    AdamDescriptor d;
    d.param_dtype = model.dtype();
    d.master_weights = master_;
    d.decoupled_weight_decay = true;
    d.beta1 = o.beta1;
    d.beta2 = o.beta2;
    d.eps = o.eps;
    d.weight_decay = g == 0 ? o.weight_decay : 0.0;
    d.device_scalars = o.device_scalars;
    if (o.device_scalars) {
      grp.args.lr_tensor = TensorRef::contiguous(lr_buf_.data(), DType::F32, dev, {}, 1);
      grp.args.step_tensor = TensorMut::contiguous(static_cast<float*>(step_buf_.data()) + g, DType::F32, dev, {}, 1);
    }
    for (size_t i = 0; i < model.params().size(); ++i) {
      const ParamInfo& p = model.params()[i];
      if (p.decay != (g == 0)) continue;
      grp.params.push_back(i);
      d.shapes.push_back(p.shape);
      grp.args.params.push_back(model.param(i));
      grp.args.grads.push_back(model.grad(i));
      grp.args.exp_avg.push_back(f32_view(m_, p, dev));
      grp.args.exp_avg_sq.push_back(f32_view(v_, p, dev));
      if (master_) grp.args.master.push_back(f32_view(master_buf_, p, dev));
    }
    grp.plan = take(AdamPlan::select(stream, d));
    ws = std::max(ws, grp.plan.workspace_size());
  }
  ClipGradNormDescriptor cd;
  cd.dtype = model.dtype();
  cd.max_norm = o.clip > 0 ? o.clip : 1.0;
  for (size_t i = 0; i < model.params().size(); ++i) {
    cd.shapes.push_back(model.params()[i].shape);
    clip_args_.grads.push_back(model.grad(i));
  }
  clip_args_.total_norm = TensorMut::contiguous(norm_.data(), DType::F32, dev, {}, 1);
  clip_ = take(ClipGradNormPlan::select(stream, cd));
  ws = std::max(ws, clip_.workspace_size());
  ws_ = Buffer(dev, std::max<size_t>(ws, 16));
}

Status Optimizer::step(double lr, int64_t step) {
  const Workspace ws{ws_.data(), ws_.bytes()};
  if (o_.clip > 0) BARACUDA_RETURN_IF_ERROR(clip_.run(stream_, ws, clip_args_));
  for (Group* g : {&decay_, &no_decay_}) {
    g->args.lr = lr;
    g->args.step = step;
    BARACUDA_RETURN_IF_ERROR(g->plan.run(stream_, ws, g->args));
  }
  return Status::ok();
}

Status Optimizer::set_lr(double lr) {
  if (!o_.device_scalars) return Status(StatusCode::InvalidProblem, "Optimizer::set_lr: built without device scalars");
  const float f = static_cast<float>(lr);
  return lr_buf_.copy_from_host(&f, 4);
}

Status Optimizer::step_device() {
  if (!o_.device_scalars) return Status(StatusCode::InvalidProblem, "Optimizer::step_device: built without device scalars");
  const Workspace ws{ws_.data(), ws_.bytes()};
  if (o_.clip > 0) BARACUDA_RETURN_IF_ERROR(clip_.run(stream_, ws, clip_args_));
  for (Group* g : {&decay_, &no_decay_}) BARACUDA_RETURN_IF_ERROR(g->plan.run(stream_, ws, g->args));
  return Status::ok();
}

Status Optimizer::read_grad_norm(double* norm) const {
  float f = 0;
  BARACUDA_RETURN_IF_ERROR(norm_.copy_to_host(&f, 4));
  *norm = f;
  return Status::ok();
}

Status Optimizer::read_master(float* out, size_t n) const {
  if (!master_) return Status(StatusCode::InvalidProblem, "Optimizer::read_master: no master weights");
  return master_buf_.copy_to_host(out, n * 4);
}

}  // namespace train_gpt

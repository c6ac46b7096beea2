// train_gpt's update: clip_grad_norm_ over every gradient, then AdamW with
// two parameter groups (weight decay on the matrices and embeddings, none on
// biases and norm weights: ParamInfo::decay), both baracuda tensor-list plans
// (ClipGradNormPlan, AdamPlan: one launch per list on the GPU).
//
// Low-precision models (bf16 / f16 parameters) keep f32 master weights in the
// optimizer: AdamW updates the master copy and writes the rounded parameters
// in the same pass. The moments are f32.
#pragma once
#include <baracuda/baracuda.hpp>

#include <vector>

#include "model.hpp"

namespace train_gpt {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  double clip = 1.0;  // max global L2 norm of the gradients; <= 0: no clipping
  // lr and the step count in device memory (AdamPlan's device_scalars): the
  // update can then be captured in a CUDA graph and replayed; set_lr() before
  // each replay, the plans increment the step themselves.
  bool device_scalars = false;
};

class Optimizer {
 public:
  // initial: the parameters' initial values (the master weights' start).
  Optimizer(const baracuda::Stream& stream, Model& model, const AdamWOptions& o, const std::vector<double>& initial);
  // One update with learning rate lr; step counts from 1 (host scalars).
  baracuda::Status step(double lr, int64_t step);
  // device_scalars: the learning rate of the next update (a synchronous copy,
  // outside any capture), then the update itself (capturable).
  baracuda::Status set_lr(double lr);
  baracuda::Status step_device();
  // The device's learning rate (one f32), for an asynchronous copy on the
  // stream instead of set_lr(); null without device scalars.
  void* lr_device() { return o_.device_scalars ? lr_buf_.data() : nullptr; }
  // The gradients' global norm before clipping, of the last step (synchronises).
  baracuda::Status read_grad_norm(double* norm) const;
  bool master_weights() const { return master_; }
  size_t allocated_bytes() const { return m_.bytes() + v_.bytes() + master_buf_.bytes() + norm_.bytes() + ws_.bytes(); }
  baracuda::Status read_master(float* out, size_t n) const;  // the f32 master weights (synchronises)

 private:
  struct Group {
    baracuda::AdamPlan plan;
    std::vector<size_t> params;  // indices into model.params()
    baracuda::AdamArgs args;     // the views (lr and step set per call)
  };
  baracuda::Stream stream_;
  Model& model_;
  AdamWOptions o_;
  bool master_ = false;
  baracuda::Buffer m_, v_, master_buf_, norm_, ws_, lr_buf_, step_buf_;
  Group decay_, no_decay_;
  baracuda::ClipGradNormPlan clip_;
  baracuda::ClipGradNormArgs clip_args_;
};

}  // namespace train_gpt

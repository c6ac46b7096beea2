// PlanBase: what every plan holds and reports, written once. A plan class
// derives from it and adds its descriptor, its argument checks and its two
// dispatch calls (CPU reference, CUDA); the select prologue and the run
// skeleton that fill and use these fields live in src/core/plan_shell.hpp.
#pragma once
#include <cstddef>

#include "baracuda/core/sku.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

namespace detail {
struct PlanAccess;  // the plan shell (src/core/plan_shell.hpp)
}

class PlanBase {
 public:
  // Bytes of scratch run() needs (fixed at select(); 0 when none).
  size_t workspace_size() const { return workspace_bytes_; }
  // Backend, arch, dtype, op, variant and precision of what run() launches,
  // chosen at select() from the descriptor for contiguous, aligned tensors.
  //
  // Every plan also has `Result<KernelSku> sku_for(stream, ws, args) const`,
  // taking run()'s arguments: it makes run()'s checks (the same errors) and
  // names what run() launches for exactly these tensors, launching nothing.
  // It differs from sku() only where run() must choose from the actual views:
  // RoPE's 16-byte vector path needs aligned rows (else "*.strided"); a flash
  // plan routed to cuDNN falls back to the bespoke kernels when cuDNN refuses
  // the strides or, while the stream captures a graph, has no plan built for
  // them (unless cuDNN was required); the Hopper wgmma kernels fall back to
  // mma.sync tiles when TMA cannot describe the strides; the split-KV forward
  // needs its workspace. An empty problem launches nothing (variant "empty").
  const KernelSku& sku() const { return sku_; }
  // The device the plan was selected for (the stream's at select()).
  Device device() const { return device_; }
  // The plan's class name ("ReducePlan", ...): the prefix of its error messages.
  const char* name() const { return name_; }

 protected:
  PlanBase() = default;
  const char* name_ = "";
  Device device_;
  int sm_count_ = 0;
  size_t workspace_bytes_ = 0;
  KernelSku sku_;
  friend struct detail::PlanAccess;
};

}  // namespace baracuda

// PlanBase: what every plan holds and reports, written once. A plan class
// derives from it and adds its descriptor, its argument checks and its two
// dispatch calls (CPU reference, CUDA); the select prologue and the run
// skeleton that fill and use these fields live in src/core/plan_shell.hpp.
//
// Plans as members. Every plan is default-constructible into an EMPTY state,
// so a layer class can hold one and assign it later:
//   struct Attention {
//     FlashSdpaPlan fwd;  // empty until init()
//     Status init(const Stream& s, const FlashSdpaDescriptor& d) {
//       auto p = FlashSdpaPlan::select(s, d);
//       if (!p) return p.status();
//       fwd = std::move(*p);
//       return Status::ok();
//     }
//   };
// On an empty plan, run(), can_implement() and sku_for() fail with
// InvalidProblem "<Plan>: the plan is empty (default-constructed): assign it
// from <Plan>::select() first"; empty() says so, workspace_size() is 0 and
// sku() is a default KernelSku. A plan is copyable and movable; there is no
// other way to get a non-empty one than select().
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
  // True for a default-constructed plan that select() has not filled.
  bool empty() const { return !selected_; }

 protected:
  PlanBase() = default;
  explicit PlanBase(const char* name) : name_(name) {}  // the empty plan of that class
  const char* name_ = "";
  bool selected_ = false;  // set by the shell's select prologue (setup_plan)
  bool strict_workspace_ = false;  // PlanPreference::strict_workspace on a CPU plan
  Device device_;
  int sm_count_ = 0;
  size_t workspace_bytes_ = 0;
  KernelSku sku_;
  friend struct detail::PlanAccess;
};

}  // namespace baracuda

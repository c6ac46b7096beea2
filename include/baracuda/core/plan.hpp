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
  // Backend, arch, dtype, op, variant and precision of what run() launches.
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

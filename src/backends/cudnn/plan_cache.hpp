// Built cuDNN plans per (device, problem key) and the capture rule: the
// shared DeviceCache (src/backends/device_cache.hpp: thread-safety, never
// build while capturing, Unsupported builds remembered) with cuDNN's wording.
// A family keeps one PlanCache<Entry> (its Entry wraps an ExecutionPlan plus
// what running it needs) and a key naming everything the graph depends on:
// dtypes, shapes, strides, flags; not by-value operands such as a softmax
// scale, which are bound at execution.
//
// Call find_or_build() with the device's HandleLease held: the lease
// serializes builds per device, so each (device, key) is built once.
#pragma once
#include <utility>

#include "backends/cudnn/library.hpp"
#include "backends/device_cache.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cudnn {

// Unsupported: "<plan>: cuDNN: the execution plan for this problem is not built
// yet and cannot be built while the stream is capturing a CUDA graph (...)".
Status capture_refusal(const char* plan);

template <class Entry>
class PlanCache {
 public:
  using Key = typename backends::DeviceCache<Entry>::Key;

  // The entry for (device, key): cached, a remembered Unsupported, the capture
  // refusal, or build()'s result (build: () -> Result<std::unique_ptr<Entry>>).
  template <class Build>
  Result<Entry*> find_or_build(const char* plan, int device, const Key& key, bool capturing, Build&& build) {
    return cache_.find_or_build(device, key, capturing, std::forward<Build>(build),
                                [plan] { return capture_refusal(plan); });
  }

 private:
  backends::DeviceCache<Entry> cache_;
};

}  // namespace baracuda::cudnn

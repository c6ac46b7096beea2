// Built cuDNN plans, cached per (device, problem key), and the capture rule,
// for every family's cuDNN route. A family keeps one PlanCache<Entry> (its
// Entry wraps an ExecutionPlan plus what running it needs) and a key that
// names everything the graph depends on: dtypes, shapes, strides, flags; not
// by-value operands such as a softmax scale, which are bound at execution.
//
// Rules:
//  * find_or_build() is called with the device's HandleLease held: the lease
//    serializes builds per device, so each (device, key) is built once. The
//    cache's own mutex only guards its maps (leases of different devices run
//    concurrently).
//  * Capture: a cached plan is returned whatever the stream does (running it is
//    capture-safe); a missing one is never built while the stream captures a
//    graph (building allocates and compiles). The caller gets Unsupported and
//    can fall back, or build before capturing (a plan's select() does).
//  * A build that returns Unsupported (cuDNN has no engine for the graph) is
//    remembered and returned again without retrying; other failures (memory,
//    runtime compilation) are retried on the next call.
//  * Entries are never evicted: pointers to them stay valid until exit.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/cudnn/library.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cudnn {

// Unsupported: "<plan>: cuDNN: the execution plan for this problem is not built
// yet and cannot be built while the stream is capturing a CUDA graph (...)".
Status capture_refusal(const char* plan);

template <class Entry>
class PlanCache {
 public:
  using Key = std::vector<int64_t>;

  // The entry for (device, key): cached, a remembered Unsupported, the capture
  // refusal, or build()'s result (build: () -> Result<std::unique_ptr<Entry>>).
  template <class Build>
  Result<Entry*> find_or_build(const char* plan, int device, const Key& key, bool capturing, Build&& build) {
    const auto k = std::make_pair(device, key);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(k); it != entries_.end()) return it->second.get();
      if (auto it = failures_.find(k); it != failures_.end()) return it->second;
    }
    if (capturing) return capture_refusal(plan);
    Result<std::unique_ptr<Entry>> built = build();
    std::lock_guard<std::mutex> lock(mu_);
    if (!built) {
      if (built.status().code() == StatusCode::Unsupported) failures_.emplace(k, built.status());
      return built.status();
    }
    auto [it, inserted] = entries_.emplace(k, std::move(*built));
    return it->second.get();
  }

 private:
  std::mutex mu_;
  std::map<std::pair<int, Key>, std::unique_ptr<Entry>> entries_;
  std::map<std::pair<int, Key>, Status> failures_;
};

}  // namespace baracuda::cudnn

// What every library backend caches (cuDNN execution plans, cuBLASLt
// heuristic choices, later cuFFT plans): an entry per (device, problem key),
// built once by the caller's build function and kept until exit. Plain C++
// (no CUDA), so its rules are unit-tested on the CPU.
//
// Rules:
//  * Thread-safe: the cache's mutex guards its maps only and is never held
//    while building. Two threads missing the same key at once may both
//    build; the first insert wins and both get that entry. Backends whose
//    builds are expensive serialize them per device themselves (the cuDNN
//    HandleLease does).
//  * Capture: a cached entry is returned whatever the stream does. A missing
//    one is never built while the stream captures a CUDA graph (building
//    allocates, compiles or queries the library); refusal() is returned
//    instead (an Unsupported status naming the plan), so the caller can fall
//    back, or build before capturing (a plan's select() does).
//  * A build that fails with Unsupported (the library cannot run the problem)
//    is remembered and returned again without retrying; other failures
//    (memory, runtime compilation) are retried on the next call.
//  * Entries are never evicted: pointers to them stay valid until exit.
//
// The key is a flat list of integers naming everything the entry depends on
// (dtypes, shapes, strides, flags, alignment, workspace limit); by-value
// operands bound at run time (a scale, alpha/beta) stay out of it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "baracuda/core/status.hpp"

namespace baracuda::backends {

template <class Entry>
class DeviceCache {
 public:
  using Key = std::vector<int64_t>;

  // build: () -> Result<std::unique_ptr<Entry>>; refusal: () -> Status.
  template <class Build, class Refusal>
  Result<Entry*> find_or_build(int device, const Key& key, bool capturing, Build&& build, Refusal&& refusal) {
    auto k = std::make_pair(device, key);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(k); it != entries_.end()) return it->second.get();
      if (auto it = failures_.find(k); it != failures_.end()) return it->second;
    }
    if (capturing) return refusal();
    Result<std::unique_ptr<Entry>> built = build();
    std::lock_guard<std::mutex> lock(mu_);
    if (!built) {
      if (built.status().code() == StatusCode::Unsupported) failures_.emplace(k, built.status());
      return built.status();
    }
    auto [it, inserted] = entries_.emplace(std::move(k), std::move(*built));
    return it->second.get();
  }

  // Cached entries and remembered failures (for tests and diagnostics).
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size() + failures_.size();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<int, Key>, std::unique_ptr<Entry>> entries_;
  std::map<std::pair<int, Key>, Status> failures_;
};

}  // namespace baracuda::backends

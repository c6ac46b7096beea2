// From a finalized operation graph to a runnable execution plan, and running
// it. The lifecycle every cuDNN route shares:
//   graph (graph.hpp) -> engine heuristics (mode A) -> the first engine config
//   that finalizes into an execution plan -> workspace size, engine name and
//   numerical notes -> execute with a variant pack (uid -> pointer).
// Building is slow (heuristics + runtime compilation: tens to hundreds of ms)
// and not capture-safe; execute() only enqueues work and is capture-safe.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/cudnn/descriptor.hpp"
#include "backends/cudnn/graph.hpp"
#include "backends/cudnn/handle.hpp"

namespace baracuda::cudnn {

struct ExecutionPlan {
  cudnnHandle_t handle = nullptr;      // the handle the plan was built on (its device's)
  std::vector<Descriptor> keep_alive;  // graph, heuristics and engine-config descriptors the plan refers to
  Descriptor plan;
  size_t workspace_bytes = 0;          // cuDNN's own scratch for one execution
  std::string engine;                  // "cudnn-engine-<global index>"; empty when cuDNN does not say
  bool engine_nondeterministic = false;  // the engine's numerical notes include NONDETERMINISTIC
};

// Builds the execution plan of `graph` (already finalize()d on `handle`).
// Unsupported when the graph failed, the heuristics return no engine
// ("no engine supports this <graph_kind>") or no engine config finalizes (the
// last config's error); LibraryError on other cuDNN failures.
Result<ExecutionPlan> build_execution_plan(const char* plan, cudnnHandle_t handle, OperationGraph&& graph,
                                           const char* graph_kind);

// Runs `ep` on `stream` with the non-virtual tensors bound by uid (by-value
// scalars as host pointers) and `workspace` (at least ep.workspace_bytes, null
// when that is 0). The caller holds the device's HandleLease for the whole call.
Status execute(const char* plan, const HandleLease& lease, void* stream, const ExecutionPlan& ep,
               std::span<const int64_t> uids, std::span<void* const> pointers, void* workspace);

}  // namespace baracuda::cudnn

#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include <cuda_runtime.h>

#include <algorithm>
#include <array>

#include "backends/cudnn/api.hpp"
#include "backends/cudnn/execution_plan.hpp"

namespace baracuda::cudnn {

namespace {

// Engine facts of a finalized plan's engine config: global index and
// numerical notes. Best effort: a failing query leaves the defaults.
void describe_engine(cudnnBackendDescriptor_t cfg, ExecutionPlan* ep) {
  cudnnBackendDescriptor_t eng = nullptr;
  if (api().cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return;
  Descriptor hold(eng);
  int64_t n = 0;
  if (api().cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) !=
      CUDNN_STATUS_SUCCESS)
    return;
  int64_t index = -1;
  if (api().cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) ==
      CUDNN_STATUS_SUCCESS)
    ep->engine = "cudnn-engine-" + std::to_string(index);
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  n = 0;
  if (api().cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               static_cast<int64_t>(notes.size()), &n, notes.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n && i < static_cast<int64_t>(notes.size()); ++i)
      if (notes[static_cast<size_t>(i)] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) ep->engine_nondeterministic = true;
  }
}

}  // namespace

Result<ExecutionPlan> build_execution_plan(const char* plan, cudnnHandle_t handle, OperationGraph&& graph,
                                           const char* graph_kind) {
  if (!graph.status().is_ok()) return graph.status();
  cudnnBackendDescriptor_t g = graph.graph();
  if (!g) return Status(StatusCode::InvalidProblem, std::string(plan) + ": cuDNN: the operation graph was not finalized");

  auto heur_or = make_descriptor(plan, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "creating the heuristics descriptor");
  if (!heur_or) return heur_or.status();
  Descriptor heur = std::move(*heur_or);
  {
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnStatus_t s = api().cudnnBackendSetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g);
    if (s == CUDNN_STATUS_SUCCESS)
      s = api().cudnnBackendSetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (s == CUDNN_STATUS_SUCCESS) s = api().cudnnBackendFinalize(heur.get());
    if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "running the engine heuristics");
  }
  int64_t count = 0;
  cudnnStatus_t s = api().cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                             0, &count, nullptr);
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "counting the heuristics' engine configs");
  if (count <= 0) return unsupported(plan, std::string("no engine supports this ") + graph_kind);
  std::vector<Descriptor> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    auto c = make_descriptor(plan, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "creating an engine config descriptor");
    if (!c) return c.status();
    raw.push_back(c->get());
    cfgs.push_back(std::move(*c));
  }
  int64_t got = 0;
  s = api().cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data());
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "reading the heuristics' engine configs");

  // The heuristics rank the configs; the first that finalizes wins.
  Status last = unsupported(plan, "no engine config of the heuristics could be finalized");
  for (int64_t i = 0; i < got; ++i) {
    auto ep_or = make_descriptor(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "creating an execution plan descriptor");
    if (!ep_or) return ep_or.status();
    cudnnBackendDescriptor_t ep = ep_or->get();
    s = api().cudnnBackendSetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (s == CUDNN_STATUS_SUCCESS)
      s = api().cudnnBackendSetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                   &raw[static_cast<size_t>(i)]);
    if (s == CUDNN_STATUS_SUCCESS) s = api().cudnnBackendFinalize(ep);
    if (s != CUDNN_STATUS_SUCCESS) {
      last = library_status(plan, s, "finalizing an execution plan");
      continue;
    }
    int64_t ws = 0, n = 0;
    s = api().cudnnBackendGetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
    if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "reading the plan's workspace size");
    ExecutionPlan out;
    out.handle = handle;
    out.keep_alive = graph.release();
    out.keep_alive.push_back(std::move(heur));
    for (Descriptor& c : cfgs) out.keep_alive.push_back(std::move(c));
    out.plan = std::move(*ep_or);
    out.workspace_bytes = static_cast<size_t>(std::max<int64_t>(ws, 0));
    describe_engine(raw[static_cast<size_t>(i)], &out);
    return out;
  }
  return last;
}

Status execute(const char* plan, const HandleLease& lease, void* stream, const ExecutionPlan& ep,
               std::span<const int64_t> uids, std::span<void* const> pointers, void* workspace) {
  (void)lease;  // proof that the caller holds the device's handle exclusively
  if (uids.size() != pointers.size())
    return Status(StatusCode::InvalidProblem, std::string(plan) + ": cuDNN: variant pack uids and pointers differ in count");
  cudnnStatus_t s = api().cudnnSetStream(ep.handle, static_cast<cudaStream_t>(stream));
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "setting the stream");
  auto vp_or = make_descriptor(plan, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "creating the variant pack");
  if (!vp_or) return vp_or.status();
  cudnnBackendDescriptor_t vp = vp_or->get();
  const auto n = static_cast<int64_t>(uids.size());
  s = api().cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids.data());
  if (s == CUDNN_STATUS_SUCCESS)
    s = api().cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers.data());
  if (s == CUDNN_STATUS_SUCCESS)
    s = api().cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (s == CUDNN_STATUS_SUCCESS) s = api().cudnnBackendFinalize(vp);
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "filling the variant pack");
  s = api().cudnnBackendExecute(ep.handle, ep.plan.get(), vp);
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, "executing the plan");
  return Status::ok();
}

}  // namespace baracuda::cudnn

#endif

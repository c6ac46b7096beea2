// Shared check_indices half and workspace alignment of the indexing plans.
#include "ops/indexing/index_check.hpp"

#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::detail {

void* aligned_workspace(void* p) {
  return p ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + kWorkspaceAlign - 1) / kWorkspaceAlign *
                                     kWorkspaceAlign)
           : nullptr;
}

size_t error_word_workspace() { return kWorkspaceAlign + cuda::kErrorWordBytes; }

Status read_bad_position(const PlanBase& plan, const Stream& stream, Workspace ws, int64_t* bad) {
  *bad = -1;
  if (plan.empty()) return baracuda::detail::empty_plan(plan.name());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(plan.name(), stream, plan.device()));
  if (plan.sku().backend == Backend::CpuReference || plan.sku().variant == "empty") return Status::ok();
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_workspace(plan.name(), plan.workspace_size(), ws.bytes, ws.ptr));
  if (baracuda::detail::stream_is_capturing(stream))
    return baracuda::detail::unsupported(plan.name(), "check_indices synchronizes the stream, which is capturing a "
                                                      "CUDA graph (call it after the graph's launch)");
  baracuda::detail::DeviceGuard guard(plan.device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
#ifdef BARACUDA_WITH_CUDA
  return cuda::read_error_word(plan.name(), stream.native_handle(), aligned_workspace(ws.ptr), bad);
#else
  return baracuda::detail::no_cuda(plan.name());
#endif
}

Dims unravel(const Dims& shape, int64_t p) {
  Dims coords = Dims::of_rank(shape.rank);
  for (int d = shape.rank - 1; d >= 0; --d) {
    coords[d] = shape[d] > 0 ? p % shape[d] : 0;
    p = shape[d] > 0 ? p / shape[d] : 0;
  }
  return coords;
}

}  // namespace baracuda::indexing::detail

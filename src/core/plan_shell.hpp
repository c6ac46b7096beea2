// The plan shell: the contract's ordering written once.
//
// select():  validate the descriptor (the plan's rules)
//            -> detail::setup_plan: choose the backend for the stream and the
//               preference, record name / device / SM count, start the SKU
//               (backend, arch, dtype, op, default precision)
//            -> the plan fills its variant, workspace and extra state.
// run():     detail::run_plan: stream on the plan's device -> the argument
//            checks (can_implement) -> workspace -> every output empty: Ok
//            -> CPU reference, or the CUDA launch under a device guard.
//
// A plan therefore supplies its descriptor rules, its argument list (an
// ArgCheck, core/arg_check.hpp) and its two dispatch calls.
#pragma once
#include <string>
#include <utility>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/stream.hpp"
#include "core/arg_check.hpp"
#include "core/checks.hpp"
#include "core/cuda_device.hpp"
#include "core/dispatch.hpp"
#include "core/error.hpp"

namespace baracuda::detail {

struct PlanAccess {
  static void set_name(PlanBase& p, const char* n) { p.name_ = n; }
  static void set_device(PlanBase& p, Device d, int sm_count) {
    p.device_ = d;
    p.sm_count_ = sm_count;
  }
  static KernelSku& sku(PlanBase& p) { return p.sku_; }
  static void set_workspace(PlanBase& p, size_t bytes) { p.workspace_bytes_ = bytes; }
  static int sm_count(const PlanBase& p) { return p.sm_count_; }
  // Marks the plan filled by select() (no longer empty()).
  static void set_selected(PlanBase& p) { p.selected_ = true; }
  static void set_strict_workspace(PlanBase& p, bool on) { p.strict_workspace_ = on; }
  static bool strict_workspace(const PlanBase& p) { return p.strict_workspace_; }
};

// PlanPreference::strict_workspace, or BARACUDA_STRICT_WORKSPACE=1 (read here,
// at select() only).
bool strict_workspace_requested(const PlanPreference& pref);

// Strict workspace mode on a CPU plan: fills the workspace with a byte pattern
// (what a CUDA kernel's scratch use would do to a workspace that aliases a
// tensor). No-op for other plans.
void scribble_workspace(const PlanBase& plan, Workspace ws);

// The SKU every plan starts from: backend and arch of the choice, the op's
// dtype and name, the variant, and the family-wide default precision.
KernelSku make_sku(const BackendChoice& be, DType dtype, std::string op, std::string variant);

// What the shell needs to know of a plan's family.
struct Family {
  const char* noun;         // completes "backend X has no <noun> implementation"
  const char* option_name;  // the family's name in BARACUDA_FAMILIES
  bool kernels_built;       // BARACUDA_KERNELS_<FAMILY> (core/families.hpp)
};

// The select prologue (after the plan validated its descriptor): the backend
// for the stream and preference (a CUDA stream is refused, naming the option,
// when the build left the family's kernels out), the plan's name, device and
// SM count, and the SKU's common fields.
inline Result<BackendChoice> setup_plan(PlanBase& plan, const char* name, const Family& family, const Stream& stream,
                                        const PlanPreference& pref, DType dtype, std::string op,
                                        LibraryRoutes routes = {}) {
  PlanAccess::set_name(plan, name);
  auto be = choose_backend(name, family.noun, stream, pref, routes);
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference && !family.kernels_built) return family_not_built(name, family.option_name);
  PlanAccess::set_device(plan, stream.device(), be->sm_count);
  PlanAccess::sku(plan) = make_sku(*be, dtype, std::move(op), be->backend == Backend::CpuReference ? "reference" : "");
  PlanAccess::set_selected(plan);
  // Strict workspace mode: the CPU plan needs at least the token; a plan that
  // knows its CUDA workspace from the descriptor alone raises it to that.
  const bool strict = be->backend == Backend::CpuReference && strict_workspace_requested(pref);
  PlanAccess::set_strict_workspace(plan, strict);
  if (strict) PlanAccess::set_workspace(plan, kStrictWorkspaceBytes);
  return be;
}

// The message every plan gives when a CUDA plan runs in a build without CUDA
// (only reachable through a corrupted plan; select() refuses CUDA streams there).
Status no_cuda(const char* plan);

// The run skeleton. `cpu` and `cuda` are callables returning Status.
template <class CpuFn, class CudaFn>
Status run_plan(const PlanBase& plan, const Stream& stream, Workspace ws, const ArgCheck& args, CpuFn&& cpu,
                CudaFn&& cuda) {
  if (plan.empty()) return empty_plan(plan.name());
  BARACUDA_RETURN_IF_ERROR(check_stream(plan.name(), stream, plan.device()));
  BARACUDA_RETURN_IF_ERROR(args.status());
  BARACUDA_RETURN_IF_ERROR(check_workspace(plan.name(), plan.workspace_size(), ws.bytes, ws.ptr));
  if (args.outputs_empty()) return Status::ok();
  if (plan.sku().backend == Backend::CpuReference) {
    scribble_workspace(plan, ws);
    return cpu();
  }
  DeviceGuard guard(plan.device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  return cuda();
}

// The sku_for skeleton: the checks of run_plan, in its order, then the SKU
// run() would launch, launching nothing. `cuda` (CUDA plans only) returns the
// SKU for the actual arguments where run() chooses a path from them (pointer
// alignment, strides a library or TMA refuses); plans without such a choice
// pass none and get sku(). An empty problem launches nothing: variant "empty".
template <class CudaFn>
Result<KernelSku> sku_for_run(const PlanBase& plan, const Stream& stream, Workspace ws, const ArgCheck& args,
                              CudaFn&& cuda) {
  if (plan.empty()) return empty_plan(plan.name());
  BARACUDA_RETURN_IF_ERROR(check_stream(plan.name(), stream, plan.device()));
  BARACUDA_RETURN_IF_ERROR(args.status());
  BARACUDA_RETURN_IF_ERROR(check_workspace(plan.name(), plan.workspace_size(), ws.bytes, ws.ptr));
  if (args.outputs_empty()) {
    KernelSku s = plan.sku();
    s.variant = "empty";
    return s;
  }
  if (plan.sku().backend == Backend::CpuReference) return plan.sku();
  DeviceGuard guard(plan.device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  return cuda();
}

inline Result<KernelSku> sku_for_run(const PlanBase& plan, const Stream& stream, Workspace ws, const ArgCheck& args) {
  return sku_for_run(plan, stream, ws, args, [&]() -> Result<KernelSku> { return plan.sku(); });
}

}  // namespace baracuda::detail

#include "core/dispatch.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/cuda_device.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"

namespace baracuda::detail {

Result<BackendChoice> choose_backend(const char* plan, const char* family, const Stream& stream,
                                     const PlanPreference& pref, LibraryRoutes routes) {
  const std::string p = std::string(plan) + ": ";
  BackendChoice c;
  if (pref.backend && pref.require_backend &&
      ((*pref.backend == Backend::CuDnn && !routes.cudnn) || (*pref.backend == Backend::CuBlasLt && !routes.cublaslt)))
    return Status(StatusCode::Unsupported,
                  p + "backend " + backend_name(*pref.backend) + " has no " + family + " implementation");
  if (stream.is_cpu()) {
    if (pref.backend && *pref.backend != Backend::CpuReference && pref.require_backend)
      return Status(StatusCode::Unsupported, p + "backend " + std::string(backend_name(*pref.backend)) +
                                                 " required but the stream is on the CPU (only cpu-reference runs there)");
    return c;
  }
  if (pref.backend && *pref.backend == Backend::CpuReference && pref.require_backend)
    return Status(StatusCode::Unsupported, p + "backend cpu-reference required but the stream is on " +
                                               stream.device().to_string() + " (use Stream::cpu() and host memory)");
#ifdef BARACUDA_WITH_CUDA
  auto info = cuda_device_info(stream.device().ordinal);
  if (!info) return Status(info.status().code(), p + info.status().message());
  c.backend = Backend::Bespoke;
  c.sm_count = info->sm_count;
  c.arch = info->arch;
  return c;
#else
  return Status(StatusCode::Unsupported, p + "stream is on " + stream.device().to_string() +
                                             " but this baracuda build has no CUDA support (BARACUDA_CUDA=OFF)");
#endif
}

PrecisionGuarantee default_precision(DType dtype, Backend backend) {
  PrecisionGuarantee g;
  if (backend == Backend::CpuReference) g.math = is_integral(dtype) ? DType::I64 : DType::F64;
  else if (dtype == DType::F64) g.math = DType::F64;
  else if (is_integral(dtype)) g.math = DType::I64;
  else g.math = DType::F32;
  g.accumulator = g.math;
  g.deterministic = true;
  g.bit_stable_on_same_hardware = true;
  return g;
}

KernelSku make_sku(const BackendChoice& be, DType dtype, std::string op, std::string variant) {
  KernelSku sku;
  sku.backend = be.backend;
  sku.arch = be.arch;
  sku.dtype = dtype;
  sku.op = std::move(op);
  sku.variant = std::move(variant);
  sku.precision = default_precision(dtype, be.backend);
  return sku;
}

Status family_not_built(const char* plan, const char* family) {
  return unsupported(plan, "this build has no ", family, " CUDA kernels (BARACUDA_FAMILIES=", BARACUDA_FAMILIES_VALUE, ")");
}

bool strict_workspace_requested(const PlanPreference& pref) {
  if (pref.strict_workspace) return true;
  const char* e = std::getenv("BARACUDA_STRICT_WORKSPACE");
  return e != nullptr && std::string_view(e) == "1";
}

void scribble_workspace(const PlanBase& plan, Workspace ws) {
  if (!PlanAccess::strict_workspace(plan) || ws.ptr == nullptr) return;
  // run() checked ws.bytes >= workspace_size(); write exactly what the plan
  // claimed, which is what a kernel may touch.
  std::memset(ws.ptr, 0xA5, plan.workspace_size());
}

Status no_cuda(const char* plan) {
  return unsupported(plan, "this baracuda build has no CUDA support (BARACUDA_CUDA=OFF)");
}

}  // namespace baracuda::detail

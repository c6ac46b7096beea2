#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/matmul.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "backends/cublaslt/api.hpp"
#include "backends/cublaslt/descriptors.hpp"
#include "backends/cublaslt/errors.hpp"
#include "backends/cublaslt/handle.hpp"
#include "backends/device_cache.hpp"

namespace baracuda::cublaslt {

namespace {

Status invalid(const char* plan, const std::string& what) {
  return Status(StatusCode::InvalidProblem, std::string(plan) + ": cuBLASLt: " + what);
}

backends::DeviceCache<AlgoChoice>& algo_cache() {
  static backends::DeviceCache<AlgoChoice> cache;
  return cache;
}

Result<std::unique_ptr<AlgoChoice>> query_heuristics(const char* plan, int device, const MatmulProblem& p,
                                                     size_t workspace_limit) {
  auto handle = device_handle(plan, device, /*capturing=*/false);
  if (!handle) return handle.status();
  auto desc = make_descriptors(plan, p);
  if (!desc) return desc.status();
  // A vector (outer-vec) scale mode with no scale pointer is INVALID_VALUE to
  // the heuristics (measured on the H100, cuBLAS 13.0), while the per-call
  // pointers are set only at run time: a placeholder address stands in (the
  // heuristics never read through it; each run sets the real pointers).
  alignas(16) static const float kScalePlaceholder[4] = {1.f, 1.f, 1.f, 1.f};
  const void* placeholder = kScalePlaceholder;
  for (const auto& [mode, attr] : {std::pair{p.a_scale, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER},
                                   std::pair{p.b_scale, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER}}) {
    if (mode != ScaleMode::OuterVec) continue;
    const cublasStatus_t s = api().cublasLtMatmulDescSetAttribute(desc->op.get(), attr, &placeholder, sizeof(placeholder));
    if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "setting a placeholder scale pointer");
  }
  auto pref = make_preference(plan, p, workspace_limit);
  if (!pref) return pref.status();
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t s =
      api().cublasLtMatmulAlgoGetHeuristic(*handle, desc->op.get(), desc->a.get(), desc->b.get(), desc->c.get(),
                                     desc->d.get(), pref->get(), 1, &result, &returned);
  if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "querying the matmul heuristics");
  if (returned < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Status(StatusCode::Unsupported, std::string(plan) + ": cuBLASLt: no algorithm for this matmul (" +
                                               std::string(dtype_name(p.a_type)) + " m=" + std::to_string(p.m) +
                                               " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                                               ", workspace limit " + std::to_string(workspace_limit) + " bytes)");
  auto choice = std::make_unique<AlgoChoice>();
  choice->algo = result.algo;
  choice->workspace_bytes = result.workspaceSize;
  choice->waves = result.wavesCount;
  return choice;
}

// alpha / beta in the scale type's storage.
union Scalar {
  float f32;
  double f64;
  int32_t i32;
};
Scalar scalar_of(DType t, double v) {
  Scalar s{};
  if (t == DType::F64) s.f64 = v;
  else if (t == DType::I32) s.i32 = static_cast<int32_t>(v);
  else s.f32 = static_cast<float>(v);
  return s;
}

}  // namespace

Result<const AlgoChoice*> choose_algo(const char* plan, int device, const MatmulProblem& p, size_t workspace_limit,
                                      bool capturing) {
  BARACUDA_RETURN_IF_ERROR(check_problem(plan, p));
  auto got = algo_cache().find_or_build(
      device, heuristic_key(p, workspace_limit), capturing,
      [&] { return query_heuristics(plan, device, p, workspace_limit); },
      [&] {
        return Status(StatusCode::Unsupported,
                      std::string(plan) + ": cuBLASLt: no algorithm is chosen yet for this matmul and the heuristics are "
                                          "not queried while the stream is capturing a CUDA graph (select the plan, "
                                          "or run it once, before capturing)");
      });
  if (!got) return got.status();
  return static_cast<const AlgoChoice*>(*got);
}

Status run_matmul(const char* plan, cublasLtHandle_t handle, const MatmulProblem& p, const AlgoChoice& algo,
                  const MatmulArgs& args, void* workspace, size_t workspace_bytes, void* stream) {
  if (!args.a || !args.b || !args.d) return invalid(plan, "null A, B or D pointer");
  if (!args.c && args.beta != 0.0) return invalid(plan, "C is null but beta is not 0");
  if (!args.c && (p.c_type != p.d_type || p.ldc != p.ldd || (p.batch > 1 && p.stride_c != p.stride_d)))
    return invalid(plan, "C is null, so its type and layout must equal D's (D is passed as C)");
  const bool wants_bias = has_bias(p.epilogue) || has_bias_grad(p.epilogue);
  if (wants_bias != (args.bias != nullptr))
    return invalid(plan, wants_bias ? "the epilogue reads or writes a bias but none was given"
                                    : "a bias was given but the epilogue has none");
  if (has_aux(p.epilogue) != (args.aux != nullptr))
    return invalid(plan, has_aux(p.epilogue) ? "the epilogue writes aux but none was given"
                                             : "an aux pointer was given but the epilogue has none");
  if ((p.a_scale != ScaleMode::None) != (args.a_scale != nullptr) ||
      (p.b_scale != ScaleMode::None) != (args.b_scale != nullptr))
    return invalid(plan, "a scale pointer must be given exactly for an operand with a scale mode");
  const void* c = args.c ? args.c : args.d;
  struct Op {
    const char* name;
    const void* ptr;
    uint32_t declared;
  };
  const Op ops[] = {{"A", args.a, p.align_a}, {"B", args.b, p.align_b}, {"C", c, p.align_c}, {"D", args.d, p.align_d}};
  for (const Op& o : ops) {
    if (pointer_alignment(o.ptr) < o.declared)
      return invalid(plan, std::string(o.name) + " is " + std::to_string(pointer_alignment(o.ptr)) +
                               "-byte aligned but the algorithm was chosen for " + std::to_string(o.declared) +
                               " (re-key with with_pointer_alignment)");
  }
  if (workspace_bytes < algo.workspace_bytes)
    return Status(StatusCode::WorkspaceTooSmall,
                  std::string(plan) + ": cuBLASLt: workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the algorithm needs " + std::to_string(algo.workspace_bytes),
                  algo.workspace_bytes, workspace_bytes);
  if (algo.workspace_bytes && !workspace) return invalid(plan, "null workspace");

  auto desc = make_descriptors(plan, p);
  if (!desc) return desc.status();
  if (args.bias) {
    const cublasStatus_t s = api().cublasLtMatmulDescSetAttribute(desc->op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                            &args.bias, sizeof(args.bias));
    if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "setting the bias pointer");
  }
  if (args.aux) {
    const cublasStatus_t s = api().cublasLtMatmulDescSetAttribute(desc->op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                                  &args.aux, sizeof(args.aux));
    if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "setting the aux pointer");
  }
  struct ScalePtr {
    cublasLtMatmulDescAttributes_t attr;
    const void* ptr;
    const char* step;
  };
  for (const ScalePtr& sp : {ScalePtr{CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, args.a_scale, "setting A's scale pointer"},
                             ScalePtr{CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, args.b_scale, "setting B's scale pointer"}}) {
    if (!sp.ptr) continue;
    const cublasStatus_t s = api().cublasLtMatmulDescSetAttribute(desc->op.get(), sp.attr, &sp.ptr, sizeof(sp.ptr));
    if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, sp.step);
  }
  const Scalar alpha = scalar_of(p.scale_type, args.alpha), beta = scalar_of(p.scale_type, args.beta);
  const cublasStatus_t s =
      api().cublasLtMatmul(handle, desc->op.get(), &alpha, args.a, desc->a.get(), args.b, desc->b.get(), &beta, c,
                     desc->c.get(), args.d, desc->d.get(), &algo.algo, workspace, algo.workspace_bytes,
                     static_cast<cudaStream_t>(stream));
  if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "running the matmul");
  return Status::ok();
}

}  // namespace baracuda::cublaslt
#endif

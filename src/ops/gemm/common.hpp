// What the GEMM family's plans share: the family record, descriptor rules and
// the select / run steps of a MatmulPlan under another plan's name (LinearPlan
// runs one inside).
#pragma once
#include "baracuda/ops/gemm.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/gemm/problem.hpp"

namespace baracuda::gemm {

inline constexpr baracuda::detail::Family kFamily{"matrix multiply", "gemm", BARACUDA_KERNELS_GEMM};

// f32, f64, f16, bf16; else Unsupported naming the plan.
Status check_dtype(const char* plan, DType t);
// The activation is a known value; save_aux only with Gelu / GeluTanh.
Status check_activation(const char* plan, GemmActivation act, bool save_aux);
// A CUDA stream's plan runs cuBLASLt: a required Bespoke backend is refused.
Status check_backend_preference(const char* plan, const Stream& stream, const PlanPreference& pref);

}  // namespace baracuda::gemm

namespace baracuda::gemm {
struct MatmulPlanAccess {
  // MatmulPlan::select with every message naming `name`.
  static Result<MatmulPlan> select(const char* name, const Stream& stream, const MatmulDescriptor& desc,
                                   const PlanPreference& pref);
  static const MatmulShapes shapes(const MatmulPlan& p);
  // The argument list of `p`'s run(); on CUDA also cuBLASLt's layout rule,
  // naming the operands as the caller knows them.
  static baracuda::detail::ArgCheck check(const MatmulPlan& p, const gemm::MatmulShapes& s, const MatmulArgs& args,
                                          const char* a_name = "a", const char* b_name = "b",
                                          const char* out_name = "out");
  // LinearBackwardPlan's CUDA run (linear_plan.cpp); `dry`: the checks only.
  static Status linear_backward_cuda(const LinearBackwardPlan& p, const Stream& stream, Workspace ws,
                                     const LinearBackwardArgs& args, bool dry);
};
}  // namespace baracuda::gemm

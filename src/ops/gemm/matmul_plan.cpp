// MatmulPlan: torch.matmul shape rules, descriptor and argument checks, and
// dispatch of the one internal Problem to the CPU reference or the cuBLASLt
// route.
#include <cmath>
#include <string>

#include "backends/cublaslt/workspace.hpp"
#include "baracuda/ops/elementwise.hpp"  // broadcast_shapes
#include "core/error.hpp"
#include "ops/gemm/common.hpp"
#include "ops/gemm/cublaslt_route.hpp"
#include "ops/gemm/reference.hpp"

namespace baracuda {

const char* gemm_activation_name(GemmActivation a) {
  switch (a) {
    case GemmActivation::None: return "none";
    case GemmActivation::Relu: return "relu";
    case GemmActivation::GeluTanh: return "gelu-tanh";
    case GemmActivation::Gelu: return "gelu";
  }
  return "?";
}

Result<MatmulDescriptor> MatmulDescriptor::from(const TensorRef& a, const TensorRef& b) {
  if (a.dtype != b.dtype)
    return baracuda::detail::invalid("MatmulDescriptor::from", "a and b must have one dtype, got ", a.dtype, " and ", b.dtype);
  MatmulDescriptor d;
  d.dtype = a.dtype;
  d.a_shape = a.shape;
  d.b_shape = b.shape;
  return d;
}

namespace gemm {

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

Status check_dtype(const char* plan, DType t) {
  if (t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16) return Status::ok();
  return unsupported(plan, "dtype ", t, " is not supported (f32, f64, f16, bf16)");
}

Status check_activation(const char* plan, GemmActivation act, bool save_aux) {
  if (static_cast<int>(act) > static_cast<int>(GemmActivation::Gelu))
    return invalid(plan, "unknown GemmActivation ", static_cast<int>(act));
  if (save_aux && act == GemmActivation::None)
    return invalid(plan, "save_aux is set but there is no activation (the output is the pre-activation)");
  if (save_aux && act == GemmActivation::Relu)
    return invalid(plan, "save_aux is set with relu, which needs no aux: its backward reads the output (out > 0 "
                         "exactly where the pre-activation is)");
  return Status::ok();
}

Status check_backend_preference(const char* plan, const Stream& stream, const PlanPreference& pref) {
  if (!stream.is_cpu() && pref.require_backend && pref.backend && *pref.backend == Backend::Bespoke)
    return unsupported(plan, "backend bespoke has no matrix multiply implementation (CUDA streams run cuBLASLt)");
  return Status::ok();
}

namespace {

Status validate(const char* plan, const MatmulDescriptor& d, MatmulShapes* s) {
  BARACUDA_RETURN_IF_ERROR(check_dtype(plan, d.dtype));
  BARACUDA_RETURN_IF_ERROR(matmul_shapes(plan, d.a_shape, d.b_shape, s));
  BARACUDA_RETURN_IF_ERROR(check_activation(plan, d.activation, d.save_aux));
  if (!std::isfinite(d.alpha)) return invalid(plan, "alpha ", d.alpha, " must be finite");
  if (d.has_c) {
    if (!std::isfinite(d.beta)) return invalid(plan, "beta ", d.beta, " must be finite");
    if (!d.c_shape.rank_valid()) return invalid(plan, "c_shape has rank ", d.c_shape.rank);
    auto b = broadcast_shapes(d.c_shape, s->out, plan);
    if (!b || !(*b == s->out))
      return invalid(plan, "c_shape ", d.c_shape, " does not broadcast to the output shape ", s->out);
  }
  if (d.has_bias && s->b_vec)
    return invalid(plan, "has_bias needs b of rank >= 2 (the bias is added along the output's last dim, which a 1-D b drops)");
  for (const Dims* sh : {&d.a_shape, &d.b_shape, static_cast<const Dims*>(&s->out)})
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "shape", *sh));
  return Status::ok();
}

}  // namespace

// The argument list; on a CUDA plan also cuBLASLt's layout rule (a unit stride
// per matrix), so can_implement() refuses what run() would.
baracuda::detail::ArgCheck check_matmul_args(const PlanBase& plan, const MatmulDescriptor& d, const MatmulShapes& s,
                                             const MatmulArgs& a, const lt::Config* cuda) {
  baracuda::detail::ArgCheck c(plan);
  c.input("a", a.a, d.dtype, d.a_shape)
      .input("b", a.b, d.dtype, d.b_shape)
      .optional_input("c", a.c, d.has_c, d.dtype, d.c_shape, "c is missing (descriptor.has_c is set)",
                      "c is given but descriptor.has_c is false")
      .optional_input("bias", a.bias, d.has_bias, d.dtype, Dims{s.n}, "bias is missing (descriptor.has_bias is set)",
                      "bias is given but descriptor.has_bias is false")
      .output("out", a.out, d.dtype, s.out)
      .optional_output("aux", a.aux, d.save_aux, d.dtype, s.out, "aux is given but descriptor.save_aux is false");
  c.allow_in_place("out", "c").disjoint();
#ifdef BARACUDA_WITH_CUDA
  if (cuda && plan.sku().backend != Backend::CpuReference && shape_numel(s.out) > 0)
    c.rule([&] { return lt::plan_route(make_matmul_problem(d, s, a), *cuda).status(); });
#else
  (void)cuda;
#endif
  return c;
}

gemm::lt::Config config_of(const PlanBase& plan, bool tf32, size_t limit, bool fuse) {
  gemm::lt::Config cfg;
  cfg.plan = plan.name();
  cfg.device = plan.device().ordinal;
  cfg.tf32 = tf32;
  cfg.workspace_limit = limit;
  cfg.fuse = fuse;
  return cfg;
}

}  // namespace gemm

const gemm::MatmulShapes gemm::MatmulPlanAccess::shapes(const MatmulPlan& p) {
  gemm::MatmulShapes s;
  (void)gemm::matmul_shapes(p.name(), p.desc_.a_shape, p.desc_.b_shape, &s);
  return s;
}

Result<MatmulPlan> gemm::MatmulPlanAccess::select(const char* name, const Stream& stream, const MatmulDescriptor& desc,
                                            const PlanPreference& pref) {
  MatmulPlan plan;
  gemm::MatmulShapes s;
  BARACUDA_RETURN_IF_ERROR(gemm::validate(name, desc, &s));
  BARACUDA_RETURN_IF_ERROR(gemm::check_backend_preference(name, stream, pref));
  auto be = baracuda::detail::setup_plan(plan, name, gemm::kFamily, stream, pref, desc.dtype,
                                         std::string("matmul.") + gemm_activation_name(desc.activation), {false, true});
  if (!be) return be.status();
  plan.desc_ = desc;
  plan.out_shape_ = s.out;
  plan.m_ = s.m;
  plan.n_ = s.n;
  plan.k_ = s.k;
  if (be->backend == Backend::CpuReference) return plan;
#ifdef BARACUDA_WITH_CUDA
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.backend = Backend::CuBlasLt;
  plan.tf32_ = pref.allow_reduced_precision && desc.dtype == DType::F32;
  plan.cublaslt_limit_ = cublaslt::workspace_limit(be->arch);
  baracuda::detail::PlanAccess::set_workspace(plan, plan.cublaslt_limit_);
  if (shape_numel(s.out) == 0) {
    sku.variant = "empty";
    return plan;
  }
  const gemm::Problem p = gemm::make_matmul_problem(desc, s, gemm::dense_matmul_args(desc, s, stream.device()));
  gemm::lt::Config cfg = gemm::config_of(plan, plan.tf32_, plan.cublaslt_limit_, true);
  auto route = gemm::lt::warm(p, cfg);
  if (!route) return route.status();
  plan.fuse_ = cfg.fuse;
  sku.variant = route->variant;
  return plan;
#else
  return baracuda::detail::no_cuda(name);
#endif
}

Result<MatmulPlan> MatmulPlan::select(const Stream& stream, const MatmulDescriptor& desc, const PlanPreference& pref) {
  return gemm::MatmulPlanAccess::select("MatmulPlan", stream, desc, pref);
}

baracuda::detail::ArgCheck gemm::MatmulPlanAccess::check(const MatmulPlan& p, const gemm::MatmulShapes& s,
                                                   const MatmulArgs& args, const char* a_name, const char* b_name,
                                                   const char* out_name) {
  gemm::lt::Config cfg = gemm::config_of(p, p.tf32_, p.cublaslt_limit_, p.fuse_);
  cfg.a_name = a_name;
  cfg.b_name = b_name;
  cfg.out_name = out_name;
  return gemm::check_matmul_args(p, p.desc_, s, args, &cfg);
}

Status MatmulPlan::can_implement(const MatmulArgs& args) const {
  return gemm::MatmulPlanAccess::check(*this, gemm::MatmulPlanAccess::shapes(*this), args).status();
}

Status MatmulPlan::run(const Stream& stream, Workspace ws, const MatmulArgs& args) const {
  const gemm::MatmulShapes s = gemm::MatmulPlanAccess::shapes(*this);
  const auto check = gemm::MatmulPlanAccess::check(*this, s, args);
  return baracuda::detail::run_plan(
      *this, stream, ws, check, [&] { return gemm::ref::run(gemm::make_matmul_problem(desc_, s, args)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const gemm::Problem p = gemm::make_matmul_problem(desc_, s, args);
        const gemm::lt::Config cfg = gemm::config_of(*this, tf32_, cublaslt_limit_, fuse_);
        auto route = gemm::lt::plan_route(p, cfg);
        if (!route) return route.status();
        return gemm::lt::execute(*route, p, cfg, stream, ws.ptr, ws.bytes);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

Result<KernelSku> MatmulPlan::sku_for(const Stream& stream, Workspace ws, const MatmulArgs& args) const {
  const gemm::MatmulShapes s = gemm::MatmulPlanAccess::shapes(*this);
  return baracuda::detail::sku_for_run(*this, stream, ws, gemm::MatmulPlanAccess::check(*this, s, args),
                                       [&]() -> Result<KernelSku> {
#ifdef BARACUDA_WITH_CUDA
                                         const gemm::Problem p = gemm::make_matmul_problem(desc_, s, args);
                                         auto route = gemm::lt::plan_route(p, gemm::config_of(*this, tf32_, cublaslt_limit_, fuse_));
                                         if (!route) return route.status();
                                         KernelSku k = sku();
                                         k.variant = route->variant;
                                         return k;
#else
                                         return baracuda::detail::no_cuda(name());
#endif
                                       });
}

}  // namespace baracuda

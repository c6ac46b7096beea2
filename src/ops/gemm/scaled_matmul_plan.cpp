// ScaledMatmulPlan: fp8 a and b with dequantization scales (torch._scaled_mm),
// run as the family's one internal Problem (problem.hpp, `scaled`) by the CPU
// reference or the cuBLASLt route, like MatmulPlan.
#include <string>

#include "backends/cublaslt/workspace.hpp"
#include "core/error.hpp"
#include "ops/gemm/common.hpp"
#include "ops/gemm/cublaslt_route.hpp"
#include "ops/gemm/reference.hpp"

namespace baracuda {

namespace gemm {
namespace {

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

constexpr const char* kPlan = "ScaledMatmulPlan";

bool is_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

Status validate(const ScaledMatmulDescriptor& d, MatmulShapes* s) {
  if (!is_fp8(d.a_dtype) || !is_fp8(d.b_dtype))
    return unsupported(kPlan, "a_dtype ", d.a_dtype, " and b_dtype ", d.b_dtype, " must be f8e4m3 or f8e5m2");
  if (d.a_dtype == DType::F8E5M2 && d.b_dtype == DType::F8E5M2)
    return unsupported(kPlan, "f8e5m2 x f8e5m2 is not supported (cuBLASLt has no kernel for it; use e4m3 for one operand)");
  if (d.out_dtype != DType::BF16 && d.out_dtype != DType::F16 && d.out_dtype != DType::F32)
    return unsupported(kPlan, "out_dtype ", d.out_dtype, " is not supported (bf16, f16, f32)");
  if (d.a_shape.rank != 2) return invalid(kPlan, "a_shape ", d.a_shape, " must be [M, K] (rank 2; flatten leading dims)");
  if (d.b_shape.rank != 2) return invalid(kPlan, "b_shape ", d.b_shape, " must be [K, N] (rank 2)");
  BARACUDA_RETURN_IF_ERROR(matmul_shapes(kPlan, d.a_shape, d.b_shape, s));
  if (static_cast<int>(d.scaling) > static_cast<int>(Fp8Scaling::Row))
    return invalid(kPlan, "unknown Fp8Scaling ", static_cast<int>(d.scaling));
  BARACUDA_RETURN_IF_ERROR(check_activation(kPlan, d.activation, /*save_aux=*/false));
  for (const Dims* sh : {&d.a_shape, &d.b_shape, static_cast<const Dims*>(&s->out)})
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "shape", *sh));
  return Status::ok();
}

Dims scale_shape(const ScaledMatmulDescriptor& d, int64_t extent) {
  return d.scaling == Fp8Scaling::Row ? Dims{extent} : Dims{1};
}

Problem make_scaled_problem(const ScaledMatmulDescriptor& d, const MatmulShapes& s, const ScaledMatmulArgs& a) {
  Problem p;
  p.dtype = d.out_dtype;
  p.batch = s.batch;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.a = mat_of_a(a.a, s);
  p.b = mat_of_b(a.b, s);
  p.out = mat_over_out(a.out.data, a.out.strides, s);
  p.has_bias = d.has_bias;
  if (d.has_bias) {
    p.bias = a.bias.data;
    p.bias_stride = a.bias.strides[0];
  }
  p.act = d.activation;
  p.scaled.on = true;
  p.scaled.a_dtype = d.a_dtype;
  p.scaled.b_dtype = d.b_dtype;
  p.scaled.a_scale = static_cast<const float*>(a.a_scale.data);
  p.scaled.b_scale = static_cast<const float*>(a.b_scale.data);
  p.scaled.a_scale_stride = a.a_scale.rank() == 1 ? a.a_scale.strides[0] : 1;
  p.scaled.b_scale_stride = a.b_scale.rank() == 1 ? a.b_scale.strides[0] : 1;
  p.scaled.rowwise = d.scaling == Fp8Scaling::Row;
  p.scaled.fast_accum = d.fast_accum;
  return p;
}

#ifdef BARACUDA_WITH_CUDA
// cuBLASLt's fp8 layout rule ("TN", 16-byte leading dims), as the argument check states it.
Status check_fp8_layout(const ScaledMatmulDescriptor& d, const MatmulShapes& s, const ScaledMatmulArgs& a) {
  const int64_t M = s.m, N = s.n;
  if (s.k == 0) return Status::ok();  // no GEMM runs (out = act(bias))
  if (M > 1 && a.a.strides[1] != 1)
    return unsupported(kPlan, "a has strides ", a.a.strides, ": cuBLASLt's fp8 kernels need a unit stride along K (a "
                              "row-major [M, K]; the plan does not copy)");
  if (N > 1 && a.b.strides[0] != 1)
    return unsupported(kPlan, "b has strides ", a.b.strides, ": cuBLASLt's fp8 kernels need a unit stride along K (b = "
                              "w.t() of a row-major [N, K] w; the plan does not copy)");
  if (M > 1 && a.a.strides[0] % 16 != 0)
    return unsupported(kPlan, "a's row stride ", a.a.strides[0], " must be a multiple of 16 (cuBLASLt's fp8 alignment)");
  if (N > 1 && a.b.strides[1] % 16 != 0)
    return unsupported(kPlan, "b's column stride ", a.b.strides[1], " must be a multiple of 16 (cuBLASLt's fp8 alignment)");
  if (d.scaling == Fp8Scaling::Row) {
    if (M > 1 && a.a_scale.strides[0] != 1)
      return unsupported(kPlan, "a_scale has stride ", a.a_scale.strides[0], ": row scales need a unit stride on CUDA");
    if (N > 1 && a.b_scale.strides[0] != 1)
      return unsupported(kPlan, "b_scale has stride ", a.b_scale.strides[0], ": row scales need a unit stride on CUDA");
  }
  return Status::ok();
}

lt::Config scaled_config(const PlanBase& plan, size_t limit, bool fuse) {
  lt::Config cfg;
  cfg.plan = plan.name();
  cfg.device = plan.device().ordinal;
  cfg.workspace_limit = limit;
  cfg.fuse = fuse;
  return cfg;
}
#endif

baracuda::detail::ArgCheck check_scaled_args(const PlanBase& plan, const ScaledMatmulDescriptor& d,
                                             const MatmulShapes& s, const ScaledMatmulArgs& a, size_t limit, bool fuse) {
  baracuda::detail::ArgCheck c(plan);
  c.input("a", a.a, d.a_dtype, d.a_shape)
      .input("b", a.b, d.b_dtype, d.b_shape)
      .input("a_scale", a.a_scale, DType::F32, scale_shape(d, s.m))
      .input("b_scale", a.b_scale, DType::F32, scale_shape(d, s.n))
      .optional_input("bias", a.bias, d.has_bias, d.out_dtype, Dims{s.n}, "bias is missing (descriptor.has_bias is set)",
                      "bias is given but descriptor.has_bias is false")
      .output("out", a.out, d.out_dtype, s.out);
  c.disjoint();
#ifdef BARACUDA_WITH_CUDA
  if (plan.sku().backend != Backend::CpuReference && shape_numel(s.out) > 0) {
    c.rule([&] { return check_fp8_layout(d, s, a); });
    c.rule([&, limit, fuse] { return lt::plan_route(make_scaled_problem(d, s, a), scaled_config(plan, limit, fuse)).status(); });
  }
#else
  (void)limit;
  (void)fuse;
#endif
  return c;
}

MatmulShapes shapes_of(const ScaledMatmulDescriptor& d) {
  MatmulShapes s;
  (void)matmul_shapes(kPlan, d.a_shape, d.b_shape, &s);
  return s;
}

}  // namespace
}  // namespace gemm

Dims ScaledMatmulPlan::out_shape() const { return gemm::shapes_of(desc_).out; }
Dims ScaledMatmulPlan::a_scale_shape() const { return gemm::scale_shape(desc_, gemm::shapes_of(desc_).m); }
Dims ScaledMatmulPlan::b_scale_shape() const { return gemm::scale_shape(desc_, gemm::shapes_of(desc_).n); }

Result<ScaledMatmulPlan> ScaledMatmulPlan::select(const Stream& stream, const ScaledMatmulDescriptor& desc,
                                                  const PlanPreference& pref) {
  using namespace gemm;
  ScaledMatmulPlan plan;
  MatmulShapes s;
  BARACUDA_RETURN_IF_ERROR(validate(desc, &s));
  BARACUDA_RETURN_IF_ERROR(check_backend_preference(kPlan, stream, pref));
  auto be = baracuda::detail::setup_plan(plan, kPlan, kFamily, stream, pref, desc.a_dtype,
                                         std::string("scaled_mm.") + gemm_activation_name(desc.activation), {false, true});
  if (!be) return be.status();
  plan.desc_ = desc;
  if (be->backend == Backend::CpuReference) return plan;
#ifdef BARACUDA_WITH_CUDA
  if (s.k % 16 != 0 || s.n % 16 != 0)
    return baracuda::detail::unsupported(kPlan, "K = ", s.k, " and N = ", s.n,
                                         " must be multiples of 16 on CUDA (cuBLASLt's fp8 kernels; the CPU reference "
                                         "takes any size)");
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.backend = Backend::CuBlasLt;
  plan.limit_ = cublaslt::workspace_limit(be->arch);
  baracuda::detail::PlanAccess::set_workspace(plan, plan.limit_);
  if (shape_numel(s.out) == 0) {
    sku.variant = "empty";
    return plan;
  }
  // Stand-ins in the layout cuBLASLt needs: a row-major, b = w.t(), out row-major.
  ScaledMatmulArgs dense;
  const Device dev = stream.device();
  dense.a = TensorRef(nullptr, desc.a_dtype, dev, desc.a_shape, contiguous_strides(desc.a_shape), 0);
  dense.b = TensorRef(nullptr, desc.b_dtype, dev, desc.b_shape, Dims{1, s.k}, 0);
  dense.out = TensorMut(nullptr, desc.out_dtype, dev, s.out, contiguous_strides(s.out), 0);
  dense.a_scale = TensorRef(nullptr, DType::F32, dev, scale_shape(desc, s.m), Dims{1}, 0);
  dense.b_scale = TensorRef(nullptr, DType::F32, dev, scale_shape(desc, s.n), Dims{1}, 0);
  if (desc.has_bias) dense.bias = TensorRef(nullptr, desc.out_dtype, dev, Dims{s.n}, Dims{1}, 0);
  lt::Config cfg = scaled_config(plan, plan.limit_, true);
  auto route = lt::warm(make_scaled_problem(desc, s, dense), cfg);
  if (!route) return route.status();
  plan.fuse_ = cfg.fuse;
  sku.variant = route->variant;
  return plan;
#else
  return baracuda::detail::no_cuda(kPlan);
#endif
}

Status ScaledMatmulPlan::can_implement(const ScaledMatmulArgs& args) const {
  const gemm::MatmulShapes s = gemm::shapes_of(desc_);
  return gemm::check_scaled_args(*this, desc_, s, args, limit_, fuse_).status();
}

Status ScaledMatmulPlan::run(const Stream& stream, Workspace ws, const ScaledMatmulArgs& args) const {
  const gemm::MatmulShapes s = gemm::shapes_of(desc_);
  const auto check = gemm::check_scaled_args(*this, desc_, s, args, limit_, fuse_);
  return baracuda::detail::run_plan(
      *this, stream, ws, check, [&] { return gemm::ref::run(gemm::make_scaled_problem(desc_, s, args)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const gemm::Problem p = gemm::make_scaled_problem(desc_, s, args);
        const gemm::lt::Config cfg = gemm::scaled_config(*this, limit_, fuse_);
        auto route = gemm::lt::plan_route(p, cfg);
        if (!route) return route.status();
        return gemm::lt::execute(*route, p, cfg, stream, ws.ptr, ws.bytes);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

Result<KernelSku> ScaledMatmulPlan::sku_for(const Stream& stream, Workspace ws, const ScaledMatmulArgs& args) const {
  const gemm::MatmulShapes s = gemm::shapes_of(desc_);
  return baracuda::detail::sku_for_run(*this, stream, ws, gemm::check_scaled_args(*this, desc_, s, args, limit_, fuse_),
                                       [&]() -> Result<KernelSku> {
#ifdef BARACUDA_WITH_CUDA
                                         auto route = gemm::lt::plan_route(gemm::make_scaled_problem(desc_, s, args),
                                                                           gemm::scaled_config(*this, limit_, fuse_));
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

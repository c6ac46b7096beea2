// LinearPlan (a MatmulPlan over x and weight^T) and LinearBackwardPlan (the
// activation-gradient pass, then the dx and dw GEMMs with the bias gradient
// fused into dw's epilogue where cuBLASLt has it, else a ReduceToPlan).
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "backends/cublaslt/workspace.hpp"
#include "core/align.hpp"
#include "core/error.hpp"
#include "ops/gemm/common.hpp"
#include "ops/gemm/cublaslt_route.hpp"
#include "ops/gemm/grouped_launch.hpp"
#include "ops/gemm/launch.hpp"
#include "ops/gemm/reference.hpp"

namespace baracuda {

namespace gemm {
namespace {

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

// Safe on an empty (default-constructed) plan's descriptor too: its argument
// checks name the empty plan after building these shapes.
int64_t in_features(const LinearDescriptor& d) {
  return d.x_shape.rank_valid() && d.x_shape.rank >= 1 ? d.x_shape[d.x_shape.rank - 1] : 0;
}
Dims with_last(const Dims& s, int64_t last) {
  Dims r = s;
  if (r.rank_valid() && r.rank >= 1) r[r.rank - 1] = last;
  return r;
}

Status validate_linear(const char* plan, const LinearDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(check_dtype(plan, d.dtype));
  if (!d.x_shape.rank_valid() || d.x_shape.rank < 1)
    return invalid(plan, "x_shape has rank ", d.x_shape.rank, ", expected 1..", kMaxRank, " ([.., in_features])");
  for (int64_t e : d.x_shape)
    if (e < 0) return invalid(plan, "x_shape ", d.x_shape, " has a negative extent");
  if (d.out_features < 0) return invalid(plan, "out_features ", d.out_features, " must be >= 0");
  BARACUDA_RETURN_IF_ERROR(check_activation(plan, d.activation, d.save_aux));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "x_shape", d.x_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "y shape", with_last(d.x_shape, d.out_features)));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "weight", {d.out_features, in_features(d)}));
  return Status::ok();
}

MatmulDescriptor matmul_of(const LinearDescriptor& d) {
  MatmulDescriptor m;
  m.dtype = d.dtype;
  m.a_shape = d.x_shape;
  m.b_shape = Dims{in_features(d), d.out_features};
  m.has_bias = d.has_bias;
  m.activation = d.activation;
  m.save_aux = d.save_aux;
  return m;
}

// weight [N, K] as b = weight^T [K, N].
TensorRef transposed(const TensorRef& w) {
  if (w.rank() != 2) return w;  // the argument checks report it
  TensorRef t = w;
  t.shape = Dims{w.shape[1], w.shape[0]};
  t.strides = Dims{w.strides[1], w.strides[0]};
  return t;
}

// The row stride of a [.., F] view whose leading dims collapse into one axis
// of rows; nullopt when they do not. 0 when there is at most one row.
std::optional<int64_t> row_stride(const Dims& shape, const Dims& strides) {
  bool have = false;
  int64_t st = 0, span = 1;
  for (int d = shape.rank - 2; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (!have) {
      st = strides[d];
      span = shape[d];
      have = true;
    } else if (strides[d] != st * span) {
      return std::nullopt;
    } else {
      span *= shape[d];
    }
  }
  return have ? st : 0;
}

}  // namespace
}  // namespace gemm

// ---- LinearPlan ------------------------------------------------------------------------
Dims LinearPlan::y_shape() const { return gemm::with_last(desc_.x_shape, desc_.out_features); }
Dims LinearPlan::weight_shape() const { return Dims{desc_.out_features, gemm::in_features(desc_)}; }
Dims LinearPlan::bias_shape() const { return Dims{desc_.out_features}; }

Result<LinearPlan> LinearPlan::select(const Stream& stream, const LinearDescriptor& desc, const PlanPreference& pref) {
  constexpr const char* name = "LinearPlan";
  BARACUDA_RETURN_IF_ERROR(gemm::validate_linear(name, desc));
  auto inner = gemm::MatmulPlanAccess::select(name, stream, gemm::matmul_of(desc), pref);
  if (!inner) return inner.status();
  LinearPlan plan;
  auto be = baracuda::detail::setup_plan(plan, name, gemm::kFamily, stream, pref, desc.dtype,
                                         std::string("linear.") + gemm_activation_name(desc.activation), {false, true});
  if (!be) return be.status();
  plan.desc_ = desc;
  baracuda::detail::PlanAccess::sku(plan) = inner->sku();
  baracuda::detail::PlanAccess::sku(plan).op = std::string("linear.") + gemm_activation_name(desc.activation);
  baracuda::detail::PlanAccess::set_workspace(plan, inner->workspace_size());
  plan.inner_ = std::move(*inner);
  return plan;
}

namespace {
MatmulArgs matmul_args(const LinearArgs& a) {
  MatmulArgs m;
  m.a = a.x;
  m.b = gemm::transposed(a.weight);
  m.bias = a.bias;
  m.out = a.y;
  m.aux = a.aux;
  return m;
}
baracuda::detail::ArgCheck check_linear(const LinearPlan& plan, const MatmulPlan& inner, const LinearDescriptor& d,
                                        const LinearArgs& a) {
  baracuda::detail::ArgCheck c(plan);
  c.input("x", a.x, d.dtype, d.x_shape)
      .input("weight", a.weight, d.dtype, plan.weight_shape())
      .optional_input("bias", a.bias, d.has_bias, d.dtype, plan.bias_shape(),
                      "bias is missing (descriptor.has_bias is true, the default)",
                      "bias is given but descriptor.has_bias is false")
      .output("y", a.y, d.dtype, plan.y_shape())
      .optional_output("aux", a.aux, d.save_aux, d.dtype, plan.y_shape(), "aux is given but descriptor.save_aux is false");
  c.disjoint();
  // The inner MatmulPlan's own rules (cuBLASLt's layout on CUDA), in the caller's names.
  c.rule([&] {
    return gemm::MatmulPlanAccess::check(inner, gemm::MatmulPlanAccess::shapes(inner), matmul_args(a), "x", "weight^T", "y").status();
  });
  return c;
}
}  // namespace

Status LinearPlan::can_implement(const LinearArgs& args) const { return check_linear(*this, inner_, desc_, args).status(); }

Status LinearPlan::run(const Stream& stream, Workspace ws, const LinearArgs& args) const {
  const auto check = check_linear(*this, inner_, desc_, args);
  auto inner = [&] { return inner_.run(stream, ws, matmul_args(args)); };
  return baracuda::detail::run_plan(*this, stream, ws, check, inner, inner);
}

Result<KernelSku> LinearPlan::sku_for(const Stream& stream, Workspace ws, const LinearArgs& args) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_linear(*this, inner_, desc_, args), [&]() -> Result<KernelSku> {
    auto k = inner_.sku_for(stream, ws, matmul_args(args));
    if (!k) return k;
    k->op = sku().op;
    return k;
  });
}

// ---- LinearBackwardPlan --------------------------------------------------------------------
Dims LinearBackwardPlan::y_shape() const { return gemm::with_last(desc_.forward.x_shape, desc_.forward.out_features); }
Dims LinearBackwardPlan::weight_shape() const {
  return Dims{desc_.forward.out_features, gemm::in_features(desc_.forward)};
}
Dims LinearBackwardPlan::bias_shape() const { return Dims{desc_.forward.out_features}; }

namespace gemm {
namespace {

constexpr const char* kBwd = "LinearBackwardPlan";
constexpr size_t kAlign = 256;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The two GEMMs of the backward as Problems over 2-D views: g [M, N]
// (rows g_rs, columns g_cs), x [M, K], weight [N, K], dx [M, K], dw [N, K].
struct Views2D {
  const void* g = nullptr;
  int64_t g_rs = 0, g_cs = 1;
  const void* x = nullptr;
  int64_t x_rs = 0, x_cs = 1;
  const void* w = nullptr;
  int64_t w_rs = 0, w_cs = 1;
  void* dx = nullptr;
  int64_t dx_rs = 0, dx_cs = 1;
  void* dw = nullptr;
  int64_t dw_rs = 0, dw_cs = 1;
  void* db = nullptr;
  int64_t db_s = 1;
  const void* x_aux = nullptr;  // the input activation's saved pre-activation [M, K]
  int64_t xa_rs = 0, xa_cs = 1;
  void* din = nullptr;          // dbias_in [K]
  int64_t din_s = 1;
};

Problem dx_problem(DType t, int64_t M, int64_t N, int64_t K, const Views2D& v, GemmActivation in_act = GemmActivation::None,
                   bool colsum = false) {
  Problem p;
  p.dact = in_act;
  if (in_act != GemmActivation::None) p.dact_aux = {v.x_aux, v.xa_rs, v.xa_cs, {}};
  p.has_out_colsum = colsum;
  p.out_colsum = v.din;
  p.out_colsum_stride = v.din_s;
  p.dtype = t;
  p.m = M;
  p.n = K;
  p.k = N;
  p.a = {v.g, v.g_rs, v.g_cs, {}};
  p.b = {v.w, v.w_rs, v.w_cs, {}};
  p.out = {v.dx, v.dx_rs, v.dx_cs, {}};
  p.alpha = 1.0;
  return p;
}

// accumulate: dw itself is c, with beta 1 (c == out in place, as addmm_).
Problem dw_problem(DType t, int64_t M, int64_t N, int64_t K, const Views2D& v, bool fused_db, bool accumulate = false) {
  Problem p;
  p.dtype = t;
  p.m = N;
  p.n = K;
  p.k = M;
  p.a = {v.g, v.g_cs, v.g_rs, {}};  // g^T
  p.b = {v.x, v.x_rs, v.x_cs, {}};
  p.out = {v.dw, v.dw_rs, v.dw_cs, {}};
  p.alpha = 1.0;
  if (accumulate) {
    p.has_c = true;
    p.c = {v.dw, v.dw_rs, v.dw_cs, {}};
    p.beta = 1.0;
  }
  if (fused_db) {
    p.has_a_rowsum = true;
    p.a_rowsum = v.db;
    p.a_rowsum_stride = v.db_s;
  }
  return p;
}

// The accumulating bias gradient: db [1, N] += ones [1, M] . g [M, N] (beta 1,
// c == out). A GEMM rather than the reduction, which can only overwrite.
Problem db_acc_problem(DType t, int64_t M, int64_t N, const void* ones, const Views2D& v) {
  Problem p;
  p.dtype = t;
  p.m = 1;
  p.n = N;
  p.k = M;
  p.a = {ones, std::max<int64_t>(M, 1), 1, {}};
  p.b = {v.g, v.g_rs, v.g_cs, {}};
  p.out = {v.db, N * v.db_s, v.db_s, {}};
  p.c = {v.db, N * v.db_s, v.db_s, {}};
  p.has_c = true;
  p.alpha = 1.0;
  p.beta = 1.0;
  return p;
}

// PlanPreference::variant of the backward (default: BARACUDA_GEMM_VARIANT,
// read at select() only): "bgrad=0|1" (the fused bias-gradient epilogues
// BGRADB / DGELU_BGRAD, else ReduceToPlan reductions), "dgelu=0|1" (the
// DGELU epilogue of a chained dx, else a pass).
// Defaults measured on the H100 (docs/BENCHMARKS.md, 2026-11-24, bf16):
// cuBLASLt picks much slower kernels with the bias-gradient epilogues — the
// GPT-2 MLP block's backward took 424 us with DGELU_BGRAD + BGRADB, 298 us
// with DGELU and two reductions (eager 328 us); Llama-7B's 4932 vs 4497 us;
// the plain linear backward 195 vs 189 us — so bgrad defaults to 0. DGELU
// alone wins (321 us with the pass instead): dgelu defaults to 1.
struct BwdHint {
  bool bgrad = false, dgelu = true;
};
Result<BwdHint> parse_bwd_hint(const std::string& spec) {
  BwdHint h;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
    if ((key != "bgrad" && key != "dgelu") || (val != "0" && val != "1"))
      return invalid(kBwd, "variant hint '", item, "': expected bgrad=0|1 or dgelu=0|1");
    (key == "bgrad" ? h.bgrad : h.dgelu) = val == "1";
  }
  return h;
}

Status validate_backward(const LinearBackwardDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(validate_linear(kBwd, d.forward));
  if (d.need_db && !d.forward.has_bias)
    return invalid(kBwd, "need_db is set but forward.has_bias is false (there is no bias to differentiate)");
  if (static_cast<int>(d.input_activation) > static_cast<int>(GemmActivation::Gelu))
    return invalid(kBwd, "unknown input_activation ", static_cast<int>(d.input_activation));
  if (d.input_activation != GemmActivation::None && !d.need_dx)
    return invalid(kBwd, "input_activation is set but need_dx is false (it changes only dx)");
  if (d.need_input_bias_grad && d.input_activation == GemmActivation::None)
    return invalid(kBwd, "need_input_bias_grad is set but input_activation is none (chain the previous layer's "
                         "activation to get its bias gradient here)");
  return Status::ok();
}

}  // namespace
}  // namespace gemm

Result<LinearBackwardPlan> LinearBackwardPlan::select(const Stream& stream, const LinearBackwardDescriptor& desc,
                                                      const PlanPreference& pref) {
  LinearBackwardDescriptor d = desc;
  BARACUDA_RETURN_IF_ERROR(gemm::validate_backward(d));
  std::string spec = pref.variant;
  if (spec.empty())
    if (const char* e = std::getenv("BARACUDA_GEMM_VARIANT")) spec = e;
  auto hint = gemm::parse_bwd_hint(spec);
  if (!hint) return hint.status();
  BARACUDA_RETURN_IF_ERROR(gemm::check_backend_preference(gemm::kBwd, stream, pref));
  LinearBackwardPlan plan;
  const LinearDescriptor& f = d.forward;
  auto be = baracuda::detail::setup_plan(plan, gemm::kBwd, gemm::kFamily, stream, pref, f.dtype,
                                         std::string("linear_backward.") + gemm_activation_name(f.activation),
                                         {false, true});
  if (!be) return be.status();
  plan.desc_ = d;
  int64_t rows = 1;
  for (int i = 0; i < f.x_shape.rank - 1; ++i) rows *= f.x_shape[i];
  plan.rows_ = rows;
  if (be->backend == Backend::CpuReference) return plan;
#ifdef BARACUDA_WITH_CUDA
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.backend = Backend::CuBlasLt;
  const int64_t M = rows, N = f.out_features, K = gemm::in_features(f);
  const size_t es = dtype_size(f.dtype);
  plan.tf32_ = pref.allow_reduced_precision && f.dtype == DType::F32;
  plan.g_bytes_ = f.activation != GemmActivation::None ? gemm::align_up(static_cast<size_t>(M * N) * es) : 0;
  plan.limit_ = cublaslt::workspace_limit(be->arch);
  gemm::Views2D v;  // dense, null data
  v.g_rs = N;
  v.x_rs = K;
  v.w_rs = K;
  v.dx_rs = K;
  v.dw_rs = K;
  gemm::lt::Config cfg;
  cfg.plan = gemm::kBwd;
  cfg.device = stream.device().ordinal;
  cfg.tf32 = plan.tf32_;
  cfg.workspace_limit = plan.limit_;
  cfg.bgrad = plan.bgrad_ = hint->bgrad;
  cfg.dgelu = plan.dgelu_ = hint->dgelu;
  std::string variant = f.activation != GemmActivation::None ? std::string(gemm_activation_name(f.activation)) + "-grad-pass+" : "";
  const bool any = M * N * K > 0;
  v.xa_rs = K;
  if (d.need_dx && M * K > 0) {
    gemm::lt::Config dcfg = cfg;
    auto r = gemm::lt::warm(gemm::dx_problem(f.dtype, M, N, K, v, d.input_activation, d.need_input_bias_grad), dcfg);
    if (!r) return r.status();
    plan.fuse_dx_ = dcfg.fuse;
    plan.fused_din_ = r->colsum_done;
    variant += "dx:" + r->variant + " ";
  }
  if (d.need_dw && N * K > 0) {
    // BGRADB overwrites db: never with accumulate.
    plan.fused_db_ = d.need_db && M > 0 && any && hint->bgrad && !d.accumulate;
    auto r = gemm::lt::warm(gemm::dw_problem(f.dtype, M, N, K, v, plan.fused_db_, d.accumulate), cfg);
    if (!r && plan.fused_db_ && r.status().code() == StatusCode::Unsupported) {
      plan.fused_db_ = false;  // no BGRADB kernel for this dtype / layout: db by a reduction
      r = gemm::lt::warm(gemm::dw_problem(f.dtype, M, N, K, v, false), cfg);
    }
    if (!r) return r.status();
    variant += "dw:" + r->variant + (d.accumulate ? "+=" : "") + " ";
  }
  size_t reduce_ws = 0;
  if (d.need_db && d.accumulate) {
    plan.ones_bytes_ = gemm::align_up(static_cast<size_t>(M) * es);
    if (N > 0) {
      v.db_s = 1;
      auto r = gemm::lt::warm(gemm::db_acc_problem(f.dtype, M, N, nullptr, v), cfg);
      if (!r) return r.status();
      variant += "db:ones." + r->variant + "+=";
    }
  } else if (d.need_db && !plan.fused_db_) {
    ReduceToDescriptor rd;
    rd.dtype = f.dtype;
    rd.shape = Dims{M, N};
    rd.target = Dims{N};
    PlanPreference rp;  // the reduction's own backend choice; determinism as asked
    rp.require_deterministic = pref.require_deterministic;
    auto r = ReduceToPlan::select(stream, rd, rp);
    if (!r) return r.status();
    reduce_ws = r->workspace_size();
    plan.db_reduce_ = std::move(*r);
    variant += "db:reduce";
  } else if (d.need_db) {
    variant += "db:fused";
  }
  if (d.need_input_bias_grad && !plan.fused_din_) {
    ReduceToDescriptor rd;
    rd.dtype = f.dtype;
    rd.shape = Dims{M, K};
    rd.target = Dims{K};
    PlanPreference rp;
    rp.require_deterministic = pref.require_deterministic;
    auto r = ReduceToPlan::select(stream, rd, rp);
    if (!r) return r.status();
    reduce_ws = std::max(reduce_ws, r->workspace_size());
    plan.din_reduce_ = std::move(*r);
    variant += " dbias_in:reduce";
  } else if (d.need_input_bias_grad) {
    variant += " dbias_in:fused";
  }
  while (!variant.empty() && variant.back() == ' ') variant.pop_back();
  sku.variant = variant;
  plan.reduce_offset_ = plan.g_bytes_ + plan.ones_bytes_;
  baracuda::detail::PlanAccess::set_workspace(plan, plan.g_bytes_ + plan.ones_bytes_ + std::max(plan.limit_, reduce_ws));
  return plan;
#else
  return baracuda::detail::no_cuda(gemm::kBwd);
#endif
}

namespace {
baracuda::detail::ArgCheck check_backward(const LinearBackwardPlan& plan, const LinearBackwardArgs& a) {
  const LinearBackwardDescriptor& d = plan.descriptor();
  const LinearDescriptor& f = d.forward;
  const bool act = f.activation != GemmActivation::None;
  baracuda::detail::ArgCheck c(plan);
  c.input("dy", a.dy, f.dtype, plan.y_shape())
      .optional_input("x", a.x, d.need_dw, f.dtype, f.x_shape, "x is missing (need_dw is set)",
                      "x is given but need_dw is false (only dw reads x)")
      .optional_input("weight", a.weight, d.need_dx, f.dtype, plan.weight_shape(), "weight is missing (need_dx is set)",
                      "weight is given but need_dx is false (only dx reads weight)")
      .optional_input("aux", a.aux, act, f.dtype, plan.y_shape(),
                      std::string("aux is missing (forward.activation is ") + gemm_activation_name(f.activation) +
                          ": pass the saved pre-activation, or y for relu)",
                      "aux is given but forward.activation is none")
      .optional_output("dx", a.dx, d.need_dx, f.dtype, f.x_shape, "dx is given but need_dx is false")
      .optional_output("dw", a.dw, d.need_dw, f.dtype, plan.weight_shape(), "dw is given but need_dw is false")
      .optional_input("x_aux", a.x_aux, d.input_activation != GemmActivation::None, f.dtype, f.x_shape,
                      std::string("x_aux is missing (input_activation is ") + gemm_activation_name(d.input_activation) +
                          ": pass the previous layer's saved pre-activation, or x for relu)",
                      "x_aux is given but input_activation is none")
      .optional_output("db", a.db, d.need_db, f.dtype, plan.bias_shape(), "db is given but need_db is false")
      .optional_output("dbias_in", a.dbias_in, d.need_input_bias_grad, f.dtype, Dims{gemm::in_features(f)},
                       "dbias_in is given but need_input_bias_grad is false");
  c.disjoint();
#ifdef BARACUDA_WITH_CUDA
  if (plan.sku().backend != Backend::CpuReference)
    c.rule([&] { return gemm::MatmulPlanAccess::linear_backward_cuda(plan, Stream::cpu(), Workspace{}, a, true); });
#endif
  return c;
}
}  // namespace

#ifdef BARACUDA_WITH_CUDA
// The CUDA backward: views, routes and launches; `dry`: only the checks
// (can_implement's layout rules), nothing launched.
Status gemm::MatmulPlanAccess::linear_backward_cuda(const LinearBackwardPlan& p, const Stream& stream, Workspace ws,
                                              const LinearBackwardArgs& args, bool dry) {
    const LinearDescriptor& f = p.desc_.forward;
    const int64_t M = p.rows_, N = f.out_features, K = gemm::in_features(f);
    const bool act = f.activation != GemmActivation::None;
    gemm::Views2D v;
    auto need_rows = [&](const char* what, const auto& t, int64_t* rs, int64_t* cs) -> Status {
      auto r = gemm::row_stride(t.shape, t.strides);
      if (!r)
        return baracuda::detail::unsupported(p.name(), what, " ", t.shape, " with strides ", t.strides,
                                             ": its leading dims do not collapse into one row stride (pass a "
                                             "contiguous view)");
      *rs = *r;
      *cs = t.strides[t.rank() - 1];
      return Status::ok();
    };
    char* base = static_cast<char*>(ws.ptr);
    if (act) {
      const TensorMut g(base, f.dtype, stream.device(), p.y_shape(), contiguous_strides(p.y_shape()), M * N);
      if (!dry) BARACUDA_RETURN_IF_ERROR(gemm::cuda::activation_grad_pass(stream, f.activation, args.dy, args.aux, g));
      v.g = base;
      v.g_rs = N;
      v.g_cs = 1;
    } else {
      v.g = args.dy.data;
      BARACUDA_RETURN_IF_ERROR(need_rows("dy", args.dy, &v.g_rs, &v.g_cs));
    }
    const size_t head = p.g_bytes_ + p.ones_bytes_;  // g, then the ones vector (accumulate with db)
    void* ones = base ? base + p.g_bytes_ : nullptr;
    void* lt_ws = base ? base + head : nullptr;
    const size_t lt_bytes = ws.bytes > head ? ws.bytes - head : 0;
    gemm::lt::Config cfg;
    cfg.plan = p.name();
    cfg.device = p.device().ordinal;
    cfg.tf32 = p.tf32_;
    cfg.workspace_limit = p.limit_;
    cfg.bgrad = p.bgrad_;
    cfg.dgelu = p.dgelu_;
    if (p.desc_.need_dx && M * K > 0) {
      v.w = args.weight.data;
      v.w_rs = args.weight.strides[0];
      v.w_cs = args.weight.strides[1];
      v.dx = args.dx.data;
      BARACUDA_RETURN_IF_ERROR(need_rows("dx", args.dx, &v.dx_rs, &v.dx_cs));
      if (p.desc_.input_activation != GemmActivation::None) {
        v.x_aux = args.x_aux.data;
        BARACUDA_RETURN_IF_ERROR(need_rows("x_aux", args.x_aux, &v.xa_rs, &v.xa_cs));
      }
      if (p.fused_din_) {
        v.din = args.dbias_in.data;
        v.din_s = args.dbias_in.strides[0];
      }
      const gemm::Problem q =
          gemm::dx_problem(f.dtype, M, N, K, v, p.desc_.input_activation, p.fused_din_);
      gemm::lt::Config dcfg = cfg;
      dcfg.fuse = p.fuse_dx_;
      auto r = gemm::lt::plan_route(q, dcfg);
      if (!r) return r.status();
      if (!dry) BARACUDA_RETURN_IF_ERROR(gemm::lt::execute(*r, q, dcfg, stream, lt_ws, lt_bytes));
    }
    if (p.desc_.need_dw && N * K > 0) {
      v.x = args.x.data;
      BARACUDA_RETURN_IF_ERROR(need_rows("x", args.x, &v.x_rs, &v.x_cs));
      v.dw = args.dw.data;
      v.dw_rs = args.dw.strides[0];
      v.dw_cs = args.dw.strides[1];
      if (p.fused_db_) {
        v.db = args.db.data;
        v.db_s = args.db.strides[0];
      }
      const gemm::Problem q = gemm::dw_problem(f.dtype, M, N, K, v, p.fused_db_, p.desc_.accumulate);
      auto r = gemm::lt::plan_route(q, cfg);
      if (!r) return r.status();
      if (!dry) BARACUDA_RETURN_IF_ERROR(gemm::lt::execute(*r, q, cfg, stream, lt_ws, lt_bytes));
    }
    if (p.desc_.need_db && p.desc_.accumulate && N > 0) {
      v.db = args.db.data;
      v.db_s = args.db.strides[0];
      if (!dry && M > 0)
        BARACUDA_RETURN_IF_ERROR(
            gemm::cuda::fill_pass(stream, 1.0, TensorMut(ones, f.dtype, stream.device(), Dims{M}, Dims{1}, M)));
      const gemm::Problem q = gemm::db_acc_problem(f.dtype, M, N, ones, v);
      auto r = gemm::lt::plan_route(q, cfg);
      if (!r) return r.status();
      if (!dry) BARACUDA_RETURN_IF_ERROR(gemm::lt::execute(*r, q, cfg, stream, lt_ws, lt_bytes));
    } else if (p.desc_.need_db && !p.fused_db_ && N > 0) {
      ReduceToArgs ra;
      ra.x = TensorRef(v.g, f.dtype, stream.device(), Dims{M, N}, Dims{v.g_rs, v.g_cs},
                       M == 0 ? 0 : (M - 1) * v.g_rs + (N - 1) * v.g_cs + 1);
      ra.y = args.db;
      if (!dry) BARACUDA_RETURN_IF_ERROR(p.db_reduce_.run(stream, Workspace{lt_ws, lt_bytes}, ra));
    }
    if (p.desc_.need_input_bias_grad && !p.fused_din_ && K > 0) {
      ReduceToArgs ra;
      int64_t rs = 0, cs = 1;
      BARACUDA_RETURN_IF_ERROR(need_rows("dx", args.dx, &rs, &cs));
      ra.x = TensorRef(args.dx.data, f.dtype, stream.device(), Dims{M, K}, Dims{rs, cs},
                       M == 0 ? 0 : (M - 1) * rs + (K - 1) * cs + 1);
      ra.y = args.dbias_in;
      if (!dry) BARACUDA_RETURN_IF_ERROR(p.din_reduce_.run(stream, Workspace{lt_ws, lt_bytes}, ra));
    }
    return Status::ok();
}
#endif

Status LinearBackwardPlan::can_implement(const LinearBackwardArgs& args) const { return check_backward(*this, args).status(); }

Status LinearBackwardPlan::run(const Stream& stream, Workspace ws, const LinearBackwardArgs& args) const {
  const auto check = check_backward(*this, args);
  return baracuda::detail::run_plan(
      *this, stream, ws, check,
      [&] {
        gemm::ref::LinearBackward p;
        p.desc = desc_;
        p.rows = rows_;
        p.args = args;
        return gemm::ref::run_linear_backward(p);
      },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return gemm::MatmulPlanAccess::linear_backward_cuda(*this, stream, ws, args, false);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

Result<KernelSku> LinearBackwardPlan::sku_for(const Stream& stream, Workspace ws, const LinearBackwardArgs& args) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_backward(*this, args));
}

}  // namespace baracuda

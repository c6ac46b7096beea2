// GroupedLinearPlan and GroupedLinearBackwardPlan (the experts of a
// mixture-of-experts layer): descriptor and argument rules, the host offsets
// read and validated once per call, the CPU reference (grouped_reference.cpp),
// and on CUDA one Problem per group (or one for a shared weight's gradients)
// run through the cuBLASLt route of the family (cublaslt_route.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cublaslt/workspace.hpp"
#include "core/checks.hpp"
#include "core/error.hpp"
#include "core/overlap.hpp"
#include "ops/gemm/common.hpp"
#include "ops/gemm/cublaslt_route.hpp"
#include "ops/gemm/grouped_launch.hpp"
#include "ops/gemm/grouped_reference.hpp"
#include "ops/gemm/launch.hpp"

namespace baracuda {

namespace gemm {
namespace {

using baracuda::detail::invalid;

constexpr const char* kFwd = "GroupedLinearPlan";
constexpr const char* kBwd = "GroupedLinearBackwardPlan";
// The host loops over the groups (and reads G + 1 offsets) per call; far above
// any mixture-of-experts' expert count.
constexpr int64_t kMaxGroups = int64_t{1} << 20;

Dims x_shape_of(const GroupedLinearDescriptor& d) { return Dims{d.capacity, d.in_features}; }
Dims y_shape_of(const GroupedLinearDescriptor& d) { return Dims{d.capacity, d.out_features}; }
Dims offsets_shape_of(const GroupedLinearDescriptor& d) { return Dims{d.groups + 1}; }
Dims weight_shape_of(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features, d.in_features} : Dims{d.groups, d.out_features, d.in_features};
}
Dims bias_shape_of(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features} : Dims{d.groups, d.out_features};
}

Status validate_grouped(const char* plan, const GroupedLinearDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(check_dtype(plan, d.dtype));
  if (d.groups < 1 || d.groups > kMaxGroups)
    return invalid(plan, "groups ", d.groups, " must be in [1, ", kMaxGroups, "]");
  if (d.in_features < 0) return invalid(plan, "in_features ", d.in_features, " must be >= 0");
  if (d.out_features < 0) return invalid(plan, "out_features ", d.out_features, " must be >= 0");
  if (d.capacity < 0) return invalid(plan, "capacity ", d.capacity, " must be >= 0");
  BARACUDA_RETURN_IF_ERROR(check_activation(plan, d.activation, d.save_aux));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "x", {d.capacity, d.in_features}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "y", {d.capacity, d.out_features}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "weight", {d.groups, d.out_features, d.in_features}));
  return Status::ok();
}

Status validate_grouped_backward(const GroupedLinearBackwardDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(validate_grouped(kBwd, d.forward));
  if (d.need_db && !d.forward.has_bias)
    return invalid(kBwd, "need_db is set but forward.has_bias is false (there is no bias to differentiate)");
  return Status::ok();
}

// The offsets view: a host i64 [G + 1] tensor (its values are checked by read_offsets).
Status check_offsets_view(const char* plan, const GroupedLinearDescriptor& d, const TensorRef& o) {
  if (o.data == nullptr && o.shape.rank == 0)
    return invalid(plan, "offsets is missing: expected a host (cpu) i64 view of shape ", offsets_shape_of(d),
                   " (group g owns rows [offsets[g], offsets[g+1]))");
  if (!o.device.is_cpu())
    return invalid(plan, "offsets is on ", o.device,
                   ": the group offsets are a host tensor (Device::cpu()), read by run() before it enqueues anything");
  return baracuda::detail::check_view(plan, "offsets", o, DType::I64, offsets_shape_of(d), Device::cpu());
}

// Reads the G + 1 offsets and checks offsets[0] == 0, non-decreasing, offsets[G] <= T.
Status read_offsets(const char* plan, const GroupedLinearDescriptor& d, const TensorRef& o, std::vector<int64_t>* out) {
  const int64_t G = d.groups;
  const int64_t* p = static_cast<const int64_t*>(o.data);
  out->resize(static_cast<size_t>(G + 1));
  for (int64_t i = 0; i <= G; ++i) (*out)[static_cast<size_t>(i)] = p[i * o.strides[0]];
  const std::vector<int64_t>& v = *out;
  if (v[0] != 0) return invalid(plan, "offsets[0] is ", v[0], ", expected 0 (group 0 starts at row 0)");
  for (int64_t i = 1; i <= G; ++i)
    if (v[static_cast<size_t>(i)] < v[static_cast<size_t>(i - 1)])
      return invalid(plan, "offsets must be non-decreasing: offsets[", i, "] = ", v[static_cast<size_t>(i)],
                     " < offsets[", i - 1, "] = ", v[static_cast<size_t>(i - 1)]);
  if (v[static_cast<size_t>(G)] > d.capacity)
    return invalid(plan, "offsets[", G, "] = ", v[static_cast<size_t>(G)], " exceeds the capacity ", d.capacity,
                   " (the rows of x)");
  return Status::ok();
}

// On a CPU plan an output could share host memory with the offsets.
Status offsets_disjoint(const char* plan, const TensorRef& o, std::initializer_list<std::pair<const char*, TensorRef>> outs) {
  for (const auto& [name, v] : outs)
    if (v.data && v.numel() > 0 && baracuda::detail::views_overlap_exact(v, o))
      return invalid(plan, name, " overlaps offsets in memory");
  return Status::ok();
}

#ifdef BARACUDA_WITH_CUDA
constexpr size_t kAlign = 256;
size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Row counts warmed at select(): the capacity and the even split.
std::vector<int64_t> warm_rows(const GroupedLinearDescriptor& d) {
  std::vector<int64_t> rows;
  if (d.capacity > 0) rows.push_back(d.capacity);
  const int64_t even = (d.capacity + d.groups - 1) / d.groups;
  if (even > 0 && even != d.capacity) rows.push_back(even);
  return rows;
}

// ---- the Problems ----------------------------------------------------------------------
// A [rows, cols] matrix view: element (i, j) at data + i * rs + j * cs (elements).
struct View2 {
  const void* data = nullptr;
  int64_t rs = 0, cs = 1;
};
const void* at(const void* base, int64_t off, size_t es) {
  return base ? static_cast<const char*>(base) + off * static_cast<int64_t>(es) : nullptr;
}
View2 rows_of(const TensorRef& t, int64_t r0, size_t es) { return {at(t.data, r0 * t.strides[0], es), t.strides[0], t.strides[1]}; }
// weight[e] (or the shared weight) as [N, K]; also dw.
View2 slice_of(const TensorRef& w, bool shared, int64_t e, size_t es) {
  const int r = shared ? 0 : 1;
  return {at(w.data, shared ? 0 : e * w.strides[0], es), w.strides[r], w.strides[r + 1]};
}

Problem gemm_of(DType t, int64_t m, int64_t n, int64_t k, View2 a, View2 b, View2 out) {
  Problem p;
  p.dtype = t;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {a.data, a.rs, a.cs, {}};
  p.b = {b.data, b.rs, b.cs, {}};
  p.out = {const_cast<void*>(out.data), out.rs, out.cs, {}};
  p.alpha = 1.0;
  return p;
}

// Group e's forward: rows [r0, r0 + M) of x times weight[e]^T (+ bias[e], act, aux).
Problem forward_problem(const GroupedLinearDescriptor& d, const GroupedLinearArgs& a, int64_t e, int64_t r0, int64_t M) {
  const size_t es = dtype_size(d.dtype);
  const View2 w = slice_of(a.weight, d.shared_weight, e, es);
  Problem p = gemm_of(d.dtype, M, d.out_features, d.in_features, rows_of(a.x, r0, es), View2{w.data, w.cs, w.rs},
                      rows_of(a.y, r0, es));
  if (d.save_aux) {
    const View2 x = rows_of(a.aux, r0, es);
    p.aux = {const_cast<void*>(x.data), x.rs, x.cs, {}};
    p.save_aux = true;
  }
  if (d.has_bias) {
    p.has_bias = true;
    p.bias = at(a.bias.data, d.shared_weight ? 0 : e * a.bias.strides[0], es);
    p.bias_stride = a.bias.strides[a.bias.rank() - 1];
  }
  p.act = d.activation;
  return p;
}

// The backward's three GEMMs over `rows` rows: g [rows, N] (gr), x [rows, K],
// weight[e] [N, K], ones [1, rows].
Problem dx_problem(DType t, int64_t rows, int64_t N, int64_t K, View2 g, View2 w, View2 dx) {
  return gemm_of(t, rows, K, N, g, w, dx);
}
Problem dw_problem(DType t, int64_t rows, int64_t N, int64_t K, View2 g, View2 x, View2 dw) {
  return gemm_of(t, N, K, rows, View2{g.data, g.cs, g.rs}, x, dw);  // g^T . x
}
Problem db_problem(DType t, int64_t rows, int64_t N, const void* ones, View2 g, View2 db) {
  return gemm_of(t, 1, N, rows, View2{ones, std::max<int64_t>(rows, 1), 1}, g, db);  // ones^T . g
}

lt::Config config_of(const PlanBase& p, bool tf32, size_t limit, const char* a, const char* b, const char* out) {
  lt::Config cfg;
  cfg.plan = p.name();
  cfg.device = p.device().ordinal;
  cfg.tf32 = tf32;
  cfg.workspace_limit = limit;
  cfg.a_name = a;
  cfg.b_name = b;
  cfg.out_name = out;
  return cfg;
}

// Routes one Problem; `dry`: the route's layout rules only. A fused epilogue
// cuBLASLt has no kernel for at this row count takes the plain GEMM + passes
// (nothing is enqueued before the algorithm is chosen, so the retry is clean).
Status run_problem(const Problem& q, lt::Config cfg, const Stream& stream, void* ws, size_t ws_bytes, bool dry) {
  auto r = lt::plan_route(q, cfg);
  if (!r || dry) return r.status();
  const Status st = lt::execute(*r, q, cfg, stream, ws, ws_bytes);
  if (st.code() != StatusCode::Unsupported || !cfg.fuse || r->k_zero) return st;
  cfg.fuse = false;
  auto plain = lt::plan_route(q, cfg);
  if (!plain) return plain.status();
  if (plain->variant == r->variant) return st;
  return lt::execute(*plain, q, cfg, stream, ws, ws_bytes);
}

// Warms one dense Problem (null data) at select(); returns its route's variant.
Result<std::string> warm_one(const Problem& q, lt::Config& cfg) {
  auto r = lt::warm(q, cfg);
  if (!r) return r.status();
  return r->variant;
}
#endif

}  // namespace

struct GroupedPlanAccess {
  static Status forward_cuda(const GroupedLinearPlan& p, const Stream& stream, Workspace ws, const GroupedLinearArgs& a,
                             const std::vector<int64_t>& offs, bool dry);
  static Status backward_cuda(const GroupedLinearBackwardPlan& p, const Stream& stream, Workspace ws,
                              const GroupedLinearBackwardArgs& a, const std::vector<int64_t>& offs, bool dry);
};
}  // namespace gemm

// ---- GroupedLinearPlan -------------------------------------------------------------------
Dims GroupedLinearPlan::x_shape() const { return gemm::x_shape_of(desc_); }
Dims GroupedLinearPlan::y_shape() const { return gemm::y_shape_of(desc_); }
Dims GroupedLinearPlan::offsets_shape() const { return gemm::offsets_shape_of(desc_); }
Dims GroupedLinearPlan::weight_shape() const { return gemm::weight_shape_of(desc_); }
Dims GroupedLinearPlan::bias_shape() const { return gemm::bias_shape_of(desc_); }

Result<GroupedLinearPlan> GroupedLinearPlan::select(const Stream& stream, const GroupedLinearDescriptor& desc,
                                                    const PlanPreference& pref) {
  constexpr const char* name = gemm::kFwd;
  BARACUDA_RETURN_IF_ERROR(gemm::validate_grouped(name, desc));
  BARACUDA_RETURN_IF_ERROR(gemm::check_backend_preference(name, stream, pref));
  GroupedLinearPlan plan;
  auto be = baracuda::detail::setup_plan(plan, name, gemm::kFamily, stream, pref, desc.dtype,
                                         std::string("grouped_linear.") + gemm_activation_name(desc.activation),
                                         {false, true});
  if (!be) return be.status();
  plan.desc_ = desc;
  if (be->backend == Backend::CpuReference) return plan;
#ifdef BARACUDA_WITH_CUDA
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.backend = Backend::CuBlasLt;
  plan.tf32_ = pref.allow_reduced_precision && desc.dtype == DType::F32;
  plan.limit_ = cublaslt::workspace_limit(be->arch);
  baracuda::detail::PlanAccess::set_workspace(plan, plan.limit_);
  if (desc.capacity == 0 || desc.out_features == 0) {
    sku.variant = "empty";
    return plan;
  }
  // Dense views at null data: x [T, K], weight [N, K] (read as weight^T), y / aux [T, N].
  GroupedLinearArgs a;
  const Device dev = stream.device();
  a.x = TensorRef(nullptr, desc.dtype, dev, plan.x_shape(), contiguous_strides(plan.x_shape()), 0);
  a.weight = TensorRef(nullptr, desc.dtype, dev, plan.weight_shape(), contiguous_strides(plan.weight_shape()), 0);
  a.bias = TensorRef(nullptr, desc.dtype, dev, plan.bias_shape(), contiguous_strides(plan.bias_shape()), 0);
  a.y = TensorMut(nullptr, desc.dtype, dev, plan.y_shape(), contiguous_strides(plan.y_shape()), 0);
  a.aux = a.y;
  std::string variant;
  for (int64_t rows : gemm::warm_rows(desc)) {
    gemm::lt::Config cfg = gemm::config_of(plan, plan.tf32_, plan.limit_, "x", "weight^T", "y");
    auto v = gemm::warm_one(gemm::forward_problem(desc, a, 0, 0, rows), cfg);
    if (!v) return v.status();
    plan.fuse_ = plan.fuse_ && cfg.fuse;
    if (variant.empty()) variant = *v;
  }
  sku.variant = "per-group." + variant;
  return plan;
#else
  return baracuda::detail::no_cuda(name);
#endif
}

namespace {
baracuda::detail::ArgCheck check_grouped(const GroupedLinearPlan& plan, const GroupedLinearArgs& a,
                                         std::vector<int64_t>* offs) {
  const GroupedLinearDescriptor& d = plan.descriptor();
  baracuda::detail::ArgCheck c(plan);
  c.input("x", a.x, d.dtype, plan.x_shape())
      .input("weight", a.weight, d.dtype, plan.weight_shape())
      .optional_input("bias", a.bias, d.has_bias, d.dtype, plan.bias_shape(),
                      "bias is missing (descriptor.has_bias is true, the default)",
                      "bias is given but descriptor.has_bias is false")
      .output("y", a.y, d.dtype, plan.y_shape())
      .optional_output("aux", a.aux, d.save_aux, d.dtype, plan.y_shape(), "aux is given but descriptor.save_aux is false");
  c.disjoint();
  c.rule([&] { return gemm::check_offsets_view(plan.name(), d, a.offsets); });
  c.rule([&] { return gemm::read_offsets(plan.name(), d, a.offsets, offs); });
  if (plan.sku().backend == Backend::CpuReference)
    c.rule([&] { return gemm::offsets_disjoint(plan.name(), a.offsets, {{"y", a.y}, {"aux", a.aux}}); });
#ifdef BARACUDA_WITH_CUDA
  else
    c.rule([&] { return gemm::GroupedPlanAccess::forward_cuda(plan, Stream::cpu(), Workspace{}, a, *offs, true); });
#endif
  return c;
}
}  // namespace

#ifdef BARACUDA_WITH_CUDA
Status gemm::GroupedPlanAccess::forward_cuda(const GroupedLinearPlan& p, const Stream& stream, Workspace ws,
                                       const GroupedLinearArgs& a, const std::vector<int64_t>& offs, bool dry) {
  const GroupedLinearDescriptor& d = p.desc_;
  if (d.out_features == 0) return Status::ok();
  gemm::lt::Config cfg = gemm::config_of(p, p.tf32_, p.limit_, "x", "weight^T", "y");
  cfg.fuse = p.fuse_;
  for (int64_t e = 0; e < d.groups; ++e) {
    const int64_t r0 = offs[static_cast<size_t>(e)], M = offs[static_cast<size_t>(e) + 1] - r0;
    if (M == 0) continue;
    BARACUDA_RETURN_IF_ERROR(gemm::run_problem(gemm::forward_problem(d, a, e, r0, M), cfg, stream, ws.ptr, ws.bytes, dry));
  }
  return Status::ok();
}
#endif

Status GroupedLinearPlan::can_implement(const GroupedLinearArgs& args) const {
  std::vector<int64_t> offs;
  return check_grouped(*this, args, &offs).status();
}

Status GroupedLinearPlan::run(const Stream& stream, Workspace ws, const GroupedLinearArgs& args) const {
  std::vector<int64_t> offs;
  const auto check = check_grouped(*this, args, &offs);
  return baracuda::detail::run_plan(
      *this, stream, ws, check, [&] { return gemm::ref::run_grouped_linear(desc_, offs, args); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return gemm::GroupedPlanAccess::forward_cuda(*this, stream, ws, args, offs, false);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

Result<KernelSku> GroupedLinearPlan::sku_for(const Stream& stream, Workspace ws, const GroupedLinearArgs& args) const {
  std::vector<int64_t> offs;
  return baracuda::detail::sku_for_run(*this, stream, ws, check_grouped(*this, args, &offs));
}

// ---- GroupedLinearBackwardPlan ----------------------------------------------------------------
Dims GroupedLinearBackwardPlan::x_shape() const { return gemm::x_shape_of(desc_.forward); }
Dims GroupedLinearBackwardPlan::y_shape() const { return gemm::y_shape_of(desc_.forward); }
Dims GroupedLinearBackwardPlan::offsets_shape() const { return gemm::offsets_shape_of(desc_.forward); }
Dims GroupedLinearBackwardPlan::weight_shape() const { return gemm::weight_shape_of(desc_.forward); }
Dims GroupedLinearBackwardPlan::bias_shape() const { return gemm::bias_shape_of(desc_.forward); }

Result<GroupedLinearBackwardPlan> GroupedLinearBackwardPlan::select(const Stream& stream,
                                                                    const GroupedLinearBackwardDescriptor& desc,
                                                                    const PlanPreference& pref) {
  constexpr const char* name = gemm::kBwd;
  BARACUDA_RETURN_IF_ERROR(gemm::validate_grouped_backward(desc));
  BARACUDA_RETURN_IF_ERROR(gemm::check_backend_preference(name, stream, pref));
  const GroupedLinearDescriptor& f = desc.forward;
  GroupedLinearBackwardPlan plan;
  auto be = baracuda::detail::setup_plan(plan, name, gemm::kFamily, stream, pref, f.dtype,
                                         std::string("grouped_linear_backward.") + gemm_activation_name(f.activation),
                                         {false, true});
  if (!be) return be.status();
  plan.desc_ = desc;
  if (be->backend == Backend::CpuReference) return plan;
#ifdef BARACUDA_WITH_CUDA
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  sku.backend = Backend::CuBlasLt;
  const DType t = f.dtype;
  const int64_t T = f.capacity, N = f.out_features, K = f.in_features;
  const size_t es = dtype_size(t);
  const bool act = f.activation != GemmActivation::None;
  plan.tf32_ = pref.allow_reduced_precision && t == DType::F32;
  plan.limit_ = cublaslt::workspace_limit(be->arch);
  plan.g_bytes_ = act ? gemm::align_up(static_cast<size_t>(T * N) * es) : 0;
  plan.ones_bytes_ = desc.need_db ? gemm::align_up(static_cast<size_t>(T) * es) : 0;
  baracuda::detail::PlanAccess::set_workspace(plan, plan.g_bytes_ + plan.ones_bytes_ + plan.limit_);
  // Dense views at null data.
  const gemm::View2 g{nullptr, N, 1}, x{nullptr, K, 1}, w{nullptr, K, 1}, dx{nullptr, K, 1}, dw{nullptr, K, 1},
      db{nullptr, N, 1};
  std::string vdx, vdw, vdb;
  for (int64_t rows : gemm::warm_rows(f)) {
    gemm::lt::Config cfg = gemm::config_of(plan, plan.tf32_, plan.limit_, "a", "b", "out");
    if (desc.need_dx && K > 0) {
      auto v = gemm::warm_one(gemm::dx_problem(t, rows, N, K, g, w, dx), cfg);
      if (!v) return v.status();
      if (vdx.empty()) vdx = *v;
    }
    if (desc.need_dw && N > 0 && K > 0) {
      auto v = gemm::warm_one(gemm::dw_problem(t, rows, N, K, g, x, dw), cfg);
      if (!v) return v.status();
      if (vdw.empty()) vdw = *v;
    }
    if (desc.need_db && N > 0) {
      auto v = gemm::warm_one(gemm::db_problem(t, rows, N, nullptr, g, db), cfg);
      if (!v) return v.status();
      if (vdb.empty()) vdb = *v;
    }
  }
  std::string variant = act ? std::string(gemm_activation_name(f.activation)) + "-grad-pass+" : "";
  variant += f.shared_weight ? "shared" : "per-group";
  if (desc.need_dx) variant += " dx:" + (vdx.empty() ? std::string("none") : vdx);
  if (desc.need_dw) variant += " dw:" + (vdw.empty() ? std::string("none") : vdw);
  if (desc.need_db) variant += " db:ones." + (vdb.empty() ? std::string("none") : vdb);
  sku.variant = variant;
  return plan;
#else
  return baracuda::detail::no_cuda(name);
#endif
}

namespace {
baracuda::detail::ArgCheck check_grouped_backward(const GroupedLinearBackwardPlan& plan,
                                                  const GroupedLinearBackwardArgs& a, std::vector<int64_t>* offs) {
  const GroupedLinearBackwardDescriptor& d = plan.descriptor();
  const GroupedLinearDescriptor& f = d.forward;
  const bool act = f.activation != GemmActivation::None;
  baracuda::detail::ArgCheck c(plan);
  c.input("dy", a.dy, f.dtype, plan.y_shape())
      .optional_input("x", a.x, d.need_dw, f.dtype, plan.x_shape(), "x is missing (need_dw is set)",
                      "x is given but need_dw is false (only dw reads x)")
      .optional_input("weight", a.weight, d.need_dx, f.dtype, plan.weight_shape(), "weight is missing (need_dx is set)",
                      "weight is given but need_dx is false (only dx reads weight)")
      .optional_input("aux", a.aux, act, f.dtype, plan.y_shape(),
                      std::string("aux is missing (forward.activation is ") + gemm_activation_name(f.activation) +
                          ": pass the saved pre-activation, or y for relu)",
                      "aux is given but forward.activation is none")
      .optional_output("dx", a.dx, d.need_dx, f.dtype, plan.x_shape(), "dx is given but need_dx is false")
      .optional_output("dw", a.dw, d.need_dw, f.dtype, plan.weight_shape(), "dw is given but need_dw is false")
      .optional_output("db", a.db, d.need_db, f.dtype, plan.bias_shape(), "db is given but need_db is false");
  c.disjoint();
  c.rule([&] { return gemm::check_offsets_view(plan.name(), f, a.offsets); });
  c.rule([&] { return gemm::read_offsets(plan.name(), f, a.offsets, offs); });
  if (plan.sku().backend == Backend::CpuReference)
    c.rule([&] {
      return gemm::offsets_disjoint(plan.name(), a.offsets, {{"dx", a.dx}, {"dw", a.dw}, {"db", a.db}});
    });
#ifdef BARACUDA_WITH_CUDA
  else
    c.rule([&] { return gemm::GroupedPlanAccess::backward_cuda(plan, Stream::cpu(), Workspace{}, a, *offs, true); });
#endif
  return c;
}
}  // namespace

#ifdef BARACUDA_WITH_CUDA
// g (the activation's gradient into the workspace, or dy itself), the ones
// vector, then dx per group, dw and db per group (or once over every used row
// for a shared weight). `dry`: only the routes' layout rules.
Status gemm::GroupedPlanAccess::backward_cuda(const GroupedLinearBackwardPlan& p, const Stream& stream, Workspace ws,
                                        const GroupedLinearBackwardArgs& a, const std::vector<int64_t>& offs,
                                        bool dry) {
  const GroupedLinearBackwardDescriptor& d = p.desc_;
  const GroupedLinearDescriptor& f = d.forward;
  const DType t = f.dtype;
  const size_t es = dtype_size(t);
  const int64_t G = f.groups, N = f.out_features, K = f.in_features, R = offs.back();
  const bool act = f.activation != GemmActivation::None;
  const Device dev = stream.is_cpu() ? p.device() : stream.device();
  char* base = static_cast<char*>(ws.ptr);
  gemm::View2 g;
  if (act) {
    g = {base, N, 1};
    if (!dry && R * N > 0) {
      const Dims rows{R, N};
      const TensorRef dy(a.dy.data, t, dev, rows, a.dy.strides, a.dy.capacity);
      const TensorRef pre(a.aux.data, t, dev, rows, a.aux.strides, a.aux.capacity);
      BARACUDA_RETURN_IF_ERROR(gemm::cuda::activation_grad_pass(stream, f.activation, dy, pre,
                                                                TensorMut(base, t, dev, rows, Dims{N, 1}, R * N)));
    }
  } else {
    g = gemm::rows_of(a.dy, 0, es);
  }
  void* ones = base ? base + p.g_bytes_ : nullptr;
  if (d.need_db && !dry && R > 0)
    BARACUDA_RETURN_IF_ERROR(gemm::cuda::fill_pass(stream, 1.0, TensorMut(ones, t, dev, Dims{R}, Dims{1}, R)));
  const size_t head = p.g_bytes_ + p.ones_bytes_;
  void* lt_ws = base ? base + head : nullptr;
  const size_t lt_bytes = ws.bytes > head ? ws.bytes - head : 0;
  auto go = [&](const gemm::Problem& q, const char* an, const char* bn, const char* on) {
    return gemm::run_problem(q, gemm::config_of(p, p.tf32_, p.limit_, an, bn, on), stream, lt_ws, lt_bytes, dry);
  };
  auto g_rows = [&](int64_t r0) { return gemm::View2{gemm::at(g.data, r0 * g.rs, es), g.rs, g.cs}; };
  const char* gname = act ? "g" : "dy";
  if (d.need_dx && K > 0)
    for (int64_t e = 0; e < G; ++e) {
      const int64_t r0 = offs[static_cast<size_t>(e)], M = offs[static_cast<size_t>(e) + 1] - r0;
      if (M == 0) continue;
      BARACUDA_RETURN_IF_ERROR(go(gemm::dx_problem(t, M, N, K, g_rows(r0), gemm::slice_of(a.weight, f.shared_weight, e, es),
                                                   gemm::rows_of(a.dx, r0, es)),
                                  gname, "weight", "dx"));
    }
  // dw / db: group e's rows (every group, an empty one gives zeros), or all rows once.
  const int64_t slices = f.shared_weight ? 1 : G;
  for (int64_t e = 0; e < slices; ++e) {
    const int64_t r0 = f.shared_weight ? 0 : offs[static_cast<size_t>(e)];
    const int64_t M = (f.shared_weight ? R : offs[static_cast<size_t>(e) + 1]) - r0;
    if (d.need_dw && N > 0 && K > 0)
      BARACUDA_RETURN_IF_ERROR(go(gemm::dw_problem(t, M, N, K, g_rows(r0), gemm::rows_of(a.x, r0, es),
                                                   gemm::slice_of(a.dw, f.shared_weight, e, es)),
                                  gname, "x", "dw"));
    if (d.need_db && N > 0) {
      const int r = f.shared_weight ? 0 : 1;
      const gemm::View2 db{gemm::at(a.db.data, f.shared_weight ? 0 : e * a.db.strides[0], es), N * a.db.strides[r],
                           a.db.strides[r]};
      BARACUDA_RETURN_IF_ERROR(go(gemm::db_problem(t, M, N, ones, g_rows(r0), db), "ones", gname, "db"));
    }
  }
  return Status::ok();
}
#endif

Status GroupedLinearBackwardPlan::can_implement(const GroupedLinearBackwardArgs& args) const {
  std::vector<int64_t> offs;
  return check_grouped_backward(*this, args, &offs).status();
}

Status GroupedLinearBackwardPlan::run(const Stream& stream, Workspace ws, const GroupedLinearBackwardArgs& args) const {
  std::vector<int64_t> offs;
  const auto check = check_grouped_backward(*this, args, &offs);
  return baracuda::detail::run_plan(
      *this, stream, ws, check, [&] { return gemm::ref::run_grouped_linear_backward(desc_, offs, args); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return gemm::GroupedPlanAccess::backward_cuda(*this, stream, ws, args, offs, false);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

Result<KernelSku> GroupedLinearBackwardPlan::sku_for(const Stream& stream, Workspace ws,
                                                     const GroupedLinearBackwardArgs& args) const {
  std::vector<int64_t> offs;
  return baracuda::detail::sku_for_run(*this, stream, ws, check_grouped_backward(*this, args, &offs));
}

}  // namespace baracuda

// PagedAttentionPlan / PagedKvAppendPlan: descriptor validation, backend
// choice, argument checks and dispatch to the CPU reference or the CUDA
// kernels (launch.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/align.hpp"
#include "core/checked_math.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/attention_paged/launch.hpp"
#include "ops/attention_paged/reference.hpp"

namespace baracuda {
namespace attention_paged::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"paged attention", "attention_paged", BARACUDA_KERNELS_ATTENTION_PAGED};
using baracuda::detail::invalid;

constexpr int apc_max_splits() { return attention_paged::cuda::kMaxSplits; }

bool fp_ok(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }

Status check_extents(const char* plan, std::initializer_list<std::pair<const char*, int64_t>> ext) {
  for (const auto& [name, v] : ext)
    if (v < 0) return invalid(plan, name, " ", v, " must be >= 0");
  return Status::ok();
}

Status check_pool(const char* plan, DType dtype, int64_t kv_heads, int64_t head_dim, int64_t num_pages, int64_t page_size,
                  int64_t max_pages, int64_t batch) {
  if (!fp_ok(dtype)) return baracuda::detail::unsupported(plan, "dtype ", dtype, " is not supported (f16, bf16, f32)");
  if (page_size < 1) return invalid(plan, "page_size ", page_size, " must be >= 1");
  BARACUDA_RETURN_IF_ERROR(check_extents(plan, {{"batch", batch}, {"kv_heads", kv_heads}, {"head_dim", head_dim},
                                                {"num_pages", num_pages}, {"max_pages", max_pages}}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "k_pages size", {num_pages, page_size, kv_heads, head_dim}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "block_table size", {batch, max_pages}));
  int64_t cap = 0;
  if (!baracuda::detail::checked_product({max_pages, page_size}, &cap) || cap > INT32_MAX)
    return invalid(plan, "max_pages * page_size must fit int32 (seq_lens are int32)");
  return Status::ok();
}

Status validate(const char* plan, const PagedAttentionDescriptor& in, PagedAttentionDescriptor* out) {
  BARACUDA_RETURN_IF_ERROR(
      check_pool(plan, in.dtype, in.kv_heads, in.head_dim, in.num_pages, in.page_size, in.max_pages, in.batch));
  BARACUDA_RETURN_IF_ERROR(check_extents(plan, {{"heads", in.heads}, {"q_len", in.q_len}}));
  if (in.kv_heads == 0 ? in.heads != 0 : in.heads % in.kv_heads != 0)
    return invalid(plan, "heads ", in.heads, " must be a multiple of kv_heads ", in.kv_heads);
  if (in.scale && !std::isfinite(*in.scale)) return invalid(plan, "scale ", *in.scale, " must be finite");
  if (!std::isfinite(in.softcap) || in.softcap < 0) return invalid(plan, "softcap ", in.softcap, " must be finite and >= 0");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "q size", {in.batch, in.heads, in.q_len, in.head_dim}));
  *out = in;
  if (!out->scale) out->scale = in.head_dim > 0 ? 1.0 / std::sqrt(static_cast<double>(in.head_dim)) : 1.0;
  return Status::ok();
}

Status validate(const char* plan, const PagedKvAppendDescriptor& in) {
  BARACUDA_RETURN_IF_ERROR(
      check_pool(plan, in.dtype, in.kv_heads, in.head_dim, in.num_pages, in.page_size, in.max_pages, in.batch));
  BARACUDA_RETURN_IF_ERROR(check_extents(plan, {{"new_len", in.new_len}}));
  return baracuda::detail::check_size(plan, "k_new size", {in.batch, in.kv_heads, in.new_len, in.head_dim});
}

Dims pages_of(int64_t np, int64_t ps, int64_t hk, int64_t d) { return {np, ps, hk, d}; }

// The CUDA kernels' view rule for the page pool: unit stride over D, 16-byte
// rows (strides multiples of 16 bytes), 16-byte aligned base.
Status pool_vec_ok(const char* plan, const char* name, const TensorRef& t, int64_t head_dim) {
  const int64_t vec = static_cast<int64_t>(16 / dtype_size(t.dtype));
  if (head_dim == 0 || shape_numel(t.shape) == 0) return Status::ok();
  bool ok = t.strides[3] == 1 && baracuda::detail::is_aligned16(t.data);
  for (int i = 0; i < 3; ++i) ok = ok && (t.shape[i] <= 1 || t.strides[i] % vec == 0);
  if (!ok)
    return baracuda::detail::unsupported(plan, "the CUDA kernels need ", name,
                                         " with a contiguous head dim, strides multiples of 16 bytes and a 16-byte aligned base");
  return Status::ok();
}

baracuda::detail::ArgCheck check_attn(const PlanBase& plan, const PagedAttentionDescriptor& d, const PagedAttentionArgs& a) {
  baracuda::detail::ArgCheck c(plan);
  const Dims qs{d.batch, d.heads, d.q_len, d.head_dim};
  const Dims ps = pages_of(d.num_pages, d.page_size, d.kv_heads, d.head_dim);
  c.input("q", a.q, d.dtype, qs)
      .input("k_pages", a.k_pages, d.dtype, ps)
      .input("v_pages", a.v_pages, d.dtype, ps)
      .input("block_table", a.block_table, DType::I32, Dims{d.batch, d.max_pages})
      .input("seq_lens", a.seq_lens, DType::I32, Dims{d.batch})
      .output("out", a.out, d.dtype, qs)
      .optional_output("lse", a.lse, d.save_lse, DType::F32, Dims{d.batch, d.heads, d.q_len},
                       "lse is given but descriptor.save_lse is false");
  if (plan.sku().backend != Backend::CpuReference) {
    c.rule([&] {
      const int64_t vec = static_cast<int64_t>(16 / dtype_size(d.dtype));
      if (d.head_dim % vec != 0 || d.head_dim > 256)
        return baracuda::detail::unsupported(plan.name(), "the CUDA kernels need head_dim a multiple of ", vec,
                                             " and <= 256, got ", d.head_dim);
      return Status::ok();
    });
    c.rule([&] { return pool_vec_ok(plan.name(), "k_pages", a.k_pages, d.head_dim); });
    c.rule([&] { return pool_vec_ok(plan.name(), "v_pages", a.v_pages, d.head_dim); });
  }
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck check_append(const PlanBase& plan, const PagedKvAppendDescriptor& d, const PagedKvAppendArgs& a) {
  baracuda::detail::ArgCheck c(plan);
  const Dims ns{d.batch, d.kv_heads, d.new_len, d.head_dim};
  const Dims ps = pages_of(d.num_pages, d.page_size, d.kv_heads, d.head_dim);
  c.input("k_new", a.k_new, d.dtype, ns)
      .input("v_new", a.v_new, d.dtype, ns)
      .input("block_table", a.block_table, DType::I32, Dims{d.batch, d.max_pages})
      .input("seq_lens", a.seq_lens, DType::I32, Dims{d.batch})
      .output("k_pages", a.k_pages, d.dtype, ps)
      .output("v_pages", a.v_pages, d.dtype, ps);
  return std::move(c.disjoint());
}

// PlanPreference::variant: "splits=<1..64>", "fewrows=0|1", comma-separated.
struct Hint {
  int splits = 0;  // 0: automatic
  bool few_rows = true;
};
Status parse_hint(const char* plan, const std::string& v, Hint* h) {
  size_t pos = 0;
  while (pos < v.size()) {
    const size_t end = std::min(v.find(',', pos), v.size());
    const std::string kv = v.substr(pos, end - pos);
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq), val = eq == std::string::npos ? "" : kv.substr(eq + 1);
    char* stop = nullptr;
    const long n = val.empty() ? -1 : std::strtol(val.c_str(), &stop, 10);
    const bool num = !val.empty() && stop && *stop == '\0';
    if (key == "splits" && num && n >= 1 && n <= apc_max_splits()) h->splits = static_cast<int>(n);
    else if (key == "fewrows" && num && (n == 0 || n == 1)) h->few_rows = n == 1;
    else return invalid(plan, "unknown or malformed variant key '", kv, "' (splits=1..64, fewrows=0|1)");
    pos = end + 1;
  }
  return Status::ok();
}

template <int N>
baracuda::detail::StridedView<N> ro(const TensorRef& t) {
  baracuda::detail::StridedView<N> v;
  v.data = t.data;
  for (int i = 0; i < N && i < t.shape.rank; ++i) v.stride[i] = t.strides[i];
  return v;
}
template <int N>
baracuda::detail::StridedView<N, void*> rw(const TensorMut& t) {
  baracuda::detail::StridedView<N, void*> v;
  v.data = t.data;
  for (int i = 0; i < N && i < t.shape.rank; ++i) v.stride[i] = t.strides[i];
  return v;
}

}  // namespace
}  // namespace attention_paged::detail

using namespace attention_paged::detail;
namespace apc = attention_paged::cuda;

// ---- PagedAttentionPlan --------------------------------------------------------
Result<PagedAttentionPlan> PagedAttentionPlan::select(const Stream& stream, const PagedAttentionDescriptor& desc,
                                                      const PlanPreference& pref) {
  PagedAttentionPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("PagedAttentionPlan", desc, &plan.desc_));
  Hint hint;
  BARACUDA_RETURN_IF_ERROR(parse_hint("PagedAttentionPlan", pref.variant, &hint));
  auto be = baracuda::detail::setup_plan(plan, "PagedAttentionPlan", kFamily, stream, pref, plan.desc_.dtype,
                                         "attention_paged.decode");
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference) {
    plan.splits_ = hint.splits > 0 ? hint.splits : apc::splits_for(plan.desc_, be->sm_count);
    plan.row_block_ = apc::row_block_for(plan.desc_);
    plan.few_rows_ = hint.few_rows;
    baracuda::detail::PlanAccess::sku(plan).variant = apc::variant_for(plan.desc_, plan.splits_, plan.few_rows_);
    baracuda::detail::PlanAccess::set_workspace(plan, apc::workspace_bytes(plan.desc_, plan.splits_));
  }
  return plan;
}

Dims PagedAttentionPlan::q_shape() const { return {desc_.batch, desc_.heads, desc_.q_len, desc_.head_dim}; }
Dims PagedAttentionPlan::pages_shape() const {
  return pages_of(desc_.num_pages, desc_.page_size, desc_.kv_heads, desc_.head_dim);
}
Dims PagedAttentionPlan::block_table_shape() const { return {desc_.batch, desc_.max_pages}; }
Dims PagedAttentionPlan::seq_lens_shape() const { return {desc_.batch}; }
Dims PagedAttentionPlan::lse_shape() const { return {desc_.batch, desc_.heads, desc_.q_len}; }

Status PagedAttentionPlan::can_implement(const PagedAttentionArgs& a) const { return check_attn(*this, desc_, a).status(); }

Result<KernelSku> PagedAttentionPlan::sku_for(const Stream& stream, Workspace ws, const PagedAttentionArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_attn(*this, desc_, a));
}

Status PagedAttentionPlan::run(const Stream& stream, Workspace ws, const PagedAttentionArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_attn(*this, desc_, a),
      [&] { return attention_paged::ref::attention(name(), desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        apc::AttnLaunch l;
        l.desc = desc_;
        l.q = ro<4>(a.q);
        l.k = ro<4>(a.k_pages);
        l.v = ro<4>(a.v_pages);
        l.table = ro<2>(a.block_table);
        l.lens = ro<1>(a.seq_lens);
        l.out = rw<4>(a.out);
        if (desc_.save_lse) l.lse = rw<3>(a.lse);
        l.splits = splits_;
        l.row_block = row_block_;
        l.few_rows = few_rows_;
        l.workspace = ws.ptr;
        l.stream = stream.native_handle();
        return apc::launch_attention(l);
#else
        (void)ws;
        return baracuda::detail::no_cuda(name());
#endif
      });
}

// ---- PagedKvAppendPlan ---------------------------------------------------------------
Result<PagedKvAppendPlan> PagedKvAppendPlan::select(const Stream& stream, const PagedKvAppendDescriptor& desc,
                                                    const PlanPreference& pref) {
  PagedKvAppendPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("PagedKvAppendPlan", desc));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, "PagedKvAppendPlan", kFamily, stream, pref, desc.dtype,
                                         "attention_paged.append");
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference) baracuda::detail::PlanAccess::sku(plan).variant = "scatter";
  return plan;
}

Dims PagedKvAppendPlan::new_shape() const { return {desc_.batch, desc_.kv_heads, desc_.new_len, desc_.head_dim}; }
Dims PagedKvAppendPlan::pages_shape() const {
  return pages_of(desc_.num_pages, desc_.page_size, desc_.kv_heads, desc_.head_dim);
}
Dims PagedKvAppendPlan::block_table_shape() const { return {desc_.batch, desc_.max_pages}; }
Dims PagedKvAppendPlan::seq_lens_shape() const { return {desc_.batch}; }

Status PagedKvAppendPlan::can_implement(const PagedKvAppendArgs& a) const { return check_append(*this, desc_, a).status(); }

Result<KernelSku> PagedKvAppendPlan::sku_for(const Stream& stream, Workspace ws, const PagedKvAppendArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_append(*this, desc_, a));
}

Status PagedKvAppendPlan::run(const Stream& stream, Workspace ws, const PagedKvAppendArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_append(*this, desc_, a),
      [&] { return attention_paged::ref::append(name(), desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        apc::AppendLaunch l;
        l.desc = desc_;
        l.k_new = ro<4>(a.k_new);
        l.v_new = ro<4>(a.v_new);
        l.table = ro<2>(a.block_table);
        l.lens = ro<1>(a.seq_lens);
        l.k = rw<4>(a.k_pages);
        l.v = rw<4>(a.v_pages);
        l.stream = stream.native_handle();
        l.sm_count = baracuda::detail::PlanAccess::sm_count(*this);
        return apc::launch_append(l);
#else
        return baracuda::detail::no_cuda(name());
#endif
      });
}

}  // namespace baracuda

// RandpermPlan / MultinomialPlan: descriptor rules, argument lists, the device
// offset, dispatch to the CPU reference or the CUDA kernels; check_probs reads
// the kernels' error word.
#include <cstdint>
#include <cstring>
#include <string>

#include "baracuda/ops/random_sampling.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/random/sampling_launch.hpp"
#include "ops/random/sampling_reference.hpp"

namespace baracuda {
namespace random::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"random sampling", "random", BARACUDA_KERNELS_RANDOM};
constexpr const char* kRandperm = "RandpermPlan";
constexpr const char* kMultinomial = "MultinomialPlan";
constexpr int64_t kCudaLimit = (int64_t{1} << 31) - 1;
constexpr const char* kOffsetUnused =
    "offset is given but descriptor.device_offset is false (seed.offset is the offset; set device_offset to read it "
    "from the tensor)";

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

[[maybe_unused]] void* aligned(void* p) {
  return p ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + cuda::kSamplingAlign - 1) /
                                     cuda::kSamplingAlign * cuda::kSamplingAlign)
           : nullptr;
}

// The largest n whose values 0 .. n-1 (and n itself, torch's bound) the dtype holds exactly; 0: not supported.
int64_t randperm_limit(DType t) {
  switch (t) {
    case DType::I64: return INT64_MAX;
    case DType::I32: return int64_t{1} << 31;
    case DType::F64: return int64_t{1} << 53;
    case DType::F32: return int64_t{1} << 24;
    case DType::F16: return int64_t{1} << 11;
    case DType::BF16: return int64_t{1} << 8;
    default: return 0;
  }
}

bool is_prob_dtype(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

// The offset of this draw (CPU plans: the host tensor's value) and, with
// device_offset, its increment.
uint64_t host_offset(bool device_offset, const RandomSeed& seed, const TensorMut& offset) {
  if (!device_offset) return seed.offset;
  int64_t v = 0;
  std::memcpy(&v, offset.data, sizeof(v));
  return static_cast<uint64_t>(v);
}
void bump_host_offset(const TensorMut& offset) {
  uint64_t v = 0;
  std::memcpy(&v, offset.data, sizeof(v));
  v += 1;
  std::memcpy(offset.data, &v, sizeof(v));
}

baracuda::detail::ArgCheck randperm_args(const RandpermPlan& p, const RandpermArgs& a) {
  const RandpermDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.output("out", a.out, d.dtype, p.out_shape())
      .optional_output("offset", a.offset, d.device_offset, DType::I64, Dims{1}, kOffsetUnused);
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck multinomial_args(const MultinomialPlan& p, const MultinomialArgs& a) {
  const MultinomialDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("probs", a.probs, d.dtype, d.probs_shape)
      .output("out", a.out, d.out_dtype, p.out_shape())
      .optional_output("offset", a.offset, d.device_offset, DType::I64, Dims{1}, kOffsetUnused);
  return std::move(c.disjoint());
}

}  // namespace
}  // namespace random::detail

using namespace random::detail;

// ---- RandpermPlan ----------------------------------------------------------------------
Result<RandpermPlan> RandpermPlan::select(const Stream& stream, const RandpermDescriptor& desc,
                                          const PlanPreference& pref) {
  RandpermPlan plan;
  const int64_t limit = randperm_limit(desc.dtype);
  if (limit == 0)
    return unsupported(kRandperm, "dtype ", static_cast<int>(desc.dtype), " (", dtype_is_valid(desc.dtype) ? dtype_name(desc.dtype) : "not a dtype",
                       ") is not supported (i64, i32, f64, f32, f16, bf16)");
  if (desc.n < 0) return invalid(kRandperm, "n ", desc.n, " must be non-negative");
  if (desc.n > limit)
    return invalid(kRandperm, "n ", desc.n, " is too large for dtype ", desc.dtype, " (at most ", limit,
                   ": the values must be exact)");
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kRandperm, kFamily, stream, pref, desc.dtype, "random.randperm");
  if (!be) return be.status();
  if (desc.n == 0 && !desc.device_offset) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (desc.n > kCudaLimit) return unsupported(kRandperm, "the CUDA randperm needs n below 2^31 (got ", desc.n, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = desc.n == 0 ? "offset_only" : "radix_sort";
#ifdef BARACUDA_WITH_CUDA
  if (desc.n > 0) {
    baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
    BARACUDA_RETURN_IF_ERROR(guard.status());
    baracuda::detail::PlanAccess::set_workspace(plan, random::cuda::kSamplingAlign + random::cuda::randperm_workspace(desc.n).total);
  }
#endif
  return plan;
}

Status RandpermPlan::can_implement(const RandpermArgs& a) const { return randperm_args(*this, a).status(); }

Result<KernelSku> RandpermPlan::sku_for(const Stream& stream, Workspace ws, const RandpermArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, randperm_args(*this, a));
}

Status RandpermPlan::run(const Stream& stream, Workspace ws, const RandpermArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, randperm_args(*this, a),
      [&] {
        const uint64_t offset = host_offset(desc_.device_offset, a.seed, a.offset);
        random::ref::randperm(desc_, a.seed.seed, offset, a.out);
        if (desc_.device_offset) bump_host_offset(a.offset);
        return Status::ok();
      },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        random::cuda::RandpermLaunch l;
        l.n = desc_.n;
        l.dtype = desc_.dtype;
        l.out = a.out.data;
        l.out_stride = desc_.n > 0 ? a.out.strides[0] : 1;
        l.seed = a.seed.seed;
        l.offset = a.seed.offset;
        l.offset_ptr = desc_.device_offset ? static_cast<int64_t*>(a.offset.data) : nullptr;
        l.workspace = aligned(ws.ptr);
        if (desc_.n > 0) l.ws = random::cuda::randperm_workspace(desc_.n);
        l.stream = stream.native_handle();
        return random::cuda::launch_randperm(l);
#else
        return baracuda::detail::no_cuda(kRandperm);
#endif
      });
}

// ---- MultinomialPlan -------------------------------------------------------------------
int64_t MultinomialPlan::rows() const { return desc_.probs_shape.rank == 2 ? desc_.probs_shape[0] : 1; }
int64_t MultinomialPlan::categories() const {
  return desc_.probs_shape.rank >= 1 ? desc_.probs_shape[desc_.probs_shape.rank - 1] : 0;
}
Dims MultinomialPlan::out_shape() const {
  return desc_.probs_shape.rank == 2 ? Dims{desc_.probs_shape[0], desc_.num_samples} : Dims{desc_.num_samples};
}

Result<MultinomialPlan> MultinomialPlan::select(const Stream& stream, const MultinomialDescriptor& desc,
                                                const PlanPreference& pref) {
  MultinomialPlan plan;
  if (!is_prob_dtype(desc.dtype))
    return unsupported(kMultinomial, "dtype ", static_cast<int>(desc.dtype), " (",
                       dtype_is_valid(desc.dtype) ? dtype_name(desc.dtype) : "not a dtype",
                       ") is not supported for probs (f32, f64, f16, bf16)");
  if (desc.out_dtype != DType::I64 && desc.out_dtype != DType::I32)
    return unsupported(kMultinomial, "out_dtype ", static_cast<int>(desc.out_dtype), " (",
                       dtype_is_valid(desc.out_dtype) ? dtype_name(desc.out_dtype) : "not a dtype",
                       ") is not supported (i64, i32)");
  if (desc.probs_shape.rank != 1 && desc.probs_shape.rank != 2)
    return invalid(kMultinomial, "probs_shape ", desc.probs_shape, " has rank ", desc.probs_shape.rank,
                   " (probs must be [C] or [R, C])");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kMultinomial, "probs_shape", desc.probs_shape));
  plan.desc_ = desc;
  const int64_t R = plan.rows(), C = plan.categories(), S = desc.num_samples;
  if (S < 0) return invalid(kMultinomial, "num_samples ", S, " must be non-negative");
  if (!desc.replacement && S > C)
    return invalid(kMultinomial, "num_samples ", S, " exceeds the ", C,
                   " categories (sampling without replacement draws each category at most once)");
  if (C == 0 && S > 0) return invalid(kMultinomial, "probs_shape ", desc.probs_shape, " has no category to sample");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kMultinomial, "out shape", plan.out_shape()));
  auto be = baracuda::detail::setup_plan(plan, kMultinomial, kFamily, stream, pref, desc.dtype,
                                         desc.replacement ? "random.multinomial_replacement" : "random.multinomial");
  if (!be) return be.status();
  const bool empty = R * S == 0;
  if (empty && !desc.device_offset) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (empty) {
    baracuda::detail::PlanAccess::sku(plan).variant = "offset_only";
    return plan;
  }
  if (C > kCudaLimit || R > kCudaLimit || (!desc.replacement && R * C > kCudaLimit))
    return unsupported(kMultinomial, "the CUDA multinomial needs C and R below 2^31 (and R * C below 2^31 without "
                       "replacement); got R = ", R, ", C = ", C);
  baracuda::detail::PlanAccess::sku(plan).variant =
      random::cuda::multinomial_variant(R, C, S, desc.replacement);
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(
      plan, random::cuda::kSamplingAlign + random::cuda::multinomial_workspace(R, C, S, desc.replacement).total);
#endif
  return plan;
}

Status MultinomialPlan::can_implement(const MultinomialArgs& a) const { return multinomial_args(*this, a).status(); }

Result<KernelSku> MultinomialPlan::sku_for(const Stream& stream, Workspace ws, const MultinomialArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, multinomial_args(*this, a));
}

Status MultinomialPlan::run(const Stream& stream, Workspace ws, const MultinomialArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, multinomial_args(*this, a),
      [&]() -> Status {
        const uint64_t offset = host_offset(desc_.device_offset, a.seed, a.offset);
        if (rows() * desc_.num_samples > 0)
          BARACUDA_RETURN_IF_ERROR(random::ref::multinomial(kMultinomial, desc_, a.seed.seed, offset, a));
        if (desc_.device_offset) bump_host_offset(a.offset);
        return Status::ok();
      },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const bool two_d = desc_.probs_shape.rank == 2;
        random::cuda::MultinomialLaunch l;
        l.dtype = desc_.dtype;
        l.out_dtype = desc_.out_dtype;
        l.R = rows(), l.C = categories(), l.S = desc_.num_samples;
        l.replacement = desc_.replacement;
        l.probs = a.probs.data;
        l.p_row_stride = two_d ? a.probs.strides[0] : 0;
        l.p_col_stride = a.probs.strides[two_d ? 1 : 0];
        l.out = a.out.data;
        l.o_row_stride = two_d ? a.out.strides[0] : 0;
        l.o_col_stride = a.out.strides[two_d ? 1 : 0];
        l.seed = a.seed.seed;
        l.offset = a.seed.offset;
        l.offset_ptr = desc_.device_offset ? static_cast<int64_t*>(a.offset.data) : nullptr;
        l.workspace = aligned(ws.ptr);
        if (l.R * l.S > 0) l.ws = random::cuda::multinomial_workspace(l.R, l.C, l.S, l.replacement);
        l.stream = stream.native_handle();
        return random::cuda::launch_multinomial(l);
#else
        return baracuda::detail::no_cuda(kMultinomial);
#endif
      });
}

Status MultinomialPlan::check_probs(const Stream& stream, Workspace ws) const {
  if (empty()) return baracuda::detail::empty_plan(name());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(name(), stream, device()));
  if (sku().backend == Backend::CpuReference || sku().variant == "empty" || sku().variant == "offset_only")
    return Status::ok();
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_workspace(name(), workspace_size(), ws.bytes, ws.ptr));
  if (baracuda::detail::stream_is_capturing(stream))
    return unsupported(name(), "check_probs synchronizes the stream, which is capturing a CUDA graph (call it after "
                               "the graph's launch)");
  baracuda::detail::DeviceGuard guard(device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
#ifdef BARACUDA_WITH_CUDA
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(random::cuda::read_sampling_error_word(name(), stream.native_handle(), aligned(ws.ptr), &bad));
  if (bad < 0) return Status::ok();
  return invalid(name(), "probs row ", bad,
                 " is invalid (a negative, infinite or NaN weight, ",
                 desc_.replacement ? "or a zero or overflowing sum" : "or fewer positive weights than num_samples",
                 "; the first bad row, found on the GPU: its samples were written as -1)");
#else
  return baracuda::detail::no_cuda(name());
#endif
}

}  // namespace baracuda

// RandomPlan / DropoutPlan / DropoutBackwardPlan: descriptor rules, argument
// lists, the launch description of the actual views (launch.hpp), executed by
// the CPU reference or the CUDA kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "baracuda/ops/random.hpp"
#include "core/align.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/random/launch.hpp"
#include "ops/random/reference.hpp"

namespace baracuda {

const char* random_distribution_name(RandomDistribution d) {
  switch (d) {
    case RandomDistribution::Uniform: return "uniform";
    case RandomDistribution::Normal: return "normal";
    case RandomDistribution::TruncatedNormal: return "truncated_normal";
    case RandomDistribution::Bernoulli: return "bernoulli";
    case RandomDistribution::RandInt: return "randint";
  }
  return "unknown";
}

namespace random::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Random", "random", BARACUDA_KERNELS_RANDOM};
constexpr const char* kRandom = "RandomPlan";
constexpr const char* kDropout = "DropoutPlan";
constexpr const char* kDropoutBw = "DropoutBackwardPlan";

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

bool is_float(DType t) { return dtype_in(t, {DType::F32, DType::F64, DType::F16, DType::BF16}); }

Status check_float_dtype(const char* plan, const char* what, DType t) {
  if (is_float(t)) return Status::ok();
  if (!dtype_is_valid(t)) return unsupported(plan, what, " ", static_cast<int>(t), " is not a dtype");
  return unsupported(plan, what, " ", t, " is not supported (f32, f64, f16, bf16)");
}

Status check_p(const char* plan, double p) {
  if (p >= 0.0 && p <= 1.0) return Status::ok();
  return invalid(plan, "p ", p, " must be in [0, 1]");
}

// ceil(p 2^24): u >= p <=> (w >> 8) >= thr.
uint32_t threshold(double p) { return static_cast<uint32_t>(std::ceil(p * 16777216.0)); }

Dims mask_dims(const Dims& shape) { return Dims{(shape_numel(shape) + 7) / 8}; }

const Dims kOffsetShape{1};

// The largest integer magnitude every value up to which the dtype holds exactly.
double exact_int_limit(DType t) {
  switch (t) {
    case DType::F16: return 2048.0;
    case DType::BF16: return 256.0;
    case DType::F32: return 16777216.0;
    case DType::F64: return 9007199254740992.0;
    default: return 0;
  }
}

// The largest finite value of a float dtype (f64: DBL_MAX).
double finite_limit(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}

// Parameters computed in f32 for f32 / f16 / bf16 outputs must be finite there.
Status check_in_range(const RandomDescriptor& d, std::initializer_list<std::pair<const char*, double>> values) {
  const double lim = finite_limit(d.dtype);
  for (const auto& [name, v] : values)
    if (!(std::fabs(v) <= lim))
      return invalid(kRandom, random_distribution_name(d.distribution), "'s ", name, " ", v, " is outside ", d.dtype,
                     "'s finite range (|value| <= ", lim, ")");
  return Status::ok();
}

Status check_random(const RandomDescriptor& d, FillParams* q, Gen* gen) {
  using RD = RandomDistribution;
  if (!dtype_is_valid(d.dtype)) return unsupported(kRandom, "dtype ", static_cast<int>(d.dtype), " is not a dtype");
  const bool randint = d.distribution == RD::RandInt;
  if (randint ? !(is_float(d.dtype) || d.dtype == DType::I32 || d.dtype == DType::I64) : !is_float(d.dtype))
    return unsupported(kRandom, "dtype ", d.dtype, " is not supported for ", random_distribution_name(d.distribution),
                       randint ? " (f32, f64, f16, bf16, i32, i64)" : " (f32, f64, f16, bf16)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kRandom, "shape", d.shape));
  if (d.p_tensor && d.distribution != RD::Bernoulli)
    return invalid(kRandom, "p_tensor is set for distribution ", random_distribution_name(d.distribution),
                   " (bernoulli only)");
  switch (d.distribution) {
    case RD::Uniform:
      if (!std::isfinite(d.low) || !std::isfinite(d.high) || !(d.low <= d.high))
        return invalid(kRandom, "uniform needs finite low <= high (got low ", d.low, ", high ", d.high, ")");
      BARACUDA_RETURN_IF_ERROR(check_in_range(d, {{"low", d.low}, {"high", d.high}, {"width high - low", d.high - d.low}}));
      *gen = Gen::Uniform;
      q->low = d.low, q->high = d.high, q->width = d.high - d.low;
      q->low_f = static_cast<float>(d.low), q->high_f = static_cast<float>(d.high);
      q->width_f = static_cast<float>(d.high - d.low);
      return Status::ok();
    case RD::Normal:
      if (!std::isfinite(d.mean) || !std::isfinite(d.std) || !(d.std >= 0))
        return invalid(kRandom, "normal needs a finite mean and a finite std >= 0 (got mean ", d.mean, ", std ", d.std,
                       ")");
      BARACUDA_RETURN_IF_ERROR(check_in_range(d, {{"mean", d.mean}, {"std", d.std}}));
      *gen = Gen::Normal;
      q->mean = d.mean, q->std = d.std, q->mean_f = static_cast<float>(d.mean), q->std_f = static_cast<float>(d.std);
      return Status::ok();
    case RD::TruncatedNormal: {
      if (!std::isfinite(d.mean) || !std::isfinite(d.std) || !(d.std > 0) || !std::isfinite(d.a) ||
          !std::isfinite(d.b) || !(d.a < d.b))
        return invalid(kRandom, "truncated_normal needs finite mean, std > 0 and a < b (got mean ", d.mean, ", std ",
                       d.std, ", a ", d.a, ", b ", d.b, ")");
      BARACUDA_RETURN_IF_ERROR(
          check_in_range(d, {{"mean", d.mean}, {"std * sqrt(2)", d.std * std::sqrt(2.0)}, {"a", d.a}, {"b", d.b}}));
      auto cdf = [](double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); };
      const double l = cdf((d.a - d.mean) / d.std), h = cdf((d.b - d.mean) / d.std);
      *gen = Gen::TruncNormal;
      q->tlo = 2 * l - 1, q->twidth = 2 * h - 2 * l;
      q->tlo_f = static_cast<float>(q->tlo), q->twidth_f = static_cast<float>(q->twidth);
      q->mean = d.mean, q->mean_f = static_cast<float>(d.mean);
      q->tscale = d.std * std::sqrt(2.0), q->tscale_f = static_cast<float>(q->tscale);
      q->a = d.a, q->b = d.b, q->a_f = static_cast<float>(d.a), q->b_f = static_cast<float>(d.b);
      return Status::ok();
    }
    case RD::Bernoulli:
      if (d.p_tensor) {
        BARACUDA_RETURN_IF_ERROR(check_float_dtype(kRandom, "p_dtype", d.p_dtype));
        *gen = Gen::BernoulliTensor;
        return Status::ok();
      }
      BARACUDA_RETURN_IF_ERROR(check_p(kRandom, d.p));
      *gen = Gen::Bernoulli;
      q->p_thr = threshold(d.p);
      return Status::ok();
    case RD::RandInt: {
      if (!(d.int_low < d.int_high))
        return invalid(kRandom, "randint needs int_low < int_high (got ", d.int_low, ", ", d.int_high, ")");
      if (d.dtype == DType::I32 && (d.int_low < INT32_MIN || d.int_high - 1 > INT32_MAX))
        return invalid(kRandom, "randint's range [", d.int_low, ", ", d.int_high, ") does not fit i32");
      if (is_float(d.dtype)) {
        const double lim = exact_int_limit(d.dtype);
        if (std::fabs(static_cast<double>(d.int_low)) > lim || std::fabs(static_cast<double>(d.int_high)) > lim)
          return invalid(kRandom, "randint's bounds ", d.int_low, ", ", d.int_high, " exceed ", d.dtype,
                         "'s exact integers (|bound| <= ", lim, ")");
      }
      const uint64_t r = static_cast<uint64_t>(d.int_high) - static_cast<uint64_t>(d.int_low);
      *gen = r <= (uint64_t{1} << 32) ? Gen::RandInt32 : Gen::RandInt64;
      q->ilow = d.int_low, q->irange = r;
      return Status::ok();
    }
  }
  return invalid(kRandom, "distribution ", static_cast<int>(d.distribution), " is not a RandomDistribution");
}

baracuda::detail::ArgCheck random_args(const RandomPlan& p, const RandomArgs& a) {
  const RandomDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.optional_input("p", a.p, d.distribution == RandomDistribution::Bernoulli && d.p_tensor, d.p_dtype, d.shape,
                   "p is missing (descriptor.p_tensor is true)", "p is given but descriptor.p_tensor is false")
      .output("out", a.out, d.dtype, d.shape)
      .optional_output("offset", a.offset, d.device_offset, DType::I64, kOffsetShape,
                       "offset is given but descriptor.device_offset is false");
  return std::move(c.disjoint());
}

bool vec_ok(const void* data, const Dims& shape, const Dims& strides) {
  return baracuda::detail::view_is_contiguous(shape, strides) && baracuda::detail::is_aligned16(data);
}

cuda::FillLaunch fill_launch(const RandomPlan& p, const FillParams& q, Gen g, const RandomArgs& a) {
  const RandomDescriptor& d = p.descriptor();
  cuda::FillLaunch l;
  l.gen = g, l.dtype = d.dtype, l.prm = q, l.n = shape_numel(d.shape);
  l.out = a.out.data, l.out_map = cuda::flat_map(d.shape, a.out.strides);
  l.vec = vec_ok(a.out.data, d.shape, a.out.strides);
  if (g == Gen::BernoulliTensor) l.p = a.p.data, l.p_dtype = d.p_dtype, l.p_map = cuda::flat_map(d.shape, a.p.strides);
  l.seed = a.seed.seed, l.offset = a.seed.offset;
  if (d.device_offset) l.offset_ptr = static_cast<int64_t*>(a.offset.data);
  l.sm_count = baracuda::detail::PlanAccess::sm_count(p);
  return l;
}

}  // namespace
}  // namespace random::detail

using namespace random::detail;

// ---- RandomPlan ------------------------------------------------------------------------
Result<RandomPlan> RandomPlan::select(const Stream& stream, const RandomDescriptor& desc, const PlanPreference& pref) {
  RandomPlan plan;
  random::FillParams q;
  random::Gen g;
  BARACUDA_RETURN_IF_ERROR(check_random(desc, &q, &g));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kRandom, kFamily, stream, pref, desc.dtype,
                                         std::string("random.") + random_distribution_name(desc.distribution));
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference)
    baracuda::detail::PlanAccess::sku(plan).variant = shape_numel(desc.shape) == 0 ? "empty" : "vec16";
  return plan;
}

Status RandomPlan::can_implement(const RandomArgs& a) const { return random_args(*this, a).status(); }

Result<KernelSku> RandomPlan::sku_for(const Stream& stream, Workspace ws, const RandomArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, random_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (shape_numel(desc_.shape) > 0 && !vec_ok(a.out.data, desc_.shape, a.out.strides)) s.variant = "strided";
    return s;
  });
}

Status RandomPlan::run(const Stream& stream, Workspace ws, const RandomArgs& a) const {
  random::FillParams q;
  random::Gen g = random::Gen::Uniform;
  if (!empty()) BARACUDA_RETURN_IF_ERROR(check_random(desc_, &q, &g));
  return baracuda::detail::run_plan(
      *this, stream, ws, random_args(*this, a), [&] { return random::ref::fill(fill_launch(*this, q, g, a)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        random::cuda::FillLaunch l = fill_launch(*this, q, g, a);
        l.stream = stream.native_handle();
        return random::cuda::launch_fill(l);
#else
        return baracuda::detail::no_cuda(kRandom);
#endif
      });
}

// ---- DropoutPlan -----------------------------------------------------------------------
namespace random::detail {
namespace {

Status check_dropout(const char* plan, DType t, const Dims& shape, double p) {
  BARACUDA_RETURN_IF_ERROR(check_float_dtype(plan, "dtype", t));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "shape", shape));
  return check_p(plan, p);
}

baracuda::detail::ArgCheck dropout_args(const DropoutPlan& p, const DropoutArgs& a) {
  const DropoutDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.shape)
      .output("out", a.out, d.dtype, d.shape)
      .optional_output("mask", a.mask, d.save_mask, DType::U8, p.mask_shape(),
                       "mask is given but descriptor.save_mask is false")
      .optional_output("offset", a.offset, d.device_offset, DType::I64, kOffsetShape,
                       "offset is given but descriptor.device_offset is false")
      .allow_in_place("out", "x");
  return std::move(c.disjoint("out may be x itself, the same view, for an in-place dropout"));
}

baracuda::detail::ArgCheck dropout_bw_args(const DropoutBackwardPlan& p, const DropoutBackwardArgs& a) {
  const DropoutBackwardDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("dy", a.dy, d.dtype, d.shape)
      .optional_input("mask", a.mask, d.use_mask, DType::U8, p.mask_shape(),
                      "mask is missing (descriptor.use_mask is true)", "mask is given but descriptor.use_mask is false")
      .optional_input("offset", a.offset, d.device_offset, DType::I64, kOffsetShape,
                      "offset is missing (descriptor.device_offset is true)",
                      "offset is given but descriptor.device_offset is false")
      .output("dx", a.dx, d.dtype, d.shape)
      .allow_in_place("dx", "dy");
  return std::move(c.disjoint("dx may be dy itself, the same view, for an in-place backward"));
}

cuda::DropoutLaunch dropout_launch(const PlanBase& plan, DType t, const Dims& shape, double p, const TensorRef& x,
                                   const TensorMut& out, const RandomSeed& seed) {
  cuda::DropoutLaunch l;
  l.dtype = t, l.n = shape_numel(shape);
  l.keep_thr = threshold(p);
  l.zero = p == 1.0;
  l.scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  l.scale_f = static_cast<float>(l.scale);
  l.x = x.data, l.out = out.data;
  l.x_map = cuda::flat_map(shape, x.strides), l.out_map = cuda::flat_map(shape, out.strides);
  l.vec = vec_ok(x.data, shape, x.strides) && vec_ok(out.data, shape, out.strides);
  l.seed = seed.seed, l.offset = seed.offset;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  return l;
}

cuda::DropoutLaunch fw_launch(const DropoutPlan& p, const DropoutArgs& a) {
  const DropoutDescriptor& d = p.descriptor();
  cuda::DropoutLaunch l = dropout_launch(p, d.dtype, d.shape, d.p, a.x, a.out, a.seed);
  if (d.save_mask) l.mask_out = a.mask.data, l.mask_stride = a.mask.strides.rank ? a.mask.strides[0] : 1;
  if (d.device_offset) l.offset_ptr = static_cast<int64_t*>(a.offset.data), l.increment = true;
  return l;
}

cuda::DropoutLaunch bw_launch(const DropoutBackwardPlan& p, const DropoutBackwardArgs& a) {
  const DropoutBackwardDescriptor& d = p.descriptor();
  cuda::DropoutLaunch l = dropout_launch(p, d.dtype, d.shape, d.p, a.dy, a.dx, a.seed);
  l.backward = true;
  if (d.use_mask) l.mask_in = a.mask.data, l.mask_stride = a.mask.strides.rank ? a.mask.strides[0] : 1;
  if (d.device_offset) l.offset_ptr = const_cast<int64_t*>(static_cast<const int64_t*>(a.offset.data)), l.offset_bias = -1;
  return l;
}

const char* dropout_variant(const Dims& shape, bool vec) {
  return shape_numel(shape) == 0 ? "empty" : (vec ? "vec16" : "strided");
}

}  // namespace
}  // namespace random::detail

Dims DropoutPlan::mask_shape() const { return mask_dims(desc_.shape); }
Dims DropoutBackwardPlan::mask_shape() const { return mask_dims(desc_.shape); }

Result<DropoutPlan> DropoutPlan::select(const Stream& stream, const DropoutDescriptor& desc, const PlanPreference& pref) {
  DropoutPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dropout(kDropout, desc.dtype, desc.shape, desc.p));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kDropout, kFamily, stream, pref, desc.dtype, "random.dropout");
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference) baracuda::detail::PlanAccess::sku(plan).variant = dropout_variant(desc.shape, true);
  return plan;
}

Status DropoutPlan::can_implement(const DropoutArgs& a) const { return dropout_args(*this, a).status(); }

Result<KernelSku> DropoutPlan::sku_for(const Stream& stream, Workspace ws, const DropoutArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, dropout_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = dropout_variant(desc_.shape, fw_launch(*this, a).vec);
    return s;
  });
}

Status DropoutPlan::run(const Stream& stream, Workspace ws, const DropoutArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, dropout_args(*this, a), [&] { return random::ref::dropout(fw_launch(*this, a)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        random::cuda::DropoutLaunch l = fw_launch(*this, a);
        l.stream = stream.native_handle();
        return random::cuda::launch_dropout(l);
#else
        return baracuda::detail::no_cuda(kDropout);
#endif
      });
}

Result<DropoutBackwardPlan> DropoutBackwardPlan::select(const Stream& stream, const DropoutBackwardDescriptor& desc,
                                                        const PlanPreference& pref) {
  DropoutBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dropout(kDropoutBw, desc.dtype, desc.shape, desc.p));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kDropoutBw, kFamily, stream, pref, desc.dtype,
                                         desc.use_mask ? "random.dropout_backward_mask" : "random.dropout_backward");
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference) baracuda::detail::PlanAccess::sku(plan).variant = dropout_variant(desc.shape, true);
  return plan;
}

Status DropoutBackwardPlan::can_implement(const DropoutBackwardArgs& a) const { return dropout_bw_args(*this, a).status(); }

Result<KernelSku> DropoutBackwardPlan::sku_for(const Stream& stream, Workspace ws, const DropoutBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, dropout_bw_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = dropout_variant(desc_.shape, bw_launch(*this, a).vec);
    return s;
  });
}

Status DropoutBackwardPlan::run(const Stream& stream, Workspace ws, const DropoutBackwardArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, dropout_bw_args(*this, a), [&] { return random::ref::dropout(bw_launch(*this, a)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        random::cuda::DropoutLaunch l = bw_launch(*this, a);
        l.stream = stream.native_handle();
        return random::cuda::launch_dropout(l);
#else
        return baracuda::detail::no_cuda(kDropoutBw);
#endif
      });
}

}  // namespace baracuda

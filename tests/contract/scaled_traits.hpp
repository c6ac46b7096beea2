// Contract traits of ScaledMatmulPlan (fp8, torch._scaled_mm).
//
// Valid descriptors: a / b dtypes from the supported pairs (e4m3 x e4m3,
// e4m3 x e5m2, e5m2 x e4m3), out bf16 / f16 / f32, per-tensor or row-wise
// scales, bias and an activation now and then; M 1..7 and K, N from
// {16, 32, 48} (K = 0 rarely): multiples of 16, which cuBLASLt's fp8 kernels
// need on CUDA (select() refuses others there), so one draw serves both suites.
//
// The layout rule (a and b each with a unit stride along K) is met by binding
// b through its weight: the slot named "b" holds w [N, K], and its bind stores
// the transposed view w.t() [K, N] into the args. The CUDA suite's contiguous
// (or row-gapped) w then is exactly the "TN" layout cuBLASLt wants; the CPU
// view fuzz transposes whatever view it drew, which the CPU reference takes.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "contract/gemm_traits.hpp"

namespace contract {
namespace gemm_contract {

using baracuda::Fp8Scaling;
using baracuda::ScaledMatmulDescriptor;

inline ScaledMatmulDescriptor scaled(DType a, DType b, DType out, int64_t m, int64_t k, int64_t n) {
  ScaledMatmulDescriptor d;
  d.a_dtype = a;
  d.b_dtype = b;
  d.out_dtype = out;
  d.a_shape = Dims{m, k};
  d.b_shape = Dims{k, n};
  return d;
}

inline ScaledMatmulDescriptor draw_scaled(Fuzz& f) {
  const DType pairs[3][2] = {{DType::F8E4M3, DType::F8E4M3}, {DType::F8E4M3, DType::F8E5M2}, {DType::F8E5M2, DType::F8E4M3}};
  const auto& p = pairs[f.range(0, 2)];
  const DType out = f.pick<DType>({DType::BF16, DType::BF16, DType::F16, DType::F32});
  const int64_t k = f.chance(0.06) ? 0 : 16 * f.range(1, 3);
  ScaledMatmulDescriptor d = scaled(p[0], p[1], out, f.range(1, 7), k, 16 * f.range(1, 3));
  d.scaling = f.chance(0.5) ? Fp8Scaling::Row : Fp8Scaling::Tensor;
  d.has_bias = f.chance(0.5);
  d.activation = f.chance(0.6) ? GemmActivation::None : any_activation(f);
  d.fast_accum = f.chance(0.25);
  return d;
}

inline std::string describe(const ScaledMatmulDescriptor& d) {
  std::ostringstream os;
  os << "ScaledMatmulDescriptor{a " << dtype_str(d.a_dtype) << " " << dims_str(d.a_shape) << ", b "
     << dtype_str(d.b_dtype) << " " << dims_str(d.b_shape) << ", out " << dtype_str(d.out_dtype) << ", scaling "
     << static_cast<int>(d.scaling) << ", has_bias " << d.has_bias << ", activation " << act_str(d.activation)
     << ", fast_accum " << d.fast_accum << "}";
  return os.str();
}

inline std::vector<DescMutator<ScaledMatmulDescriptor>> scaled_mutators() {
  using D = ScaledMatmulDescriptor;
  auto v = shape_mutators<D>(
      [](D& d) {
        std::vector<int64_t*> e;
        add_extents(e, d.a_shape);
        add_extents(e, d.b_shape);
        return e;
      },
      [](D& d) { return std::vector<Dims*>{&d.a_shape, &d.b_shape}; });
  v.push_back({"desc.k_mismatch", [](D& d, Fuzz& f) {
                 if (d.b_shape.rank_valid() && d.b_shape.rank >= 1) d.b_shape[0] += f.range(1, 3);
               }});
  v.push_back({"desc.dtypes_any", [](D& d, Fuzz& f) {
                 switch (f.range(0, 2)) {
                   case 0: d.a_dtype = f.any_dtype(); break;
                   case 1: d.b_dtype = f.any_dtype(); break;
                   default: d.out_dtype = f.any_dtype(); break;
                 }
               }});
  v.push_back({"desc.scaling_any", [](D& d, Fuzz& f) { d.scaling = static_cast<Fp8Scaling>(f.range(0, 255)); }});
  v.push_back({"desc.activation_any", [](D& d, Fuzz& f) { d.activation = static_cast<GemmActivation>(f.range(0, 255)); }});
  v.push_back({"desc.flags_flipped", [](D& d, Fuzz& f) {
                 if (f.chance(0.5)) d.has_bias = !d.has_bias;
                 else d.fast_accum = !d.fast_accum;
               }});
  return v;
}

inline std::vector<std::pair<const char*, ScaledMatmulDescriptor>> scaled_invalid() {
  using D = ScaledMatmulDescriptor;
  auto with = [](auto fn) {
    D d = scaled(DType::F8E4M3, DType::F8E4M3, DType::BF16, 2, 16, 16);
    fn(d);
    return d;
  };
  return {{"a_bf16", with([](D& d) { d.a_dtype = DType::BF16; })},
          {"b_f32", with([](D& d) { d.b_dtype = DType::F32; })},
          {"e5m2_x_e5m2", with([](D& d) { d.a_dtype = d.b_dtype = DType::F8E5M2; })},
          {"out_f64", with([](D& d) { d.out_dtype = DType::F64; })},
          {"out_fp8", with([](D& d) { d.out_dtype = DType::F8E4M3; })},
          {"out_unknown", with([](D& d) { d.out_dtype = static_cast<DType>(99); })},
          {"a_rank_three", with([](D& d) { d.a_shape = {2, 2, 16}; })},
          {"b_rank_one", with([](D& d) { d.b_shape = {16}; })},
          {"k_mismatch", with([](D& d) { d.b_shape = {32, 16}; })},
          {"extent_negative", with([](D& d) { d.a_shape = {-2, 16}; })},
          {"scaling_unknown", with([](D& d) { d.scaling = static_cast<Fp8Scaling>(5); })},
          {"activation_unknown", with([](D& d) { d.activation = static_cast<GemmActivation>(9); })},
          {"too_many_elements", with([](D& d) { d.a_shape = {int64_t{1} << 40, int64_t{1} << 30}, d.b_shape = {int64_t{1} << 30, 16}; })}};
}

// b's slot holds w [N, K]; the plan sees w.t() (an empty view stays empty: "b is missing").
inline void bind_b_transposed(baracuda::ScaledMatmulArgs& a, const TensorMut& w) {
  baracuda::TensorRef t = w;
  if (t.shape.rank == 2) {
    std::swap(t.shape[0], t.shape[1]);
    std::swap(t.strides[0], t.strides[1]);
  }
  a.b = t;
}

}  // namespace gemm_contract

struct ScaledMatmulTraits {
  using Plan = baracuda::ScaledMatmulPlan;
  using Desc = baracuda::ScaledMatmulDescriptor;
  using Args = baracuda::ScaledMatmulArgs;
  static constexpr const char* kName = "ScaledMatmulPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return gemm_contract::draw_scaled(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using gemm_contract::scaled;
    Desc rows = scaled(DType::F8E4M3, DType::F8E4M3, DType::BF16, 0, 16, 16);  // M = 0
    Desc cols = scaled(DType::F8E4M3, DType::F8E5M2, DType::F32, 3, 32, 0);    // N = 0, row scales, bias
    cols.scaling = baracuda::Fp8Scaling::Row;
    cols.has_bias = true;
    return {rows, cols};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return gemm_contract::scaled_invalid(); }
  static std::vector<Desc> workspace_descs() {
    using gemm_contract::scaled;
    Desc big = scaled(DType::F8E4M3, DType::F8E4M3, DType::BF16, 512, 1024, 512);
    Desc row = scaled(DType::F8E5M2, DType::F8E4M3, DType::F16, 256, 512, 256);
    row.scaling = baracuda::Fp8Scaling::Row;
    row.has_bias = true;
    row.activation = GemmActivation::Gelu;
    return {big, row};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const Dims out = p.out_shape();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("a", d.a_dtype, d.a_shape, [](Args& a, const TensorMut& t) { a.a = t; }));
    v.push_back(input<Args>("b", d.b_dtype, Dims{d.b_shape[1], d.b_shape[0]}, gemm_contract::bind_b_transposed));
    v.push_back(input<Args>("a_scale", DType::F32, p.a_scale_shape(), [](Args& a, const TensorMut& t) { a.a_scale = t; }));
    v.push_back(input<Args>("b_scale", DType::F32, p.b_scale_shape(), [](Args& a, const TensorMut& t) { a.b_scale = t; }));
    v.push_back(optional_input<Args>(d.has_bias, "bias", d.out_dtype, Dims{out[1]},
                                     [](Args& a, const TensorMut& t) { a.bias = t; }));
    v.push_back(output<Args>("out", d.out_dtype, out, [](Args& a, const TensorMut& t) { a.out = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return gemm_contract::scaled_mutators(); }
  static std::string describe(const Desc& d) { return gemm_contract::describe(d); }
};

}  // namespace contract

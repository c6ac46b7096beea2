// Contract traits of the softmax family: SoftmaxPlan, SoftmaxBackwardPlan. A
// new softmax plan joins with a traits struct here and one INSTANTIATE line
// per suite in tests/contract/cpu_softmax.cpp and cuda_softmax.cpp.
#pragma once

#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/softmax.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::small_shape, add_dims_mutators

namespace contract {
namespace softmax_contract {

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

template <class D>
D make(DType t, Dims shape, int axis = -1, bool log = false, double scale = 1.0) {
  D d;
  d.dtype = t;
  d.shape = shape;
  d.axis = axis;
  d.log = log;
  d.scale = scale;
  return d;
}

template <class D>
D valid(Rng& rng) {
  Fuzz f(rng);
  D d;
  d.dtype = kFp[f.range(0, 3)];
  d.shape = reduce_contract::small_shape(f, false);
  const int rank = d.shape.rank;
  d.axis = rank == 0 ? static_cast<int>(f.range(-1, 0)) : static_cast<int>(f.range(-rank, rank - 1));
  d.log = f.chance(0.5);
  if (f.chance(0.4)) d.scale = std::uniform_real_distribution<double>(-3.0, 3.0)(rng);
  if (d.scale == 0.0) d.scale = 1.0;
  return d;
}

template <class D>
std::string describe(const char* name, const D& d) {
  std::ostringstream os;
  os << name << "{dtype " << baracuda::dtype_name(d.dtype) << ", shape " << dims_str(d.shape) << ", axis " << d.axis
     << ", log " << d.log << ", scale " << d.scale << "}";
  return os.str();
}

template <class D>
std::vector<std::pair<const char*, D>> invalid() {
  auto with = [](auto fn) {
    D d = make<D>(DType::F32, {3, 5});
    fn(d);
    return d;
  };
  D rank9 = make<D>(DType::F32, {1, 1, 1, 1, 1, 1, 1, 1});
  rank9.shape.rank = 9;
  return {{"axis_past_rank", with([](D& d) { d.axis = 2; })},
          {"axis_below_minus_rank", with([](D& d) { d.axis = -3; })},
          {"scale_zero", with([](D& d) { d.scale = 0.0; })},
          {"scale_nan", with([](D& d) { d.scale = std::numeric_limits<double>::quiet_NaN(); })},
          {"scale_inf", with([](D& d) { d.scale = std::numeric_limits<double>::infinity(); })},
          {"extent_negative", with([](D& d) { d.shape = Dims{3, -5}; })},
          {"integer_dtype", with([](D& d) { d.dtype = DType::I64; })},
          {"shape_rank_9", rank9}};
}

template <class D>
std::vector<DescMutator<D>> mutators() {
  std::vector<DescMutator<D>> v;
  reduce_contract::add_dims_mutators<D>(v, &D::shape, "shape");
  v.push_back({"desc.axis_any", [](D& d, Fuzz& f) {
                 d.axis = f.chance(0.5) ? static_cast<int>(f.range(-10, 10)) : static_cast<int>(f.any_int());
               }});
  v.push_back({"desc.scale_any", [](D& d, Fuzz& f) { d.scale = f.any_double(); }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  return v;
}

template <class D>
std::vector<D> zero_size() {
  return {make<D>(DType::F32, {0, 5}), make<D>(DType::BF16, {4, 0}, 1, true), make<D>(DType::F64, {2, 0, 3}, 0),
          make<D>(DType::F16, {0})};
}

// Long rows take the split path, whose workspace the CUDA suite checks.
template <class D>
std::vector<D> workspace() {
  return {make<D>(DType::F32, {2, 1 << 18}), make<D>(DType::BF16, {1, 1 << 20}, -1, true)};
}

}  // namespace softmax_contract

// ---------------------------------------------------------------------------
struct SoftmaxTraits {
  using Plan = baracuda::SoftmaxPlan;
  using Desc = baracuda::SoftmaxDescriptor;
  using Args = baracuda::SoftmaxArgs;
  static constexpr const char* kName = "SoftmaxPlan";

  static Desc valid_desc(Rng& rng) { return softmax_contract::valid<Desc>(rng); }
  static std::vector<Desc> zero_size_descs() { return softmax_contract::zero_size<Desc>(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return softmax_contract::invalid<Desc>(); }
  static std::vector<Desc> workspace_descs() { return softmax_contract::workspace<Desc>(); }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("x", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            output<Args>("y", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.y = t; }, "x")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return softmax_contract::mutators<Desc>(); }
  static std::string describe(const Desc& d) { return softmax_contract::describe("SoftmaxDescriptor", d); }
};

struct SoftmaxBackwardTraits {
  using Plan = baracuda::SoftmaxBackwardPlan;
  using Desc = baracuda::SoftmaxBackwardDescriptor;
  using Args = baracuda::SoftmaxBackwardArgs;
  static constexpr const char* kName = "SoftmaxBackwardPlan";

  static Desc valid_desc(Rng& rng) { return softmax_contract::valid<Desc>(rng); }
  static std::vector<Desc> zero_size_descs() { return softmax_contract::zero_size<Desc>(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return softmax_contract::invalid<Desc>(); }
  static std::vector<Desc> workspace_descs() { return softmax_contract::workspace<Desc>(); }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("y", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.y = t; }),
            input<Args>("dy", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dy = t; }),
            output<Args>("dx", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dx = t; }, "dy")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return softmax_contract::mutators<Desc>(); }
  static std::string describe(const Desc& d) { return softmax_contract::describe("SoftmaxBackwardDescriptor", d); }
};

}  // namespace contract

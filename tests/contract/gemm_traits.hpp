// Contract traits of the matrix multiply family: MatmulPlan, LinearPlan,
// LinearBackwardPlan (ScaledMatmulPlan: scaled_traits.hpp; the grouped plans:
// grouped_traits.hpp). A new GEMM plan joins with a traits struct here and one
// INSTANTIATE line per suite in tests/contract/cpu_gemm.cpp and cuda_gemm.cpp.
//
// Valid descriptors are built directly from the header's rules (not drawn
// until select() accepts them), so a valid problem select() refuses fails the
// suite instead of quietly shrinking its coverage. Each draw picks one of a few
// problem kinds with small random extents (M, N 1..7, K 0..9, batch extents
// 1..3) and a dtype (f32 and bf16 most often, f16 and f64 too):
//   MatmulPlan: plain 2-D; batched with broadcast batch dims; addmm / baddbmm
//     (c of out's shape, or one that broadcasts, with alpha / beta); bias +
//     GeluTanh with save_aux; exact-erf Gelu; anything (1-D operands, batch
//     ranks up to 6, Relu, ...).
//   LinearPlan: x of rank 1..4, bias and an activation (save_aux with the
//     GELUs), each optional.
//   LinearBackwardPlan: GeluTanh with bias and every output; need_dx only;
//     random need_* flags over any forward (now and then over no rows: dw, db
//     are zeros); a quarter of those with dx chained through the previous
//     layer's activation (input_activation, x_aux, maybe dbias_in).
// Every optional tensor (c, bias, aux; x, weight, aux, x_aux, dx, dw, db,
// dbias_in of the backward) is a slot marked optional: used when its descriptor flag asks for
// it, Unused (a plausible view the plan must refuse) otherwise. MatmulPlan's
// out may be exactly c (in place, addmm_) when c has out's shape.
//
// CUDA's stride rule (each matrix needs a unit stride along one of its last
// two axes, gemm.hpp) needs no declaration here: the CUDA suite binds
// contiguous inputs and contiguous or gapped outputs (unit inner stride, rows
// padded by 8 elements), all inside the rule, and the view fuzz runs on the
// CPU reference, which takes any strides. Nothing of this family is in
// known_failures.hpp.
#pragma once

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/gemm.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace gemm_contract {

using baracuda::GemmActivation;
using baracuda::LinearBackwardDescriptor;
using baracuda::LinearDescriptor;
using baracuda::MatmulDescriptor;

// f32 and bf16 (the dtypes models train in) most of the time; f16 and f64 too.
inline DType any_dtype(Fuzz& f) {
  const double u = std::uniform_real_distribution<double>(0, 1)(f.rng);
  return u < 0.4 ? DType::F32 : u < 0.75 ? DType::BF16 : u < 0.9 ? DType::F16 : DType::F64;
}
inline GemmActivation any_activation(Fuzz& f) { return static_cast<GemmActivation>(f.range(0, 3)); }
// The activations whose backward reads a saved pre-activation (save_aux).
inline bool saves_aux(GemmActivation a) { return a == GemmActivation::Gelu || a == GemmActivation::GeluTanh; }

inline std::string dtype_str(DType t) {
  return dtype_known(t) ? std::string(baracuda::dtype_name(t)) : "dtype#" + std::to_string(static_cast<int>(t));
}
inline std::string act_str(GemmActivation a) {
  const int v = static_cast<int>(a);
  return v <= 3 ? std::string(baracuda::gemm_activation_name(a)) : "activation#" + std::to_string(v);
}

inline Dims with_tail(Dims d, int64_t r, int64_t c) {
  d.push_back(r);
  d.push_back(c);
  return d;
}
// NumPy broadcast of two valid, broadcastable shapes.
inline Dims broadcast(const Dims& x, const Dims& y) {
  const int r = std::max(x.rank, y.rank);
  Dims out = Dims::of_rank(r, 1);
  for (int i = 0; i < r; ++i) {
    const int ix = i - (r - x.rank), iy = i - (r - y.rank);
    const int64_t ex = ix >= 0 ? x[ix] : 1, ey = iy >= 0 ? y[iy] : 1;
    out[i] = ex == 1 ? ey : ex;
  }
  return out;
}
// A shape that broadcasts to `to`: some leading axes dropped, some extents 1.
inline Dims broadcast_from(const Dims& to, Fuzz& f) {
  if (f.chance(0.35)) return to;
  Dims s;
  const int drop = f.chance(0.4) ? static_cast<int>(f.range(0, to.rank)) : 0;
  for (int i = drop; i < to.rank; ++i) s.push_back(f.chance(0.4) ? 1 : to[i]);
  return s;
}
inline Dims batch_of(const Dims& s) {
  Dims b;
  for (int i = 0; i < s.rank - 2; ++i) b.push_back(s[i]);
  return b;
}
// torch.matmul's output shape of valid shapes (MatmulDescriptor's comment).
inline Dims matmul_out(const Dims& a, const Dims& b) {
  Dims out = broadcast(batch_of(a), batch_of(b));
  if (a.rank >= 2) out.push_back(a[a.rank - 2]);
  if (b.rank >= 2) out.push_back(b[b.rank - 1]);
  return out;
}

// ---- MatmulPlan -----------------------------------------------------------------------
enum MatmulKind { kPlain2d, kBatchedBroadcast, kAddmm, kBiasGeluTanhAux, kGeluErf, kAnything, kMatmulKinds };

inline MatmulDescriptor draw_matmul(Fuzz& f) {
  MatmulDescriptor d;
  d.dtype = any_dtype(f);
  const int kind = static_cast<int>(f.range(0, kMatmulKinds - 1));
  const int64_t m = f.range(1, 7), n = f.range(1, 7), k = f.chance(0.06) ? 0 : f.range(1, 9);
  Dims batch;  // the broadcast batch shape a and b are drawn from
  if (kind == kBatchedBroadcast || (kind != kPlain2d && f.chance(0.35)))
    for (int i = static_cast<int>(f.range(1, 3)); i > 0; --i) batch.push_back(f.range(1, 3));
  if (kind == kAnything && f.chance(0.15)) {  // ranks up to 8
    batch = Dims();
    for (int i = static_cast<int>(f.range(4, 6)); i > 0; --i) batch.push_back(f.range(1, 2));
  }
  d.a_shape = with_tail(broadcast_from(batch, f), m, k);
  d.b_shape = with_tail(broadcast_from(batch, f), k, n);
  if (kind == kAnything && f.chance(0.35)) {  // vector operands: matrix-vector, vector-matrix, dot
    if (f.chance(0.6)) d.a_shape = Dims{k};
    if (f.chance(0.6)) d.b_shape = Dims{k};
  }
  const Dims out = matmul_out(d.a_shape, d.b_shape);
  d.has_c = kind == kAddmm || (kind == kAnything && f.chance(0.3));
  if (d.has_c) {
    d.c_shape = f.chance(0.5) ? out : broadcast_from(out, f);
    d.alpha = f.pick<double>({1.0, 1.0, 0.5, -2.0, 0.0});
    d.beta = f.pick<double>({1.0, 0.0, -1.0, 0.25});
  } else if (f.chance(0.2)) {
    d.alpha = f.pick<double>({0.5, -1.5, 0.0});
  }
  const bool may_bias = d.b_shape.rank >= 2;
  d.has_bias = may_bias && (kind == kBiasGeluTanhAux || ((kind == kGeluErf || kind == kAnything) && f.chance(0.4)));
  d.activation = kind == kBiasGeluTanhAux ? GemmActivation::GeluTanh
                 : kind == kGeluErf       ? GemmActivation::Gelu
                 : kind == kAnything || f.chance(0.2) ? any_activation(f)
                                                      : GemmActivation::None;
  d.save_aux = saves_aux(d.activation) && (kind == kBiasGeluTanhAux || f.chance(0.5));
  return d;
}

inline MatmulDescriptor matmul(DType t, Dims a, Dims b) {
  MatmulDescriptor d;
  d.dtype = t;
  d.a_shape = a;
  d.b_shape = b;
  return d;
}

inline std::string describe(const MatmulDescriptor& d) {
  std::ostringstream os;
  os << "MatmulDescriptor{dtype " << dtype_str(d.dtype) << ", a " << dims_str(d.a_shape) << ", b "
     << dims_str(d.b_shape) << ", has_c " << d.has_c << ", c " << dims_str(d.c_shape) << ", alpha " << d.alpha
     << ", beta " << d.beta << ", has_bias " << d.has_bias << ", activation " << act_str(d.activation)
     << ", save_aux " << d.save_aux << "}";
  return os.str();
}

// ---- LinearPlan ---------------------------------------------------------------------------
inline LinearDescriptor draw_linear(Fuzz& f) {
  LinearDescriptor d;
  d.dtype = any_dtype(f);
  const int64_t k = f.chance(0.06) ? 0 : f.range(1, 9);
  const int lead = f.chance(0.15) ? 0 : static_cast<int>(f.range(1, 3));
  for (int i = 0; i < lead; ++i) d.x_shape.push_back(f.range(1, 3));
  d.x_shape.push_back(k);
  d.out_features = f.range(1, 7);
  const bool bias_act = f.chance(0.4);  // nn.Linear + fused activation, the common layer
  d.has_bias = bias_act || f.chance(0.5);
  d.activation = bias_act ? static_cast<GemmActivation>(f.range(1, 3)) : any_activation(f);
  d.save_aux = saves_aux(d.activation) && f.chance(0.5);
  return d;
}

inline LinearDescriptor linear(DType t, Dims x, int64_t n, bool bias = true, GemmActivation act = GemmActivation::None,
                               bool save_aux = false) {
  LinearDescriptor d;
  d.dtype = t;
  d.x_shape = x;
  d.out_features = n;
  d.has_bias = bias;
  d.activation = act;
  d.save_aux = save_aux;
  return d;
}

inline std::string describe(const LinearDescriptor& d) {
  std::ostringstream os;
  os << "LinearDescriptor{dtype " << dtype_str(d.dtype) << ", x " << dims_str(d.x_shape) << ", out_features "
     << d.out_features << ", has_bias " << d.has_bias << ", activation " << act_str(d.activation) << ", save_aux "
     << d.save_aux << "}";
  return os.str();
}

// ---- LinearBackwardPlan -------------------------------------------------------------------
inline LinearBackwardDescriptor draw_linear_backward(Fuzz& f) {
  LinearBackwardDescriptor d;
  d.forward = draw_linear(f);
  LinearDescriptor& fw = d.forward;
  switch (f.range(0, 3)) {
    case 0:  // the fused MLP layer's backward: GeluTanh, bias, every gradient
      fw.has_bias = true;
      fw.activation = GemmActivation::GeluTanh;
      d.need_dx = d.need_dw = d.need_db = true;
      break;
    case 1:  // frozen weights: dx only
      d.need_dx = true;
      d.need_dw = d.need_db = false;
      break;
    default:
      d.need_dx = f.chance(0.75);
      d.need_dw = f.chance(0.75);
      d.need_db = fw.has_bias && f.chance(0.75);
      if (!d.need_dx && !d.need_dw && !d.need_db) d.need_dx = true;
      break;
  }
  if (!fw.has_bias) d.need_db = false;
  // A chained layer now and then (llm.c's fusion): dx through the previous
  // layer's activation gradient, maybe with that layer's bias gradient.
  if (d.need_dx && f.chance(0.25)) {
    d.input_activation = static_cast<GemmActivation>(f.range(1, 3));
    d.need_input_bias_grad = f.chance(0.5);
  }
  // Now and then no rows at all while dw or db is asked for: a sum over
  // nothing, so they are zeros (dx is empty then).
  if ((d.need_dw || d.need_db) && fw.x_shape.rank >= 2 && f.chance(0.06)) fw.x_shape[0] = 0;
  // K = 0 empties dx and dw: without db every output would be empty, a
  // zero-size problem (zero_size_descs()), not a valid one to run.
  if (!d.need_db && fw.x_shape[fw.x_shape.rank - 1] == 0) fw.x_shape[fw.x_shape.rank - 1] = f.range(1, 9);
  fw.save_aux = false;  // the backward's descriptor: the saved pre-activation is its input aux
  return d;
}

inline LinearBackwardDescriptor backward(LinearDescriptor fw, bool dx = true, bool dw = true, bool db = true) {
  LinearBackwardDescriptor d;
  fw.save_aux = false;
  d.forward = fw;
  d.need_dx = dx;
  d.need_dw = dw;
  d.need_db = db && fw.has_bias;
  return d;
}

inline std::string describe(const LinearBackwardDescriptor& d) {
  std::ostringstream os;
  os << "LinearBackwardDescriptor{forward " << describe(d.forward) << ", need_dx " << d.need_dx << ", need_dw "
     << d.need_dw << ", need_db " << d.need_db << ", input_activation " << act_str(d.input_activation)
     << ", need_input_bias_grad " << d.need_input_bias_grad << "}";
  return os.str();
}

// ---- slots ------------------------------------------------------------------------------------
// An output only some descriptors ask for: Output when `used`, else Unused
// (a plausible view the plan must refuse when given).
template <class Args>
Slot<Args> optional_output(bool used, const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s = output<Args>(name, t, shape, bind);
  s.role = used ? Role::Output : Role::Unused;
  s.optional = true;
  return s;
}

// ---- descriptor mutations ---------------------------------------------------------------------
// The fuzz's extent mutations over every extent of the descriptor's shapes
// (and int64 fields): one negative, one huge, all large enough that products
// overflow, powers of two whose product is exactly 2^64 / 2^63; and a shape's
// rank field corrupted.
template <class Desc>
std::vector<DescMutator<Desc>> shape_mutators(std::vector<int64_t*> (*extents)(Desc&), std::vector<Dims*> (*shapes)(Desc&)) {
  auto one = [extents](Desc& d, Fuzz& f) -> int64_t* {
    auto v = extents(d);
    return v.empty() ? nullptr : v[static_cast<size_t>(f.range(0, static_cast<int64_t>(v.size()) - 1))];
  };
  return {
      {"desc.negative_extent",
       [one](Desc& d, Fuzz& f) {
         if (int64_t* e = one(d, f)) *e = f.negative();
       }},
      {"desc.huge_extent",
       [one](Desc& d, Fuzz& f) {
         if (int64_t* e = one(d, f)) *e = f.huge();
       }},
      {"desc.extents_overflow",
       [extents](Desc& d, Fuzz& f) {
         for (int64_t* e : extents(d))
           if (f.chance(0.7)) *e = int64_t{1} << f.range(8, 40);
       }},
      {"desc.extents_wrap",
       [extents](Desc& d, Fuzz& f) {
         auto all = extents(d);
         std::vector<int64_t*> sub;
         for (int64_t* e : all)
           if (f.chance(0.6)) sub.push_back(e);
         if (sub.size() < 2) sub = all;
         if (sub.empty()) return;
         const auto v = f.pow2_split(static_cast<int>(sub.size()), f.chance(0.7) ? 64 : 63);
         for (size_t i = 0; i < sub.size(); ++i) *sub[i] = v[i];
       }},
      {"desc.rank_any",
       [shapes](Desc& d, Fuzz& f) {
         auto v = shapes(d);
         Dims* s = v[static_cast<size_t>(f.range(0, static_cast<int64_t>(v.size()) - 1))];
         if (f.chance(0.3)) {
           s->rank = 0;  // a 0-D operand
         } else if (f.chance(0.3) && s->rank_valid() && s->rank < baracuda::kMaxRank) {
           s->push_back(f.range(0, 3));  // one axis more (the trailing extents shift)
         } else {
           s->rank = f.corrupt_rank();
         }
       }},
  };
}

inline void add_extents(std::vector<int64_t*>& v, Dims& s) {
  if (s.rank_valid())
    for (int i = 0; i < s.rank; ++i) v.push_back(&s[i]);
}

inline std::vector<DescMutator<MatmulDescriptor>> matmul_mutators() {
  using D = MatmulDescriptor;
  auto v = shape_mutators<D>(
      [](D& d) {
        std::vector<int64_t*> e;
        add_extents(e, d.a_shape);
        add_extents(e, d.b_shape);
        if (d.has_c) add_extents(e, d.c_shape);
        return e;
      },
      [](D& d) { return d.has_c ? std::vector<Dims*>{&d.a_shape, &d.b_shape, &d.c_shape} : std::vector<Dims*>{&d.a_shape, &d.b_shape}; });
  v.push_back({"desc.k_mismatch", [](D& d, Fuzz& f) {  // b's K extent changed
                 Dims& b = d.b_shape;
                 if (!b.rank_valid() || b.rank == 0) return;
                 int64_t& k = b[b.rank >= 2 ? b.rank - 2 : 0];
                 k = f.chance(0.5) ? k + 1 : f.range(0, 12);
               }});
  v.push_back({"desc.batch_any", [](D& d, Fuzz& f) {  // a batch extent of a or b redrawn (broadcastable or not)
                 Dims& s = f.chance(0.5) ? d.a_shape : d.b_shape;
                 if (!s.rank_valid() || s.rank < 3) return;
                 s[static_cast<int>(f.range(0, s.rank - 3))] = f.range(0, 4);
               }});
  v.push_back({"desc.vector_operand", [](D& d, Fuzz& f) {  // a or b made 1-D (invalid with a bias on a 1-D b)
                 Dims& s = f.chance(0.5) ? d.a_shape : d.b_shape;
                 if (!s.rank_valid() || s.rank == 0) return;
                 const bool is_a = &s == &d.a_shape;
                 s = Dims{s[is_a ? s.rank - 1 : std::max(s.rank - 2, 0)]};
               }});
  v.push_back({"desc.c_any", [](D& d, Fuzz& f) {  // a c of any small shape (broadcastable to out or not)
                 d.has_c = true;
                 d.c_shape = Dims();
                 for (int i = static_cast<int>(f.range(0, 4)); i > 0; --i) d.c_shape.push_back(f.range(0, 4));
               }});
  v.push_back({"desc.flags_flipped", [](D& d, Fuzz& f) {  // has_c, has_bias or save_aux toggled
                 switch (f.range(0, 2)) {
                   case 0: d.has_c = !d.has_c; break;
                   case 1: d.has_bias = !d.has_bias; break;
                   default: d.save_aux = !d.save_aux; break;
                 }
               }});
  v.push_back({"desc.alpha_beta_any", [](D& d, Fuzz& f) {
                 if (f.chance(0.5)) d.alpha = f.any_double();
                 else d.beta = f.any_double();
               }});
  v.push_back({"desc.activation_any", [](D& d, Fuzz& f) {
                 d.activation = static_cast<GemmActivation>(f.chance(0.5) ? f.range(0, 3) : f.range(0, 255));
                 if (f.chance(0.5)) d.save_aux = true;
               }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  return v;
}

template <class D>
LinearDescriptor& forward_of(D& d) {
  if constexpr (std::is_same_v<D, LinearDescriptor>) return d;
  else return d.forward;
}

// The mutations of a LinearDescriptor (directly, or as a backward's forward).
template <class D>
std::vector<DescMutator<D>> linear_mutators() {
  auto v = shape_mutators<D>(
      [](D& d) {
        std::vector<int64_t*> e;
        LinearDescriptor& fw = forward_of(d);
        add_extents(e, fw.x_shape);
        e.push_back(&fw.out_features);
        return e;
      },
      [](D& d) { return std::vector<Dims*>{&forward_of(d).x_shape}; });
  v.push_back({"desc.out_features_any", [](D& d, Fuzz& f) { forward_of(d).out_features = f.any_int(); }});
  v.push_back({"desc.flags_flipped", [](D& d, Fuzz& f) {
                 LinearDescriptor& fw = forward_of(d);
                 if (f.chance(0.5)) fw.has_bias = !fw.has_bias;
                 else fw.save_aux = !fw.save_aux;
               }});
  v.push_back({"desc.activation_any", [](D& d, Fuzz& f) {
                 LinearDescriptor& fw = forward_of(d);
                 fw.activation = static_cast<GemmActivation>(f.chance(0.5) ? f.range(0, 3) : f.range(0, 255));
                 if (f.chance(0.5)) fw.save_aux = saves_aux(fw.activation) || f.chance(0.3);
               }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { forward_of(d).dtype = f.any_dtype(); }});
  if constexpr (std::is_same_v<D, LinearBackwardDescriptor>) {
    v.push_back({"desc.needs_any", [](D& d, Fuzz& f) {  // any combination, none and need_db without a bias included
                   d.need_dx = f.chance(0.5);
                   d.need_dw = f.chance(0.5);
                   d.need_db = f.chance(0.5);
                 }});
    v.push_back({"desc.input_activation_any", [](D& d, Fuzz& f) {  // any chaining, invalid combinations included
                   d.input_activation = static_cast<GemmActivation>(f.chance(0.7) ? f.range(0, 3) : f.range(0, 255));
                   d.need_input_bias_grad = f.chance(0.5);
                 }});
  }
  return v;
}

// ---- invalid descriptors ----------------------------------------------------------------------
inline Dims rank_nine() {
  Dims d{1, 2, 3};
  d.rank = baracuda::kMaxRank + 1;
  return d;
}

inline std::vector<std::pair<const char*, MatmulDescriptor>> matmul_invalid() {
  using D = MatmulDescriptor;
  auto with = [](auto fn) {
    D d = matmul(DType::F32, {2, 3}, {3, 5});
    fn(d);
    return d;
  };
  constexpr double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  return {{"k_mismatch", with([](D& d) { d.b_shape = {4, 5}; })},
          {"k_mismatch_vector", with([](D& d) { d.b_shape = {4}; })},
          {"batch_not_broadcastable", with([](D& d) { d.a_shape = {2, 2, 3}, d.b_shape = {3, 3, 5}; })},
          {"a_rank_zero", with([](D& d) { d.a_shape = Dims{}; })},
          {"b_rank_zero", with([](D& d) { d.b_shape = Dims{}; })},
          {"a_rank_nine", with([](D& d) { d.a_shape = rank_nine(); })},
          {"b_rank_negative", with([](D& d) { d.b_shape.rank = -1; })},
          {"extent_negative", with([](D& d) { d.a_shape = {-2, 3}; })},
          {"alpha_nan", with([](D& d) { d.alpha = nan; })},
          {"alpha_inf", with([](D& d) { d.alpha = inf; })},
          {"beta_nan", with([](D& d) { d.has_c = true, d.c_shape = {2, 5}, d.beta = nan; })},
          {"beta_minus_inf", with([](D& d) { d.has_c = true, d.c_shape = {5}, d.beta = -inf; })},
          {"c_not_broadcastable", with([](D& d) { d.has_c = true, d.c_shape = {3, 5}; })},
          {"c_rank_above_out", with([](D& d) { d.has_c = true, d.c_shape = {2, 2, 5}; })},
          {"c_rank_nine", with([](D& d) { d.has_c = true, d.c_shape = rank_nine(); })},
          {"bias_with_vector_b", with([](D& d) { d.b_shape = {3}, d.has_bias = true; })},
          {"save_aux_relu", with([](D& d) { d.activation = GemmActivation::Relu, d.save_aux = true; })},
          {"save_aux_no_activation", with([](D& d) { d.save_aux = true; })},
          {"activation_unknown", with([](D& d) { d.activation = static_cast<GemmActivation>(9); })},
          {"dtype_i32", with([](D& d) { d.dtype = DType::I32; })},
          {"dtype_bool", with([](D& d) { d.dtype = DType::Bool; })},
          {"dtype_c64", with([](D& d) { d.dtype = DType::C64; })},
          {"dtype_unknown", with([](D& d) { d.dtype = static_cast<DType>(99); })},
          {"too_many_elements", with([](D& d) { d.a_shape = {int64_t{1} << 40, int64_t{1} << 30}, d.b_shape = {int64_t{1} << 30, 2}; })},
          {"batch_too_many_elements",
           with([](D& d) { d.a_shape = {int64_t{1} << 32, int64_t{1} << 32, 1, 3}, d.b_shape = {3, 5}; })}};
}

inline std::vector<std::pair<const char*, LinearDescriptor>> linear_invalid() {
  using D = LinearDescriptor;
  auto with = [](auto fn) {
    D d = linear(DType::F32, {2, 3}, 4);
    fn(d);
    return d;
  };
  return {{"x_rank_zero", with([](D& d) { d.x_shape = Dims{}; })},
          {"x_rank_nine", with([](D& d) { d.x_shape = rank_nine(); })},
          {"in_features_negative", with([](D& d) { d.x_shape = {2, -3}; })},
          {"rows_negative", with([](D& d) { d.x_shape = {-1, 3}; })},
          {"out_features_negative", with([](D& d) { d.out_features = -4; })},
          {"save_aux_relu", with([](D& d) { d.activation = GemmActivation::Relu, d.save_aux = true; })},
          {"save_aux_no_activation", with([](D& d) { d.save_aux = true; })},
          {"activation_unknown", with([](D& d) { d.activation = static_cast<GemmActivation>(200); })},
          {"dtype_i8", with([](D& d) { d.dtype = DType::I8; })},
          {"dtype_unknown", with([](D& d) { d.dtype = static_cast<DType>(77); })},
          {"too_many_elements", with([](D& d) { d.x_shape = {int64_t{1} << 40, int64_t{1} << 30}; })},
          {"weight_too_many_elements", with([](D& d) { d.x_shape = {2, int64_t{1} << 40}, d.out_features = int64_t{1} << 30; })}};
}

inline std::vector<std::pair<const char*, LinearBackwardDescriptor>> linear_backward_invalid() {
  std::vector<std::pair<const char*, LinearBackwardDescriptor>> v;
  for (const auto& [label, fw] : linear_invalid()) {
    LinearBackwardDescriptor d;
    d.forward = fw;
    d.need_db = d.forward.has_bias;
    v.push_back({label, d});
  }
  LinearBackwardDescriptor no_bias;
  no_bias.forward = linear(DType::F32, {2, 3}, 4, false);
  no_bias.need_db = true;  // there is no bias to differentiate
  v.push_back({"need_db_without_bias", no_bias});
  LinearBackwardDescriptor chained;
  chained.forward = linear(DType::F32, {2, 3}, 4);
  chained.input_activation = GemmActivation::GeluTanh;
  chained.need_dx = false;  // input_activation changes only dx
  v.push_back({"input_activation_without_dx", chained});
  chained.need_dx = true;
  chained.input_activation = GemmActivation::None;
  chained.need_input_bias_grad = true;  // nothing to chain
  v.push_back({"input_bias_grad_without_input_activation", chained});
  chained.input_activation = static_cast<GemmActivation>(17);
  v.push_back({"input_activation_unknown", chained});
  return v;
}

}  // namespace gemm_contract

// ---------------------------------------------------------------------------
struct MatmulTraits {
  using Plan = baracuda::MatmulPlan;
  using Desc = baracuda::MatmulDescriptor;
  using Args = baracuda::MatmulArgs;
  static constexpr const char* kName = "MatmulPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return gemm_contract::draw_matmul(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using gemm_contract::matmul;
    Desc rows = matmul(DType::F32, {0, 3}, {3, 4});  // M = 0
    Desc cols = matmul(DType::BF16, {2, 3}, {3, 0});  // N = 0, with c, bias and a saved GELU
    cols.has_c = true;
    cols.c_shape = {0};
    cols.has_bias = true;
    cols.activation = GemmActivation::GeluTanh;
    cols.save_aux = true;
    Desc batch = matmul(DType::F64, {0, 2, 3}, {3, 4});  // an empty batch, with c of out's shape
    batch.has_c = true;
    batch.c_shape = {0, 2, 4};
    Desc vec = matmul(DType::F16, {2, 0, 5}, {5});  // matrix-vector, empty rows
    vec.activation = GemmActivation::Gelu;
    return {rows, cols, batch, vec};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return gemm_contract::matmul_invalid(); }
  // CUDA: the exact-erf GELU pass, a broadcast c copied into out first, and
  // large enough problems that cuBLASLt's heuristics want scratch.
  static std::vector<Desc> workspace_descs() {
    using gemm_contract::matmul;
    Desc gelu = matmul(DType::BF16, {2, 64, 128}, {128, 96});
    gelu.has_bias = true;
    gelu.activation = GemmActivation::Gelu;
    gelu.save_aux = true;
    Desc addmm = matmul(DType::F32, {96, 80}, {80, 72});
    addmm.has_c = true;
    addmm.c_shape = {72};
    addmm.beta = 0.5;
    Desc big = matmul(DType::BF16, {512, 1024}, {1024, 512});
    return {gelu, addmm, big};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const Dims out = p.out_shape();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("a", d.dtype, d.a_shape, [](Args& a, const TensorMut& t) { a.a = t; }));
    v.push_back(input<Args>("b", d.dtype, d.b_shape, [](Args& a, const TensorMut& t) { a.b = t; }));
    v.push_back(optional_input<Args>(d.has_c, "c", d.dtype, d.has_c ? d.c_shape : out,
                                     [](Args& a, const TensorMut& t) { a.c = t; }));
    v.push_back(optional_input<Args>(d.has_bias, "bias", d.dtype, p.bias_shape(),
                                     [](Args& a, const TensorMut& t) { a.bias = t; }));
    // addmm_: out may be c itself when c has out's shape (not a broadcast c).
    const bool in_place = d.has_c && d.c_shape == out;
    v.push_back(output<Args>("out", d.dtype, out, [](Args& a, const TensorMut& t) { a.out = t; }, in_place ? "c" : nullptr));
    v.push_back(gemm_contract::optional_output<Args>(d.save_aux, "aux", d.dtype, out,
                                                     [](Args& a, const TensorMut& t) { a.aux = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return gemm_contract::matmul_mutators(); }
  static std::string describe(const Desc& d) { return gemm_contract::describe(d); }
};

struct LinearTraits {
  using Plan = baracuda::LinearPlan;
  using Desc = baracuda::LinearDescriptor;
  using Args = baracuda::LinearArgs;
  static constexpr const char* kName = "LinearPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return gemm_contract::draw_linear(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using gemm_contract::linear;
    return {linear(DType::F32, {0, 4}, 3),                                          // no rows
            linear(DType::BF16, {2, 3}, 0, true, GemmActivation::GeluTanh, true),  // no output features
            linear(DType::F64, {2, 0, 5}, 2, false, GemmActivation::Relu),          // empty leading dim
            linear(DType::F16, {0, 0}, 4, true, GemmActivation::Gelu, true)};       // no rows, K = 0
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return gemm_contract::linear_invalid(); }
  static std::vector<Desc> workspace_descs() {
    using gemm_contract::linear;
    return {linear(DType::BF16, {4, 32, 128}, 96, true, GemmActivation::Gelu, true),
            linear(DType::F32, {64, 256}, 128, true, GemmActivation::GeluTanh, true)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("x", d.dtype, d.x_shape, [](Args& a, const TensorMut& t) { a.x = t; }));
    v.push_back(input<Args>("weight", d.dtype, p.weight_shape(), [](Args& a, const TensorMut& t) { a.weight = t; }));
    v.push_back(optional_input<Args>(d.has_bias, "bias", d.dtype, p.bias_shape(),
                                     [](Args& a, const TensorMut& t) { a.bias = t; }));
    v.push_back(output<Args>("y", d.dtype, p.y_shape(), [](Args& a, const TensorMut& t) { a.y = t; }));
    v.push_back(gemm_contract::optional_output<Args>(d.save_aux, "aux", d.dtype, p.y_shape(),
                                                     [](Args& a, const TensorMut& t) { a.aux = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return gemm_contract::linear_mutators<Desc>(); }
  static std::string describe(const Desc& d) { return gemm_contract::describe(d); }
};

struct LinearBackwardTraits {
  using Plan = baracuda::LinearBackwardPlan;
  using Desc = baracuda::LinearBackwardDescriptor;
  using Args = baracuda::LinearBackwardArgs;
  static constexpr const char* kName = "LinearBackwardPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return gemm_contract::draw_linear_backward(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using gemm_contract::backward;
    using gemm_contract::linear;
    return {backward(linear(DType::F32, {3, 0}, 0, true, GemmActivation::GeluTanh)),        // K = 0, N = 0
            backward(linear(DType::BF16, {0, 4}, 5, true, GemmActivation::Gelu), true, false, false),  // no rows, dx only
            backward(linear(DType::F64, {2, 0, 4}, 0, true, GemmActivation::Relu)),         // no rows, N = 0
            backward(linear(DType::F16, {0, 3}, 2, false), true, false, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return gemm_contract::linear_backward_invalid(); }
  // CUDA: g = dy * act'(pre) lives in the workspace; the bias gradient's reduction may too.
  static std::vector<Desc> workspace_descs() {
    using gemm_contract::backward;
    using gemm_contract::linear;
    return {backward(linear(DType::BF16, {4, 16, 64}, 48, true, GemmActivation::GeluTanh)),
            backward(linear(DType::F32, {96, 80}, 64, true, GemmActivation::None), false, true, true),
            backward(linear(DType::BF16, {32, 128}, 96, true, GemmActivation::Gelu), true, false, false)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const baracuda::LinearDescriptor& fw = d.forward;
    const bool act = fw.activation != GemmActivation::None;
    const bool db = d.need_db && fw.has_bias;
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("dy", fw.dtype, p.y_shape(), [](Args& a, const TensorMut& t) { a.dy = t; }));
    // x feeds only dw, weight only dx, aux (pre-activation, or Relu's y) only the activation's gradient.
    v.push_back(optional_input<Args>(d.need_dw, "x", fw.dtype, fw.x_shape, [](Args& a, const TensorMut& t) { a.x = t; }));
    v.push_back(optional_input<Args>(d.need_dx, "weight", fw.dtype, p.weight_shape(),
                                     [](Args& a, const TensorMut& t) { a.weight = t; }));
    v.push_back(optional_input<Args>(act, "aux", fw.dtype, p.y_shape(), [](Args& a, const TensorMut& t) { a.aux = t; }));
    using gemm_contract::optional_output;
    v.push_back(optional_output<Args>(d.need_dx, "dx", fw.dtype, fw.x_shape, [](Args& a, const TensorMut& t) { a.dx = t; }));
    v.push_back(optional_output<Args>(d.need_dw, "dw", fw.dtype, p.weight_shape(), [](Args& a, const TensorMut& t) { a.dw = t; }));
    v.push_back(optional_output<Args>(db, "db", fw.dtype, p.bias_shape(), [](Args& a, const TensorMut& t) { a.db = t; }));
    // Chaining: the previous layer's saved pre-activation, and its bias gradient [K].
    const bool chained = d.input_activation != GemmActivation::None;
    v.push_back(optional_input<Args>(chained, "x_aux", fw.dtype, fw.x_shape, [](Args& a, const TensorMut& t) { a.x_aux = t; }));
    v.push_back(optional_output<Args>(d.need_input_bias_grad, "dbias_in", fw.dtype, Dims{fw.x_shape[fw.x_shape.rank - 1]},
                                      [](Args& a, const TensorMut& t) { a.dbias_in = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return gemm_contract::linear_mutators<Desc>(); }
  static std::string describe(const Desc& d) { return gemm_contract::describe(d); }
};

}  // namespace contract

// baracuda._C: the plan layer of the reduce, elementwise, gemm, softmax,
// norm and loss families (binders.hpp: the generic binders).
#include "binders.hpp"

namespace bpy {
namespace {

// ---- families ----------------------------------------------------------------------
void bind_common(nb::module_& m) {
  bind_enum<Backend>(m, "Backend", {{"CpuReference", Backend::CpuReference}, {"Bespoke", Backend::Bespoke},
                                    {"CuBlasLt", Backend::CuBlasLt}, {"CuDnn", Backend::CuDnn}});
  DescBinder<PlanPreference>(m, "PlanPreference")
      .field("backend", &PlanPreference::backend)
      .field("require_backend", &PlanPreference::require_backend)
      .field("require_deterministic", &PlanPreference::require_deterministic)
      .field("allow_reduced_precision", &PlanPreference::allow_reduced_precision)
      .field("variant", &PlanPreference::variant)
      .field("strict_workspace", &PlanPreference::strict_workspace);
}

void bind_reduce(nb::module_& m) {
  bind_enum<ReduceKind>(m, "ReduceKind",
                        {{"Sum", ReduceKind::Sum}, {"Mean", ReduceKind::Mean}, {"Max", ReduceKind::Max},
                         {"Min", ReduceKind::Min}, {"Prod", ReduceKind::Prod}, {"Norm2", ReduceKind::Norm2},
                         {"LogSumExp", ReduceKind::LogSumExp}, {"Var", ReduceKind::Var}, {"Std", ReduceKind::Std},
                         {"ArgMax", ReduceKind::ArgMax}, {"ArgMin", ReduceKind::ArgMin}});
  DescBinder<ReduceDescriptor>(m, "ReduceDescriptor")
      .field("kind", &ReduceDescriptor::kind)
      .field("dtype", &ReduceDescriptor::dtype)
      .field("shape", &ReduceDescriptor::shape)
      .field("axes", &ReduceDescriptor::axes)
      .field("keepdim", &ReduceDescriptor::keepdim)
      .field("correction", &ReduceDescriptor::correction);
  PlanBinder<ReducePlan, ReduceDescriptor, ReduceArgs>(m, "ReducePlan")
      .in("x", &ReduceArgs::x)
      .out("y", &ReduceArgs::y)
      .prop("output_shape", [](const ReducePlan& p) { return dims_to_py(p.output_shape()); })
      .prop("output_dtype", [](const ReducePlan& p) { return dtype_py_name(p.output_dtype()); });
  PlanBinder<ReduceBackwardPlan, ReduceDescriptor, ReduceBackwardArgs>(m, "ReduceBackwardPlan")
      .in("dy", &ReduceBackwardArgs::dy)
      .in("x", &ReduceBackwardArgs::x)
      .in("y", &ReduceBackwardArgs::y)
      .out("dx", &ReduceBackwardArgs::dx)
      .prop("output_shape", [](const ReduceBackwardPlan& p) { return dims_to_py(p.output_shape()); })
      .prop("needs_x", [](const ReduceBackwardPlan& p) { return p.needs_x(); })
      .prop("needs_y", [](const ReduceBackwardPlan& p) { return p.needs_y(); });
  DescBinder<ReduceToDescriptor>(m, "ReduceToDescriptor")
      .field("dtype", &ReduceToDescriptor::dtype)
      .field("shape", &ReduceToDescriptor::shape)
      .field("target", &ReduceToDescriptor::target);
  PlanBinder<ReduceToPlan, ReduceToDescriptor, ReduceToArgs>(m, "ReduceToPlan")
      .in("x", &ReduceToArgs::x)
      .out("y", &ReduceToArgs::y)
      .prop("output_shape", [](const ReduceToPlan& p) { return dims_to_py(p.output_shape()); });
}

void bind_elementwise(nb::module_& m) {
  bind_enum<UnaryOp>(m, "UnaryOp", {
#define BPY_ENUM_ROW(E, name, dom, params) {#E, UnaryOp::E},
                                       BARACUDA_UNARY_OPS(BPY_ENUM_ROW)
#undef BPY_ENUM_ROW
                                   });
  bind_enum<BinaryOp>(m, "BinaryOp", {
#define BPY_ENUM_ROW(E, name, dom, params) {#E, BinaryOp::E},
                                         BARACUDA_BINARY_OPS(BPY_ENUM_ROW)
#undef BPY_ENUM_ROW
                                     });
  // The ops' printed names ("exp", "gelu_tanh") are accepted as strings too.
#define BPY_NAME_ROW(E, name, dom, params) enum_names<UnaryOp>().push_back({name, UnaryOp::E});
  BARACUDA_UNARY_OPS(BPY_NAME_ROW)
#undef BPY_NAME_ROW
#define BPY_NAME_ROW(E, name, dom, params) enum_names<BinaryOp>().push_back({name, BinaryOp::E});
  BARACUDA_BINARY_OPS(BPY_NAME_ROW)
#undef BPY_NAME_ROW
  bind_enum<ElementwiseOperand::Kind>(m, "OperandKind", {{"Tensor", ElementwiseOperand::Kind::Tensor},
                                                          {"Scalar", ElementwiseOperand::Kind::Scalar},
                                                          {"Absent", ElementwiseOperand::Kind::Absent}});
  DescBinder<ElementwiseOperand>(m, "ElementwiseOperand")
      .field("kind", &ElementwiseOperand::kind)
      .field("dtype", &ElementwiseOperand::dtype)
      .field("shape", &ElementwiseOperand::shape)
      .cls
      .def_static("tensor", [](nb::handle dtype, nb::handle shape) {
        return ElementwiseOperand::tensor(dtype_from_py(dtype), dims_from_py(shape, "ElementwiseOperand.shape"));
      }, nb::arg("dtype"), nb::arg("shape"))
      .def_static("scalar", [](nb::handle dtype) { return ElementwiseOperand::scalar(dtype_from_py(dtype)); },
                  nb::arg("dtype") = "float64", "a host scalar: float64 (a Python float), int64 (int) or bool")
      .def_static("absent", &ElementwiseOperand::absent);
  DescBinder<UnaryDescriptor>(m, "UnaryDescriptor")
      .field("op", &UnaryDescriptor::op)
      .field("x", &UnaryDescriptor::x)
      .field("out_dtype", &UnaryDescriptor::out_dtype)
      .field("alpha", &UnaryDescriptor::alpha)
      .field("beta", &UnaryDescriptor::beta)
      .field("gamma", &UnaryDescriptor::gamma);
  DescBinder<BinaryDescriptor>(m, "BinaryDescriptor")
      .field("op", &BinaryDescriptor::op)
      .field("a", &BinaryDescriptor::a)
      .field("b", &BinaryDescriptor::b)
      .field("out_dtype", &BinaryDescriptor::out_dtype)
      .field("alpha", &BinaryDescriptor::alpha)
      .field("beta", &BinaryDescriptor::beta)
      .field("gamma", &BinaryDescriptor::gamma);
  auto ew_props = [](auto& b) {
    using P = typename std::remove_reference_t<decltype(b.cls)>::Type;
    b.prop("output_shape", [](const P& p) { return dims_to_py(p.output_shape()); })
        .prop("out_dtype", [](const P& p) { return dtype_py_name(p.out_dtype()); })
        .prop("common_dtype", [](const P& p) { return dtype_py_name(p.common_dtype()); })
        .prop("compute_dtype", [](const P& p) { return dtype_py_name(p.compute_dtype()); });
  };
  PlanBinder<UnaryPlan, UnaryDescriptor, UnaryArgs> up(m, "UnaryPlan");
  up.in("x", &UnaryArgs::x).out("y", &UnaryArgs::y);
  ew_props(up);
  PlanBinder<BinaryPlan, BinaryDescriptor, BinaryArgs> bp(m, "BinaryPlan");
  bp.in("a", &BinaryArgs::a)
      .in("b", &BinaryArgs::b)
      .scalar("a_value", &BinaryArgs::a_value)
      .scalar("b_value", &BinaryArgs::b_value)
      .out("out", &BinaryArgs::out);
  ew_props(bp);
  DescBinder<UnaryBackwardDescriptor>(m, "UnaryBackwardDescriptor")
      .field("forward", &UnaryBackwardDescriptor::forward)
      .field("from_output", &UnaryBackwardDescriptor::from_output);
  PlanBinder<UnaryBackwardPlan, UnaryBackwardDescriptor, UnaryBackwardArgs> ubp(m, "UnaryBackwardPlan");
  ubp.in("dy", &UnaryBackwardArgs::dy).in("x", &UnaryBackwardArgs::x).in("y", &UnaryBackwardArgs::y).out("dx", &UnaryBackwardArgs::dx);
  ew_props(ubp);
  DescBinder<BinaryBackwardDescriptor>(m, "BinaryBackwardDescriptor")
      .field("forward", &BinaryBackwardDescriptor::forward)
      .field("need_a", &BinaryBackwardDescriptor::need_a)
      .field("need_b", &BinaryBackwardDescriptor::need_b);
  PlanBinder<BinaryBackwardPlan, BinaryBackwardDescriptor, BinaryBackwardArgs> bbp(m, "BinaryBackwardPlan");
  bbp.in("dy", &BinaryBackwardArgs::dy)
      .in("a", &BinaryBackwardArgs::a)
      .in("b", &BinaryBackwardArgs::b)
      .scalar("a_value", &BinaryBackwardArgs::a_value)
      .scalar("b_value", &BinaryBackwardArgs::b_value)
      .out("da", &BinaryBackwardArgs::da)
      .out("db", &BinaryBackwardArgs::db);
  ew_props(bbp);
}

void bind_gemm(nb::module_& m) {
  bind_enum<GemmActivation>(m, "GemmActivation", {{"None_", GemmActivation::None}, {"Relu", GemmActivation::Relu},
                                                  {"GeluTanh", GemmActivation::GeluTanh}, {"Gelu", GemmActivation::Gelu}});
  enum_names<GemmActivation>().push_back({"none", GemmActivation::None});
  enum_names<GemmActivation>().push_back({"gelu_tanh", GemmActivation::GeluTanh});
  DescBinder<MatmulDescriptor>(m, "MatmulDescriptor")
      .field("dtype", &MatmulDescriptor::dtype)
      .field("a_shape", &MatmulDescriptor::a_shape)
      .field("b_shape", &MatmulDescriptor::b_shape)
      .field("has_c", &MatmulDescriptor::has_c)
      .field("c_shape", &MatmulDescriptor::c_shape)
      .field("alpha", &MatmulDescriptor::alpha)
      .field("beta", &MatmulDescriptor::beta)
      .field("has_bias", &MatmulDescriptor::has_bias)
      .field("activation", &MatmulDescriptor::activation)
      .field("save_aux", &MatmulDescriptor::save_aux);
  PlanBinder<MatmulPlan, MatmulDescriptor, MatmulArgs>(m, "MatmulPlan")
      .in("a", &MatmulArgs::a)
      .in("b", &MatmulArgs::b)
      .in("c", &MatmulArgs::c)
      .in("bias", &MatmulArgs::bias)
      .out("out", &MatmulArgs::out)
      .out("aux", &MatmulArgs::aux)
      .prop("out_shape", [](const MatmulPlan& p) { return dims_to_py(p.out_shape()); })
      .prop("m", [](const MatmulPlan& p) { return p.m(); })
      .prop("n", [](const MatmulPlan& p) { return p.n(); })
      .prop("k", [](const MatmulPlan& p) { return p.k(); });
  DescBinder<LinearDescriptor>(m, "LinearDescriptor")
      .field("dtype", &LinearDescriptor::dtype)
      .field("x_shape", &LinearDescriptor::x_shape)
      .field("out_features", &LinearDescriptor::out_features)
      .field("has_bias", &LinearDescriptor::has_bias)
      .field("activation", &LinearDescriptor::activation)
      .field("save_aux", &LinearDescriptor::save_aux);
  PlanBinder<LinearPlan, LinearDescriptor, LinearArgs>(m, "LinearPlan")
      .in("x", &LinearArgs::x)
      .in("weight", &LinearArgs::weight)
      .in("bias", &LinearArgs::bias)
      .out("y", &LinearArgs::y)
      .out("aux", &LinearArgs::aux)
      .prop("y_shape", [](const LinearPlan& p) { return dims_to_py(p.y_shape()); })
      .prop("weight_shape", [](const LinearPlan& p) { return dims_to_py(p.weight_shape()); });
  DescBinder<LinearBackwardDescriptor>(m, "LinearBackwardDescriptor")
      .field("forward", &LinearBackwardDescriptor::forward)
      .field("need_dx", &LinearBackwardDescriptor::need_dx)
      .field("need_dw", &LinearBackwardDescriptor::need_dw)
      .field("need_db", &LinearBackwardDescriptor::need_db)
      .field("input_activation", &LinearBackwardDescriptor::input_activation)
      .field("need_input_bias_grad", &LinearBackwardDescriptor::need_input_bias_grad)
      .field("accumulate", &LinearBackwardDescriptor::accumulate);
  PlanBinder<LinearBackwardPlan, LinearBackwardDescriptor, LinearBackwardArgs>(m, "LinearBackwardPlan")
      .in("dy", &LinearBackwardArgs::dy)
      .in("x", &LinearBackwardArgs::x)
      .in("weight", &LinearBackwardArgs::weight)
      .in("aux", &LinearBackwardArgs::aux)
      .in("x_aux", &LinearBackwardArgs::x_aux)
      .out("dx", &LinearBackwardArgs::dx)
      .out("dw", &LinearBackwardArgs::dw)
      .out("db", &LinearBackwardArgs::db)
      .out("dbias_in", &LinearBackwardArgs::dbias_in);
}

void bind_softmax(nb::module_& m) {
  DescBinder<SoftmaxDescriptor>(m, "SoftmaxDescriptor")
      .field("dtype", &SoftmaxDescriptor::dtype)
      .field("shape", &SoftmaxDescriptor::shape)
      .field("axis", &SoftmaxDescriptor::axis)
      .field("log", &SoftmaxDescriptor::log)
      .field("scale", &SoftmaxDescriptor::scale);
  PlanBinder<SoftmaxPlan, SoftmaxDescriptor, SoftmaxArgs>(m, "SoftmaxPlan").in("x", &SoftmaxArgs::x).out("y", &SoftmaxArgs::y);
  DescBinder<SoftmaxBackwardDescriptor>(m, "SoftmaxBackwardDescriptor")
      .field("dtype", &SoftmaxBackwardDescriptor::dtype)
      .field("shape", &SoftmaxBackwardDescriptor::shape)
      .field("axis", &SoftmaxBackwardDescriptor::axis)
      .field("log", &SoftmaxBackwardDescriptor::log)
      .field("scale", &SoftmaxBackwardDescriptor::scale);
  PlanBinder<SoftmaxBackwardPlan, SoftmaxBackwardDescriptor, SoftmaxBackwardArgs>(m, "SoftmaxBackwardPlan")
      .in("y", &SoftmaxBackwardArgs::y)
      .in("dy", &SoftmaxBackwardArgs::dy)
      .out("dx", &SoftmaxBackwardArgs::dx);
}

void bind_norm(nb::module_& m) {
  bind_enum<NormKind>(m, "NormKind", {{"LayerNorm", NormKind::LayerNorm}, {"RMSNorm", NormKind::RMSNorm}});
  enum_names<NormKind>().push_back({"layer_norm", NormKind::LayerNorm});
  enum_names<NormKind>().push_back({"rms_norm", NormKind::RMSNorm});
  DescBinder<NormDescriptor>(m, "NormDescriptor")
      .field("kind", &NormDescriptor::kind)
      .field("dtype", &NormDescriptor::dtype)
      .field("shape", &NormDescriptor::shape)
      .field("normalized_dims", &NormDescriptor::normalized_dims)
      .field("has_weight", &NormDescriptor::has_weight)
      .field("has_bias", &NormDescriptor::has_bias)
      .field("eps", &NormDescriptor::eps)
      .field("zero_centered_weight", &NormDescriptor::zero_centered_weight)
      .field("residual", &NormDescriptor::residual)
      .field("save_stats", &NormDescriptor::save_stats);
  PlanBinder<NormPlan, NormDescriptor, NormArgs>(m, "NormPlan")
      .in("x", &NormArgs::x)
      .in("residual", &NormArgs::residual)
      .in("weight", &NormArgs::weight)
      .in("bias", &NormArgs::bias)
      .out("y", &NormArgs::y)
      .out("h", &NormArgs::h)
      .out("mean", &NormArgs::mean)
      .out("rstd", &NormArgs::rstd)
      .prop("weight_shape", [](const NormPlan& p) { return dims_to_py(p.weight_shape()); })
      .prop("stats_shape", [](const NormPlan& p) { return dims_to_py(p.stats_shape()); })
      .prop("stats_dtype", [](const NormPlan& p) { return dtype_py_name(p.stats_dtype()); });
  DescBinder<NormBackwardDescriptor>(m, "NormBackwardDescriptor")
      .field("forward", &NormBackwardDescriptor::forward)
      .field("need_dx", &NormBackwardDescriptor::need_dx)
      .field("need_dweight", &NormBackwardDescriptor::need_dweight)
      .field("need_dbias", &NormBackwardDescriptor::need_dbias)
      .field("residual_grad", &NormBackwardDescriptor::residual_grad);
  PlanBinder<NormBackwardPlan, NormBackwardDescriptor, NormBackwardArgs>(m, "NormBackwardPlan")
      .in("dy", &NormBackwardArgs::dy)
      .in("x", &NormBackwardArgs::x)
      .in("weight", &NormBackwardArgs::weight)
      .in("mean", &NormBackwardArgs::mean)
      .in("rstd", &NormBackwardArgs::rstd)
      .in("dh_in", &NormBackwardArgs::dh_in)
      .out("dx", &NormBackwardArgs::dx)
      .out("dweight", &NormBackwardArgs::dweight)
      .out("dbias", &NormBackwardArgs::dbias)
      .prop("computes_dweight", [](const NormBackwardPlan& p) { return p.computes_dweight(); })
      .prop("computes_dbias", [](const NormBackwardPlan& p) { return p.computes_dbias(); });
}

void bind_loss(nb::module_& m) {
  bind_enum<LossReduction>(m, "LossReduction",
                           {{"None_", LossReduction::None}, {"Mean", LossReduction::Mean}, {"Sum", LossReduction::Sum}});
  enum_names<LossReduction>().push_back({"none", LossReduction::None});
  bind_enum<CrossEntropyTarget>(m, "CrossEntropyTarget",
                                {{"Index", CrossEntropyTarget::Index}, {"Probs", CrossEntropyTarget::Probs}});
  DescBinder<CrossEntropyDescriptor>(m, "CrossEntropyDescriptor")
      .field("dtype", &CrossEntropyDescriptor::dtype)
      .field("rows", &CrossEntropyDescriptor::rows)
      .field("classes", &CrossEntropyDescriptor::classes)
      .field("target", &CrossEntropyDescriptor::target)
      .field("index_dtype", &CrossEntropyDescriptor::index_dtype)
      .field("ignore_index", &CrossEntropyDescriptor::ignore_index)
      .field("label_smoothing", &CrossEntropyDescriptor::label_smoothing)
      .field("has_weight", &CrossEntropyDescriptor::has_weight)
      .field("reduction", &CrossEntropyDescriptor::reduction)
      .field("z_loss", &CrossEntropyDescriptor::z_loss)
      .field("loss_dtype", &CrossEntropyDescriptor::loss_dtype)
      .field("with_grad", &CrossEntropyDescriptor::with_grad);
  PlanBinder<CrossEntropyPlan, CrossEntropyDescriptor, CrossEntropyArgs>(m, "CrossEntropyPlan")
      .in("logits", &CrossEntropyArgs::logits)
      .in("target", &CrossEntropyArgs::target)
      .in("weight", &CrossEntropyArgs::weight)
      .out("loss", &CrossEntropyArgs::loss)
      .out("lse", &CrossEntropyArgs::lse)
      .in("dloss", &CrossEntropyArgs::dloss)
      .out("dlogits", &CrossEntropyArgs::dlogits)
      .prop("loss_shape", [](const CrossEntropyPlan& p) { return dims_to_py(p.loss_shape()); })
      .prop("lse_dtype", [](const CrossEntropyPlan& p) { return dtype_py_name(p.lse_dtype()); });
  DescBinder<CrossEntropyBackwardDescriptor>(m, "CrossEntropyBackwardDescriptor")
      .field("forward", &CrossEntropyBackwardDescriptor::forward);
  PlanBinder<CrossEntropyBackwardPlan, CrossEntropyBackwardDescriptor, CrossEntropyBackwardArgs>(
      m, "CrossEntropyBackwardPlan")
      .in("logits", &CrossEntropyBackwardArgs::logits)
      .in("target", &CrossEntropyBackwardArgs::target)
      .in("weight", &CrossEntropyBackwardArgs::weight)
      .in("lse", &CrossEntropyBackwardArgs::lse)
      .in("dloss", &CrossEntropyBackwardArgs::dloss)
      .out("dlogits", &CrossEntropyBackwardArgs::dlogits);
}

}  // namespace

void bind_plans(nb::module_& m) {
  bind_common(m);
  bind_reduce(m);
  bind_elementwise(m);
  bind_gemm(m);
  bind_softmax(m);
  bind_norm(m);
  bind_loss(m);
}

}  // namespace bpy

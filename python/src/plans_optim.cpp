// baracuda._C: the plan layer of the optimizers other than Adam (SGD, Lion,
// Adafactor), the gradient utilities (global norm, clip_grad_norm_,
// non-finite check and unscale, multi-tensor scale / zero), sampling
// (randperm, multinomial), the ternary elementwise ops (+ their backward) and
// the factories (fill / arange / linspace). binders.hpp: the generic binders
// (ListPlanBinder for the plans over tensor lists).
#include "binders.hpp"

namespace bpy {
namespace {

// The fields every optimizer descriptor shares (OptimizerCommon).
template <class D>
DescBinder<D>& optimizer_common(DescBinder<D>& b) {
  b.template field<std::vector<Dims>>("shapes", &D::shapes)
      .template field<DType>("param_dtype", &D::param_dtype)
      .template field<bool>("master_weights", &D::master_weights)
      .template field<bool>("stochastic_rounding", &D::stochastic_rounding)
      .template field<bool>("maximize", &D::maximize)
      .template field<bool>("device_scalars", &D::device_scalars)
      .template field<bool>("has_grad_scale", &D::has_grad_scale)
      .template field<bool>("has_found_inf", &D::has_found_inf)
      .template field<double>("weight_decay", &D::weight_decay);
  return b;
}

void bind_optimizers(nb::module_& m) {
  {
    DescBinder<SgdDescriptor> b(m, "SgdDescriptor");
    optimizer_common(b).field("momentum", &SgdDescriptor::momentum)
        .field("dampening", &SgdDescriptor::dampening)
        .field("nesterov", &SgdDescriptor::nesterov);
    ListPlanBinder<SgdPlan, SgdDescriptor, SgdArgs>(m, "SgdPlan")
        .list("params", &SgdArgs::params)
        .list("grads", &SgdArgs::grads)
        .list("momentum_buffer", &SgdArgs::momentum_buffer)
        .list("master", &SgdArgs::master)
        .value("buffers_initialized", &SgdArgs::buffers_initialized)
        .value("lr", &SgdArgs::lr)
        .tensor("lr_tensor", &SgdArgs::lr_tensor)
        .tensor("grad_scale", &SgdArgs::grad_scale)
        .tensor("found_inf", &SgdArgs::found_inf)
        .seed("seed", &SgdArgs::seed);
  }
  {
    DescBinder<LionDescriptor> b(m, "LionDescriptor");
    optimizer_common(b).field("beta1", &LionDescriptor::beta1).field("beta2", &LionDescriptor::beta2);
    ListPlanBinder<LionPlan, LionDescriptor, LionArgs>(m, "LionPlan")
        .list("params", &LionArgs::params)
        .list("grads", &LionArgs::grads)
        .list("exp_avg", &LionArgs::exp_avg)
        .list("master", &LionArgs::master)
        .value("lr", &LionArgs::lr)
        .tensor("lr_tensor", &LionArgs::lr_tensor)
        .tensor("grad_scale", &LionArgs::grad_scale)
        .tensor("found_inf", &LionArgs::found_inf)
        .seed("seed", &LionArgs::seed);
  }
  {
    using D = AdafactorDescriptor;
    using A = AdafactorArgs;
    DescBinder<D>(m, "AdafactorDescriptor")
        .field("dtype", &D::dtype)
        .field("shapes", &D::shapes)
        .field("lr", &D::lr)
        .field("beta2_decay", &D::beta2_decay)
        .field("eps1", &D::eps1)
        .field("eps2", &D::eps2)
        .field("d", &D::d)
        .field("weight_decay", &D::weight_decay)
        .field("maximize", &D::maximize)
        .field("device_scalars", &D::device_scalars)
        .field("out_of_place", &D::out_of_place);
    ListPlanBinder<AdafactorPlan, D, A> b(m, "AdafactorPlan");
    b.list("params", &A::params)
        .list("grads", &A::grads)
        .list("row_vars", &A::row_vars)
        .list("col_vars", &A::col_vars)
        .list("variances", &A::variances)
        .value("step", &A::step)
        .tensor("step_tensor", &A::step_tensor)
        .tensor("lr_tensor", &A::lr_tensor)
        .list("params_out", &A::params_out)
        .list("row_vars_out", &A::row_vars_out)
        .list("col_vars_out", &A::col_vars_out)
        .list("variances_out", &A::variances_out)
        .tensor("step_out", &A::step_out)
        .prop("eps1", [](const AdafactorPlan& p) { return p.eps1(); });
    auto index = [](const AdafactorPlan& p, int64_t i) {
      if (i < 0 || static_cast<size_t>(i) >= p.descriptor().shapes.size())
        throw nb::index_error("AdafactorPlan: parameter index out of range");
      return static_cast<size_t>(i);
    };
    b.cls.def("factored", [index](const AdafactorPlan& p, int64_t i) { return p.factored(index(p, i)); }, nb::arg("i"))
        .def(
            "row_var_shape",
            [index](const AdafactorPlan& p, int64_t i) { return dims_to_py(p.row_var_shape(index(p, i))); },
            nb::arg("i"))
        .def(
            "col_var_shape",
            [index](const AdafactorPlan& p, int64_t i) { return dims_to_py(p.col_var_shape(index(p, i))); },
            nb::arg("i"));
  }
}

void bind_grad_utils(nb::module_& m) {
  bind_enum<NormType>(m, "NormType", {{"L2", NormType::L2}, {"Inf", NormType::Inf}});
  DescBinder<TensorListDescriptor>(m, "TensorListDescriptor")
      .field("shapes", &TensorListDescriptor::shapes)
      .field("dtype", &TensorListDescriptor::dtype);
  {
    using D = GlobalNormDescriptor;
    DescBinder<D>(m, "GlobalNormDescriptor")
        .field<std::vector<Dims>>("shapes", &D::shapes)
        .field<DType>("dtype", &D::dtype)
        .field("norm_type", &D::norm_type);
    ListPlanBinder<GlobalNormPlan, D, GlobalNormArgs>(m, "GlobalNormPlan")
        .list("tensors", &GlobalNormArgs::tensors)
        .tensor("out", &GlobalNormArgs::out);
  }
  {
    using D = ClipGradNormDescriptor;
    DescBinder<D>(m, "ClipGradNormDescriptor")
        .field<std::vector<Dims>>("shapes", &D::shapes)
        .field<DType>("dtype", &D::dtype)
        .field("norm_type", &D::norm_type)
        .field("max_norm", &D::max_norm)
        .field("has_found_inf", &D::has_found_inf);
    ListPlanBinder<ClipGradNormPlan, D, ClipGradNormArgs>(m, "ClipGradNormPlan")
        .list("grads", &ClipGradNormArgs::grads)
        .tensor("total_norm", &ClipGradNormArgs::total_norm)
        .tensor("found_inf", &ClipGradNormArgs::found_inf);
  }
  ListPlanBinder<NonFiniteCheckUnscalePlan, TensorListDescriptor, NonFiniteCheckUnscaleArgs>(
      m, "NonFiniteCheckUnscalePlan")
      .list("grads", &NonFiniteCheckUnscaleArgs::grads)
      .tensor("inv_scale", &NonFiniteCheckUnscaleArgs::inv_scale)
      .tensor("found_inf", &NonFiniteCheckUnscaleArgs::found_inf);
  {
    using D = MultiTensorScaleDescriptor;
    DescBinder<D>(m, "MultiTensorScaleDescriptor")
        .field<std::vector<Dims>>("shapes", &D::shapes)
        .field<DType>("dtype", &D::dtype)
        .field("device_scalar", &D::device_scalar);
    ListPlanBinder<MultiTensorScalePlan, D, MultiTensorScaleArgs>(m, "MultiTensorScalePlan")
        .list("tensors", &MultiTensorScaleArgs::tensors)
        .value("scale", &MultiTensorScaleArgs::scale)
        .tensor("scale_tensor", &MultiTensorScaleArgs::scale_tensor);
  }
  ListPlanBinder<MultiTensorZeroPlan, TensorListDescriptor, MultiTensorZeroArgs>(m, "MultiTensorZeroPlan")
      .list("tensors", &MultiTensorZeroArgs::tensors);
}

void bind_sampling(nb::module_& m) {
  DescBinder<RandpermDescriptor>(m, "RandpermDescriptor")
      .field("n", &RandpermDescriptor::n)
      .field("dtype", &RandpermDescriptor::dtype)
      .field("device_offset", &RandpermDescriptor::device_offset);
  PlanBinder<RandpermPlan, RandpermDescriptor, RandpermArgs>(m, "RandpermPlan")
      .seed("seed", &RandpermArgs::seed)
      .out("out", &RandpermArgs::out)
      .out("offset", &RandpermArgs::offset)
      .prop("out_shape", [](const RandpermPlan& p) { return dims_to_py(p.out_shape()); });
  using D = MultinomialDescriptor;
  DescBinder<D>(m, "MultinomialDescriptor")
      .field("dtype", &D::dtype)
      .field("probs_shape", &D::probs_shape)
      .field("num_samples", &D::num_samples)
      .field("replacement", &D::replacement)
      .field("out_dtype", &D::out_dtype)
      .field("device_offset", &D::device_offset);
  PlanBinder<MultinomialPlan, D, MultinomialArgs> b(m, "MultinomialPlan");
  b.seed("seed", &MultinomialArgs::seed)
      .in("probs", &MultinomialArgs::probs)
      .out("out", &MultinomialArgs::out)
      .out("offset", &MultinomialArgs::offset)
      .prop("out_shape", [](const MultinomialPlan& p) { return dims_to_py(p.out_shape()); })
      .prop("rows", [](const MultinomialPlan& p) { return p.rows(); })
      .prop("categories", [](const MultinomialPlan& p) { return p.categories(); });
  b.cls.def(
      "check_probs",
      [](const MultinomialPlan& p, nb::handle ws_arg, nb::handle stream_arg) {
        const Stream s = resolve_stream(stream_arg, p.device(), {});
        std::optional<ScopedWorkspace> own;
        std::optional<View> keep;
        if (ws_arg.is_none() && p.workspace_size() > 0 && !s.is_cpu())
          raise_invalid("MultinomialPlan.check_probs: pass the workspace the run() used");
        const Workspace ws = workspace_from_py(ws_arg, 0, s, own, keep);
        Status st;
        {
          nb::gil_scoped_release release;
          st = p.check_probs(s, ws);
        }
        check(st);
      },
      nb::arg("workspace") = nb::none(), nb::arg("stream") = nb::none(),
      "The lowest invalid row of probabilities the last run() with this workspace met (CUDA: synchronizes the "
      "stream; the CPU run() already raised).");
}

void bind_ternary_and_factories(nb::module_& m) {
  bind_enum<TernaryOp>(m, "TernaryOp", {
#define BPY_ENUM_ROW(E, name, dom, params) {#E, TernaryOp::E},
                                           BARACUDA_TERNARY_OPS(BPY_ENUM_ROW)
#undef BPY_ENUM_ROW
                                       });
#define BPY_NAME_ROW(E, name, dom, params) enum_names<TernaryOp>().push_back({name, TernaryOp::E});
  BARACUDA_TERNARY_OPS(BPY_NAME_ROW)
#undef BPY_NAME_ROW
  DescBinder<TernaryDescriptor>(m, "TernaryDescriptor")
      .field("op", &TernaryDescriptor::op)
      .field("a", &TernaryDescriptor::a)
      .field("b", &TernaryDescriptor::b)
      .field("c", &TernaryDescriptor::c)
      .field("out_dtype", &TernaryDescriptor::out_dtype)
      .field("alpha", &TernaryDescriptor::alpha)
      .field("beta", &TernaryDescriptor::beta)
      .field("gamma", &TernaryDescriptor::gamma);
  auto ew_props = [](auto& b) {
    using P = typename std::remove_reference_t<decltype(b.cls)>::Type;
    b.prop("output_shape", [](const P& p) { return dims_to_py(p.output_shape()); })
        .prop("out_dtype", [](const P& p) { return dtype_py_name(p.out_dtype()); })
        .prop("common_dtype", [](const P& p) { return dtype_py_name(p.common_dtype()); })
        .prop("compute_dtype", [](const P& p) { return dtype_py_name(p.compute_dtype()); });
  };
  PlanBinder<TernaryPlan, TernaryDescriptor, TernaryArgs> tp(m, "TernaryPlan");
  tp.in("a", &TernaryArgs::a)
      .in("b", &TernaryArgs::b)
      .in("c", &TernaryArgs::c)
      .scalar("a_value", &TernaryArgs::a_value)
      .scalar("b_value", &TernaryArgs::b_value)
      .scalar("c_value", &TernaryArgs::c_value)
      .out("out", &TernaryArgs::out);
  ew_props(tp);
  DescBinder<TernaryBackwardDescriptor>(m, "TernaryBackwardDescriptor")
      .field("forward", &TernaryBackwardDescriptor::forward)
      .field("need_a", &TernaryBackwardDescriptor::need_a)
      .field("need_b", &TernaryBackwardDescriptor::need_b)
      .field("need_c", &TernaryBackwardDescriptor::need_c);
  PlanBinder<TernaryBackwardPlan, TernaryBackwardDescriptor, TernaryBackwardArgs> tbp(m, "TernaryBackwardPlan");
  tbp.in("dy", &TernaryBackwardArgs::dy)
      .in("a", &TernaryBackwardArgs::a)
      .in("b", &TernaryBackwardArgs::b)
      .in("c", &TernaryBackwardArgs::c)
      .scalar("a_value", &TernaryBackwardArgs::a_value)
      .scalar("b_value", &TernaryBackwardArgs::b_value)
      .scalar("c_value", &TernaryBackwardArgs::c_value)
      .out("da", &TernaryBackwardArgs::da)
      .out("db", &TernaryBackwardArgs::db)
      .out("dc", &TernaryBackwardArgs::dc);
  ew_props(tbp);

  bind_enum<FactoryOp>(m, "FactoryOp",
                       {{"Fill", FactoryOp::Fill}, {"Arange", FactoryOp::Arange}, {"Linspace", FactoryOp::Linspace}});
  {
    DescBinder<FactoryDescriptor> b(m, "FactoryDescriptor");
    b.field("op", &FactoryDescriptor::op)
        .field("dtype", &FactoryDescriptor::dtype)
        .field("shape", &FactoryDescriptor::shape);
    scalar_field(b, "value", &FactoryDescriptor::value);
    scalar_field(b, "start", &FactoryDescriptor::start);
    scalar_field(b, "end", &FactoryDescriptor::end);
    scalar_field(b, "step", &FactoryDescriptor::step);
    b.field("steps", &FactoryDescriptor::steps);
  }
  PlanBinder<FactoryPlan, FactoryDescriptor, FactoryArgs>(m, "FactoryPlan")
      .out("out", &FactoryArgs::out)
      .prop("output_shape", [](const FactoryPlan& p) { return dims_to_py(p.output_shape()); })
      .prop("out_dtype", [](const FactoryPlan& p) { return dtype_py_name(p.out_dtype()); });
}

}  // namespace

void bind_plans_optim(nb::module_& m) {
  bind_optimizers(m);
  bind_grad_utils(m);
  bind_sampling(m);
  bind_ternary_and_factories(m);
}

}  // namespace bpy

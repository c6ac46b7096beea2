// baracuda._C: the plan layer of advanced indexing (IndexGetPlan / IndexPutPlan,
// torch's x[i, :, j] and index_put_), the grouped linear (mixture-of-experts)
// GEMMs and the fp8 GEMM (ScaledMatmulPlan, torch._scaled_mm).
//
// Advanced indexing's descriptor holds per-dim arrays (AdvancedIndex), bound
// as one Python field `index_shapes`: a list with one entry per dim of self,
// None for a full slice `:` or the index tensor's shape. Its run() takes
// `indices=[t0, None, t2, ...]` the same way (a list, None = slice); the other
// tensors by keyword as every plan (IndexPutArgs' `self` is `input=`).
#include "binders.hpp"

namespace bpy {
namespace {

// ---- advanced indexing -------------------------------------------------------------------
nb::object index_shapes_to_py(const AdvancedIndex& ix) {
  nb::list l;
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    if (ix.has_index[d]) l.append(dims_to_py(ix.index_shape[d]));
    else l.append(nb::none());
  }
  return l;
}

void index_shapes_from_py(AdvancedIndex& ix, nb::handle h, const std::string& what) {
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    throw nb::type_error((what + ": expected a list with one entry per dim: None (a full slice) or a shape").c_str());
  const size_t n = nb::len(h);
  if (n > static_cast<size_t>(kMaxRank))
    raise_invalid(what + ": " + std::to_string(n) + " entries, more than the rank limit " + std::to_string(kMaxRank));
  for (int d = 0; d < kMaxRank; ++d) {
    ix.has_index[d] = false;
    ix.index_shape[d] = Dims{};
  }
  int d = 0;
  for (nb::handle e : h) {
    if (!e.is_none()) {
      ix.has_index[d] = true;
      ix.index_shape[d] = dims_from_py(e, what.c_str());
    }
    ++d;
  }
}

template <class D>
void bind_advanced_index_fields(DescBinder<D>& b, const char* cname) {
  b.field("dtype", &D::dtype);
  const std::string w = std::string(cname) + ".";
  desc_custom_field<D>(
      b, "index_dtype",
      [w](D& d, nb::handle h) { d.index.index_dtype = from_py<DType>(h, (w + "index_dtype").c_str()); },
      [](const D& d) { return to_py(d.index.index_dtype); });
  desc_custom_field<D>(
      b, "self_shape",
      [w](D& d, nb::handle h) { d.index.self_shape = from_py<Dims>(h, (w + "self_shape").c_str()); },
      [](const D& d) { return to_py(d.index.self_shape); });
  desc_custom_field<D>(
      b, "index_shapes", [w](D& d, nb::handle h) { index_shapes_from_py(d.index, h, w + "index_shapes"); },
      [](const D& d) { return index_shapes_to_py(d.index); });
}

// run() / can_implement() / sku_for() of the two advanced-indexing plans:
// named tensors plus the `indices` list.
template <class P, class A>
struct AdvancedRun {
  struct In {
    const char* name;
    TensorRef A::*ref;
  };
  std::vector<In> ins;
  TensorMut A::*out;

  nb::object call(const P& p, nb::handle stream_arg, nb::handle ws_arg, const nb::kwargs& kw, PlanCall call) const {
    const char* verb = call == PlanCall::Run ? ".run: " : call == PlanCall::CanImplement ? ".can_implement: "
                                                                                            : ".sku_for: ";
    const std::string pre = std::string(p.name()) + verb;
    std::vector<std::pair<TensorRef A::*, nb::handle>> given;
    nb::handle indices, out_h;
    std::vector<nb::handle> inputs;
    for (auto [k, v] : kw) {
      const std::string key = nb::cast<std::string>(k);
      bool found = false;
      if (key == "indices") {
        indices = v;
        found = true;
        if (!v.is_none() && nb::isinstance<nb::sequence>(v))
          for (nb::handle t : v)
            if (!t.is_none()) inputs.push_back(t);
      } else if (key == "out") {
        out_h = v;
        found = true;
      } else {
        for (const In& i : ins)
          if (key == i.name) {
            found = true;
            if (!v.is_none()) {
              given.push_back({i.ref, v});
              inputs.push_back(v);
            }
          }
      }
      if (!found) {
        std::string all;
        for (const In& i : ins) all += std::string(i.name) + ", ";
        throw nb::type_error((pre + "unknown argument '" + key + "' (arguments: " + all +
                              "indices, out, stream, workspace)")
                                 .c_str());
      }
    }
    if (p.empty()) check(Status(StatusCode::InvalidProblem, std::string(p.name()) + ": the plan is empty"));
    const Stream s = resolve_stream(stream_arg, p.device(), inputs);
    A args{};
    std::vector<View> keep;
    keep.reserve(given.size() + kMaxRank + 1);
    for (const auto& [ref, v] : given) {
      const char* name = "";
      for (const In& i : ins)
        if (i.ref == ref) name = i.name;
      keep.push_back(import_fast(v, s, (pre + name).c_str()));
      args.*ref = TensorRef(keep.back().view);
    }
    import_tensor_list(indices, s, pre + "indices", keep, args.indices, kMaxRank);
    if (out_h.is_valid() && !out_h.is_none()) {
      keep.push_back(import_fast(out_h, s, (pre + "out").c_str()));
      if (keep.back().read_only) raise_invalid(pre + "out: the tensor is read-only (an output must be writable)");
      args.*out = keep.back().view;
    }
    if (call == PlanCall::CanImplement) {
      check(p.can_implement(args));
      return nb::bool_(true);
    }
    std::optional<ScopedWorkspace> own_ws;
    std::optional<View> ws_view;
    const Workspace ws = workspace_from_py(ws_arg, p.workspace_size(), s, own_ws, ws_view);
    if (call == PlanCall::SkuFor) return sku_to_py(unwrap(p.sku_for(s, ws, args)));
    Status st;
    {
      nb::gil_scoped_release release;
      st = p.run(s, ws, args);
    }
    check(st);
    return nb::none();
  }
};

template <class P, class D, class A>
nb::class_<P> bind_advanced_plan(nb::module_& m, const char* name, AdvancedRun<P, A> r) {
  nb::class_<P> cls(m, name);
  def_plan_common<P, D>(cls);
  cls.def_prop_ro("out_shape", [](const P& p) { return dims_to_py(p.out_shape()); });
  cls.def_prop_ro("broadcast_shape", [](const P& p) { return dims_to_py(p.broadcast_shape()); });
  auto rr = std::make_shared<AdvancedRun<P, A>>(std::move(r));
  cls.def(
      "run",
      [rr](const P& p, nb::handle stream, nb::handle workspace, nb::kwargs kw) {
        rr->call(p, stream, workspace, kw, PlanCall::Run);
      },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("workspace") = nb::none(), nb::arg("kwargs"),
      "Runs the plan: tensors by keyword, `indices` a list with one entry per dim (None = a full slice).");
  cls.def(
      "can_implement",
      [rr](const P& p, nb::handle stream, nb::kwargs kw) {
        return rr->call(p, stream, nb::none(), kw, PlanCall::CanImplement);
      },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("kwargs"),
      "run()'s checks of these tensors without running: True, or the error run() would raise.");
  cls.def(
      "sku_for",
      [rr](const P& p, nb::handle stream, nb::handle workspace, nb::kwargs kw) {
        return rr->call(p, stream, workspace, kw, PlanCall::SkuFor);
      },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("workspace") = nb::none(), nb::arg("kwargs"),
      "What run() would launch for exactly these tensors (the sku dict), launching nothing.");
  cls.def("__repr__", [](const P& p) {
    return std::string(p.name()) + "(" + (p.empty() ? std::string("empty") : p.sku().to_string()) + ")";
  });
  def_check_indices(cls);
  return cls;
}

void bind_advanced_indexing(nb::module_& m) {
  DescBinder<IndexGetDescriptor> gd(m, "IndexGetDescriptor");
  bind_advanced_index_fields(gd, "IndexGetDescriptor");
  bind_advanced_plan<IndexGetPlan, IndexGetDescriptor, IndexGetArgs>(
      m, "IndexGetPlan", AdvancedRun<IndexGetPlan, IndexGetArgs>{{{"x", &IndexGetArgs::x}}, &IndexGetArgs::out});

  DescBinder<IndexPutDescriptor> pd(m, "IndexPutDescriptor");
  bind_advanced_index_fields(pd, "IndexPutDescriptor");
  pd.field("values_shape", &IndexPutDescriptor::values_shape).field("accumulate", &IndexPutDescriptor::accumulate);
  auto pc = bind_advanced_plan<IndexPutPlan, IndexPutDescriptor, IndexPutArgs>(
      m, "IndexPutPlan",
      AdvancedRun<IndexPutPlan, IndexPutArgs>{{{"input", &IndexPutArgs::self}, {"values", &IndexPutArgs::values}},
                                              &IndexPutArgs::out});
  pc.def_prop_ro("result_shape", [](const IndexPutPlan& p) { return dims_to_py(p.result_shape()); });
}

// ---- grouped linear (mixture of experts) ------------------------------------------------------
void bind_grouped(nb::module_& m) {
  using D = GroupedLinearDescriptor;
  DescBinder<D>(m, "GroupedLinearDescriptor")
      .field("dtype", &D::dtype)
      .field("groups", &D::groups)
      .field("in_features", &D::in_features)
      .field("out_features", &D::out_features)
      .field("capacity", &D::capacity)
      .field("shared_weight", &D::shared_weight)
      .field("has_bias", &D::has_bias)
      .field("activation", &D::activation)
      .field("save_aux", &D::save_aux);
  using A = GroupedLinearArgs;
  PlanBinder<GroupedLinearPlan, D, A>(m, "GroupedLinearPlan")
      .in("x", &A::x)
      .host_in("offsets", &A::offsets)
      .in("weight", &A::weight)
      .in("bias", &A::bias)
      .out("y", &A::y)
      .out("aux", &A::aux)
      .prop("x_shape", [](const GroupedLinearPlan& p) { return dims_to_py(p.x_shape()); })
      .prop("y_shape", [](const GroupedLinearPlan& p) { return dims_to_py(p.y_shape()); })
      .prop("offsets_shape", [](const GroupedLinearPlan& p) { return dims_to_py(p.offsets_shape()); })
      .prop("weight_shape", [](const GroupedLinearPlan& p) { return dims_to_py(p.weight_shape()); })
      .prop("bias_shape", [](const GroupedLinearPlan& p) { return dims_to_py(p.bias_shape()); });

  using BD = GroupedLinearBackwardDescriptor;
  DescBinder<BD>(m, "GroupedLinearBackwardDescriptor")
      .field("forward", &BD::forward)
      .field("need_dx", &BD::need_dx)
      .field("need_dw", &BD::need_dw)
      .field("need_db", &BD::need_db);
  using BA = GroupedLinearBackwardArgs;
  PlanBinder<GroupedLinearBackwardPlan, BD, BA>(m, "GroupedLinearBackwardPlan")
      .in("dy", &BA::dy)
      .host_in("offsets", &BA::offsets)
      .in("x", &BA::x)
      .in("weight", &BA::weight)
      .in("aux", &BA::aux)
      .out("dx", &BA::dx)
      .out("dw", &BA::dw)
      .out("db", &BA::db)
      .prop("x_shape", [](const GroupedLinearBackwardPlan& p) { return dims_to_py(p.x_shape()); })
      .prop("y_shape", [](const GroupedLinearBackwardPlan& p) { return dims_to_py(p.y_shape()); })
      .prop("offsets_shape", [](const GroupedLinearBackwardPlan& p) { return dims_to_py(p.offsets_shape()); })
      .prop("weight_shape", [](const GroupedLinearBackwardPlan& p) { return dims_to_py(p.weight_shape()); })
      .prop("bias_shape", [](const GroupedLinearBackwardPlan& p) { return dims_to_py(p.bias_shape()); });
}

// ---- fp8 GEMM (torch._scaled_mm) ------------------------------------------------------------
void bind_scaled_mm(nb::module_& m) {
  bind_enum<Fp8Scaling>(m, "Fp8Scaling", {{"Tensor", Fp8Scaling::Tensor}, {"Row", Fp8Scaling::Row}});
  using D = ScaledMatmulDescriptor;
  DescBinder<D>(m, "ScaledMatmulDescriptor")
      .field("a_dtype", &D::a_dtype)
      .field("b_dtype", &D::b_dtype)
      .field("out_dtype", &D::out_dtype)
      .field("a_shape", &D::a_shape)
      .field("b_shape", &D::b_shape)
      .field("scaling", &D::scaling)
      .field("has_bias", &D::has_bias)
      .field("activation", &D::activation)
      .field("fast_accum", &D::fast_accum);
  using A = ScaledMatmulArgs;
  PlanBinder<ScaledMatmulPlan, D, A>(m, "ScaledMatmulPlan")
      .in("a", &A::a)
      .in("b", &A::b)
      .in("a_scale", &A::a_scale)
      .in("b_scale", &A::b_scale)
      .in("bias", &A::bias)
      .out("out", &A::out)
      .prop("out_shape", [](const ScaledMatmulPlan& p) { return dims_to_py(p.out_shape()); })
      .prop("a_scale_shape", [](const ScaledMatmulPlan& p) { return dims_to_py(p.a_scale_shape()); })
      .prop("b_scale_shape", [](const ScaledMatmulPlan& p) { return dims_to_py(p.b_scale_shape()); });
}

// _reshape_view(t, shape): t (a View or an Array) with size-1 dims dropped or
// added to give `shape` (the same extents > 1 in order; no copy): torch's [M, 1]
// / [1, N] scales as the plans' [M] / [N]. Anything else comes back unchanged
// (the plan then reports the shape).
Dims squeeze_to(const Dims& shape, const Dims& strides, const Dims& to, bool* ok) {
  Dims st = to;
  int j = 0;
  *ok = true;
  for (int i = 0; i < to.rank; ++i) {
    if (to[i] == 1) {
      st[i] = 1;
      continue;
    }
    while (j < shape.rank && shape[j] == 1) ++j;
    if (j >= shape.rank || shape[j] != to[i]) {
      *ok = false;
      return st;
    }
    st[i] = strides[j++];
  }
  while (j < shape.rank && shape[j] == 1) ++j;
  if (j != shape.rank) *ok = false;
  return st;
}

void bind_reshape_view(nb::module_& m) {
  m.def(
      "_reshape_view",
      [](nb::object t, nb::handle shape_h) -> nb::object {
        const Dims to = dims_from_py(shape_h, "_reshape_view: shape");
        bool ok = false;
        if (nb::isinstance<View>(t)) {
          View v = nb::cast<const View&>(t);
          const Dims st = squeeze_to(v.view.shape, v.view.strides, to, &ok);
          if (!ok) return t;
          v.view.shape = to;
          v.view.strides = st;
          return nb::cast(std::move(v));
        }
        if (nb::isinstance<Array>(t)) {
          Array a = nb::cast<const Array&>(t);
          const Dims st = squeeze_to(a.shape, a.strides, to, &ok);
          if (!ok) return t;
          a.shape = to;
          a.strides = st;
          return nb::cast(std::move(a));
        }
        return t;
      },
      nb::arg("t"), nb::arg("shape"));

  // _reinterpret_view(t, dtype): t (a View or an Array) read as another dtype of
  // the same element size (no copy): torch < 2.7's DLPack has no float8, so the
  // functional scaled_mm imports torch's fp8 tensors as uint8 views and names
  // their dtype here.
  m.def(
      "_reinterpret_view",
      [](nb::object t, nb::handle dtype_h) -> nb::object {
        const DType to = dtype_from_py(dtype_h);
        auto same = [&](DType from) {
          if (dtype_size(from) != dtype_size(to))
            raise_invalid(std::string("_reinterpret_view: ") + dtype_py_name(from) + " and " + dtype_py_name(to) +
                          " differ in size");
        };
        if (nb::isinstance<View>(t)) {
          View v = nb::cast<const View&>(t);
          same(v.view.dtype);
          v.view.dtype = to;
          return nb::cast(std::move(v));
        }
        if (nb::isinstance<Array>(t)) {
          Array a = nb::cast<const Array&>(t);
          same(a.dtype);
          a.dtype = to;
          return nb::cast(std::move(a));
        }
        throw nb::type_error("_reinterpret_view: expected a View or an Array");
      },
      nb::arg("t"), nb::arg("dtype"));
}

}  // namespace

void bind_plans_b(nb::module_& m) {
  bind_reshape_view(m);
  bind_advanced_indexing(m);
  bind_grouped(m);
  bind_scaled_mm(m);
}

}  // namespace bpy

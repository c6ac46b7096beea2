// baracuda._C: the plan layer. Descriptors are Python classes with keyword
// construction (every field a read-write property); plans have select(),
// workspace_size, sku, device, descriptor and run(stream=, workspace=,
// **tensors), the tensor keywords being the fields of the plan's C++ Args
// struct. One generic binder per kind (DescBinder, PlanBinder) serves every
// family.
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "common.hpp"

namespace bpy {
namespace {

// ---- enums: bound as Python enums, also accepted as strings ------------------------
template <class E>
std::vector<std::pair<std::string, E>>& enum_names() {
  static std::vector<std::pair<std::string, E>> names;
  return names;
}
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
template <class E>
E enum_from_py(nb::handle h, const char* what) {
  if (nb::isinstance<nb::str>(h)) {
    const std::string s = lower(nb::cast<std::string>(h));
    for (const auto& [n, e] : enum_names<E>())
      if (lower(n) == s) return e;
    std::string all;
    for (const auto& [n, e] : enum_names<E>()) all += (all.empty() ? "" : ", ") + n;
    raise_invalid(std::string(what) + ": unknown value '" + s + "' (one of: " + all + ")");
  }
  try {
    return nb::cast<E>(h);
  } catch (const nb::cast_error&) {
    throw nb::type_error((std::string(what) + ": expected the enum or its name as a string").c_str());
  }
}
template <class E>
void bind_enum(nb::module_& m, const char* name, std::vector<std::pair<std::string, E>> values) {
  nb::enum_<E> e(m, name);
  for (const auto& [n, v] : values) e.value(n.c_str(), v);
  enum_names<E>() = std::move(values);
}

// ---- field conversions ------------------------------------------------------------
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {
  using type = T;
};

template <class T>
T from_py(nb::handle h, const char* what) {
  if constexpr (std::is_same_v<T, Dims>) {
    return dims_from_py(h, what);
  } else if constexpr (std::is_same_v<T, DType>) {
    return dtype_from_py(h);
  } else if constexpr (is_optional<T>::value) {
    if (h.is_none()) return std::nullopt;
    return from_py<typename is_optional<T>::type>(h, what);
  } else if constexpr (std::is_enum_v<T>) {
    return enum_from_py<T>(h, what);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!PyBool_Check(h.ptr()) && !nb::isinstance<nb::int_>(h))
      throw nb::type_error((std::string(what) + ": expected a bool").c_str());
    return PyObject_IsTrue(h.ptr()) == 1;
  } else {
    try {
      return nb::cast<T>(h);
    } catch (const nb::cast_error&) {
      throw nb::type_error((std::string(what) + ": wrong type").c_str());
    }
  }
}
template <class T>
nb::object to_py(const T& v) {
  if constexpr (std::is_same_v<T, Dims>) {
    return dims_to_py(v);
  } else if constexpr (std::is_same_v<T, DType>) {
    return nb::str(dtype_py_name(v));
  } else if constexpr (is_optional<T>::value) {
    if (!v) return nb::none();
    return to_py(*v);
  } else {
    return nb::cast(v);
  }
}

// ---- descriptors --------------------------------------------------------------------
template <class D>
struct DescBinder {
  using Setter = std::function<void(D&, nb::handle)>;
  using Getter = std::function<nb::object(const D&)>;
  struct Field {
    std::string name;
    Setter set;
    Getter get;
  };
  nb::class_<D> cls;
  std::shared_ptr<std::vector<Field>> fields = std::make_shared<std::vector<Field>>();
  std::string name;

  DescBinder(nb::module_& m, const char* n) : cls(m, n), name(n) {
    auto fs = fields;
    std::string cname = n;
    cls.def("__init__", [fs, cname](D* self, nb::kwargs kw) {
      new (self) D();
      for (auto [k, v] : kw) {
        const std::string key = nb::cast<std::string>(k);
        auto it = std::find_if(fs->begin(), fs->end(), [&](const Field& f) { return f.name == key; });
        if (it == fs->end()) {
          std::string all;
          for (const auto& f : *fs) all += (all.empty() ? "" : ", ") + f.name;
          throw nb::type_error((cname + ": unknown field '" + key + "' (fields: " + all + ")").c_str());
        }
        it->set(*self, v);
      }
    });
    cls.def("__repr__", [fs, cname](const D& d) {
      std::string s = cname + "(";
      bool first = true;
      for (const auto& f : *fs) {
        s += (first ? "" : ", ") + f.name + "=" + nb::cast<std::string>(nb::repr(f.get(d)));
        first = false;
      }
      return s + ")";
    });
    cls.def("__copy__", [](const D& d) { return D(d); });
  }
  template <class T>
  DescBinder& field(const char* fname, T D::*pm) {
    std::string what = name + "." + fname;
    Setter set = [pm, what](D& d, nb::handle h) { d.*pm = from_py<T>(h, what.c_str()); };
    Getter get = [pm](const D& d) { return to_py(d.*pm); };
    cls.def_prop_rw(fname, get, set);
    fields->push_back({fname, set, get});
    return *this;
  }
};

// ---- plans ---------------------------------------------------------------------------
PlanPreference preference_from_py(nb::handle h) {
  if (h.is_none()) return {};
  return nb::cast<PlanPreference>(h);
}
Stream select_stream(nb::handle h) {
  if (h.is_none()) return Stream::cpu();
  return stream_from_py(h, std::nullopt);
}

Scalar scalar_from_py(nb::handle h, const char* what) {
  if (PyBool_Check(h.ptr())) return Scalar(h.ptr() == Py_True);
  if (nb::isinstance<nb::int_>(h)) return Scalar(static_cast<long long>(nb::cast<int64_t>(h)));
  if (nb::isinstance<nb::float_>(h)) return Scalar(nb::cast<double>(h));
  throw nb::type_error((std::string(what) + ": expected a Python number (bool, int or float)").c_str());
}

template <class A>
struct ArgField {
  std::string name;
  TensorRef A::*ref = nullptr;
  TensorMut A::*mut = nullptr;
  std::optional<Scalar> A::*scalar = nullptr;
};

// The run() of a plan: tensors by keyword (the Args struct's field names).
template <class P, class A>
void plan_run(const P& plan, const std::vector<ArgField<A>>& fields, nb::handle stream_arg, nb::handle ws_arg,
              const nb::kwargs& kw) {
  std::vector<std::pair<const ArgField<A>*, nb::handle>> given;
  std::vector<nb::handle> inputs;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    auto it = std::find_if(fields.begin(), fields.end(), [&](const ArgField<A>& f) { return f.name == key; });
    if (it == fields.end()) {
      std::string all;
      for (const auto& f : fields) all += (all.empty() ? "" : ", ") + f.name;
      throw nb::type_error((std::string(plan.name()) + ".run: unknown argument '" + key + "' (arguments: " + all +
                            ", stream, workspace)")
                               .c_str());
    }
    if (v.is_none()) continue;  // not given
    given.push_back({&*it, v});
    if (!it->scalar) inputs.push_back(v);
  }
  if (plan.empty()) check(Status(StatusCode::InvalidProblem, std::string(plan.name()) + ": the plan is empty"));
  const Stream s = resolve_stream(stream_arg, plan.device(), inputs);
  A args{};
  std::vector<View> keep;
  keep.reserve(given.size());
  for (const auto& [f, v] : given) {
    const std::string what = std::string(plan.name()) + ".run: " + f->name;
    if (f->scalar) {
      args.*(f->scalar) = scalar_from_py(v, what.c_str());
      continue;
    }
    keep.push_back(import_tensor(v, s, what.c_str()));
    const View& view = keep.back();
    if (f->mut) {
      if (view.read_only) raise_invalid(what + ": the tensor is read-only (an output must be writable)");
      args.*(f->mut) = view.view;
    } else {
      args.*(f->ref) = TensorRef(view.view);
    }
  }
  std::optional<ScopedWorkspace> own_ws;
  std::optional<View> ws_view;
  const Workspace ws = workspace_from_py(ws_arg, plan.workspace_size(), s, own_ws, ws_view);
  Status st;
  {
    nb::gil_scoped_release release;
    st = plan.run(s, ws, args);
  }
  check(st);
}

template <class P, class D, class A>
struct PlanBinder {
  nb::class_<P> cls;
  std::shared_ptr<std::vector<ArgField<A>>> fields = std::make_shared<std::vector<ArgField<A>>>();

  PlanBinder(nb::module_& m, const char* name) : cls(m, name) {
    cls.def_static(
        "select",
        [](const D& d, nb::handle stream, nb::handle pref) {
          const Stream s = select_stream(stream);
          const PlanPreference p = preference_from_py(pref);
          std::optional<Result<P>> r;
          {
            nb::gil_scoped_release release;
            r.emplace(P::select(s, d, p));
          }
          return unwrap(std::move(*r));
        },
        nb::arg("desc"), nb::arg("stream") = nb::none(), nb::arg("preference") = nb::none(),
        "Selects the plan for `desc` on `stream`'s device (None: the CPU).");
    cls.def_prop_ro("workspace_size", [](const P& p) { return p.workspace_size(); });
    cls.def_prop_ro("sku", [](const P& p) { return sku_to_py(p.sku()); });
    cls.def_prop_ro("device", [](const P& p) { return device_to_py(p.device()); });
    cls.def_prop_ro("name", [](const P& p) { return std::string(p.name()); });
    cls.def_prop_ro("empty", [](const P& p) { return p.empty(); });
    cls.def_prop_ro("descriptor", [](const P& p) { return D(p.descriptor()); });
    auto fs = fields;
    cls.def(
        "run",
        [fs](const P& p, nb::handle stream, nb::handle workspace, nb::kwargs kw) {
          plan_run<P, A>(p, *fs, stream, workspace, kw);
        },
        nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("workspace") = nb::none(), nb::arg("kwargs"),
        "Runs the plan. Tensors by keyword (any DLPack object); stream: None = the default for the tensors' "
        "device; workspace: None = allocated for the call (stream-ordered) when workspace_size > 0.");
    cls.def("__repr__", [](const P& p) {
      return std::string(p.name()) + "(" + (p.empty() ? std::string("empty") : p.sku().to_string()) + ")";
    });
  }
  PlanBinder& in(const char* n, TensorRef A::*pm) {
    fields->push_back({n, pm, nullptr, nullptr});
    return *this;
  }
  PlanBinder& out(const char* n, TensorMut A::*pm) {
    fields->push_back({n, nullptr, pm, nullptr});
    return *this;
  }
  PlanBinder& scalar(const char* n, std::optional<Scalar> A::*pm) {
    fields->push_back({n, nullptr, nullptr, pm});
    return *this;
  }
  template <class F>
  PlanBinder& prop(const char* n, F f) {
    cls.def_prop_ro(n, f);
    return *this;
  }
};

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

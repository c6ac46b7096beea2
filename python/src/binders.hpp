// The generic binders of the plan layer (descriptors with keyword
// construction, plans with select / run by keyword), shared by the TUs that
// bind the families (plans.cpp, plans_more.cpp).
#pragma once
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "common.hpp"

namespace bpy {

// ---- enums: bound as Python enums, also accepted as strings ------------------------
// One table per enum for the whole module (a template's static local is
// shared by every TU: an enum bound in one TU is read by the others).
template <class E>
std::vector<std::pair<std::string, E>>& enum_names() {
  static std::vector<std::pair<std::string, E>> names;
  return names;
}

namespace {
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
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {
  using type = T;
};

template <class T>
T from_py(nb::handle h, const char* what) {
  if constexpr (std::is_same_v<T, Dims>) {
    return dims_from_py(h, what);
  } else if constexpr (std::is_same_v<T, std::vector<Dims>>) {
    std::vector<Dims> out;
    if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
      throw nb::type_error((std::string(what) + ": expected a list of shapes").c_str());
    for (nb::handle x : h) out.push_back(dims_from_py(x, what));
    return out;
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
  } else if constexpr (std::is_same_v<T, std::vector<Dims>>) {
    nb::list l;
    for (const Dims& d : v) l.append(dims_to_py(d));
    return l;
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
  RandomSeed A::*seed = nullptr;  // a random plan's seed: an int, or (seed, offset)
  bool host = false;              // a host tensor whatever the stream (read on the host by run(): grouped offsets)
};

inline RandomSeed seed_from_py(nb::handle h, const std::string& what) {
  if (nb::isinstance<nb::int_>(h)) return RandomSeed{nb::cast<uint64_t>(h), 0};
  if (nb::isinstance<nb::tuple>(h) && nb::len(h) == 2)
    return RandomSeed{nb::cast<uint64_t>(h[0]), nb::cast<uint64_t>(h[1])};
  throw nb::type_error((what + ": expected a non-negative int seed or a (seed, offset) tuple").c_str());
}

// The run() of a plan: tensors by keyword (the Args struct's field names).
//
// What a call of the plan with tensors does: run() it, or only make run()'s
// checks (can_implement), or name what run() would launch (sku_for).
enum class PlanCall { Run, CanImplement, SkuFor };

template <class P, class A>
nb::object plan_run(const P& plan, const std::vector<ArgField<A>>& fields, nb::handle stream_arg, nb::handle ws_arg,
                    const nb::kwargs& kw, PlanCall call = PlanCall::Run) {
  const char* verb = call == PlanCall::Run ? ".run: " : call == PlanCall::CanImplement ? ".can_implement: " : ".sku_for: ";
  std::vector<std::pair<const ArgField<A>*, nb::handle>> given;
  std::vector<nb::handle> inputs;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    auto it = std::find_if(fields.begin(), fields.end(), [&](const ArgField<A>& f) { return f.name == key; });
    if (it == fields.end()) {
      std::string all;
      for (const auto& f : fields) all += (all.empty() ? "" : ", ") + f.name;
      throw nb::type_error((std::string(plan.name()) + verb + "unknown argument '" + key + "' (arguments: " + all +
                            ", stream, workspace)")
                               .c_str());
    }
    if (v.is_none()) continue;  // not given
    given.push_back({&*it, v});
    if (!it->scalar && !it->seed && !it->host) inputs.push_back(v);
  }
  if (plan.empty()) check(Status(StatusCode::InvalidProblem, std::string(plan.name()) + ": the plan is empty"));
  const Stream s = resolve_stream(stream_arg, plan.device(), inputs);
  A args{};
  std::vector<View> keep;
  keep.reserve(given.size());
  for (const auto& [f, v] : given) {
    const std::string what = std::string(plan.name()) + verb + f->name;
    if (f->scalar) {
      args.*(f->scalar) = scalar_from_py(v, what.c_str());
      continue;
    }
    if (f->seed) {
      args.*(f->seed) = seed_from_py(v, what);
      continue;
    }
    keep.push_back(import_fast(v, f->host ? Stream::cpu() : s, what.c_str()));
    const View& view = keep.back();
    if (f->mut) {
      if (view.read_only) raise_invalid(what + ": the tensor is read-only (an output must be writable)");
      args.*(f->mut) = view.view;
    } else {
      args.*(f->ref) = TensorRef(view.view);
    }
  }
  if (call == PlanCall::CanImplement) {
    check(plan.can_implement(args));
    return nb::bool_(true);
  }
  std::optional<ScopedWorkspace> own_ws;
  std::optional<View> ws_view;
  const Workspace ws = workspace_from_py(ws_arg, plan.workspace_size(), s, own_ws, ws_view);
  if (call == PlanCall::SkuFor) return sku_to_py(unwrap(plan.sku_for(s, ws, args)));
  Status st;
  {
    nb::gil_scoped_release release;
    st = plan.run(s, ws, args);
  }
  check(st);
  return nb::none();
}

// What every bound plan class has: select(desc, stream, preference) and the
// workspace_size / sku / device / name / empty / descriptor properties.
template <class P, class D>
void def_plan_common(nb::class_<P>& cls) {
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
}

// run / can_implement / sku_for / __repr__ of a bound plan class; `call`
// (plan, stream, workspace, kwargs, PlanCall) does the work.
template <class P, class Call>
void def_plan_calls(nb::class_<P>& cls, Call call) {
  cls.def(
      "run",
      [call](const P& p, nb::handle stream, nb::handle workspace, nb::kwargs kw) {
        call(p, stream, workspace, kw, PlanCall::Run);
      },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("workspace") = nb::none(), nb::arg("kwargs"),
      "Runs the plan. Tensors (lists of tensors, host values) by keyword, the C++ Args' field names; stream: None = "
      "the default for the tensors' device; workspace: None = allocated for the call (stream-ordered) when "
      "workspace_size > 0.");
  cls.def(
      "can_implement",
      [call](const P& p, nb::handle stream, nb::kwargs kw) { return call(p, stream, nb::none(), kw, PlanCall::CanImplement); },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("kwargs"),
      "run()'s checks of these arguments without running: True, or the error run() would raise.");
  cls.def(
      "sku_for",
      [call](const P& p, nb::handle stream, nb::handle workspace, nb::kwargs kw) {
        return call(p, stream, workspace, kw, PlanCall::SkuFor);
      },
      nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("workspace") = nb::none(), nb::arg("kwargs"),
      "What run() would launch for exactly these arguments (the sku dict), launching nothing.");
  cls.def("__repr__", [](const P& p) {
    return std::string(p.name()) + "(" + (p.empty() ? std::string("empty") : p.sku().to_string()) + ")";
  });
}

template <class P, class D, class A>
struct PlanBinder {
  nb::class_<P> cls;
  std::shared_ptr<std::vector<ArgField<A>>> fields = std::make_shared<std::vector<ArgField<A>>>();

  PlanBinder(nb::module_& m, const char* name) : cls(m, name) {
    def_plan_common<P, D>(cls);
    auto fs = fields;
    def_plan_calls(cls,
                   [fs](const P& p, nb::handle stream, nb::handle workspace, const nb::kwargs& kw, PlanCall c) {
                     return plan_run<P, A>(p, *fs, stream, workspace, kw, c);
                   });
  }
  PlanBinder& in(const char* n, TensorRef A::*pm) {
    fields->push_back({n, pm, nullptr, nullptr, nullptr});
    return *this;
  }
  PlanBinder& host_in(const char* n, TensorRef A::*pm) {  // an input the plan reads on the host (a CPU tensor)
    fields->push_back({n, pm, nullptr, nullptr, nullptr, true});
    return *this;
  }
  PlanBinder& out(const char* n, TensorMut A::*pm) {
    fields->push_back({n, nullptr, pm, nullptr, nullptr});
    return *this;
  }
  PlanBinder& scalar(const char* n, std::optional<Scalar> A::*pm) {
    fields->push_back({n, nullptr, nullptr, pm});
    return *this;
  }
  PlanBinder& seed(const char* n, RandomSeed A::*pm) {
    fields->push_back({n, nullptr, nullptr, nullptr, pm});
    return *this;
  }
  template <class F>
  PlanBinder& prop(const char* n, F f) {
    cls.def_prop_ro(n, f);
    return *this;
  }
};

// check_indices(workspace, stream=None) of the indexing plans: the bad index
// the last run() with this workspace met (CUDA: synchronizes the stream; the
// CPU run() already raised).
template <class P>
void def_check_indices(nb::class_<P>& cls) {
  cls.def(
      "check_indices",
      [](const P& p, nb::handle ws_arg, nb::handle stream_arg) {
        const Stream s = resolve_stream(stream_arg, p.device(), {});
        std::optional<ScopedWorkspace> own;
        std::optional<View> keep;
        if (ws_arg.is_none() && p.workspace_size() > 0)
          raise_invalid(std::string(p.name()) + ".check_indices: pass the workspace the run() used");
        const Workspace ws = workspace_from_py(ws_arg, 0, s, own, keep);
        Status st;
        {
          nb::gil_scoped_release release;
          st = p.check_indices(s, ws);
        }
        check(st);
      },
      nb::arg("workspace") = nb::none(), nb::arg("stream") = nb::none(),
      "The first bad index the last run() with this workspace met (CUDA: synchronizes the stream).");
}

}  // namespace
}  // namespace bpy

// ---- appended (plans_b.cpp): descriptor fields that are not one member ----------------
namespace bpy {
namespace {
// A descriptor field with its own setter / getter (e.g. AdvancedIndex's per-dim
// arrays), joining the keyword constructor and __repr__ as DescBinder::field does.
template <class D>
void desc_custom_field(DescBinder<D>& b, const char* fname, typename DescBinder<D>::Setter set,
                       typename DescBinder<D>::Getter get) {
  b.cls.def_prop_rw(fname, get, set);
  b.fields->push_back({fname, set, get});
}

// A run() argument that is a list of tensors, one per dim, None for "absent"
// (advanced indexing's indices): imports each into `out[d]`, keeping the views
// alive in `keep`.
inline void import_tensor_list(nb::handle l, const Stream& s, const std::string& what, std::vector<View>& keep,
                               TensorRef* out, int max_len) {
  if (!l.is_valid() || l.is_none()) return;
  if (!nb::isinstance<nb::sequence>(l) || nb::isinstance<nb::str>(l) || is_tensor_like(l))
    throw nb::type_error((what + ": expected a list (or tuple) of tensors / None, one per dim").c_str());
  const int n = static_cast<int>(nb::len(l));
  if (n > max_len) raise_invalid(what + ": more entries (" + std::to_string(n) + ") than the rank limit " +
                                 std::to_string(max_len));
  int d = 0;
  for (nb::handle t : l) {
    if (!t.is_none()) {
      keep.push_back(import_fast(t, s, (what + "[" + std::to_string(d) + "]").c_str()));
      out[d] = TensorRef(keep.back().view);
    }
    ++d;
  }
}
}  // namespace
}  // namespace bpy

// ---- plans over tensor lists; Scalar descriptor fields (plans_optim.cpp) ---------------
#include <deque>

namespace bpy {
namespace {

// A descriptor field of type std::optional<Scalar>: a Python bool / int /
// float, or None.
template <class D>
void scalar_field(DescBinder<D>& b, const char* fname, std::optional<Scalar> D::*pm) {
  std::string what = b.name + "." + fname;
  typename DescBinder<D>::Setter set = [pm, what](D& d, nb::handle h) {
    if (h.is_none()) {
      d.*pm = std::nullopt;
      return;
    }
    d.*pm = scalar_from_py(h, what.c_str());
  };
  typename DescBinder<D>::Getter get = [pm](const D& d) -> nb::object {
    if (!(d.*pm)) return nb::none();
    const Scalar& s = *(d.*pm);
    if (s.dtype == DType::Bool) return nb::bool_(s.i != 0);
    if (s.dtype == DType::I64) return nb::int_(s.i);
    return nb::float_(s.f);
  };
  b.cls.def_prop_rw(fname, get, set);
  b.fields->push_back({fname, set, get});
}

// One keyword argument of a list plan's run(): a list of tensors (None
// entries: "not given", an empty view), one tensor, a host number / bool, or a
// RandomSeed (an int seed or a (seed, offset) tuple).
template <class A>
struct ListArgField {
  std::string name;
  int tensors = 0;  // 0: not a tensor; 1: one tensor; 2: a list of tensors (stream resolution)
  std::function<void(A&, nb::handle, const Stream&, std::deque<View>&, const std::string&)> set;
};

inline void list_check(nb::handle l, const std::string& what) {
  if (!nb::isinstance<nb::sequence>(l) || nb::isinstance<nb::str>(l) || is_tensor_like(l))
    throw nb::type_error((what + ": expected a list of tensors").c_str());
}

template <class P, class A>
nb::object list_plan_call(const P& plan, const std::vector<ListArgField<A>>& fields, nb::handle stream_arg,
                          nb::handle ws_arg, const nb::kwargs& kw, PlanCall call) {
  const char* verb = call == PlanCall::Run ? ".run: " : call == PlanCall::CanImplement ? ".can_implement: " : ".sku_for: ";
  std::vector<std::pair<const ListArgField<A>*, nb::handle>> given;
  std::vector<nb::handle> inputs;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    auto it = std::find_if(fields.begin(), fields.end(), [&](const ListArgField<A>& f) { return f.name == key; });
    if (it == fields.end()) {
      std::string all;
      for (const auto& f : fields) all += (all.empty() ? "" : ", ") + f.name;
      throw nb::type_error((std::string(plan.name()) + verb + "unknown argument '" + key + "' (arguments: " + all +
                            ", stream, workspace)")
                               .c_str());
    }
    if (v.is_none()) continue;
    given.push_back({&*it, v});
    if (it->tensors == 1) inputs.push_back(v);
    if (it->tensors == 2) {
      list_check(v, std::string(plan.name()) + verb + key);
      for (nb::handle t : v)
        if (!t.is_none()) inputs.push_back(t);
    }
  }
  if (plan.empty()) check(Status(StatusCode::InvalidProblem, std::string(plan.name()) + ": the plan is empty"));
  const Stream s = resolve_stream(stream_arg, plan.device(), inputs);
  A args{};
  std::deque<View> keep;
  for (const auto& [f, v] : given) f->set(args, v, s, keep, std::string(plan.name()) + verb + f->name);
  if (call == PlanCall::CanImplement) {
    check(plan.can_implement(args));
    return nb::bool_(true);
  }
  std::optional<ScopedWorkspace> own_ws;
  std::optional<View> ws_view;
  const Workspace ws = workspace_from_py(ws_arg, plan.workspace_size(), s, own_ws, ws_view);
  if (call == PlanCall::SkuFor) return sku_to_py(unwrap(plan.sku_for(s, ws, args)));
  Status st;
  {
    nb::gil_scoped_release release;
    st = plan.run(s, ws, args);
  }
  check(st);
  return nb::none();
}

inline TensorMut import_one(nb::handle v, const Stream& s, std::deque<View>& keep, const std::string& what,
                            bool mut) {
  keep.push_back(import_fast(v, s, what.c_str()));
  if (mut && keep.back().read_only) raise_invalid(what + ": the tensor is read-only (an output must be writable)");
  return keep.back().view;
}

// The plan class of a plan whose Args hold tensor lists (the optimizers, the
// gradient utilities): select / properties as PlanBinder, run / can_implement
// / sku_for by keyword.
template <class P, class D, class A>
struct ListPlanBinder {
  nb::class_<P> cls;
  std::shared_ptr<std::vector<ListArgField<A>>> fields = std::make_shared<std::vector<ListArgField<A>>>();

  ListPlanBinder(nb::module_& m, const char* name) : cls(m, name) {
    def_plan_common<P, D>(cls);
    auto fs = fields;
    def_plan_calls(cls,
                   [fs](const P& p, nb::handle stream, nb::handle workspace, const nb::kwargs& kw, PlanCall c) {
                     return list_plan_call<P, A>(p, *fs, stream, workspace, kw, c);
                   });
  }
  template <class T>
  ListPlanBinder& list(const char* n, std::vector<T> A::*pm) {
    constexpr bool mut = std::is_same_v<T, TensorMut>;
    fields->push_back({n, 2, [pm](A& a, nb::handle v, const Stream& s, std::deque<View>& keep, const std::string& what) {
                         list_check(v, what);
                         size_t i = 0;
                         for (nb::handle t : v) {
                           const std::string w = what + "[" + std::to_string(i++) + "]";
                           if (t.is_none()) {
                             (a.*pm).push_back(T{});
                             continue;
                           }
                           const TensorMut x = import_one(t, s, keep, w, mut);
                           if constexpr (mut) {
                             (a.*pm).push_back(x);
                           } else {
                             (a.*pm).push_back(TensorRef(x));
                           }
                         }
                       }});
    return *this;
  }
  template <class T>
  ListPlanBinder& tensor(const char* n, T A::*pm) {
    constexpr bool mut = std::is_same_v<T, TensorMut>;
    fields->push_back({n, 1, [pm](A& a, nb::handle v, const Stream& s, std::deque<View>& keep, const std::string& what) {
                         const TensorMut x = import_one(v, s, keep, what, mut);
                         if constexpr (mut) {
                           a.*pm = x;
                         } else {
                           a.*pm = TensorRef(x);
                         }
                       }});
    return *this;
  }
  template <class T>
  ListPlanBinder& value(const char* n, T A::*pm) {
    fields->push_back({n, 0, [pm](A& a, nb::handle v, const Stream&, std::deque<View>&, const std::string& what) {
                         a.*pm = from_py<T>(v, what.c_str());
                       }});
    return *this;
  }
  ListPlanBinder& seed(const char* n, RandomSeed A::*pm) {
    fields->push_back({n, 0, [pm](A& a, nb::handle v, const Stream&, std::deque<View>&, const std::string& what) {
                         a.*pm = seed_from_py(v, what);
                       }});
    return *this;
  }
  template <class F>
  ListPlanBinder& prop(const char* n, F f) {
    cls.def_prop_ro(n, f);
    return *this;
  }
};

}  // namespace
}  // namespace bpy

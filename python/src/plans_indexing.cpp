// baracuda._C: the plan layer of the indexing family beyond embedding:
// gather / scatter (+ scatter_reduce's backward), index_select / index_add /
// index_copy / index_fill / index_reduce, take / put, one_hot, nonzero,
// masked_select, masked_scatter (binders.hpp: the generic binders).
// The C++ Args' `self` tensors are passed to run() as `input` (torch's name;
// `self` is the bound method's own argument in Python).
#include <cstring>

#include "binders.hpp"

#if BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace bpy {
namespace {

void bind_gather_scatter(nb::module_& m) {
  bind_enum<ScatterReduce>(m, "ScatterReduce",
                           {{"None_", ScatterReduce::None}, {"Sum", ScatterReduce::Sum}, {"Prod", ScatterReduce::Prod},
                            {"Mean", ScatterReduce::Mean}, {"Amax", ScatterReduce::Amax},
                            {"Amin", ScatterReduce::Amin}});
  enum_names<ScatterReduce>().push_back({"none", ScatterReduce::None});
  DescBinder<GatherDescriptor>(m, "GatherDescriptor")
      .field("dtype", &GatherDescriptor::dtype)
      .field("index_dtype", &GatherDescriptor::index_dtype)
      .field("x_shape", &GatherDescriptor::x_shape)
      .field("index_shape", &GatherDescriptor::index_shape)
      .field("dim", &GatherDescriptor::dim);
  PlanBinder<GatherPlan, GatherDescriptor, GatherArgs> g(m, "GatherPlan");
  g.in("x", &GatherArgs::x)
      .in("index", &GatherArgs::index)
      .out("out", &GatherArgs::out)
      .prop("out_shape", [](const GatherPlan& p) { return dims_to_py(p.out_shape()); });
  def_check_indices(g.cls);

  using SD = ScatterDescriptor;
  DescBinder<SD>(m, "ScatterDescriptor")
      .field("dtype", &SD::dtype)
      .field("index_dtype", &SD::index_dtype)
      .field("self_shape", &SD::self_shape)
      .field("index_shape", &SD::index_shape)
      .field("src_shape", &SD::src_shape)
      .field("dim", &SD::dim)
      .field("reduce", &SD::reduce)
      .field("include_self", &SD::include_self)
      .field("use_value", &SD::use_value)
      .field("value", &SD::value);
  PlanBinder<ScatterPlan, SD, ScatterArgs> sc(m, "ScatterPlan");
  sc.in("input", &ScatterArgs::self)
      .in("index", &ScatterArgs::index)
      .in("src", &ScatterArgs::src)
      .out("out", &ScatterArgs::out)
      .prop("out_shape", [](const ScatterPlan& p) { return dims_to_py(p.out_shape()); });
  def_check_indices(sc.cls);

  using BD = ScatterReduceBackwardDescriptor;
  using BA = ScatterReduceBackwardArgs;
  DescBinder<BD>(m, "ScatterReduceBackwardDescriptor")
      .field("dtype", &BD::dtype)
      .field("index_dtype", &BD::index_dtype)
      .field("self_shape", &BD::self_shape)
      .field("index_shape", &BD::index_shape)
      .field("src_shape", &BD::src_shape)
      .field("dim", &BD::dim)
      .field("reduce", &BD::reduce)
      .field("include_self", &BD::include_self)
      .field("compute_grad_self", &BD::compute_grad_self)
      .field("compute_grad_src", &BD::compute_grad_src);
  PlanBinder<ScatterReduceBackwardPlan, BD, BA> sb(m, "ScatterReduceBackwardPlan");
  sb.in("grad", &BA::grad)
      .in("index", &BA::index)
      .in("input", &BA::self)
      .in("src", &BA::src)
      .in("result", &BA::result)
      .out("grad_self", &BA::grad_self)
      .out("grad_src", &BA::grad_src)
      .prop("needs_self", [](const ScatterReduceBackwardPlan& p) { return p.needs_self(); })
      .prop("needs_result", [](const ScatterReduceBackwardPlan& p) { return p.needs_result(); });
  def_check_indices(sb.cls);
}

void bind_index_ops(nb::module_& m) {
  bind_enum<IndexUpdateMode>(m, "IndexUpdateMode",
                             {{"Add", IndexUpdateMode::Add}, {"Copy", IndexUpdateMode::Copy},
                              {"Fill", IndexUpdateMode::Fill}, {"Prod", IndexUpdateMode::Prod},
                              {"Mean", IndexUpdateMode::Mean}, {"Amax", IndexUpdateMode::Amax},
                              {"Amin", IndexUpdateMode::Amin}});
  DescBinder<IndexSelectDescriptor>(m, "IndexSelectDescriptor")
      .field("dtype", &IndexSelectDescriptor::dtype)
      .field("index_dtype", &IndexSelectDescriptor::index_dtype)
      .field("self_shape", &IndexSelectDescriptor::self_shape)
      .field("dim", &IndexSelectDescriptor::dim)
      .field("index_shape", &IndexSelectDescriptor::index_shape);
  PlanBinder<IndexSelectPlan, IndexSelectDescriptor, IndexSelectArgs> is(m, "IndexSelectPlan");
  is.in("input", &IndexSelectArgs::self)
      .in("index", &IndexSelectArgs::index)
      .out("out", &IndexSelectArgs::out)
      .prop("out_shape", [](const IndexSelectPlan& p) { return dims_to_py(p.out_shape()); });
  def_check_indices(is.cls);

  using D = IndexUpdateDescriptor;
  DescBinder<D>(m, "IndexUpdateDescriptor")
      .field("mode", &D::mode)
      .field("dtype", &D::dtype)
      .field("index_dtype", &D::index_dtype)
      .field("self_shape", &D::self_shape)
      .field("dim", &D::dim)
      .field("index_shape", &D::index_shape)
      .field("alpha", &D::alpha)
      .field("value", &D::value)
      .field("include_self", &D::include_self);
  PlanBinder<IndexUpdatePlan, D, IndexUpdateArgs> iu(m, "IndexUpdatePlan");
  iu.in("input", &IndexUpdateArgs::self)
      .in("index", &IndexUpdateArgs::index)
      .in("source", &IndexUpdateArgs::source)
      .out("out", &IndexUpdateArgs::out)
      .prop("source_shape", [](const IndexUpdatePlan& p) { return dims_to_py(p.source_shape()); });
  def_check_indices(iu.cls);
}

void bind_take(nb::module_& m) {
  DescBinder<TakeDescriptor>(m, "TakeDescriptor")
      .field("dtype", &TakeDescriptor::dtype)
      .field("index_dtype", &TakeDescriptor::index_dtype)
      .field("x_shape", &TakeDescriptor::x_shape)
      .field("index_shape", &TakeDescriptor::index_shape);
  PlanBinder<TakePlan, TakeDescriptor, TakeArgs> t(m, "TakePlan");
  t.in("x", &TakeArgs::x).in("index", &TakeArgs::index).out("out", &TakeArgs::out);
  def_check_indices(t.cls);

  DescBinder<PutDescriptor>(m, "PutDescriptor")
      .field("dtype", &PutDescriptor::dtype)
      .field("index_dtype", &PutDescriptor::index_dtype)
      .field("self_shape", &PutDescriptor::self_shape)
      .field("index_shape", &PutDescriptor::index_shape)
      .field("source_shape", &PutDescriptor::source_shape)
      .field("accumulate", &PutDescriptor::accumulate);
  PlanBinder<PutPlan, PutDescriptor, PutArgs> pu(m, "PutPlan");
  pu.in("input", &PutArgs::self).in("index", &PutArgs::index).in("source", &PutArgs::source).out("out", &PutArgs::out);
  def_check_indices(pu.cls);

  DescBinder<OneHotDescriptor>(m, "OneHotDescriptor")
      .field("index_dtype", &OneHotDescriptor::index_dtype)
      .field("index_shape", &OneHotDescriptor::index_shape)
      .field("num_classes", &OneHotDescriptor::num_classes)
      .field("dtype", &OneHotDescriptor::dtype);
  PlanBinder<OneHotPlan, OneHotDescriptor, OneHotArgs> oh(m, "OneHotPlan");
  oh.in("indices", &OneHotArgs::indices)
      .out("out", &OneHotArgs::out)
      .prop("out_shape", [](const OneHotPlan& p) { return dims_to_py(p.out_shape()); });
  def_check_indices(oh.cls);
}

void bind_masked(nb::module_& m) {
  DescBinder<NonzeroDescriptor>(m, "NonzeroDescriptor")
      .field("dtype", &NonzeroDescriptor::dtype)
      .field("shape", &NonzeroDescriptor::shape)
      .field("capacity", &NonzeroDescriptor::capacity)
      .field("fill_value", &NonzeroDescriptor::fill_value)
      .field("has_count", &NonzeroDescriptor::has_count);
  PlanBinder<NonzeroPlan, NonzeroDescriptor, NonzeroArgs>(m, "NonzeroPlan")
      .in("x", &NonzeroArgs::x)
      .out("out", &NonzeroArgs::out)
      .out("count", &NonzeroArgs::count)
      .prop("out_shape", [](const NonzeroPlan& p) { return dims_to_py(p.out_shape()); });

  using MD = MaskedSelectDescriptor;
  DescBinder<MD>(m, "MaskedSelectDescriptor")
      .field("dtype", &MD::dtype)
      .field("x_shape", &MD::x_shape)
      .field("mask_shape", &MD::mask_shape)
      .field("capacity", &MD::capacity)
      .field("fill_value", &MD::fill_value)
      .field("has_count", &MD::has_count);
  PlanBinder<MaskedSelectPlan, MD, MaskedSelectArgs>(m, "MaskedSelectPlan")
      .in("x", &MaskedSelectArgs::x)
      .in("mask", &MaskedSelectArgs::mask)
      .out("out", &MaskedSelectArgs::out)
      .out("count", &MaskedSelectArgs::count)
      .prop("out_shape", [](const MaskedSelectPlan& p) { return dims_to_py(p.out_shape()); })
      .prop("broadcast_shape", [](const MaskedSelectPlan& p) { return dims_to_py(p.broadcast_shape()); });

  DescBinder<MaskedScatterDescriptor>(m, "MaskedScatterDescriptor")
      .field("dtype", &MaskedScatterDescriptor::dtype)
      .field("self_shape", &MaskedScatterDescriptor::self_shape)
      .field("mask_shape", &MaskedScatterDescriptor::mask_shape)
      .field("source_shape", &MaskedScatterDescriptor::source_shape);
  PlanBinder<MaskedScatterPlan, MaskedScatterDescriptor, MaskedScatterArgs> ms(m, "MaskedScatterPlan");
  ms.in("input", &MaskedScatterArgs::self)
      .in("mask", &MaskedScatterArgs::mask)
      .in("source", &MaskedScatterArgs::source)
      .out("out", &MaskedScatterArgs::out);
  def_check_indices(ms.cls);

  // _read_i64(t, stream=None): the value of a rank-0 int64 tensor on the host.
  // CUDA: synchronizes the stream (the host sync of nonzero / masked_select's
  // torch-shaped results).
  m.def(
      "_read_i64",
      [](nb::handle t, nb::handle stream_arg) {
        const Stream s = resolve_stream(stream_arg, device_of(t, "_read_i64"), {t});  // the tensor's device, not the CPU's
        View v = import_fast(t, s, "_read_i64");
        if (v.view.dtype != DType::I64 || v.view.shape.rank != 0) raise_invalid("_read_i64: expected a 0-d int64 tensor");
        int64_t out = 0;
        if (v.view.device.is_cpu()) {
          std::memcpy(&out, v.view.data, sizeof out);
          return out;
        }
#if BARACUDA_WITH_CUDA
        {
          nb::gil_scoped_release release;
          check(synchronize(s));
          const cudaError_t e = cudaMemcpy(&out, v.view.data, sizeof out, cudaMemcpyDeviceToHost);
          if (e != cudaSuccess)
            check(Status(StatusCode::CudaError, std::string("_read_i64: ") + cudaGetErrorString(e)));
        }
#endif
        return out;
      },
      nb::arg("t"), nb::arg("stream") = nb::none());

  // _column(a, d): the column a[:, d] of a 2-D Array as a strided [n] Array
  // sharing its memory (nonzero(as_tuple=True): no copy).
  m.def(
      "_column",
      [](const Array& a, int64_t d) {
        if (a.shape.rank != 2 || d < 0 || d >= a.shape[1]) raise_invalid("_column: expected a 2-D array and 0 <= d < ncols");
        Array c = a;
        c.shape = Dims{a.shape[0]};
        c.strides = Dims{a.strides[0]};
        c.offset = a.offset + d * a.strides[1];
        return c;
      },
      nb::arg("a"), nb::arg("d"));
}

}  // namespace

void bind_plans_indexing(nb::module_& m) {
  bind_gather_scatter(m);
  bind_index_ops(m);
  bind_take(m);
  bind_masked(m);
}

}  // namespace bpy

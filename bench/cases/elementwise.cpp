// Family "elementwise" (alias "ew"): UnaryPlan / BinaryPlan / TernaryPlan on
// the cases of issue 10, bandwidth against the device's own copy bandwidth
// (bench/torch/elementwise.py times PyTorch on the same case names). Every case
// writes a contiguous [8192, 16384] output; f32 and bf16 unless named:
//   copy             UnaryOp::Copy, contiguous x (the bandwidth reference)
//   copy_transposed  UnaryOp::Copy, x a transposed view (strides {1, 8192}
//                    of a [16384, 8192] tensor): x.t().contiguous()
//   add              a + b, both [8192, 16384]
//   add_row          a + b, b [16384] (broadcast along rows)
//   add_col          a + b, b [8192, 1] (broadcast along columns)
//   mul_scalar       a * 1.5 (a host scalar)
//   gelu, silu       UnaryOp::GeluErf / Silu
//   swiglu           BinaryOp::SwiGlu: silu(a) * b, both [8192, 16384]
//   where            where(cond, a, b), cond bool (random, half true)
//   clamp            clamp(x, -0.5, 0.5), scalar bounds
//   cast_bf16 (from f32), cast_f16 (from bf16), cast_i32 (from f32, x in
//                    (-1000, 1000))   UnaryOp::Copy with out_dtype
// Backward (UnaryBackwardPlan / BinaryBackwardPlan, f32 and bf16, every
// operand [8192, 16384], so no gradient is summed down and no workspace):
//   gelu.bwd, silu.bwd  dx from (dy, x)    (from_output = false)
//   swiglu.bwd          da and db from (dy, a, b)   (need_a = need_b = true)
// Name: <op>.<fwd|bwd>.<dtype>.8192x16384 (dtype = the inputs' dtype: a cast's source).
//  * inputs never come from L2: enough independent buffer sets that one sweep
//    touches >= max(4 x L2, 256 MiB) (one set for every case here);
//  * bytes counted: every tensor read once (a broadcast operand: its own
//    size; a backward's dy and the forward operands it reads) + every tensor
//    written (the output, or each gradient); host scalars count nothing.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

constexpr int64_t kRows = 8192, kCols = 16384;

// One operand of a case: a tensor (filled uniform in (lo, hi); a transposed
// view of a [cols, rows] tensor when `transposed`), a host scalar, or none.
struct Operand {
  enum class Kind { None, Tensor, Scalar } kind = Kind::None;
  DType dtype = DType::F32;
  Dims shape;
  bool transposed = false;
  float lo = -1.f, hi = 1.f;
  double value = 0;  // a scalar's value

  static Operand tensor(DType dt, Dims s, float lo = -1.f, float hi = 1.f) {
    Operand o;
    o.kind = Kind::Tensor;
    o.dtype = dt;
    o.shape = s;
    o.lo = lo;
    o.hi = hi;
    return o;
  }
  static Operand transposed_view(DType dt, Dims s) {
    Operand o = tensor(dt, s);
    o.transposed = true;
    return o;
  }
  static Operand scalar(double v) {
    Operand o;
    o.kind = Kind::Scalar;
    o.dtype = DType::F64;
    o.value = v;
    return o;
  }
  bool is_tensor() const { return kind == Kind::Tensor; }
  ElementwiseOperand describe() const {
    return kind == Kind::Tensor ? ElementwiseOperand::tensor(dtype, shape)
           : kind == Kind::Scalar ? ElementwiseOperand::scalar(DType::F64)
                                  : ElementwiseOperand::absent();
  }
  std::optional<Scalar> host_value() const {
    return kind == Kind::Scalar ? std::optional<Scalar>(Scalar(value)) : std::nullopt;
  }
};

// A case: which plan (arity + op code, forward or backward), its operands and
// its output dtype. A backward case reads dy (the output's dtype and shape)
// and the forward's tensor operands, and writes one gradient per tensor
// operand (all needed).
struct Spec {
  BandwidthCase c;
  int arity = 1;
  uint8_t op = 0;  // UnaryOp / BinaryOp / TernaryOp
  Operand in[3];
  DType out = DType::F32;
  bool bwd() const { return c.bwd; }
};

// The views of every buffer set.
struct Views {
  std::vector<std::vector<TensorRef>> in;   // [set][operand]: the forward's tensor operands
  std::vector<TensorRef> dy;                // [set]: backward only
  std::vector<std::vector<TensorMut>> out;  // [set][0]: the output; backward: [set][j] operand j's gradient
};

// The plan of a spec, selected and checked on the first set's views; run(set)
// launches it on buffer set `set` (with the plan's workspace, shared by the sets).
struct Prepared {
  KernelSku sku;
  std::function<Status(size_t)> run;
};

UnaryDescriptor unary_descriptor(const Spec& s) {
  UnaryDescriptor d;
  d.op = static_cast<UnaryOp>(s.op);
  d.x = s.in[0].describe();
  d.out_dtype = s.out;
  return d;
}

BinaryDescriptor binary_descriptor(const Spec& s) {
  BinaryDescriptor d;
  d.op = static_cast<BinaryOp>(s.op);
  d.a = s.in[0].describe();
  d.b = s.in[1].describe();
  d.out_dtype = s.out;
  return d;
}

KernelSku actual_sku(Result<KernelSku> s) {
  status_check(s.status(), "sku_for");
  return *s;
}

Prepared prepare_unary(const Env& env, const Spec& s, const Views& v) {
  auto p = UnaryPlan::select(env.stream, unary_descriptor(s));
  status_check(p.status(), "UnaryPlan::select");
  std::vector<UnaryArgs> args;
  for (size_t k = 0; k < v.out.size(); ++k) args.push_back({v.in[k][0], v.out[k][0]});
  status_check(p->can_implement(args[0]), "can_implement");
  const KernelSku sku = actual_sku(p->sku_for(env.stream, Workspace::none(), args[0]));
  const UnaryPlan plan = *p;
  const Stream st = env.stream;
  return {sku, [plan, args, st](size_t k) { return plan.run(st, Workspace::none(), args[k]); }};
}

Prepared prepare_binary(const Env& env, const Spec& s, const Views& v) {
  auto p = BinaryPlan::select(env.stream, binary_descriptor(s));
  status_check(p.status(), "BinaryPlan::select");
  std::vector<BinaryArgs> args;
  for (size_t k = 0; k < v.out.size(); ++k) {
    BinaryArgs a;
    a.a = v.in[k][0];
    a.b = v.in[k][1];
    a.a_value = s.in[0].host_value();
    a.b_value = s.in[1].host_value();
    a.out = v.out[k][0];
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const KernelSku sku = actual_sku(p->sku_for(env.stream, Workspace::none(), args[0]));
  const BinaryPlan plan = *p;
  const Stream st = env.stream;
  return {sku, [plan, args, st](size_t k) { return plan.run(st, Workspace::none(), args[k]); }};
}

Prepared prepare_ternary(const Env& env, const Spec& s, const Views& v) {
  TernaryDescriptor d;
  d.op = static_cast<TernaryOp>(s.op);
  d.a = s.in[0].describe();
  d.b = s.in[1].describe();
  d.c = s.in[2].describe();
  d.out_dtype = s.out;
  auto p = TernaryPlan::select(env.stream, d);
  status_check(p.status(), "TernaryPlan::select");
  std::vector<TernaryArgs> args;
  for (size_t k = 0; k < v.out.size(); ++k) {
    TernaryArgs a;
    a.a = v.in[k][0];
    a.b = v.in[k][1];
    a.c = v.in[k][2];
    a.a_value = s.in[0].host_value();
    a.b_value = s.in[1].host_value();
    a.c_value = s.in[2].host_value();
    a.out = v.out[k][0];
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const KernelSku sku = actual_sku(p->sku_for(env.stream, Workspace::none(), args[0]));
  const TernaryPlan plan = *p;
  const Stream st = env.stream;
  return {sku, [plan, args, st](size_t k) { return plan.run(st, Workspace::none(), args[k]); }};
}

// Backward: dx from (dy, x); x is read, not y (from_output = false).
Prepared prepare_unary_bwd(const Env& env, const Spec& s, const Views& v) {
  UnaryBackwardDescriptor d;
  d.forward = unary_descriptor(s);
  auto p = UnaryBackwardPlan::select(env.stream, d);
  status_check(p.status(), "UnaryBackwardPlan::select");
  std::vector<UnaryBackwardArgs> args;
  for (size_t k = 0; k < v.out.size(); ++k) {
    UnaryBackwardArgs a;
    a.dy = v.dy[k];
    a.x = v.in[k][0];
    a.dx = v.out[k][0];
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const KernelSku sku = actual_sku(p->sku_for(env.stream, Workspace::none(), args[0]));
  const UnaryBackwardPlan plan = *p;
  const Stream st = env.stream;
  return {sku, [plan, args, st](size_t k) { return plan.run(st, Workspace::none(), args[k]); }};
}

// Backward: da and db from (dy, a, b). Same-shape operands need no workspace,
// but the plan's workspace_size() is honoured all the same.
Prepared prepare_binary_bwd(const Env& env, const Spec& s, const Views& v) {
  BinaryBackwardDescriptor d;
  d.forward = binary_descriptor(s);
  d.need_a = d.need_b = true;
  auto p = BinaryBackwardPlan::select(env.stream, d);
  status_check(p.status(), "BinaryBackwardPlan::select");
  std::vector<BinaryBackwardArgs> args;
  for (size_t k = 0; k < v.out.size(); ++k) {
    BinaryBackwardArgs a;
    a.dy = v.dy[k];
    a.a = v.in[k][0];
    a.b = v.in[k][1];
    a.a_value = s.in[0].host_value();
    a.b_value = s.in[1].host_value();
    a.da = v.out[k][0];
    a.db = v.out[k][1];
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const size_t ws_bytes = p->workspace_size();
  auto ws_buf = std::make_shared<Buffer>(device_buffer(ws_bytes));  // shared: Buffer is move-only
  const Workspace ws(ws_buf->data(), ws_bytes);
  const KernelSku sku = actual_sku(p->sku_for(env.stream, ws, args[0]));
  const BinaryBackwardPlan plan = *p;
  const Stream st = env.stream;
  return {sku, [plan, args, st, ws, ws_buf](size_t k) { return plan.run(st, ws, args[k]); }};
}

void run_case(const Env& env, const Spec& s, BandwidthResult& r) {
  const int arity = s.arity;
  auto bytes_of = [](DType dt, const Dims& shape) {
    return static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  };
  // Forward: the tensor operands read, the output written. Backward: dy (the
  // output's dtype and shape) and the tensor operands read, one gradient per
  // tensor operand written.
  size_t per_run = bytes_of(s.out, s.c.shape);
  for (int j = 0; j < arity; ++j)
    if (s.in[j].is_tensor()) per_run += (s.bwd() ? 2 : 1) * bytes_of(s.in[j].dtype, s.in[j].shape);
  r.bytes = static_cast<double>(per_run);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));

  const size_t sets = static_cast<size_t>(r.sets);
  std::vector<Buffer> bufs;  // kept alive while the views are used
  Views v;
  v.in.assign(sets, std::vector<TensorRef>(3));
  v.out.assign(sets, std::vector<TensorMut>(3));
  for (size_t k = 0; k < sets; ++k) {
    if (s.bwd()) {
      bufs.push_back(device_buffer(bytes_of(s.out, s.c.shape)));
      fill(env, bufs.back(), s.out, static_cast<size_t>(shape_numel(s.c.shape)));
      v.dy.push_back(bufs.back().view(s.out, s.c.shape));
    }
    for (size_t j = 0; j < static_cast<size_t>(arity); ++j) {
      const Operand& o = s.in[j];
      if (!o.is_tensor()) continue;
      const size_t n = static_cast<size_t>(shape_numel(o.shape));
      bufs.push_back(device_buffer(bytes_of(o.dtype, o.shape)));
      fill(env, bufs.back(), o.dtype, n, o.lo, o.hi);
      // Transposed: the [cols, rows] tensor's storage read as [rows, cols].
      v.in[k][j] =
          o.transposed ? bufs.back().view(o.dtype, o.shape, Dims{1, o.shape[0]}) : bufs.back().view(o.dtype, o.shape);
      if (s.bwd()) {
        bufs.push_back(device_buffer(bytes_of(o.dtype, o.shape)));
        v.out[k][j] = bufs.back().view_mut(o.dtype, o.shape);
      }
    }
    if (!s.bwd()) {
      bufs.push_back(device_buffer(bytes_of(s.out, s.c.shape)));
      v.out[k][0] = bufs.back().view_mut(s.out, s.c.shape);
    }
  }
  const Prepared p = s.bwd() ? (arity == 1 ? prepare_unary_bwd(env, s, v) : prepare_binary_bwd(env, s, v))
                     : arity == 1 ? prepare_unary(env, s, v)
                     : arity == 2 ? prepare_binary(env, s, v)
                                  : prepare_ternary(env, s, v);
  record_sku(r, p.sku);
  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    status_check(p.run(static_cast<size_t>(i % r.sets)), "run");
  });
  r.us = ms * 1e3;
}

Spec make(const std::string& op, DType dt, int arity, uint8_t code, std::vector<Operand> in, DType out,
          bool bwd = false) {
  Spec s;
  s.c = BandwidthCase{op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(dt)) + "." + std::to_string(kRows) +
                          "x" + std::to_string(kCols),
                      op, bwd, dt, Dims{kRows, kCols}, Dims{}};
  s.arity = arity;
  s.op = code;
  for (size_t j = 0; j < in.size(); ++j) s.in[j] = in[j];
  s.out = out;
  return s;
}

std::vector<Spec> all_specs() {
  const Dims full{kRows, kCols};
  using O = Operand;
  auto un = [](UnaryOp op) { return static_cast<uint8_t>(op); };
  auto bin = [](BinaryOp op) { return static_cast<uint8_t>(op); };
  auto ter = [](TernaryOp op) { return static_cast<uint8_t>(op); };
  std::vector<Spec> v;
  for (DType dt : {DType::F32, DType::BF16}) {
    v.push_back(make("copy", dt, 1, un(UnaryOp::Copy), {O::tensor(dt, full)}, dt));
    v.push_back(make("copy_transposed", dt, 1, un(UnaryOp::Copy), {O::transposed_view(dt, full)}, dt));
    v.push_back(make("add", dt, 2, bin(BinaryOp::Add), {O::tensor(dt, full), O::tensor(dt, full)}, dt));
    v.push_back(make("add_row", dt, 2, bin(BinaryOp::Add), {O::tensor(dt, full), O::tensor(dt, Dims{kCols})}, dt));
    v.push_back(make("add_col", dt, 2, bin(BinaryOp::Add), {O::tensor(dt, full), O::tensor(dt, Dims{kRows, 1})}, dt));
    v.push_back(make("mul_scalar", dt, 2, bin(BinaryOp::Mul), {O::tensor(dt, full), O::scalar(1.5)}, dt));
    v.push_back(make("gelu", dt, 1, un(UnaryOp::GeluErf), {O::tensor(dt, full)}, dt));
    v.push_back(make("silu", dt, 1, un(UnaryOp::Silu), {O::tensor(dt, full)}, dt));
    v.push_back(make("swiglu", dt, 2, bin(BinaryOp::SwiGlu), {O::tensor(dt, full), O::tensor(dt, full)}, dt));
    v.push_back(make("where", dt, 3, ter(TernaryOp::Where),
                     {O::tensor(DType::Bool, full), O::tensor(dt, full), O::tensor(dt, full)}, dt));
    v.push_back(make("clamp", dt, 3, ter(TernaryOp::Clamp), {O::tensor(dt, full), O::scalar(-0.5), O::scalar(0.5)}, dt));
  }
  v.push_back(make("cast_bf16", DType::F32, 1, un(UnaryOp::Copy), {O::tensor(DType::F32, full)}, DType::BF16));
  v.push_back(make("cast_f16", DType::BF16, 1, un(UnaryOp::Copy), {O::tensor(DType::BF16, full)}, DType::F16));
  // Values in (-1000, 1000) so the truncated integers are not all 0.
  v.push_back(make("cast_i32", DType::F32, 1, un(UnaryOp::Copy), {O::tensor(DType::F32, full, -1000.f, 1000.f)},
                   DType::I32));
  // Backward: dy and every operand [8192, 16384].
  for (DType dt : {DType::F32, DType::BF16}) {
    v.push_back(make("gelu", dt, 1, un(UnaryOp::GeluErf), {O::tensor(dt, full)}, dt, true));
    v.push_back(make("silu", dt, 1, un(UnaryOp::Silu), {O::tensor(dt, full)}, dt, true));
    v.push_back(make("swiglu", dt, 2, bin(BinaryOp::SwiGlu), {O::tensor(dt, full), O::tensor(dt, full)}, dt, true));
  }
  return v;
}

}  // namespace

void register_elementwise(Registry& reg) {
  reg.add_family(Family{"elementwise", "ew", 30, 5, bandwidth_start("baracuda_elementwise_bench")});
  for (const Spec& s : all_specs())
    reg.add_case(bandwidth_case("elementwise", s.c, [s](Env& env, BandwidthResult& r) { run_case(env, s, r); }));
}

}  // namespace baracuda::bench

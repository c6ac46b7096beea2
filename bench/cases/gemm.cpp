// Family "gemm": MatmulPlan, LinearPlan, LinearBackwardPlan, GroupedLinearPlan in bf16 and f16,
// ScaledMatmulPlan in fp8 (issue 11's benchmark list), TFLOP/s against
// the device's cuBLAS GEMM rate at 8192^3 in the case's dtype, measured when the
// family starts (the "ceiling"; 0 without cuBLAS). bench/torch/gemm.py times
// PyTorch eager (and torch.compile for the linear cases) on the same case
// names; the target is PyTorch's rate in the same run, which compare.py puts
// beside ours. Cases, each in bf16 and f16 (M x K x N: out [M, N], K summed):
//   mm.<dt>.MxKxN         MatmulPlan, a [M, K] . b [K, N], both row-major
//                         contiguous (torch.matmul), at 8192x8192x8192,
//                         8192x4096x11008, 8192x11008x4096, 8192x768x3072,
//                         8192x3072x768
//   bmm.<dt>.64x1024^3    MatmulPlan, a [64, 1024, 1024] . b [64, 1024, 1024]
//   linear_gelu_tanh.fwd.<dt>.MxKxN      LinearPlan: y = gelu_tanh(x . w^T + b),
//                         x [M, K], w [N, K], bias [N], no aux
//   linear_gelu_tanh_aux.fwd.<dt>.MxKxN  the same, also writing the
//                         pre-activation (save_aux, what training needs)
//   linear_gelu.fwd.<dt>.MxKxN           activation Gelu (exact erf: cuBLASLt
//                         has no such epilogue, so a separate pass), no aux
//   linear_gelu_tanh.bwd.<dt>.MxKxN      LinearBackwardPlan: dx, dw and db from
//                         dy, x, w and the saved pre-activation (GeluTanh)
//   mlp_gelu_tanh.bwd.<dt>.MxKxN         the backward of a whole MLP block
//                         y = fc2(gelu_tanh(fc1(x))), fc1: K -> N, fc2: N -> K,
//                         both with bias, as two chained LinearBackwardPlans:
//                         fc2's with input_activation GeluTanh and
//                         need_input_bias_grad (its dx GEMM's DGELU_BGRAD
//                         epilogue gives fc1's pre-activation gradient and db),
//                         then fc1's with activation None and need_db false.
//                         4 GEMMs: 8*M*N*K FLOPs.
// at the MLP shapes of GPT-2 (8192x768x3072) and Llama-7B (8192x4096x11008).
//   grouped_linear.fwd.<dt>.E8x16384x4096x14336  GroupedLinearPlan: 8 experts
//                         (Mixtral-like: K 4096, N 14336, per-expert weights
//                         [8, N, K], no bias, no activation), 16384 tokens
//                         split unevenly by kExpertRows (a fixed split, the
//                         same list in bench/torch/gemm.py); one cuBLASLt GEMM
//                         per expert. FLOPs 2*T*N*K.
//   scaled_mm[_rowwise][_fast].f8e4m3.8192x8192x8192   ScaledMatmulPlan:
//                         a [M, K] row-major, b = w.t() of a row-major [N, K]
//                         w, both f8e4m3, out bf16; per-tensor scales (or
//                         row-wise: a_scale [M], b_scale [N]); "_fast": fast_accum.
//                         torch._scaled_mm with the same options on the PyTorch
//                         side; its %ceil is against the bf16 ceiling (the
//                         issue's target: >= 1.7x the bf16 rate).
//  * FLOPs: 2*M*N*K per GEMM (times the batch); the backward counts its two
//    GEMMs (dx, dw): 4*M*N*K. Bias, activation and db are not counted.
//  * data: uniform(-1, 1) for a / x, dy, bias and the saved pre-activation;
//    uniform(-1, 1)/sqrt(K) for b / w, so products stay O(1) (no f16 overflow).
//  * L2: these shapes are compute-bound, but the small ones (GPT-2's: 17 MB of
//    inputs) would be read from the 50 MB L2 after the first run. So every
//    case rotates among independent buffer sets (every operand, output and
//    aux) until one sweep touches >= max(4 x L2, 256 MiB), at most 8 sets:
//    1 set for the 8192-class GEMMs and bmm, 2-4 for GPT-2's shapes.
//    bench/torch/gemm.py rotates the same way.
//  * workspace: the plan's workspace_size(), one buffer shared by the sets
//    (the runs are serial on one stream).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../registry.hpp"

namespace baracuda::bench {
namespace {

enum class Kind { Mm, LinearFwd, LinearBwd, MlpBwd, GroupedFwd, Scaled };  // Mm covers bmm (a batch > 1)

// The grouped case's rows per expert (sum 16384; uneven, multiples of 16).
constexpr int64_t kExpertRows[] = {3216, 1088, 2752, 1504, 2368, 896, 3040, 1520};
constexpr int64_t kExperts = 8;

struct GemmCase {
  std::string name, op;  // op: mm, bmm, linear_gelu_tanh, linear_gelu_tanh_aux, linear_gelu
  Kind kind = Kind::Mm;
  DType dtype = DType::BF16;
  int64_t batch = 1, M = 0, K = 0, N = 0;  // GroupedFwd: batch = experts, M = tokens
  GemmActivation act = GemmActivation::None;
  bool save_aux = false;
  bool rowwise = false, fast_accum = false;  // Scaled

  bool bwd() const { return kind == Kind::LinearBwd || kind == Kind::MlpBwd; }
  double flops() const {
    const double b = kind == Kind::GroupedFwd ? 1.0 : static_cast<double>(batch);  // grouped: batch = experts
    return (kind == Kind::MlpBwd ? 8.0 : bwd() ? 4.0 : 2.0) * b * static_cast<double>(M) * static_cast<double>(N) *
           static_cast<double>(K);
  }
};

struct Res {
  std::string error;
  double us = 0, tflops = 0, frac = 0;  // frac: of the case dtype's cuBLAS ceiling
  int sets = 0;
  size_t workspace = 0;
  std::string variant, backend, sku;
};

// The cuBLAS 8192^3 rates, measured when the family starts.
struct Ceilings {
  double bf16 = 0, f16 = 0;
  // fp8 cases are measured against the bf16 rate (the target is a multiple of it).
  double of(DType dt) const { return dt == DType::BF16 || is_float8(dt) ? bf16 : dt == DType::F16 ? f16 : 0; }
};
Ceilings g_ceiling;

// The launch of one buffer set, with what run() launches.
struct Prepared {
  KernelSku sku;
  size_t workspace = 0;
  std::function<Status(size_t)> run;
};

// The buffers of every set; each operand filled uniform(-scale, scale).
class Sets {
 public:
  explicit Sets(const Env& env) : env_(env) {}
  TensorRef input(DType dt, const Dims& shape, double scale) {
    const size_t n = static_cast<size_t>(shape_numel(shape));
    bufs_.push_back(device_buffer(n * dtype_size(dt), 16));
    fill(env_, bufs_.back(), dt, n, static_cast<float>(-scale), static_cast<float>(scale));
    return bufs_.back().view(dt, shape);
  }
  TensorMut output(DType dt, const Dims& shape) {
    bufs_.push_back(device_buffer(static_cast<size_t>(shape_numel(shape)) * dtype_size(dt), 16));
    return bufs_.back().view_mut(dt, shape);
  }

 private:
  const Env& env_;
  std::vector<Buffer> bufs_;  // a vector of move-only buffers: views stay valid (the data does not move)
};

// One workspace buffer of `bytes` (at least 16) and its Workspace, shared by the runs.
struct SharedWorkspace {
  std::shared_ptr<Buffer> buf;
  Workspace ws;
  explicit SharedWorkspace(size_t bytes) : buf(std::make_shared<Buffer>(device_buffer(bytes, 16))), ws(buf->data(), bytes) {}
};

KernelSku actual_sku(Result<KernelSku> s) {
  status_check(s.status(), "sku_for");
  return *s;
}

double weight_scale(int64_t K) { return 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(K, 1))); }

// Bytes one run touches (every operand read, every output written): what the
// set rotation counts against the L2.
size_t bytes_per_set(const GemmCase& c) {
  const size_t es = dtype_size(c.dtype);
  const size_t mk = static_cast<size_t>(c.batch * c.M * c.K), kn = static_cast<size_t>(c.batch * c.K * c.N);
  const size_t mn = static_cast<size_t>(c.batch * c.M * c.N), n = static_cast<size_t>(c.N);
  switch (c.kind) {
    case Kind::Mm: return (mk + kn + mn) * es;
    case Kind::LinearFwd: return (mk + kn + n + mn * (c.save_aux ? 2 : 1)) * es;
    case Kind::LinearBwd: return (2 * mn + 2 * mk + 2 * kn + n) * es;  // dy, aux; x, dx; w, dw; db
    case Kind::MlpBwd:  // dy, x, dx [M, K]; h, pre, dpre [M, N]; w1, w2, dw1, dw2; db1, db2
      return (3 * mk + 3 * mn + 4 * kn + n + static_cast<size_t>(c.K)) * es;
    case Kind::GroupedFwd: return static_cast<size_t>(c.M * c.K + c.batch * c.K * c.N + c.M * c.N) * es;  // x, w, y
    case Kind::Scaled: return mk + kn + mn * 2;  // fp8 a, b; bf16 out
  }
  return 0;
}

Prepared prepare_mm(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  MatmulDescriptor d;
  d.dtype = c.dtype;
  d.a_shape = c.batch > 1 ? Dims{c.batch, c.M, c.K} : Dims{c.M, c.K};
  d.b_shape = c.batch > 1 ? Dims{c.batch, c.K, c.N} : Dims{c.K, c.N};
  Result<MatmulPlan> p = MatmulPlan::select(env.stream, d);
  status_check(p.status(), "MatmulPlan::select");
  std::vector<MatmulArgs> args;
  for (int k = 0; k < nsets; ++k) {
    MatmulArgs a;
    a.a = sets.input(c.dtype, d.a_shape, 1.0);
    a.b = sets.input(c.dtype, d.b_shape, weight_scale(c.K));
    a.out = sets.output(c.dtype, p->out_shape());
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const SharedWorkspace w(p->workspace_size());
  const KernelSku sku = actual_sku(p->sku_for(env.stream, w.ws, args[0]));
  const MatmulPlan plan = *p;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan, args, st, w](size_t k) { return plan.run(st, w.ws, args[k]); }};
}

Prepared prepare_scaled(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  ScaledMatmulDescriptor d;
  d.a_dtype = d.b_dtype = c.dtype;
  d.out_dtype = DType::BF16;
  d.a_shape = Dims{c.M, c.K};
  d.b_shape = Dims{c.K, c.N};
  d.scaling = c.rowwise ? Fp8Scaling::Row : Fp8Scaling::Tensor;
  d.fast_accum = c.fast_accum;
  Result<ScaledMatmulPlan> p = ScaledMatmulPlan::select(env.stream, d);
  status_check(p.status(), "ScaledMatmulPlan::select");
  std::vector<ScaledMatmulArgs> args;
  for (int k = 0; k < nsets; ++k) {
    ScaledMatmulArgs a;
    a.a = sets.input(c.dtype, d.a_shape, 4.0);
    const TensorRef w = sets.input(c.dtype, Dims{c.N, c.K}, 4.0);  // b = w.t()
    a.b = TensorRef(w.data, w.dtype, w.device, d.b_shape, Dims{1, c.K}, w.capacity);
    a.a_scale = sets.input(DType::F32, p->a_scale_shape(), 1.0 / 16);
    a.b_scale = sets.input(DType::F32, p->b_scale_shape(), weight_scale(c.K) / 4);
    a.out = sets.output(DType::BF16, p->out_shape());
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const SharedWorkspace w(p->workspace_size());
  const KernelSku sku = actual_sku(p->sku_for(env.stream, w.ws, args[0]));
  const ScaledMatmulPlan plan = *p;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan, args, st, w](size_t k) { return plan.run(st, w.ws, args[k]); }};
}

LinearDescriptor linear_descriptor(const GemmCase& c) {
  LinearDescriptor d;
  d.dtype = c.dtype;
  d.x_shape = Dims{c.M, c.K};
  d.out_features = c.N;
  d.has_bias = true;
  d.activation = c.act;
  d.save_aux = c.save_aux;
  return d;
}

Prepared prepare_linear(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  Result<LinearPlan> p = LinearPlan::select(env.stream, linear_descriptor(c));
  status_check(p.status(), "LinearPlan::select");
  std::vector<LinearArgs> args;
  for (int k = 0; k < nsets; ++k) {
    LinearArgs a;
    a.x = sets.input(c.dtype, Dims{c.M, c.K}, 1.0);
    a.weight = sets.input(c.dtype, p->weight_shape(), weight_scale(c.K));
    a.bias = sets.input(c.dtype, p->bias_shape(), 1.0);
    a.y = sets.output(c.dtype, p->y_shape());
    if (c.save_aux) a.aux = sets.output(c.dtype, p->y_shape());
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const SharedWorkspace w(p->workspace_size());
  const KernelSku sku = actual_sku(p->sku_for(env.stream, w.ws, args[0]));
  const LinearPlan plan = *p;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan, args, st, w](size_t k) { return plan.run(st, w.ws, args[k]); }};
}

// The backward of a GeluTanh forward that saved its pre-activation (read as
// args.aux; the descriptor's forward.save_aux stays false): dx, dw and db.
Prepared prepare_linear_bwd(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  LinearBackwardDescriptor d;
  d.forward = linear_descriptor(c);
  d.need_dx = d.need_dw = d.need_db = true;
  Result<LinearBackwardPlan> p = LinearBackwardPlan::select(env.stream, d);
  status_check(p.status(), "LinearBackwardPlan::select");
  std::vector<LinearBackwardArgs> args;
  for (int k = 0; k < nsets; ++k) {
    LinearBackwardArgs a;
    a.dy = sets.input(c.dtype, p->y_shape(), 1.0);
    a.x = sets.input(c.dtype, Dims{c.M, c.K}, 1.0);
    a.weight = sets.input(c.dtype, p->weight_shape(), weight_scale(c.K));
    a.aux = sets.input(c.dtype, p->y_shape(), 1.0);
    a.dx = sets.output(c.dtype, Dims{c.M, c.K});
    a.dw = sets.output(c.dtype, p->weight_shape());
    a.db = sets.output(c.dtype, p->bias_shape());
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const SharedWorkspace w(p->workspace_size());
  const KernelSku sku = actual_sku(p->sku_for(env.stream, w.ws, args[0]));
  const LinearBackwardPlan plan = *p;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan, args, st, w](size_t k) { return plan.run(st, w.ws, args[k]); }};
}

// The MLP block's backward: fc2 (N -> K) chained to fc1's GELU, then fc1 (K -> N).
Prepared prepare_mlp_bwd(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  LinearBackwardDescriptor d2;  // fc2: x = h [M, N], out K
  d2.forward.dtype = c.dtype;
  d2.forward.x_shape = Dims{c.M, c.N};
  d2.forward.out_features = c.K;
  d2.forward.has_bias = true;
  d2.input_activation = GemmActivation::GeluTanh;
  d2.need_input_bias_grad = true;
  LinearBackwardDescriptor d1;  // fc1: x [M, K], out N; its activation's gradient came from fc2
  d1.forward.dtype = c.dtype;
  d1.forward.x_shape = Dims{c.M, c.K};
  d1.forward.out_features = c.N;
  d1.forward.has_bias = true;
  d1.need_db = false;
  Result<LinearBackwardPlan> p2 = LinearBackwardPlan::select(env.stream, d2);
  status_check(p2.status(), "LinearBackwardPlan::select (fc2)");
  Result<LinearBackwardPlan> p1 = LinearBackwardPlan::select(env.stream, d1);
  status_check(p1.status(), "LinearBackwardPlan::select (fc1)");
  std::vector<std::pair<LinearBackwardArgs, LinearBackwardArgs>> args;
  for (int k = 0; k < nsets; ++k) {
    LinearBackwardArgs a2, a1;
    a2.dy = sets.input(c.dtype, Dims{c.M, c.K}, 1.0);
    a2.x = sets.input(c.dtype, Dims{c.M, c.N}, 1.0);                        // h
    a2.weight = sets.input(c.dtype, Dims{c.K, c.N}, weight_scale(c.N));     // w2
    a2.x_aux = sets.input(c.dtype, Dims{c.M, c.N}, 1.0);                    // pre1
    a2.dx = sets.output(c.dtype, Dims{c.M, c.N});                           // dpre1
    a2.dw = sets.output(c.dtype, Dims{c.K, c.N});
    a2.db = sets.output(c.dtype, Dims{c.K});
    a2.dbias_in = sets.output(c.dtype, Dims{c.N});                          // db1
    a1.dy = a2.dx;
    a1.x = sets.input(c.dtype, Dims{c.M, c.K}, 1.0);
    a1.weight = sets.input(c.dtype, Dims{c.N, c.K}, weight_scale(c.K));     // w1
    a1.dx = sets.output(c.dtype, Dims{c.M, c.K});
    a1.dw = sets.output(c.dtype, Dims{c.N, c.K});
    args.push_back({a2, a1});
  }
  status_check(p2->can_implement(args[0].first), "can_implement (fc2)");
  status_check(p1->can_implement(args[0].second), "can_implement (fc1)");
  const SharedWorkspace w(std::max(p2->workspace_size(), p1->workspace_size()));
  KernelSku sku = actual_sku(p2->sku_for(env.stream, w.ws, args[0].first));
  sku.variant = "fc2[" + sku.variant + "] fc1[" + p1->sku().variant + "]";
  const LinearBackwardPlan plan2 = *p2, plan1 = *p1;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan2, plan1, args, st, w](size_t k) {
            const Status s = plan2.run(st, w.ws, args[k].first);
            if (!s) return s;
            return plan1.run(st, w.ws, args[k].second);
          }};
}

// 8 experts over one packed token buffer, split by kExpertRows.
Prepared prepare_grouped(const Env& env, const GemmCase& c, Sets& sets, int nsets) {
  GroupedLinearDescriptor d;
  d.dtype = c.dtype;
  d.groups = c.batch;
  d.in_features = c.K;
  d.out_features = c.N;
  d.capacity = c.M;
  d.has_bias = false;
  Result<GroupedLinearPlan> p = GroupedLinearPlan::select(env.stream, d);
  status_check(p.status(), "GroupedLinearPlan::select");
  auto offsets = std::make_shared<std::vector<int64_t>>(1, 0);
  for (int64_t rows : kExpertRows) offsets->push_back(offsets->back() + rows);
  const TensorRef offs = TensorRef::contiguous(offsets->data(), Device::cpu(), p->offsets_shape(),
                                               static_cast<int64_t>(offsets->size()));
  std::vector<GroupedLinearArgs> args;
  for (int k = 0; k < nsets; ++k) {
    GroupedLinearArgs a;
    a.x = sets.input(c.dtype, p->x_shape(), 1.0);
    a.offsets = offs;
    a.weight = sets.input(c.dtype, p->weight_shape(), weight_scale(c.K));
    a.y = sets.output(c.dtype, p->y_shape());
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  const SharedWorkspace w(p->workspace_size());
  const KernelSku sku = actual_sku(p->sku_for(env.stream, w.ws, args[0]));
  const GroupedLinearPlan plan = *p;
  const Stream st = env.stream;
  return {sku, w.ws.bytes, [plan, args, st, w, offsets](size_t k) { return plan.run(st, w.ws, args[k]); }};
}

void run_case(const Env& env, const GemmCase& c, Res& r) {
  const size_t per_set = bytes_per_set(c);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 8));
  Sets sets(env);
  const Prepared p = c.kind == Kind::Mm          ? prepare_mm(env, c, sets, r.sets)
                     : c.kind == Kind::LinearFwd ? prepare_linear(env, c, sets, r.sets)
                     : c.kind == Kind::MlpBwd    ? prepare_mlp_bwd(env, c, sets, r.sets)
                     : c.kind == Kind::GroupedFwd ? prepare_grouped(env, c, sets, r.sets)
                     : c.kind == Kind::Scaled     ? prepare_scaled(env, c, sets, r.sets)
                                                  : prepare_linear_bwd(env, c, sets, r.sets);
  r.variant = p.sku.variant;
  r.backend = backend_name(p.sku.backend);
  r.sku = p.sku.to_string();
  r.workspace = p.workspace;
  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    status_check(p.run(static_cast<size_t>(i % r.sets)), "run");
  });
  r.us = ms * 1e3;
  r.tflops = c.flops() / (ms * 1e-3) / 1e12;
  const double ceiling = g_ceiling.of(c.dtype);
  r.frac = ceiling > 0 ? r.tflops / ceiling : 0;
}

const char* activation_json(GemmActivation a) {
  switch (a) {
    case GemmActivation::None: return "none";
    case GemmActivation::Relu: return "relu";
    case GemmActivation::GeluTanh: return "gelu_tanh";
    case GemmActivation::Gelu: return "gelu";
  }
  return "?";
}

std::string row_of(const GemmCase& c, const Res& r) {
  char line[256];
  if (!r.error.empty()) {
    std::snprintf(line, sizeof line, "%-46s  ERROR ", c.name.c_str());
    return line + r.error;
  }
  std::snprintf(line, sizeof line, "%-46s %10.1f %9.1f %6.1f%%  ", c.name.c_str(), r.us, r.tflops, 100 * r.frac);
  return line + r.variant;
}

JsonObject json_of(const GemmCase& c, const Res& r) {
  JsonObject j;
  j.str("name", c.name)
      .str("op", c.op)
      .str("dir", c.bwd() ? "bwd" : "fwd")
      .str("dtype", std::string(dtype_name(c.dtype)))
      .integer("batch", c.batch)
      .integer("M", c.M)
      .integer("K", c.K)
      .integer("N", c.N)
      .str("activation", activation_json(c.act))
      .boolean("save_aux", c.save_aux)
      .boolean("rowwise", c.rowwise)
      .boolean("fast_accum", c.fast_accum)
      .num("flops", c.flops())
      .boolean("ok", r.error.empty());
  if (r.error.empty())
    j.num("time_us", r.us)
        .num("tflops", r.tflops)
        .num("frac_ceiling", r.frac)
        .integer("sets", r.sets)
        .integer("workspace_bytes", static_cast<int64_t>(r.workspace));
  else
    j.str("error", r.error);
  j.str("variant", r.variant).str("backend", r.backend).str("sku", r.sku);
  return j;
}

// ---- the cases ------------------------------------------------------------------------

std::string shape_name(int64_t M, int64_t K, int64_t N) {
  return std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
}

std::vector<GemmCase> all_cases() {
  struct MKN {
    int64_t M, K, N;
  };
  const MKN mm_shapes[] = {{8192, 8192, 8192}, {8192, 4096, 11008}, {8192, 11008, 4096}, {8192, 768, 3072}, {8192, 3072, 768}};
  const MKN mlp_shapes[] = {{8192, 768, 3072} /* GPT-2 */, {8192, 4096, 11008} /* Llama-7B */};
  std::vector<GemmCase> v;
  for (DType dt : {DType::BF16, DType::F16}) {
    const std::string dn(dtype_name(dt));
    for (const MKN& s : mm_shapes) {
      GemmCase c;
      c.name = "mm." + dn + "." + shape_name(s.M, s.K, s.N);
      c.op = "mm";
      c.dtype = dt;
      c.M = s.M, c.K = s.K, c.N = s.N;
      v.push_back(c);
    }
    GemmCase b;
    b.name = "bmm." + dn + ".64x1024^3";
    b.op = "bmm";
    b.dtype = dt;
    b.batch = 64;
    b.M = b.K = b.N = 1024;
    v.push_back(b);
    for (const MKN& s : mlp_shapes) {
      auto linear = [&](const char* op, Kind kind, GemmActivation act, bool aux) {
        GemmCase c;
        c.name = std::string(op) + (kind == Kind::LinearBwd || kind == Kind::MlpBwd ? ".bwd." : ".fwd.") + dn + "." +
                 shape_name(s.M, s.K, s.N);
        c.op = op;
        c.kind = kind;
        c.dtype = dt;
        c.M = s.M, c.K = s.K, c.N = s.N;
        c.act = act;
        c.save_aux = aux;
        return c;
      };
      v.push_back(linear("linear_gelu_tanh", Kind::LinearFwd, GemmActivation::GeluTanh, false));
      v.push_back(linear("linear_gelu_tanh_aux", Kind::LinearFwd, GemmActivation::GeluTanh, true));
      v.push_back(linear("linear_gelu", Kind::LinearFwd, GemmActivation::Gelu, false));
      // The forward it differentiates saved its pre-activation; the backward's
      // descriptor has save_aux = false (there the aux is an input).
      v.push_back(linear("linear_gelu_tanh", Kind::LinearBwd, GemmActivation::GeluTanh, false));
      v.push_back(linear("mlp_gelu_tanh", Kind::MlpBwd, GemmActivation::GeluTanh, false));
    }
    GemmCase g;
    g.kind = Kind::GroupedFwd;
    g.op = "grouped_linear";
    g.dtype = dt;
    g.batch = kExperts;
    g.M = 16384, g.K = 4096, g.N = 14336;
    g.name = "grouped_linear.fwd." + dn + ".E8x" + shape_name(g.M, g.K, g.N);
    v.push_back(g);
  }
  for (bool rowwise : {false, true})
    for (bool fast : {false, true}) {
      GemmCase c;
      c.kind = Kind::Scaled;
      c.op = std::string("scaled_mm") + (rowwise ? "_rowwise" : "") + (fast ? "_fast" : "");
      c.dtype = DType::F8E4M3;
      c.M = c.K = c.N = 8192;
      c.rowwise = rowwise;
      c.fast_accum = fast;
      c.name = c.op + ".f8e4m3." + shape_name(c.M, c.K, c.N);
      v.push_back(c);
    }
  return v;
}

// Family::start: the cuBLAS ceilings, the table header, the JSON header.
JsonObject start(Env& env) {
  g_ceiling.bf16 = gemm_ceiling_tflops(env, DType::BF16);
  g_ceiling.f16 = gemm_ceiling_tflops(env, DType::F16);
  env.gemm_tflops = g_ceiling.bf16;
  const DeviceMeta& m = env.meta;
  std::printf("device: %s (sm_%d%d, %d SMs, L2 %.0f MB), CUDA runtime %s, driver %s\n", m.device.c_str(), m.cc_major,
              m.cc_minor, m.sms, m.l2 / 1e6, m.runtime.c_str(), m.driver.c_str());
  std::printf("cuBLAS GEMM 8192^3 (the ceiling): bf16 %.1f TFLOP/s, f16 %.1f TFLOP/s; %d iters, median\n\n",
              g_ceiling.bf16, g_ceiling.f16, env.iters);
  std::printf("%-46s %10s %9s %7s  %s\n", "case", "time_us", "TFLOP/s", "%ceil", "variant");
  JsonObject h;
  h.str("tool", "baracuda_gemm_bench")
      .str("date", utc_now())
      .str("device", m.device)
      .str("compute_capability", std::to_string(m.cc_major) + "." + std::to_string(m.cc_minor))
      .integer("sm_count", m.sms)
      .integer("l2_bytes", static_cast<int64_t>(m.l2))
      .integer("memory_bytes", static_cast<int64_t>(m.mem))
      .str("cuda_runtime", m.runtime)
      .str("cuda_driver", m.driver)
      .num("gemm_bf16_tflops", g_ceiling.bf16)
      .num("gemm_f16_tflops", g_ceiling.f16)
      .integer("iters", env.iters)
      .integer("warmup", env.warmup)
      .str("filter", env.filter);
  return h;
}

}  // namespace

void register_gemm(Registry& reg) {
  reg.add_family(Family{"gemm", "", 30, 5, start});
  for (const GemmCase& c : all_cases())
    reg.add_case(Case{"gemm", c.name, [c](Env& env) {
                        const Res r = run_guarded<Res>(env, [&](Env& e, Res& res) { run_case(e, c, res); });
                        return Outcome{r.error.empty(), row_of(c, r), json_of(c, r)};
                      }});
}

}  // namespace baracuda::bench

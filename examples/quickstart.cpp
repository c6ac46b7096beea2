// quickstart: runs a few reductions and a causal grouped-query flash attention
// (forward and backward) on the default device (CUDA when a GPU is visible,
// otherwise the CPU), checks each against the CPU reference and prints op,
// dtype, backend, max relative error and time. Without a GPU it says that it
// only compared the CPU reference with itself.
#include <baracuda/baracuda.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace baracuda;

namespace {

// Throws on a failing Status (Status is [[nodiscard]]: a dropped one would hide a failure).
void check(const Status& st) {
  if (!st) throw StatusError(st);
}

// Runs `desc` on `stream` over host data `xs` (staged to the stream's device),
// returns the output as doubles and the run time in microseconds.
std::vector<double> run_reduce(const Stream& stream, const ReduceDescriptor& desc, const std::vector<float>& xs,
                               double* micros, KernelSku* sku) {
  ReducePlan plan = ReducePlan::select(stream, desc).value();  // throws on error
  Buffer x(stream.device(), xs.size() * sizeof(float));
  check(x.copy_from_host(xs.data(), xs.size() * sizeof(float)));
  const int64_t n_out = shape_numel(plan.output_shape());
  const size_t out_size = dtype_size(plan.output_dtype());
  Buffer y(stream.device(), static_cast<size_t>(n_out) * out_size);
  Buffer ws(stream.device(), plan.workspace_size());
  ReduceArgs args{x.view(DType::F32, desc.shape), y.view_mut(plan.output_dtype(), plan.output_shape())};
  check(plan.run(stream, Workspace(ws.data(), ws.bytes()), args));  // warm-up + validation
  check(synchronize(stream));
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = 10;
  for (int i = 0; i < reps; ++i) check(plan.run(stream, Workspace(ws.data(), ws.bytes()), args));
  check(synchronize(stream));
  *micros = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
  *sku = plan.sku();
  std::vector<double> out(static_cast<size_t>(n_out));
  if (plan.output_dtype() == DType::I64) {
    std::vector<int64_t> h(static_cast<size_t>(n_out));
    check(y.copy_to_host(h.data(), h.size() * sizeof(int64_t)));
    for (size_t i = 0; i < h.size(); ++i) out[i] = static_cast<double>(h[i]);
  } else {
    std::vector<float> h(static_cast<size_t>(n_out));
    check(y.copy_to_host(h.data(), h.size() * sizeof(float)));
    for (size_t i = 0; i < h.size(); ++i) out[i] = h[i];
  }
  return out;
}

// Flash attention, f32, causal, 8 query heads sharing 2 kv heads: forward
// (y, lse) and backward (dq, dk, dv) on `stream`. Returns every output,
// concatenated, as doubles.
std::vector<double> run_attention(const Stream& stream, const FlashSdpaDescriptor& d, const std::vector<float>& q,
                                  const std::vector<float>& kv, const std::vector<float>& dy, KernelSku* fw_sku,
                                  KernelSku* bw_sku) {
  const Dims qs{d.batch, d.heads, d.q_len, d.head_dim}, ks{d.batch, d.kv_heads, d.kv_len, d.head_dim};
  const Dims ls{d.batch, d.heads, d.q_len};
  auto upload = [&](const std::vector<float>& h) {
    Buffer b(stream.device(), h.size() * sizeof(float));
    check(b.copy_from_host(h.data(), h.size() * sizeof(float)));
    return b;
  };
  Buffer bq = upload(q), bk = upload(kv), bv = upload(kv), bdy = upload(dy);
  Buffer y(stream.device(), q.size() * 4), lse(stream.device(), q.size() / d.head_dim * 4);
  Buffer dq(stream.device(), q.size() * 4), dk(stream.device(), kv.size() * 4), dv(stream.device(), kv.size() * 4);

  FlashSdpaPlan fwd = FlashSdpaPlan::select(stream, d).value();
  FlashSdpaArgs fa;
  fa.q = bq.view(DType::F32, qs);
  fa.k = bk.view(DType::F32, ks);
  fa.v = bv.view(DType::F32, ks);
  fa.y = y.view_mut(DType::F32, qs);
  fa.lse = lse.view_mut(DType::F32, ls);
  Buffer ws(stream.device(), fwd.workspace_size());
  check(fwd.run(stream, Workspace(ws.data(), ws.bytes()), fa));

  FlashSdpaBackwardPlan bwd = FlashSdpaBackwardPlan::select(stream, d).value();
  FlashSdpaBackwardArgs ba;
  ba.dy = bdy.view(DType::F32, qs);
  ba.q = fa.q;
  ba.k = fa.k;
  ba.v = fa.v;
  ba.y = fa.y;
  ba.lse = fa.lse;
  ba.dq = dq.view_mut(DType::F32, qs);
  ba.dk = dk.view_mut(DType::F32, ks);
  ba.dv = dv.view_mut(DType::F32, ks);
  Buffer bws(stream.device(), bwd.workspace_size());
  check(bwd.run(stream, Workspace(bws.data(), bws.bytes()), ba));
  check(synchronize(stream));
  *fw_sku = fwd.sku();
  *bw_sku = bwd.sku();
  std::vector<double> out;
  for (Buffer* b : {&y, &dq, &dk, &dv}) {
    std::vector<float> h(b->bytes() / 4);
    check(b->copy_to_host(h.data(), b->bytes()));
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

}  // namespace

int main() {
  const bool gpu = cuda_available();
  const Stream stream = gpu ? Stream::cuda(0) : Stream::cpu();
  std::printf("baracuda quickstart: default device %s\n\n", stream.device().to_string().c_str());

  const Dims shape{256, 4096};
  std::vector<float> xs(static_cast<size_t>(shape_numel(shape)));
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : xs) v = dist(rng);

  struct Case { ReduceKind kind; Dims axes; };
  const Case cases[] = {{ReduceKind::Sum, {1}},       {ReduceKind::Mean, {0}},  {ReduceKind::Max, {1}},
                        {ReduceKind::Norm2, {1}},     {ReduceKind::LogSumExp, {1}}, {ReduceKind::Var, {0}},
                        {ReduceKind::Std, {}},        {ReduceKind::ArgMax, {1}}};
  std::printf("%-10s %-6s %-5s %-14s %-14s %12s %10s\n", "op", "axes", "dtype", "backend", "variant", "max rel err", "time us");
  bool all_ok = true;
  for (const Case& c : cases) {
    ReduceDescriptor d;
    d.kind = c.kind;
    d.dtype = DType::F32;
    d.shape = shape;
    d.axes = c.axes;
    double us = 0, ref_us = 0;
    KernelSku sku, ref_sku;
    const auto got = run_reduce(stream, d, xs, &us, &sku);
    const auto ref = run_reduce(Stream::cpu(), d, xs, &ref_us, &ref_sku);
    double err = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      err = std::max(err, std::abs(got[i] - ref[i]) / std::max(1.0, std::abs(ref[i])));
    const bool ok = err <= 1e-4;
    all_ok = all_ok && ok;
    std::printf("%-10s %-6s %-5s %-14s %-14s %12.2e %10.1f%s\n", reduce_kind_name(c.kind), c.axes.to_string().c_str(), "f32",
                backend_name(sku.backend), sku.variant.c_str(), err, us, ok ? "" : "  MISMATCH");
  }

  // Flash attention, forward + backward, against the CPU reference.
  {
    FlashSdpaDescriptor d;
    d.dtype = DType::F32;
    d.batch = 2;
    d.heads = 8;
    d.kv_heads = 2;
    d.q_len = d.kv_len = 128;
    d.head_dim = 64;
    d.causal = true;
    std::vector<float> q(static_cast<size_t>(2 * 8 * 128 * 64)), kv(static_cast<size_t>(2 * 2 * 128 * 64)), dy(q.size());
    for (auto* v : {&q, &kv, &dy})
      for (float& x : *v) x = dist(rng);
    KernelSku fs, bs, rfs, rbs;
    const auto got = run_attention(stream, d, q, kv, dy, &fs, &bs);
    const auto ref = run_attention(Stream::cpu(), d, q, kv, dy, &rfs, &rbs);
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    const double err = std::sqrt(num / den);
    const bool ok = err <= 1e-5;
    all_ok = all_ok && ok;
    std::printf("\nflash attention f32 causal GQA 8/2 [2,8,128,64], forward %s (%s) + backward %s (%s): rel err %.2e%s\n",
                backend_name(fs.backend), fs.variant.c_str(), backend_name(bs.backend), bs.variant.c_str(), err,
                ok ? "" : "  MISMATCH");
  }

  // Elementwise: SwiGLU of two [256, 4096] tensors, then a row-broadcast add
  // of a [4096] bias, in place (out is a).
  {
    const int64_t n = shape_numel(shape);
    std::vector<float> a(xs), b(static_cast<size_t>(n)), bias(4096);
    for (float& v : b) v = dist(rng);
    for (float& v : bias) v = dist(rng);
    auto run_ew = [&](const Stream& s, KernelSku* sku) {
      Buffer da(s.device(), n * 4), db(s.device(), n * 4), dbias(s.device(), 4096 * 4);
      check(da.copy_from_host(a.data(), n * 4));
      check(db.copy_from_host(b.data(), n * 4));
      check(dbias.copy_from_host(bias.data(), 4096 * 4));
      const TensorMut ta = TensorMut::contiguous(static_cast<float*>(da.data()), s.device(), shape, n);
      const TensorRef tb = TensorRef::contiguous(static_cast<const float*>(db.data()), s.device(), shape, n);
      const TensorRef tbias = TensorRef::contiguous(static_cast<const float*>(dbias.data()), s.device(), {4096}, 4096);
      BinaryDescriptor glu;
      glu.op = BinaryOp::SwiGlu;
      glu.a = ElementwiseOperand::of(ta);
      glu.b = ElementwiseOperand::of(tb);
      BinaryArgs ga;
      ga.a = ta;
      ga.b = tb;
      ga.out = ta;  // in place
      check(BinaryPlan::select(s, glu).value().run(s, {}, ga));
      BinaryDescriptor add;
      add.a = ElementwiseOperand::of(ta);
      add.b = ElementwiseOperand::of(tbias);
      const BinaryPlan add_plan = BinaryPlan::select(s, add).value();
      BinaryArgs aa;
      aa.a = ta;
      aa.b = tbias;
      aa.out = ta;
      *sku = add_plan.sku_for(s, {}, aa).value();
      check(add_plan.run(s, {}, aa));
      std::vector<float> out(static_cast<size_t>(n));
      check(synchronize(s));
      check(da.copy_to_host(out.data(), n * 4));
      return out;
    };
    KernelSku sku, ref_sku;
    const auto got = run_ew(stream, &sku);
    const auto ref = run_ew(Stream::cpu(), &ref_sku);
    double err = 0;
    for (size_t i = 0; i < ref.size(); ++i) err = std::max(err, std::abs(double(got[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i]))));
    const bool ok = err <= 1e-5;
    all_ok = all_ok && ok;
    std::printf("\nelementwise swiglu(a, b) + bias[4096], in place, f32 [256,4096]: %s (%s): max rel err %.2e%s\n",
                backend_name(sku.backend), sku.variant.c_str(), err, ok ? "" : "  MISMATCH");
  }

  // A bad request gets a clear error instead of a crash.
  ReduceDescriptor bad;
  bad.kind = ReduceKind::Sum;
  bad.shape = shape;
  bad.axes = {2};
  auto r = ReducePlan::select(stream, bad);
  std::printf("\nselect() with axis 2 on a rank-2 input -> %s\n", r.status().to_string().c_str());
  if (!gpu) {
    // Without a GPU both sides ran the CPU reference: say so rather than claim a GPU check.
    std::printf("no CUDA device: every plan ran on the CPU reference and was compared with itself "
                "(a self-consistency check; run on a machine with a GPU to check the CUDA kernels)\n");
  }
  std::printf("%s\n", all_ok ? (gpu ? "all results match the CPU reference" : "self-consistency check passed")
                             : "SOME RESULTS DIFFER FROM THE CPU REFERENCE");
  return all_ok ? 0 : 1;
}

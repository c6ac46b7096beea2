// attention_block: the attention core of a transformer layer, forward and
// backward, on baracuda alone:
//
//   q_rot, k_rot = RoPE(q, k)                     RopePlan (q and k in one launch)
//   y, lse       = flash_attention(q_rot, k_rot, v, causal, GQA)   FlashSdpaPlan
//   loss         = sum(y * g)                     (g: a fixed random "upstream gradient")
//   dq_rot, dk_rot, dv = flash backward(dy = g)   FlashSdpaBackwardPlan
//   dq, dk       = RoPE backward(dq_rot, dk_rot)  RopeBackwardPlan
//
// It first runs in f64 on the CPU and checks dq, dk, dv against central finite
// differences of the loss (the gradient check every new layer deserves), then,
// when a GPU is visible, runs the same block in f32 on CUDA and compares it
// with the CPU. Every Status is checked: a failing run() says why.
#include <baracuda/baracuda.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

using namespace baracuda;

namespace {

constexpr int64_t B = 1, H = 4, Hk = 2, S = 12, D = 32;

void check(const Status& st) {
  if (!st) throw StatusError(st);
}

// Host vectors of doubles <-> device buffers of `dt` (f32 or f64).
Buffer upload(const Stream& s, DType dt, const std::vector<double>& h) {
  Buffer b(s.device(), h.size() * dtype_size(dt));
  if (dt == DType::F64) {
    check(b.copy_from_host(h.data(), b.bytes()));
  } else {
    std::vector<float> f(h.begin(), h.end());
    check(b.copy_from_host(f.data(), b.bytes()));
  }
  return b;
}
std::vector<double> download(const Buffer& b, DType dt) {
  if (dt == DType::F64) {
    std::vector<double> h(b.bytes() / 8);
    check(b.copy_to_host(h.data(), b.bytes()));
    return h;
  }
  std::vector<float> f(b.bytes() / 4);
  check(b.copy_to_host(f.data(), b.bytes()));
  return {f.begin(), f.end()};
}

struct Inputs {
  std::vector<double> q, k, v, g;  // g = dloss/dy
};

struct Grads {
  double loss = 0;
  std::vector<double> y, dq, dk, dv;
};

// The block on `stream` in `dt`; returns the loss, y and the input gradients.
Grads block(const Stream& stream, DType dt, const Inputs& in) {
  const Dims qs{B, H, S, D}, ks{B, Hk, S, D}, ls{B, H, S};
  Buffer q = upload(stream, dt, in.q), k = upload(stream, dt, in.k), v = upload(stream, dt, in.v);
  Buffer g = upload(stream, dt, in.g);
  Buffer qr(stream.device(), q.bytes()), kr(stream.device(), k.bytes());
  Buffer y(stream.device(), q.bytes()), lse(stream.device(), static_cast<size_t>(B * H * S) * 4);
  Buffer dqr(stream.device(), q.bytes()), dkr(stream.device(), k.bytes()), dv(stream.device(), v.bytes());
  Buffer dq(stream.device(), q.bytes()), dk(stream.device(), k.bytes());

  RopeDescriptor rd;
  rd.dtype = dt;
  rd.batch = B;
  rd.heads = H;
  rd.kv_heads = Hk;
  rd.seq_len = S;
  rd.head_dim = D;
  auto rope = RopePlan::select(stream, rd).value();  // value() throws StatusError on failure
  check(rope.run(stream, Workspace::none(),
                 RopeArgs{q.view(dt, qs), k.view(dt, ks), {}, {}, {}, qr.view_mut(dt, qs), kr.view_mut(dt, ks)}));

  FlashSdpaDescriptor fd;
  fd.dtype = dt;
  fd.batch = B;
  fd.heads = H;
  fd.kv_heads = Hk;
  fd.q_len = fd.kv_len = S;
  fd.head_dim = D;
  fd.causal = true;
  auto fwd = FlashSdpaPlan::select(stream, fd).value();
  Buffer fws(stream.device(), fwd.workspace_size());
  FlashSdpaArgs fa;
  fa.q = qr.view(dt, qs);
  fa.k = kr.view(dt, ks);
  fa.v = v.view(dt, ks);
  fa.y = y.view_mut(dt, qs);
  fa.lse = lse.view_mut(DType::F32, ls);
  check(fwd.run(stream, Workspace(fws.data(), fws.bytes()), fa));

  auto bwd = FlashSdpaBackwardPlan::select(stream, fd).value();
  Buffer bws(stream.device(), bwd.workspace_size());
  FlashSdpaBackwardArgs ba;
  ba.dy = g.view(dt, qs);
  ba.q = fa.q;
  ba.k = fa.k;
  ba.v = fa.v;
  ba.y = fa.y;
  ba.lse = fa.lse;
  ba.dq = dqr.view_mut(dt, qs);
  ba.dk = dkr.view_mut(dt, ks);
  ba.dv = dv.view_mut(dt, ks);
  check(bwd.run(stream, Workspace(bws.data(), bws.bytes()), ba));

  auto rope_bwd = RopeBackwardPlan::select(stream, rd).value();
  check(rope_bwd.run(stream, Workspace::none(),
                     RopeBackwardArgs{dqr.view(dt, qs), dkr.view(dt, ks), {}, {}, {}, dq.view_mut(dt, qs),
                                      dk.view_mut(dt, ks)}));
  check(synchronize(stream));

  Grads r;
  r.y = download(y, dt);
  for (size_t i = 0; i < r.y.size(); ++i) r.loss += r.y[i] * in.g[i];
  r.dq = download(dq, dt);
  r.dk = download(dk, dt);
  r.dv = download(dv, dt);
  return r;
}

double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  std::normal_distribution<double> n01(0.0, 1.0);
  Inputs in;
  in.q.resize(B * H * S * D);
  in.k.resize(B * Hk * S * D);
  in.v.resize(B * Hk * S * D);
  in.g.resize(B * H * S * D);
  for (auto* t : {&in.q, &in.k, &in.v, &in.g})
    for (double& x : *t) x = n01(rng);

  // 1. f64 on the CPU, against central finite differences of the loss.
  const Grads ref = block(Stream::cpu(), DType::F64, in);
  double worst = 0;
  const double h = 1e-6;
  struct Probe {
    std::vector<double> Inputs::*tensor;
    const std::vector<double>* grad;
    const char* name;
  };
  const Probe probes[] = {{&Inputs::q, &ref.dq, "dq"}, {&Inputs::k, &ref.dk, "dk"}, {&Inputs::v, &ref.dv, "dv"}};
  for (const Probe& p : probes) {
    for (size_t i : {size_t{40}, size_t{77}, (in.*p.tensor).size() - 1}) {
      Inputs plus = in, minus = in;
      (plus.*p.tensor)[i] += h;
      (minus.*p.tensor)[i] -= h;
      const double fd = (block(Stream::cpu(), DType::F64, plus).loss - block(Stream::cpu(), DType::F64, minus).loss) / (2 * h);
      const double err = std::abs(fd - (*p.grad)[i]) / std::max(1.0, std::abs(fd));
      worst = std::max(worst, err);
      std::printf("%s[%3zu]  analytic %+.9f  finite difference %+.9f\n", p.name, i, (*p.grad)[i], fd);
    }
  }
  const bool fd_ok = worst < 1e-6;
  std::printf("CPU f64 gradient check: worst relative error %.2e %s\n\n", worst, fd_ok ? "(ok)" : "(FAILED)");

  // 2. f32 on CUDA against the CPU, when there is a GPU.
  bool gpu_ok = true;
  if (cuda_available()) {
    const Grads got = block(Stream::cuda(0), DType::F32, in);
    const double ey = rel_err(got.y, ref.y), eq = rel_err(got.dq, ref.dq), ek = rel_err(got.dk, ref.dk),
                 ev = rel_err(got.dv, ref.dv);
    gpu_ok = ey < 1e-5 && eq < 1e-5 && ek < 1e-5 && ev < 1e-5;
    std::printf("CUDA f32 vs CPU f64: y %.1e  dq %.1e  dk %.1e  dv %.1e %s\n", ey, eq, ek, ev, gpu_ok ? "(ok)" : "(FAILED)");
  } else {
    std::printf("no CUDA device: only the CPU reference ran (nothing was compared with a GPU)\n");
  }
  return fd_ok && gpu_ok ? 0 : 1;
}

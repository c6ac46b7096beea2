// A naive model of the matrix multiply family's documented semantics
// (include/baracuda/ops/gemm.hpp), written for the tests and independent of
// src/: torch.matmul's shape rules, out = act(alpha * a@b + beta * c + bias),
// and LinearBackward's gradients, all in double with plain loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace gemm_oracle {

using baracuda::Dims;
using baracuda::GemmActivation;

inline double act(GemmActivation a, double x) {
  switch (a) {
    case GemmActivation::Relu: return x > 0 ? x : 0.0;
    case GemmActivation::GeluTanh: {
      const double s = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
    }
    case GemmActivation::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

// d act / d pre at pre (Relu: 0 at 0, like PyTorch's threshold_backward).
inline double act_grad(GemmActivation a, double x) {
  switch (a) {
    case GemmActivation::Relu: return x > 0 ? 1.0 : 0.0;
    case GemmActivation::GeluTanh: {
      const double s = std::sqrt(2.0 / M_PI), c = 0.044715;
      const double t = std::tanh(s * (x + c * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * c * x * x);
    }
    case GemmActivation::Gelu:
      return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    default: return 1.0;
  }
}

// Index into a tensor of shape `src` (right-aligned NumPy broadcasting over
// `dst`) of the element at multi-index `idx` of `dst`.
inline int64_t broadcast_index(const Dims& src, const Dims& dst, const Dims& idx) {
  int64_t off = 0, stride = 1;
  for (int s = src.rank - 1, d = dst.rank - 1; s >= 0; --s, --d) {
    const int64_t i = src[s] == 1 ? 0 : idx[d];
    off += i * stride;
    stride *= src[s];
  }
  return off;
}

struct Matmul {
  bool ok = false;  // the shapes follow torch.matmul's rules
  Dims out_shape;
  std::vector<double> pre, out;  // row-major over out_shape
};

// torch.matmul(a, b) (values row-major over their shapes), then alpha, beta*c,
// bias and the activation. c (when given) broadcasts to out_shape.
inline Matmul matmul(const Dims& as, const std::vector<double>& a, const Dims& bs, const std::vector<double>& b,
                     double alpha = 1.0, const Dims* cs = nullptr, const std::vector<double>* c = nullptr,
                     double beta = 1.0, const std::vector<double>* bias = nullptr,
                     GemmActivation activation = GemmActivation::None) {
  Matmul r;
  if (as.rank < 1 || bs.rank < 1) return r;
  // Promote 1-D operands: a [K] -> [1, K], b [K] -> [K, 1].
  Dims a2 = as, b2 = bs;
  if (as.rank == 1) a2 = Dims{1, as[0]};
  if (bs.rank == 1) b2 = Dims{bs[0], 1};
  const int64_t M = a2[a2.rank - 2], K = a2[a2.rank - 1], N = b2[b2.rank - 1];
  if (b2[b2.rank - 2] != K) return r;
  Dims ba = Dims::of_rank(a2.rank - 2), bb = Dims::of_rank(b2.rank - 2);
  for (int i = 0; i < ba.rank; ++i) ba[i] = a2[i];
  for (int i = 0; i < bb.rank; ++i) bb[i] = b2[i];
  const int br = std::max(ba.rank, bb.rank);
  Dims batch = Dims::of_rank(br);
  for (int i = 0; i < br; ++i) {
    const int ia = i - (br - ba.rank), ib = i - (br - bb.rank);
    const int64_t ea = ia >= 0 ? ba[ia] : 1, eb = ib >= 0 ? bb[ib] : 1;
    if (ea != eb && ea != 1 && eb != 1) return r;
    batch[i] = ea == 1 ? eb : ea;
  }
  Dims full = batch;
  full.push_back(M);
  full.push_back(N);
  r.out_shape = batch;
  if (as.rank != 1) r.out_shape.push_back(M);
  if (bs.rank != 1) r.out_shape.push_back(N);
  r.ok = true;

  const int64_t nb = bt::numel(batch);
  r.pre.assign(static_cast<size_t>(nb * M * N), 0.0);
  for (int64_t t = 0; t < nb; ++t) {
    const Dims ti = bt::unravel(t, batch);
    // Batch offsets of a and b (their batch dims right-aligned against batch).
    const int64_t oa = broadcast_index(ba, batch, ti), ob = broadcast_index(bb, batch, ti);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a[static_cast<size_t>((oa * M + i) * K + k)] * b[static_cast<size_t>((ob * K + k) * N + j)];
        r.pre[static_cast<size_t>((t * M + i) * N + j)] = alpha * acc;
      }
  }
  // full and out_shape have the same row-major order (dropped axes have extent 1).
  for (size_t e = 0; e < r.pre.size(); ++e) {
    const Dims oi = bt::unravel(static_cast<int64_t>(e), r.out_shape);
    if (c && cs) r.pre[e] += beta * (*c)[static_cast<size_t>(broadcast_index(*cs, r.out_shape, oi))];
    if (bias) r.pre[e] += (*bias)[static_cast<size_t>(e % N)];
  }
  r.out.resize(r.pre.size());
  for (size_t e = 0; e < r.pre.size(); ++e) r.out[e] = act(activation, r.pre[e]);
  return r;
}

// nn.functional.linear: y = act(x . w^T + bias), x [rows, K] (flattened), w [N, K].
inline Matmul linear(int64_t rows, int64_t K, int64_t N, const std::vector<double>& x, const std::vector<double>& w,
                     const std::vector<double>* bias, GemmActivation activation) {
  Matmul r;
  r.ok = true;
  r.pre.assign(static_cast<size_t>(rows * N), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = bias ? (*bias)[static_cast<size_t>(j)] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += x[static_cast<size_t>(i * K + k)] * w[static_cast<size_t>(j * K + k)];
      r.pre[static_cast<size_t>(i * N + j)] = acc;
    }
  r.out.resize(r.pre.size());
  for (size_t e = 0; e < r.pre.size(); ++e) r.out[e] = act(activation, r.pre[e]);
  return r;
}

struct LinearGrads {
  std::vector<double> dx, dw, db;
};

// Gradients of nn.functional.linear given dy and `pre_or_y` (the
// pre-activation for Gelu / GeluTanh, y for Relu, unused for None).
inline LinearGrads linear_backward(int64_t rows, int64_t K, int64_t N, const std::vector<double>& x,
                                   const std::vector<double>& w, const std::vector<double>& dy,
                                   const std::vector<double>& pre_or_y, GemmActivation activation) {
  std::vector<double> g(dy.size());
  for (size_t e = 0; e < g.size(); ++e)
    g[e] = activation == GemmActivation::None ? dy[e] : dy[e] * act_grad(activation, pre_or_y[e]);
  LinearGrads r;
  r.dx.assign(static_cast<size_t>(rows * K), 0.0);
  r.dw.assign(static_cast<size_t>(N * K), 0.0);
  r.db.assign(static_cast<size_t>(N), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double gij = g[static_cast<size_t>(i * N + j)];
      r.db[static_cast<size_t>(j)] += gij;
      for (int64_t k = 0; k < K; ++k) {
        r.dx[static_cast<size_t>(i * K + k)] += gij * w[static_cast<size_t>(j * K + k)];
        r.dw[static_cast<size_t>(j * K + k)] += gij * x[static_cast<size_t>(i * K + k)];
      }
    }
  return r;
}

}  // namespace gemm_oracle

#include "ops/gemm/reference.hpp"

#include <cmath>
#include <vector>

#include "core/host_elements.hpp"

namespace baracuda::gemm::ref {

using baracuda::detail::load_f;
using baracuda::detail::store_f;

namespace {
constexpr double kSqrt2OverPi = 0.79788456080286535588, kGeluK = 0.044715;
constexpr double kInvSqrt2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
}  // namespace

double activation(GemmActivation a, double x) {
  switch (a) {
    case GemmActivation::None: return x;
    case GemmActivation::Relu: return x > 0 ? x : (x != x ? x : 0.0);
    case GemmActivation::GeluTanh: return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + kGeluK * x * x * x)));
    case GemmActivation::Gelu: return 0.5 * x * std::erfc(-x * kInvSqrt2);
  }
  return x;
}

double activation_grad(GemmActivation a, double x) {
  switch (a) {
    case GemmActivation::None: return 1.0;
    case GemmActivation::Relu: return x > 0 ? 1.0 : 0.0;
    case GemmActivation::GeluTanh: {
      const double t = std::tanh(kSqrt2OverPi * (x + kGeluK * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kGeluK * x * x);
    }
    case GemmActivation::Gelu: return 0.5 * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
  }
  return 1.0;
}

namespace {
// The fast paths' double copies of an operand: at most this many elements
// (256 MiB); larger operands take the plain loops.
constexpr int64_t kMaxCopy = int64_t{1} << 25;

// The fast paths' inner loop: s[c] = sum over i in [0, n) of x[i] * col_c[i]
// for the four columns col_c = first + c * ld, each summed in increasing i
// (the plain loops' order: bit-identical results), x read once for all four.
inline void dot4(const double* x, const double* first, int64_t ld, int64_t n, double (&s)[4]) {
  const double *c0 = first, *c1 = first + ld, *c2 = first + 2 * ld, *c3 = first + 3 * ld;
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    s0 += v * c0[i];
    s1 += v * c1[i];
    s2 += v * c2[i];
    s3 += v * c3[i];
  }
  s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

// Offsets of every batch index, row-major over `batch`.
int64_t batch_offset(const int64_t* bstride, const Dims& batch, int64_t t) {
  int64_t off = 0;
  for (int d = batch.rank - 1; d >= 0; --d) {
    off += (t % batch[d]) * bstride[d];
    t /= batch[d];
  }
  return off;
}
}  // namespace

Status run(const Problem& p) {
  const int64_t nb = shape_numel(p.batch);
  if (nb == 0 || p.m == 0 || p.n == 0) return Status::ok();
  const DType t = p.dtype, ta = a_dtype(p), tb = b_dtype(p);
  // Everything after the dot product of row i and column j of batch b.
  auto epilogue = [&](int64_t b, int64_t i, int64_t j, double acc) {
    const int64_t oo = batch_offset(p.out.bstride, p.batch, b) + i * p.out.rs;
    if (p.scaled.on)
      acc *= static_cast<double>(p.scaled.a_scale[p.scaled.rowwise ? i * p.scaled.a_scale_stride : 0]) *
             static_cast<double>(p.scaled.b_scale[p.scaled.rowwise ? j * p.scaled.b_scale_stride : 0]);
    double pre = p.alpha * acc;
    if (p.has_c && p.beta != 0)
      pre += p.beta * load_f(p.c.data, t, batch_offset(p.c.bstride, p.batch, b) + i * p.c.rs + j * p.c.cs);
    if (p.has_bias) pre += load_f(p.bias, t, j * p.bias_stride);
    if (p.dact != GemmActivation::None)
      pre *= activation_grad(p.dact, load_f(p.dact_aux.data, t,
                                            batch_offset(p.dact_aux.bstride, p.batch, b) + i * p.dact_aux.rs +
                                                j * p.dact_aux.cs));
    if (p.save_aux) store_f(p.aux.data, t, batch_offset(p.aux.bstride, p.batch, b) + i * p.aux.rs + j * p.aux.cs, pre);
    store_f(p.out.data, t, oo + j * p.out.cs, activation(p.act, pre));
  };
  // Fast path: b's columns converted to double once per batch index and laid
  // out contiguously (column j at j * k), a's row converted once per row, four
  // columns per pass over the row. Each dot product is still the sum over kk
  // in increasing order of the same double products, so the results are
  // bit-identical to the plain loop below, only 5-10x sooner (the training
  // example runs its whole model on this reference).
  if (p.k > 0 && p.k * p.n <= kMaxCopy) {
    std::vector<double> bt(static_cast<size_t>(p.k * p.n));
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t bo = batch_offset(p.b.bstride, p.batch, b);
      for (int64_t j = 0; j < p.n; ++j)
        for (int64_t kk = 0; kk < p.k; ++kk)
          bt[static_cast<size_t>(j * p.k + kk)] = load_f(p.b.data, tb, bo + kk * p.b.rs + j * p.b.cs);
      baracuda::detail::parallel_for(p.m, baracuda::detail::saturating_product({p.n, p.k + 1}), [&](int64_t i) {
        const int64_t ao = batch_offset(p.a.bstride, p.batch, b) + i * p.a.rs;
        std::vector<double> a(static_cast<size_t>(p.k));
        for (int64_t kk = 0; kk < p.k; ++kk) a[static_cast<size_t>(kk)] = load_f(p.a.data, ta, ao + kk * p.a.cs);
        const double* ar = a.data();
        int64_t j = 0;
        for (; j + 4 <= p.n; j += 4) {
          double s4[4];
          dot4(ar, bt.data() + j * p.k, p.k, p.k, s4);
          for (int c = 0; c < 4; ++c) epilogue(b, i, j + c, s4[c]);
        }
        for (; j < p.n; ++j) {
          const double* bj = bt.data() + j * p.k;
          double s = 0;
          for (int64_t kk = 0; kk < p.k; ++kk) s += ar[kk] * bj[kk];
          epilogue(b, i, j, s);
        }
      });
    }
  } else {
    baracuda::detail::parallel_for(nb * p.m, baracuda::detail::saturating_product({p.n, p.k + 1}), [&](int64_t bi) {
      const int64_t b = bi / p.m, i = bi % p.m;
      const int64_t ao = batch_offset(p.a.bstride, p.batch, b) + i * p.a.rs;
      const int64_t bo = batch_offset(p.b.bstride, p.batch, b);
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < p.k; ++kk)
          acc += load_f(p.a.data, ta, ao + kk * p.a.cs) * load_f(p.b.data, tb, bo + kk * p.b.rs + j * p.b.cs);
        epilogue(b, i, j, acc);
      }
    });
  }
  if (p.has_out_colsum) {  // from the stored (rounded) out, as a separate reduction would read it
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0;
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t i = 0; i < p.m; ++i)
          s += load_f(p.out.data, t, batch_offset(p.out.bstride, p.batch, b) + i * p.out.rs + j * p.out.cs);
      store_f(p.out_colsum, t, j * p.out_colsum_stride, s);
    }
  }
  if (p.has_a_rowsum) {
    for (int64_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t ao = batch_offset(p.a.bstride, p.batch, b) + i * p.a.rs;
        for (int64_t kk = 0; kk < p.k; ++kk) s += load_f(p.a.data, ta, ao + kk * p.a.cs);
      }
      store_f(p.a_rowsum, t, i * p.a_rowsum_stride, s);
    }
  }
  return Status::ok();
}

namespace {
// Offset of row r (row-major over the leading dims of `shape`) of a view whose
// last dim is the feature dim.
int64_t row_offset(const Dims& shape, const Dims& strides, int64_t r) {
  int64_t off = 0;
  for (int d = shape.rank - 2; d >= 0; --d) {
    off += (r % shape[d]) * strides[d];
    r /= shape[d];
  }
  return off;
}
}  // namespace

Status run_linear_backward(const LinearBackward& p) {
  const LinearBackwardDescriptor& d = p.desc;
  const LinearDescriptor& f = d.forward;
  const DType t = f.dtype;
  const int64_t M = p.rows, N = f.out_features, K = f.x_shape[f.x_shape.rank - 1];
  const LinearBackwardArgs& a = p.args;
  const int ld = a.dy.rank() - 1;
  // g = dy * act'(pre), in double, [M, N].
  std::vector<double> g(static_cast<size_t>(M * N));
  for (int64_t r = 0; r < M; ++r) {
    const int64_t dyo = row_offset(a.dy.shape, a.dy.strides, r);
    const int64_t auxo = f.activation != GemmActivation::None ? row_offset(a.aux.shape, a.aux.strides, r) : 0;
    for (int64_t j = 0; j < N; ++j) {
      double v = load_f(a.dy.data, t, dyo + j * a.dy.strides[ld]);
      if (f.activation != GemmActivation::None) {
        const double pre = load_f(a.aux.data, t, auxo + j * a.aux.strides[ld]);
        v = f.activation == GemmActivation::Relu ? (pre > 0 ? v : 0.0) : v * activation_grad(f.activation, pre);
      }
      g[static_cast<size_t>(r * N + j)] = v;
    }
  }
  if (d.need_dx) {
    const int xl = a.dx.rank() - 1;
    // W converted to double once and transposed (column kk of W contiguous at
    // kk * N), four dx elements per pass over g's row: each sum still runs over
    // j in increasing order, bit-identical to the plain loop (large W only).
    std::vector<double> wt;
    if (N * K <= kMaxCopy) {
      wt.resize(static_cast<size_t>(N * K));
      for (int64_t j = 0; j < N; ++j)
        for (int64_t kk = 0; kk < K; ++kk)
          wt[static_cast<size_t>(kk * N + j)] = load_f(a.weight.data, t, j * a.weight.strides[0] + kk * a.weight.strides[1]);
    }
    baracuda::detail::parallel_for(M, baracuda::detail::saturating_product({K, N}), [&](int64_t r) {
      const int64_t o = row_offset(a.dx.shape, a.dx.strides, r);
      auto finish = [&](int64_t kk, double s) {
        if (d.input_activation != GemmActivation::None)
          s *= activation_grad(d.input_activation,
                               load_f(a.x_aux.data, t, row_offset(a.x_aux.shape, a.x_aux.strides, r) +
                                                           kk * a.x_aux.strides[a.x_aux.rank() - 1]));
        store_f(a.dx.data, t, o + kk * a.dx.strides[xl], s);
      };
      const double* gr = g.data() + r * N;
      int64_t kk = 0;
      if (!wt.empty()) {
        for (; kk + 4 <= K; kk += 4) {
          double s4[4];
          dot4(gr, wt.data() + kk * N, N, N, s4);
          for (int c = 0; c < 4; ++c) finish(kk + c, s4[c]);
        }
      }
      for (; kk < K; ++kk) {
        double s = 0;
        for (int64_t j = 0; j < N; ++j)
          s += gr[j] * load_f(a.weight.data, t, j * a.weight.strides[0] + kk * a.weight.strides[1]);
        finish(kk, s);
      }
    });
    if (d.need_input_bias_grad) {
      for (int64_t kk = 0; kk < K; ++kk) {
        double s = 0;
        for (int64_t r = 0; r < M; ++r)
          s += load_f(a.dx.data, t, row_offset(a.dx.shape, a.dx.strides, r) + kk * a.dx.strides[xl]);
        store_f(a.dbias_in.data, t, kk * a.dbias_in.strides[0], s);
      }
    }
  }
  if (d.need_dw) {
    const int xl = a.x.rank() - 1;
    std::vector<int64_t> xo(static_cast<size_t>(M));
    for (int64_t r = 0; r < M; ++r) xo[static_cast<size_t>(r)] = row_offset(a.x.shape, a.x.strides, r);
    // x and g converted / transposed once (column kk of x at kk * M, column j
    // of g at j * M), four dw elements per pass: each sum still runs over r in
    // increasing order, bit-identical to the plain loop.
    std::vector<double> xt, gt;
    if (M * K <= kMaxCopy && M * N <= kMaxCopy) {
      xt.resize(static_cast<size_t>(M * K));
      gt.resize(static_cast<size_t>(M * N));
      for (int64_t r = 0; r < M; ++r) {
        for (int64_t kk = 0; kk < K; ++kk)
          xt[static_cast<size_t>(kk * M + r)] = load_f(a.x.data, t, xo[static_cast<size_t>(r)] + kk * a.x.strides[xl]);
        for (int64_t j = 0; j < N; ++j) gt[static_cast<size_t>(j * M + r)] = g[static_cast<size_t>(r * N + j)];
      }
    }
    baracuda::detail::parallel_for(N, baracuda::detail::saturating_product({K, M}), [&](int64_t j) {
      auto finish = [&](int64_t kk, double s) {
        const int64_t o = j * a.dw.strides[0] + kk * a.dw.strides[1];
        if (d.accumulate) s += load_f(a.dw.data, t, o);  // the old value, added once to the exact sum
        store_f(a.dw.data, t, o, s);
      };
      int64_t kk = 0;
      if (!xt.empty()) {
        const double* gj = gt.data() + j * M;
        for (; kk + 4 <= K; kk += 4) {
          double s4[4];
          dot4(gj, xt.data() + kk * M, M, M, s4);
          for (int c = 0; c < 4; ++c) finish(kk + c, s4[c]);
        }
      }
      for (; kk < K; ++kk) {
        double s = 0;
        for (int64_t r = 0; r < M; ++r)
          s += g[static_cast<size_t>(r * N + j)] * load_f(a.x.data, t, xo[static_cast<size_t>(r)] + kk * a.x.strides[xl]);
        finish(kk, s);
      }
    });
  }
  if (d.need_db) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t r = 0; r < M; ++r) s += g[static_cast<size_t>(r * N + j)];
      if (d.accumulate) s += load_f(a.db.data, t, j * a.db.strides[0]);
      store_f(a.db.data, t, j * a.db.strides[0], s);
    }
  }
  return Status::ok();
}

}  // namespace baracuda::gemm::ref

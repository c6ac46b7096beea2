// CPU reference fused linear + cross-entropy (linear_ce_reference.hpp).
// Targets are checked first; the Mean divisor is the cross-entropy
// reference's (double, row order). Each block of rows then: logits rounded
// to the dtype, loss::ref::run on them in place (reduction None, each row's
// gradient factor g_i given in double), dH rows, and dW / db added to double
// accumulators in row order.
#include "ops/loss/linear_ce_reference.hpp"

#include <algorithm>
#include <new>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/loss/reference.hpp"

namespace baracuda::loss::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

namespace {
constexpr int64_t kBlockRows = 64;
// The most host scratch the reference allocates (GPT-2's 50257 x 768 head on
// the CPU needs about 650 MiB).
constexpr size_t kReferenceScratchLimit = size_t{2} << 30;

// A [rows, cols] view as a dense double matrix.
std::vector<double> dense(const TensorRef& t, DType dtype, int64_t rows, int64_t cols) {
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v[static_cast<size_t>(i * cols + j)] = load_f(t.data, dtype, i * t.strides[0] + j * t.strides[1]);
  return v;
}
}  // namespace

namespace {
Status run_blocks(const LinearCe& p);
}

Status run_linear_ce(const LinearCe& p) {
  // The logits exist only as 64-row blocks here; a vocabulary too large for
  // host memory is refused rather than thrown out of the plan.
  try {
    return run_blocks(p);
  } catch (const std::bad_alloc&) {
    return baracuda::detail::unsupported(p.plan, "the CPU reference cannot allocate its buffers for rows ", p.d.rows,
                                         ", in_features ", p.d.in_features, ", classes ", p.d.classes);
  }
}

namespace {
Status run_blocks(const LinearCe& p) {
  const FusedLinearCrossEntropyDescriptor& d = p.d;
  const FusedLinearCrossEntropyArgs& a = p.a;
  const int64_t N = d.rows, D = d.in_features, V = d.classes;
  const DType t = d.dtype;
  const bool grad = d.need_dh || d.need_dw || d.need_db;
  const size_t es = dtype_size(t);

  // Targets, then the Mean divisor: sum of w[t_i] over rows not ignored.
  double divisor = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t ti = load_i(a.target.data, d.index_dtype, i * a.target.strides[0]);
    if (ti == d.ignore_index) continue;
    if (ti < 0 || ti >= V)
      return baracuda::detail::invalid(p.plan, "target[", i, "] = ", ti, " is out of range [0, ", V,
                                       ") and is not ignore_index ", d.ignore_index);
    divisor += d.has_weight ? load_f(a.class_weight.data, t, ti * a.class_weight.strides[0]) : 1.0;
  }
  // Its scratch (H and W densified in double, the double accumulators of dW /
  // db, one 64-row logits block and its gradient) is bounded: views may
  // broadcast (stride 0), so the sizes need not match any memory the caller
  // holds, and an unbounded allocation would take the host down (a fuzzed
  // descriptor did) rather than fail.
  {
    const double rows = static_cast<double>(N), vd = static_cast<double>(V) * static_cast<double>(D);
    const double scratch = 8.0 * (rows * D + (N > 0 ? vd : 0.0) + (N > 0 && d.has_bias ? V : 0.0) +
                                  (d.need_dw ? vd : 0.0) + (d.need_db ? V : 0.0) + rows) +
                           static_cast<double>(std::min(N, kBlockRows)) * V * (static_cast<double>(es) + 8.0);
    if (scratch > static_cast<double>(kReferenceScratchLimit))
      return baracuda::detail::unsupported(p.plan, "the CPU reference would need ", scratch / (1 << 20),
                                           " MiB of scratch for rows ", N, ", in_features ", D, ", classes ", V,
                                           " (its limit is ", kReferenceScratchLimit >> 20, " MiB)");
  }
  // With no rows nothing reads H, W or b (dW and db come out zero).
  const std::vector<double> H = dense(a.hidden, t, N, D), W = dense(a.weight, t, N > 0 ? V : 0, D);
  // Sized by V only where a [V] tensor exists (with no rows, V may be any size).
  std::vector<double> b(d.has_bias && N > 0 ? static_cast<size_t>(V) : 0, 0.0);
  if (d.has_bias && N > 0)
    for (int64_t c = 0; c < V; ++c) b[c] = load_f(a.bias.data, t, c * a.bias.strides[0]);
  std::vector<double> dw(d.need_dw ? static_cast<size_t>(V * D) : 0, 0.0), db(d.need_db ? static_cast<size_t>(V) : 0, 0.0);
  std::vector<double> row_loss(static_cast<size_t>(N), 0.0);

  CrossEntropyDescriptor cd;
  cd.dtype = t;
  cd.classes = V;
  cd.index_dtype = d.index_dtype;
  cd.ignore_index = d.ignore_index;
  cd.label_smoothing = d.label_smoothing;
  cd.has_weight = d.has_weight;
  cd.reduction = LossReduction::None;
  cd.z_loss = d.z_loss;
  cd.loss_dtype = DType::F64;  // the row losses and g_i travel in double
  cd.with_grad = grad;

  std::vector<unsigned char> logits(static_cast<size_t>(std::min(N, kBlockRows) * V) * es + 16);
  for (int64_t r0 = 0; r0 < N; r0 += kBlockRows) {
    const int64_t n = std::min(kBlockRows, N - r0);
    // Logits of the block, rounded to the dtype as LinearPlan stores them.
    baracuda::detail::parallel_for(n, V * (D + 1), [&](int64_t i) {
      const double* h = &H[static_cast<size_t>((r0 + i) * D)];
      for (int64_t c = 0; c < V; ++c) {
        const double* w = &W[static_cast<size_t>(c * D)];
        double s = 0;
        for (int64_t k = 0; k < D; ++k) s += h[k] * w[k];
        store_f(logits.data(), t, i * V + c, d.has_bias ? s + b[c] : s);
      }
    });
    // Cross-entropy rows with their gradient factor g_i (dloss, dloss[i], or dloss / divisor).
    std::vector<double> g(static_cast<size_t>(n), 0.0), losses(static_cast<size_t>(n), 0.0), lse(static_cast<size_t>(n), 0.0);
    if (grad)
      for (int64_t i = 0; i < n; ++i) {
        double gi = d.reduction == LossReduction::None ? load_f(a.dloss.data, d.loss_dtype, (r0 + i) * a.dloss.strides[0])
                                                       : load_f(a.dloss.data, d.loss_dtype, 0);
        if (d.reduction == LossReduction::Mean) gi /= divisor;
        g[static_cast<size_t>(i)] = gi;
      }
    cd.rows = n;
    Problem cp;
    cp.plan = p.plan;
    cp.d = cd;
    const Dims mat{n, V}, mat_s{V, 1}, vec{n}, vec_s{1};
    const int64_t cells = n * V;
    cp.logits = TensorRef(logits.data(), t, Device::cpu(), mat, mat_s, cells);
    cp.target = TensorRef(static_cast<const unsigned char*>(a.target.data) + r0 * a.target.strides[0] * static_cast<int64_t>(dtype_size(d.index_dtype)),
                          d.index_dtype, Device::cpu(), vec, Dims{a.target.strides[0]}, (n - 1) * a.target.strides[0] + 1);
    if (d.has_weight) cp.weight = a.class_weight;
    cp.loss = TensorMut(losses.data(), DType::F64, Device::cpu(), vec, vec_s, n);
    cp.lse = TensorMut(lse.data(), DType::F64, Device::cpu(), vec, vec_s, n);
    if (grad) {
      cp.dloss = TensorRef(g.data(), DType::F64, Device::cpu(), vec, vec_s, n);
      cp.dlogits = TensorMut(logits.data(), t, Device::cpu(), mat, mat_s, cells);  // in place, rounded to the dtype
    }
    BARACUDA_RETURN_IF_ERROR(loss::ref::run(cp));
    for (int64_t i = 0; i < n; ++i) {
      row_loss[static_cast<size_t>(r0 + i)] = losses[static_cast<size_t>(i)];
      if (d.reduction == LossReduction::None)
        store_f(a.loss.data, d.loss_dtype, (r0 + i) * a.loss.strides[0], losses[static_cast<size_t>(i)]);
      if (a.lse.data) store_f(a.lse.data, a.lse.dtype, (r0 + i) * a.lse.strides[0], lse[static_cast<size_t>(i)]);
    }
    if (!grad) continue;
    std::vector<double> dl(static_cast<size_t>(cells));
    for (int64_t e = 0; e < cells; ++e) dl[static_cast<size_t>(e)] = load_f(logits.data(), t, e);
    if (d.need_dh)
      baracuda::detail::parallel_for(n, D * (V + 1), [&](int64_t i) {
        for (int64_t k = 0; k < D; ++k) {
          double s = 0;
          for (int64_t c = 0; c < V; ++c) s += dl[static_cast<size_t>(i * V + c)] * W[static_cast<size_t>(c * D + k)];
          store_f(a.dhidden.data, t, (r0 + i) * a.dhidden.strides[0] + k * a.dhidden.strides[1], s);
        }
      });
    if (d.need_dw || d.need_db)
      baracuda::detail::parallel_for(V, (D + 1) * n, [&](int64_t c) {
        for (int64_t i = 0; i < n; ++i) {
          const double v = dl[static_cast<size_t>(i * V + c)];
          if (d.need_db) db[static_cast<size_t>(c)] += v;
          if (d.need_dw)
            for (int64_t k = 0; k < D; ++k) dw[static_cast<size_t>(c * D + k)] += v * H[static_cast<size_t>((r0 + i) * D + k)];
        }
      });
  }
  if (d.need_dw && V * D > 0)
    for (int64_t c = 0; c < V; ++c)
      for (int64_t k = 0; k < D; ++k)
        store_f(a.dweight.data, t, c * a.dweight.strides[0] + k * a.dweight.strides[1], dw[static_cast<size_t>(c * D + k)]);
  if (d.need_db)
    for (int64_t c = 0; c < V; ++c) store_f(a.dbias.data, t, c * a.dbias.strides[0], db[static_cast<size_t>(c)]);
  if (d.reduction != LossReduction::None) {
    double total = 0;
    for (double v : row_loss) total += v;
    store_f(a.loss.data, d.loss_dtype, 0, d.reduction == LossReduction::Mean ? total / divisor : total);
  }
  return Status::ok();
}
}  // namespace

}  // namespace baracuda::loss::ref

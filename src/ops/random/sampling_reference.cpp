// CPU references of randperm and multinomial: the stream layout and the
// summation / selection orders of include/baracuda/ops/random_sampling.hpp,
// through the shared definitions of sampling_math.hpp.
#include "ops/random/sampling_reference.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/random/sampling_math.hpp"

namespace baracuda::random::ref {
namespace {

using baracuda::detail::invalid;

void store_index(void* base, DType t, int64_t off, int64_t v) {
  if (t == DType::I64 || t == DType::I32) baracuda::detail::store_i(base, t, off, v);
  else baracuda::detail::store_f(base, t, off, static_cast<double>(v));  // exact (select() bounds n)
}

// The blocked cumulative sums of sampling_math.hpp; returns the total.
double blocked_cdf(const std::vector<double>& w, std::vector<double>& cdf) {
  const int64_t C = static_cast<int64_t>(w.size());
  cdf.assign(w.size(), 0.0);
  const int64_t K = sampling::scan_chunk_len(C);
  double off = 0.0;
  for (int64_t c0 = 0; c0 < C; c0 += K) {
    const int64_t c1 = std::min(C, c0 + K);
    double loc = 0.0;
    for (int64_t j = c0; j < c1; ++j) {
      loc = j == c0 ? w[static_cast<size_t>(j)] : exact::add(loc, w[static_cast<size_t>(j)]);
      cdf[static_cast<size_t>(j)] = c0 == 0 ? loc : exact::add(off, loc);
    }
    off = c0 == 0 ? loc : exact::add(off, loc);
  }
  return off;
}

}  // namespace

void randperm(const RandpermDescriptor& d, uint64_t seed, uint64_t offset, const TensorMut& out) {
  const int64_t n = d.n;
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keys[static_cast<size_t>(i)] = sampling::randperm_key(seed, offset, static_cast<uint64_t>(i));
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)]; });
  const int64_t st = out.strides[0];
  for (int64_t p = 0; p < n; ++p) store_index(out.data, d.dtype, p * st, idx[static_cast<size_t>(p)]);
}

Status multinomial(const char* plan, const MultinomialDescriptor& d, uint64_t seed, uint64_t offset,
                   const MultinomialArgs& a) {
  const bool two_d = d.probs_shape.rank == 2;
  const int64_t R = two_d ? d.probs_shape[0] : 1, C = d.probs_shape[two_d ? 1 : 0], S = d.num_samples;
  const int64_t sr = two_d ? a.probs.strides[0] : 0, sc = a.probs.strides[two_d ? 1 : 0];
  const int64_t orow = two_d ? a.out.strides[0] : 0, ocol = a.out.strides[two_d ? 1 : 0];
  auto load_row = [&](int64_t r, std::vector<double>& w) {
    w.resize(static_cast<size_t>(C));
    for (int64_t j = 0; j < C; ++j) w[static_cast<size_t>(j)] = baracuda::detail::load_f(a.probs.data, d.dtype, r * sr + j * sc);
  };
  // Pass 1: every row valid (nothing written before).
  std::vector<double> w, cdf;
  for (int64_t r = 0; r < R; ++r) {
    load_row(r, w);
    int64_t positive = 0;
    for (int64_t j = 0; j < C; ++j) {
      const double v = w[static_cast<size_t>(j)];
      if (!(v >= 0.0) || std::isinf(v))
        return invalid(plan, "probs row ", r, " has an invalid weight ", v, " at category ", j,
                       " (weights must be finite and non-negative)");
      positive += v > 0.0;
    }
    if (d.replacement) {
      const double total = blocked_cdf(w, cdf);
      if (!(total > 0.0) || std::isinf(total))
        return invalid(plan, "probs row ", r, " sums to ", total,
                       " (invalid multinomial distribution: the sum must be positive and finite)");
    } else if (positive < S) {
      return invalid(plan, "probs row ", r, " has ", positive, " positive weights, fewer than num_samples ", S,
                     " (sampling without replacement)");
    }
  }
  // Pass 2: the samples.
  std::vector<uint64_t> keys;
  std::vector<int64_t> order;
  for (int64_t r = 0; r < R; ++r) {
    load_row(r, w);
    auto put = [&](int64_t s, int64_t j) {
      if (a.out.dtype == DType::I32) static_cast<int32_t*>(a.out.data)[r * orow + s * ocol] = static_cast<int32_t>(j);
      else static_cast<int64_t*>(a.out.data)[r * orow + s * ocol] = j;
    };
    if (d.replacement) {
      const double total = blocked_cdf(w, cdf);
      for (int64_t s = 0; s < S; ++s) {
        const double u = sampling::multinomial_uniform(seed, offset, static_cast<uint64_t>(r * S + s));
        const double x = exact::mul(u, total);
        int64_t j = std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin();
        put(s, std::min(j, C - 1));
      }
    } else {
      keys.resize(static_cast<size_t>(C));
      for (int64_t j = 0; j < C; ++j)
        keys[static_cast<size_t>(j)] =
            sampling::race_key(seed, offset, static_cast<uint64_t>(r * C + j), w[static_cast<size_t>(j)]);
      order.resize(static_cast<size_t>(C));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + S, order.end(), [&](int64_t x, int64_t y) {
        const uint64_t kx = keys[static_cast<size_t>(x)], ky = keys[static_cast<size_t>(y)];
        return kx < ky || (kx == ky && x < y);
      });
      for (int64_t s = 0; s < S; ++s) put(s, order[static_cast<size_t>(s)]);
    }
  }
  return Status::ok();
}

}  // namespace baracuda::random::ref

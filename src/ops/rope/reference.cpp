// CPU reference RoPE. For every token (b, s): its position, then cos / sin of
// each of the R/2 pairs in double (or the cache row, clamped like the CUDA
// kernel), then every head of q and k is rotated pair by pair (both elements
// of a pair are read before either is written, so in place is safe) and the
// pass-through dims [R, D) are copied.
#include "ops/rope/reference.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/host_elements.hpp"

namespace baracuda::rope::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

Status run(const Problem& p) {
  const RopeDescriptor& d = p.desc;
  const int64_t S = d.seq_len, D = d.head_dim, R = d.rotary_dim, half = R / 2;
  const int64_t heads[2] = {d.heads, d.has_k ? d.kv_heads : 0};
  const int64_t tokens = d.batch * S;
  if (tokens == 0 || heads[0] + heads[1] == 0) return Status::ok();
  const bool interleaved = d.pairs == RopePairs::Interleaved;

  baracuda::detail::parallel_for(tokens, baracuda::detail::saturating_product({heads[0] + heads[1], D}), [&](int64_t t) {
    const int64_t b = t / S, s = t % S;
    int64_t pos = s;
    if (d.positions == RopePositions::PerSequence)
      pos = load_i(p.positions.data, d.position_dtype, s * p.positions.strides[0]);
    else if (d.positions == RopePositions::PerBatch)
      pos = load_i(p.positions.data, d.position_dtype, b * p.positions.strides[0] + s * p.positions.strides[1]);

    std::vector<double> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    if (d.use_cache) {
      const int64_t row = std::clamp<int64_t>(pos, 0, d.cache_len - 1);
      for (int64_t i = 0; i < half; ++i) {
        cs[i] = load_f(p.cos.data, p.cos.dtype, row * p.cos.strides[0] + i * p.cos.strides[1]);
        sn[i] = load_f(p.sin.data, p.sin.dtype, row * p.sin.strides[0] + i * p.sin.strides[1]);
      }
    } else {
      for (int64_t i = 0; i < half; ++i) {
        const double inv_freq = std::pow(d.theta, -(2.0 * static_cast<double>(i)) / static_cast<double>(R));
        const double angle = static_cast<double>(pos) * inv_freq;
        cs[i] = std::cos(angle);
        sn[i] = std::sin(angle);
      }
    }
    if (p.backward)
      for (double& v : sn) v = -v;

    for (int w = 0; w < 2; ++w) {
      const TensorRef& x = p.x[w];
      const TensorMut& y = p.y[w];
      for (int64_t h = 0; h < heads[w]; ++h) {
        const int64_t xo = b * x.strides[0] + h * x.strides[1] + s * x.strides[2], xd = x.strides[3];
        const int64_t yo = b * y.strides[0] + h * y.strides[1] + s * y.strides[2], yd = y.strides[3];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
          const double a = load_f(x.data, d.dtype, xo + ia * xd);
          const double c = load_f(x.data, d.dtype, xo + ib * xd);
          store_f(y.data, d.dtype, yo + ia * yd, a * cs[i] - c * sn[i]);
          store_f(y.data, d.dtype, yo + ib * yd, a * sn[i] + c * cs[i]);
        }
        for (int64_t j = R; j < D; ++j) store_f(y.data, d.dtype, yo + j * yd, load_f(x.data, d.dtype, xo + j * xd));
      }
    }
  });
  return Status::ok();
}

}  // namespace baracuda::rope::ref

#include "core/overlap.hpp"

#include <algorithm>
#include <cstdint>

#include "core/checked_math.hpp"

namespace baracuda::detail {

namespace {

// Byte range of a view; false when it is empty or does not fit the address space.
bool byte_range(const TensorRef& v, uintptr_t* lo, uintptr_t* hi) {
  int64_t span = 0, bytes = 0;
  if (!checked_span(v.shape, v.strides, &span) || span == 0) return false;
  if (!mul_ok(span, static_cast<int64_t>(dtype_size(v.dtype)), &bytes)) return false;
  *lo = reinterpret_cast<uintptr_t>(v.data);
  if (*lo > UINTPTR_MAX - static_cast<uintptr_t>(bytes)) return false;
  *hi = *lo + static_cast<uintptr_t>(bytes);
  return true;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div_signed(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Dims (by byte stride, descending) of two views with the same element size
// whose strides nest: each stride exceeds the span of all smaller ones for
// the larger of the two extents. d_j ranges over [lo_j, hi_j] (index in a
// minus index in b). Is some combination within (t - es, t + es)?
struct OverlapSearch {
  int n = 0;
  int64_t s[2 * kMaxRank], lo[2 * kMaxRank], hi[2 * kMaxRank], es = 1;
  int64_t rest_min[2 * kMaxRank + 1], rest_max[2 * kMaxRank + 1];  // contribution of dims j.. n-1
  int budget = 20000;
  bool reach(int j, int64_t t) {
    if (--budget < 0) return true;  // give up: report an overlap (conservative)
    if (j == n) return t > -es && t < es;
    const int64_t rmin = rest_min[j + 1], rmax = rest_max[j + 1];
    const int64_t dlo = std::max(lo[j], ceil_div_signed(t - es - rmax, s[j]));
    const int64_t dhi = std::min(hi[j], floor_div(t + es - rmin, s[j]));
    for (int64_t dj = dlo; dj <= dhi; ++dj)
      if (reach(j + 1, t - dj * s[j])) return true;
    return false;
  }
};

}  // namespace

bool views_overlap(const TensorRef& a, const TensorRef& b) {
  if (!(a.device == b.device) || a.data == nullptr || b.data == nullptr) return false;
  uintptr_t alo = 0, ahi = 0, blo = 0, bhi = 0;
  const bool ra = byte_range(a, &alo, &ahi), rb = byte_range(b, &blo, &bhi);
  if (!ra || !rb) {
    // Empty views touch nothing; a view whose range cannot be computed is
    // rejected by the view checks before this matters: stay conservative.
    int64_t na = 0, nb = 0;
    if ((checked_numel(a.shape, &na) && na == 0) || (checked_numel(b.shape, &nb) && nb == 0)) return false;
    return true;
  }
  return alo < bhi && blo < ahi;
}

bool views_overlap_exact(const TensorRef& a, const TensorRef& b) {
  if (!views_overlap(a, b)) return false;
  if (a.dtype != b.dtype || !rank_ok(a.shape) || !rank_ok(b.shape)) return true;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  // Merge the dims of extent > 1 by stride: (stride, extent in a, extent in b).
  struct E { int64_t s, na, nb; };
  E e[2 * kMaxRank];
  int m = 0;
  auto add = [&](const TensorRef& v, bool is_a) {
    for (int i = 0; i < v.rank(); ++i) {
      if (v.shape[i] <= 1) continue;
      int64_t st = 0;
      if (!mul_ok(v.strides[i], es, &st)) return false;
      int k = 0;
      while (k < m && e[k].s != st) ++k;
      if (k == m) e[m++] = {st, 1, 1};
      int64_t& slot = is_a ? e[k].na : e[k].nb;
      if (slot != 1) return false;  // two dims of one view share a stride
      slot = v.shape[i];
    }
    return true;
  };
  if (!add(a, true) || !add(b, false)) return true;
  std::sort(e, e + m, [](const E& x, const E& y) { return x.s < y.s; });
  int64_t reach = es, t = 0;
  for (int k = 0; k < m; ++k) {
    if (e[k].s < reach) return true;  // strides do not nest: stay conservative
    if (!mul_ok(std::max(e[k].na, e[k].nb) - 1, e[k].s, &t) || !add_ok(reach, t, &reach)) return true;
  }
  OverlapSearch os;
  os.n = m;
  os.es = es;
  for (int k = 0; k < m; ++k) {  // descending stride order
    const E& x = e[m - 1 - k];
    os.s[k] = x.s;
    os.lo[k] = -(x.nb - 1);
    os.hi[k] = x.na - 1;
  }
  os.rest_min[m] = os.rest_max[m] = 0;
  for (int k = m - 1; k >= 0; --k) {
    os.rest_min[k] = os.rest_min[k + 1] + os.lo[k] * os.s[k];
    os.rest_max[k] = os.rest_max[k + 1] + os.hi[k] * os.s[k];
  }
  const int64_t delta = static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.data) - reinterpret_cast<uintptr_t>(a.data));
  return os.reach(0, delta);
}

bool same_view(const TensorRef& a, const TensorRef& b) {
  if (a.data != b.data || !(a.shape == b.shape) || a.dtype != b.dtype) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a.shape[i] > 1 && a.strides[i] != b.strides[i]) return false;
  return true;
}

}  // namespace baracuda::detail

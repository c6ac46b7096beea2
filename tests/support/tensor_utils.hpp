// Shared helpers for the baracuda test suites (CPU and CUDA).
//
//  * seeds:      fresh_seed() / make_rng(): a fresh, reproducible seed per case
//                (hash of the running test's full name + a process-wide counter).
//  * storage:    HostBuffer, an aligned host allocation of `n` elements of a
//                runtime dtype with get/set as double (rounded to the dtype) or
//                int64; poison_byte()/poison() fill with NaN (FP) or 0x7f..
//                (integers).
//  * layouts:    Layout = shape + strides + element offset + storage size, with
//                builders for contiguous, transposed (memory order reversed),
//                permuted, padded (a slice inside a bigger buffer), every_other
//                (skips every other element), and broadcast (stride 0) views.
//                view()/view_mut() turn a Layout over a HostBuffer or a Buffer
//                into a TensorRef/TensorMut; gather()/scatter() move logical
//                (row-major) values in and out; covered() tells which storage
//                elements a layout reaches (for gap checks).
//  * numerics:   to_double() of any element, round_to() a dtype, rel_error()
//                ||a-b||/||b|| where NaN must match NaN (and inf match inf)
//                position-wise, describe_mismatch() for failure messages.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace bt {

using baracuda::bfloat16;
using baracuda::Buffer;
using baracuda::Device;
using baracuda::Dims;
using baracuda::DType;
using baracuda::half;
using baracuda::TensorMut;
using baracuda::TensorRef;

using Rng = std::mt19937_64;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------
inline uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline std::string current_test_name() {
  const auto* ti = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!ti) return "<no test>";
  return std::string(ti->test_suite_name()) + "." + ti->name();
}
// A fresh seed for every call: test name + salt + a process-wide counter.
// Deterministic for a given test order, different for every case.
inline uint64_t fresh_seed(std::string_view salt = {}) {
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1);
  return splitmix64(fnv1a(salt, fnv1a(current_test_name())) ^ splitmix64(n));
}
inline Rng make_rng(uint64_t seed) { return Rng(seed); }

// ---------------------------------------------------------------------------
// Dims helpers
// ---------------------------------------------------------------------------
inline int64_t numel(const Dims& d) { return baracuda::shape_numel(d); }
inline Dims dims_from(const std::vector<int64_t>& v) {
  Dims d;
  for (int64_t x : v) d.push_back(x);
  return d;
}
inline std::string str(const Dims& d) { return d.to_string(); }

// Row-major multi-index of linear index `i` over `shape`.
inline Dims unravel(int64_t i, const Dims& shape) {
  Dims idx = Dims::of_rank(shape.rank);
  for (int a = shape.rank - 1; a >= 0; --a) {
    idx[a] = shape[a] ? i % shape[a] : 0;
    i = shape[a] ? i / shape[a] : 0;
  }
  return idx;
}

// ---------------------------------------------------------------------------
// Element access in any dtype
// ---------------------------------------------------------------------------
inline bool is_fp(DType t) { return baracuda::is_floating_point(t); }

namespace detail {
template <class T>
inline constexpr bool is_complex_v = std::is_same_v<T, baracuda::complex64> || std::is_same_v<T, baracuda::complex128>;
template <class T>
inline constexpr bool is_narrow_float_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// v rounded to an integer type: half away from zero, saturated.
template <class T>
T round_int(double v) {
  return static_cast<T>(std::clamp<long long>(std::llround(v), std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}
// v rounded (to nearest even) to a floating host type; f16/bf16 through
// float, as the library rounds them; complex: the real part, imaginary 0.
template <class T>
T round_float(double v) {
  if constexpr (is_narrow_float_v<T>) return T(static_cast<float>(v));
  else if constexpr (is_complex_v<T>) return T(static_cast<typename T::value_type>(v), 0);
  else return static_cast<T>(v);
}
// A T element as double (bool: any nonzero byte; complex: the real part).
template <class T>
double element_as_double(const void* base, int64_t off) {
  if constexpr (std::is_same_v<T, bool>) return static_cast<const uint8_t*>(base)[off] != 0;
  else if constexpr (is_complex_v<T>) return static_cast<const T*>(base)[off].real();
  else return static_cast<double>(static_cast<const T*>(base)[off]);
}
}  // namespace detail

// Rounds v to the nearest value representable in dtype t (RNE for FP;
// round-half-away and saturation for integers; the real part for complex).
inline double round_to(DType t, double v) {
  return baracuda::dispatch_dtype<baracuda::AllTypes>(
      t, [&](auto tag) -> double {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) return v != 0 ? 1.0 : 0.0;
        else if constexpr (std::is_integral_v<T>) return static_cast<double>(detail::round_int<T>(v));
        else {
          const T r = detail::round_float<T>(v);
          return detail::element_as_double<T>(&r, 0);
        }
      },
      [&] { return v; });
}

// Element `off` of `base` as double.
inline double to_double(const void* base, DType t, int64_t off) {
  return baracuda::dispatch_dtype<baracuda::AllTypes>(
      t, [&](auto tag) { return detail::element_as_double<typename decltype(tag)::type>(base, off); }, [] { return kNaN; });
}
inline int64_t to_i64(const void* base, DType t, int64_t off) {
  return baracuda::dispatch_dtype<baracuda::AllTypes>(
      t, [&](auto tag) -> int64_t {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) return static_cast<const uint8_t*>(base)[off] != 0;
        else if constexpr (std::is_integral_v<T>) return static_cast<const T*>(base)[off];
        else return static_cast<int64_t>(to_double(base, t, off));
      },
      [&] { return static_cast<int64_t>(to_double(base, t, off)); });
}
inline void store_double(void* base, DType t, int64_t off, double v) {
  baracuda::dispatch_dtype<baracuda::AllTypes>(
      t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) static_cast<uint8_t*>(base)[off] = v != 0;
        else if constexpr (std::is_integral_v<T>) static_cast<T*>(base)[off] = detail::round_int<T>(v);
        else static_cast<T*>(base)[off] = detail::round_float<T>(v);
      },
      [] {});
}
inline void store_i64(void* base, DType t, int64_t off, int64_t v) {
  baracuda::dispatch_dtype<baracuda::AllTypes>(
      t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) static_cast<T*>(base)[off] = static_cast<T>(v);
        else store_double(base, t, off, static_cast<double>(v));
      },
      [] {});
}

// Poison: bytes that make an unwritten element obviously wrong: all-ones bytes
// are a NaN in every FP dtype; 0x7f.. is a huge positive integer.
inline uint8_t poison_byte(DType t) { return is_fp(t) || baracuda::is_complex(t) ? 0xff : 0x7f; }
// A second, different poison whose FP values are FINITE (0x5a5a.. is finite in
// f16/bf16/f32/f64), so an unwritten element is caught even where the expected
// value is NaN.
inline uint8_t alt_poison_byte(DType) { return 0x5a; }

// ---------------------------------------------------------------------------
// HostBuffer: aligned host storage of n elements of a runtime dtype.
// ---------------------------------------------------------------------------
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(DType t, int64_t n) : dtype_(t), n_(n), words_(static_cast<size_t>((n * static_cast<int64_t>(baracuda::dtype_size(t)) + 7) / 8 + 1)) {}
  DType dtype() const { return dtype_; }
  int64_t size() const { return n_; }
  size_t bytes() const { return static_cast<size_t>(n_) * baracuda::dtype_size(dtype_); }
  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  double get(int64_t i) const { return to_double(data(), dtype_, i); }
  int64_t get_i(int64_t i) const { return to_i64(data(), dtype_, i); }
  void set(int64_t i, double v) { store_double(data(), dtype_, i, v); }
  void set_i(int64_t i, int64_t v) { store_i64(data(), dtype_, i, v); }
  void fill_bytes(uint8_t b) { std::memset(data(), b, bytes()); }
  void poison() { fill_bytes(poison_byte(dtype_)); }
  // Raw bytes of element i (for bit-exact comparisons).
  std::vector<uint8_t> raw() const {
    std::vector<uint8_t> r(bytes());
    if (!r.empty()) std::memcpy(r.data(), data(), r.size());
    return r;
  }

 private:
  DType dtype_ = DType::F32;
  int64_t n_ = 0;
  std::vector<uint64_t> words_;
};

inline HostBuffer host_from(DType t, const std::vector<double>& v) {
  HostBuffer b(t, static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) b.set(static_cast<int64_t>(i), v[i]);
  return b;
}
inline HostBuffer host_from_i64(DType t, const std::vector<int64_t>& v) {
  HostBuffer b(t, static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) b.set_i(static_cast<int64_t>(i), v[i]);
  return b;
}

// ---------------------------------------------------------------------------
// Random fills (every value representable in the dtype; never all zeros)
// ---------------------------------------------------------------------------
inline double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }
inline int64_t uniform_int(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// Fills every element of `b` with a random value: uniform in [lo, hi) for FP,
// uniform integers in [lo, hi] for integer dtypes. Never all zeros.
inline void fill_random(HostBuffer& b, Rng& rng, double lo = -1.0, double hi = 1.0) {
  bool any_nonzero = false;
  for (int64_t i = 0; i < b.size(); ++i) {
    if (is_fp(b.dtype())) b.set(i, uniform(rng, lo, hi));
    else b.set_i(i, uniform_int(rng, static_cast<int64_t>(std::ceil(lo)), static_cast<int64_t>(std::floor(hi))));
    any_nonzero |= b.get(i) != 0.0;
  }
  if (!any_nonzero && b.size() > 0) b.set(0, 1.0);
}

// n random values already rounded to dtype t; never all zeros.
inline std::vector<double> random_values(DType t, int64_t n, Rng& rng, double lo = -1.0, double hi = 1.0) {
  HostBuffer b(t, n);
  fill_random(b, rng, lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = b.get(i);
  return v;
}

// n distinct values (a random permutation of 0..n-1, centred) rounded to t.
// Distinct after rounding as long as the dtype holds the integers exactly
// (f16 up to 2048, bf16 up to 256, f32 up to 2^24).
inline std::vector<double> permutation_values(DType t, int64_t n, Rng& rng, double scale = 1.0) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  std::shuffle(p.begin(), p.end(), rng);
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = round_to(t, (static_cast<double>(p[i]) - static_cast<double>(n / 2)) * scale);
  if (n == 1 && v[0] == 0) v[0] = round_to(t, 1.0);
  return v;
}

// ---------------------------------------------------------------------------
// Layouts: strided / broadcast / non-contiguous views over a storage
// ---------------------------------------------------------------------------
struct Layout {
  Dims shape;
  Dims strides;
  int64_t offset = 0;   // element offset of index [0,...,0] in the storage
  int64_t storage = 0;  // elements the storage must hold
  std::string name = "contiguous";

  int64_t numel() const { return baracuda::shape_numel(shape); }
  // Storage offset of logical (row-major) element i.
  int64_t offset_of(int64_t i) const {
    int64_t off = offset;
    for (int a = shape.rank - 1; a >= 0; --a) {
      off += (i % shape[a]) * strides[a];
      i /= shape[a];
    }
    return off;
  }
  int64_t span() const {
    int64_t hi = 0;
    for (int i = 0; i < shape.rank; ++i) {
      if (shape[i] == 0) return 0;
      hi += (shape[i] - 1) * strides[i];
    }
    return hi + 1;
  }
};

inline std::string describe(const Layout& L) {
  return L.name + "{shape " + L.shape.to_string() + ", strides " + L.strides.to_string() + ", offset " +
         std::to_string(L.offset) + ", storage " + std::to_string(L.storage) + "}";
}

inline Layout contiguous(const Dims& shape) {
  Layout L;
  L.shape = shape;
  L.strides = baracuda::contiguous_strides(shape);
  L.storage = baracuda::shape_numel(shape);
  L.name = "contiguous";
  return L;
}

// Memory order given by `perm` (perm[0] = outermost in memory): a
// non-contiguous view of a contiguous buffer of the permuted shape.
inline Layout permuted(const Dims& shape, const std::vector<int>& perm) {
  Layout L;
  L.shape = shape;
  L.strides = Dims::of_rank(shape.rank);
  int64_t acc = 1;
  for (int k = static_cast<int>(perm.size()) - 1; k >= 0; --k) {
    const int a = perm[static_cast<size_t>(k)];
    L.strides[a] = acc;
    acc *= std::max<int64_t>(shape[a], 1);
  }
  L.storage = baracuda::shape_numel(shape);
  L.name = "permuted";
  return L;
}

// Transposed: memory order is the axes reversed (a column-major view).
inline Layout transposed(const Dims& shape) {
  std::vector<int> perm(static_cast<size_t>(shape.rank));
  for (int i = 0; i < shape.rank; ++i) perm[static_cast<size_t>(i)] = shape.rank - 1 - i;
  Layout L = permuted(shape, perm);
  L.name = "transposed";
  return L;
}

// A slice inside a bigger buffer: the storage has extents shape[i] + pad + i,
// the view starts at index [1,...,1] of it.
inline Layout padded(const Dims& shape, int64_t pad = 1) {
  Layout L;
  L.shape = shape;
  L.strides = Dims::of_rank(shape.rank);
  int64_t acc = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    L.strides[i] = acc;
    acc *= shape[i] + pad + i;
  }
  L.offset = 0;
  for (int i = 0; i < shape.rank; ++i) L.offset += L.strides[i];  // start at [1,...,1]
  L.storage = acc + 1;
  L.name = "padded";
  return L;
}

// Skips every other element: strides twice the contiguous ones, starting at
// element 1 of the storage (so the gaps sit on both sides).
inline Layout every_other(const Dims& shape) {
  Layout L;
  L.shape = shape;
  L.strides = baracuda::contiguous_strides(shape);
  for (int i = 0; i < shape.rank; ++i) L.strides[i] *= 2;
  L.offset = 1;
  L.storage = 2 * std::max<int64_t>(baracuda::shape_numel(shape), 1) + 1;
  L.name = "every_other";
  return L;
}

// Stride 0 on `axis` (a broadcast view): the storage only holds the other axes.
inline Layout broadcast(const Dims& shape, int axis) {
  Dims inner = shape;
  inner[axis] = 1;
  Layout L = contiguous(inner);
  L.shape = shape;
  L.strides[axis] = 0;
  L.name = "broadcast(axis " + std::to_string(axis) + ")";
  return L;
}

// Which storage elements the layout reaches.
inline std::vector<bool> covered(const Layout& L) {
  std::vector<bool> c(static_cast<size_t>(L.storage), false);
  const int64_t n = L.numel();
  for (int64_t i = 0; i < n; ++i) c[static_cast<size_t>(L.offset_of(i))] = true;
  return c;
}

// Views over host storage.
inline TensorRef view(const HostBuffer& b, const Layout& L) {
  const char* base = static_cast<const char*>(b.data()) + L.offset * static_cast<int64_t>(baracuda::dtype_size(b.dtype()));
  return TensorRef(base, b.dtype(), Device::cpu(), L.shape, L.strides, b.size() - L.offset);
}
inline TensorMut view_mut(HostBuffer& b, const Layout& L) {
  char* base = static_cast<char*>(b.data()) + L.offset * static_cast<int64_t>(baracuda::dtype_size(b.dtype()));
  return TensorMut(base, b.dtype(), Device::cpu(), L.shape, L.strides, b.size() - L.offset);
}
// Views over a baracuda::Buffer (host or device) holding L.storage elements of t.
inline TensorRef view(const Buffer& b, DType t, const Layout& L) {
  const char* base = static_cast<const char*>(b.data());
  if (base) base += L.offset * static_cast<int64_t>(baracuda::dtype_size(t));
  return TensorRef(base, t, b.device(), L.shape, L.strides,
                   static_cast<int64_t>(b.bytes() / baracuda::dtype_size(t)) - L.offset);
}
inline TensorMut view_mut(Buffer& b, DType t, const Layout& L) {
  char* base = static_cast<char*>(b.data());
  if (base) base += L.offset * static_cast<int64_t>(baracuda::dtype_size(t));
  return TensorMut(base, t, b.device(), L.shape, L.strides,
                   static_cast<int64_t>(b.bytes() / baracuda::dtype_size(t)) - L.offset);
}

// Logical (row-major) values of a layout over a storage.
inline std::vector<double> gather(const HostBuffer& b, const Layout& L) {
  std::vector<double> v(static_cast<size_t>(L.numel()));
  for (int64_t i = 0; i < L.numel(); ++i) v[static_cast<size_t>(i)] = b.get(L.offset_of(i));
  return v;
}
inline std::vector<int64_t> gather_i64(const HostBuffer& b, const Layout& L) {
  std::vector<int64_t> v(static_cast<size_t>(L.numel()));
  for (int64_t i = 0; i < L.numel(); ++i) v[static_cast<size_t>(i)] = b.get_i(L.offset_of(i));
  return v;
}
// Writes logical values into the storage (rounded to the dtype). With a
// broadcast layout the last write of each storage element wins: gather()
// afterwards to get the values the view really holds.
inline void scatter(HostBuffer& b, const Layout& L, const std::vector<double>& v) {
  for (int64_t i = 0; i < L.numel(); ++i) b.set(L.offset_of(i), v[static_cast<size_t>(i)]);
}
inline void scatter_i64(HostBuffer& b, const Layout& L, const std::vector<int64_t>& v) {
  for (int64_t i = 0; i < L.numel(); ++i) b.set_i(L.offset_of(i), v[static_cast<size_t>(i)]);
}
inline std::vector<double> all_values(const HostBuffer& b) {
  std::vector<double> v(static_cast<size_t>(b.size()));
  for (int64_t i = 0; i < b.size(); ++i) v[static_cast<size_t>(i)] = b.get(i);
  return v;
}
inline std::vector<int64_t> all_values_i64(const HostBuffer& b) {
  std::vector<int64_t> v(static_cast<size_t>(b.size()));
  for (int64_t i = 0; i < b.size(); ++i) v[static_cast<size_t>(i)] = b.get_i(i);
  return v;
}

// A contiguous copy (row-major) of the logical elements of a layout, copied
// bit for bit (exact for every dtype, including int64 beyond 2^53 and NaNs).
inline HostBuffer materialize(const HostBuffer& b, const Layout& L) {
  HostBuffer c(b.dtype(), L.numel());
  const size_t esz = baracuda::dtype_size(b.dtype());
  const auto* src = static_cast<const uint8_t*>(b.data());
  auto* dst = static_cast<uint8_t*>(c.data());
  for (int64_t i = 0; i < L.numel(); ++i)
    std::memcpy(dst + static_cast<size_t>(i) * esz, src + static_cast<size_t>(L.offset_of(i)) * esz, esz);
  return c;
}

// Storage elements outside the layout that no longer hold the poison byte
// pattern `pb` (empty string when every gap is intact).
inline std::string check_gaps(const HostBuffer& b, const Layout& L, uint8_t pb) {
  const auto cov = covered(L);
  const size_t esz = baracuda::dtype_size(b.dtype());
  const auto* bytes = static_cast<const uint8_t*>(b.data());
  std::ostringstream os;
  int bad = 0;
  for (int64_t i = 0; i < L.storage; ++i) {
    if (cov[static_cast<size_t>(i)]) continue;
    for (size_t k = 0; k < esz; ++k)
      if (bytes[static_cast<size_t>(i) * esz + k] != pb) {
        if (bad++ < 5) os << "storage element " << i << " (outside the view) was overwritten with " << b.get(i) << "; ";
        break;
      }
  }
  if (bad) os << bad << " gap element(s) overwritten";
  return os.str();
}

// ---------------------------------------------------------------------------
// Comparisons
// ---------------------------------------------------------------------------
// ||got - ref||_2 / ||ref||_2 over the finite entries of ref. Non-finite
// entries must match exactly position-wise (NaN with NaN, +inf with +inf,
// -inf with -inf), otherwise the result is +inf. When ||ref|| == 0 the
// absolute norm ||got - ref|| is returned.
inline double rel_error(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return kInf;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double a = got[i], b = ref[i];
    if (std::isnan(b) || std::isnan(a)) {
      if (!(std::isnan(a) && std::isnan(b))) return kInf;
      continue;
    }
    if (std::isinf(b) || std::isinf(a)) {
      if (a != b) return kInf;
      continue;
    }
    num += (a - b) * (a - b);
    den += b * b;
  }
  if (den == 0) return std::sqrt(num);
  return std::sqrt(num / den);
}

inline bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// First few positions where got and ref differ (for failure messages).
inline std::string describe_mismatch(const std::vector<double>& got, const std::vector<double>& ref, int max_items = 6) {
  std::ostringstream os;
  os.precision(17);
  if (got.size() != ref.size()) {
    os << "size " << got.size() << " vs ref size " << ref.size();
    return os.str();
  }
  // Largest relative difference first, then the first few differing entries.
  int shown = 0;
  size_t worst = 0;
  double worst_d = -1;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (same_value(got[i], ref[i])) continue;
    const double d = (std::isnan(got[i]) || std::isnan(ref[i]) || std::isinf(got[i]) || std::isinf(ref[i]))
                         ? kInf
                         : std::fabs(got[i] - ref[i]) / std::max(std::fabs(ref[i]), 1e-300);
    if (d > worst_d) { worst_d = d; worst = i; }
    if (shown < max_items) {
      os << "[" << i << "] got " << got[i] << " ref " << ref[i] << "; ";
      ++shown;
    }
  }
  if (worst_d >= 0) os << "worst [" << worst << "] got " << got[worst] << " ref " << ref[worst];
  else os << "all equal";
  return os.str();
}
inline std::string describe_mismatch_i64(const std::vector<int64_t>& got, const std::vector<int64_t>& ref, int max_items = 6) {
  std::ostringstream os;
  if (got.size() != ref.size()) {
    os << "size " << got.size() << " vs ref size " << ref.size();
    return os.str();
  }
  int shown = 0, total = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i]) {
      ++total;
      if (shown++ < max_items) os << "[" << i << "] got " << got[i] << " ref " << ref[i] << "; ";
    }
  os << total << " mismatching of " << ref.size();
  return os.str();
}

// Tolerance (relative to ||ref||) per dtype, from the design: f64 1e-12,
// f32 1e-5, f16 2e-3, bf16 1e-2; integers exact.
inline double tolerance(DType t) {
  switch (t) {
    case DType::F64: return 1e-12;
    case DType::F32: return 1e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1e-2;
    default: return 0.0;
  }
}

}  // namespace bt

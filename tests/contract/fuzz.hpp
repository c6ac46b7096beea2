// Seeded descriptor / view fuzz of a CPU plan (the contract suite's last check).
//
// Each case starts from a small valid descriptor (Traits::valid_desc) and
// applies either one descriptor mutation (Traits::desc_mutators: huge,
// negative and overflowing extents, out-of-range enums, non-finite scalars,
// corrupted ranks, ...) or one or two view mutations (kViewMutations below:
// strides permuted / padded / broadcast / huge / overflowing / negative,
// capacities one short or negative, null or misaligned data, wrong dtype,
// device, extents or rank, corrupted rank fields, an unused optional tensor
// given, outputs aliasing inputs or each other, in place, extreme values).
// Every tensor lives in a GuardedBuffer sized from the view's true (128-bit)
// reach, or a small one when that is huge. The plan runs on the CPU stream;
// then:
//   * nothing outside the buffers was written (guard zones; under ASan they
//     are poisoned, so an out-of-bounds read aborts as well);
//   * inputs are unchanged (unless an output is exactly that input, in place);
//   * an error names the plan, has a code a caller can act on, and left every
//     output untouched; it is a failure when the call was valid;
//   * Ok is a failure when the call was invalid (each rule below says why);
//     otherwise every output element equals, bit for bit, what the same plan
//     writes for contiguous copies of the inputs, and the gaps of strided
//     outputs still hold their poison.
// In-outs (harness.hpp's Role::InOut) are filled like inputs, count as written
// (overlaps, an error leaves them unchanged) and are compared like outputs with
// the contiguous run started from the same values; a `dense` slot's non-empty
// view in any layout but dense row-major must be refused.
// Each failure class (mutation + what failed) is reported once, with its case,
// and counted; the fuzz runs on to the end of its budget.
// Environment:
//   BARACUDA_FUZZ_SECONDS  budget per plan (default 2; e.g. 1800 for a long run)
//   BARACUDA_FUZZ_SEED     changes the base seed (default: fixed per plan)
//   BARACUDA_FUZZ_CASE     replays the case with that seed, printing it
//   BARACUDA_FUZZ_ONLY / BARACUDA_FUZZ_SKIP   comma-separated mutation names
//                          ("none" = unmutated) to run only / to leave out
//   BARACUDA_FUZZ_VERBOSE  prints how many cases each mutation got
// A crash (signal, or an ASan / UBSan report; UBSan halts on its first report,
// tests/support/sanitizer_options.cpp) prints the case being run: the reproducer.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "contract/harness.hpp"
#include "contract/known_failures.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__) || defined(BT_CONTRACT_SANITIZER_CALLBACK)
#include <sanitizer/common_interface_defs.h>
#define BT_CONTRACT_HAVE_SANITIZER 1
#endif

namespace contract {

using i128 = __int128;

// ---------------------------------------------------------------------------
// Random values for mutations
// ---------------------------------------------------------------------------
struct Fuzz {
  Rng& rng;
  explicit Fuzz(Rng& r) : rng(r) {}
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  int64_t range(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  template <class T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + range(0, static_cast<int64_t>(v.size()) - 1));
  }
  int64_t huge() {
    return pick<int64_t>({int64_t{1} << 31, (int64_t{1} << 31) - 1, int64_t{1} << 32, (int64_t{1} << 32) + 1,
                          int64_t{1} << 40, int64_t{1} << 53, int64_t{1} << 62, INT64_MAX, INT64_MAX - 1,
                          3037000500 /* > sqrt(2^63) */, range(int64_t{1} << 20, INT64_MAX)});
  }
  int64_t negative() {
    return pick<int64_t>({-1, -2, -7, INT64_MIN, INT64_MIN + 1, -(int64_t{1} << 32), range(INT64_MIN, -1)});
  }
  int64_t any_int() {
    switch (range(0, 3)) {
      case 0: return range(0, 9);
      case 1: return negative();
      case 2: return huge();
      default: return static_cast<int64_t>(rng());
    }
  }
  int corrupt_rank() { return pick<int>({-1, -8, 9, 16, 100, 1000, INT_MAX, INT_MIN}); }
  double any_double() {
    constexpr double inf = std::numeric_limits<double>::infinity();
    return pick<double>({std::numeric_limits<double>::quiet_NaN(), inf, -inf, 0.0, -0.0, -1.0, 1e-310, 1e-30,
                         1e30, 1e308, -1e308, std::uniform_real_distribution<double>(-10, 10)(rng)});
  }
  // Any DType value, including ones outside the enum.
  DType any_dtype() { return static_cast<DType>(range(0, 12)); }
  // Powers of two for `n` fields whose product is exactly 2^total (2^64 wraps
  // an int64 product to 0, 2^63 to INT64_MIN); each exponent >= 1.
  std::vector<int64_t> pow2_split(int n, int total) {
    std::vector<int> e(static_cast<size_t>(n), 1);
    for (int left = total - n; left > 0; --left) ++e[static_cast<size_t>(range(0, n - 1))];
    std::vector<int64_t> v;
    for (int x : e) v.push_back(x >= 63 ? INT64_MAX : (int64_t{1} << x));
    return v;
  }
};

template <class Desc>
struct DescMutator {
  std::string name;
  std::function<void(Desc&, Fuzz&)> apply;
};

// The standard extent mutations over a plan's int64 descriptor fields: one
// negative, one huge, all of them large enough that products overflow, and
// powers of two whose product is exactly 2^64 / 2^63 (wraps to 0 / INT64_MIN).
template <class Desc>
std::vector<DescMutator<Desc>> extent_mutators(std::vector<int64_t Desc::*> fields) {
  auto one = [fields](Fuzz& f) { return fields[static_cast<size_t>(f.range(0, static_cast<int64_t>(fields.size()) - 1))]; };
  return {
      {"desc.negative_extent", [one](Desc& d, Fuzz& f) { d.*one(f) = f.negative(); }},
      {"desc.huge_extent", [one](Desc& d, Fuzz& f) { d.*one(f) = f.huge(); }},
      {"desc.extents_overflow",
       [fields](Desc& d, Fuzz& f) {
         for (auto m : fields)
           if (f.chance(0.7)) d.*m = int64_t{1} << f.range(8, 40);
       }},
      {"desc.extents_wrap",
       [fields](Desc& d, Fuzz& f) {
         std::vector<int64_t Desc::*> sub;
         for (auto m : fields)
           if (f.chance(0.6)) sub.push_back(m);
         if (sub.size() < 2) sub = fields;
         const auto v = f.pow2_split(static_cast<int>(sub.size()), f.chance(0.7) ? 64 : 63);
         for (size_t i = 0; i < sub.size(); ++i) d.*sub[i] = v[i];
       }},
  };
}

// ---------------------------------------------------------------------------
// 128-bit view arithmetic (the test must not overflow where the library may)
// ---------------------------------------------------------------------------
inline bool rank_ok(const Dims& d) { return d.rank >= 0 && d.rank <= baracuda::kMaxRank; }
inline std::string dims_str(const Dims& d) {
  if (!rank_ok(d)) return "[rank=" + std::to_string(d.rank) + "]";
  return d.to_string();
}
inline size_t esize(DType t) { return std::max<size_t>(baracuda::dtype_size(t), 1); }
inline bool dtype_known(DType t) { return baracuda::dtype_size(t) != 0; }

// Contiguous strides computed with wrapping (unsigned) products, like a naive caller.
inline Dims wrapping_strides(const Dims& shape) {
  Dims s = Dims::of_rank(shape.rank);
  uint64_t acc = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    s[i] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(shape[i] > 0 ? shape[i] : 1);
  }
  return s;
}

// Exact element count and reach of a view (when its ranks are sane).
struct Reach {
  bool sane = false;      // ranks in range and equal, extents >= 0
  i128 numel = 0;
  i128 lo = 0, hi = -1;   // element offsets reached (hi < lo when empty)
  bool negative_stride = false;
  i128 span() const { return numel == 0 ? 0 : hi - lo + 1; }
};
inline Reach reach_of(const Dims& shape, const Dims& strides) {
  Reach r;
  if (!rank_ok(shape) || !rank_ok(strides) || shape.rank != strides.rank) return r;
  r.numel = 1;
  // Saturate above 2^64 (already beyond any int64 count): a product of at most
  // 2^64 and one extent < 2^63 stays below 2^127, so the i128 never overflows.
  const i128 cap = static_cast<i128>(1) << 64;
  for (int i = 0; i < shape.rank; ++i) {
    if (shape[i] < 0) return r;
    r.numel = r.numel > cap ? (shape[i] == 0 ? 0 : r.numel) : r.numel * shape[i];
    if (strides[i] < 0) r.negative_stride = true;
  }
  r.sane = true;
  if (r.numel == 0) return r;
  r.lo = r.hi = 0;
  for (int i = 0; i < shape.rank; ++i) {
    // Each term is below 2^126 in magnitude; clamped to 2^100 so eight of them
    // cannot overflow the sum (offsets beyond 2^64 are refused the same way).
    const i128 big = static_cast<i128>(1) << 100;
    const i128 d = std::clamp<i128>(static_cast<i128>(shape[i] - 1) * strides[i], -big, big);
    if (d < 0) r.lo += d;
    else r.hi += d;
  }
  return r;
}

// Strides of `shape` laid out in memory in the order `perm` (perm[0] outermost),
// each extent padded by `pad`; wrapping (unsigned) arithmetic, any extents.
inline Dims wrapping_layout(const Dims& shape, const std::vector<int>& perm, uint64_t pad) {
  Dims s = Dims::of_rank(shape.rank);
  uint64_t acc = 1;
  for (int k = static_cast<int>(perm.size()) - 1; k >= 0; --k) {
    const int a = perm[static_cast<size_t>(k)];
    s[a] = static_cast<int64_t>(acc);
    acc *= static_cast<uint64_t>(shape[a] > 0 ? shape[a] : 1) + pad;
  }
  return s;
}

// Element offsets of every logical element (row-major); only for small views.
inline std::vector<int64_t> element_offsets(const Dims& shape, const Dims& strides) {
  const int64_t n = baracuda::shape_numel(shape);
  std::vector<int64_t> off(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, o = 0;
    for (int a = shape.rank - 1; a >= 0; --a) {
      o += (rest % shape[a]) * strides[a];
      rest /= shape[a];
    }
    off[static_cast<size_t>(e)] = o;
  }
  return off;
}

// ---------------------------------------------------------------------------
// One tensor of a fuzz case
// ---------------------------------------------------------------------------
struct FuzzView {
  bool given = true;
  Dims shape, strides;
  DType dtype = DType::F32;
  Device device = Device::cpu();
  bool null_data = false;
  int64_t cap_adjust = 0;  // -1: the buffer holds one element fewer than the view reaches
  int64_t forced_capacity = 0;
  bool force_capacity = false;
  int misalign = 0;        // bytes added to the data pointer
  int alias_of = -1;       // shares the buffer of that slot ...
  int64_t alias_shift = 0; // ... starting this many of its own elements later
  bool same_view = false;  // ... as exactly the same view (in place)
  bool garbage = false;    // extreme input values
};

inline constexpr int64_t kMaxFuzzElems = int64_t{1} << 15;  // per buffer

template <class Args>
struct ViewMutator {
  const char* name;
  // Returns false when the mutation does not apply to this case.
  std::function<bool(std::vector<FuzzView>&, const std::vector<Slot<Args>>&, Fuzz&)> apply;
};

// Indices of slots matching `pred` (given views only, unless `unused`).
template <class Args, class Pred>
std::vector<int> slots_where(const std::vector<FuzzView>& v, const std::vector<Slot<Args>>& s, Pred pred) {
  std::vector<int> r;
  for (size_t i = 0; i < s.size(); ++i)
    if (pred(v[i], s[i])) r.push_back(static_cast<int>(i));
  return r;
}
// True when some view shares (aliases) the buffer of view i.
inline bool aliased(const std::vector<FuzzView>& v, size_t i) {
  for (const FuzzView& w : v)
    if (w.given && w.alias_of == static_cast<int>(i)) return true;
  return false;
}
inline int pick_index(Fuzz& f, const std::vector<int>& v) {
  return v.empty() ? -1 : v[static_cast<size_t>(f.range(0, static_cast<int64_t>(v.size()) - 1))];
}

template <class Args>
std::vector<ViewMutator<Args>> view_mutations() {
  using V = std::vector<FuzzView>;
  using S = std::vector<Slot<Args>>;
  auto given = [](const FuzzView& v, const Slot<Args>&) { return v.given && v.alias_of < 0; };
  auto given_rank = [](const FuzzView& v, const Slot<Args>&) {
    return v.given && v.alias_of < 0 && v.shape.rank > 0 && rank_ok(v.shape) && v.strides.rank == v.shape.rank;
  };
  auto one = [](V& v, const S& s, Fuzz& f, auto pred) -> FuzzView* {
    const int i = pick_index(f, slots_where(v, s, pred));
    return i < 0 ? nullptr : &v[static_cast<size_t>(i)];
  };
  return {
      {"view.permuted",  // memory order of the axes shuffled
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         std::vector<int> perm(static_cast<size_t>(x->shape.rank));
         for (int i = 0; i < x->shape.rank; ++i) perm[static_cast<size_t>(i)] = i;
         std::shuffle(perm.begin(), perm.end(), f.rng);
         x->strides = wrapping_layout(x->shape, perm, 0);
         return true;
       }},
      {"view.padded",  // every stride larger than needed (gaps)
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         std::vector<int> perm(static_cast<size_t>(x->shape.rank));
         for (int i = 0; i < x->shape.rank; ++i) perm[static_cast<size_t>(i)] = i;
         x->strides = wrapping_layout(x->shape, perm, static_cast<uint64_t>(f.range(1, 3)));
         return true;
       }},
      {"view.broadcast",  // stride 0 on one axis (an error for outputs: self-overlap)
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         x->strides[static_cast<int>(f.range(0, x->shape.rank - 1))] = 0;
         return true;
       }},
      {"view.huge_stride",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         x->strides[static_cast<int>(f.range(0, x->shape.rank - 1))] = f.huge();
         return true;
       }},
      {"view.overflowing_strides",  // (extent - 1) * stride past 2^63, or each below it and their sum past it
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         int64_t axes = 0;
         for (int i = 0; i < x->shape.rank; ++i) axes += x->shape[i] > 1;
         if (axes == 0) return false;
         const bool each = axes == 1 || f.chance(0.5);
         for (int i = 0; i < x->shape.rank; ++i)
           if (x->shape[i] > 1) {
             const int64_t q = INT64_MAX / (x->shape[i] - 1) / (each ? 1 : axes);
             x->strides[i] = q == INT64_MAX ? q : q + 1;
           }
         return true;
       }},
      {"view.negative_stride",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         const int a = static_cast<int>(f.range(0, x->shape.rank - 1));
         x->strides[a] = x->strides[a] == 0 ? -1 : -x->strides[a];
         return true;
       }},
      {"view.capacity_one_short",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         x->cap_adjust = -1;
         return true;
       }},
      {"view.capacity_bad",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         x->force_capacity = true;
         x->forced_capacity = f.pick<int64_t>({-1, 0, INT64_MIN, 1});
         return true;
       }},
      {"view.null_data",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         x->null_data = true;
         return true;
       }},
      {"view.misaligned",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, [](const FuzzView& w, const Slot<Args>&) {
           return w.given && w.alias_of < 0 && baracuda::dtype_size(w.dtype) > 1;
         });
         if (!x) return false;
         x->misalign = static_cast<int>(f.range(1, static_cast<int64_t>(esize(x->dtype)) - 1));
         return true;
       }},
      {"view.wrong_dtype",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         const DType old = x->dtype;
         while (x->dtype == old) x->dtype = f.any_dtype();
         return true;
       }},
      {"view.wrong_device",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         x->device = Device::cuda(static_cast<int>(f.range(0, 3)));
         return true;
       }},
      {"view.wrong_extent",
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given_rank);
         if (!x) return false;
         const int a = static_cast<int>(f.range(0, x->shape.rank - 1));
         const int64_t old = x->shape[a];
         // Another extent, never by signed overflow (`old` may be huge already).
         const int64_t other = old < INT64_MAX ? old + 1 : old - 1;
         switch (f.range(0, 3)) {
           case 0: x->shape[a] = other; break;
           case 1: x->shape[a] = old > 0 ? old - 1 : old + 2; break;
           case 2: x->shape[a] = f.huge(); break;
           default: x->shape[a] = f.negative(); break;
         }
         if (x->shape[a] == old) x->shape[a] = other;
         return true;
       }},
      {"view.wrong_rank",  // one axis more or fewer (an extent-1 axis: same element count)
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, [](const FuzzView& w, const Slot<Args>&) {
           return w.given && w.alias_of < 0 && rank_ok(w.shape) && w.strides.rank == w.shape.rank;
         });
         if (!x) return false;
         if (x->shape.rank > 0 && (x->shape.rank == baracuda::kMaxRank || f.chance(0.5))) {
           x->shape.rank -= 1;
           x->strides.rank = x->shape.rank;
         } else {
           x->shape.push_back(1);
           x->strides.push_back(1);
         }
         return true;
       }},
      {"view.corrupt_rank",  // a rank field outside [0, 8]
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, given);
         if (!x) return false;
         const int r = f.corrupt_rank();
         if (f.chance(0.5)) x->shape.rank = r;
         else x->strides.rank = r;
         if (f.chance(0.3)) x->shape.rank = x->strides.rank = r;
         return true;
       }},
      {"view.unused_given",  // an optional tensor the descriptor does not use
       [=](V& v, const S& s, Fuzz& f) {
         const int i = pick_index(f, slots_where(v, s, [](const FuzzView&, const Slot<Args>& sl) {
           return sl.role == Role::Unused;
         }));
         if (i < 0) return false;
         v[static_cast<size_t>(i)].given = true;
         return true;
       }},
      {"view.empty_null",  // every empty view with a null pointer (valid)
       [=](V& v, const S& s, Fuzz&) {
         bool any = false;
         for (size_t i = 0; i < s.size(); ++i)
           if (v[i].given && v[i].alias_of < 0 && reach_of(v[i].shape, v[i].strides).sane && reach_of(v[i].shape, v[i].strides).numel == 0) {
             v[i].null_data = true;
             any = true;
           }
         return any;
       }},
      {"view.output_aliases_input",
       [=](V& v, const S& s, Fuzz& f) {
         const int o = pick_index(f, slots_where(v, s, [&v](const FuzzView& w, const Slot<Args>& sl) {
           return w.given && w.alias_of < 0 && writes(sl.role) && !aliased(v, static_cast<size_t>(&w - v.data()));
         }));
         const int in = pick_index(f, slots_where(v, s, [](const FuzzView& w, const Slot<Args>& sl) {
           return w.given && w.alias_of < 0 && sl.role != Role::Output;
         }));
         if (o < 0 || in < 0 || o == in) return false;
         v[static_cast<size_t>(o)].alias_of = in;
         v[static_cast<size_t>(o)].alias_shift = f.pick<int64_t>({0, 1, 2, 7});
         return true;
       }},
      {"view.outputs_alias",
       [=](V& v, const S& s, Fuzz& f) {
         const auto outs = slots_where(v, s, [&v](const FuzzView& w, const Slot<Args>& sl) {
           return w.given && w.alias_of < 0 && writes(sl.role) && !aliased(v, static_cast<size_t>(&w - v.data()));
         });
         if (outs.size() < 2) return false;
         const int a = pick_index(f, outs);
         int b = a;
         while (b == a) b = pick_index(f, outs);
         v[static_cast<size_t>(b)].alias_of = a;
         v[static_cast<size_t>(b)].alias_shift = f.pick<int64_t>({0, 1, 3});
         return true;
       }},
      {"view.in_place",  // an output that is exactly the input it may replace
       [=](V& v, const S& s, Fuzz& f) {
         std::vector<int> outs;
         for (size_t i = 0; i < s.size(); ++i)
           if (s[i].role == Role::Output && s[i].in_place_of && v[i].given && v[i].alias_of < 0 && !aliased(v, i))
             outs.push_back(static_cast<int>(i));
         const int o = pick_index(f, outs);
         if (o < 0) return false;
         std::vector<int> ins;  // the inputs it may replace (one of them, at random)
         for (size_t i = 0; i < s.size(); ++i)
           if (in_place_allowed(s[static_cast<size_t>(o)], s[i].name)) ins.push_back(static_cast<int>(i));
         const int in = pick_index(f, ins);
         if (in < 0 || !v[static_cast<size_t>(in)].given || v[static_cast<size_t>(in)].alias_of >= 0) return false;
         v[static_cast<size_t>(o)].alias_of = in;
         v[static_cast<size_t>(o)].same_view = true;
         return true;
       }},
      {"view.garbage_values",  // extreme input values (huge / negative integers, inf, NaN)
       [=](V& v, const S& s, Fuzz& f) {
         FuzzView* x = one(v, s, f, [](const FuzzView& w, const Slot<Args>& sl) {
           return w.given && w.alias_of < 0 && sl.role != Role::Output;
         });
         if (!x) return false;
         x->garbage = true;
         return true;
       }},
  };
}

// ---------------------------------------------------------------------------
// Crash reporting: the case being run is kept in a static buffer and written
// to stderr by a signal handler (no sanitizer) or the sanitizers' death callback.
// ---------------------------------------------------------------------------
inline char g_fuzz_case[16384];

inline void write_fuzz_case() {
  const char head[] = "\n=== contract fuzz: the case that was running (reproducer) ===\n";
  ssize_t r = write(2, head, sizeof head - 1);
  r = write(2, g_fuzz_case, strnlen(g_fuzz_case, sizeof g_fuzz_case));
  (void)r;
}
extern "C" inline void contract_fuzz_signal(int sig) {
  write_fuzz_case();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
inline void install_crash_reporter() {
  static bool done = false;
  if (done) return;
  done = true;
#ifdef BT_CONTRACT_HAVE_SANITIZER
  // ASan reports end in its death callback; UBSan (a separate runtime with
  // its own callback slot under GCC) aborts (abort_on_error=1 in
  // tests/support/sanitizer_options.cpp), and SIGABRT is not ASan's.
  __sanitizer_set_death_callback(write_fuzz_case);
  std::signal(SIGABRT, contract_fuzz_signal);
#else
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, contract_fuzz_signal);
#endif
}
inline void set_fuzz_case(const std::string& s) {
  const size_t n = std::min(s.size(), sizeof g_fuzz_case - 1);
  std::memcpy(g_fuzz_case, s.data(), n);
  g_fuzz_case[n] = 0;
}

// ---------------------------------------------------------------------------
// The fuzz loop
// ---------------------------------------------------------------------------
inline double fuzz_seconds() {
  const char* e = std::getenv("BARACUDA_FUZZ_SECONDS");
  return e ? std::atof(e) : 2.0;
}

// Fills `n` extreme values for an input of dtype t.
inline void garbage_values(Rng& rng, DType t, std::vector<double>& v) {
  Fuzz f(rng);
  for (double& x : v) {
    if (baracuda::is_floating_point(t)) x = f.any_double();
    else if (t == DType::I64) x = static_cast<double>(f.pick<int64_t>({INT64_MIN / 2, -(int64_t{1} << 62), -1, 0,
                                                                           int64_t{1} << 62, f.range(-1000, 1000)}));
    else x = static_cast<double>(f.pick<int64_t>({INT32_MIN, -1, 0, INT32_MAX, f.range(-100000, 100000)}));
  }
}

enum class Expect { Fail, Succeed, Either };

template <class Traits>
class Fuzzer {
 public:
  using Plan = typename Traits::Plan;
  using Desc = typename Traits::Desc;
  using Args = typename Traits::Args;

  struct Stats {
    int64_t cases = 0, select_errors = 0, run_errors = 0, ok_checked = 0, failures = 0;
    std::map<std::string, int64_t> by_mutation;
    std::map<std::string, int64_t> failure_classes;  // "mutation | what failed" -> count
  };

  Stats run(double seconds, uint64_t base_seed, const uint64_t* only_case) {
    install_crash_reporter();
    const auto desc_muts = Traits::desc_mutators();
    const auto view_muts = view_mutations<Args>();
    for (const auto& m : desc_muts)
      if (wanted(m.name)) desc_muts_.push_back(&m);
    for (const auto& m : view_muts)
      if (wanted(m.name)) view_muts_.push_back(&m);
    no_mutation_ = wanted("none");
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0;; ++i) {
      const uint64_t seed = only_case ? *only_case : bt::splitmix64(base_seed + i);
      try {
        one_case(seed, only_case != nullptr);  // counts itself in stats_.cases when it runs
      } catch (const std::exception& e) {  // errors are values: an exception out of a plan is a failure
        fail(std::string("threw ") + e.what(), g_fuzz_case);
      }
      if (only_case) break;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= seconds) break;
    }
    set_fuzz_case("(between cases)");
    return stats_;
  }

 private:
  std::vector<const DescMutator<Desc>*> desc_muts_;
  std::vector<const ViewMutator<Args>*> view_muts_;
  Stats stats_;

  bool no_mutation_ = true;
  std::string mutation_;  // of the running case

  // A mutation runs unless kKnownFailures lists it for this plan, or
  // BARACUDA_FUZZ_SKIP names it, or BARACUDA_FUZZ_ONLY is set and does not
  // (comma-separated names, e.g. "view.huge_stride,desc.extents_wrap"; "none"
  // is the unmutated case).
  static bool listed(const char* env, const std::string& name) {
    const char* e = std::getenv(env);
    if (!e) return false;
    const std::string list = std::string(",") + e + ",";
    return list.find("," + name + ",") != std::string::npos;
  }
  static bool wanted(const std::string& name) {
    if (known_failure(Traits::kName, "fuzz." + name) || listed("BARACUDA_FUZZ_SKIP", name)) return false;
    return !std::getenv("BARACUDA_FUZZ_ONLY") || listed("BARACUDA_FUZZ_ONLY", name);
  }

  // A check of the fuzz itself can be listed too ("fuzz.check.<name>"), when
  // only that check fails for a plan and gating the mutations would lose coverage.
  static bool checking(const std::string& check) {
    return !known_failure(Traits::kName, "fuzz.check." + check) && !listed("BARACUDA_FUZZ_SKIP", "check." + check);
  }

  // Reports the first case of each failure class (mutation + what failed).
  void fail(const std::string& what, const std::string& text) {
    ++stats_.failures;
    const std::string key = mutation_ + " | " + what.substr(0, what.find(": "));
    if (++stats_.failure_classes[key] == 1) ADD_FAILURE() << Traits::kName << " fuzz: " << what << "\n" << text;
  }

  static std::string describe_view(const Slot<Args>& s, const FuzzView& v) {
    std::ostringstream os;
    os << "  " << s.name
       << (s.role == Role::Output ? " (output)" : s.role == Role::InOut ? " (in-out)" : s.role == Role::Unused ? " (unused)" : "")
       << ": ";
    if (!v.given) return os.str() + "not given\n";
    os << (dtype_known(v.dtype) ? std::string(baracuda::dtype_name(v.dtype)) : "dtype#" + std::to_string(int(v.dtype)))
       << " " << v.device.to_string() << " shape " << dims_str(v.shape) << " strides " << dims_str(v.strides);
    if (v.null_data) os << " data=null";
    if (v.misalign) os << " misaligned+" << v.misalign;
    if (v.cap_adjust) os << " capacity" << v.cap_adjust;
    if (v.force_capacity) os << " capacity=" << v.forced_capacity;
    if (v.alias_of >= 0) os << (v.same_view ? " same view as slot #" : " aliases slot #") << v.alias_of << " +" << v.alias_shift;
    if (v.garbage) os << " extreme values";
    os << "\n";
    return os.str();
  }

  void one_case(uint64_t seed, bool verbose) {
    Rng rng(seed);
    Fuzz f(rng);
    Desc desc = Traits::valid_desc(rng);
    std::ostringstream text;
    text << Traits::kName << " case seed " << seed << " (BARACUDA_FUZZ_CASE=" << seed << ")\n";
    std::string mutation = "none";
    const bool mutate_desc = !desc_muts_.empty() && (view_muts_.empty() || f.chance(0.3));
    if (mutate_desc) {
      const auto* m = desc_muts_[static_cast<size_t>(f.range(0, static_cast<int64_t>(desc_muts_.size()) - 1))];
      m->apply(desc, f);
      mutation = m->name;
    }
    text << "  descriptor: " << Traits::describe(desc) << "\n";
    mutation_ = mutation;
    set_fuzz_case(text.str() + "  mutation: " + mutation + "\n  (in select)\n");
    if (verbose) std::printf("%s", text.str().c_str());
    auto plan = Plan::select(Stream::cpu(), desc);
    if (!plan) {
      ++stats_.cases;
      ++stats_.select_errors;
      ++stats_.by_mutation[mutation + " -> select error"];
      if (!starts_with_name(plan.status().message(), Traits::kName) && checking("error_names_plan"))
        fail("select() error does not name the plan: " + plan.status().to_string(), text.str());
      if (plan.status().code() == StatusCode::Ok || plan.status().code() == StatusCode::CudaError ||
          plan.status().code() == StatusCode::LibraryError)
        fail("select() returned " + plan.status().to_string(), text.str());
      return;
    }
    const std::vector<Slot<Args>> slots = Traits::slots(*plan);
    const size_t n = slots.size();
    std::vector<FuzzView> views(n);
    for (size_t i = 0; i < n; ++i) {
      views[i].given = slots[i].role != Role::Unused;
      views[i].shape = slots[i].shape;
      views[i].strides = wrapping_strides(slots[i].shape);
      views[i].dtype = slots[i].dtype;
    }
    if (!mutate_desc && !view_muts_.empty()) {
      std::string names;
      const int count = f.chance(0.3) ? 2 : 1;
      for (int k = 0, tries = 0; k < count && tries < 20; ++tries) {
        const auto* m = view_muts_[static_cast<size_t>(f.range(0, static_cast<int64_t>(view_muts_.size()) - 1))];
        if (!m->apply(views, slots, f)) continue;
        names += (k ? "+" : "") + std::string(m->name);
        ++k;
      }
      if (!names.empty()) mutation = names;
    }
    if (mutation == "none" && !no_mutation_) return;
    mutation_ = mutation;
    ++stats_.cases;
    text << "  mutation: " << mutation << "\n";
    for (size_t i = 0; i < n; ++i) text << describe_view(slots[i], views[i]);
    ++stats_.by_mutation[mutation];
    set_fuzz_case(text.str() + "  (building the buffers)\n");

    // ---- buffers --------------------------------------------------------------
    std::vector<std::unique_ptr<GuardedBuffer>> bufs(n);
    std::vector<int64_t> offset(n, 0);  // element offset of the data pointer in its buffer
    auto needed = [&](size_t i) -> int64_t {  // elements a view reaches from its lowest offset
      const Reach r = reach_of(views[i].shape, views[i].strides);
      if (!r.sane) return 16;
      if (r.numel == 0) return 0;
      return r.span() <= kMaxFuzzElems ? static_cast<int64_t>(r.span()) : -1;
    };
    for (size_t i = 0; i < n; ++i) {
      FuzzView& v = views[i];
      if (!v.given || v.alias_of >= 0) continue;
      const int64_t need = needed(i);
      int64_t elems = need < 0 ? 16 : std::max<int64_t>(need + v.cap_adjust, 0);
      const Reach r = reach_of(v.shape, v.strides);
      if (need > 0) offset[i] = static_cast<int64_t>(-r.lo);
      // a view aliasing this one must fit as well
      size_t bytes = static_cast<size_t>(elems) * esize(v.dtype) + static_cast<size_t>(v.misalign);
      for (size_t j = 0; j < n; ++j)
        if (views[j].given && views[j].alias_of == static_cast<int>(i) && !views[j].same_view) {
          const int64_t nj = needed(j);
          if (nj >= 0)
            bytes = std::max(bytes, static_cast<size_t>(nj + views[j].alias_shift) * esize(views[j].dtype));
        }
      bufs[i] = std::make_unique<GuardedBuffer>(Device::cpu(), bytes);
      if (slots[i].role == Role::Output) {
        bufs[i]->fill(kPoison);
      } else {
        const DType t = slots[i].dtype;  // values of the slot's own dtype
        const int64_t cnt = static_cast<int64_t>(bytes / esize(t));
        std::vector<double> vals(static_cast<size_t>(cnt));
        if (v.garbage) garbage_values(rng, t, vals);
        else if (slots[i].values) slots[i].values(rng, vals);
        else vals = bt::random_values(t, cnt, rng);
        bt::HostBuffer h(t, cnt);
        for (int64_t e = 0; e < cnt; ++e) h.set(e, vals[static_cast<size_t>(e)]);
        bufs[i]->write(h.data(), h.bytes());
      }
    }
    std::vector<TensorMut> tv(n);
    for (size_t i = 0; i < n; ++i) {
      const FuzzView& v = views[i];
      if (!v.given) continue;
      TensorMut& t = tv[i];
      t.dtype = v.dtype;
      t.device = v.device;
      t.shape = v.shape;
      t.strides = v.strides;
      if (v.alias_of >= 0) {
        const size_t a = static_cast<size_t>(v.alias_of);
        if (v.same_view) {
          t = tv[a];
          continue;
        }
        uint8_t* base = bufs[a]->payload();
        const size_t shift = static_cast<size_t>(v.alias_shift) * esize(v.dtype);
        t.data = base + shift;
        t.capacity = static_cast<int64_t>((bufs[a]->payload_bytes() - std::min(shift, bufs[a]->payload_bytes())) / esize(v.dtype));
      } else {
        const size_t esz = esize(v.dtype);
        uint8_t* p = bufs[i]->payload() + static_cast<size_t>(offset[i]) * esz + static_cast<size_t>(v.misalign);
        t.data = p;
        t.capacity = static_cast<int64_t>((bufs[i]->payload_bytes() - static_cast<size_t>(v.misalign)) / esz) - offset[i];
      }
      if (v.force_capacity) t.capacity = std::min(t.capacity, v.forced_capacity);  // never claim more than there is
      if (v.null_data) t.data = nullptr;
    }
    Args args{};
    for (size_t i = 0; i < n; ++i)
      if (views[i].given) slots[i].bind(args, tv[i]);
    const size_t ws_bytes = plan->workspace_size();
    GuardedBuffer ws(Device::cpu(), std::min<size_t>(ws_bytes, size_t{1} << 24));
    const Workspace workspace = ws_bytes ? Workspace(ws.payload(), ws.payload_bytes()) : Workspace::none();

    std::string why;
    const Expect expect = expectation(*plan, slots, views, tv, &why);
    text << "  expected: " << (expect == Expect::Fail ? "an error (" + why + ")" : expect == Expect::Succeed ? "Ok" : "Ok or an error") << "\n";
    std::vector<std::vector<uint8_t>> before(n);
    for (size_t i = 0; i < n; ++i)
      if (bufs[i]) before[i] = bufs[i]->read();

    set_fuzz_case(text.str() + "  (in run)\n");
    if (verbose) std::printf("%s", text.str().c_str());
    const Status st = plan->run(Stream::cpu(), workspace, args);
    set_fuzz_case(text.str() + "  (checking the result of run: " + st.to_string() + ")\n");
    if (verbose) std::printf("  run: %s\n", st.to_string().c_str());

    // ---- checks ---------------------------------------------------------------
    for (size_t i = 0; i < n; ++i)
      if (bufs[i]) {
        const std::string g = bufs[i]->check_guards();
        if (!g.empty()) fail(std::string("wrote outside the buffer of ") + slots[i].name + ": " + g, text.str());
      }
    const std::string wg = ws.check_guards();
    if (!wg.empty()) fail("wrote outside the workspace: " + wg, text.str());
    for (size_t i = 0; i < n; ++i) {
      if (!bufs[i] || writes(slots[i].role)) continue;
      bool shared = false;  // an output writes into this buffer (in place, or an alias the plan accepted)
      for (size_t j = 0; j < n; ++j) shared |= views[j].given && views[j].alias_of == static_cast<int>(i) && writes(slots[j].role);
      if (!shared && bufs[i]->read() != before[i]) fail(std::string("modified its input ") + slots[i].name, text.str());
    }
    if (!st.is_ok()) {
      ++stats_.run_errors;
      if (!starts_with_name(st.message(), Traits::kName) && checking("error_names_plan"))
        fail("run() error does not name the plan: " + st.to_string(), text.str());
      const StatusCode c = st.code();
      if (c != StatusCode::InvalidProblem && c != StatusCode::Unsupported && c != StatusCode::BufferTooSmall &&
          c != StatusCode::WorkspaceTooSmall)
        fail("run() returned " + st.to_string(), text.str());
      if (expect == Expect::Succeed) fail("rejected a valid call: " + st.to_string(), text.str());
      for (size_t i = 0; i < n; ++i)
        if (bufs[i] && writes(slots[i].role) && bufs[i]->read() != before[i])
          fail(std::string("returned an error but wrote into output ") + slots[i].name + ": " + st.to_string(), text.str());
      return;
    }
    if (expect == Expect::Fail) {
      fail("accepted an invalid call (" + why + ")", text.str());
      return;
    }
    check_against_contiguous(*plan, slots, views, tv, bufs, before, text.str());
  }

  // Output o is exactly input i (same data, dtype, shape and strides on every
  // axis of extent > 1) and the plan documents o as in place of i.
  static bool exact_in_place(const std::vector<Slot<Args>>& slots, const std::vector<TensorMut>& tv, size_t o, size_t i) {
    if (!in_place_allowed(slots[o], slots[i].name)) return false;
    const TensorMut &a = tv[o], &b = tv[i];
    if (a.data != b.data || a.dtype != b.dtype || !(a.shape == b.shape) || !(a.strides.rank == b.strides.rank)) return false;
    for (int d = 0; d < a.shape.rank; ++d)
      if (a.shape[d] > 1 && a.strides[d] != b.strides[d]) return false;
    return true;
  }

  // What a correct plan must answer for these views. Conservative where the
  // library may be (Either): output strides that do not nest, and views whose
  // address ranges intersect without sharing an element.
  Expect expectation(const Plan& plan, const std::vector<Slot<Args>>& slots, const std::vector<FuzzView>& views,
                     const std::vector<TensorMut>& tv, std::string* why) {
    (void)plan;
    Expect e = Expect::Succeed;
    const size_t n = slots.size();
    for (size_t i = 0; i < n; ++i) {
      const Slot<Args>& s = slots[i];
      const FuzzView& v = views[i];
      const TensorMut& t = tv[i];
      const std::string nm = s.name;
      if (s.role == Role::Unused) {
        if (v.given && t.data != nullptr) { *why = nm + " is given but the descriptor does not use it"; return Expect::Fail; }
        continue;
      }
      if (!v.given) continue;
      if (t.dtype != s.dtype) { *why = nm + " has the wrong dtype"; return Expect::Fail; }
      if (!rank_ok(t.shape) || !rank_ok(t.strides)) { *why = nm + " has a rank outside [0, 8]"; return Expect::Fail; }
      if (!(t.shape == s.shape)) { *why = nm + " has the wrong shape"; return Expect::Fail; }
      if (t.strides.rank != t.shape.rank) { *why = nm + " has a stride count unlike its rank"; return Expect::Fail; }
      const Reach r = reach_of(t.shape, t.strides);
      if (r.negative_stride) { *why = nm + " has a negative stride"; return Expect::Fail; }
      if (r.numel == 0) {
        // Empty views are validated like others: the offsets along their
        // non-empty axes must fit int64 (loops still form them).
        i128 reach = 0;
        for (int a = 0; a < t.shape.rank; ++a)
          if (t.shape[a] > 0) reach += static_cast<i128>(t.shape[a] - 1) * t.strides[a];
        if (reach > static_cast<i128>(INT64_MAX)) { *why = nm + " is empty but its strides reach past int64"; return Expect::Fail; }
        continue;
      }
      if (!(t.device == Device::cpu())) { *why = nm + " is on another device"; return Expect::Fail; }
      if (t.data == nullptr) { *why = nm + " is null but not empty"; return Expect::Fail; }
      if (reinterpret_cast<uintptr_t>(t.data) % esize(t.dtype) != 0) { *why = nm + " is misaligned"; return Expect::Fail; }
      if (r.span() > static_cast<i128>(t.capacity)) { *why = nm + " reaches past its buffer's capacity"; return Expect::Fail; }
      if (s.dense) {  // strides of every axis of extent != 1 row-major
        i128 expect = 1;
        for (int a = t.shape.rank - 1; a >= 0; --a) {
          if (t.shape[a] != 1 && static_cast<i128>(t.strides[a]) != expect) { *why = nm + " is not dense row-major"; return Expect::Fail; }
          expect *= t.shape[a];
        }
      }
      if (r.numel > kMaxFuzzElems) return Expect::Either;  // too many elements to check one by one
      // The plan validates these values (cu_seqlens); they may be wrong for the
      // descriptor or the layout, so refusing them is fine (accepting them must
      // still give the contiguous result).
      if (s.values_checked) e = Expect::Either;
    }
    // Overlaps (all views are sane and small from here on).
    auto elems = [&](size_t i) {
      std::vector<std::pair<uintptr_t, uintptr_t>> iv;
      const TensorMut& t = tv[i];
      const size_t esz = esize(t.dtype);
      for (int64_t o : element_offsets(t.shape, t.strides)) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(o) * esz;
        iv.push_back({a, a + esz});
      }
      std::sort(iv.begin(), iv.end());
      return iv;
    };
    auto share = [](const auto& a, const auto& b) {  // some byte in both
      size_t i = 0, j = 0;
      while (i < a.size() && j < b.size()) {
        if (a[i].second <= b[j].first) ++i;
        else if (b[j].second <= a[i].first) ++j;
        else return true;
      }
      return false;
    };
    auto ranges_meet = [&](size_t i, size_t j) {
      const auto a = elems(i), b = elems(j);
      return a.front().first < b.back().second && b.front().first < a.back().second;
    };
    auto live = [&](size_t i) { return views[i].given && slots[i].role != Role::Unused && reach_of(tv[i].shape, tv[i].strides).numel > 0; };
    for (size_t o = 0; o < n; ++o) {
      if (!writes(slots[o].role) || !live(o)) continue;
      const auto eo = elems(o);
      for (size_t k = 1; k < eo.size(); ++k)
        if (eo[k].first < eo[k - 1].second) { *why = std::string(slots[o].name) + " overlaps itself"; return Expect::Fail; }
      // the library's self-overlap test is "each stride >= span of the smaller ones"
      {
        std::vector<std::pair<int64_t, int64_t>> d;
        for (int a = 0; a < tv[o].shape.rank; ++a)
          if (tv[o].shape[a] > 1) d.push_back({tv[o].strides[a], tv[o].shape[a]});
        std::sort(d.begin(), d.end());
        i128 reach = 1;
        for (auto [st, ex] : d) {
          if (st < reach) e = Expect::Either;
          reach += static_cast<i128>(st) * (ex - 1);
        }
      }
      for (size_t i = 0; i < n; ++i) {
        if (i == o || !live(i)) continue;
        if (exact_in_place(slots, tv, o, i)) continue;
        if (share(eo, elems(i))) {
          *why = std::string(slots[o].name) + " overlaps " + slots[i].name;
          return Expect::Fail;
        }
        if (ranges_meet(o, i)) e = Expect::Either;
      }
    }
    return e;
  }

  // The plan's answer for these views must equal, bit for bit, its answer for
  // contiguous copies of the same logical inputs, and gaps keep their poison.
  void check_against_contiguous(const Plan& plan, const std::vector<Slot<Args>>& slots, const std::vector<FuzzView>& views,
                                const std::vector<TensorMut>& tv, const std::vector<std::unique_ptr<GuardedBuffer>>& bufs,
                                const std::vector<std::vector<uint8_t>>& before, const std::string& text) {
    const size_t n = slots.size();
    for (size_t i = 0; i < n; ++i)
      if (views[i].given && reach_of(tv[i].shape, tv[i].strides).numel > kMaxFuzzElems) return;  // too big to compare
    Rng unused_rng(1);
    Call<Traits> ref = make_call<Traits>(plan, Device::cpu(), unused_rng, OutputLayout::Contiguous, kAltPoison);
    auto logical = [&](size_t i, bool pre) {  // logical bytes of view i, before or after the run
      const TensorMut& t = tv[i];
      const size_t esz = esize(t.dtype);
      size_t owner = views[i].alias_of >= 0 ? static_cast<size_t>(views[i].alias_of) : i;
      const uint8_t* base = bufs[owner]->payload();
      std::vector<uint8_t> now;
      if (!pre) now = bufs[owner]->read();
      const uint8_t* src = pre ? before[owner].data() : now.data();
      const ptrdiff_t start = static_cast<const uint8_t*>(t.data) - base;
      std::vector<uint8_t> out;
      for (int64_t o : element_offsets(t.shape, t.strides))
        out.insert(out.end(), src + start + o * static_cast<ptrdiff_t>(esz), src + start + (o + 1) * static_cast<ptrdiff_t>(esz));
      return out;
    };
    for (size_t i = 0; i < n; ++i) {  // inputs and in-outs: their values before the run
      if ((slots[i].role != Role::Input && slots[i].role != Role::InOut) || !views[i].given) continue;
      if (reach_of(tv[i].shape, tv[i].strides).numel == 0) continue;
      const auto b = logical(i, true);
      ref.bufs[i]->write(b.data(), b.size());
    }
    const Status st = plan.run(Stream::cpu(), ref.workspace(), ref.args);
    if (!st.is_ok()) {
      fail("accepted the fuzzed views but refused contiguous copies: " + st.to_string(), text);
      return;
    }
    ++stats_.ok_checked;
    for (size_t i = 0; i < n; ++i) {
      if (!writes(slots[i].role) || !views[i].given) continue;
      if (reach_of(tv[i].shape, tv[i].strides).numel == 0) continue;
      const auto got = logical(i, false);
      const auto want = ref.logical_bytes(i);
      if (got != want) {
        size_t first = 0;
        while (first < got.size() && got[first] == want[first]) ++first;
        fail(std::string("output ") + slots[i].name + " differs from the contiguous run (first differing byte " +
                 std::to_string(first) + " of " + std::to_string(got.size()) + ")",
             text);
      }
      if (views[i].alias_of < 0 && !aliased(views, i)) {  // gaps of its own buffer keep the poison
        const auto all = bufs[i]->read();
        std::vector<bool> cov(all.size(), false);
        const size_t esz = esize(tv[i].dtype);
        const ptrdiff_t start = static_cast<const uint8_t*>(tv[i].data) - bufs[i]->payload();
        for (int64_t o : element_offsets(tv[i].shape, tv[i].strides))
          for (size_t b = 0; b < esz; ++b) cov[static_cast<size_t>(start + o * static_cast<ptrdiff_t>(esz)) + b] = true;
        for (size_t b = 0; b < all.size(); ++b)  // an in-out's gaps hold what they held (values)
          if (!cov[b] && all[b] != (slots[i].role == Role::InOut ? before[i][b] : kPoison)) {
            fail(std::string("wrote into a gap of output ") + slots[i].name + " (byte " + std::to_string(b) + ")", text);
            break;
          }
      }
    }
  }
};

}  // namespace contract

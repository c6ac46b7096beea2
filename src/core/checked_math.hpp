// Overflow-checked int64 arithmetic for sizes derived from user input
// (element counts, spans, workspace bytes, work estimates). Every function
// returns false instead of wrapping, so a wrapped value can never make a huge
// view look small or empty.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

inline bool mul_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// Product of non-negative factors; a zero factor makes it 0 even when the
// others would overflow (an empty tensor is empty whatever its other extents).
inline bool checked_product(std::initializer_list<int64_t> factors, int64_t* out) {
  bool zero = false;
  for (int64_t f : factors) zero = zero || f == 0;
  if (zero) {
    *out = 0;
    return true;
  }
  int64_t p = 1;
  for (int64_t f : factors)
    if (f < 0 || !mul_ok(p, f, &p)) return false;
  *out = p;
  return true;
}

// Product of non-negative factors, saturated at INT64_MAX instead of
// overflowing: for estimates (work per item of a CPU parallel loop), never sizes.
inline int64_t saturating_product(std::initializer_list<int64_t> factors) {
  int64_t p = 0;
  return checked_product(factors, &p) ? p : INT64_MAX;
}

// Number of elements of `shape` (1 for rank 0); false when it overflows, an
// extent is negative or the rank is outside [0, kMaxRank].
bool checked_numel(const Dims& shape, int64_t* out);

// Largest element offset a view reaches + 1 (0 when empty); false when the
// arithmetic overflows int64 or a stride/extent is negative or ranks are bad.
bool checked_span(const Dims& shape, const Dims& strides, int64_t* out);

// A rank in [0, kMaxRank]: the invariant every Dims must keep before any
// loop indexes it (Dims's fields are public, so a caller can break it).
inline bool rank_ok(const Dims& d) { return d.rank >= 0 && d.rank <= kMaxRank; }

}  // namespace baracuda::detail

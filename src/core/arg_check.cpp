#include "core/arg_check.hpp"

#include <cstring>

#include "core/checks.hpp"
#include "core/error.hpp"
#include "core/overlap.hpp"

namespace baracuda::detail {

namespace {
bool given(const TensorRef& t) { return t.data != nullptr; }
// Never filled in: what a default-constructed view looks like. (A view with a
// shape and a null pointer is a different mistake: "data pointer is null".)
bool never_filled(const TensorRef& t) { return t.data == nullptr && t.shape.rank == 0; }

Status missing(const char* plan, const char* name, DType dtype, const Dims& shape, std::string_view why) {
  if (why.empty()) return invalid(plan, name, " is missing: expected a ", dtype, " view of shape ", shape);
  return invalid(plan, name, " is missing (", why, "): expected a ", dtype, " view of shape ", shape);
}
}  // namespace

Status empty_plan(const char* plan) {
  const std::string_view name = plan && *plan ? plan : "plan";
  return invalid(name, "the plan is empty (default-constructed): assign it from ", name, "::select() first");
}

ArgCheck& ArgCheck::input(const char* name, const TensorRef& v, DType dtype, const Dims& shape, std::string_view why) {
  if (!ok()) return *this;
  if (never_filled(v)) {
    status_ = missing(plan_, name, dtype, shape, why);
    return *this;
  }
  status_ = check_view(plan_, name, v, dtype, shape, device_);
  if (ok() && given(v) && n_in_ < kMaxViews) in_[n_in_++] = {name, v};
  return *this;
}

ArgCheck& ArgCheck::optional_input(const char* name, const TensorRef& v, bool used, DType dtype, const Dims& shape,
                                   std::string_view missing, std::string_view unused) {
  if (!ok()) return *this;
  if (!used) {
    if (given(v)) status_ = invalid(plan_, unused);
    return *this;
  }
  if (!given(v) && shape_numel(shape) != 0) {
    status_ = invalid(plan_, missing);
    return *this;
  }
  return input(name, v, dtype, shape);
}

ArgCheck& ArgCheck::output(const char* name, const TensorMut& v, DType dtype, const Dims& shape, std::string_view why) {
  if (!ok()) return *this;
  if (never_filled(v)) {
    status_ = missing(plan_, name, dtype, shape, why);
    return *this;
  }
  status_ = check_output(plan_, name, v, dtype, shape, device_);
  if (!ok()) return *this;
  if (v.numel() != 0) outputs_empty_ = false;
  if (given(v) && n_out_ < kMaxViews) out_[n_out_++] = {name, v};
  return *this;
}

ArgCheck& ArgCheck::optional_output(const char* name, const TensorMut& v, bool used, DType dtype, const Dims& shape,
                                    std::string_view unused) {
  if (!ok()) return *this;
  if (!used) {
    if (given(v)) status_ = invalid(plan_, unused);
    return *this;
  }
  return output(name, v, dtype, shape);
}

ArgCheck& ArgCheck::allow_in_place(const char* out, const char* in) {
  if (n_in_place_ < 4) in_place_[n_in_place_++] = {out, in};
  return *this;
}

ArgCheck& ArgCheck::disjoint(std::string_view note) {
  if (!ok()) return *this;
  const std::string suffix = note.empty() ? std::string() : " (" + std::string(note) + ")";
  for (int o = 0; o < n_out_; ++o) {
    for (int i = 0; i < n_in_; ++i) {
      if (!views_overlap_exact(out_[o].view, in_[i].view)) continue;
      bool pair = false;
      for (int k = 0; k < n_in_place_; ++k)
        pair = pair || (std::strcmp(in_place_[k].out, out_[o].name) == 0 && std::strcmp(in_place_[k].in, in_[i].name) == 0);
      if (pair) {
        if (same_view(out_[o].view, in_[i].view)) continue;
        status_ = invalid(plan_, out_[o].name, " partially overlaps ", in_[i].name,
                          " (in place needs the same data pointer and strides)");
        return *this;
      }
      status_ = invalid(plan_, out_[o].name, " overlaps ", in_[i].name, " in memory", suffix);
      return *this;
    }
  }
  for (int o = 0; o < n_out_; ++o)
    for (int p = o + 1; p < n_out_; ++p)
      if (views_overlap_exact(out_[o].view, out_[p].view)) {
        status_ = invalid(plan_, out_[o].name, " overlaps ", out_[p].name, " in memory");
        return *this;
      }
  return *this;
}

}  // namespace baracuda::detail

// ArgCheck: a plan's argument list, checked in declaration order. The first
// failing rule wins; later calls are no-ops. One object serves can_implement()
// (its status) and run() (its status, and whether every output is empty).
//
//   return detail::ArgCheck(name(), device())
//       .input("x", a.x, dtype, shape)
//       .optional_input("y", a.y, needs_y, dtype, out_shape, missing, unused)
//       .output("dx", a.dx, dtype, shape)
//       .disjoint();
//
// Every rule's message starts with the plan's name. View rules: dtype, shape,
// a valid rank, strides >= 0, checked int64 span, device, non-null data and
// alignment unless empty, capacity (BufferTooSmall); outputs additionally
// never write one element twice. disjoint(): outputs overlap no given input
// (except an allowed in-place pair that is exactly the same view) and no
// other output — the exact overlap test of core/overlap.hpp.
#pragma once
#include <string>
#include <string_view>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// The error of every call on a default-constructed (empty) plan:
// "<plan>: the plan is empty (default-constructed): assign it from <plan>::select() first".
Status empty_plan(const char* plan);

class ArgCheck {
 public:
  ArgCheck(const char* plan, Device device) : plan_(plan), device_(device) {}
  // The plan's name and device; an empty (default-constructed) plan fails
  // every argument list with empty_plan().
  explicit ArgCheck(const PlanBase& plan) : plan_(plan.name()), device_(plan.device()) {
    if (plan.empty()) status_ = empty_plan(plan.name());
  }

  // A tensor the problem reads. A view that was never filled in (null data
  // and rank 0, i.e. a default-constructed TensorRef) is reported as missing:
  // "<plan>: <name> is missing (<why>): expected a <dtype> view of shape
  // <shape>"; `why` names the descriptor flag that asks for it, when one does
  // ("descriptor.has_k is true, the default").
  ArgCheck& input(const char* name, const TensorRef& v, DType dtype, const Dims& shape, std::string_view why = {});
  // A tensor only some descriptors use. `used`: it must be given (data set,
  // unless its expected shape is empty; else "<plan>: <missing>") and pass the
  // view rules. Not used: it must not be given ("<plan>: <unused>").
  ArgCheck& optional_input(const char* name, const TensorRef& v, bool used, DType dtype, const Dims& shape,
                           std::string_view missing, std::string_view unused);
  // A tensor the problem writes (missing: as input()).
  ArgCheck& output(const char* name, const TensorMut& v, DType dtype, const Dims& shape, std::string_view why = {});
  ArgCheck& optional_output(const char* name, const TensorMut& v, bool used, DType dtype, const Dims& shape,
                            std::string_view unused);
  // Output `out` may be input `in` itself (same data, shape and strides).
  ArgCheck& allow_in_place(const char* out, const char* in);
  // Outputs overlap no given input and no other output. `note` (optional) is
  // appended in parentheses to output/input overlap messages.
  ArgCheck& disjoint(std::string_view note = {});
  // A plan-specific rule, run only while every earlier rule passed.
  template <class F>
  ArgCheck& rule(F&& f) {
    if (status_.is_ok()) status_ = f();
    return *this;
  }

  const Status& status() const { return status_; }
  bool ok() const { return status_.is_ok(); }
  // True when every declared output has zero elements (run() returns early).
  bool outputs_empty() const { return outputs_empty_; }

 private:
  struct Named {
    const char* name;
    TensorRef view;
  };
  static constexpr int kMaxViews = 16;
  const char* plan_;
  Device device_;
  Status status_;
  Named in_[kMaxViews];
  Named out_[kMaxViews];
  int n_in_ = 0, n_out_ = 0;
  struct Pair {
    const char *out, *in;
  };
  Pair in_place_[4];
  int n_in_place_ = 0;
  bool outputs_empty_ = true;
};

}  // namespace baracuda::detail

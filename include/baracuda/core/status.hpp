// Status / Result<T>: errors are values. Every failing call returns a code and a
// message that names the plan and the exact problem.
#pragma once
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "baracuda/core/export.hpp"

namespace baracuda {

enum class StatusCode {
  Ok,
  InvalidProblem,     // the descriptor or the arguments describe an invalid problem
  Unsupported,        // valid problem, but no backend here implements it
  BufferTooSmall,     // a tensor's buffer cannot hold the elements its view reaches
  WorkspaceTooSmall,  // run() was given less scratch than workspace_size()
  CudaError,          // a CUDA runtime call failed
  LibraryError,       // an NVIDIA library (cuBLASLt, cuDNN, ...) failed
};

BARACUDA_API const char* status_code_name(StatusCode c);

// [[nodiscard]]: a dropped Status or Result is almost always a failing run()
// whose output was never written. Compilers warn (-Wunused-result is on by
// default; -Werror=unused-result makes it an error); cast to (void) to drop
// one on purpose. ctest cpu.Compile.DroppedStatusIsDiagnosed proves the diagnostic
// (tests/compile/nodiscard_snippet.cpp).
class [[nodiscard]] BARACUDA_API Status {
 public:
  Status() = default;  // Ok
  Status(StatusCode code, std::string message, size_t needed = 0, size_t got = 0)
      : code_(code), message_(std::move(message)), needed_(needed), got_(got) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // For BufferTooSmall / WorkspaceTooSmall: what was needed and what was given
  // (elements for buffers, bytes for workspaces).
  size_t needed() const { return needed_; }
  size_t got() const { return got_; }
  // "InvalidProblem: ReducePlan: axis 3 out of range for rank 2"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
  size_t needed_ = 0, got_ = 0;
};

class BARACUDA_API StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status s) : std::runtime_error(s.to_string()), status_(std::move(s)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Result<T>: either a value or a non-ok Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                       // NOLINT
  Result(Status status) : status_(not_ok(std::move(status))) {}       // NOLINT
  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  // value(): throws StatusError when this holds an error.
  T& value() & { check(); return *value_; }
  const T& value() const& { check(); return *value_; }
  T&& value() && { check(); return std::move(*value_); }
  T* operator->() { check(); return &*value_; }
  const T* operator->() const { check(); return &*value_; }
  T& operator*() { check(); return *value_; }
  const T& operator*() const { check(); return *value_; }

 private:
  void check() const { if (!value_) throw StatusError(status_); }
  // A Result without a value holds an error. Done in the member initializer,
  // not by assigning status_ in the constructor's body: nvcc's front end takes
  // the Status& that operator= returns for a [[nodiscard]] value and warns
  // (#2810-D) in every CUDA translation unit.
  static Status not_ok(Status s) {
    if (s.is_ok()) return Status(StatusCode::InvalidProblem, "Result built from an ok Status without a value");
    return s;
  }
  std::optional<T> value_;
  Status status_;
};

// Propagate a non-ok Status to the caller.
#define BARACUDA_RETURN_IF_ERROR(expr)              \
  do {                                              \
    ::baracuda::Status _bc_st = (expr);             \
    if (!_bc_st.is_ok()) return _bc_st;             \
  } while (0)

}  // namespace baracuda

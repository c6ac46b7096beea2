// One way to build an error: detail::error(code, plan, parts...) concatenates
// the plan's name, ": " and the parts (strings, numbers, Dims, DType, Device)
// into the Status message, so no message is assembled by hand from
// std::to_string chains and every message has the same shape:
//   "<Plan>: <tensor or field> <what is wrong>"
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

inline void append_part(std::ostringstream& os, const Dims& d) { os << d.to_string(); }
inline void append_part(std::ostringstream& os, DType t) { os << dtype_name(t); }
inline void append_part(std::ostringstream& os, const Device& d) { os << d.to_string(); }
inline void append_part(std::ostringstream& os, bool b) { os << (b ? "true" : "false"); }
template <class T>
void append_part(std::ostringstream& os, const T& v) {
  if constexpr (std::is_enum_v<T>) os << static_cast<int64_t>(v);  // unknown enum values print as numbers
  else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) os << static_cast<int>(v);
  else os << v;
}

template <class... Parts>
std::string message(std::string_view plan, const Parts&... parts) {
  std::ostringstream os;
  os.precision(10);
  os << plan << ": ";
  (append_part(os, parts), ...);
  return os.str();
}

template <class... Parts>
Status error(StatusCode code, std::string_view plan, const Parts&... parts) {
  return Status(code, message(plan, parts...));
}
template <class... Parts>
Status invalid(std::string_view plan, const Parts&... parts) {
  return error(StatusCode::InvalidProblem, plan, parts...);
}
template <class... Parts>
Status unsupported(std::string_view plan, const Parts&... parts) {
  return error(StatusCode::Unsupported, plan, parts...);
}

}  // namespace baracuda::detail

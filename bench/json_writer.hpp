// The bench's one JSON writer: an ordered object of already-encoded fields, and
// the file layout every family's results share (compare.py and the files under
// bench/results/ read it):
//
//   {
//     "<header key>": <value>,
//     ...
//     "cases": [
//       {"name": ..., ...},
//       {"name": ..., ...}
//     ]
//   }
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace baracuda::bench {

// "s" with '"', '\\' and control characters escaped.
inline std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

// Six significant digits: timings are medians of noisy runs, more would be noise.
inline std::string json_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

inline std::string json_dims(const Dims& d) {
  std::string s = "[";
  for (int i = 0; i < d.rank; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// An object whose fields keep the order they were added in.
class JsonObject {
 public:
  JsonObject& str(const std::string& key, const std::string& v) { return raw(key, json_str(v)); }
  JsonObject& num(const std::string& key, double v) { return raw(key, json_num(v)); }
  JsonObject& integer(const std::string& key, int64_t v) { return raw(key, std::to_string(v)); }
  JsonObject& boolean(const std::string& key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonObject& dims(const std::string& key, const Dims& v) { return raw(key, json_dims(v)); }
  // `encoded` is already JSON text.
  JsonObject& raw(const std::string& key, std::string encoded) {
    fields_.emplace_back(key, std::move(encoded));
    return *this;
  }

  // {"a": 1, "b": 2}: one case per line in the file.
  std::string one_line() const {
    std::string s = "{";
    for (size_t i = 0; i < fields_.size(); ++i) s += (i ? ", " : "") + json_str(fields_[i].first) + ": " + fields_[i].second;
    return s + "}";
  }

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The results file: the header's fields one per line, then "cases", one per line.
inline std::string json_document(const JsonObject& header, const std::vector<JsonObject>& cases) {
  std::string s = "{\n";
  for (const auto& [key, value] : header.fields()) s += "  " + json_str(key) + ": " + value + ",\n";
  s += "  \"cases\": [";
  for (size_t i = 0; i < cases.size(); ++i) s += (i ? ",\n    " : "\n    ") + cases[i].one_line();
  return s + "\n  ]\n}\n";
}

// Write-then-rename: a run killed mid-way still leaves the last complete file.
inline void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::fprintf(stderr, "cannot write %s\n", path.c_str());
}

}  // namespace baracuda::bench

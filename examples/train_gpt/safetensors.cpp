// safetensors reader / writer (safetensors.hpp). JSON through nlohmann-json.
#include "safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <utility>

namespace train_gpt {
namespace {

using baracuda::DType;
using baracuda::Status;
using baracuda::StatusCode;

constexpr uint64_t kMaxHeader = 100u * 1000u * 1000u;

struct NameOf {
  DType dtype;
  const char* name;
};
constexpr NameOf kNames[] = {{DType::Bool, "BOOL"}, {DType::U8, "U8"},         {DType::I8, "I8"},
                             {DType::I16, "I16"},   {DType::I32, "I32"},       {DType::I64, "I64"},
                             {DType::F16, "F16"},   {DType::BF16, "BF16"},     {DType::F32, "F32"},
                             {DType::F64, "F64"},   {DType::F8E4M3, "F8_E4M3"}, {DType::F8E5M2, "F8_E5M2"}};

Status bad(const std::string& what, const std::string& msg) {
  return Status(StatusCode::InvalidProblem, "safetensors: " + what + ": " + msg);
}

bool dtype_of(const std::string& s, DType* out) {
  for (const NameOf& n : kNames)
    if (s == n.name) return *out = n.dtype, true;
  return false;
}

// numel * size without overflow; false when it does not fit in 64 bits.
bool byte_count(const std::vector<int64_t>& shape, size_t elem, uint64_t* out) {
  uint64_t n = elem;
  for (int64_t e : shape) {
    if (e < 0) return false;
    if (e != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(e)) return false;
    n *= static_cast<uint64_t>(e);
  }
  *out = n;
  return true;
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  for (const NameOf& n : kNames)
    if (n.dtype == t) return n.name;
  return nullptr;
}

const LoadedTensor* SafetensorsFile::find(const std::string& name) const {
  for (const LoadedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Status save_safetensors(const std::string& path, const std::vector<TensorToSave>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorToSave& t : tensors) {
    const char* dn = safetensors_dtype_name(t.dtype);
    if (!dn) return bad(path, "tensor '" + t.name + "' has dtype " + std::string(baracuda::dtype_name(t.dtype)) +
                                  ", which safetensors cannot store");
    if (t.name.empty() || t.name == "__metadata__") return bad(path, "tensor name '" + t.name + "' is not allowed");
    if (header.contains(t.name)) return bad(path, "tensor name '" + t.name + "' appears twice");
    uint64_t n = 0;
    if (!byte_count(t.shape, baracuda::dtype_size(t.dtype), &n))
      return bad(path, "tensor '" + t.name + "' has a negative or too large shape");
    if (n > 0 && !t.data) return bad(path, "tensor '" + t.name + "' has no data");
    header[t.name] = {{"dtype", dn}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    sizes.push_back(n);
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return bad(path, "cannot open for writing");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  f.write(reinterpret_cast<const char*>(len), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (size_t i = 0; i < tensors.size(); ++i)
    f.write(static_cast<const char*>(tensors[i].data), static_cast<std::streamsize>(sizes[i]));
  f.close();
  if (!f) return bad(path, "write failed");
  return Status::ok();
}

baracuda::Result<SafetensorsFile> parse_safetensors(std::vector<uint8_t> file, const std::string& what) {
  if (file.size() < 8) return bad(what, "shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(file[i]) << (8 * i);
  if (n > kMaxHeader) return bad(what, "header length " + std::to_string(n) + " exceeds 100 MB");
  if (n > file.size() - 8)
    return bad(what, "header length " + std::to_string(n) + " exceeds the file (" + std::to_string(file.size()) +
                         " bytes)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    return bad(what, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return bad(what, "header is not a JSON object");
  SafetensorsFile out;
  const uint64_t data_size = file.size() - 8 - n;
  try {
    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::json& e = it.value();
      if (name == "__metadata__") {
        if (!e.is_object()) return bad(what, "__metadata__ is not an object");
        for (auto m = e.begin(); m != e.end(); ++m) {
          if (!m.value().is_string()) return bad(what, "__metadata__ value '" + m.key() + "' is not a string");
          out.metadata[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
        return bad(what, "tensor '" + name + "' lacks dtype, shape or data_offsets");
      LoadedTensor t;
      t.name = name;
      if (!e["dtype"].is_string() || !dtype_of(e["dtype"].get<std::string>(), &t.dtype))
        return bad(what, "tensor '" + name + "' has an unknown dtype " + e["dtype"].dump());
      if (!e["shape"].is_array()) return bad(what, "tensor '" + name + "' has a shape that is not a list");
      for (const auto& d : e["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          return bad(what, "tensor '" + name + "' has a bad extent " + d.dump());
        t.shape.push_back(d.get<int64_t>());
      }
      const nlohmann::json& o = e["data_offsets"];
      if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
        return bad(what, "tensor '" + name + "' has data_offsets that are not two non-negative integers");
      const uint64_t b = o[0].get<uint64_t>(), end = o[1].get<uint64_t>();
      uint64_t want = 0;
      if (!byte_count(t.shape, baracuda::dtype_size(t.dtype), &want))
        return bad(what, "tensor '" + name + "' has a shape too large to address");
      if (end < b || end - b != want)
        return bad(what, "tensor '" + name + "': data_offsets [" + std::to_string(b) + ", " + std::to_string(end) +
                             ") hold " + std::to_string(end < b ? 0 : end - b) + " bytes, its shape and dtype need " +
                             std::to_string(want));
      if (end > data_size)
        return bad(what, "tensor '" + name + "' ends at byte " + std::to_string(end) + " of a " +
                             std::to_string(data_size) + "-byte data area");
      t.offset = static_cast<size_t>(b);
      t.bytes = static_cast<size_t>(want);
      out.tensors.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(what, std::string("malformed header: ") + e.what());
  }
  // Byte ranges: sorted, they must tile [0, data_size) exactly.
  std::sort(out.tensors.begin(), out.tensors.end(), [](const LoadedTensor& a, const LoadedTensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.bytes < b.bytes;
  });
  uint64_t at = 0;
  for (const LoadedTensor& t : out.tensors) {
    if (t.offset != at)
      return bad(what, "tensor '" + t.name + "' starts at byte " + std::to_string(t.offset) + ", expected " +
                           std::to_string(at) + (t.offset < at ? " (overlaps the previous tensor)" : " (a hole)"));
    at += t.bytes;
  }
  if (at != data_size)
    return bad(what, "the tensors cover " + std::to_string(at) + " bytes of a " + std::to_string(data_size) +
                         "-byte data area");
  out.data_start = static_cast<size_t>(8 + n);
  out.file = std::move(file);
  return out;
}

baracuda::Result<SafetensorsFile> load_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return bad(path, "cannot open for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_safetensors(std::move(bytes), path);
}

}  // namespace train_gpt

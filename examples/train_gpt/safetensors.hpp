// safetensors: Hugging Face's checkpoint format, so train_gpt's weights move
// to and from PyTorch (safetensors.torch.load_file / save_file).
//
// A file is: an 8-byte little-endian header length N, N bytes of JSON (padded
// with spaces), then the tensors' raw bytes. The JSON maps each tensor name to
// {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]} (offsets into
// the byte area after the header) and may hold "__metadata__": {string: string}.
// Tensors are row-major and little-endian.
//
// What load() checks (each failure is an InvalidProblem naming the file and
// the problem): the header length fits the file and is at most 100 MB (the
// reference implementation's limit), the JSON parses and is an object, every
// entry has a known dtype, a shape of non-negative extents and offsets with
// end - begin == numel * dtype size, the tensors' byte ranges lie inside the
// data area, do not overlap and cover it without holes (as the reference
// parser requires), names are unique (JSON objects are), metadata values are
// strings. save() writes the tensors in the order given, header padded with
// spaces to a multiple of 8 bytes so every tensor is 8-byte aligned in the file.
//
// dtypes: BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64, F8_E4M3, F8_E5M2
// (baracuda's names for the same types); complex types have no safetensors name.
#pragma once
#include <baracuda/baracuda.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace train_gpt {

// One tensor to save: host bytes, row-major.
struct TensorToSave {
  std::string name;
  baracuda::DType dtype = baracuda::DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // numel * dtype_size bytes
};

struct LoadedTensor {
  std::string name;
  baracuda::DType dtype = baracuda::DType::F32;
  std::vector<int64_t> shape;
  size_t offset = 0;  // into SafetensorsFile::data
  size_t bytes = 0;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<LoadedTensor> tensors;  // in file (offset) order
  std::vector<uint8_t> file;          // the whole file; the data area starts at data_start
  size_t data_start = 0;
  const LoadedTensor* find(const std::string& name) const;  // nullptr when absent
  const void* bytes_of(const LoadedTensor& t) const { return file.data() + data_start + t.offset; }
};

// The safetensors name of a dtype ("F32", ...) or nullptr when it has none.
const char* safetensors_dtype_name(baracuda::DType t);

baracuda::Status save_safetensors(const std::string& path, const std::vector<TensorToSave>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});
baracuda::Result<SafetensorsFile> load_safetensors(const std::string& path);
// The same checks on bytes already in memory (the whole file's contents).
baracuda::Result<SafetensorsFile> parse_safetensors(std::vector<uint8_t> file, const std::string& what);

}  // namespace train_gpt

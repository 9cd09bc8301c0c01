// safetensors read/write: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then raw
// little-endian data. Reading is strict (every inconsistency is a one-line cnn::Error naming the file); writing
// is atomic (temporary file in the same directory, fsync, rename).
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace cnn {

struct SafetensorsData {
  std::map<std::string, Tensor> tensors;  // CPU tensors
  std::map<std::string, std::string> metadata;
};

// Dtype names: F32 F16 BF16 F64 I32 I64 U8 (BOOL reads as u8).
SafetensorsData load_safetensors(const std::string& path);
// Only the __metadata__ of a file (reads the header, not the data); the same checks on what it reads.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);
// Tensors are written in name order; any device and layout (copied to contiguous host memory first).
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Parses an in-memory file image; `name` stands for the file in error messages.
SafetensorsData parse_safetensors(const std::string& bytes, const std::string& name);

const char* safetensors_dtype_name(DType t);

}  // namespace cnn

// Strict safetensors parser and atomic writer.
#include "core/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "core/file_io.h"

namespace cnn {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the format's own limit on the JSON header

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(str_cat("safetensors: ", file, ": ", problem));
}

DType parse_dtype(const std::string& s, const std::string& file, const std::string& name) {
  if (s == "F32") return DType::f32;
  if (s == "F16") return DType::f16;
  if (s == "BF16") return DType::bf16;
  if (s == "F64") return DType::f64;
  if (s == "I32") return DType::i32;
  if (s == "I64") return DType::i64;
  if (s == "U8" || s == "BOOL") return DType::u8;
  fail(file, str_cat("tensor '", name, "': unknown dtype '", s, "' (expected F32, F16, BF16, F64, I32, I64, U8, BOOL)"));
}

// Parses JSON, rejecting duplicate keys in any object (nlohmann would silently keep the last one).
json parse_header_json(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> keys_stack;
  std::string duplicate;
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys_stack.emplace_back();
    if (ev == json::parse_event_t::object_end && !keys_stack.empty()) keys_stack.pop_back();
    if (ev == json::parse_event_t::key && !keys_stack.empty() && parsed.is_string()) {
      const std::string k = parsed.get<std::string>();
      if (!keys_stack.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json j = json::parse(text, cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(file, "header is not valid JSON");
  if (!duplicate.empty()) fail(file, str_cat("duplicate key '", duplicate, "' in the header"));
  if (!j.is_object()) fail(file, "header JSON is not an object");
  return j;
}

int64_t checked_uint(const json& v, const std::string& file, const std::string& what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    fail(file, str_cat(what, ": expected a non-negative integer, got ", v.dump()));
  }
  const uint64_t u = v.get<uint64_t>();
  if (u > uint64_t(std::numeric_limits<int64_t>::max())) fail(file, str_cat(what, ": value ", u, " too large"));
  return int64_t(u);
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  int64_t begin, end;
};

Entry parse_entry(const std::string& name, const json& v, const std::string& file) {
  if (!v.is_object()) fail(file, str_cat("tensor '", name, "': expected an object, got ", v.dump()));
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets") {
      fail(file, str_cat("tensor '", name, "': unexpected key '", it.key(), "'"));
    }
  }
  if (!v.contains("dtype") || !v["dtype"].is_string()) fail(file, str_cat("tensor '", name, "': missing dtype string"));
  if (!v.contains("shape") || !v["shape"].is_array()) fail(file, str_cat("tensor '", name, "': missing shape array"));
  if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2) {
    fail(file, str_cat("tensor '", name, "': data_offsets must be an array [begin, end]"));
  }
  Entry e;
  e.name = name;
  e.dtype = parse_dtype(v["dtype"].get<std::string>(), file, name);
  if (v["shape"].size() > size_t(kMaxDims)) fail(file, str_cat("tensor '", name, "': more than ", kMaxDims, " axes"));
  int64_t numel = 1;
  for (const json& d : v["shape"]) {
    const int64_t ext = checked_uint(d, file, str_cat("tensor '", name, "' shape"));
    if (ext != 0 && numel > std::numeric_limits<int64_t>::max() / ext / 8) {
      fail(file, str_cat("tensor '", name, "': shape ", v["shape"].dump(), " overflows"));
    }
    numel *= ext;
    e.shape.push_back(ext);
  }
  e.begin = checked_uint(v["data_offsets"][0], file, str_cat("tensor '", name, "' data_offsets[0]"));
  e.end = checked_uint(v["data_offsets"][1], file, str_cat("tensor '", name, "' data_offsets[1]"));
  if (e.begin > e.end) fail(file, str_cat("tensor '", name, "': data_offsets [", e.begin, ", ", e.end, "] reversed"));
  const int64_t want = numel * dtype_size(e.dtype);
  if (e.end - e.begin != want) {
    fail(file, str_cat("tensor '", name, "': shape ", shape_str(e.shape), " of ", v["dtype"].get<std::string>(),
                       " needs ", want, " bytes, data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin));
  }
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
  }
  throw Error(str_cat("safetensors: invalid DType value ", int(t)));
}

namespace {

// The file starts with an 8-byte header length n, then n bytes of JSON header: the checks of the size and of n that
// the full parse and the metadata-only read share.
void check_file_size(uint64_t size, const std::string& file) {
  if (size < 8) fail(file, str_cat("file of ", size, " bytes is too short for the 8-byte header length"));
}
void check_header_length(uint64_t n, uint64_t size, const std::string& file) {
  if (n > size - 8) fail(file, str_cat("header length ", n, " reaches beyond the file size ", size));
  if (n > kMaxHeaderBytes) fail(file, str_cat("header length ", n, " exceeds the 100 MiB limit"));
}

std::map<std::string, std::string> parse_metadata(const json& header, const std::string& file) {
  std::map<std::string, std::string> out;
  auto it = header.find("__metadata__");
  if (it == header.end()) return out;
  if (!it->is_object()) fail(file, "__metadata__ must be an object of strings");
  for (auto m = it->begin(); m != it->end(); ++m) {
    if (!m.value().is_string()) fail(file, str_cat("__metadata__ value of '", m.key(), "' is not a string"));
    out[m.key()] = m.value().get<std::string>();
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  require_regular_file(path, "safetensors");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  in.seekg(0);
  check_file_size(size, path);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  check_header_length(n, size, path);
  std::string text(size_t(n), '\0');
  if (!in.read(text.data(), std::streamsize(n))) fail(path, "read error in the header");
  return parse_metadata(parse_header_json(text, path), path);
}

SafetensorsData parse_safetensors(const std::string& bytes, const std::string& file) {
  check_file_size(bytes.size(), file);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  check_header_length(n, bytes.size(), file);
  const json header = parse_header_json(bytes.substr(8, size_t(n)), file);
  const int64_t buffer_bytes = int64_t(bytes.size() - 8 - n);
  const char* buffer = bytes.data() + 8 + n;

  SafetensorsData out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      out.metadata = parse_metadata(header, file);
      continue;
    }
    entries.push_back(parse_entry(it.key(), it.value(), file));
  }
  // The data buffer must be covered exactly: entries sorted by offset, each starting where the previous ended.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  int64_t pos = 0;
  for (const Entry& e : entries) {
    if (e.end > buffer_bytes) {
      fail(file, str_cat("tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end, "] beyond the data buffer of ",
                         buffer_bytes, " bytes"));
    }
    if (e.begin < pos) fail(file, str_cat("tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end,
                                          "] overlap the previous tensor (ending at ", pos, ")"));
    if (e.begin > pos) fail(file, str_cat("bytes [", pos, ", ", e.begin, ") of the data buffer belong to no tensor"));
    pos = e.end;
  }
  if (pos != buffer_bytes) fail(file, str_cat("data buffer has ", buffer_bytes, " bytes but tensors cover ", pos));
  for (const Entry& e : entries) {
    out.tensors[e.name] = Tensor::from_host(buffer + e.begin, e.shape, e.dtype, Device::cpu(), e.name);
  }
  return out;
}

SafetensorsData load_safetensors(const std::string& path) {
  return parse_safetensors(read_regular_text(path, "safetensors"), path);
}

namespace {

void write_all(int fd, const char* p, size_t n, const std::string& tmp) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(str_cat("safetensors: ", tmp, ": write failed (", std::strerror(errno), ")"));
    p += w;
    n -= size_t(w);
  }
}

std::string temp_path_for(const std::string& path) {
  static std::atomic<int> counter{0};
  return str_cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
}

}  // namespace

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::vector<Tensor> host;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    CNN_CHECK(name != "__metadata__", "safetensors: ", path, ": '__metadata__' is reserved, not a tensor name");
    CNN_CHECK(t.defined(), "safetensors: ", path, ": tensor '", name, "' is undefined");
    Tensor h = t.to(Device::cpu()).contiguous();
    header[name] = {{"dtype", safetensors_dtype_name(h.dtype())},
                    {"shape", h.shape()},
                    {"data_offsets", {offset, offset + h.nbytes()}}};
    offset += h.nbytes();
    host.push_back(h);
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data buffer starts 8-byte aligned
  const uint64_t n = text.size();

  const std::string tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(str_cat("safetensors: ", path, ": cannot create ", tmp, " (", std::strerror(errno), ")"));
  try {
    write_all(fd, reinterpret_cast<const char*>(&n), 8, tmp);
    write_all(fd, text.data(), text.size(), tmp);
    for (const Tensor& h : host) {
      if (h.nbytes() > 0) write_all(fd, static_cast<const char*>(h.data_ptr()), size_t(h.nbytes()), tmp);
    }
    if (::fsync(fd) != 0) throw Error(str_cat("safetensors: ", tmp, ": fsync failed (", std::strerror(errno), ")"));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(str_cat("safetensors: ", path, ": rename from ", tmp, " failed (", std::strerror(err), ")"));
  }
}

}  // namespace cnn

// Reading input files safely: only regular files are opened for reading (a FIFO would block the open or the read
// forever, a folder reads as empty, a device never ends), and reads are bounded. Errors are one line naming the
// file and what it is instead: `--model: 'configs' is a folder, not a regular file`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cnn {

// "a folder", "a FIFO", "a character device", ... for the type of `path` (following symlinks); "" for a regular
// file; "missing" when it does not exist.
std::string file_kind(const std::string& path);

// Throws unless `path` is (a symlink to) a regular file. `what` prefixes the message (a flag, "safetensors", ...).
void require_regular_file(const std::string& path, const std::string& what);

// The whole file, refused by type before any blocking read and when larger than max_bytes.
std::vector<uint8_t> read_regular_file(const std::string& path, const std::string& what,
                                       uint64_t max_bytes = UINT64_MAX);
std::string read_regular_text(const std::string& path, const std::string& what, uint64_t max_bytes = UINT64_MAX);

}  // namespace cnn

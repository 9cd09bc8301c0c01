// Storage: one owned allocation (host, pinned host or CUDA device memory) shared by every Tensor view of it.
// CUDA storage is allocated on its device's compute stream through the caching allocator.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/device.h"

namespace cnn {

class Storage {
 public:
  // `label` names the tensor in out-of-memory errors. `pinned` asks for page-locked host memory (cpu only).
  static std::shared_ptr<Storage> allocate(int64_t bytes, Device device, const std::string& label,
                                           bool pinned = false);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }
  const std::string& label() const { return label_; }

 private:
  Storage() = default;
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  Device device_;
  bool pinned_ = false;
  std::string label_;
};

}  // namespace cnn

// Device: where a tensor lives ("cpu" or "cuda:N"), parsing from strings, and CUDA availability checks.
// With CNN_CUDA=OFF every CUDA device is an error "built without CUDA".
#pragma once

#include <string>

namespace cnn {

enum class DeviceType { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // CUDA ordinal; 0 for cpu

  static Device cpu() { return Device{}; }
  static Device cuda(int index = 0) { return Device{DeviceType::cuda, index}; }
  // Accepts "cpu", "cuda" (= cuda:0) and "cuda:N"; anything else throws a one-line cnn::Error.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// Whether this binary was built with the CUDA backend.
bool cuda_built();
// Number of visible CUDA devices; 0 without a driver, without a device or without CUDA support.
int cuda_device_count();
// Throws cnn::Error unless `d` can be used now: "built without CUDA", "no CUDA device is available", or an
// out-of-range ordinal. `what` names the caller in the message.
void require_device(const Device& d, const char* what);

}  // namespace cnn

// Device memory owned by RAII handles, seeded U(-1,1) host data, and the L2-defeating rotation count of the
// benchmark protocol (enough input copies that one pass over them exceeds twice the L2 size).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cnn::bench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  float* f32() const { return static_cast<float*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Element i of stream `seed` is a fixed function of (seed, i): identical for any thread count.
void fill_uniform(float* host, int64_t count, uint64_t seed);
std::vector<float> host_uniform(int64_t count, uint64_t seed);

// Device buffer of `count` floats holding host_uniform(count, seed); `host_copy`, when given, receives the values.
DeviceBuffer device_uniform(int64_t count, uint64_t seed, std::vector<float>* host_copy = nullptr);

void copy_to_host(const DeviceBuffer& src, std::vector<float>& dst, int64_t count);

int l2_cache_bytes();  // of the current device

// Number of copies of an input set of `set_bytes` to cycle through so the copies together exceed 2x L2
// (1 when one set already does).
int rotation_count(size_t set_bytes);

// `count` copies of one tensor with different U(-1,1) contents in one allocation; copy i starts at slice(i),
// 256-byte aligned. host0 holds copy 0's values (the one the accuracy check reads).
struct RotatedTensor {
  DeviceBuffer buf;
  int64_t elems = 0;
  int64_t stride = 0;  // floats between copies
  int count = 0;
  std::vector<float> host0;

  float* slice(int i) const { return buf.f32() + int64_t(i % count) * stride; }
};
RotatedTensor make_rotated(int64_t elems, int count, uint64_t seed);

}  // namespace cnn::bench

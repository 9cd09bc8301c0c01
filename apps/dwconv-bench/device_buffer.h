// Device memory owned by RAII handles, seeded U(-1,1) host data, and the L2-defeating rotation count of the
// benchmark protocol (enough input copies that one pass over them exceeds twice the L2 size).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

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
  __half* f16() const { return static_cast<__half*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Element i of stream `seed` is a fixed function of (seed, i): identical for any thread count.
void fill_uniform(float* host, int64_t count, uint64_t seed);
std::vector<float> host_uniform(int64_t count, uint64_t seed);

// Device buffer of `count` elements of `dtype` (f32 or f16) holding host_uniform(count, seed), rounded to FP16 for
// f16; `host_copy`, when given, receives the (rounded) values as floats.
DeviceBuffer device_uniform(int64_t count, uint64_t seed, std::vector<float>* host_copy = nullptr,
                            DType dtype = DType::f32);
// FP16 copy of host floats (rounded to nearest even) and the rounded values back in `values`.
std::vector<uint16_t> round_to_half(std::vector<float>& values);

void copy_to_host(const DeviceBuffer& src, std::vector<float>& dst, int64_t count);
void copy_half_to_host(const DeviceBuffer& src, std::vector<float>& dst, int64_t count);  // FP16 -> floats

int l2_cache_bytes();  // of the current device

// Number of copies of an input set of `set_bytes` to cycle through so the copies together exceed 2x L2
// (1 when one set already does).
int rotation_count(size_t set_bytes);

// `count` copies of one tensor with different U(-1,1) contents in one allocation; copy i starts at slice(i),
// 256-byte aligned. host0 holds copy 0's values (the one the accuracy check reads; FP16-rounded for f16).
struct RotatedTensor {
  DeviceBuffer buf;
  int64_t elems = 0;
  int64_t stride = 0;  // elements between copies
  int count = 0;
  int elem_bytes = 4;  // 4: f32, 2: f16
  std::vector<float> host0;

  void* raw(int i) const { return static_cast<char*>(buf.get()) + int64_t(i % count) * stride * elem_bytes; }
  float* slice(int i) const { return static_cast<float*>(raw(i)); }
  __half* slice_f16(int i) const { return static_cast<__half*>(raw(i)); }
};
RotatedTensor make_rotated(int64_t elems, int count, uint64_t seed, DType dtype = DType::f32);

}  // namespace cnn::bench

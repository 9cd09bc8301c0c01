// The device buffer of the GPU kernel tests.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace cnn::test {

// Device buffer of `n` elements of T (plus `offset` leading elements, to hand out misaligned pointers).
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n, size_t offset = 0) : n_(n), offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, (n + offset + 1) * sizeof(T)), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(base_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return base_ + offset_; }
  void upload(const void* host) const {
    ASSERT_EQ(cudaMemcpy(get(), host, n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  void poison() const { ASSERT_EQ(cudaMemset(get(), 0xFF, n_ * sizeof(T)), cudaSuccess); }  // NaN in FP16 and FP32
  template <class H>
  std::vector<H> download() const {
    std::vector<H> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  T* base_ = nullptr;
  size_t n_, offset_;
};

}  // namespace cnn::test

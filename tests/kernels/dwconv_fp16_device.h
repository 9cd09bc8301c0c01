// Device-side helpers of the FP16 depthwise GPU tests (dwconv_fp16_cuda_test.cpp, dwconv_fp16_bfc_cuda_test.cpp): a
// device buffer that can hand out misaligned pointers, FP16 results widened for the comparisons, 'same'-padded cases
// and the MARE bound the kernels are held to.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "tests/kernels/dwconv_fp16_test_util.h"

namespace cnn::dwconv::f16test {

// MARE bound on the awkward shapes: FP16 outputs carry a rounding error of at most 2^-11 relative (mean ~2^-13),
// FP32 accumulation adds far less; 2e-3 leaves room while a dropped or doubled tap (error ~1/sqrt(K) relative, >= 1e-2
// for K <= 2601 taps) fails.
constexpr double kMareBound = 2e-3;

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

inline std::vector<double> widen(const std::vector<Half>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = double(float(v[i]));
  return out;
}

// Stride 1, 'same' padding (the extra row / column of an even filter at the bottom / right).
inline Case same(int n, int h, int w, int c, int fh, int fw) {
  return {n, h, w, c, fh, fw, 1, 1, (fh - 1) / 2, fh / 2, (fw - 1) / 2, fw / 2};
}

}  // namespace cnn::dwconv::f16test

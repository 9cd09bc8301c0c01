// RAII guard that makes a CUDA device current for a scope and restores the previous one (CUDA builds only).
#pragma once

#include <cuda_runtime.h>

#include "core/cuda_check.h"

namespace cnn {

class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device) {
    CNN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) CNN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~CudaDeviceGuard() { cudaSetDevice(previous_); }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace cnn

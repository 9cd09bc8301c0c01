// CUDA device discovery (CUDA builds).
#include <cuda_runtime.h>

#include "core/device.h"
#include "core/device_memory.h"

namespace cnn {

bool cuda_built() { return true; }

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver / no device" error so later calls start clean
    return 0;
  }
  return n;
}

uint64_t cuda_memory_bytes(int index) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return uint64_t(prop.totalGlobalMem);
}

}  // namespace cnn

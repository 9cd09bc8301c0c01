#include "kernels/dwconv/cuda/scratch_buffer.h"

#include <cuda_runtime.h>

#include "core/cuda_check.h"

namespace cnn::dwconv {

ScratchBuffer::~ScratchBuffer() {
  if (ptr_ == nullptr) return;
  cudaDeviceSynchronize();  // a destructor cannot report an error; the next CUDA call will
  cudaFree(ptr_);
}

void* ScratchBuffer::get(size_t bytes) {
  if (bytes <= bytes_ && ptr_ != nullptr) return ptr_;
  if (ptr_ != nullptr) {
    CNN_CUDA_CHECK(cudaDeviceSynchronize());
    CNN_CUDA_CHECK(cudaFree(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
  }
  CNN_CUDA_CHECK(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes));  // cudaMalloc: 256-byte aligned
  bytes_ = bytes;
  return ptr_;
}

}  // namespace cnn::dwconv

// Typed CUDA state of a Context (CUDA builds only): streams, library handles bound to the compute stream and the
// workspace buffer. All handles belong to one device; callers on other threads must not share them concurrently.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <mutex>

#include "core/context.h"

namespace cnn {

class CudaContext {
 public:
  explicit CudaContext(int device);
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t copy_stream() const { return copy_; }
  cublasHandle_t cublas();      // created on first use, bound to the compute stream
  cublasLtHandle_t cublaslt();  // created on first use
  cudnnHandle_t cudnn();        // created on first use, bound to the compute stream
  // At least `bytes` of device memory, ordered on the compute stream; valid until the next call that grows it.
  void* workspace(size_t bytes);
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  int device_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::mutex mu_;
};

// Shorthand: the CUDA state of cuda device `d`.
inline CudaContext& cuda_context(const Device& d) { return Context::get(d).cuda(); }

}  // namespace cnn

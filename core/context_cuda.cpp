// CUDA state of a Context: streams, lazily created cuBLAS / cuBLASLt / cuDNN handles, workspace.
#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"

namespace cnn {

CudaContext::CudaContext(int device) : device_(device) {
  CudaDeviceGuard guard(device);
  CNN_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
  CNN_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
}

cublasHandle_t CudaContext::cublas() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cublas_ == nullptr) {
    CudaDeviceGuard guard(device_);
    CNN_CUBLAS_CHECK(cublasCreate(&cublas_));
    CNN_CUBLAS_CHECK(cublasSetStream(cublas_, compute_));
  }
  return cublas_;
}

cublasLtHandle_t CudaContext::cublaslt() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cublaslt_ == nullptr) {
    CudaDeviceGuard guard(device_);
    CNN_CUBLAS_CHECK(cublasLtCreate(&cublaslt_));
  }
  return cublaslt_;
}

cudnnHandle_t CudaContext::cudnn() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cudnn_ == nullptr) {
    CudaDeviceGuard guard(device_);
    CNN_CUDNN_CHECK(cudnnCreate(&cudnn_));
    CNN_CUDNN_CHECK(cudnnSetStream(cudnn_, compute_));
  }
  return cudnn_;
}

void* CudaContext::workspace(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > workspace_bytes_) {
    // The old buffer goes back to the compute stream's free list: stream order keeps queued users safe.
    detail::cuda_storage_free(device_, workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    workspace_ = detail::cuda_storage_alloc(device_, bytes, compute_, "context workspace");
    workspace_bytes_ = bytes;
  }
  return workspace_;
}

namespace detail {
CudaContext* make_cuda_context(int device) { return new CudaContext(device); }
void* cuda_context_stream(CudaContext* c) { return c->compute_stream(); }
void cuda_context_synchronize(CudaContext* c) {
  CudaDeviceGuard guard(c->device());
  CNN_CUDA_CHECK(cudaStreamSynchronize(c->compute_stream()));
  CNN_CUDA_CHECK(cudaStreamSynchronize(c->copy_stream()));
}
}  // namespace detail

}  // namespace cnn

// Checks for CUDA runtime, cuBLAS and cuDNN calls: on failure they throw cnn::Error naming the call text, the
// library's error string, file, line and current device. Include only from CUDA-enabled translation units.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/error.h"

namespace cnn::detail {

inline int current_device_or_minus_one() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
  return dev;
}

[[noreturn]] inline void throw_library_failure(const char* lib, const char* call, const char* err, const char* file,
                                               int line) {
  throw Error(str_cat(lib, " error: ", err, " in '", call, "' at ", file, ":", line, " (device ",
                      current_device_or_minus_one(), ")"));
}

}  // namespace cnn::detail

#define CNN_CUDA_CHECK(expr)                                                                                \
  do {                                                                                                      \
    cudaError_t cnn_err_ = (expr);                                                                          \
    if (cnn_err_ != cudaSuccess)                                                                            \
      ::cnn::detail::throw_library_failure("CUDA", #expr, cudaGetErrorString(cnn_err_), __FILE__, __LINE__); \
  } while (0)

#define CNN_CUBLAS_CHECK(expr)                                                                                  \
  do {                                                                                                          \
    cublasStatus_t cnn_st_ = (expr);                                                                            \
    if (cnn_st_ != CUBLAS_STATUS_SUCCESS)                                                                       \
      ::cnn::detail::throw_library_failure("cuBLAS", #expr, cublasGetStatusString(cnn_st_), __FILE__, __LINE__); \
  } while (0)

#define CNN_CUDNN_CHECK(expr)                                                                                 \
  do {                                                                                                        \
    cudnnStatus_t cnn_st_ = (expr);                                                                           \
    if (cnn_st_ != CUDNN_STATUS_SUCCESS)                                                                      \
      ::cnn::detail::throw_library_failure("cuDNN", #expr, cudnnGetErrorString(cnn_st_), __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: catches bad launch configurations at the launch site, naming the op.
#define CNN_CHECK_LAUNCH(op)                                                                                   \
  do {                                                                                                         \
    cudaError_t cnn_err_ = cudaGetLastError();                                                                 \
    if (cnn_err_ != cudaSuccess)                                                                               \
      ::cnn::detail::throw_library_failure("CUDA launch", op, cudaGetErrorString(cnn_err_), __FILE__, __LINE__); \
  } while (0)

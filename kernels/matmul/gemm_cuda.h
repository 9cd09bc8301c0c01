// CUDA GEMM with the row-major contract of gemm.h, through cublasGemmEx: T = float (CUBLAS_COMPUTE_32F, no TF32)
// or __half (FP16 storage, FP32 accumulation). The handle must be bound to the caller's stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "kernels/matmul/gemm.h"

namespace cnn::kernels {

template <class T>
void gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle);

}  // namespace cnn::kernels

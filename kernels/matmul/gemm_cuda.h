// CUDA GEMM with the row-major contract of gemm.h, through cublasGemmEx: T = float (CUBLAS_COMPUTE_32F, no TF32)
// or __half (FP16 storage, FP32 accumulation). The handle must be bound to the caller's stream. Large FP16 GEMMs
// whose rows are not 16-byte aligned run on zero-padded copies in `scratch` (gemm_cuda.cpp says why); without
// scratch they run as they are.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <functional>

#include "kernels/matmul/gemm.h"

namespace cnn::kernels {

// Device memory of at least `bytes`, 16-byte aligned, usable in the handle's stream order (e.g. a context workspace).
using GemmScratch = std::function<void*(size_t bytes)>;

template <class T>
void gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle,
               const GemmScratch& scratch = nullptr);

}  // namespace cnn::kernels

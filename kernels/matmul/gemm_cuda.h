// CUDA GEMM with the row-major contract of gemm.h: T = float (FP32 compute, no TF32) or __half (FP16 storage, FP32
// accumulation), on cuBLAS, or on cuBLASLt where a bias is fused into the GEMM's epilogue. Large FP16 GEMMs whose rows
// are not 16-byte aligned run on zero-padded copies in the scratch (gemm_cuda.cpp says why).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <functional>

#include "kernels/matmul/gemm.h"

namespace cnn::kernels {

// Device memory of at least `bytes`, 16-byte aligned, usable in the stream's order (e.g. a context workspace).
using GemmScratch = std::function<void*(size_t bytes)>;

// Where a GEMM runs: the cuBLAS handle (bound to `stream`), the cuBLASLt handle (null: no fused bias) and scratch
// (null: no padded copies, no cuBLASLt workspace).
struct GemmCuda {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  GemmScratch scratch;
};

// Whether an FP16 GEMM of these extents runs on padded copies where a row length is not a multiple of 8 elements:
// large enough that the copies cost less than cuBLAS's kernels for unaligned rows lose.
bool gemm_f16_pads_unaligned(int64_t m, int64_t n, int64_t k);
constexpr int64_t kGemmF16RowAlign = 8;  // FP16 elements per 16 bytes

// C = alpha op(A) op(B) + beta C, and with `bias` (N values, 16-byte aligned) C += bias on every row through
// cuBLASLt's bias epilogue. Returns whether the bias was added: false (no cuBLASLt handle, or no algorithm for the
// shape) leaves that add to the caller.
template <class T>
bool gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, const GemmCuda& env, const T* bias = nullptr);

}  // namespace cnn::kernels

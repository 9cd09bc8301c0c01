// CUDA sum reductions (same math as reduce.h), T = float or __half, FP32 accumulation, deterministic two-pass
// (block partials in `workspace`, then one ordered combine). Workspace bytes from the *_workspace_bytes functions.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cnn::kernels {

size_t sum_all_workspace_bytes(int64_t n);
size_t sum_rows_workspace_bytes(int64_t rows, int64_t cols);

template <class T>
void sum_all_cuda(const T* x, T* y, int64_t n, float alpha, float* workspace, cudaStream_t stream);
template <class T>
void sum_rows_cuda(const T* x, T* y, int64_t rows, int64_t cols, float alpha, float* workspace, cudaStream_t stream);

}  // namespace cnn::kernels

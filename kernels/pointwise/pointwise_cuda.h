// CUDA twins of pointwise.h: T = float or __half, FP32 math, one rounding to T per output. Per-sample scales are
// FP32. Device pointers, work enqueued on `stream`, nothing allocated.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cnn::kernels {

template <class T>
void gelu_forward_cuda(const T* x, T* y, int64_t n, cudaStream_t stream);
template <class T>
void gelu_backward_cuda(const T* x, const T* dy, T* dx, int64_t n, cudaStream_t stream);
template <class T>
void sample_scale_cuda(const T* x, const float* s, T* y, int64_t samples, int64_t per_sample, cudaStream_t stream);
template <class T>
void gap_forward_cuda(const T* x, T* y, int64_t samples, int64_t pixels, int64_t c, cudaStream_t stream);
template <class T>
void gap_backward_cuda(const T* dy, T* dx, int64_t samples, int64_t pixels, int64_t c, cudaStream_t stream);
void drop_scales_cuda(const float* u, float* s, int64_t n, float keep, cudaStream_t stream);

}  // namespace cnn::kernels

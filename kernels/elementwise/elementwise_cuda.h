// CUDA elementwise kernels: same math as elementwise.h; T is float or __half (FP32 arithmetic, one rounding to T).
// Device pointers, work enqueued on `stream`, nothing allocated. Outputs may alias inputs.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/elementwise/elementwise.h"

namespace cnn::kernels {

template <class T>
void binary_forward_cuda(const T* a, const T* b, T* y, const BinaryParams& p, cudaStream_t stream);
template <class T>
void scale_cuda(const T* x, T* y, int64_t n, float alpha, cudaStream_t stream);
template <class T>
void broadcast_cuda(const T* v, T* y, int64_t n, int64_t nv, float alpha, cudaStream_t stream);
template <class T>
void relu_forward_cuda(const T* x, T* y, int64_t n, cudaStream_t stream);
template <class T>
void relu_backward_cuda(const T* y, const T* dy, T* dx, int64_t n, cudaStream_t stream);

}  // namespace cnn::kernels

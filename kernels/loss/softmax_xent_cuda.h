// CUDA softmax cross-entropy (math of softmax_xent.h): T = float or __half logits, FP32 math, lse and loss FP32.
// Labels stay on the device and are not checked against K on the host: a row with an out-of-range label gets a NaN
// loss and NaN gradients (visible in the loss) instead of reading out of bounds. dloss is a device pointer.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/loss/softmax_xent.h"

namespace cnn::kernels {

size_t softmax_xent_workspace_bytes(int64_t batch);

template <class T>
void softmax_xent_forward_cuda(const T* logits, const int64_t* labels, float* lse, float* loss, const XentParams& p,
                               float* workspace, cudaStream_t stream);
template <class T>
void softmax_xent_backward_cuda(const T* logits, const int64_t* labels, const float* lse, const float* dloss,
                                T* dlogits, const XentParams& p, cudaStream_t stream);

}  // namespace cnn::kernels

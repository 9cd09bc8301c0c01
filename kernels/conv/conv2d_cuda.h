// Dense NHWC convolution on the GPU through cuDNN's legacy API (same math and layouts as conv2d.h). f32 runs
// FP32 FMA math (no TF32); f16 runs tensor-core math with FP32 accumulation. The algorithm of each (op, shape,
// dtype, device) is chosen once from cuDNN's heuristic ranking and cached (mutex-guarded); its workspace comes from
// the caller's `workspace(bytes)` callback. Work is enqueued on the handle's stream.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <functional>
#include <string>

#include "core/dtype.h"
#include "kernels/conv/conv2d.h"

namespace cnn::kernels {

enum class ConvOp { forward, backward_data, backward_filter };

using WorkspaceFn = std::function<void*(size_t bytes)>;

// dtype f32 or f16; pointers are device pointers of that dtype; outputs are overwritten.
void conv2d_forward_cuda(const void* x, const void* w, void* y, const Conv2dParams& p, DType dtype,
                         cudnnHandle_t handle, const WorkspaceFn& workspace);
void conv2d_backward_data_cuda(const void* dy, const void* w, void* dx, const Conv2dParams& p, DType dtype,
                               cudnnHandle_t handle, const WorkspaceFn& workspace);
void conv2d_backward_filter_cuda(const void* x, const void* dy, void* dw, const Conv2dParams& p, DType dtype,
                                 cudnnHandle_t handle, const WorkspaceFn& workspace);

// "fwd algo=1 ws=0 B" for logs: the cached choice for (op, shape, dtype) on the handle's device.
std::string conv2d_algo_name_cuda(ConvOp op, const Conv2dParams& p, DType dtype, cudnnHandle_t handle);

}  // namespace cnn::kernels

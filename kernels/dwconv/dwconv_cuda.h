// CUDA entry points of the Flash-DWC kernels (FP32 CUDA-core GEMV family). Same math and shapes as dwconv.h;
// all pointers are device pointers, work is enqueued on `stream`, nothing is allocated. Inputs need 16-byte
// alignment for the vectorized paths (checked; other alignments take the masked path).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

enum class DwconvOp { forward, backward_data, backward_filter };

void dwconv_forward_cuda(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p,
                         cudaStream_t stream);
void dwconv_backward_data_cuda(const float* dy, const float* w, float* dx, const DwconvParams& p, cudaStream_t stream);
// dw is overwritten (zeroed on `stream`, then sub-problems merge into it with FP32 atomics).
void dwconv_backward_filter_cuda(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                 cudaStream_t stream);

// Names the kernel path and its parameters the dispatcher picks for (op, shape), e.g.
// "fwd gemv FW=7 TM=8 tile=4x32" or "bfc mega beta=8 TM=9+2 Z=264"; used by --verbose and the benchmark table.
std::string dwconv_path_name(DwconvOp op, const DwconvParams& p);

}  // namespace cnn::dwconv

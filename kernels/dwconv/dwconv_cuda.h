// CUDA entry points of the Flash-DWC kernels: FP32 (CUDA-core GEMV family) and FP16 (tensor-core Flash-DWC-T and
// CUDA-core FP16 kernels, FP32 accumulation). Same math and shapes as dwconv.h; all pointers are device pointers,
// work is enqueued on `stream`. Inputs need 16-byte alignment for the vectorized paths (checked; other alignments
// take the masked path). Channel counts the vector kernels cannot take (C % 8 FP16, C % 4 FP32) run them on copies
// padded with zero channels, in device memory the caller's `scratch` provides; nothing else is allocated.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {

enum class DwconvOp { forward, backward_data, backward_filter };

// Device scratch for the channel-padded plans: returns at least `bytes` bytes of device memory, 16-byte aligned,
// that the op may use in `stream` order until it returns (e.g. CudaContext::workspace). Called only by ops that pad.
using DwconvScratch = std::function<void*(size_t bytes)>;

void dwconv_forward_cuda(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p,
                         cudaStream_t stream, const DwconvScratch& scratch);
void dwconv_backward_data_cuda(const float* dy, const float* w, float* dx, const DwconvParams& p, cudaStream_t stream,
                               const DwconvScratch& scratch);
// dw is overwritten (zeroed on `stream`, then sub-problems merge into it with FP32 atomics).
void dwconv_backward_filter_cuda(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                 cudaStream_t stream, const DwconvScratch& scratch);

// FP16 data, FP32 accumulation (products of FP16 values summed in FP32), FP16 outputs rounded once at the end.
void dwconv_forward_cuda(const __half* x, const __half* w, const __half* bias, __half* y, const DwconvParams& p,
                         cudaStream_t stream, const DwconvScratch& scratch);
void dwconv_backward_data_cuda(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                               cudaStream_t stream, const DwconvScratch& scratch);
// FP16 x and dy, FP32 dw (for FP32 master weights): dw is zeroed on `stream`, then the accumulation chunks merge
// into it with FP32 atomics. `accum` selects FP32 or hybrid FP16/FP32 accumulation (dwconv.h, BfcAccum).
void dwconv_backward_filter_cuda(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 cudaStream_t stream, const DwconvScratch& scratch);

// Backward-data and backward-filter of one convolution in one call (dx and dw as the two entries above write them):
// where both plans run on channel-padded copies of the same width, dY is padded once for both.
void dwconv_backward_cuda(const float* x, const float* dy, const float* w, float* dx, float* dw, const DwconvParams& p,
                          cudaStream_t stream, const DwconvScratch& scratch);
void dwconv_backward_cuda(const __half* x, const __half* dy, const __half* w, __half* dx, float* dw,
                          const DwconvParams& p, BfcAccum accum, cudaStream_t stream, const DwconvScratch& scratch);

// Names the kernel path and its parameters the dispatcher picks for (op, shape), e.g.
// "fwd gemv FW=7 TM=8 tile=4x32" or "bfc mega beta=8 TM=9+2 Z=264"; used by --verbose and the benchmark table.
std::string dwconv_path_name(DwconvOp op, const DwconvParams& p);
// Same for a data type (DType::f32 or DType::f16) and, for FP16 backward-filter, the accumulation mode, e.g.
// "fwd f16 tc T4 ..." or "bfc f16 ha TM=9+2 ...". FP32 gives the same string as the overload above.
std::string dwconv_path_name(DwconvOp op, const DwconvParams& p, DType dtype, BfcAccum accum = BfcAccum::fp32);

}  // namespace cnn::dwconv

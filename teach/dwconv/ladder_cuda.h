// The GPU rungs of the depthwise-forward teaching ladder (docs/tutorial/dwconv.md). Same math, shapes and layouts as
// kernels/dwconv/dwconv.h (X (N, IH, IW, C), W (FH, FW, C), Y (N, OH, OW, C), no bias, Y overwritten); device
// pointers, work enqueued on `stream`. Rungs 1-5 are FP32 with FP32 accumulation, rung 6 FP16 with FP32 accumulation.
// Each entry throws cnn::Error naming the rung and the reason when the shape is outside what it handles
// (unsupported_reason says it without running).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::teach {

using dwconv::DwconvParams;

// 1: one thread per output element, threads counted as an NCHW loop nest would (width fastest): uncoalesced.
void forward_naive_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream);
// 2: one thread per (position, 4 channels), channels fastest: coalesced 128-bit loads. Needs C % 4 == 0.
void forward_channel_vectors_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream);
// 3: the block's input rows staged in shared memory, each filter tap held in registers for 8 outputs.
void forward_smem_tile_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream);
// 4: Flash-DWC's GEMV: 8 outputs of a row per thread, the input window sliding through registers.
void forward_gemv_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream);
// 5: the GEMV with a 16-output x 4-channel register block per thread and a 32-column window ring.
void forward_register_block_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream);
// 6: GEMV-to-GEMM on tensor cores: 16 row-GEMVs of one channel as one banded m16n8k16 FP16 MMA (FP32 accumulate).
void forward_tensor_core_cuda(const __half* x, const __half* w, __half* y, const DwconvParams& p, cudaStream_t stream);

// Why a rung cannot run `p` ("" when it can): stride, channel multiple, filter width, alignment.
std::string forward_naive_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);
std::string forward_channel_vectors_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);
std::string forward_smem_tile_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);
std::string forward_gemv_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);
std::string forward_register_block_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);
std::string forward_tensor_core_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y);

// One rung as the benchmark and the tests see it: FP32 rungs set run_f32, the FP16 rung run_f16.
struct GpuRung {
  int number = 0;
  const char* name = "";  // short name used in tables and CSV, e.g. "gemv"
  const char* idea = "";  // one line
  DType dtype = DType::f32;
  std::string (*unsupported)(const DwconvParams&, const void*, const void*, const void*) = nullptr;
  void (*run_f32)(const float*, const float*, float*, const DwconvParams&, cudaStream_t) = nullptr;
  void (*run_f16)(const __half*, const __half*, __half*, const DwconvParams&, cudaStream_t) = nullptr;
};
const std::vector<GpuRung>& gpu_rungs();  // rungs 1..6 in order

// Runs a rung on contiguous CUDA tensors x (N, IH, IW, C) and w (FH, FW, C) of the rung's dtype and returns
// y (N, OH, OW, C); throws naming the rung when a tensor's shape, dtype or device does not match `p`.
Tensor run_rung(const GpuRung& rung, const Tensor& x, const Tensor& w, const DwconvParams& p);

}  // namespace cnn::teach

// Rung 5, register blocking along the row: rung 4's kernel with a 16-output register block per thread (TM = 16).
// Each 128-bit input load and each tap load now feeds 64 FMAs instead of 32, which moves the kernel from the
// L1/shared-memory bandwidth limit to the FMA limit on the H200 (its FP32 rate per SM is twice the A100's, its L1
// bandwidth is not); the price is registers: 2 x 16 float4 (accumulators and window) per thread, fewer warps per SM.
#include "teach/dwconv/gemv_row.cuh"

namespace cnn::teach {

std::string forward_register_block_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  return gemv_unsupported(p, x, w, y);
}

void forward_register_block_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  launch_gemv_row<16>("teach forward_register_block", x, w, y, p, stream);
}

}  // namespace cnn::teach

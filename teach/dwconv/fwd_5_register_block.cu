// Rung 5, register blocking along the row: rung 4's kernel with a block of 16 outputs x 4 channels per thread instead
// of 8 x 4, and a window ring of 32 columns (2 * TM) instead of 16. Each input element loaded now feeds 16 outputs
// instead of 8: per FMA half the bytes through L1 and shared memory, and TM + FW - 1 loads per TM outputs per filter
// row (2.9 instead of 4.75 per output at 31x31). The ring gives each load TM taps (16 x 64 FMAs) to arrive before its
// first use, where rung 4's window of exactly TM columns uses it one tap later. The price is registers: 64
// accumulators and a 128-float window take the 255 allowed, so an SM holds 8 warps (rung 4: 16), which pays where the
// filter is wide enough to reuse each load many times.
#include "teach/dwconv/gemv_row.cuh"

namespace cnn::teach {

std::string forward_register_block_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  return gemv_unsupported(p, x, w, y);
}

void forward_register_block_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  launch_gemv_row<16, float4, 0, 2>("teach forward_register_block", x, w, y, p, stream);
}

}  // namespace cnn::teach

// Rung 5, register blocking along the row: rung 4's kernel with a block of 16 outputs x 2 channels per thread
// instead of 8 x 4. The data registers stay those of rung 4 (16 float2 accumulators and a 16-entry float2 window =
// 32 + 32 floats) and the kernel is held to 128 registers (4 blocks, 16 warps per SM), but each input element is now
// loaded for 16 outputs instead of 8: per FMA half the bytes through L1 and shared memory (0.5 instead of 1), and
// TM + FW - 1 loads per TM outputs per filter row (2.9 instead of 4.75 per output at 31x31). A block of 16 x 4
// would do the same at twice the data registers and half the warps per SM.
#include "teach/dwconv/gemv_row.cuh"

namespace cnn::teach {

std::string forward_register_block_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  return gemv_unsupported(p, x, w, y);
}

void forward_register_block_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  launch_gemv_row<16, float2, 4>("teach forward_register_block", x, w, y, p, stream);
}

}  // namespace cnn::teach

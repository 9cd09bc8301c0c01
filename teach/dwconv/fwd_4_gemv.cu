// Rung 4, the GEMV formulation: each thread computes 8 consecutive outputs of one row for 4 channels as a
// matrix-vector product whose matrix is a window sliding over the input row, the window kept in registers
// (gemv_row.cuh). Per tap: one input load and one tap load for 32 FMAs; each input is loaded once per filter row.
// TM = 8 is the value of the Flash-DWC paper (tuned on Ampere/Ada).
#include "teach/dwconv/gemv_row.cuh"

namespace cnn::teach {

std::string forward_gemv_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  return gemv_unsupported(p, x, w, y);
}

void forward_gemv_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  launch_gemv_row<8>("teach forward_gemv", x, w, y, p, stream);
}

}  // namespace cnn::teach

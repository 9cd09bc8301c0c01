// Rung 1, naive: one thread per output element, the threads numbered the way an NCHW loop nest counts
// (n, c, oh, ow with ow fastest). In NHWC memory two neighbouring threads (ow, ow+1) read addresses C floats apart,
// so every 4-byte load of a warp touches its own 32-byte sector: 1/8 of each sector fetched is used.
// Any stride, padding and C. Reference: dwconv_forward_reference (kernels/dwconv/dwconv.h).
#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {
namespace {

__global__ void forward_naive_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                     DwconvParams p, int out_h, int out_w) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(p.n) * p.c * out_h * out_w) return;
  const int ow = int(i % out_w);
  const int oh = int(i / out_w % out_h);
  const int c = int(i / (int64_t(out_w) * out_h) % p.c);
  const int n = int(i / (int64_t(out_w) * out_h * p.c));
  float acc = 0.f;
  for (int r = 0; r < p.fh; ++r) {
    const int ih = oh * p.stride_h + r - p.pad_top;
    if (ih < 0 || ih >= p.ih) continue;
    for (int s = 0; s < p.fw; ++s) {
      const int iw = ow * p.stride_w + s - p.pad_left;
      if (iw < 0 || iw >= p.iw) continue;
      acc += x[((int64_t(n) * p.ih + ih) * p.iw + iw) * p.c + c] * w[(int64_t(r) * p.fw + s) * p.c + c];
    }
  }
  y[((int64_t(n) * out_h + oh) * out_w + ow) * p.c + c] = acc;
}

}  // namespace

std::string forward_naive_unsupported(const DwconvParams&, const void*, const void*, const void*) { return ""; }

void forward_naive_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  check_rung("teach forward_naive", p, x, w, y, forward_naive_unsupported(p, x, w, y));
  constexpr int kThreads = 256;
  const int64_t blocks = (p.y_elems() + kThreads - 1) / kThreads;
  forward_naive_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(x, w, y, p, p.oh(), p.ow());
  CNN_CHECK_LAUNCH("teach forward_naive_kernel");
}

}  // namespace cnn::teach

// Rung 2, coalesced NHWC with channel vectors: one thread per (output position, 4 channels), the channel group
// fastest in the thread numbering. A warp's 32 float4 loads of one tap are 512 contiguous bytes (for C >= 128): every
// sector fetched is used, one 128-bit instruction moves what took four. Inputs and taps come through L1 (FH*FW of
// each per output). Any stride and padding; C % 4 == 0 and 16-byte aligned pointers.
#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {
namespace {

__global__ void forward_channel_vectors_kernel(const float4* __restrict__ x, const float4* __restrict__ w,
                                               float4* __restrict__ y, DwconvParams p, int out_h, int out_w) {
  const int groups = p.c / 4;  // float4 channel groups per position
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(p.n) * out_h * out_w * groups) return;
  const int g = int(i % groups);
  const int64_t pos = i / groups;
  const int ow = int(pos % out_w), oh = int(pos / out_w % out_h), n = int(pos / (int64_t(out_w) * out_h));
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int r = 0; r < p.fh; ++r) {
    const int ih = oh * p.stride_h + r - p.pad_top;
    if (ih < 0 || ih >= p.ih) continue;
    const float4* x_row = x + (int64_t(n) * p.ih + ih) * p.iw * groups + g;
    for (int s = 0; s < p.fw; ++s) {
      const int iw = ow * p.stride_w + s - p.pad_left;
      if (iw < 0 || iw >= p.iw) continue;
      fma4(acc, __ldg(x_row + int64_t(iw) * groups), __ldg(w + (r * p.fw + s) * groups + g));
    }
  }
  y[i] = acc;  // i is already the NHWC index of (n, oh, ow, 4g)
}

}  // namespace

std::string forward_channel_vectors_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  return need_vectors(p, 4, x, w, y);
}

void forward_channel_vectors_cuda(const float* x, const float* w, float* y, const DwconvParams& p,
                                  cudaStream_t stream) {
  check_rung("teach forward_channel_vectors", p, x, w, y, forward_channel_vectors_unsupported(p, x, w, y));
  constexpr int kThreads = 256;
  const int64_t blocks = (p.y_elems() / 4 + kThreads - 1) / kThreads;
  forward_channel_vectors_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(w), reinterpret_cast<float4*>(y), p, p.oh(),
      p.ow());
  CNN_CHECK_LAUNCH("teach forward_channel_vectors_kernel");
}

}  // namespace cnn::teach

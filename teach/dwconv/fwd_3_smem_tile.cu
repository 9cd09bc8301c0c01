// Rung 3, shared-memory input tile, filter tap in registers: a block computes an 8 x 32 tile of outputs for 32
// channels. For each filter row it stages the 8 input rows that row needs (32 + FW - 1 columns, zero-filled past
// the image) into shared memory once, with coalesced 128-bit loads; then each thread (one column, 4 channels) holds
// one filter tap in registers and applies it to its 8 outputs down the column: 8 shared loads + 1 tap load per
// 32 FMAs instead of rung 2's 16 + 16. Stride 1, any padding; C % 4 == 0 and 16-byte aligned pointers.
#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {
namespace {

constexpr int kTileH = 8, kTileW = 32, kQuads = 8;  // 8 float4 channel groups = 32 channels per block
constexpr int kThreads = kTileW * kQuads;           // thread = (column, channel group)

__global__ void __launch_bounds__(kThreads)
    forward_smem_tile_kernel(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y,
                             DwconvParams p, int out_h, int out_w, int tiles_w) {
  extern __shared__ float4 tile[];  // [kTileH][kTileW + FW - 1][kQuads]
  const int groups = p.c / 4, span = kTileW + p.fw - 1;
  const int q = threadIdx.x % kQuads, col = threadIdx.x / kQuads;
  const int g = blockIdx.y * kQuads + q;  // this thread's channel group
  const int tiles_h = (out_h + kTileH - 1) / kTileH;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh0 = blockIdx.x / tiles_w % tiles_h * kTileH, ow0 = blockIdx.x % tiles_w * kTileW;
  float4 acc[kTileH] = {};
  for (int r = 0; r < p.fh; ++r) {
    __syncthreads();  // the previous row's tile is no longer read
    for (int e = threadIdx.x; e < kTileH * span * kQuads; e += kThreads) {
      const int eq = e % kQuads, u = e / kQuads % span, t = e / (kQuads * span);
      const int ih = oh0 + t + r - p.pad_top, iw = ow0 + u - p.pad_left, eg = blockIdx.y * kQuads + eq;
      const bool ok = ih >= 0 && ih < p.ih && iw >= 0 && iw < p.iw && eg < groups;
      tile[e] = load4_or_zero(x, ((int64_t(n) * p.ih + ih) * p.iw + iw) * groups + eg, ok);
    }
    __syncthreads();
    for (int s = 0; s < p.fw; ++s) {
      const float4 tap = load4_or_zero(w, (r * p.fw + s) * groups + g, g < groups);  // reused for 8 outputs
#pragma unroll
      for (int t = 0; t < kTileH; ++t) fma4(acc[t], tile[(t * span + col + s) * kQuads + q], tap);
    }
  }
  if (g >= groups || ow0 + col >= out_w) return;
#pragma unroll
  for (int t = 0; t < kTileH; ++t)
    if (oh0 + t < out_h) y[((int64_t(n) * out_h + oh0 + t) * out_w + ow0 + col) * groups + g] = acc[t];
}

size_t smem_bytes(const DwconvParams& p) { return size_t(kTileH) * (kTileW + p.fw - 1) * kQuads * sizeof(float4); }

}  // namespace

std::string forward_smem_tile_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  std::string why = need_stride1(p);
  if (why.empty()) why = need_vectors(p, 4, x, w, y);
  if (why.empty() && smem_bytes(p) > 200 * 1024) why = str_cat("filter width ", p.fw, " needs a tile over 200 KiB");
  return why;
}

void forward_smem_tile_cuda(const float* x, const float* w, float* y, const DwconvParams& p, cudaStream_t stream) {
  check_rung("teach forward_smem_tile", p, x, w, y, forward_smem_tile_unsupported(p, x, w, y));
  const int tiles_w = ceil_div(p.ow(), kTileW);
  const dim3 grid(unsigned(p.n * ceil_div(p.oh(), kTileH) * tiles_w), unsigned(ceil_div(p.c / 4, kQuads)));
  const size_t smem = smem_bytes(p);
  CNN_CUDA_CHECK(
      cudaFuncSetAttribute(forward_smem_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  forward_smem_tile_kernel<<<grid, kThreads, smem, stream>>>(reinterpret_cast<const float4*>(x),
                                                             reinterpret_cast<const float4*>(w),
                                                             reinterpret_cast<float4*>(y), p, p.oh(), p.ow(), tiles_w);
  CNN_CHECK_LAUNCH("teach forward_smem_tile_kernel");
}

}  // namespace cnn::teach

// Generic FP32 depthwise backward-filter kernel, NHWC: dW[i,j,c] = sum_{n,oh,ow} X[n, oh*sH+i-pT, ow*sW+j-pL, c]
// * dY[n,oh,ow,c]. One block per (tap, 32-channel slice, chunk of N*OH*OW); no reuse, any shape. Oracle:
// dwconv_backward_filter_reference.
#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_bfc_generic.cuh"

namespace cnn::dwconv {

namespace {

constexpr int kGenLanes = 32;  // channels per block (x), coalesced 128-byte rows
constexpr int kGenRows = 8;    // positions handled in parallel per block (y)

struct GenericArgs {
  const float* x;
  const float* dy;
  float* dw;
  int ih, iw, c, oh, ow, fw;
  int sh, sw, pt, pl;
  int64_t positions;  // N*OH*OW
  int z;
};

__global__ void __launch_bounds__(kGenLanes* kGenRows) bfc_generic_kernel(const GenericArgs a) {
  __shared__ float part[kGenRows][kGenLanes];
  const int i = blockIdx.x / a.fw, j = blockIdx.x % a.fw;
  const int c = blockIdx.y * kGenLanes + threadIdx.x;
  const int64_t begin = a.positions * blockIdx.z / a.z, end = a.positions * (blockIdx.z + 1) / a.z;
  float acc = 0.f;
  if (c < a.c) {
    for (int64_t pos = begin + threadIdx.y; pos < end; pos += kGenRows) {
      const int64_t img = pos / (int64_t(a.oh) * a.ow);
      const int rem = int(pos - img * a.oh * a.ow);
      const int oh = rem / a.ow, ow = rem % a.ow;
      const int ih = oh * a.sh + i - a.pt, iw = ow * a.sw + j - a.pl;
      if (ih < 0 || ih >= a.ih || iw < 0 || iw >= a.iw) continue;
      const float xv = a.x[((img * a.ih + ih) * a.iw + iw) * a.c + c];
      acc = fmaf(xv, a.dy[pos * a.c + c], acc);
    }
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < a.c) {
    float sum = 0.f;
#pragma unroll
    for (int r = 0; r < kGenRows; ++r) sum += part[r][threadIdx.x];
    atomicAdd(a.dw + (int64_t(i) * a.fw + j) * a.c + c, sum);
  }
}

}  // namespace

int bfc_generic_blocks_per_sm() {
  int blocks = 0;
  CNN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, bfc_generic_kernel, kGenLanes * kGenRows, 0));
  return blocks;
}

void launch_bfc_generic(const float* x, const float* dy, float* dw, const DwconvParams& p, int z, cudaStream_t stream) {
  CNN_CHECK(z >= 1 && z <= 65535, "bfc generic: expected 1 <= Z <= 65535, got ", z, " for ", p.str());
  const int slices = (p.c + kGenLanes - 1) / kGenLanes;
  CNN_CHECK(slices <= 65535, "bfc generic: expected C <= ", 65535 * kGenLanes, ", got ", p.str());
  const GenericArgs a{x,      dy,   dw,         p.ih,       p.iw,      p.c,        p.oh(),
                      p.ow(), p.fw, p.stride_h, p.stride_w, p.pad_top, p.pad_left, int64_t(p.n) * p.oh() * p.ow(),
                      z};
  const dim3 grid(unsigned(p.fh * p.fw), unsigned(slices), unsigned(z));
  bfc_generic_kernel<<<grid, dim3(kGenLanes, kGenRows), 0, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_generic_kernel");
}

}  // namespace cnn::dwconv

// Rung 6, GEMV-to-GEMM on tensor cores (Flash-DWC-T's idea), FP16 data, FP32 accumulation. Take 16 row-GEMVs of one
// channel (the 16 rows of a 16 x 8 output tile) and one 9-tap fragment of a filter row. Stack their 16-input windows
// as the rows of A (16 x 16) and put the fragment on the band of B (16 x 8, B[k][n] = f[k - n] for 0 <= k - n < 9):
// then C = A * B holds 8 outputs of all 16 GEMVs, one mma.sync.m16n8k16. A filter row of width FW takes
// ceil(FW / 9) fragments; 9 of every 16 taps the MMA multiplies are useful. The block stages its input tile once, as
// per-channel planes (so a pair of neighbouring columns is one 32-bit word) plus a copy shifted by one column (so a
// pair starting at an odd column is one word too), and its filter. One warp per channel: at 31x31 the staged tile
// holds two blocks per SM, so eight warps per block are what hide the shared-memory loads that feed each MMA.
// Stride 1; C % 8 == 0; 16-byte aligned pointers.
#include <cstdint>

#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {
namespace {

constexpr int kChannels = 8, kTile = 16, kFrag = 9;  // per block: 8 channels (16 bytes), a 16 x 16 output tile
constexpr int kThreads = 32 * kChannels;             // warp w owns channel w

struct TileLayout {
  int frags, rows, cols;  // fragments per filter row; staged input rows and columns per channel plane
  explicit TileLayout(const DwconvParams& p)
      : frags((p.fw + kFrag - 1) / kFrag),
        rows(kTile + p.fh - 1),
        // Columns read: up to 8 + 9 (frags - 1) + 15. cols % 16 == 8 spreads a warp's 8 rows over all 32 banks.
        cols((kFrag * frags + 15 + 7) / 16 * 16 + 8) {}
  size_t smem_bytes(const DwconvParams& p) const {
    return sizeof(__half) * (size_t(2) * kChannels * rows * cols + size_t(kChannels) * p.fh * kFrag * frags);
  }
};

__device__ __forceinline__ uint32_t pack(__half lo, __half hi) {
  const __half2 h = __halves2half2(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

__global__ void __launch_bounds__(kThreads)
    forward_tensor_core_kernel(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y,
                               DwconvParams p, int out_h, int out_w, int tiles_w, TileLayout L) {
  extern __shared__ __align__(16) __half smem[];
  __half* planes = smem;                                          // [2][kChannels][rows][cols], copy 1 shifted by 1
  __half* taps = smem + size_t(2) * kChannels * L.rows * L.cols;  // [kChannels][FH][9 * frags], zero past FW
  const int tap_row = kFrag * L.frags, c0 = blockIdx.y * kChannels, tiles_h = (out_h + kTile - 1) / kTile;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh0 = blockIdx.x / tiles_w % tiles_h * kTile, ow0 = blockIdx.x % tiles_w * kTile;
  for (int e = threadIdx.x; e < L.rows * (L.cols + 1); e += kThreads) {  // input tile, transposed to planes
    const int u = e % (L.cols + 1), t = e / (L.cols + 1), ih = oh0 + t - p.pad_top, iw = ow0 + u - p.pad_left;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (ih >= 0 && ih < p.ih && iw >= 0 && iw < p.iw)
      v = __ldg(reinterpret_cast<const uint4*>(x + ((int64_t(n) * p.ih + ih) * p.iw + iw) * p.c + c0));
    const __half* h = reinterpret_cast<const __half*>(&v);
    for (int c = 0; c < kChannels; ++c) {
      if (u < L.cols) planes[(c * L.rows + t) * L.cols + u] = h[c];
      if (u > 0) planes[((kChannels + c) * L.rows + t) * L.cols + u - 1] = h[c];
    }
  }
  for (int e = threadIdx.x; e < p.fh * tap_row; e += kThreads) {  // filter, transposed to channel rows
    const int j = e % tap_row, r = e / tap_row;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (j < p.fw) v = __ldg(reinterpret_cast<const uint4*>(w + (int64_t(r) * p.fw + j) * p.c + c0));
    const __half* h = reinterpret_cast<const __half*>(&v);
    for (int c = 0; c < kChannels; ++c) taps[(c * p.fh + r) * tap_row + j] = h[c];
  }
  __syncthreads();
  const int c = threadIdx.x / 32, gr = threadIdx.x % 32 / 4, gc = threadIdx.x % 4;       // channel, MMA row / pair
  const int band[4] = {2 * gc - gr, 2 * gc + 1 - gr, 2 * gc + 8 - gr, 2 * gc + 9 - gr};  // k - n of this lane's B
  float acc[2][4] = {};                                                                  // [half][c0..c3]
  for (int r = 0; r < p.fh; ++r) {
    for (int f = 0; f < L.frags; ++f) {
      __half b[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        b[k] = band[k] >= 0 && band[k] < kFrag ? taps[(c * p.fh + r) * tap_row + kFrag * f + band[k]]
                                               : __ushort_as_half(0);
      const uint32_t b0 = pack(b[0], b[1]), b1 = pack(b[2], b[3]);
      const int copy = f & 1;  // window columns 9f + k: pairs start at an odd column when f is odd
      const uint32_t* plane =
          reinterpret_cast<const uint32_t*>(planes + ((copy * kChannels + c) * L.rows + r) * L.cols);
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // output columns 8h .. 8h + 7 of the tile
        const int col = 8 * h + kFrag * f + 2 * gc - copy, lo = (gr * L.cols + col) / 2, hi = lo + 4 * L.cols;
        float* d = acc[h];
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(plane[lo]), "r"(plane[hi]), "r"(plane[lo + 4]), "r"(plane[hi + 4]), "r"(b0), "r"(b1));
      }
    }
  }
  __syncthreads();  // the planes now hold the output tile [kTile][kTile][kChannels]
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      planes[((gr + 8 * (k / 2)) * kTile + 8 * h + 2 * gc + k % 2) * kChannels + c] = __float2half_rn(acc[h][k]);
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
    const int oh = oh0 + e / kTile, ow = ow0 + e % kTile;
    if (oh < out_h && ow < out_w)
      *reinterpret_cast<uint4*>(y + ((int64_t(n) * out_h + oh) * out_w + ow) * p.c + c0) =
          reinterpret_cast<const uint4*>(planes)[e];
  }
}

}  // namespace

std::string forward_tensor_core_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  std::string why = need_stride1(p);
  if (why.empty()) why = need_vectors(p, kChannels, x, w, y);
  if (why.empty() && TileLayout(p).smem_bytes(p) > 220 * 1024)
    why = str_cat("filter ", p.fh, "x", p.fw, " needs ", TileLayout(p).smem_bytes(p), " bytes of shared memory");
  return why;
}

void forward_tensor_core_cuda(const __half* x, const __half* w, __half* y, const DwconvParams& p, cudaStream_t stream) {
  check_rung("teach forward_tensor_core", p, x, w, y, forward_tensor_core_unsupported(p, x, w, y));
  const TileLayout layout(p);
  const int tiles_w = ceil_div(p.ow(), kTile);
  const dim3 grid(unsigned(p.n * ceil_div(p.oh(), kTile) * tiles_w), unsigned(p.c / kChannels));
  const size_t smem = layout.smem_bytes(p);
  CNN_CUDA_CHECK(
      cudaFuncSetAttribute(forward_tensor_core_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  forward_tensor_core_kernel<<<grid, kThreads, smem, stream>>>(x, w, y, p, p.oh(), p.ow(), tiles_w, layout);
  CNN_CHECK_LAUNCH("teach forward_tensor_core_kernel");
}

}  // namespace cnn::teach

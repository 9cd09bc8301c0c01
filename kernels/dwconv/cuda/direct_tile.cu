// Stride-1 forward-style depthwise kernel for any channel count (Kernel::direct_tile), FP32 and FP16: the small
// filters (FH, FW <= kDirectTileMaxF) at channel counts the vector kernels cannot take (SLaK's 124, 249, 499, 998),
// where a padded plan's copies of the input and output cost more than the convolution itself. One channel per lane
// with scalar loads (a warp still reads one pixel's 32 consecutive channels, 64 or 128 contiguous bytes), the block's
// input tile staged once in shared memory, and each lane sliding a window of kTM outputs along its output row in
// registers. FP32 accumulation, one rounding per output. Backward-filter on the same tiles (direct_tile_bfc_kernel).
#include <cuda_fp16.h>

#include <algorithm>
#include <utility>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kLanes = 32;   // channels per block, one per lane
constexpr int kRows = 8;     // warps per block, one output row each
constexpr int kTileW = 32;   // output columns per block
constexpr int kTM = 8;       // outputs per register window

// Shared memory: the input tile [kRows + FH - 1][kTileW + FW - 1][kLanes] in the data type, then the filter
// [FH][FW][kLanes] in FP32 (rotated when g.flip).
size_t tile_smem_bytes(const ConvGeometry& g, size_t elem_bytes) {
  return size_t(kRows + g.fh - 1) * (kTileW + g.fw - 1) * kLanes * elem_bytes +
         size_t(g.fh) * g.fw * kLanes * sizeof(float);
}

template <class T, int FW>
__global__ void __launch_bounds__(kLanes * kRows)
    direct_tile_kernel(const T* __restrict__ src, const T* __restrict__ w, const T* __restrict__ bias,
                       T* __restrict__ dst, ConvGeometry g, int tiles_h, int tiles_w) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kColsIn = kTileW + FW - 1;
  const int rows_in = kRows + g.fh - 1;
  T* in = reinterpret_cast<T*>(smem);
  float* taps = reinterpret_cast<float*>(smem + (size_t(rows_in) * kColsIn * kLanes * sizeof(T) + 15) / 16 * 16);
  const int lane = threadIdx.x % kLanes, row = threadIdx.x / kLanes;
  const int c = blockIdx.y * kLanes + lane;
  const bool live = c < g.c;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh0 = blockIdx.x / tiles_w % tiles_h * kRows, ow0 = blockIdx.x % tiles_w * kTileW;
  // Stage the input tile (zero outside the map and past the last channel) and the filter; warp `row` takes every
  // kRows-th pixel of the tile, its lanes that pixel's 32 channels.
#pragma unroll 4
  for (int e = row; e < rows_in * kColsIn; e += kRows) {
    const int ih = oh0 + e / kColsIn - g.pad_t, iw = ow0 + e % kColsIn - g.pad_l;
    const bool inside = live && ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
    in[e * kLanes + lane] = inside ? src[((int64_t(n) * g.in_h + ih) * g.in_w + iw) * g.c + c] : T(0.f);
  }
  for (int e = row; e < g.fh * FW; e += kRows) {
    const int i = e / FW, j = e % FW;
    const int wi = g.flip ? g.fh - 1 - i : i, wj = g.flip ? FW - 1 - j : j;
    taps[e * kLanes + lane] = live ? widen(w[(int64_t(wi) * FW + wj) * g.c + c]) : 0.f;
  }
  __syncthreads();
  const int oh = oh0 + row;
  if (!live || oh >= g.out_h) return;  // no barrier follows
  const float b = bias != nullptr ? widen(bias[c]) : 0.f;
  T* out_row = dst + (int64_t(n) * g.out_h + oh) * g.out_w * g.c + c;
  for (int s0 = 0; s0 < kTileW && ow0 + s0 < g.out_w; s0 += kTM) {
    float acc[kTM];
#pragma unroll
    for (int t = 0; t < kTM; ++t) acc[t] = b;
    for (int i = 0; i < g.fh; ++i) {
      // Input columns s0 .. s0 + kTM + FW - 2 of tile row row + i, then every tap of filter row i on them.
      const T* in_row = in + ((row + i) * kColsIn + s0) * kLanes + lane;
      float win[kTM + FW - 1];
#pragma unroll
      for (int u = 0; u < kTM + FW - 1; ++u) win[u] = widen(in_row[u * kLanes]);
      const float* tap_row = taps + i * FW * kLanes + lane;
#pragma unroll
      for (int j = 0; j < FW; ++j) {
        const float f = tap_row[j * kLanes];
#pragma unroll
        for (int t = 0; t < kTM; ++t) acc[t] = fmaf(win[t + j], f, acc[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < kTM; ++t)
      if (ow0 + s0 + t < g.out_w) out_row[int64_t(ow0 + s0 + t) * g.c] = device_cast<T>(acc[t]);
  }
}

// Calls f(std::integral_constant<int, FW>{}) for the run-time width fw, FW in 1 .. kMaxFw (the callers check the
// width first: a width outside is an internal error).
template <int kMaxFw, class F>
void with_filter_width(int fw, F&& f) {
  bool ran = false;
  [&]<int... W>(std::integer_sequence<int, W...>) {
    ((fw == W + 1 ? (f(std::integral_constant<int, W + 1>{}), ran = true) : false), ...);
  }(std::make_integer_sequence<int, kMaxFw>{});
  CNN_CHECK(ran, "dwconv direct_tile: no kernel for filter width ", fw, " (at most ", kMaxFw, ")");
}

template <class T>
void launch_direct_tile(const T* src, const T* w, const T* bias, T* dst, const ConvGeometry& g,
                        cudaStream_t stream) {
  CNN_CHECK(direct_tile_supports(g), "dwconv direct_tile: needs stride 1 and a filter of at most ", kDirectTileMaxF,
            "x", kDirectTileMaxF, ", got ", g.fh, "x", g.fw, " at stride ", g.stride_h, "x", g.stride_w);
  if (int64_t(g.n) * g.out_h * g.out_w * g.c == 0) return;
  const int tiles_h = (g.out_h + kRows - 1) / kRows, tiles_w = (g.out_w + kTileW - 1) / kTileW;
  const dim3 grid(unsigned(int64_t(g.n) * tiles_h * tiles_w), unsigned((g.c + kLanes - 1) / kLanes));
  const size_t smem = tile_smem_bytes(g, sizeof(T)) + 16;  // + the filter's alignment
  with_filter_width<kDirectTileMaxF>(g.fw, [&](auto fw) {
    auto* kernel = direct_tile_kernel<T, decltype(fw)::value>;
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<grid, kLanes * kRows, smem, stream>>>(src, w, bias, dst, g, tiles_h, tiles_w);
  });
  CNN_CHECK_LAUNCH("dwconv direct_tile kernel");
}

// Backward-filter at stride 1: dW[i, j, c] = sum over (n, oh, ow) of X[n, oh + i - pT, ow + j - pL, c] dY[n, oh, ow, c].
// Same tiles and lanes as the forward: per tile the block stages X's (8 + FH - 1) x (32 + FW - 1) window and dY's
// 8 x 32 outputs; lane `lane` of warp `row` adds, for its channel, the products of dY row `row` with every tap's
// shifted X row into FH x FW FP32 registers. Blocks walk the tiles in a grid-stride loop (a fixed partition, so the
// sums are reproducible up to the order of the final atomics); at the end the 8 warps' partials are summed in shared
// memory and added to dW (zeroed first) with one atomic per tap and channel per block.
template <class T, int FW>
__global__ void __launch_bounds__(kLanes * kRows)
    direct_tile_bfc_kernel(const T* __restrict__ x, const T* __restrict__ dy, float* __restrict__ dw, DwconvParams p,
                           int out_h, int out_w, int tiles_h, int tiles_w) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kColsIn = kTileW + FW - 1;
  const int rows_in = kRows + p.fh - 1;
  T* xs = reinterpret_cast<T*>(smem);           // [rows_in][kColsIn][kLanes]
  T* ds = xs + size_t(rows_in) * kColsIn * kLanes;  // [kRows][kTileW][kLanes]
  const int lane = threadIdx.x % kLanes, row = threadIdx.x / kLanes;
  const int c = blockIdx.y * kLanes + lane;
  const bool live = c < p.c;
  float acc[kDirectTileMaxBfcF][FW] = {};
  const int tiles = p.n * tiles_h * tiles_w;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int n = tile / (tiles_h * tiles_w);
    const int oh0 = tile / tiles_w % tiles_h * kRows, ow0 = tile % tiles_w * kTileW;
    __syncthreads();  // every warp is done with the previous tile
#pragma unroll 4
    for (int e = row; e < rows_in * kColsIn; e += kRows) {
      const int ih = oh0 + e / kColsIn - p.pad_top, iw = ow0 + e % kColsIn - p.pad_left;
      const bool inside = live && ih >= 0 && ih < p.ih && iw >= 0 && iw < p.iw;
      xs[e * kLanes + lane] = inside ? x[((int64_t(n) * p.ih + ih) * p.iw + iw) * p.c + c] : T(0.f);
    }
#pragma unroll 4
    for (int e = row; e < kRows * kTileW; e += kRows) {
      const int oh = oh0 + e / kTileW, ow = ow0 + e % kTileW;
      const bool inside = live && oh < out_h && ow < out_w;  // dY past the map is zero: no contribution
      ds[e * kLanes + lane] = inside ? dy[((int64_t(n) * out_h + oh) * out_w + ow) * p.c + c] : T(0.f);
    }
    __syncthreads();
    if (!live) continue;
    for (int s0 = 0; s0 < kTileW; s0 += kTM) {
      float d[kTM];
#pragma unroll
      for (int t = 0; t < kTM; ++t) d[t] = widen(ds[(row * kTileW + s0 + t) * kLanes + lane]);
#pragma unroll
      for (int i = 0; i < kDirectTileMaxBfcF; ++i) {
        if (i >= p.fh) break;
        const T* x_row = xs + ((row + i) * kColsIn + s0) * kLanes + lane;
        float win[kTM + FW - 1];
#pragma unroll
        for (int u = 0; u < kTM + FW - 1; ++u) win[u] = widen(x_row[u * kLanes]);
#pragma unroll
        for (int j = 0; j < FW; ++j)
#pragma unroll
          for (int t = 0; t < kTM; ++t) acc[i][j] = fmaf(win[t + j], d[t], acc[i][j]);
      }
    }
  }
  // The warps' partials, summed over the 8 rows in shared memory (reusing the tiles' space), then one atomic each.
  __syncthreads();
  float* part = reinterpret_cast<float*>(smem);  // [kRows][FH * FW][kLanes]
  const int taps = p.fh * FW;
#pragma unroll
  for (int i = 0; i < kDirectTileMaxBfcF; ++i) {
    if (i >= p.fh) break;
#pragma unroll
    for (int j = 0; j < FW; ++j) part[(row * taps + i * FW + j) * kLanes + lane] = acc[i][j];
  }
  __syncthreads();
  if (!live) return;
  for (int k = row; k < taps; k += kRows) {
    float sum = 0.f;
    for (int r = 0; r < kRows; ++r) sum += part[(r * taps + k) * kLanes + lane];
    atomicAdd(dw + int64_t(k) * p.c + c, sum);
  }
}

template <class T>
void launch_direct_tile_bfc(const T* x, const T* dy, float* dw, const DwconvParams& p, cudaStream_t stream) {
  CNN_CHECK(direct_tile_bfc_supports(p), "dwconv direct_tile backward-filter: needs stride 1 and a filter of at most ",
            kDirectTileMaxBfcF, "x", kDirectTileMaxBfcF, ", got ", p.str());
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, size_t(p.w_elems()) * sizeof(float), stream));
  const int out_h = p.oh(), out_w = p.ow();
  if (int64_t(p.n) * out_h * out_w == 0) return;
  const int tiles_h = (out_h + kRows - 1) / kRows, tiles_w = (out_w + kTileW - 1) / kTileW;
  const int channel_blocks = (p.c + kLanes - 1) / kLanes;
  // About 2048 blocks in all: enough to fill the GPU several times, few enough that the final atomics stay cheap.
  const int64_t tiles = int64_t(p.n) * tiles_h * tiles_w;
  const unsigned blocks_x = unsigned(std::max<int64_t>(1, std::min<int64_t>(tiles, 2048 / channel_blocks)));
  const size_t tile_bytes = (size_t(kRows + p.fh - 1) * (kTileW + p.fw - 1) + size_t(kRows) * kTileW) * kLanes * sizeof(T);
  const size_t smem = std::max(tile_bytes, size_t(kRows) * p.fh * p.fw * kLanes * sizeof(float));
  with_filter_width<kDirectTileMaxBfcF>(p.fw, [&](auto fw) {
    auto* kernel = direct_tile_bfc_kernel<T, decltype(fw)::value>;
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<dim3(blocks_x, unsigned(channel_blocks)), kLanes * kRows, smem, stream>>>(x, dy, dw, p, out_h, out_w,
                                                                                         tiles_h, tiles_w);
  });
  CNN_CHECK_LAUNCH("dwconv direct_tile backward-filter kernel");
}

}  // namespace

bool direct_tile_bfc_supports(const DwconvParams& p) {
  return p.stride_h == 1 && p.stride_w == 1 && p.fh >= 1 && p.fh <= kDirectTileMaxBfcF && p.fw >= 1 &&
         p.fw <= kDirectTileMaxBfcF;
}

void launch_dwconv_direct_tile_bfc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                       cudaStream_t stream) {
  launch_direct_tile_bfc(x, dy, dw, p, stream);
}

bool direct_tile_supports(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.fh >= 1 && g.fh <= kDirectTileMaxF && g.fw >= 1 &&
         g.fw <= kDirectTileMaxF;
}

void launch_dwconv_direct_tile(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                               cudaStream_t stream) {
  launch_direct_tile(src, w, bias, dst, g, stream);
}

void launch_dwconv_direct_tile_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                   const ConvGeometry& g, cudaStream_t stream) {
  launch_direct_tile(src, w, bias, dst, g, stream);
}

}  // namespace cnn::dwconv

// Stride-1 forward-style depthwise kernel for any channel count (Kernel::direct_tile), FP32 and FP16: the small
// filters (FH, FW <= kDirectTileMaxF) at channel counts the vector kernels cannot take (SLaK's 124, 249, 499, 998),
// where a padded plan's copies of the input and output cost more than the convolution itself. One channel per lane
// with scalar loads (a warp still reads one pixel's 32 consecutive channels, 64 or 128 contiguous bytes), the block's
// input tile staged once in shared memory, and each lane sliding a window of kTM outputs along its output row in
// registers. FP32 accumulation, one rounding per output. The tile is 8 (FP32) or 16 (FP16) output rows by 8, 16 or 32
// columns, the narrowest that covers the row (a 32-wide tile on an 8-wide map would stage four times the input it
// uses).
#include <cuda_fp16.h>

#include <utility>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kLanes = 32;     // channels per block, one per lane
constexpr int kWarps = 8;      // warps per block, each on its own output rows
constexpr int kMaxTileW = 32;  // output columns per block on rows wider than 16
constexpr int kTM = 8;         // outputs per register window

// Output rows per warp: two for FP16, so each staged input row read into registers feeds both (FH + 1 window loads
// for 2 rows instead of 2 FH) and the tile's FH - 1 halo rows are spread over 16 rows instead of 8. FP32 keeps one:
// its tile is twice the bytes, and two rows would halve the blocks per SM.
template <class T>
constexpr int rows_per_warp() {
  return sizeof(T) == 2 ? 2 : 1;
}

// Shared memory: the input tile [tile_h + FH - 1][tile_w + FW - 1][kLanes] in the data type, then the filter
// [FH][FW][kLanes] in FP32 (rotated when g.flip).
size_t tile_smem_bytes(const ConvGeometry& g, int tile_h, int tile_w, size_t elem_bytes) {
  return size_t(tile_h + g.fh - 1) * (tile_w + g.fw - 1) * kLanes * elem_bytes +
         size_t(g.fh) * g.fw * kLanes * sizeof(float);
}

template <class T, int FW, int kTileW>
__global__ void __launch_bounds__(kLanes * kWarps)
    direct_tile_kernel(const T* __restrict__ src, const T* __restrict__ w, const T* __restrict__ bias,
                       T* __restrict__ dst, ConvGeometry g, int tiles_h, int tiles_w) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kRpw = rows_per_warp<T>(), kTileH = kWarps * kRpw;
  constexpr int kColsIn = kTileW + FW - 1;  // >= kWarps, so one step below wraps at most one row
  const int rows_in = kTileH + g.fh - 1;
  T* in = reinterpret_cast<T*>(smem);
  float* taps = reinterpret_cast<float*>(smem + (size_t(rows_in) * kColsIn * kLanes * sizeof(T) + 15) / 16 * 16);
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int c = blockIdx.y * kLanes + lane;
  const bool live = c < g.c;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh0 = blockIdx.x / tiles_w % tiles_h * kTileH, ow0 = blockIdx.x % tiles_w * kTileW;
  // Stage the input tile (zero outside the map and past the last channel): warp `warp` takes every kWarps-th pixel
  // of the tile in row-major order, its lanes that pixel's 32 channels. The pixel's row and column advance
  // incrementally, and kBatch loads are issued before any is stored: each load reads a valid address (the image's
  // first pixel when outside) and is zeroed after, so there is no branch to serialize them on their latency.
  {
    constexpr int kBatch = 8;
    const T* src_n = src + int64_t(n) * g.in_h * g.in_w * g.c + (live ? c : 0);
    const int total = rows_in * kColsIn;
    int r = 0, col = warp;  // warp < kColsIn
    for (int e0 = warp; e0 < total; e0 += kWarps * kBatch) {
      T v[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int ih = oh0 + r - g.pad_t, iw = ow0 + col - g.pad_l;
        const bool inside = live && unsigned(ih) < unsigned(g.in_h) && unsigned(iw) < unsigned(g.in_w);
        v[k] = src_n[inside ? (ih * g.in_w + iw) * g.c : 0];  // within one image: fits 32 bits (supports())
        if (!inside) v[k] = T(0.f);
        col += kWarps;
        if (col >= kColsIn) col -= kColsIn, ++r;
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
        if (e0 + k * kWarps < total) in[(e0 + k * kWarps) * kLanes + lane] = v[k];
    }
  }
  for (int e = warp; e < g.fh * FW; e += kWarps) {
    const int i = e / FW, j = e % FW;
    const int wi = g.flip ? g.fh - 1 - i : i, wj = g.flip ? FW - 1 - j : j;
    taps[e * kLanes + lane] = live ? widen(w[(int64_t(wi) * FW + wj) * g.c + c]) : 0.f;
  }
  __syncthreads();
  const int oh = oh0 + warp * kRpw;  // this warp's first output row
  if (!live || oh >= g.out_h) return;  // no barrier follows
  const float b = bias != nullptr ? widen(bias[c]) : 0.f;
  T* out_row = dst + (int64_t(n) * g.out_h + oh) * g.out_w * g.c + c;
  for (int s0 = 0; s0 < kTileW && ow0 + s0 < g.out_w; s0 += kTM) {
    float acc[kRpw][kTM];
#pragma unroll
    for (int k = 0; k < kRpw; ++k)
#pragma unroll
      for (int t = 0; t < kTM; ++t) acc[k][t] = b;
    // Input row u of the warp's window (tile row warp * kRpw + u) meets filter row u - k of output row k.
    for (int u = 0; u < g.fh + kRpw - 1; ++u) {
      const T* in_row = in + ((warp * kRpw + u) * kColsIn + s0) * kLanes + lane;
      float win[kTM + FW - 1];
#pragma unroll
      for (int v = 0; v < kTM + FW - 1; ++v) win[v] = widen(in_row[v * kLanes]);
#pragma unroll
      for (int k = 0; k < kRpw; ++k) {
        const int i = u - k;
        if (i < 0 || i >= g.fh) continue;
        const float* tap_row = taps + i * FW * kLanes + lane;
#pragma unroll
        for (int j = 0; j < FW; ++j) {
          const float f = tap_row[j * kLanes];
#pragma unroll
          for (int t = 0; t < kTM; ++t) acc[k][t] = fmaf(win[t + j], f, acc[k][t]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRpw; ++k) {
      if (oh + k >= g.out_h) break;
#pragma unroll
      for (int t = 0; t < kTM; ++t)
        if (ow0 + s0 + t < g.out_w)
          out_row[(int64_t(k) * g.out_w + ow0 + s0 + t) * g.c] = device_cast<T>(acc[k][t]);
    }
  }
}

// Calls f(std::integral_constant<int, FW>{}) for the run-time width fw, FW in 1 .. kDirectTileMaxF (the caller
// checks the width first: a width outside is an internal error).
template <class F>
void with_filter_width(int fw, F&& f) {
  bool ran = false;
  [&]<int... W>(std::integer_sequence<int, W...>) {
    ((fw == W + 1 ? (f(std::integral_constant<int, W + 1>{}), ran = true) : false), ...);
  }(std::make_integer_sequence<int, kDirectTileMaxF>{});
  CNN_CHECK(ran, "dwconv direct_tile: no kernel for filter width ", fw, " (at most ", kDirectTileMaxF, ")");
}

// The same for the tile width (8, 16 or 32).
template <class F>
void with_tile_width(int tile_w, F&& f) {
  if (tile_w == kTM) return f(std::integral_constant<int, kTM>{});
  if (tile_w == 2 * kTM) return f(std::integral_constant<int, 2 * kTM>{});
  CNN_CHECK(tile_w == kMaxTileW, "dwconv direct_tile: no kernel for tile width ", tile_w);
  f(std::integral_constant<int, kMaxTileW>{});
}

template <class T>
void launch_direct_tile(const T* src, const T* w, const T* bias, T* dst, const ConvGeometry& g,
                        cudaStream_t stream) {
  CNN_CHECK(direct_tile_supports(g), "dwconv direct_tile: needs stride 1, a filter of at most ", kDirectTileMaxF,
            "x", kDirectTileMaxF, " and under 2^31 elements per image, got ", g.fh, "x", g.fw, " at stride ",
            g.stride_h, "x", g.stride_w, " on ", g.in_h, "x", g.in_w, "x", g.c);
  if (int64_t(g.n) * g.out_h * g.out_w * g.c == 0) return;
  const int tile_h = kWarps * rows_per_warp<T>(), tile_w = direct_tile_width(g.out_w);
  const int tiles_h = (g.out_h + tile_h - 1) / tile_h, tiles_w = (g.out_w + tile_w - 1) / tile_w;
  const int64_t blocks = int64_t(g.n) * tiles_h * tiles_w, channel_blocks = (g.c + kLanes - 1) / kLanes;
  CNN_CHECK(blocks < (int64_t(1) << 31) && channel_blocks <= 65535, "dwconv direct_tile: grid too large for ", blocks,
            " x ", channel_blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(channel_blocks));
  const size_t smem = tile_smem_bytes(g, tile_h, tile_w, sizeof(T)) + 16;  // + the filter's alignment
  with_filter_width(g.fw, [&](auto fw) {
    with_tile_width(tile_w, [&](auto tw) {
      auto* kernel = direct_tile_kernel<T, decltype(fw)::value, decltype(tw)::value>;
      CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      kernel<<<grid, kLanes * kWarps, smem, stream>>>(src, w, bias, dst, g, tiles_h, tiles_w);
    });
  });
  CNN_CHECK_LAUNCH("dwconv direct_tile kernel");
}

}  // namespace

int direct_tile_height(bool f16) { return kWarps * (f16 ? rows_per_warp<__half>() : rows_per_warp<float>()); }

int direct_tile_width(int out_w) { return out_w <= kTM ? kTM : out_w <= 2 * kTM ? 2 * kTM : kMaxTileW; }

bool direct_tile_supports(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.fh >= 1 && g.fh <= kDirectTileMaxF && g.fw >= 1 &&
         g.fw <= kDirectTileMaxF && int64_t(g.in_h) * g.in_w * g.c < (int64_t(1) << 31);
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

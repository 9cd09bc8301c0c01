// Stride-1 forward-style depthwise kernel for any channel count (Kernel::direct_tile), FP32 and FP16: the small
// filters (FH, FW <= kDirectTileMaxF) at channel counts the vector kernels cannot take (SLaK's 124, 249, 499, 998),
// where a padded plan's copies of the input and output cost more than the convolution itself. Each lane takes one
// channel, or two adjacent ones (__half2 / float2 loads and stores) where C is even and the tensors aligned to two
// elements, so a warp reads one pixel's 32 or 64 consecutive channels per instruction; the block's input tile is
// staged once in shared memory, and each lane slides a window of kTM outputs along its output row in registers.
// Where a map row's W * C elements are whole 16-byte chunks and the input is 16-byte aligned, the tile is staged in
// 16-byte cp.async copies of each pixel's channel span (span_staging.cuh), else by element loads. FP32
// accumulation, one rounding per output: both lane widths give the same bits per channel. The tile is 8 output rows
// (one per warp), or 16 (two per warp) for FP16 on maps taller than 8 rows, by 8, 16 or 32 columns, the narrowest
// that covers the row (a 32-wide tile on an 8-wide map would stage four times the input it uses), narrowed further
// where a 13-tap filter's halo would take more shared memory than a block may have.
#include <cuda_fp16.h>

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/span_staging.cuh"

namespace cnn::dwconv {
namespace {

constexpr int kLanes = 32;     // lanes per warp, each on 1 or 2 channels
constexpr int kWarps = 8;      // warps per block, each on its own output rows
constexpr int kMaxTileW = 32;  // output columns per block on rows wider than 16
constexpr int kTM = 8;         // outputs per register window
constexpr size_t kMaxSmem = 227 * 1024;  // shared memory a block may opt in to on sm_90
// The filter widths instantiated (direct_tile_supports, the launcher's dispatch).
constexpr int kFilterWidths[] = {1, 2, 3, 4, 5, 6, 7, 9, 11, 13};

// Output rows per warp: two for FP16 on maps of more than 8 rows, so each staged input row read into registers feeds
// both (FH + 1 window loads for 2 rows instead of 2 FH) and the tile's FH - 1 halo rows are spread over 16 rows
// instead of 8. One on maps of at most 8 rows, where a 16-row tile would leave half the warps idle and stage 8 rows
// it does not use. FP32 keeps one: its tile is twice the bytes, and two rows would halve the blocks per SM.
int rows_per_warp(bool f16, int out_h) { return f16 && out_h > kWarps ? 2 : 1; }

// A lane's kCh adjacent channels as one load and store unit V (the element, or a __half2 / float2 pair), widened to
// FP32 and rounded back once per channel.
template <class T, int kCh>
struct Lane;
template <class T>
struct Lane<T, 1> {
  using V = T;
  static __device__ void widen_to(V v, float* f) { f[0] = widen(v); }
  static __device__ V round(const float* f) { return device_cast<T>(f[0]); }
};
template <>
struct Lane<__half, 2> {
  using V = __half2;
  static __device__ void widen_to(V v, float* f) { f[0] = __low2float(v), f[1] = __high2float(v); }
  static __device__ V round(const float* f) { return __floats2half2_rn(f[0], f[1]); }  // each as __float2half_rn
};
template <>
struct Lane<float, 2> {
  using V = float2;
  static __device__ void widen_to(V v, float* f) { f[0] = v.x, f[1] = v.y; }
  static __device__ V round(const float* f) { return make_float2(f[0], f[1]); }
};

// One lane's filter taps in FP32, read from shared memory with one load.
template <int kCh>
struct alignas(sizeof(float) * kCh) Taps {
  float v[kCh];
};

// Elements per staged pixel: the block's channels, plus a chunk of room for the shift under span staging.
template <class T, int kCh, bool kSpan>
constexpr int kPixelPitch = kSpan ? span::kPitch<T, kLanes * kCh> : kLanes * kCh;

// Shared memory: the input tile [tile_h + FH - 1][tile_w + FW - 1][pitch] in the data type, then the filter
// [FH][FW][kLanes * ch] in FP32 (rotated when g.flip).
size_t tile_smem_bytes(const ConvGeometry& g, int tile_h, int tile_w, size_t elem_bytes, int ch, int pitch) {
  const size_t tile = size_t(tile_h + g.fh - 1) * (tile_w + g.fw - 1) * elem_bytes * pitch;
  const size_t filter = size_t(g.fh) * g.fw * sizeof(float) * kLanes * ch;
  return (tile + 15) / 16 * 16 + filter;
}

template <class T, int kCh, int kRpw, int FW, int kTileW, bool kSpan>
__global__ void __launch_bounds__(kLanes * kWarps)
    direct_tile_kernel(const T* __restrict__ src, const T* __restrict__ w, const T* __restrict__ bias,
                       T* __restrict__ dst, ConvGeometry g, int tiles_h, int tiles_w) {
  using L = Lane<T, kCh>;
  using V = typename L::V;
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int kTileH = kWarps * kRpw;
  constexpr int kColsIn = kTileW + FW - 1;  // >= kWarps, so one step below wraps at most one row
  constexpr int kPitch = kPixelPitch<T, kCh, kSpan>;
  const int rows_in = kTileH + g.fh - 1;
  T* in = reinterpret_cast<T*>(smem);
  Taps<kCh>* taps =
      reinterpret_cast<Taps<kCh>*>(smem + (size_t(rows_in) * kColsIn * kPitch * sizeof(T) + 15) / 16 * 16);
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int c = (blockIdx.y * kLanes + lane) * kCh;  // the lane's first channel
  const bool live = c < g.c;                         // kCh = 2 only at an even C: both channels live
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh0 = blockIdx.x / tiles_w % tiles_h * kTileH, ow0 = blockIdx.x % tiles_w * kTileW;
  const int x0 = ow0 - g.pad_l;  // the tile's first input column
  if constexpr (kSpan) {
    span::stage<T, kLanes * kCh, kColsIn>(in, src, int64_t(g.n) * g.in_h * g.in_w * g.c, n, g.in_h, g.in_w, g.c,
                                          oh0 - g.pad_t, x0, rows_in, blockIdx.y * kLanes * kCh, threadIdx.x,
                                          kLanes * kWarps);
    cuda::cp_async_commit();
  } else {
    // Stage the input tile (zero outside the map and past the last channel): warp `warp` takes every kWarps-th pixel
    // of the tile in row-major order, its lanes that pixel's kLanes * kCh channels. The pixel's row and column
    // advance incrementally, and kBatch loads are issued before any is stored: each load reads a valid address (the
    // image's first pixel when outside) and is zeroed after, so there is no branch to serialize them on their
    // latency.
    constexpr int kBatch = 8;
    const float zero[kCh] = {};
    const T* src_n = src + int64_t(n) * g.in_h * g.in_w * g.c + (live ? c : 0);
    const int total = rows_in * kColsIn;
    int r = 0, col = warp;  // warp < kColsIn
    for (int e0 = warp; e0 < total; e0 += kWarps * kBatch) {
      V v[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        const int ih = oh0 + r - g.pad_t, iw = x0 + col;
        const bool inside = live && unsigned(ih) < unsigned(g.in_h) && unsigned(iw) < unsigned(g.in_w);
        // Within one image: fits 32 bits (supports()).
        v[k] = *reinterpret_cast<const V*>(src_n + (inside ? (ih * g.in_w + iw) * g.c : 0));
        if (!inside) v[k] = L::round(zero);
        col += kWarps;
        if (col >= kColsIn) col -= kColsIn, ++r;
      }
#pragma unroll
      for (int k = 0; k < kBatch; ++k)
        if (e0 + k * kWarps < total) *reinterpret_cast<V*>(in + (e0 + k * kWarps) * kPitch + lane * kCh) = v[k];
    }
  }
  for (int e = warp; e < g.fh * FW; e += kWarps) {
    const int i = e / FW, j = e % FW;
    const int wi = g.flip ? g.fh - 1 - i : i, wj = g.flip ? FW - 1 - j : j;
    Taps<kCh> f = {};
    if (live) L::widen_to(*reinterpret_cast<const V*>(w + (int64_t(wi) * FW + wj) * g.c + c), f.v);
    taps[e * kLanes + lane] = f;
  }
  if constexpr (kSpan) cuda::cp_async_wait<0>();
  __syncthreads();
  const int oh = oh0 + warp * kRpw;    // this warp's first output row
  if (!live || oh >= g.out_h) return;  // no barrier follows
  float b[kCh] = {};
  if (bias != nullptr) L::widen_to(*reinterpret_cast<const V*>(bias + c), b);
  // The lane's channel in the warp's first input row, one pointer per column mod 8: span staging's shift is a function
  // of the column mod 8 (mod 4 for FP32) and windows start at multiples of kTM columns, so column v of the window at
  // s0, input row u, is col[v % 8] + s0 pixels + a compile-time offset. With the rows unrolled (up to the largest
  // filter, the filter's own height checked at run time), every load below is a register plus an immediate.
  const T* col[8];
#pragma unroll
  for (int m = 0; m < 8; ++m)
    col[m] = in + (warp * kRpw * kColsIn + m) * kPitch + (kSpan ? span::shift<T>(x0 + m, g.c) : 0) + lane * kCh;
  const Taps<kCh>* lane_taps = taps + lane;
  T* out = dst + (int64_t(n) * g.out_h + oh) * g.out_w * g.c + int64_t(ow0) * g.c + c;  // output (oh, ow0)
  for (int s0 = 0; s0 < kTileW && ow0 + s0 < g.out_w; s0 += kTM) {
    float acc[kRpw][kTM][kCh];
#pragma unroll
    for (int k = 0; k < kRpw; ++k)
#pragma unroll
      for (int t = 0; t < kTM; ++t)
#pragma unroll
        for (int h = 0; h < kCh; ++h) acc[k][t][h] = b[h];
    const T* win_col[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) win_col[m] = col[m] + s0 * kPitch;
    // Input row u of the warp's window (tile row warp * kRpw + u) meets filter row u - k of output row k.
#pragma unroll
    for (int u = 0; u < kDirectTileMaxF + kRpw - 1; ++u) {
      if (u >= g.fh + kRpw - 1) break;
      float win[kTM + FW - 1][kCh];
#pragma unroll
      for (int v = 0; v < kTM + FW - 1; ++v)
        L::widen_to(*reinterpret_cast<const V*>(win_col[v % 8] + (u * kColsIn + v / 8 * 8) * kPitch), win[v]);
#pragma unroll
      for (int k = 0; k < kRpw; ++k) {
        const int i = u - k;
        if (i < 0 || i >= g.fh) continue;
#pragma unroll
        for (int j = 0; j < FW; ++j) {
          const Taps<kCh> f = lane_taps[(i * FW + j) * kLanes];
#pragma unroll
          for (int t = 0; t < kTM; ++t)
#pragma unroll
            for (int h = 0; h < kCh; ++h) acc[k][t][h] = fmaf(win[t + j][h], f.v[h], acc[k][t][h]);
        }
      }
    }
    // Stores by pointer steps of C: one 64-bit add each instead of an index multiply.
#pragma unroll
    for (int k = 0; k < kRpw; ++k) {
      if (oh + k >= g.out_h) break;
      T* o = out + (int64_t(k) * g.out_w + s0) * g.c;
#pragma unroll
      for (int t = 0; t < kTM; ++t, o += g.c)
        if (ow0 + s0 + t < g.out_w) *reinterpret_cast<V*>(o) = L::round(acc[k][t]);
    }
  }
}

// Calls f(std::integral_constant<int, V>{}) for the run-time value v, one of Vs (another is an internal error).
template <int... Vs, class F>
void with_value(int v, const char* what, F&& f) {
  const bool ran = ((v == Vs ? (f(std::integral_constant<int, Vs>{}), true) : false) || ...);
  CNN_CHECK(ran, "dwconv direct_tile: no kernel for ", what, " ", v);
}

// with_value over kFilterWidths.
template <class F, size_t... I>
void with_filter_width(int fw, F&& f, std::index_sequence<I...>) {
  with_value<kFilterWidths[I]...>(fw, "filter width", f);
}
template <class F>
void with_filter_width(int fw, F&& f) {
  with_filter_width(fw, f, std::make_index_sequence<std::size(kFilterWidths)>{});
}

template <class T>
void launch_direct_tile(const T* src, const T* w, const T* bias, T* dst, const ConvGeometry& g, int lane_channels,
                        int tile_w, cudaStream_t stream) {
  constexpr bool kF16 = std::is_same_v<T, __half>;
  CNN_CHECK(direct_tile_supports(g), "dwconv direct_tile: needs stride 1, a filter of at most ", kDirectTileMaxF,
            " rows and 1-7, 9, 11 or 13 columns and under 2^31 elements per image, got ", g.fh, "x", g.fw,
            " at stride ", g.stride_h, "x", g.stride_w, " on ", g.in_h, "x", g.in_w, "x", g.c);
  const int align = alignment_of({src, w, bias, dst});
  CNN_CHECK(lane_channels == 1 || (lane_channels == 2 && direct_tile_lane_channels(g.c, kF16, align) == 2),
            "dwconv direct_tile: channels per lane must be 1, or 2 at an even C with tensors aligned to 2 elements;",
            " got ", lane_channels, " at C = ", g.c, " and ", align, "-byte alignment");
  CNN_CHECK(direct_tile_width_fits(g, kF16, tile_w), "dwconv direct_tile: a tile of 8, 16 or 32 columns whose ",
            "input window fits a block's shared memory, got ", tile_w, " columns for F=", g.fh, "x", g.fw);
  if (int64_t(g.n) * g.out_h * g.out_w * g.c == 0) return;
  const int rows = rows_per_warp(kF16, g.out_h);
  const int tile_h = kWarps * rows;
  const int tiles_h = (g.out_h + tile_h - 1) / tile_h, tiles_w = (g.out_w + tile_w - 1) / tile_w;
  const int block_c = kLanes * lane_channels;
  const int64_t blocks = int64_t(g.n) * tiles_h * tiles_w, channel_blocks = (g.c + block_c - 1) / block_c;
  CNN_CHECK(blocks < (int64_t(1) << 31) && channel_blocks <= 65535, "dwconv direct_tile: grid too large for ", blocks,
            " x ", channel_blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(channel_blocks));
  const bool span = span::supports(alignment_of({src}), g.in_w, g.c, sizeof(T));
  const auto run = [&](auto ch, auto rpw) {
    constexpr int kCh = decltype(ch)::value;
    with_filter_width(g.fw, [&](auto fw) {
      with_value<kTM, 2 * kTM, kMaxTileW>(tile_w, "tile width", [&](auto tw) {
        with_value<0, 1>(span, "span staging", [&](auto sp) {
          constexpr bool kSpan = decltype(sp)::value == 1;
          auto* kernel = direct_tile_kernel<T, kCh, decltype(rpw)::value, decltype(fw)::value, decltype(tw)::value,
                                            kSpan>;
          const size_t smem = tile_smem_bytes(g, tile_h, tile_w, sizeof(T), kCh, kPixelPitch<T, kCh, kSpan>);
          CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
          kernel<<<grid, kLanes * kWarps, smem, stream>>>(src, w, bias, dst, g, tiles_h, tiles_w);
        });
      });
    });
  };
  with_value<1, 2>(lane_channels, "channels per lane", [&](auto ch) {
    if (rows == 1) return run(ch, std::integral_constant<int, 1>{});
    if constexpr (kF16) run(ch, std::integral_constant<int, 2>{});  // FP32 keeps one row per warp
  });
  CNN_CHECK_LAUNCH("dwconv direct_tile kernel");
}

}  // namespace

int direct_tile_height(bool f16, int out_h) { return kWarps * rows_per_warp(f16, out_h); }

bool direct_tile_width_fits(const ConvGeometry& g, bool f16, int w) {
  // The largest staging: two channels per lane, span-staged.
  const size_t elem = f16 ? sizeof(__half) : sizeof(float);
  const int pitch = f16 ? kPixelPitch<__half, 2, true> : kPixelPitch<float, 2, true>;
  return (w == kTM || w == 2 * kTM || w == kMaxTileW) &&
         tile_smem_bytes(g, direct_tile_height(f16, g.out_h), w, elem, 2, pitch) <= kMaxSmem;
}

int direct_tile_width(const ConvGeometry& g, bool f16) {
  int w = g.out_w <= kTM ? kTM : g.out_w <= 2 * kTM ? 2 * kTM : kMaxTileW;
  while (w > kTM && !direct_tile_width_fits(g, f16, w)) w /= 2;
  return w;
}

int direct_tile_lane_channels(int c, bool f16, int align) { return c % 2 == 0 && align >= (f16 ? 4 : 8) ? 2 : 1; }

bool direct_tile_supports(const ConvGeometry& g) {
  const bool width = std::find(std::begin(kFilterWidths), std::end(kFilterWidths), g.fw) != std::end(kFilterWidths);
  return g.stride_h == 1 && g.stride_w == 1 && g.fh >= 1 && g.fh <= kDirectTileMaxF && width &&
         int64_t(g.in_h) * g.in_w * g.c < (int64_t(1) << 31);
}

void launch_dwconv_direct_tile(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                               int lane_channels, int tile_w, cudaStream_t stream) {
  launch_direct_tile(src, w, bias, dst, g, lane_channels, tile_w, stream);
}

void launch_dwconv_direct_tile_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                   const ConvGeometry& g, int lane_channels, int tile_w, cudaStream_t stream) {
  launch_direct_tile(src, w, bias, dst, g, lane_channels, tile_w, stream);
}

}  // namespace cnn::dwconv

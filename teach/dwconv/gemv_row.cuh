// The GEMV kernel of rungs 4 and 5 (Flash-DWC's CUDA-core idea). For one filter row r and one channel, TM
// consecutive outputs of an output row are a matrix-vector product y[t] = sum_s X[t][s] * w[r][s] whose matrix rows
// are windows sliding over one input row (X[t][s] = x[t + s]). A thread keeps that window in registers for V
// channels (a float4 or float2 vector): at tap s it holds input columns s .. s+TM-1, multiplies them by tap s, then
// replaces column s with column s+TM. So each tap costs one V-wide input load and one shared-memory tap load for
// V * TM FMAs, and each input is loaded once per filter row (TM + FW - 1 loads for TM outputs). FW is a template
// parameter so every window index is a compile-time constant and the window stays in registers. The block covers 32
// channels and 32 output columns whatever TM and V are. Stride 1; C % 4 == 0; 16-byte aligned pointers.
#pragma once

#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {

// 128 threads = (128 / G) spatial slots x G channel groups of V channels (G * V = 32 channels). A slot owns TM
// outputs of one row; the block tile is 32 columns wide and (128 / G) / (32 / TM) rows high.
constexpr int kGemvThreads = 128, kGemvChannels = 32, kGemvTileW = 32;
template <int TM, int V>
constexpr int gemv_tile_rows() {
  return kGemvThreads / (kGemvChannels / V) / (kGemvTileW / TM);
}

template <int FW, int TM, class Vec, int kMinBlocks, int kRing>
__global__ void __launch_bounds__(kGemvThreads, kMinBlocks)
    gemv_row_kernel(const Vec* __restrict__ x, const Vec* __restrict__ w, Vec* __restrict__ y, DwconvParams p,
                    int out_h, int out_w, int tiles_w) {
  constexpr int V = sizeof(Vec) / sizeof(float), G = kGemvChannels / V;
  constexpr int kSlotsPerRow = kGemvTileW / TM, kRows = gemv_tile_rows<TM, V>();
  __shared__ Vec taps[FW][G];  // filter row r for the block's 32 channels
  const int groups = p.c / V, q = threadIdx.x % G, slot = threadIdx.x / G;
  const int g = blockIdx.y * G + q;
  const int tiles_h = (out_h + kRows - 1) / kRows;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh = blockIdx.x / tiles_w % tiles_h * kRows + slot / kSlotsPerRow;
  const int ow0 = blockIdx.x % tiles_w * kGemvTileW + slot % kSlotsPerRow * TM;
  const bool active = oh < out_h && g < groups;
  Vec acc[TM] = {};
  for (int r = 0; r < p.fh; ++r) {
    __syncthreads();  // every thread is done with the previous row's taps
    for (int e = threadIdx.x; e < FW * G; e += kGemvThreads) {
      const int eg = blockIdx.y * G + e % G;
      taps[e / G][e % G] = load_or_zero(w, (r * FW + e / G) * groups + eg, eg < groups);
    }
    __syncthreads();
    const int ih = oh + r - p.pad_top;
    if (!active || ih < 0 || ih >= p.ih) continue;  // this filter row only meets padding
    const Vec* x_row = x + (int64_t(n) * p.ih + ih) * p.iw * groups + g;
    const int iw0 = ow0 - p.pad_left;
    auto load = [&](int u) {
      return load_ordered_or_zero(x_row, (iw0 + u) * groups, unsigned(iw0 + u) < unsigned(p.iw));
    };
    // The window is a ring of R = kRing * TM registers: window[u % R] holds input column iw0 + u. At tap s the
    // window holds columns s .. s+R-1, of which the tap uses s .. s+TM-1; afterwards column s's register takes
    // column s + R. With kRing = 1 that load is used by the very next tap; with kRing = 2 it has TM taps to arrive.
    constexpr int R = kRing * TM, kFirst = R < TM + FW - 1 ? R : TM + FW - 1;
    Vec window[R];
#pragma unroll
    for (int u = 0; u < kFirst; ++u) window[u] = load(u);
    // `ring` = s % R is a constant in every unrolled copy, so all window indices resolve to registers.
    auto tap_step = [&](int s, int ring) {
      const Vec tap = taps[s][q];
#pragma unroll
      for (int t = 0; t < TM; ++t) fma_vec(acc[t], window[(t + ring) % R], tap);
      if (s + R < TM + FW - 1) window[ring] = load(s + R);  // only columns a later tap uses
    };
    // Taps in blocks of R (a rolled loop, so the compiler cannot hoist every load of the row), then the rest.
#pragma unroll 1
    for (int s0 = 0; s0 + R <= FW; s0 += R)
#pragma unroll
      for (int s = 0; s < R; ++s) tap_step(s0 + s, s);
#pragma unroll
    for (int s = 0; s < FW % R; ++s) tap_step(FW / R * R + s, s);
  }
  if (!active) return;
#pragma unroll
  for (int t = 0; t < TM; ++t)
    if (ow0 + t < out_w) y[((int64_t(n) * out_h + oh) * out_w + ow0 + t) * groups + g] = acc[t];
}

// Shapes the GEMV kernel handles ("" when it can run p).
inline std::string gemv_unsupported(const DwconvParams& p, const void* x, const void* w, const void* y) {
  std::string why = need_stride1(p);
  if (why.empty()) why = need_vectors(p, 4, x, w, y);
  if (why.empty() && !window_width_supported(p.fw)) why = str_cat("no kernel compiled for filter width ", p.fw);
  return why;
}

// TM outputs per thread, channel vectors of type Vec (float4 or float2), a window ring of kRing * TM columns;
// kMinBlocks > 0 caps the registers so that that many blocks of 128 threads fit an SM (65536 / (128 * kMinBlocks)
// per thread), 0 leaves them to the compiler.
template <int TM, class Vec, int kMinBlocks = 0, int kRing = 1>
void launch_gemv_row(const char* op, const float* x, const float* w, float* y, const DwconvParams& p,
                     cudaStream_t stream) {
  check_rung(op, p, x, w, y, gemv_unsupported(p, x, w, y));
  constexpr int V = sizeof(Vec) / sizeof(float);
  const int tiles_w = ceil_div(p.ow(), kGemvTileW);
  const dim3 grid(unsigned(p.n * ceil_div(p.oh(), gemv_tile_rows<TM, V>()) * tiles_w),
                  unsigned(ceil_div(p.c, kGemvChannels)));
  with_window_width(p.fw, [&](auto fw) {
    gemv_row_kernel<decltype(fw)::value, TM, Vec, kMinBlocks, kRing>
        <<<grid, kGemvThreads, 0, stream>>>(reinterpret_cast<const Vec*>(x), reinterpret_cast<const Vec*>(w),
                                            reinterpret_cast<Vec*>(y), p, p.oh(), p.ow(), tiles_w);
  });
  CNN_CHECK_LAUNCH(op);
}

}  // namespace cnn::teach

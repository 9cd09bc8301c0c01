// The GEMV kernel of rungs 4 and 5 (Flash-DWC's CUDA-core idea). For one filter row r and one channel, TM
// consecutive outputs of an output row are a matrix-vector product y[t] = sum_s X[t][s] * w[r][s] whose matrix rows
// are windows sliding over one input row (X[t][s] = x[t + s]). A thread keeps that window in registers: at tap s it
// holds input columns s .. s+TM-1, multiplies them by tap s, then replaces column s with column s+TM. So each tap
// costs one 128-bit input load and one shared-memory tap load for 4 * TM FMAs, and each input is loaded once per
// filter row (TM + FW - 1 loads for TM outputs). FW is a template parameter so every window index is a
// compile-time constant and the window stays in registers. Stride 1; C % 4 == 0; 16-byte aligned pointers.
#pragma once

#include "teach/dwconv/ladder_cuda.h"
#include "teach/dwconv/ladder_device.cuh"

namespace cnn::teach {

// 128 threads = 16 spatial slots x 8 channel groups (32 channels). A slot owns TM outputs of one row; the block
// tile is 32 columns wide and 16 / (32 / TM) rows high.
constexpr int kGemvThreads = 128, kGemvQuads = 8, kGemvTileW = 32;
template <int TM>
constexpr int gemv_tile_rows() {
  return 16 / (kGemvTileW / TM);
}

template <int FW, int TM>
__global__ void __launch_bounds__(kGemvThreads)
    gemv_row_kernel(const float4* __restrict__ x, const float4* __restrict__ w, float4* __restrict__ y, DwconvParams p,
                    int out_h, int out_w, int tiles_w) {
  constexpr int kSlotsPerRow = kGemvTileW / TM, kRows = gemv_tile_rows<TM>();
  __shared__ float4 taps[FW][kGemvQuads];  // filter row r for the block's 32 channels
  const int groups = p.c / 4, q = threadIdx.x % kGemvQuads, slot = threadIdx.x / kGemvQuads;
  const int g = blockIdx.y * kGemvQuads + q;
  const int tiles_h = (out_h + kRows - 1) / kRows;
  const int n = blockIdx.x / (tiles_h * tiles_w);
  const int oh = blockIdx.x / tiles_w % tiles_h * kRows + slot / kSlotsPerRow;
  const int ow0 = blockIdx.x % tiles_w * kGemvTileW + slot % kSlotsPerRow * TM;
  const bool active = oh < out_h && g < groups;
  float4 acc[TM] = {};
  for (int r = 0; r < p.fh; ++r) {
    __syncthreads();  // every thread is done with the previous row's taps
    for (int e = threadIdx.x; e < FW * kGemvQuads; e += kGemvThreads) {
      const int eg = blockIdx.y * kGemvQuads + e % kGemvQuads;
      taps[e / kGemvQuads][e % kGemvQuads] = load4_or_zero(w, (r * FW + e / kGemvQuads) * groups + eg, eg < groups);
    }
    __syncthreads();
    const int ih = oh + r - p.pad_top;
    if (!active || ih < 0 || ih >= p.ih) continue;  // this filter row only meets padding
    const float4* x_row = x + (int64_t(n) * p.ih + ih) * p.iw * groups + g;
    const int iw0 = ow0 - p.pad_left;
    auto load = [&](int u) {
      return load4_ordered_or_zero(x_row, (iw0 + u) * groups, unsigned(iw0 + u) < unsigned(p.iw));
    };
    float4 window[TM];  // window[u % TM] holds input column iw0 + u
#pragma unroll
    for (int u = 0; u < TM; ++u) window[u] = load(u);
    // Tap s: the window holds columns s .. s+TM-1; multiply, then column s's register takes column s + TM.
    // `ring` = s % TM is a constant in every unrolled copy, so all window indices resolve to registers.
    auto tap_step = [&](int s, int ring) {
      const float4 tap = taps[s][q];
#pragma unroll
      for (int t = 0; t < TM; ++t) fma4(acc[t], window[(t + ring) % TM], tap);
      window[ring] = load(s + TM);  // past the last column needed, this reads a neighbour or zero: harmless
    };
    // Taps in blocks of TM (a rolled loop, so the compiler cannot hoist every load of the row), then the rest.
#pragma unroll 1
    for (int s0 = 0; s0 + TM <= FW; s0 += TM)
#pragma unroll
      for (int s = 0; s < TM; ++s) tap_step(s0 + s, s);
#pragma unroll
    for (int s = 0; s < FW % TM; ++s) tap_step(FW / TM * TM + s, s);
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

template <int TM>
void launch_gemv_row(const char* op, const float* x, const float* w, float* y, const DwconvParams& p,
                     cudaStream_t stream) {
  check_rung(op, p, x, w, y, gemv_unsupported(p, x, w, y));
  const int tiles_w = ceil_div(p.ow(), kGemvTileW);
  const dim3 grid(unsigned(p.n * ceil_div(p.oh(), gemv_tile_rows<TM>()) * tiles_w),
                  unsigned(ceil_div(p.c / 4, kGemvQuads)));
  with_window_width(p.fw, [&](auto fw) {
    gemv_row_kernel<decltype(fw)::value, TM>
        <<<grid, kGemvThreads, 0, stream>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(w),
                                            reinterpret_cast<float4*>(y), p, p.oh(), p.ow(), tiles_w);
  });
  CNN_CHECK_LAUNCH(op);
}

}  // namespace cnn::teach

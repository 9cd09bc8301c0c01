// Register-tiled row kernels of the CPU depthwise conv, compiled once per ISA: the including file defines
// CNN_DWCONV_CPU_NS (generic / avx2 / avx512), sets the target, and defines in that namespace Block16 / kNv16 (the
// vector type and count that hold 16 channels) and kTile16 / kTile8 / kTile1 (tile widths of 16-, 8- and 1-channel
// blocks). Semantics in dwconv_cpu_impl.h; oracle dwconv_reference.cpp.
#ifndef CNN_DWCONV_CPU_NS
#error "define CNN_DWCONV_CPU_NS before including dwconv_cpu_kernels.h"
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/dwconv/dwconv_cpu_impl.h"

namespace cnn::dwconv::cpu::CNN_DWCONV_CPU_NS {

template <class V>
constexpr int kLanes = int(sizeof(V) / sizeof(float));

#define CNN_DWCONV_INLINE inline __attribute__((always_inline))

template <class V>
CNN_DWCONV_INLINE V load(const float* p) {
  if constexpr (std::is_same_v<V, float>) {
    return *p;
  } else {
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}
template <class V>
CNN_DWCONV_INLINE void store(float* p, V v) {
  if constexpr (std::is_same_v<V, float>) {
    *p = v;
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int ceil_div(int a, int b) { return -floor_div(-a, b); }
inline int clamp_int(int v, int lo, int hi) { return std::min(std::max(v, lo), hi); }

// ---- correlation (forward, backward-data) ---------------------------------------------------------------------

// One tile: TW consecutive outputs (q0..q0+TW-1) of output row r x NV*lanes channels, accumulators in registers.
// Per valid filter row, taps [ja, jb) are in range for every output of the tile (the fast loop streams the input
// row with no checks); the few taps outside that common range are done per output with their own ranges.
template <class V, int NV, int TW>
CNN_DWCONV_INLINE void corr_tile(const CorrPlan& pl, const float* in_img, const float* f, int r, int q0, int i_lo,
                                 int i_hi, float* out) {
  constexpr int kL = kLanes<V>;
  constexpr int64_t fcs = NV * kL;         // column pitch of the packed filter block
  const int64_t cs = pl.c;                // column pitch of in
  const int64_t xs = int64_t(pl.sw) * cs;  // input step between neighbouring outputs
  V acc[TW][NV];
  for (int v = 0; v < NV; ++v) {
    const V b = pl.bias ? load<V>(pl.bias + v * kL) : V{};
#pragma GCC unroll 16
    for (int t = 0; t < TW; ++t) acc[t][v] = b;
  }
  const int col0 = q0 * pl.sw - pl.pw;  // input column of tap 0 for output q0
  const int ja = clamp_int(-col0, 0, pl.fw);
  const int jb = std::max(ja, clamp_int(pl.in_w - col0 - (TW - 1) * pl.sw, 0, pl.fw));
  for (int i = i_lo; i < i_hi; ++i) {
    const float* in_row = in_img + int64_t(r * pl.sh + i - pl.ph) * pl.in_w * cs;
    const float* f_row = f + int64_t(i) * pl.fw * fcs;
    const float* xp = in_row + int64_t(col0 + ja) * cs;
    const float* wp = f_row + int64_t(ja) * fcs;
    for (int j = ja; j < jb; ++j, xp += cs, wp += fcs) {
      V wv[NV];
      for (int v = 0; v < NV; ++v) wv[v] = load<V>(wp + v * kL);
#pragma GCC unroll 16
      for (int t = 0; t < TW; ++t)
        for (int v = 0; v < NV; ++v) acc[t][v] += load<V>(xp + t * xs + v * kL) * wv[v];
    }
    if (ja == 0 && jb == pl.fw) continue;
#pragma GCC unroll 16
    for (int t = 0; t < TW; ++t) {
      const int col = col0 + t * pl.sw;
      const int lo = clamp_int(-col, 0, pl.fw), hi = clamp_int(pl.in_w - col, 0, pl.fw);
      auto taps = [&](int j0, int j1) {
        for (int j = j0; j < j1; ++j)
          for (int v = 0; v < NV; ++v)
            acc[t][v] += load<V>(in_row + int64_t(col + j) * cs + v * kL) * load<V>(f_row + j * fcs + v * kL);
      };
      taps(lo, std::min(ja, hi));
      taps(std::max(jb, lo), hi);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < TW; ++t)
    for (int v = 0; v < NV; ++v) store<V>(out + t * pl.out_col + v * kL, acc[t][v]);
}

// Picks the tile instance for a ragged last tile of `rem` < TW outputs.
template <class V, int NV, int TW>
CNN_DWCONV_INLINE void corr_tail(int rem, const CorrPlan& pl, const float* in_img, const float* f, int r, int q0,
                                 int i_lo, int i_hi, float* out) {
  if constexpr (TW >= 1) {
    if (rem == TW) return corr_tile<V, NV, TW>(pl, in_img, f, r, q0, i_lo, i_hi, out);
    corr_tail<V, NV, TW - 1>(rem, pl, in_img, f, r, q0, i_lo, i_hi, out);
  }
}

// All outputs of row r for one channel block starting at c0.
template <class V, int NV, int TW>
void corr_row_block(const CorrPlan& pl, const float* in_img, int r, int i_lo, int i_hi, int c0, float* out_row) {
  CorrPlan blk = pl;
  if (blk.bias) blk.bias += c0;
  const float* in_c = in_img + c0;
  const float* f_c = pl.f + int64_t(c0) * pl.fh * pl.fw;
  int q0 = 0;
  for (; q0 + TW <= pl.out_w; q0 += TW)
    corr_tile<V, NV, TW>(blk, in_c, f_c, r, q0, i_lo, i_hi, out_row + q0 * pl.out_col + c0);
  if (q0 < pl.out_w)
    corr_tail<V, NV, TW - 1>(pl.out_w - q0, blk, in_c, f_c, r, q0, i_lo, i_hi, out_row + q0 * pl.out_col + c0);
}

void correlate_rows(const CorrPlan& pl, int64_t row_begin, int64_t row_end) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int n = int(row / pl.out_h), r = int(row % pl.out_h);
    const int base = r * pl.sh - pl.ph;  // input row of filter row 0
    const int i_lo = clamp_int(-base, 0, pl.fh), i_hi = std::max(i_lo, clamp_int(pl.in_h - base, 0, pl.fh));
    const float* in_img = pl.in + int64_t(n) * pl.in_h * pl.in_w * pl.c;
    float* out_row = pl.out + n * pl.out_img + r * pl.out_row;
    int c0 = 0;
    for (; c0 + 16 <= pl.c; c0 += 16) corr_row_block<Block16, kNv16, kTile16>(pl, in_img, r, i_lo, i_hi, c0, out_row);
    for (; c0 + 8 <= pl.c; c0 += 8) corr_row_block<V8, 1, kTile8>(pl, in_img, r, i_lo, i_hi, c0, out_row);
    for (; c0 < pl.c; ++c0) corr_row_block<float, 1, kTile1>(pl, in_img, r, i_lo, i_hi, c0, out_row);
  }
}

// ---- backward-filter ------------------------------------------------------------------------------------------

// One tile: TJ consecutive filter columns j0.. of filter row i x NV*lanes channels, accumulated over one output
// row. The roles of the forward tile swap: dy is the shared operand and x slides. Output columns [oa, ob) are in
// range for every column of the tile; the rest are done per column with their own ranges.
template <class V, int NV, int TJ>
CNN_DWCONV_INLINE void bfc_tile(const DwconvParams& p, const float* x_row, const float* dy_row, float* dw_row,
                                int j0) {
  constexpr int kL = kLanes<V>;
  const int64_t cs = p.c;
  const int64_t xs = int64_t(p.stride_w) * cs;
  const int ow_n = p.ow();
  V acc[TJ][NV];
#pragma GCC unroll 16
  for (int t = 0; t < TJ; ++t)
    for (int v = 0; v < NV; ++v) acc[t][v] = load<V>(dw_row + (j0 + t) * cs + v * kL);
  // Input column of (ow, t) is ow*sW + j0 + t - pL; it must lie in [0, IW).
  const int oa = clamp_int(ceil_div(p.pad_left - j0, p.stride_w), 0, ow_n);
  const int ob = std::max(oa, clamp_int(floor_div(p.iw - j0 - TJ + p.pad_left, p.stride_w) + 1, 0, ow_n));
  const float* xp = x_row + (int64_t(oa) * p.stride_w + j0 - p.pad_left) * cs;
  const float* dp = dy_row + int64_t(oa) * cs;
  for (int ow = oa; ow < ob; ++ow, xp += xs, dp += cs) {
    V d[NV];
    for (int v = 0; v < NV; ++v) d[v] = load<V>(dp + v * kL);
#pragma GCC unroll 16
    for (int t = 0; t < TJ; ++t)
      for (int v = 0; v < NV; ++v) acc[t][v] += load<V>(xp + t * cs + v * kL) * d[v];
  }
  if (oa > 0 || ob < ow_n) {
#pragma GCC unroll 16
    for (int t = 0; t < TJ; ++t) {
      const int j = j0 + t;
      const int lo = clamp_int(ceil_div(p.pad_left - j, p.stride_w), 0, ow_n);
      const int hi = clamp_int(floor_div(p.iw - 1 - j + p.pad_left, p.stride_w) + 1, 0, ow_n);
      auto cols = [&](int o0, int o1) {
        for (int ow = o0; ow < o1; ++ow)
          for (int v = 0; v < NV; ++v)
            acc[t][v] += load<V>(x_row + (int64_t(ow) * p.stride_w + j - p.pad_left) * cs + v * kL) *
                         load<V>(dy_row + int64_t(ow) * cs + v * kL);
      };
      cols(lo, std::min(oa, hi));
      cols(std::max(ob, lo), hi);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < TJ; ++t)
    for (int v = 0; v < NV; ++v) store<V>(dw_row + (j0 + t) * cs + v * kL, acc[t][v]);
}

template <class V, int NV, int TJ>
CNN_DWCONV_INLINE void bfc_tail(int rem, const DwconvParams& p, const float* x_row, const float* dy_row,
                                float* dw_row, int j0) {
  if constexpr (TJ >= 1) {
    if (rem == TJ) return bfc_tile<V, NV, TJ>(p, x_row, dy_row, dw_row, j0);
    bfc_tail<V, NV, TJ - 1>(rem, p, x_row, dy_row, dw_row, j0);
  }
}

// Filter row i of one channel block (x_row, dy_row, dw_row already offset to channel c0).
template <class V, int NV, int TJ>
void bfc_row_block(const DwconvParams& p, const float* x_row, const float* dy_row, float* dw_row) {
  int j0 = 0;
  for (; j0 + TJ <= p.fw; j0 += TJ) bfc_tile<V, NV, TJ>(p, x_row, dy_row, dw_row, j0);
  if (j0 < p.fw) bfc_tail<V, NV, TJ - 1>(p.fw - j0, p, x_row, dy_row, dw_row, j0);
}

void bfc_rows(const BfcPlan& pl, float* dw, int64_t row_begin, int64_t row_end, int c_begin, int c_end) {
  const DwconvParams& p = pl.p;
  const int oh_n = p.oh(), ow_n = p.ow();
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int n = int(row / oh_n), oh = int(row % oh_n);
    const int base = oh * p.stride_h - p.pad_top;
    const int i_lo = clamp_int(-base, 0, p.fh), i_hi = std::max(i_lo, clamp_int(p.ih - base, 0, p.fh));
    const float* dy_row = pl.dy + (int64_t(n) * oh_n + oh) * ow_n * p.c;
    for (int i = i_lo; i < i_hi; ++i) {
      const float* x_row = pl.x + (int64_t(n) * p.ih + base + i) * p.iw * p.c;
      float* dw_row = dw + int64_t(i) * p.fw * p.c;
      int c0 = c_begin;
      for (; c0 + 16 <= c_end; c0 += 16)
        bfc_row_block<Block16, kNv16, kTile16>(p, x_row + c0, dy_row + c0, dw_row + c0);
      for (; c0 + 8 <= c_end; c0 += 8) bfc_row_block<V8, 1, kTile8>(p, x_row + c0, dy_row + c0, dw_row + c0);
      for (; c0 < c_end; ++c0) bfc_row_block<float, 1, kTile1>(p, x_row + c0, dy_row + c0, dw_row + c0);
    }
  }
}

#undef CNN_DWCONV_INLINE

}  // namespace cnn::dwconv::cpu::CNN_DWCONV_CPU_NS

// Register-tiled row kernels of the CPU depthwise conv over packed input rows, compiled once per ISA: the including
// file defines CNN_DWCONV_CPU_NS (generic / avx2 / avx512), sets the target, and first defines in that namespace
// Block16 / kNv16 (vector type and count holding 16 channels), kTile16 / kTile8 / kTile1 (tile widths of 16-,
// 8- and 1-channel blocks), kPairTile16 (two-row tile width, 0 = none) and kBfcTile16 (backward-filter columns
// per 16-channel tile). Semantics: cpu/impl.h.
#ifndef CNN_DWCONV_CPU_NS
#error "define CNN_DWCONV_CPU_NS before including kernels/dwconv/cpu/kernels.h"
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/dwconv/cpu/impl.h"

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
CNN_DWCONV_INLINE void store(float* p, const V& v) {
  if constexpr (std::is_same_v<V, float>) {
    *p = v;
  } else {
    std::memcpy(p, &v, sizeof v);
  }
}

CNN_DWCONV_INLINE int min_int(int a, int b) { return a < b ? a : b; }
CNN_DWCONV_INLINE int max_int(int a, int b) { return a > b ? a : b; }
CNN_DWCONV_INLINE int clamp_int(int v, int lo, int hi) { return min_int(max_int(v, lo), hi); }

// ---- packed input rows ----------------------------------------------------------------------------------------

// Copies channels [0, L) of input row `src` (column pitch cs, in_w columns) into the padded phase-major layout.
template <int L>
void pack_row(const float* src, int64_t cs, int in_w, const RowLayout& lay, float* dst) {
  for (int ph = 0; ph < lay.s; ++ph) {
    float* d = dst + int64_t(ph) * lay.q * L;
    for (int u = ph; u < lay.width; u += lay.s, d += L) {
      const int col = u - lay.lead;
      if (col >= 0 && col < in_w) {
        const float* sp = src + int64_t(col) * cs;
        for (int l = 0; l < L; ++l) d[l] = sp[l];
      } else {
        for (int l = 0; l < L; ++l) d[l] = 0.0f;
      }
    }
  }
}

// Returns the packed copy of row `ih` of image `n` (channel block at `src_img`), packing it into its ring slot
// unless the slot already holds it. The rows of one output row are consecutive, so they never share a slot.
template <int L>
const float* ring_row(RowRing& ring, const RowLayout& lay, const float* src_img, int64_t cs, int in_w, int in_h,
                      int n, int ih) {
  const int64_t key = int64_t(n) * in_h + ih;
  const int slot = int(key % ring.slots);
  float* dst = ring.rows + int64_t(slot) * lay.s * lay.q * L;
  if (ring.keys[slot] != key) {
    pack_row<L>(src_img + int64_t(ih) * in_w * cs, cs, in_w, lay, dst);
    ring.keys[slot] = key;
  }
  return dst;
}

CNN_DWCONV_INLINE void reset(RowRing& ring) {
  for (int k = 0; k < ring.slots; ++k) ring.keys[k] = -1;
}

// Prefetches the channel block at src_img in input rows [ih_b, ih_e) (those that exist), the share of columns
// that belongs to output columns [q0, q1) of out_w. The row kernels call it tile by tile for the rows that the next
// output rows will pack, so that those rows come from DRAM while this row's multiply-adds run instead of stalling
// pack_row. Both ends of each block are touched: a block that is not 64-byte aligned spans two lines.
template <int L>
CNN_DWCONV_INLINE void prefetch_rows(const float* src_img, int64_t cs, int in_w, int in_h, int ih_b, int ih_e, int q0,
                                     int q1, int out_w) {
  const int col_b = int(int64_t(q0) * in_w / out_w), col_e = q1 >= out_w ? in_w : int(int64_t(q1) * in_w / out_w);
  for (int ih = max_int(ih_b, 0); ih < min_int(ih_e, in_h); ++ih) {
    const float* sp = src_img + (int64_t(ih) * in_w + col_b) * cs;
    for (int col = col_b; col < col_e; ++col, sp += cs) {
      __builtin_prefetch(sp);
      if constexpr (L > 1) __builtin_prefetch(sp + L - 1);
    }
  }
}

// ---- correlation (forward, backward-data) ---------------------------------------------------------------------

// One tile: TW consecutive outputs q0.. of one output row x one channel block of L = NV*lanes channels, the
// accumulators in registers. rows[i] is filter row i's packed input row (valid for i in [i_lo, i_hi)); f is the
// block's packed filter (fh, fw, L). Within a phase the taps step one packed column, so every load below has a
// compile-time offset from two running pointers and there are no bounds checks.
template <class V, int NV, int TW>
CNN_DWCONV_INLINE void corr_tile(const float* const* rows, int i_lo, int i_hi, const float* f, int fw,
                                 const RowLayout& lay, int q0, const float* bias, float* out, int64_t out_col) {
  constexpr int kL = kLanes<V>, L = NV * kL;
  V acc[TW][NV];
  for (int v = 0; v < NV; ++v) {
    const V b = bias ? load<V>(bias + v * kL) : V{};
#pragma GCC unroll 32
    for (int t = 0; t < TW; ++t) acc[t][v] = b;
  }
  const int phases = min_int(lay.s, fw);
  for (int i = i_lo; i < i_hi; ++i) {
    for (int ph = 0; ph < phases; ++ph) {
      const float* xp = rows[i] + (int64_t(ph) * lay.q + q0) * L;
      const float* wp = f + (int64_t(i) * fw + ph) * L;
      for (int j = ph; j < fw; j += lay.s, xp += L, wp += int64_t(lay.s) * L) {
        V wv[NV];
        for (int v = 0; v < NV; ++v) wv[v] = load<V>(wp + v * kL);
#pragma GCC unroll 32
        for (int t = 0; t < TW; ++t)
          for (int v = 0; v < NV; ++v) acc[t][v] += load<V>(xp + t * L + v * kL) * wv[v];
      }
    }
  }
#pragma GCC unroll 32
  for (int t = 0; t < TW; ++t)
    for (int v = 0; v < NV; ++v) store<V>(out + t * out_col + v * kL, acc[t][v]);
}

// Picks the tile instance for a ragged last tile of `rem` < TW outputs.
template <class V, int NV, int TW, class... Args>
CNN_DWCONV_INLINE void corr_tail(int rem, Args... args) {
  if constexpr (TW >= 1) {
    if (rem == TW) return corr_tile<V, NV, TW>(args...);
    corr_tail<V, NV, TW - 1>(rem, args...);
  }
}

// Two-row tile: TW outputs q0.. of output rows r (acc0) and r + sh (acc1) x one channel block. Input row k
// (relative to row r's first input row) meets filter row k in row r and k - sh in row r + sh, so each input load
// feeds two multiply-adds: (TW + 2*NV) loads per 2*TW*NV FMAs instead of (TW + NV) per TW*NV.
// rows[k] is valid for k in [k_lo, k_hi); row r uses filter rows [lo0, hi0), row r + sh uses [lo1, hi1).
template <class V, int NV, int TW, bool A, bool B>
CNN_DWCONV_INLINE void pair_taps(V (&acc0)[TW][NV], V (&acc1)[TW][NV], const float* row, int k, int sh,
                                 const float* f, int fw, const RowLayout& lay, int q0) {
  constexpr int kL = kLanes<V>, L = NV * kL;
  const int phases = min_int(lay.s, fw);
  for (int ph = 0; ph < phases; ++ph) {
    const float* xp = row + (int64_t(ph) * lay.q + q0) * L;
    const float* wa = A ? f + (int64_t(k) * fw + ph) * L : nullptr;
    const float* wb = B ? f + (int64_t(k - sh) * fw + ph) * L : nullptr;
    const int64_t wstep = int64_t(lay.s) * L;
    for (int j = ph; j < fw; j += lay.s, xp += L) {
      V va[NV], vb[NV];
      for (int v = 0; v < NV; ++v) {
        if constexpr (A) va[v] = load<V>(wa + v * kL);
        if constexpr (B) vb[v] = load<V>(wb + v * kL);
      }
      if constexpr (A) wa += wstep;
      if constexpr (B) wb += wstep;
#pragma GCC unroll 32
      for (int t = 0; t < TW; ++t)
        for (int v = 0; v < NV; ++v) {
          const V x = load<V>(xp + t * L + v * kL);
          if constexpr (A) acc0[t][v] += x * va[v];
          if constexpr (B) acc1[t][v] += x * vb[v];
        }
    }
  }
}

template <class V, int NV, int TW>
CNN_DWCONV_INLINE void corr_tile2(const float* const* rows, int k_lo, int k_hi, int lo0, int hi0, int lo1, int hi1,
                                  int sh, const float* f, int fw, const RowLayout& lay, int q0, const float* bias,
                                  float* out0, float* out1, int64_t out_col) {
  constexpr int kL = kLanes<V>;
  V acc0[TW][NV], acc1[TW][NV];
  for (int v = 0; v < NV; ++v) {
    const V b = bias ? load<V>(bias + v * kL) : V{};
#pragma GCC unroll 32
    for (int t = 0; t < TW; ++t) acc0[t][v] = b, acc1[t][v] = b;
  }
  for (int k = k_lo; k < k_hi; ++k) {
    const bool a = k >= lo0 && k < hi0, b = k - sh >= lo1 && k - sh < hi1;
    if (a && b)
      pair_taps<V, NV, TW, true, true>(acc0, acc1, rows[k], k, sh, f, fw, lay, q0);
    else if (a)
      pair_taps<V, NV, TW, true, false>(acc0, acc1, rows[k], k, sh, f, fw, lay, q0);
    else if (b)
      pair_taps<V, NV, TW, false, true>(acc0, acc1, rows[k], k, sh, f, fw, lay, q0);
  }
#pragma GCC unroll 32
  for (int t = 0; t < TW; ++t)
    for (int v = 0; v < NV; ++v) {
      store<V>(out0 + t * out_col + v * kL, acc0[t][v]);
      store<V>(out1 + t * out_col + v * kL, acc1[t][v]);
    }
}

template <class V, int NV, int TW, class... Args>
CNN_DWCONV_INLINE void corr_tail2(int rem, Args... args) {
  if constexpr (TW >= 1) {
    if (rem == TW) return corr_tile2<V, NV, TW>(args...);
    corr_tail2<V, NV, TW - 1>(rem, args...);
  }
}

// Output rows r and r + 1 of image n (both exist) through two-row tiles of width TW2.
template <class V, int NV, int TW2>
void corr_row_pair(const CorrPlan& pl, RowRing& ring, const RowLayout& lay, const float* f, const float* bias, int n,
                   int r, int c0) {
  constexpr int L = NV * kLanes<V>;
  const int sh = pl.sh, base = r * sh - pl.ph;  // input row of filter row 0 for output row r
  const int lo0 = clamp_int(-base, 0, pl.fh), hi0 = max_int(lo0, clamp_int(pl.in_h - base, 0, pl.fh));
  const int lo1 = clamp_int(-base - sh, 0, pl.fh), hi1 = max_int(lo1, clamp_int(pl.in_h - base - sh, 0, pl.fh));
  const int k_lo = hi0 > lo0 ? (hi1 > lo1 ? min_int(lo0, lo1 + sh) : lo0) : lo1 + sh;
  const int k_hi = hi1 > lo1 ? (hi0 > lo0 ? max_int(hi0, hi1 + sh) : hi1 + sh) : hi0;
  const float** rows = ring.row_of_tap;
  const float* src_img = pl.in + int64_t(n) * pl.in_h * pl.in_w * pl.c + c0;
  for (int k = k_lo; k < k_hi; ++k)
    if ((k >= lo0 && k < hi0) || (k - sh >= lo1 && k - sh < hi1))
      rows[k] = ring_row<L>(ring, lay, src_img, pl.c, pl.in_w, pl.in_h, n, base + k);
  float* out0 = pl.out + n * pl.out_img + r * pl.out_row + c0;
  float* out1 = out0 + pl.out_row;
  // The next pair of output rows packs input rows [base + k_hi, base + k_hi + 2*sh).
  const int pf_b = base + k_hi, pf_e = base + k_hi + 2 * sh;
  int q0 = 0;
  for (; q0 + TW2 <= pl.out_w; q0 += TW2) {
    prefetch_rows<L>(src_img, pl.c, pl.in_w, pl.in_h, pf_b, pf_e, q0, q0 + TW2, pl.out_w);
    corr_tile2<V, NV, TW2>(rows, k_lo, k_hi, lo0, hi0, lo1, hi1, sh, f, pl.fw, lay, q0, bias,
                           out0 + q0 * pl.out_col, out1 + q0 * pl.out_col, pl.out_col);
  }
  if (q0 < pl.out_w) {
    prefetch_rows<L>(src_img, pl.c, pl.in_w, pl.in_h, pf_b, pf_e, q0, pl.out_w, pl.out_w);
    corr_tail2<V, NV, TW2 - 1>(pl.out_w - q0, static_cast<const float* const*>(rows), k_lo, k_hi, lo0, hi0, lo1,
                               hi1, sh, f, pl.fw, lay, q0, bias, out0 + q0 * pl.out_col, out1 + q0 * pl.out_col,
                               pl.out_col);
  }
}

// Rows [row_begin, row_end) of the flattened (n, r) output axis for the channel block at c0; with TW2 > 0, rows
// of one image go in pairs through the two-row tiles (the ring then holds fh + sh rows).
template <class V, int NV, int TW, int TW2 = 0>
void corr_block_rows(const CorrPlan& pl, RowRing ring, int64_t row_begin, int64_t row_end, int c0) {
  constexpr int L = NV * kLanes<V>;
  const RowLayout lay = row_layout(pl.sw, pl.pw, pl.out_w, pl.fw);
  const float* f = pl.f + int64_t(c0) * pl.fh * pl.fw;
  const float* bias = pl.bias ? pl.bias + c0 : nullptr;
  const float** rows = ring.row_of_tap;
  reset(ring);
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int n = int(row / pl.out_h), r = int(row % pl.out_h);
    if constexpr (TW2 > 0) {
      if (row + 1 < row_end && r + 1 < pl.out_h) {
        corr_row_pair<V, NV, TW2>(pl, ring, lay, f, bias, n, r, c0);
        ++row;
        continue;
      }
    }
    const int base = r * pl.sh - pl.ph;  // input row of filter row 0
    const int i_lo = clamp_int(-base, 0, pl.fh), i_hi = max_int(i_lo, clamp_int(pl.in_h - base, 0, pl.fh));
    const float* src_img = pl.in + int64_t(n) * pl.in_h * pl.in_w * pl.c + c0;
    for (int i = i_lo; i < i_hi; ++i) rows[i] = ring_row<L>(ring, lay, src_img, pl.c, pl.in_w, pl.in_h, n, base + i);
    float* out = pl.out + n * pl.out_img + r * pl.out_row + c0;
    const int pf_b = base + i_hi, pf_e = base + i_hi + pl.sh;  // rows the next output row packs
    int q0 = 0;
    for (; q0 + TW <= pl.out_w; q0 += TW) {
      prefetch_rows<L>(src_img, pl.c, pl.in_w, pl.in_h, pf_b, pf_e, q0, q0 + TW, pl.out_w);
      corr_tile<V, NV, TW>(rows, i_lo, i_hi, f, pl.fw, lay, q0, bias, out + q0 * pl.out_col, pl.out_col);
    }
    if (q0 < pl.out_w) {
      prefetch_rows<L>(src_img, pl.c, pl.in_w, pl.in_h, pf_b, pf_e, q0, pl.out_w, pl.out_w);
      corr_tail<V, NV, TW - 1>(pl.out_w - q0, static_cast<const float* const*>(rows), i_lo, i_hi, f, pl.fw, lay,
                               q0, bias, out + q0 * pl.out_col, pl.out_col);
    }
  }
}

void correlate_rows(const CorrPlan& pl, RowRing ring, int64_t row_begin, int64_t row_end) {
  for (int c0 = 0, l = 0; c0 < pl.c; c0 += l) {
    l = channel_block(c0, pl.c);
    if (l == 16)
      corr_block_rows<Block16, kNv16, kTile16, kPairTile16>(pl, ring, row_begin, row_end, c0);
    else if (l == 8)
      corr_block_rows<V8, 1, kTile8>(pl, ring, row_begin, row_end, c0);
    else
      corr_block_rows<float, 1, kTile1>(pl, ring, row_begin, row_end, c0);
  }
}

// ---- backward-filter ------------------------------------------------------------------------------------------

// One tile: TJ filter columns j = ph + s*(m0 + t) of one phase of filter row i x one channel block, accumulated
// over one output row. The roles of the forward tile swap: dy is the shared operand and the packed x row slides.
// KS interleaved streams over ow keep enough independent accumulators (FMA latency x 2 pipes) when TJ is below
// the full tile width TT, within the same register budget.
template <class V, int NV, int TJ, int TT>
CNN_DWCONV_INLINE void bfc_tile(const float* xp, const float* dy_row, int64_t dy_col, int ow_n, float* dwp,
                                int64_t dw_step) {
  constexpr int kL = kLanes<V>, L = NV * kL;
  constexpr int KS = TT / TJ >= 4 ? 4 : TT / TJ >= 2 ? TT / TJ : 1;
  V acc[KS][TJ][NV];
#pragma GCC unroll 32
  for (int t = 0; t < TJ; ++t)
    for (int v = 0; v < NV; ++v) {
      acc[0][t][v] = load<V>(dwp + t * dw_step + v * kL);
      for (int k = 1; k < KS; ++k) acc[k][t][v] = V{};
    }
  int ow = 0;
  for (; ow + KS <= ow_n; ow += KS, xp += KS * L, dy_row += KS * dy_col) {
#pragma GCC unroll 4
    for (int k = 0; k < KS; ++k) {
      V d[NV];
      for (int v = 0; v < NV; ++v) d[v] = load<V>(dy_row + k * dy_col + v * kL);
#pragma GCC unroll 32
      for (int t = 0; t < TJ; ++t)
        for (int v = 0; v < NV; ++v) acc[k][t][v] += load<V>(xp + (k + t) * L + v * kL) * d[v];
    }
  }
  for (; ow < ow_n; ++ow, xp += L, dy_row += dy_col) {
    V d[NV];
    for (int v = 0; v < NV; ++v) d[v] = load<V>(dy_row + v * kL);
#pragma GCC unroll 32
    for (int t = 0; t < TJ; ++t)
      for (int v = 0; v < NV; ++v) acc[0][t][v] += load<V>(xp + t * L + v * kL) * d[v];
  }
#pragma GCC unroll 32
  for (int t = 0; t < TJ; ++t)
    for (int v = 0; v < NV; ++v) {
      for (int k = 1; k < KS; ++k) acc[0][t][v] += acc[k][t][v];
      store<V>(dwp + t * dw_step + v * kL, acc[0][t][v]);
    }
}

template <class V, int NV, int TJ, int TT, class... Args>
CNN_DWCONV_INLINE void bfc_tail(int rem, Args... args) {
  if constexpr (TJ >= 1) {
    if (rem == TJ) return bfc_tile<V, NV, TJ, TT>(args...);
    bfc_tail<V, NV, TJ - 1, TT>(rem, args...);
  }
}

// Rows [row_begin, row_end) of the flattened (n, oh) axis for the channel block at c0, added into dw. Tiles hold
// TJ filter columns; a register budget of TT > TJ columns turns into interleaved ow streams (see bfc_tile).
template <class V, int NV, int TJ, int TT = TJ>
void bfc_block_rows(const BfcPlan& pl, RowRing ring, float* dw, int64_t row_begin, int64_t row_end, int c0) {
  constexpr int L = NV * kLanes<V>;
  const DwconvParams& p = pl.p;
  const int oh_n = p.oh(), ow_n = p.ow(), s = p.stride_w;
  const RowLayout lay = row_layout(s, p.pad_left, ow_n, p.fw);
  const float* x_c = pl.x + c0;
  reset(ring);
  // The block's dW accumulates in a private (fh, fw, L) copy: consecutive taps 64 bytes apart instead of a C-float
  // pitch (which keeps dW stores 4 KB-aliased with the C-pitched dy loads for some buffer placements).
  const int64_t taps = int64_t(p.fh) * p.fw;
  const AlignedFloats acc(taps * L);
  for (int64_t t = 0; t < taps; ++t)
    for (int l = 0; l < L; ++l) acc.data()[t * L + l] = dw[t * p.c + c0 + l];
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int n = int(row / oh_n), oh = int(row % oh_n);
    const int base = oh * p.stride_h - p.pad_top;
    const int i_lo = clamp_int(-base, 0, p.fh), i_hi = max_int(i_lo, clamp_int(p.ih - base, 0, p.fh));
    const float* dy_row = pl.dy + (int64_t(n) * oh_n + oh) * ow_n * p.c + c0;
    const float* src_img = x_c + int64_t(n) * p.ih * p.iw * p.c;
    const float* dy_img = pl.dy + int64_t(n) * oh_n * ow_n * p.c + c0;
    for (int i = i_lo; i < i_hi; ++i) {
      // A share of the x row and the dy row that the next output row reads, per filter row.
      prefetch_rows<L>(src_img, p.c, p.iw, p.ih, base + i_hi, base + i_hi + p.stride_h, i - i_lo, i - i_lo + 1,
                       i_hi - i_lo);
      prefetch_rows<L>(dy_img, p.c, ow_n, oh_n, oh + 1, oh + 2, i - i_lo, i - i_lo + 1, i_hi - i_lo);
      const float* xr = ring_row<L>(ring, lay, src_img, p.c, p.iw, p.ih, n, base + i);
      for (int ph = 0; ph < min_int(s, p.fw); ++ph) {
        const int cols = (p.fw - ph + s - 1) / s;  // filter columns ph, ph + s, ...
        float* dw_ph = acc.data() + (int64_t(i) * p.fw + ph) * L;
        const int64_t dw_step = int64_t(s) * L;
        const float* x_ph = xr + int64_t(ph) * lay.q * L;
        int m0 = 0;
        for (; m0 + TJ <= cols; m0 += TJ)
          bfc_tile<V, NV, TJ, TT>(x_ph + m0 * L, dy_row, p.c, ow_n, dw_ph + m0 * dw_step, dw_step);
        if (m0 < cols)
          bfc_tail<V, NV, TJ - 1, TT>(cols - m0, x_ph + m0 * L, dy_row, int64_t(p.c), ow_n, dw_ph + m0 * dw_step,
                                  dw_step);
      }
    }
  }
  for (int64_t t = 0; t < taps; ++t)
    for (int l = 0; l < L; ++l) dw[t * p.c + c0 + l] = acc.data()[t * L + l];
}

void bfc_rows(const BfcPlan& pl, RowRing ring, float* dw, int64_t row_begin, int64_t row_end, int c_begin,
              int c_end) {
  for (int c0 = c_begin, l = 0; c0 < c_end; c0 += l) {
    l = channel_block(c0, pl.p.c);
    if (l == 16)
      bfc_block_rows<Block16, kNv16, kBfcTile16, kTile16>(pl, ring, dw, row_begin, row_end, c0);
    else if (l == 8)
      bfc_block_rows<V8, 1, kTile8>(pl, ring, dw, row_begin, row_end, c0);
    else
      bfc_block_rows<float, 1, kTile1>(pl, ring, dw, row_begin, row_end, c0);
  }
}

#undef CNN_DWCONV_INLINE

}  // namespace cnn::dwconv::cpu::CNN_DWCONV_CPU_NS

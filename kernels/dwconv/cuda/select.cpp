// The selection table of the Flash-DWC CUDA kernels (select.h). Each threshold carries its reason; the numbers
// behind them are the results pages docs/perf/dwconv-fp32-h200.md (FP32) and docs/perf/dwconv-fp16-h200.md (FP16),
// and the kernels' design notes docs/dwconv-fp32.md, docs/dwconv-fp16.md, docs/dwconv-bfc.md.
#include "kernels/dwconv/cuda/select.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

#include "core/error.h"

namespace cnn::dwconv {

namespace {

bool stride1(const DwconvParams& p) { return p.stride_h == 1 && p.stride_w == 1; }

// ---- Thresholds -------------------------------------------------------------------------------------------------

// FP32 3x3 and smaller: the row-sliding kernel loads each input row once per thread for all FH output rows it
// feeds, which beats the GEMV kernel's per-row reloads where a filter row has 3 taps (FP32 page, 3x3 rows).
bool f32_vslide_wins(const ConvGeometry& g) { return vslide_f32_supports(g, nullptr, nullptr, nullptr, nullptr); }

// The TMA-fed CUDA-core kernel where it beat the kernel it replaced: FP32 5x5 (over GEMV), FP16 3x3 and 5x5 (over
// the FP16 register kernel); FP32 3x3 keeps the row-sliding kernel (both pages, 3x3 and 5x5 rows).
bool tma_wins(const ConvGeometry& g, bool f16) {
  const bool square = g.fh == g.fw;
  const bool measured = f16 ? square && (g.fw == 3 || g.fw == 5) : square && g.fw == 5;
  return measured && (f16 ? tma_cc_f16_supports(g) : tma_cc_f32_supports(g));
}

// The TMA kernel's configuration. FP16: 8-byte lanes (twice the warps per SM of 16-byte lanes), two output rows per
// thread from FW 4 (FH + 1 input rows read per two output rows), 16-column tiles at 3x3 (one 18x18 window per 16x16
// outputs re-reads fewer halo columns; 5x5 ran slower on them), and two stages with two rows per thread (three blocks
// per SM instead of two). FP32: 16-byte lanes below FW 5, 8-byte from 5, one row, 8 columns, three stages.
TmaCcConfig tma_config(const ConvGeometry& g, bool f16, const Overrides& o) {
  TmaCcConfig cfg;
  cfg.lane_bytes = o.tma_lane ? o.tma_lane : (f16 || g.fw >= 5 ? 8 : 16);
  cfg.rows_per_thread = o.tma_rows ? o.tma_rows : (f16 && cfg.lane_bytes == 8 && g.fw >= 4 ? 2 : 1);
  cfg.tile_cols = o.tma_cols ? o.tma_cols : (f16 && g.fw == 3 ? 16 : 8);
  cfg.stages = o.tma_stages ? o.tma_stages : (f16 && cfg.rows_per_thread == 2 ? 2 : 3);
  // A wide window that does not fit shared memory (e.g. tall filters) falls back to 8 columns, which fit wherever
  // the kernel supports the shape; a forced width is checked at launch instead.
  if (!o.tma_cols && !tma_cc_config_fits(g, cfg, f16)) cfg.tile_cols = 8;
  return cfg;
}

// GEMV configuration (FP32 page, GEMV rows): TM = 16 doubles the FMAs per loaded input and per filter load, which
// compute-bound widths need on Hopper; TM = 8 suits narrow maps and width 5. A 2*TM register ring wins when one ring
// block covers the whole row (17 < FW <= 32 with TM = 16). Filters up to 17 wide are staged whole when they fit.
GemvConfig gemv_config(const ConvGeometry& g) {
  GemvConfig cfg;
  if (g.out_w < 16 || g.fw == 5) {
    cfg.tm = 8, cfg.prefetch = true;
  } else {
    cfg.tm = 16;
    cfg.prefetch = g.fw > 17 && g.fw <= 32;
  }
  cfg.whole_filter = g.fw <= 17 && gemv_whole_filter_fits(g.fh, g.fw);
  return cfg;
}

// FP16 filters of more than 3 taps per row go to tensor cores (at 3x3 both are memory-bound and CUDA cores are as
// fast); FW 4-5 shapes the TMA kernel does not take run the FP16 register kernel (FP16 page).
constexpr int kF16CudaCoreMaxFw = kCcMaxFw;
// The ring kernel reuses input blocks held in registers across filter fragments (fewer shared-memory bytes per MMA
// than Flash-DWC-T) up to FW 64, where its register ring still fits; wider filters take T-theta.
constexpr int kF16RingMaxFw = kTcRingMaxFw;
// Channel pairs in the MMA's k from FW 9: no byte permutes or band masks, taps rounded to 4 instead of 8; at FW <= 8
// the pairs form issues more MMAs per row than 8-tap fragments and loses (FP16 page, 7x7 and 9x9 rows).
constexpr int kRingPairsMinFw = 9;

int ring_q(int out_w) { return out_w >= 24 ? 4 : (out_w >= 12 ? 2 : 1); }      // the widest tile the row fills
// Tall FH x 5 strips (SLaK's FK x 5) hold 5 FH taps per output, enough work for the tensor cores; the ring kernel
// runs them on the maps' transposed view, where they are 5 x FH strips on the channel-pairs MMAs, once a column
// fills half its widest tile. H200, FP16 forward in one run, transposed view / ring kernel on the maps / register
// kernel: 51x5 at 64x64x64x124 0.177 / 0.347 / 0.684 ms, 49x5 at 64x32x32x249 0.126 / 0.200 / 0.285, 47x5 at
// 64x16x16x499 0.084 / 0.113 / 0.098. On 8-row maps the register kernel stays: 13x5 at 64x8x8x998 0.049 ms, where a
// 5x13 strip on the ring kernel took 0.060 (docs/perf/dwconv-slak-h200.md). From 9 rows up (the ring kernel's 15x5
// beat the register kernel's 9x5 on wide rows); 7x5 and below keep the register kernel.
bool f16_tall_strip_ring_wins(const ConvGeometry& g) {
  return g.fw == 5 && g.fh >= 9 && g.fh <= kF16RingMaxFw && ring_q(g.out_h) >= 2;
}
// The FP16 forward-style kernel where the vector kernels can run (C % 8 == 0, 16-byte aligned tensors, stride 1).
Kernel aligned_kernel_f16(const ConvGeometry& g) {
  return tma_wins(g, true)                                         ? Kernel::fwd_tma_cc
         : g.fw <= kF16CudaCoreMaxFw && !f16_tall_strip_ring_wins(g) ? Kernel::fwd_cc_f16
         : g.fw <= kF16RingMaxFw                                     ? Kernel::fwd_tc_ring
                                                                     : Kernel::fwd_tc;
}
// Whether the ring kernel runs on the maps' transposed view (a tall strip the table sends to it; a forced ring kernel
// runs on the maps as they are), that view, and its MMA policy there.
bool ring_transposed(const ConvGeometry& g, const Overrides& o) { return !o.fwd && f16_tall_strip_ring_wins(g); }
ConvGeometry ring_view(const ConvGeometry& g, const Overrides& o) {
  return ring_transposed(g, o) ? transposed_geometry(g) : g;
}
RingMma ring_mma(const ConvGeometry& view, const Overrides& o) {
  return o.ring_mma ? *o.ring_mma : (view.fw >= kRingPairsMinFw ? RingMma::pairs : RingMma::taps);
}
int tc_theta(int out_w) { return out_w >= 32 ? 4 : (out_w >= 16 ? 2 : 1); }    // the widest tile the row fills
int cc_groups(int out_w) { return out_w >= 32 ? 4 : (out_w >= 16 ? 2 : 1); }   // groups of 8 outputs the row fills

// FP16 backward-filter: stride-1 filters of at most 9 taps keep the strip kernel (it beat the register-tile kernel
// at 3x3 and lost from 5x5 up); the register-tile kernel takes larger and strided filters (C % 8, aligned); the
// row-warp kernel takes what neither can (FP16 page, backward-filter rows).
constexpr int kBfcStripMaxTaps = 9;

// Channel padding: a channel count the vector kernels cannot take (C % 8 FP16, C % 4 FP32; SLaK's 124 / 249 / 499 /
// 998) otherwise falls to the direct kernel, one channel per thread. Padding costs a copy of each input and output
// (two or three map-sized memory passes) and CP / C more work, far less than the direct kernel's loss at any filter
// the fast kernels take; strided forward-style ops stay direct (no fast kernel takes them). Backward-filter does not
// pad where the small-filter kernel is the choice (bfc_small_wins: any C); FP16 backward-filter otherwise pads only
// where the kernel for C % 4 == 0 (the strip kernel, unpadded) is not the table's choice.
int vector_width(DType dtype) { return dtype == DType::f16 ? 8 : 4; }

// The small-filter backward-filter kernel (FP32 and FP16, any C unpadded) at stride 1, filters up to 5x5, FP32
// accumulation (ha's FP16 runs are implemented by the other kernels only) and a channel count the vector kernels take
// only on padded copies (C % 8 FP16, C % 4 FP32: SLaK's 249, 499; FP32 998). There it skips the copies and runs
// 1.2-2.3x faster than the padded plans at 3x3 and 5x5. Not where the register-tile kernel runs unpadded on narrow
// copies (FP16 at an even C beyond 3x3: 124 and 998 at 5x5, where bfc_small runs 0.73x and 0.98x of it) nor at an
// aligned C, where bfc_tile is as fast or faster (5x5 1.2-1.5x, small maps included); 7x7 ties.
constexpr int kBfcSmallDefaultMaxF = 5;
bool bfc_small_wins(DType dtype, const DwconvParams& p, BfcAccum accum, int align) {
  const bool f16 = dtype == DType::f16;
  if (!bfc_small_supports(p, f16) || p.fh > kBfcSmallDefaultMaxF || p.fw > kBfcSmallDefaultMaxF) return false;
  if (f16 && accum == BfcAccum::ha) return false;
  const bool tile_unpadded = f16 && p.fh * p.fw > kBfcStripMaxTaps && bfc_tile_copy_bytes(p.c, true, align) != 0;
  return p.c % vector_width(dtype) != 0 && !tile_unpadded;
}

// Backward-filter with FP32 accumulation at such channel counts, 5x5, 7x7, 9x9, 13x5 and 5x13 filters (3x3 at odd
// C and on maps of at most 8 rows), maps whose rows are whole 16-byte chunks and 16-byte aligned tensors: the
// span-staged kernel, unpadded, ahead of bfc_small. H200, SLaK-T's maps (64x64x64x124 .. 64x8x8x998). FP16: at least
// 1.4x bfc_small at 249 and 499 channels 5x5 and 7x7, at least 1.16x at 3x3, 1.15x at 998 3x3 (8x8); at least 1.24x
// the register-tile kernel at 998 5x5 and 1.07x at 124. At 124 3x3 (64x64) bfc_small's two-channel lanes stay (the
// span kernel: 0.94x). FP32 (249, 499, 998): 1.09-1.14x bfc_small at 3x3, 1.17-1.30x at 5x5, 1.55-1.9x at 7x7 (the
// padded register-tile kernel there). 9x9 / 13x5 / 5x13 at 249, 499 and 998 against the register-tile kernel (padded,
// or FP16's narrow copies at 998): 1.4-2.4x FP16, 1.7-2.5x FP32. At an aligned C the register-tile and tiled kernels
// stay (FP16 0.82-1.10x; FP32 at 124 0.80-0.92x).
constexpr int kBfcSpan3x3MaxRows = 8;
bool bfc_span_wins(DType dtype, const DwconvParams& p, BfcAccum accum, int align) {
  const bool f16 = dtype == DType::f16;
  if ((f16 && accum != BfcAccum::fp32) || p.c % vector_width(dtype) == 0) return false;
  return bfc_span_supports(p, align, f16 ? 2 : 4) && (p.fh >= 5 || p.c % 2 != 0 || p.oh() <= kBfcSpan3x3MaxRows);
}

// Small stride-1 forward-style ops at such channel counts run unpadded instead (FP16 at C % 8 == 4 on the CUDA-core
// kernel's 4-half lanes from 5x5 up, other counts on the tiled direct kernel): a padded plan's copies of the input
// and the output cost more than the convolution, and these kernels read each map once per block. Up to 5x5
// everywhere; up to 81 taps (9x9, 13x5, 5x13) in FP32, whose padded plans run CUDA-core kernels too (the tiled
// kernel 1.7-2.7x faster up to 7x7 at SLaK-T's 249, 499 and 998 channels, 1.3-2.6x at 9x9 / 13x5 / 5x13 on 8x8 to
// 64x64 maps; 13x13 0.92-1.20x), and in FP16 on maps of at most 16 rows (7x7: 1.2x at 499 on 16x16, 2.3x at 998 on
// 8x8; 9x9 / 13x5 / 5x13: 1.5-1.7x at 998, 0.99-1.10x at 499). FP16's padded plans keep larger maps from 7x7 up (the
// tensor-core kernels 1.07x the tiled one at 249 on 32x32 at 7x7, 1.2-1.3x at 9x9 / 13x5 / 5x13), whose work grows
// with the taps while the copies do not. (A tiled direct backward-filter ran 1.4-2.1x slower than the padded
// register-tile kernel at SLaK's widths; backward-filter's unpadded kernels are bfc_small and bfc_span, above.)
constexpr int kDirectTileMaxUnpaddedF = 5, kDirectTileMaxUnpaddedTaps = 81, kDirectTileMaxUnpaddedF16Rows = 16;
bool direct_tile_instead_of_padding(DType dtype, const DwconvParams& p) {
  const bool larger = dtype == DType::f32 || p.oh() <= kDirectTileMaxUnpaddedF16Rows;
  const bool fits = larger ? p.fh * p.fw <= kDirectTileMaxUnpaddedTaps
                           : p.fh <= kDirectTileMaxUnpaddedF && p.fw <= kDirectTileMaxUnpaddedF;
  return stride1(p) && fits && direct_tile_supports(forward_geometry(p)) &&
         direct_tile_supports(backward_data_geometry_stride1(p));
}

// FP16 at C % 8 == 4 (SLaK's 124), stride 1, 8-byte aligned tensors: the CUDA-core kernel runs on 4-half lanes, and
// the ring kernel, which stages 4-channel groups with 8-byte copies anyway, only narrows its output stores. Where the
// ring kernel is the aligned choice it runs such C unpadded.
bool half4(DType dtype, const DwconvParams& p, int align) {
  return dtype == DType::f16 && stride1(p) && cc_f16_lane_halves(p.c) == 4 && align >= 8;
}

// Whether the FP16 forward-style kernel on g is the ring kernel: the forced one, else the aligned table's.
bool ring_is_choice(const ConvGeometry& g, const Overrides& o) {
  return (o.fwd ? *o.fwd : aligned_kernel_f16(g)) == Kernel::fwd_tc_ring;
}

// FP16 at C % 4 == 2 (SLaK's 998), stride 1, 4-byte aligned tensors: the ring kernel's channel-pairs policy stages
// input rows per channel pair anyway, and at such C its filter rows and output per pair too. Where the ring kernel
// is the aligned choice and runs that policy (its view's FW >= 9: 5x13 and 9x9 at 998) it runs such C unpadded.
bool ring_pairs_unpadded(DType dtype, const DwconvParams& p, const ConvGeometry& g, int align, const Overrides& o) {
  if (dtype != DType::f16 || !stride1(p) || p.c % 4 != 2 || align < 4) return false;
  return ring_is_choice(g, o) && ring_mma(ring_view(g, o), o) == RingMma::pairs;
}

// The tensor-core backward-filter kernel stages 4-channel groups with 8-byte copies: it runs C % 4 == 0 with 8-byte
// aligned tensors as they are, other C on copies padded to a multiple of 8.
bool bfc_tc_unpadded(const DwconvParams& p, int align) { return p.c % 4 == 0 && align >= 8; }

// FP16 backward-filter with FP32 accumulation on the tensor-core kernel for strips: at most 8 rows and more than 16
// columns, or the transpose (SLaK's FK x 5 and 5 x FK), on maps of at least 16 x 16 outputs. A/B against the
// register-tile kernel in one call (H100): 51x5 / 5x51 at 64x64x64x124 2.6x / 2.5x (0.82 -> 0.31 ms), 49x5 / 5x49 at
// 64x32x32x249 1.8x, 47x5 / 5x47 at 64x16x16x499 1.6-1.8x (both on copies padded to 256 / 504 channels). Not below
// (forced, H200): 13x5 / 5x13 on 8x8 maps run 0.31x of bfc_span and square filters up to 7x7 0.4-0.95x of their
// kernels (few of the MMAs' 16 x 8 outputs in use, each dY row's staging and barrier spread over little work).
// Where the kernel cannot take the tensors as they are, padded_channels gives it padded copies if it takes those.
constexpr int kBfcTcMinCols = 17, kBfcTcMinMap = 16;
bool bfc_tc_shape_wins(DType dtype, const DwconvParams& p, BfcAccum accum) {
  return dtype == DType::f16 && accum == BfcAccum::fp32 && stride1(p) && std::min(p.fh, p.fw) <= kBfcTcMaxRows &&
         std::max(p.fh, p.fw) >= kBfcTcMinCols && p.oh() >= kBfcTcMinMap && p.ow() >= kBfcTcMinMap;
}

int padded_channels(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, int align, const Overrides& o) {
  const int vec = vector_width(dtype);
  if (p.c % vec == 0 || (o.pad && !*o.pad)) return 0;
  if (op == DwconvOp::backward_filter && (o.bfc == Kernel::bfc_small || o.bfc == Kernel::bfc_span))
    return 0;  // any C, even with pad=on
  const int cp = (p.c + vec - 1) / vec * vec;
  if (o.pad) return op == DwconvOp::backward_filter || stride1(p) ? cp : 0;  // pad=on
  if (op == DwconvOp::backward_filter) {
    if (o.bfc && *o.bfc == Kernel::bfc_rowwarp_f16) return 0;
    if (o.bfc == Kernel::bfc_tc) return bfc_tc_unpadded(p, align) ? 0 : cp;
    if (!o.bfc && bfc_tc_shape_wins(dtype, p, accum)) {
      if (bfc_tc_f16_supports(p, align)) return 0;
      DwconvParams padded = p;
      padded.c = cp;
      if (bfc_tc_f16_supports(padded, 16)) return cp;
    }
    if (!o.bfc && (bfc_span_wins(dtype, p, accum, align) || bfc_small_wins(dtype, p, accum, align))) return 0;
    const bool strip_unpadded = dtype == DType::f16 && stride1(p) && p.c % 4 == 0 && align >= 8;
    const bool strip_wins = o.bfc ? *o.bfc == Kernel::bfc_strip_f16 : p.fh * p.fw <= kBfcStripMaxTaps;
    if (strip_unpadded && strip_wins) return 0;
    // The FP16 register-tile kernel stages an even C with 8- or 4-byte copies: unpadded where it is the choice.
    const bool tile_unpadded = dtype == DType::f16 && bfc_tile_copy_bytes(p.c, true, align) != 0;
    const bool tile_wins = o.bfc ? *o.bfc == Kernel::bfc_tile : !stride1(p) || p.fh * p.fw > kBfcStripMaxTaps;
    return tile_unpadded && tile_wins ? 0 : cp;
  }
  if (!stride1(p) || (o.fwd && (*o.fwd == Kernel::direct || *o.fwd == Kernel::direct_tile))) return 0;
  const ConvGeometry g = op == DwconvOp::forward ? forward_geometry(p) : backward_data_geometry_stride1(p);
  if (half4(dtype, p, align) && ring_is_choice(g, o)) return 0;
  if (ring_pairs_unpadded(dtype, p, g, align, o)) return 0;
  return o.fwd || !direct_tile_instead_of_padding(dtype, p) ? cp : 0;
}

// Padded forward-style plans whose kernel writes the C-channel output itself from the padded inputs, which saves the
// output's padded copy and its crop: the ring kernel (its stores take any C), and the FP32 GEMV kernel on strips (a
// side of at most 5 taps: SLaK's FK x 5 and 5 x FK), whose C-channel stores (one float per store, a warp's 32 lanes
// covering one position's 32 channels) ran 1.04-1.10x the padded output and its crop at 64x32x32x249 and
// 64x16x16x499 (47x5 to 5x49, forward and backward-data; H200, A/B in one call). At 15x15 they ran 0.93-0.97x: the
// crop stays there.
constexpr int kGemvUnpaddedMaxSide = 5;
bool writes_unpadded(const Plan& plan) {
  return plan.kernel == Kernel::fwd_tc_ring ||
         (plan.kernel == Kernel::fwd_gemv && std::min(plan.g.fh, plan.g.fw) <= kGemvUnpaddedMaxSide);
}

// ---- Selection --------------------------------------------------------------------------------------------------

// A forced kernel that cannot run the shape: one line naming the override.
void check_forced(bool ok, const char* kernel, const char* needs, const DwconvParams& p) {
  CNN_CHECK(ok, "dwconv kernel override ", kernel, ": needs ", needs, ", got ", p.str());
}

// The FP32 forward-style kernel: the forced one, checked against the shape, else the table's choice where the fast
// kernels can run (`eligible`).
Kernel forward_kernel_f32(const ConvGeometry& g, bool eligible, const DwconvParams& p, const Overrides& o) {
  if (!o.fwd) {
    if (!eligible) return direct_tile_supports(g) ? Kernel::direct_tile : Kernel::direct;
    return tma_wins(g, false) ? Kernel::fwd_tma_cc : f32_vslide_wins(g) ? Kernel::fwd_vslide : Kernel::fwd_gemv;
  }
  const Kernel k = *o.fwd;
  check_forced(k != Kernel::direct_tile || direct_tile_supports(g), "direct_tile",
               "stride 1, a filter of up to 13 rows and 1-7, 9, 11 or 13 columns and < 2^31 elements per image", p);
  check_forced(k == Kernel::direct || k == Kernel::direct_tile || eligible, kernel_name(k),
               "stride 1, C % 4 == 0 and aligned tensors", p);
  check_forced(k != Kernel::fwd_vslide || f32_vslide_wins(g), "fwd_vslide", "a filter up to 3x3", p);
  check_forced(k != Kernel::fwd_tma_cc || tma_cc_f32_supports(g), "fwd_tma_cc", "sm_90 and FW <= 5", p);
  check_forced(k == Kernel::direct || k == Kernel::direct_tile || k == Kernel::fwd_vslide || k == Kernel::fwd_tma_cc ||
                   k == Kernel::fwd_gemv,
               kernel_name(k), "FP16 data", p);
  return k;
}

// The same for FP16 data. `half4` (above): the ring kernel where it is the aligned choice, else from 5x5 up the
// CUDA-core kernel on 4-half lanes (same FMAs per load as its 8-half lanes, no shared-memory staging, against the
// tiled direct kernel's scalar lanes: 0.94x at 124 5x5 and 0.66x at 7x7 on 64x64; at 3x3 the tiled kernel 1.10x).
// `ring_pairs`: ring_pairs_unpadded (above), except where the tiled direct kernel runs instead of padding (`tile`,
// direct_tile_instead_of_padding: 1.5-1.6x the ring kernel at 998 5x13 and 9x9 on 8x8).
Kernel forward_kernel_f16(const ConvGeometry& g, bool eligible, bool half4, bool ring_pairs, bool tile,
                          const DwconvParams& p, const Overrides& o) {
  if (!o.fwd) {
    if (eligible) return aligned_kernel_f16(g);
    if (ring_pairs && tile) return Kernel::direct_tile;
    if ((half4 || ring_pairs) && aligned_kernel_f16(g) == Kernel::fwd_tc_ring) return Kernel::fwd_tc_ring;
    if (half4 && g.fw <= kCcMaxFw && (g.fh > 3 || g.fw > 3)) return Kernel::fwd_cc_f16;
    return direct_tile_supports(g) ? Kernel::direct_tile : Kernel::direct;
  }
  const Kernel k = *o.fwd;
  check_forced(k != Kernel::direct_tile || direct_tile_supports(g), "direct_tile",
               "stride 1, a filter of up to 13 rows and 1-7, 9, 11 or 13 columns and < 2^31 elements per image", p);
  check_forced(k == Kernel::direct || k == Kernel::direct_tile || eligible ||
                   (half4 && (k == Kernel::fwd_cc_f16 || k == Kernel::fwd_tc_ring)) ||
                   (ring_pairs && k == Kernel::fwd_tc_ring),
               kernel_name(k), "stride 1, C % 8 == 0 and aligned tensors", p);
  check_forced(k != Kernel::fwd_tma_cc || tma_cc_f16_supports(g), "fwd_tma_cc", "sm_90 and FW <= 5", p);
  check_forced(k != Kernel::fwd_cc_f16 || g.fw <= kCcMaxFw, "fwd_cc_f16", "FW <= 5", p);
  check_forced(k != Kernel::fwd_tc_ring || g.fw <= kTcRingMaxFw, "fwd_tc_ring", "FW <= 64", p);
  check_forced(k != Kernel::fwd_vslide && k != Kernel::fwd_gemv, kernel_name(k), "FP32 data", p);
  return k;
}

// The chosen kernel's configuration for geometry g; `align` as for select.
void configure(Plan& plan, bool f16, int align, const Overrides& o) {
  const ConvGeometry& g = plan.g;
  switch (plan.kernel) {
    case Kernel::fwd_tma_cc: plan.tma = tma_config(g, f16, o); break;
    case Kernel::fwd_gemv: plan.gemv = o.gemv ? *o.gemv : gemv_config(g); break;
    case Kernel::fwd_cc_f16:
      plan.cc_groups = o.cc_groups ? o.cc_groups : std::min(cc_groups(g.out_w), cc_f16_max_groups(g.c));
      break;
    case Kernel::fwd_tc_ring: {
      plan.ring_transposed = ring_transposed(g, o);
      const ConvGeometry v = ring_view(g, o);
      plan.ring_q = o.ring_q ? o.ring_q : ring_q(v.out_w);
      plan.ring_mma = ring_mma(v, o);
      break;
    }
    case Kernel::fwd_tc: plan.tc_theta = tc_theta(g.out_w); break;
    case Kernel::direct_tile:
      plan.tile_lane_channels = direct_tile_lane_channels(g.c, f16, align);
      plan.tile_w = o.tile_cols ? o.tile_cols : direct_tile_width(g, f16);
      break;
    default: break;
  }
}

Plan forward_style(DwconvOp op, DType dtype, const DwconvParams& p, int align, const Overrides& o) {
  const bool f16 = dtype == DType::f16;
  const bool vec = p.c % vector_width(dtype) == 0 && align >= 16;
  const bool eligible = stride1(p) && vec;
  Plan plan;
  plan.vec = vec;
  if (op == DwconvOp::backward_data && !stride1(p)) {  // the strided gather: direct only
    if (o.fwd) check_forced(*o.fwd == Kernel::direct, kernel_name(*o.fwd), "stride 1 for backward-data", p);
    return plan;
  }
  plan.g = op == DwconvOp::forward ? forward_geometry(p) : backward_data_geometry_stride1(p);
  plan.kernel = f16 ? forward_kernel_f16(plan.g, eligible, half4(dtype, p, align),
                                         ring_pairs_unpadded(dtype, p, plan.g, align, o),
                                         direct_tile_instead_of_padding(dtype, p), p, o)
                    : forward_kernel_f32(plan.g, eligible, p, o);
  configure(plan, f16, align, o);
  if (plan.kernel == Kernel::fwd_cc_f16)
    check_forced(plan.cc_groups <= cc_f16_max_groups(p.c), "fwd_cc_f16 with cc_groups=4", "C % 8 == 0", p);
  if (plan.kernel == Kernel::direct_tile)
    check_forced(direct_tile_width_fits(plan.g, f16, plan.tile_w), "direct_tile with tile_cols",
                 "a tile window within a block's shared memory", p);
  return plan;
}

Plan backward_filter(DType dtype, const DwconvParams& p, BfcAccum accum, int align, const Overrides& o) {
  const bool f16 = dtype == DType::f16;
  Plan plan;
  plan.kernel = Kernel::bfc_tile;
  plan.bfc = BfcForce{o.bfc_tile.r, o.bfc_tile.tm, 0};
  const bool forced_tc = o.bfc == Kernel::bfc_tc;
  if (forced_tc) {
    check_forced(f16 && bfc_tc_f16_supports(p, align), "bfc_tc",
                 "FP16 data, stride 1, a filter of at most 8 rows and 64 columns (or the transpose) and maps whose "
                 "rows fit a block's shared memory",
                 p);
    CNN_CHECK(accum == BfcAccum::fp32, "dwconv kernel override bfc_tc: needs fp32 accumulation, got ha for ", p.str());
  }
  if (forced_tc || (!o.bfc && bfc_tc_shape_wins(dtype, p, accum) && bfc_tc_f16_supports(p, align))) {
    plan.kernel = Kernel::bfc_tc;
    return plan;
  }
  const bool forced_span = o.bfc == Kernel::bfc_span;
  if (forced_span) {
    check_forced(
        bfc_span_supports(p, align, f16 ? 2 : 4), "bfc_span",
        f16 ? "stride 1, a 3x3, 5x5, 7x7, 9x9, 13x5 or 5x13 filter, W * C % 8 == 0 and 16-byte aligned tensors"
            : "stride 1, a 3x3, 5x5, 7x7, 9x9, 13x5 or 5x13 filter, W * C % 4 == 0 and 16-byte aligned tensors",
        p);
    CNN_CHECK(accum == BfcAccum::fp32, "dwconv kernel override bfc_span: needs fp32 accumulation, got ha for ",
              p.str());
  }
  if (forced_span || (!o.bfc && bfc_span_wins(dtype, p, accum, align))) {
    plan.kernel = Kernel::bfc_span;
    return plan;
  }
  const bool forced_small = o.bfc == Kernel::bfc_small;
  if (forced_small) {
    check_forced(bfc_small_supports(p, f16), "bfc_small", "stride 1 and a filter up to 7x7", p);
    CNN_CHECK(!f16 || accum == BfcAccum::fp32, "dwconv kernel override bfc_small: needs fp32 accumulation (ha's ",
              "FP16 runs are bfc_tile's, bfc_strip_f16's and bfc_rowwarp_f16's), got ha for ", p.str());
  }
  if (forced_small || (!o.bfc && bfc_small_wins(dtype, p, accum, align))) {
    plan.kernel = Kernel::bfc_small;
    plan.small_lane_channels = bfc_small_lane_channels(p.c, f16, align);
    return plan;
  }
  if (!f16) {
    CNN_CHECK(!o.bfc || *o.bfc == Kernel::bfc_tile, "dwconv kernel override ", kernel_name(*o.bfc),
              ": FP32 backward-filter runs bfc_tile or bfc_small");
    return plan;
  }
  // The kernels' own requirements (bfc_tile_f16_supports, bfc_f16_tiled_supports) in terms of the alignment.
  const bool tile_ok = bfc_tile_copy_bytes(p.c, true, align) != 0;
  const bool strip_ok = stride1(p) && p.c % 4 == 0 && align >= 8;
  if (o.bfc) {
    plan.kernel = *o.bfc;
    check_forced(plan.kernel != Kernel::bfc_tile || tile_ok, "bfc_tile", "an even C and aligned tensors", p);
    check_forced(plan.kernel != Kernel::bfc_strip_f16 || strip_ok, "bfc_strip_f16",
                 "stride 1, C % 4 == 0 and 8-byte aligned tensors", p);
    return plan;
  }
  if (tile_ok && (!stride1(p) || p.fh * p.fw > kBfcStripMaxTaps)) return plan;
  plan.kernel = strip_ok ? Kernel::bfc_strip_f16 : Kernel::bfc_rowwarp_f16;
  return plan;
}

}  // namespace

const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::direct: return "direct";
    case Kernel::direct_tile: return "direct_tile";
    case Kernel::fwd_vslide: return "fwd_vslide";
    case Kernel::fwd_tma_cc: return "fwd_tma_cc";
    case Kernel::fwd_gemv: return "fwd_gemv";
    case Kernel::fwd_cc_f16: return "fwd_cc_f16";
    case Kernel::fwd_tc_ring: return "fwd_tc_ring";
    case Kernel::fwd_tc: return "fwd_tc";
    case Kernel::bfc_tile: return "bfc_tile";
    case Kernel::bfc_strip_f16: return "bfc_strip_f16";
    case Kernel::bfc_rowwarp_f16: return "bfc_rowwarp_f16";
    case Kernel::bfc_small: return "bfc_small";
    case Kernel::bfc_span: return "bfc_span";
    case Kernel::bfc_tc:
      return "bfc_tc";
  }
  return "unknown";
}

Plan select(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, int align, const Overrides& o) {
  CNN_CHECK(dtype == DType::f32 || dtype == DType::f16, "dwconv select: expected dtype f32 or f16, got ",
            dtype_name(dtype));
  CNN_CHECK(accum == BfcAccum::fp32 || accum == BfcAccum::ha, "dwconv select: expected accumulation fp32 or ha, got ",
            static_cast<int>(accum));
  if (const int cp = padded_channels(op, dtype, p, accum, align, o)) {
    DwconvParams q = p;
    q.c = cp;
    constexpr int kScratchAlign = 16;  // the padded copies live in the caller's scratch (DwconvScratch)
    Plan plan = op == DwconvOp::backward_filter ? backward_filter(dtype, q, accum, kScratchAlign, o)
                                                : forward_style(op, dtype, q, kScratchAlign, o);
    plan.padded_c = cp;
    plan.writes_unpadded = op != DwconvOp::backward_filter && writes_unpadded(plan);
    return plan;
  }
  if (op == DwconvOp::backward_filter) return backward_filter(dtype, p, accum, align, o);
  return forward_style(op, dtype, p, align, o);
}

std::string plan_name(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, const Plan& plan) {
  if (plan.padded_c > 0) {
    DwconvParams q = p;
    q.c = plan.padded_c;
    Plan unpadded = plan;
    unpadded.padded_c = 0;
    return str_cat(plan_name(op, dtype, q, accum, unpadded), " (channels padded ", p.c, "->", plan.padded_c, ")");
  }
  const bool f16 = dtype == DType::f16;
  const char* name = op == DwconvOp::forward ? "fwd" : op == DwconvOp::backward_data ? "bdc" : "bfc";
  const ConvGeometry& g = plan.g;
  switch (plan.kernel) {
    case Kernel::fwd_vslide:
      return str_cat(name, " cuda-core vslide F=", g.fh, "x", g.fw, " TM=4 rows=16");
    case Kernel::fwd_tma_cc:
      return f16 ? tma_cc_f16_describe(g, plan.tma) : tma_cc_f32_describe(g, plan.tma);
    case Kernel::fwd_gemv:
      return dwconv_gemv_path_name(g, plan.gemv);
    case Kernel::fwd_cc_f16:
      return str_cat(name, " f16 cuda-core FW=", g.fw, " TM=8 BN=64", cc_f16_lane_halves(g.c) == 4 ? " lane=4h" : "",
                     " tile=", 4 * cc_f16_max_groups(g.c) / plan.cc_groups, "x", 8 * plan.cc_groups);
    case Kernel::fwd_tc_ring: {
      const ConvGeometry v = plan.ring_transposed ? transposed_geometry(g) : g;
      const char* view = plan.ring_transposed ? " transposed" : "";
      if (plan.ring_mma == RingMma::pairs)
        return str_cat(name, " f16 tc-ring mma=pairs tile=16x", 8 * plan.ring_q, " BN=16 offsets/group=",
                       tc_ring_pairs_nd(v.fw), view);
      return str_cat(name, " f16 tc-ring tile=16x", 8 * plan.ring_q, " BN=16 frags/row=", (v.fw + 7) / 8, view);
    }
    case Kernel::fwd_tc:
      return str_cat(name, " f16 tc T", plan.tc_theta, " tile=", 16 / plan.tc_theta, "x", 8 * plan.tc_theta,
                     " BN=64 frags/row=", (g.fw + 8) / 9);
    case Kernel::bfc_tile:
      return f16 ? bfc_tile_f16_path_name(p, accum, plan.bfc) : bfc_tile_path_name(p, plan.bfc);
    case Kernel::bfc_strip_f16:
      return dwconv_bfc_f16_tiled_path_name(p, accum, BfcF16TiledForce{});
    case Kernel::bfc_rowwarp_f16:
      return dwconv_bfc_f16_path_name(p, accum, BfcF16Force{});
    case Kernel::bfc_small:
      return dwconv_bfc_small_path_name(p, f16, plan.small_lane_channels, BfcSmallForce{});
    case Kernel::bfc_span:
      return dwconv_bfc_span_path_name(p, f16);
    case Kernel::bfc_tc:
      return dwconv_bfc_tc_f16_path_name(p);
    case Kernel::direct_tile:
      return str_cat(name, f16 ? " f16" : "", " direct tile", op == DwconvOp::backward_data ? " flipped" : "",
                     " F=", g.fh, "x", g.fw, " tile=", direct_tile_height(f16, g.out_h), "x", plan.tile_w, " lanes=32x",
                     plan.tile_lane_channels, " (C % ", f16 ? 8 : 4, " = ", p.c % (f16 ? 8 : 4), ")");
    case Kernel::direct:
      break;
  }
  const int vec = plan.vec ? (f16 ? 8 : 4) : 1;
  if (op == DwconvOp::backward_data && !stride1(p))
    return str_cat("bdc", f16 ? " f16" : "", " direct strided gather vec=", vec);
  const char* why = !stride1(p) ? "stride > 1" : p.c % (f16 ? 8 : 4) ? (f16 ? "C % 8 != 0" : "C % 4 != 0")
                    : plan.vec ? "forced" : "unaligned pointers";
  return str_cat(name, f16 ? " f16" : "", " direct", op == DwconvOp::backward_data ? " flipped" : "", " vec=", vec,
                 " (", why, ")");
}

void log_plan(DwconvOp op, DType dtype, const DwconvParams& p, BfcAccum accum, const Plan& plan) {
  if (!overrides().verbose) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  const char* name = op == DwconvOp::forward ? "fwd" : op == DwconvOp::backward_data ? "bdc" : "bfc";
  const std::string line = str_cat(name, " ", dtype_name(dtype), " ", p.str(), " -> ", kernel_name(plan.kernel), ": ",
                                   plan_name(op, dtype, p, accum, plan));
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(line).second) std::fprintf(stderr, "dwconv: %s\n", line.c_str());
}

std::string dwconv_path_name(DwconvOp op, const DwconvParams& p, DType dtype, BfcAccum accum) {
  p.validate("dwconv_path_name");
  const Plan plan = select(op, dtype, p, accum, 16, overrides());
  return plan_name(op, dtype, p, accum, plan);
}

std::string dwconv_path_name(DwconvOp op, const DwconvParams& p) {
  return dwconv_path_name(op, p, DType::f32, BfcAccum::fp32);
}

}  // namespace cnn::dwconv

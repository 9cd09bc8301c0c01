// FP16 depthwise backward-filter at stride 1, any FH x FW, FP32 or hybrid (ha) accumulation, FP32 dW:
// dW[i,j,c] = sum_{n,oh,ow} X[n, oh+i-pT, ow+j-pL, c] * dY[n,oh,ow,c]; X, dY (N,H,W,C) FP16, dW (FH,FW,C) FP32.
// Reference: dwconv_backward_filter_reference (FP64) and its ha emulation dwconv_backward_filter_reference_f16.
//
// Design (why these numbers; docs/dwconv-fp16.md, backward-filter):
// - Thread = 4 consecutive channels (one 8-byte load: 32 lanes = 256 contiguous bytes) x a tile of nr filter rows x
//   TW filter columns, for one dY row at a time. It slides along the row: per dY column one dY load and, per filter
//   row, one new X column enter a window (a ring of TW columns whose slots are compile-time constants once the
//   column loop is unrolled by a multiple of TW), then nr*TW*4 FMAs. fp32: the window holds widened floats (each
//   loaded value converted once per (thread, dY row)); ha: it holds the half2 pairs as loaded and HFMA2 builds FP16
//   partials that enter the FP32 accumulators at the end of each run (below).
// - Tiles: FW <= 7 runs one column tile of TW = FW; wider filters cut FW into column tiles of one width TW in 4..7
//   (the one with the fewest padded columns, ties to the wider: 9 -> 5, 13 -> 7, 17 -> 6, 31 and 51 -> 4), the
//   last tile's columns past FW computed and dropped (13: 7.7%, 51: 2%). Rows per thread nr <= kRtMax(TW) as
//   before (TW 4: 2 rows). Registers: window + accumulators = 8 * nr * TW per thread in both modes (fp32: 4 + 4
//   floats per tap column; ha: 2 half2 window + 2 half2 partials + 4 FP32 sums), <= 80; ptxas -v in the docs.
// - Block (<= 512 threads, one per SM at ~100-120 registers: 16 warps). At most kSharedTiles tiles: the whole
//   filter in one block = tiles x R row slots x G channel groups (R >= 4 consecutive dY rows per step, so X rows
//   shared by neighbouring dY rows meet in L1), block sums in shared memory, one global atomic per (tap, channel).
//   More tiles (13x13 has 26, 51x51 338): R = 1 and the block holds T <= 512/G consecutive tiles of the row-major
//   tile list (a band of filter rows across all column tiles), each (tap, channel) owned by exactly one thread, which
//   adds its sum with one global atomic: still one per (tap, channel) per block, no shared memory. The band's
//   threads read the same dY row and overlapping X rows, so within a block step the re-reads hit L1; per step the
//   block pulls 1 dY row + (band rows) X rows of (strip + FW - 1) columns from L2.
// - Traffic, 13x13 (TW 7: 26 tiles, 2 blocks of 13 = 6.5 filter rows each, G = 32): per block step and channel
//   group L2 -> SM brings 8 B x (OW dY + ~7 (OW + 12) X) for 338 * OW useful FMAs: 0.25 B/FMA at OW = 32
//   (128x32x32x1024), 0.20 at OW = 128 (128^4). 51x51 (TW 4, nr 2: 338 tiles, 22 blocks of 16 = 4-6 filter rows):
//   8 B x (OW + ~5 (OW + 50)) for 512 * OW FMAs: 0.22 and 0.12 B/FMA. At 20 TFLOP/s that is 1.2-2.5 TB/s, an upper
//   bound (the next dY row needs all but one of these X rows again, which may still sit in L1). DRAM sees X and dY
//   ~1-2x (0.5-1 GB on either map, ~0.3 ms) against 2.3-4.5 ms (13x13) and 35-70 ms (51x51) of FMAs at 20 TFLOP/s:
//   compute/issue-bound. L1: (nr + 1) 8-byte loads per nr*TW*4 FMAs (0.57-0.75 B/FMA) against ~128 B/clk/SM.
// - Issue: fp32 per step 2 LDG + 8 conversions + 28 FFMA + ~8 index/ring instructions (TW 7; TW 4 nr 2: 3 + 12 +
//   32 + ~8): FFMA ~55-60% of the issue slots, a ceiling of ~37 TFLOP/s at 13-16 warps per SM (one 416-512-thread
//   block, ~120 registers). ha: 14-16 HFMA2 replace 28-32 FFMA and the conversions vanish, plus a flush of nr*TW*2
//   conversions and 4 FADD per tap every 32 columns. Latency: with so few warps each thread must keep loads in
//   flight, so slide_row issues all loads of an unrolled block of TW steps before its FMAs (written step by step,
//   ptxas interleaves them and most cycles stall on L1TEX). Results: docs/perf/dwconv-fp16-h200.md.
// - ha runs: the host emulation adds an FP16 partial per run of dY columns [32k, 32k+32) of a dY row. A thread walks
//   its strip of a dY row in ascending columns and flushes its partials after column 32k+31 and after the strip's
//   last column; strips start at multiples of 32 in ha mode (the planner rounds the strip width up to a multiple of
//   kBfcHaRun, a forced one must be), so every run lies inside one strip and one thread forms it in the emulation's
//   order. Padded X columns enter the window as zeros: HFMA2(0, dy, p) = p, the emulation's skipped step.
// - Split: N*OH dY rows in Z chunks of whole block steps (Z fills the resident block slots best: whole waves), OW in
//   strips only when rows are too few for two waves of resident blocks (occupancy API).
#include <cuda_fp16.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

constexpr int kCpt = 4;           // channels per thread: one 8-byte load of 4 halves
constexpr int kBlockMax = 512;    // threads per block at most: T * R * G
constexpr int kMaxGroups = 32;    // channel groups per slice: 128 channels, one warp-wide 256-byte load
constexpr int kMinRows = 4;       // row slots per block step the planner aims for (X reuse in L1 across dY rows)
constexpr int kMinStrip = 32;     // narrowest column strip the planner cuts: window refill (TW-1)/strip <= 19%
constexpr int kSharedTiles = 16;  // most tiles held by one block with R >= kMinRows (block sums in shared memory)
constexpr int kTwMax = 7;         // widest column tile
constexpr int kTwMinWide = 4;     // narrowest column tile for FW > kTwMax
// Most filter rows per thread for a tile width: nr * TW <= 10 (window + accumulators <= 80 registers), lowered where
// ptxas spilled at 128 registers (TW 1: 7 -> 5, TW 2: 4 -> 3, TW 6: 1 with the loads-first blocks). TW 5 takes 2 rows
// (128 registers, no spills), faster than 1-row tiles at 5x5 and 9x9 in both accumulation modes.
constexpr int kRtMax[kTwMax + 1] = {0, 5, 3, 3, 2, 2, 1, 1};
static_assert((kBfcHaRun & (kBfcHaRun - 1)) == 0 && kMinStrip % kBfcHaRun == 0, "ha runs tile the strips");

struct TiledArgs {
  const __half* __restrict__ x;   // (N, IH, IW, C)
  const __half* __restrict__ dy;  // (N, OH, OW, C)
  float* __restrict__ dw;         // (FH, FW, C), zeroed; one atomic add per (tap, channel) per block
  int ih, iw, c, oh, ow, fh, fw, pt, pl;
  int ng, nct;                    // row groups (fg: rows [fg*FH/ng, (fg+1)*FH/ng)), column tiles of TW columns
  int tiles_block, n_fblocks;     // T tiles per block (tile = fg * nct + ct, row-major), blocks over the tiles
  int groups, g_slice, n_slices;  // channel groups of kCpt: in all, per slice, slices
  int rows_step;                  // R consecutive dY rows per block step (block = T * R * G threads)
  int strip, n_strips;            // dY column strips of `strip` columns (a multiple of kBfcHaRun in ha mode)
  int rows, steps, z;             // N*OH dY rows = `steps` block steps (the last one partial) in z chunks
};

// What one block covers: one channel slice, dY columns [s0, s0 + count), dY rows (g = n*OH + oh) [g_begin, g_end).
struct BlockWork {
  int slice, s0, count, g_begin, g_end;
};

// One dY row as a thread sees it: its nr X rows (ih = oh + i_lo + k - pT) and the dY row, both already offset to
// the thread's channel; xc0 = s0 + j0 - pL is the X column of the tile's first tap at the strip's first dY column.
template <int kNr>
struct RowPtrs {
  int x[kNr];    // element offset of X row ih at channel c (< x_elems < 2^31: 32 bits, one register per row)
  bool ok[kNr];  // 0 <= ih < IH; else the row reads as zeros (padding)
  const __half* dy;
  int xc0;
};

// One column of the thread's 4 channels as the mode keeps it: widened floats (fp32) or two half2 pairs (ha).
template <bool kHa>
struct Lane {
  float v[kCpt];
};
template <>
struct Lane<true> {
  __half2 v[kCpt / 2];
};

// Widens (fp32) or keeps (ha) the 4 halves of one 8-byte load; all-zero bits read as zeros in both modes.
__device__ __forceinline__ void to_lane(uint2 u, Lane<false>& out) {
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  out.v[0] = lo.x, out.v[1] = lo.y, out.v[2] = hi.x, out.v[3] = hi.y;
}
__device__ __forceinline__ void to_lane(uint2 u, Lane<true>& out) {
  out.v[0] = *reinterpret_cast<const __half2*>(&u.x);
  out.v[1] = *reinterpret_cast<const __half2*>(&u.y);
}

// A thread's sums: FP32 per (row, column, channel); ha adds the FP16 partials of the current run (unused in fp32).
template <int kTw, int kNr, bool kHa>
struct TileSums {
  float acc[kNr][kTw][kCpt];
  __half2 part[kNr][kTw][kCpt / 2];

  __device__ __forceinline__ void clear_parts() {
#pragma unroll
    for (int k = 0; k < kNr; ++k)
#pragma unroll
      for (int j = 0; j < kTw; ++j)
#pragma unroll
        for (int h = 0; h < kCpt / 2; ++h) part[k][j][h] = __half2half2(__ushort_as_half(0));
  }
  __device__ __forceinline__ void init() {
#pragma unroll
    for (int k = 0; k < kNr; ++k)
#pragma unroll
      for (int j = 0; j < kTw; ++j)
#pragma unroll
        for (int ch = 0; ch < kCpt; ++ch) acc[k][j][ch] = 0.f;
    if constexpr (kHa) clear_parts();
  }
  // End of an ha run: each FP16 partial is added into FP32 (the emulation's `acc += part`).
  __device__ __forceinline__ void flush() {
#pragma unroll
    for (int k = 0; k < kNr; ++k)
#pragma unroll
      for (int j = 0; j < kTw; ++j)
#pragma unroll
        for (int h = 0; h < kCpt / 2; ++h) {
          const float2 f = __half22float2(part[k][j][h]);
          acc[k][j][2 * h] += f.x;
          acc[k][j][2 * h + 1] += f.y;
        }
    clear_parts();
  }
};

// The raw loads of one step: X column xc of each of the thread's rows (zero bits outside the image: padding) and
// dY column `col`.
template <int kNr>
struct StepLoads {
  uint2 x[kNr];
  uint2 d;
};

template <int kNr>
__device__ __forceinline__ uint2 load_x(const RowPtrs<kNr>& r, int k, int xc, const TiledArgs& a) {
  if (static_cast<unsigned>(xc) < static_cast<unsigned>(a.iw) && r.ok[k])
    return __ldg(reinterpret_cast<const uint2*>(a.x + (r.x[k] + xc * a.c)));  // 0 <= xc < IW: below x_elems
  return make_uint2(0u, 0u);
}

template <int kNr>
__device__ __forceinline__ StepLoads<kNr> fetch_step(const RowPtrs<kNr>& r, int col, int xc, const TiledArgs& a) {
  StepLoads<kNr> v;
#pragma unroll
  for (int k = 0; k < kNr; ++k) v.x[k] = load_x(r, k, xc, a);
  v.d = __ldg(reinterpret_cast<const uint2*>(r.dy + col * a.c));  // col * C < OW * C: no int overflow
  return v;
}

// dY column s0 + col, ring phase (col % TW) given as `phase`, its loads already in `v`. Invariant (proof in
// slide_row): before the step, slot (phase + j) % TW holds X column xc0 + col + j for j < TW-1; the step puts tap
// TW-1's column (v.x) into the last slot. ha: the run of the emulation ends after dY column s0 + col when
// (s0 + col + 1) % 32 == 0 (s0 % 32 == 0) or at the strip's end (col + 1 == count), so the partials are flushed there.
template <int kTw, int kNr, bool kHa>
__device__ __forceinline__ void step(TileSums<kTw, kNr, kHa>& st, Lane<kHa> (&win)[kNr][kTw],
                                     const StepLoads<kNr>& v, int col, int phase, int count) {
#pragma unroll
  for (int k = 0; k < kNr; ++k) to_lane(v.x[k], win[k][(phase + kTw - 1) % kTw]);
  Lane<kHa> d;
  to_lane(v.d, d);
  if constexpr (kHa) {
#pragma unroll
    for (int k = 0; k < kNr; ++k)
#pragma unroll
      for (int j = 0; j < kTw; ++j)
#pragma unroll
        for (int h = 0; h < kCpt / 2; ++h)
          st.part[k][j][h] = __hfma2(win[k][(phase + j) % kTw].v[h], d.v[h], st.part[k][j][h]);
    if (((col + 1) & (kBfcHaRun - 1)) == 0 || col + 1 == count) st.flush();
  } else {
#pragma unroll
    for (int k = 0; k < kNr; ++k)
#pragma unroll
      for (int j = 0; j < kTw; ++j)
#pragma unroll
        for (int ch = 0; ch < kCpt; ++ch)
          st.acc[k][j][ch] = fmaf(win[k][(phase + j) % kTw].v[ch], d.v[ch], st.acc[k][j][ch]);
  }
}

// One dY row's strip: tap (k, j) += X[n, ih_k, xc0 + col + j] * dY[g, s0 + col] for every col < count. Proof of the
// ring: the prologue puts column xc0 + t in slot t (t < TW-1), i.e. the invariant of step at col = 0, phase 0.
// Step (col, phase) writes column xc0 + col + TW-1 to slot (phase + TW-1) % TW; after it, for col + 1 and
// phase + 1: slot (phase + 1 + j) % TW for j < TW-1 is either an old slot (phase + j') % TW with j' = j + 1 <=
// TW-1, holding xc0 + col + j' = xc0 + (col + 1) + j, or (j = TW-2) the slot just written, holding
// xc0 + col + TW-1 = xc0 + (col + 1) + j. Both loops advance col by kU, a multiple of TW, so phase = s % TW.
template <int kTw, int kNr, bool kHa>
__device__ __forceinline__ void slide_row(TileSums<kTw, kNr, kHa>& st, const RowPtrs<kNr>& r, int count,
                                          const TiledArgs& a) {
  constexpr int kU = kTw >= 3 ? kTw : 4;  // steps per unrolled block: a multiple of TW, >= 3 steps of loads
  static_assert(kU % kTw == 0, "the ring phase of step s must be s % TW");
  Lane<kHa> win[kNr][kTw];
#pragma unroll
  for (int t = 0; t + 1 < kTw; ++t)
#pragma unroll
    for (int k = 0; k < kNr; ++k) to_lane(load_x(r, k, r.xc0 + t, a), win[k][t]);
  int col = 0;
  for (; col + kU <= count; col += kU) {
    // All loads of the block first, then its FMAs: kU steps of loads in flight hide the L1/L2 latency (written
    // load-by-step, ptxas interleaved them with the FMAs here and the kernel stalled on every step's loads).
    StepLoads<kNr> v[kU];
#pragma unroll
    for (int s = 0; s < kU; ++s) v[s] = fetch_step(r, col + s, r.xc0 + col + s + kTw - 1, a);
#pragma unroll
    for (int s = 0; s < kU; ++s) step<kTw, kNr, kHa>(st, win, v[s], col + s, s % kTw, count);
  }
#pragma unroll
  for (int s = 0; s < kU; ++s)
    if (col + s < count) step<kTw, kNr, kHa>(st, win, fetch_step(r, col + s, r.xc0 + col + s + kTw - 1, a), col + s,
                                             s % kTw, count);
}

// Thread (tile, r_off, cg): filter rows [i_lo, i_lo + nr) x columns [j0, j0 + TW) of its tile, channels
// c = (slice*G + cg)*4 .. +3, dY rows g = g_begin + r_off, + R, ... < g_end. Row slots partition the chunk, chunks
// partition [0, N*OH), strips [0, OW) and tiles the filter (columns >= FW dropped), so every (g, ow) term reaches
// each (tap, channel) exactly once (a row whose nr X rows all lie in the padding adds zero and is skipped).
// Sums go to the block's shared sums red[((i*FW + j)*4 + ch)*G + cg] (R > 1) or straight to dW (red null, R = 1:
// the thread is the only one of its block holding these taps and channels).
template <int kTw, int kNr, bool kHa>
__device__ __forceinline__ void accumulate_rows(const TiledArgs& a, const BlockWork& bw, int i_lo, int j0, int r_off,
                                                int cg, float* red) {
  const int c = (bw.slice * a.g_slice + cg) * kCpt;
  TileSums<kTw, kNr, kHa> st;
  st.init();
  for (int g = bw.g_begin + r_off; g < bw.g_end; g += a.rows_step) {
    const int n = g / a.oh, oh = g - n * a.oh;
    RowPtrs<kNr> r;
    bool any = false;
#pragma unroll
    for (int k = 0; k < kNr; ++k) {
      const int ih = oh + i_lo + k - a.pt;
      r.ok[k] = static_cast<unsigned>(ih) < static_cast<unsigned>(a.ih);
      r.x[k] = r.ok[k] ? ((n * a.ih + ih) * a.iw) * a.c + c : 0;  // < x_elems < 2^31 (validate)
      any = any || r.ok[k];
    }
    if (!any) continue;
    r.dy = a.dy + (static_cast<long long>(g) * a.ow + bw.s0) * a.c + c;
    r.xc0 = bw.s0 + j0 - a.pl;
    slide_row<kTw, kNr, kHa>(st, r, bw.count, a);
  }
#pragma unroll
  for (int k = 0; k < kNr; ++k)
#pragma unroll
    for (int j = 0; j < kTw; ++j) {
      const int tap = (i_lo + k) * a.fw + j0 + j;
      if (j0 + j >= a.fw) continue;  // the last column tile's padding columns
#pragma unroll
      for (int ch = 0; ch < kCpt; ++ch) {
        if (red)
          atomicAdd(&red[(tap * kCpt + ch) * a.g_slice + cg], st.acc[k][j][ch]);
        else
          atomicAdd(a.dw + static_cast<long long>(tap) * a.c + c + ch, st.acc[k][j][ch]);
      }
    }
}

// Block index = slice + n_slices * (fblock + n_fblocks * (strip + n_strips * chunk)); thread t = (tile_local * R +
// r_off) * G + cg. Tiles hold kRt or kRt - 1 rows (uniform per warp when R*G is a multiple of 32). R > 1 (then the
// block holds every tile): dynamic shared memory of FH*FW*4*G floats of block sums, one global atomic per (tap,
// channel) after the barrier.
template <int kTw, int kRt, bool kHa>
__global__ void __launch_bounds__(kBlockMax, 1) bfc_f16_tiled_kernel(const TiledArgs a) {
  extern __shared__ float red[];
  const int t = static_cast<int>(threadIdx.x), gs = a.g_slice, per_tile = a.rows_step * gs;
  int b = static_cast<int>(blockIdx.x);
  BlockWork bw;
  bw.slice = b % a.n_slices;
  b /= a.n_slices;
  const int fblock = b % a.n_fblocks;
  b /= a.n_fblocks;
  const int strip = b % a.n_strips, chunk = b / a.n_strips;
  bw.s0 = strip * a.strip;
  bw.count = min(a.strip, a.ow - bw.s0);
  const int st_begin = static_cast<int>(static_cast<long long>(a.steps) * chunk / a.z);
  const int st_end = static_cast<int>(static_cast<long long>(a.steps) * (chunk + 1) / a.z);
  bw.g_begin = st_begin * a.rows_step;
  bw.g_end = min(st_end * a.rows_step, a.rows);  // steps * R < rows + R: no int overflow

  const bool shared_sums = a.rows_step > 1;  // uniform per launch
  const int red_n = shared_sums ? a.fh * a.fw * kCpt * gs : 0;
  for (int e = t; e < red_n; e += blockDim.x) red[e] = 0.f;
  __syncthreads();
  const int tile_local = t / per_tile, r_off = (t % per_tile) / gs, cg = t % gs;
  const int tile = fblock * a.tiles_block + tile_local;
  if (tile_local < a.tiles_block && tile < a.ng * a.nct && bw.slice * gs + cg < a.groups) {
    const int fg = tile / a.nct, j0 = (tile - fg * a.nct) * kTw;
    const int i_lo = fg * a.fh / a.ng, nr = (fg + 1) * a.fh / a.ng - i_lo;
    float* sums = shared_sums ? red : nullptr;
    if (nr == kRt) {
      accumulate_rows<kTw, kRt, kHa>(a, bw, i_lo, j0, r_off, cg, sums);
    } else {
      if constexpr (kRt > 1) accumulate_rows<kTw, kRt - 1, kHa>(a, bw, i_lo, j0, r_off, cg, sums);
    }
  }
  if (!shared_sums) return;
  __syncthreads();
  for (int e = t; e < red_n; e += blockDim.x) {
    const int group_e = bw.slice * gs + e % gs;
    if (group_e >= a.groups) continue;
    const int tap_ch = e / gs;  // (i * FW + j) * 4 + ch: dW's (tap, channel-in-group) order
    atomicAdd(a.dw + static_cast<long long>(tap_ch / kCpt) * a.c + group_e * kCpt + tap_ch % kCpt, red[e]);
  }
}

using KernelFn = void (*)(TiledArgs);

template <int kTw, bool kHa, int kRt = kRtMax[kTw]>
KernelFn kernel_for_rows(int rt) {
  if constexpr (kRt >= 1) {
    if (rt == kRt) return bfc_f16_tiled_kernel<kTw, kRt, kHa>;
    return kernel_for_rows<kTw, kHa, kRt - 1>(rt);
  } else {
    return nullptr;
  }
}

template <bool kHa>
KernelFn select_kernel_mode(int tw, int rt) {
  switch (tw) {
    case 1: return kernel_for_rows<1, kHa>(rt);
    case 2: return kernel_for_rows<2, kHa>(rt);
    case 3: return kernel_for_rows<3, kHa>(rt);
    case 4: return kernel_for_rows<4, kHa>(rt);
    case 5: return kernel_for_rows<5, kHa>(rt);
    case 6: return kernel_for_rows<6, kHa>(rt);
    case 7: return kernel_for_rows<7, kHa>(rt);
    default: return nullptr;
  }
}

KernelFn select_kernel(int tw, int rt, BfcAccum accum) {
  return accum == BfcAccum::ha ? select_kernel_mode<true>(tw, rt) : select_kernel_mode<false>(tw, rt);
}

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// FW <= kTwMax: one tile of FW columns. Wider: the width in [kTwMinWide, kTwMax] with the fewest padded columns
// ceil(FW/TW)*TW - FW, ties to the wider tile (fewer window refills and loads per FMA).
int tile_width(int fw) {
  if (fw <= kTwMax) return fw;
  int best = kTwMax;
  for (int tw = kTwMax - 1; tw >= kTwMinWide; --tw)
    if (ceil_div(fw, tw) * tw < ceil_div(fw, best) * best) best = tw;
  return best;
}

struct TiledPlan {
  int tw = 1, nct = 1, rt = 1, ng = 1;           // tile width (kernel), column tiles, rows per thread, row groups
  int tiles_block = 1, n_fblocks = 1;            // T, blocks over the ng * nct tiles
  int g_slice = 1, n_slices = 1, rows_step = 1;  // G, slices, R
  int strip = 1, n_strips = 1, steps = 1, z = 1;
  int threads = 1, smem = 0, resident = 1;  // block size, dynamic shared bytes, blocks per SM (occupancy)
};

// Tiles: column tiles of tile_width(FW), row groups as balanced as kRtMax allows. <= kSharedTiles tiles: one block
// holds them all, channel slices of <= 32 groups (fewer, down to 8, so that R reaches kMinRows), R = 512 / (T*G).
// More: R = 1, slices of <= 32 groups, T = 512 / G tiles per block, balanced. Then strips of >= kMinStrip columns
// when the rows are too few for two waves of resident blocks, and Z chunks of block steps by pick_z.
void plan_tiles(const DwconvParams& p, TiledPlan& s) {
  s.tw = tile_width(p.fw);
  s.nct = ceil_div(p.fw, s.tw);
  s.ng = ceil_div(p.fh, kRtMax[s.tw]);
  s.rt = ceil_div(p.fh, s.ng);
  const int tiles = s.ng * s.nct, groups = p.c / kCpt;
  if (tiles <= kSharedTiles) {
    int g_cap = kMaxGroups;
    while (g_cap > 8 && tiles * kMinRows * g_cap > kBlockMax) g_cap /= 2;
    s.n_slices = ceil_div(groups, g_cap);
    s.g_slice = ceil_div(groups, s.n_slices);
    s.tiles_block = tiles;
    s.rows_step = std::max(1, kBlockMax / (tiles * s.g_slice));
  } else {
    s.n_slices = ceil_div(groups, kMaxGroups);
    s.g_slice = ceil_div(groups, s.n_slices);
    s.n_fblocks = ceil_div(tiles, std::max(1, kBlockMax / s.g_slice));
    s.tiles_block = ceil_div(tiles, s.n_fblocks);
    s.rows_step = 1;
  }
  s.threads = s.tiles_block * s.rows_step * s.g_slice;
  s.smem = s.rows_step > 1 ? p.fh * p.fw * kCpt * s.g_slice * static_cast<int>(sizeof(float)) : 0;
}

// Z chunks: the count whose grid fills the resident block slots best (blocks / (waves * slots)), up to ~4 waves;
// a larger count must fill them 2% better (fewer chunks: fewer atomics, longer slides). Blocks of one launch do
// equal work, so a partial last wave costs its full time (e.g. 272 blocks on 132 slots run 3 waves at 69%).
int pick_z(long long per_z, long long slots, int steps) {
  const int z_hi = std::clamp(ceil_div(4 * slots, per_z), 1, steps);
  int best = 1;
  double best_fill = 0;
  for (int z = 1; z <= z_hi; ++z) {
    const long long blocks = per_z * z;
    const double fill = static_cast<double>(blocks) / (static_cast<double>(ceil_div(blocks, slots)) * slots);
    if (fill > best_fill * 1.02) best = z, best_fill = fill;
  }
  return best;
}

TiledPlan make_tiled_plan(const DwconvParams& p, BfcAccum accum, const BfcF16TiledForce& force) {
  CNN_CHECK(p.stride_h == 1 && p.stride_w == 1 && p.c % kCpt == 0,
            "dwconv bfc f16 tiled: expected stride 1 and C % ", kCpt, " == 0, got ", p.str());
  TiledPlan s;
  plan_tiles(p, s);
  s.steps = ceil_div(static_cast<long long>(p.n) * p.oh(), s.rows_step);
  s.resident = resident_blocks_per_sm(select_kernel(s.tw, s.rt, accum), s.threads, s.smem);
  const long long target = 2LL * current_device_sms() * s.resident;
  const long long per_chunk = static_cast<long long>(s.n_slices) * s.n_fblocks;
  const int ow = p.ow();
  if (force.strip > 0) {
    s.strip = std::min(force.strip, ow);
  } else {
    int n_strips = 1;
    if (per_chunk * s.steps < target)
      n_strips = std::clamp(ceil_div(target, per_chunk * s.steps), 1, std::max(1, ow / kMinStrip));
    s.strip = ceil_div(ow, n_strips);
    if (accum == BfcAccum::ha) s.strip = std::min(ceil_div(s.strip, kBfcHaRun) * kBfcHaRun, ow);
  }
  CNN_CHECK(accum != BfcAccum::ha || s.strip == ow || s.strip % kBfcHaRun == 0,
            "dwconv bfc f16 tiled: ha needs column strips that are multiples of ", kBfcHaRun,
            " (whole runs per thread), got strip=", s.strip, " for ", p.str());
  s.n_strips = ceil_div(ow, s.strip);
  s.z = force.z > 0 ? std::min(force.z, s.steps) : pick_z(per_chunk * s.n_strips, target / 2, s.steps);
  return s;
}

// The plan of a (shape, mode, force, device) is computed once: planning queries the device (occupancy), and the
// training loop calls the same shapes every step.
const TiledPlan& cached_tiled_plan(const DwconvParams& p, BfcAccum accum, const BfcF16TiledForce& force) {
  using Key = std::pair<DeviceShapeKey, std::array<int, 3>>;
  const Key key{device_shape_key(p), {static_cast<int>(accum), force.z, force.strip}};
  static PlanCache<Key, TiledPlan> cache;
  return cache.get(key, [&] { return make_tiled_plan(p, accum, force); });
}

bool aligned8(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 8 == 0; }

}  // namespace

bool bfc_f16_tiled_supports(const DwconvParams& p, const void* x, const void* dy) {
  return p.stride_h == 1 && p.stride_w == 1 && p.c % kCpt == 0 && aligned8(x) && aligned8(dy);
}

std::string dwconv_bfc_f16_tiled_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16TiledForce& force) {
  const TiledPlan& s = cached_tiled_plan(p, accum, force);
  return str_cat("bfc f16 ", bfc_accum_name(accum), " tiled cuda-core F=", p.fh, "x", p.fw, " tile=", s.rt, "x",
                 s.tw, " tiles=", s.ng, "x", s.nct, " tiles/block=", s.tiles_block, "x", s.n_fblocks,
                 " ch/thread=", kCpt, " slices=", s.n_slices, "x", s.g_slice * kCpt, "ch rows/step=", s.rows_step,
                 s.rows_step > 1 ? " smem-sums" : " direct-sums", " block=", s.threads, " strip=", s.strip, "x",
                 s.n_strips, " Z=", s.z, " blocks/SM=", s.resident);
}

void launch_dwconv_bfc_f16_tiled(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 const BfcF16TiledForce& force, cudaStream_t stream) {
  p.validate("launch_dwconv_bfc_f16_tiled");
  CNN_CHECK(bfc_f16_tiled_supports(p, x, dy), "dwconv bfc f16 tiled: expected stride 1, C % ", kCpt,
            " == 0 and 8-byte aligned x and dy, got ", p.str());
  CNN_CHECK(accum == BfcAccum::fp32 || accum == BfcAccum::ha,
            "dwconv bfc f16 tiled: expected accumulation fp32 or ha, got ", static_cast<int>(accum));
  CNN_CHECK(dw != nullptr && force.z >= 0 && force.strip >= 0,
            "dwconv bfc f16 tiled: expected non-null dw and forced Z, strip >= 0, got Z=", force.z,
            " strip=", force.strip);
  const TiledPlan& s = cached_tiled_plan(p, accum, force);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  const TiledArgs a{x,        dy,        dw,         p.ih,          p.iw,        p.c,         p.oh(),
                    p.ow(),   p.fh,      p.fw,       p.pad_top,     p.pad_left,  s.ng,        s.nct,
                    s.tiles_block, s.n_fblocks, p.c / kCpt, s.g_slice, s.n_slices, s.rows_step, s.strip,
                    s.n_strips, p.n * p.oh(), s.steps, s.z};
  const long long blocks = static_cast<long long>(s.n_slices) * s.n_fblocks * s.n_strips * s.z;
  CNN_CHECK(blocks < (1LL << 31), "dwconv bfc f16 tiled: grid too large (", blocks, " blocks) for ", p.str());
  const KernelFn kernel = select_kernel(s.tw, s.rt, accum);
  kernel<<<static_cast<unsigned>(blocks), s.threads, s.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_f16_tiled_kernel");
}

}  // namespace cnn::dwconv

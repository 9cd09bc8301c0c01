// The FP16 tensor-core ring kernel (Flash-DWC-T with register reuse): stride 1, forward and backward-data (filter
// read rotated by 180 degrees), NHWC maps or their transposed view, (FH, FW, C) filter, FP32 accumulation. It stages
// 4-channel groups with 8- or 4-byte copies: C % 4 == 0 with 8-byte aligned pointers (C % 8 == 4 only narrows the
// output stores), and on the channel-pairs policy also C % 4 == 2 with 4-byte aligned pointers (filter rows then
// staged and the output stored per channel pair). The input and filter rows may also be channel-padded copies beside
// an unpadded output of any C (RingArgs::src_c), which the kernel writes itself. One block = 16 output rows x 8Q
// columns x 16 channels (a warp per 4-channel group). Input rows live in a ring of shared-memory rows: moving to the
// next filter row needs one new input row, fetched with cp.async two steps ahead, one barrier per filter row; filter
// rows are staged three buffers deep. The kernel template below is the skeleton; an MMA policy (fwd_tc_ring_taps.cu:
// 8-tap filter fragments; fwd_tc_ring_pairs.cu: channel pairs) supplies the ring layout, the per-row MMAs and the
// epilogue. Design: docs/dwconv-fp16.md.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <utility>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/grid_dependency.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;   // 4 warps; warp w owns channels 4w..4w+3 of the block
constexpr int kGroups = 4;      // channel groups of 4 (8 bytes per position), one per warp
constexpr int kBN = 16;         // channels per block: one 32-byte sector per position
constexpr int kRows = 16;       // output rows per block tile (the MMA's M)
constexpr int kRing = 18;       // input rows held: 16 in use, 2 in flight
constexpr int kFront = 8;       // zero taps staged before tap 0 (fragment 0 reads taps down to -7)

// A span of `positions` 8-byte positions (a multiple of 8) padded to an odd number of 64-byte halves, so that two
// such spans side by side start in different bank halves.
constexpr int odd_halves(int positions) { return (positions / 8) % 2 ? positions : positions + 8; }

template <int kQ, int kGamma>
struct RingShape {
  static constexpr int kCols = 8 * kQ;                 // output columns per tile
  static constexpr int kWin = 8 * (kQ + kGamma);       // input columns a tile row reads over all fragments
  // Positions per ring row (8 bytes each). A quarter-warp's LDS.128 reads rows g, g+1 at the same columns: an odd
  // number of 64-byte halves between consecutive rows (also across the ring's wrap, kRing - 1 being odd) puts them
  // in different bank halves.
  static constexpr int kPitch = odd_halves(kWin);
  static constexpr int kTaps = 8 * kGamma + 16;        // staged filter row: kFront zeros, 8*gamma taps, 8 zeros
  // Channel groups are an odd number of 64-byte halves apart, in the ring and in the filter buffers: a warp's cp.async
  // writes 8 positions (64 bytes) of each of the 4 groups, which would otherwise all fall on the same 16 banks.
  static constexpr int kGroupStride = odd_halves(kRing * kPitch);
  static constexpr int kTapStride = odd_halves(kTaps);
  static constexpr int kXBytes = kGroups * kGroupStride * 8;
  static constexpr int kFBytes = 3 * kGroups * kTapStride * 8;  // three filter-row buffers (two in flight)
  static constexpr int kTileBytes = kRows * kCols * kBN * 2;
  static constexpr int kSmemBytes = kXBytes + kFBytes;
  static_assert(kXBytes >= kTileBytes, "the output tile is staged in the input ring");
};

// The kernel sees the maps and the filter through a view: the geometry below plus element strides. Element (n, r, col,
// ch) of the source is at src + (n * src_img_rows + r) * src_row + col * src_col + ch, the destination likewise, tap
// (i, j) of the filter at w + i * w_row + j * w_tap + ch. NHWC gives src_row = in_w * C, src_col = C, src_img_rows =
// in_h; the transposed view (rows and columns swapped, an FH x FW filter seen as FW x FH) swaps the strides and has
// src_img_rows = in_h * in_w.
struct RingArgs {
  const __half* __restrict__ src;
  const __half* __restrict__ w;
  const __half* __restrict__ bias;  // (src_c) or null
  __half* __restrict__ dst;
  int in_h, in_w, c, out_h, out_w, fh, fw, pad_t, pad_l, flip;  // of the view; c: the output's channels
  int src_c;    // channels of src's and w's rows: c, or a channel-padded copy's count (channels past c ignored)
  int out_vec;  // output store width in bytes: 16, 8, 4 (channel pairs) or 2 (write_tile_out_halves)
  int src_row, src_col, src_img_rows, dst_row, dst_col, dst_img_rows, w_row, w_tap;
  int tiles_h, tiles_w, channel_blocks;  // blocks: channel block fastest, then column tile, row tile, image
};

// The launch arguments of a ring kernel on (g, q), on the NHWC maps or their transposed view (the kernel then runs
// transposed_geometry(g)), after the checks both kernels share; `what` names the kernel in the errors. src_c: the
// channels of src's, w's and bias's rows (0: g.c), a multiple of c_multiple (4 for the taps policy, 2 for channel
// pairs).
inline RingArgs ring_args(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          bool transposed, int q, int src_c, int c_multiple, const char* what) {
  const ConvGeometry v = transposed ? transposed_geometry(g) : g;
  if (src_c == 0) src_c = g.c;
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && src_c % c_multiple == 0 && src_c >= g.c, what,
            ": needs stride 1 and input rows of C % ", c_multiple, " == 0 channels, >= C; got ", src_c, " for C=", g.c,
            ", stride ", g.stride_h, "x", g.stride_w);
  CNN_CHECK(v.fw >= 1 && v.fw <= kTcRingMaxFw, what, ": FW must be 1..", kTcRingMaxFw, " (of the ",
            transposed ? "transposed view: FH" : "maps", "), got ", v.fw);
  CNN_CHECK(q == 1 || q == 2 || q == 4, what, ": Q must be 1, 2 or 4, got ", q);
  // Rows per image: the maps' rows, or in the transposed view their columns of every row.
  const long long src_img_rows = transposed ? static_cast<long long>(g.in_h) * g.in_w : g.in_h;
  const long long dst_img_rows = transposed ? static_cast<long long>(g.out_h) * g.out_w : g.out_h;
  // 32-bit offsets: within a view row (columns x their stride) and of rows counted over all images.
  const long long row_span = std::max(static_cast<long long>(g.in_w) * src_c, static_cast<long long>(g.out_w) * g.c);
  const long long col_span = transposed ? std::max(g.in_h * row_span, g.out_h * row_span) : row_span;
  const long long rows = g.n * std::max(src_img_rows, dst_img_rows);
  CNN_CHECK(col_span < (1LL << 31) && rows < (1LL << 31), what, ": ", col_span, " elements per view row, ", rows,
            " view rows: beyond the kernel's 32-bit offsets");
  // The output's stores: as wide as C and the destination's alignment allow.
  const size_t dst_align = reinterpret_cast<size_t>(dst);
  const int out_vec = g.c % 8 == 0 && dst_align % 16 == 0  ? 16
                      : g.c % 4 == 0 && dst_align % 8 == 0 ? 8
                      : g.c % 2 == 0 && dst_align % 4 == 0 ? 4
                                                           : 2;
  // NHWC strides; the transposed view swaps each row stride with its column stride.
  int src_row = g.in_w * src_c, src_col = src_c, dst_row = g.out_w * g.c, dst_col = g.c, w_row = g.fw * src_c,
      w_tap = src_c;
  if (transposed) {
    std::swap(src_row, src_col);
    std::swap(dst_row, dst_col);
    std::swap(w_row, w_tap);
  }
  return RingArgs{.src = src,
                  .w = w,
                  .bias = bias,
                  .dst = dst,
                  .in_h = v.in_h,
                  .in_w = v.in_w,
                  .c = v.c,
                  .out_h = v.out_h,
                  .out_w = v.out_w,
                  .fh = v.fh,
                  .fw = v.fw,
                  .pad_t = v.pad_t,
                  .pad_l = v.pad_l,
                  .flip = v.flip ? 1 : 0,
                  .src_c = src_c,
                  .out_vec = out_vec,
                  .src_row = src_row,
                  .src_col = src_col,
                  .src_img_rows = int(src_img_rows),
                  .dst_row = dst_row,
                  .dst_col = dst_col,
                  .dst_img_rows = int(dst_img_rows),
                  .w_row = w_row,
                  .w_tap = w_tap,
                  .tiles_h = (v.out_h + kRows - 1) / kRows,
                  .tiles_w = (v.out_w + 8 * q - 1) / (8 * q),
                  .channel_blocks = (v.c + kBN - 1) / kBN};
}

inline dim3 ring_grid(const RingArgs& a, const ConvGeometry& g, const char* what) {
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w * a.channel_blocks;
  CNN_CHECK(blocks < (1LL << 31), what, ": grid too large for ", blocks, " blocks");
  return dim3(static_cast<unsigned>(blocks));
}

__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel) { return __byte_perm(a, b, sel); }

// One input block as A operand halves for the warp's 4 channels: r[c] = (x[p][c], x[p+1][c]) of row g and
// r[4 + c] the same of row g+8, p = 8*block + 2t. One LDS.128 per row gives positions p, p+1 of 4 channels.
struct Block {
  unsigned r[8];
};

// Shared-memory loads as volatile asm: they stay where the fragment loop issues them (one block ahead) instead of
// being hoisted to the top of the row, which would hold every block of the row in registers and spill.
__device__ __forceinline__ uint4 lds128(const void* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))));
  return v;
}

__device__ __forceinline__ uint2 lds64(const void* p) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n"
               : "=r"(v.x), "=r"(v.y)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))));
  return v;
}

__device__ __forceinline__ void load_block(Block& b, const uint2* row_g, const uint2* row_g8, int pos) {
  const uint4 u = lds128(row_g + pos);
  const uint4 v = lds128(row_g8 + pos);
  b.r[0] = prmt(u.x, u.z, 0x5410u);
  b.r[1] = prmt(u.x, u.z, 0x7632u);
  b.r[2] = prmt(u.y, u.w, 0x5410u);
  b.r[3] = prmt(u.y, u.w, 0x7632u);
  b.r[4] = prmt(v.x, v.z, 0x5410u);
  b.r[5] = prmt(v.x, v.z, 0x7632u);
  b.r[6] = prmt(v.y, v.w, 0x5410u);
  b.r[7] = prmt(v.y, v.w, 0x7632u);
}

// B operand of fragment f for the warp's 4 channels: lane (g, t) holds taps l = 2t-g, 2t+1-g (b0) and l + 8 (b1)
// of the fragment; a tap outside the band 0 <= l < 8 belongs to another fragment and is masked to zero. The two
// masks are complementary and depend on the lane only.
__device__ __forceinline__ void load_filter(unsigned (&b0)[4], unsigned (&b1)[4], const uint2* taps, int idx,
                                            unsigned mask) {
  const uint2 u0 = lds64(taps + idx), u1 = lds64(taps + idx + 1);
  const uint2 u8 = lds64(taps + idx + 8), u9 = lds64(taps + idx + 9);
  b0[0] = prmt(u0.x, u1.x, 0x5410u) & mask;
  b0[1] = prmt(u0.x, u1.x, 0x7632u) & mask;
  b0[2] = prmt(u0.y, u1.y, 0x5410u) & mask;
  b0[3] = prmt(u0.y, u1.y, 0x7632u) & mask;
  b1[0] = prmt(u8.x, u9.x, 0x5410u) & ~mask;
  b1[1] = prmt(u8.x, u9.x, 0x7632u) & ~mask;
  b1[2] = prmt(u8.y, u9.y, 0x5410u) & ~mask;
  b1[3] = prmt(u8.y, u9.y, 0x7632u) & ~mask;
}

// A thread's cp.async jobs: job k of a staged row is column (tid >> 2) + 32k of channel group tid & 3, the same
// columns for every row. Their column offsets and bounds are worked out once per tile, so staging a row costs a
// row pointer plus a select and a copy per job (per-job index math and 64-bit addresses would dominate the
// kernel's instruction count).
template <int kEntries>
struct StageJobs {
  static constexpr int kJobs = (4 * kEntries + kThreads - 1) / kThreads;  // per thread, the last one partial
  static constexpr int kLast = kEntries % 32;                              // threads >> 2 below it own a last job
  __device__ static bool exists(int k, int tid) { return k + 1 < kJobs || kLast == 0 || (tid >> 2) < kLast; }
};

// S: the ring's shape (RingShape, or another with the same members: kWin, kPitch, kGroupStride, kTaps, kTapStride).
template <class S>
struct RingTileT {
  using XJobs = StageJobs<S::kWin>;
  using FJobs = StageJobs<S::kTaps>;
  const RingArgs& a;
  uint2* xs;  // [kGroups][kGroupStride]: kRing rows of kPitch positions of 4 channels
  uint2* fs;  // [3][kGroups][kTapStride]: kTaps taps
  int ih0, row0, tid;  // the tile's first source row (oh0 - pad_t) in its image, and counted over all images
  int x_col;     // element offset of job 0 within a source row: (first column) * C + channel
  int w_col;     // element offset of job 0 within a filter row (rotated for backward-data)
  unsigned ok;   // bit k: input job k's column and channels are inside the image; bit 16 + k: filter job k's tap
                 // is in [0, FW) and its channels < C; kUpperPair: the group's channels 2 and 3 are < C too
  static constexpr unsigned kUpperPair = 1u << 31;

  __device__ RingTileT(const RingArgs& args, uint2* x, uint2* f, int n, int oh, int ow0, int c0, int t)
      : a(args), xs(x), fs(f), ih0(oh - args.pad_t), row0(n * args.src_img_rows + oh - args.pad_t), tid(t) {
    const int grp = t & 3, ch = c0 + 4 * grp, col = t >> 2;
    const bool ch_ok = ch < a.c;
    x_col = (ow0 - a.pad_l + col) * a.src_col + ch;
    ok = 0;
#pragma unroll
    for (int k = 0; k < XJobs::kJobs; ++k) {
      const int iw = ow0 - a.pad_l + col + 32 * k;
      ok |= (ch_ok && static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w) ? 1u : 0u) << k;
    }
    const int j = col - kFront;
    w_col = (a.flip ? a.fw - 1 - j : j) * a.w_tap + ch;
#pragma unroll
    for (int k = 0; k < FJobs::kJobs; ++k)
      ok |= (ch_ok && static_cast<unsigned>(j + 32 * k) < static_cast<unsigned>(a.fw) ? 1u : 0u) << (16 + k);
    if (ch + 2 < a.src_c) ok |= kUpperPair;
  }

  // Input row rho of the tile (source row ih0 + rho) into ring slot rho % kRing; zero outside the image.
  __device__ __forceinline__ void stage_row(int rho) const {
    // 32-bit offsets from the tensor's base: 64-bit bases hoisted out of the row loop spilled at gamma 4.
    const bool row_ok = static_cast<unsigned>(ih0 + rho) < static_cast<unsigned>(a.in_h);
    const __half* row = a.src + static_cast<long long>(row0 + rho) * a.src_row + x_col;
    uint2* dst = xs + (tid & 3) * S::kGroupStride + (rho % kRing) * S::kPitch + (tid >> 2);
#pragma unroll
    for (int k = 0; k < XJobs::kJobs; ++k) {
      if (!XJobs::exists(k, tid)) break;
      const bool job_ok = row_ok && (ok >> k & 1u);
      cuda::cp_async_ca8(dst + 32 * k, job_ok ? row + 32 * k * a.src_col : a.src, job_ok);
    }
  }
  // Filter row i (rotated for backward-data) into buffer i % 3: entry e holds tap e - kFront, zero outside [0, FW).
  // At C % 4 == 2 a tap's 4 channels are only 4-byte aligned: two copies of a channel pair each, the upper pair
  // zero past C.
  __device__ __forceinline__ void stage_filter(int i) const {
    const __half* row = a.w + static_cast<long long>(a.flip ? a.fh - 1 - i : i) * a.w_row + w_col;
    const int step = (a.flip ? -32 : 32) * a.w_tap;  // the next job's tap is 32 further (rotated: 32 earlier)
    uint2* dst = fs + ((i % 3) * kGroups + (tid & 3)) * S::kTapStride + (tid >> 2);
    const bool pairs = a.src_c % 4 != 0;
#pragma unroll
    for (int k = 0; k < FJobs::kJobs; ++k) {
      if (!FJobs::exists(k, tid)) break;
      const bool job_ok = ok >> (16 + k) & 1u;
      const __half* src = job_ok ? row + k * step : a.w;
      if (!pairs) {
        cuda::cp_async_ca8(dst + 32 * k, src, job_ok);
      } else {
        const bool upper_ok = job_ok && (ok & kUpperPair);
        cuda::cp_async_ca4(dst + 32 * k, src, job_ok);
        cuda::cp_async_ca4(reinterpret_cast<unsigned*>(dst + 32 * k) + 1, upper_ok ? src + 2 : a.w, upper_ok);
      }
    }
  }
};

template <int kQ, int kGamma>
using RingTile = RingTileT<RingShape<kQ, kGamma>>;

// Output tile staging: position (row, col) of the tile, P = row * kCols + col, holds 4 units of 8 bytes (channel
// groups). The unit index is XOR-swizzled within its 128-byte line by tile_swizzle so that the accumulator stores
// (lane g, t: rows g and g + 8, columns 2t and 2t + 1) and the 16-byte reads both hit distinct banks. The swizzle is
// a function of the row and column (bit 2 of the column, the row mod 4), not of P's bits: it is then the same for
// all of a lane's stores, whose addresses differ by constants (no per-store address math in the epilogue).
__device__ __forceinline__ int tile_swizzle(int row, int col) { return ((col >> 2) & 1) | ((row & 3) << 1); }
// The staged output tile to a destination whose channel pairs are not all 4-byte aligned (odd C, or a 2-byte aligned
// pointer): lane = channel, so that each store instruction writes two positions' 16 channels as two 32-byte runs
// (2-byte stores spread over positions leave every sector partly written by many instructions, which took longer than
// the convolution). Thread tid stores channel tid & 15 of columns (tid >> 4) + 8 j of every row.
template <int kCols>
__device__ __forceinline__ void write_tile_out_halves(const uint2* ys, const RingArgs& a, int n, int oh0, int ow0,
                                                      int c0, int tid) {
  const int ch = tid & 15, col0 = tid >> 4;
  if (c0 + ch >= a.c) return;
  const auto* yh = reinterpret_cast<const unsigned short*>(ys);
  auto* out = reinterpret_cast<unsigned short*>(a.dst) + static_cast<long long>(n * a.dst_img_rows + oh0) * a.dst_row +
              (ow0 + col0) * a.dst_col + c0 + ch;
  // Unit of channel ch at (row, col): (row * kCols + (col & ~3)) * 4 + ((4 (col & 3) + ch / 4) ^ tile_swizzle);
  // col & 3 and bit 2 of col are the thread's for every j (col0 < 8).
  const int lane_unit = 4 * (col0 & 3) + (ch >> 2);
  for (int row = 0; row < kRows && oh0 + row < a.out_h; ++row, out += a.dst_row) {
    const int sw = tile_swizzle(row, col0);
#pragma unroll
    for (int j = 0; j < kCols / 8; ++j) {
      const int col = col0 + 8 * j;
      if (ow0 + col >= a.out_w) break;
      const int unit = (row * kCols + (col & ~3)) * 4 + (lane_unit ^ sw);
      __stcs(out + 8 * j * a.dst_col, yh[unit * 4 + (ch & 3)]);
    }
  }
}

// The staged output tile (tile_swizzle units in ys) to the destination, 16-byte streaming stores (RingArgs::out_vec:
// two 8-byte ones where C % 8 == 4: positions are then only 8-byte aligned, and the last block's final 8 channels hold
// 4; four 4-byte ones per channel pair at other even C with 4-byte aligned pointers, those past C skipped;
// write_tile_out_halves otherwise). Read-back:
// job tid + kThreads r is half (tid & 1) of position (tid >> 1) + 64 r; 64 is a multiple of kCols, so a thread
// keeps its column and steps down 64 / kCols rows per job.
template <int kCols>
__device__ __forceinline__ void write_tile_out(const uint2* ys, const RingArgs& a, int n, int oh0, int ow0, int c0,
                                               int tid) {
  if (a.out_vec == 2) return write_tile_out_halves<kCols>(ys, a, n, oh0, ow0, c0, tid);
  const int half = tid & 1, col = (tid >> 1) % kCols, row0 = (tid >> 1) / kCols, ch = c0 + 8 * half;
  if (ow0 + col >= a.out_w || ch >= a.c) return;
  __half* out =
      a.dst + static_cast<long long>(n * a.dst_img_rows + oh0 + row0) * a.dst_row + (ow0 + col) * a.dst_col + ch;
  const bool wide = a.out_vec == 16, quads = a.out_vec == 8, upper = ch + 4 < a.c;
  constexpr int kRowStep = 64 / kCols;
  const long long out_step = static_cast<long long>(kRowStep) * a.dst_row;
#pragma unroll
  for (int r = 0; r < kRows / kRowStep; ++r) {
    const int row = row0 + kRowStep * r;
    if (oh0 + row >= a.out_h) break;
    const int sw = tile_swizzle(row, col);
    const int unit = (row * kCols + (col & ~3)) * 4 + ((4 * (col & 3) + 2 * half) ^ (sw & ~1));
    uint4 v = *reinterpret_cast<const uint4*>(ys + unit);
    if (sw & 1) v = make_uint4(v.z, v.w, v.x, v.y);
    if (wide) {
      __stcs(reinterpret_cast<uint4*>(out + r * out_step), v);
    } else if (quads) {
      uint2* const o = reinterpret_cast<uint2*>(out + r * out_step);
      __stcs(o, make_uint2(v.x, v.y));
      if (upper) __stcs(o + 1, make_uint2(v.z, v.w));
    } else {
      unsigned* const o = reinterpret_cast<unsigned*>(out + r * out_step);
      const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int p = 0; p < 4; ++p)
        if (ch + 2 * p < a.c) __stcs(o + p, words[p]);
    }
  }
}

// The ring kernel on MMA policy P, which provides: Shape (the ring's layout: kCols, kXBytes, kSmemBytes, kTapStride
// and RingTileT's members), Acc (the warp's accumulators), Rows and rows() (the input-row stager), kMinBlocks,
// stage_row, lane_mask, zero, compute_row (the MMAs of one filter row) and store_tile (bias, FP16 output).
template <class P>
__global__ void __launch_bounds__(kThreads, P::kMinBlocks) dwconv_tc_ring_f16_kernel(const RingArgs a) {
  using S = typename P::Shape;
  extern __shared__ uint4 smem_u4[];
  uint2* const xs = reinterpret_cast<uint2*>(smem_u4);
  uint2* const fs = xs + S::kXBytes / 8;
  const int tid = threadIdx.x, lane = tid & 31, grp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;

  // Channel blocks fastest: the blocks of one tile position run together, so each 128-byte line of the maps is read
  // and written whole while it is in L2 (a block moves 32 bytes of each position); with column tiles fastest the
  // other sectors of a line go to blocks that run waves later.
  const int cb = blockIdx.x % a.channel_blocks;
  int bx = blockIdx.x / a.channel_blocks;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * kRows, ow0 = tw * S::kCols, c0 = cb * kBN;
  const RingTileT<S> tile(a, xs, fs, n, oh0, ow0, c0, tid);
  const typename P::Rows rows_in = P::rows(tile, a, xs, n, oh0, ow0, c0, tid);

  // Height trimming: only filter rows that reach a source row for some valid output row of the tile.
  const int rows = min(kRows, a.out_h - oh0);
  const int i_lo = max(0, a.pad_t - oh0 - (rows - 1)), i_hi = min(a.fh, a.in_h + a.pad_t - oh0);
  const int rho_end = i_hi + kRows - 1;  // input rows past this are never read

  const unsigned mask = P::lane_mask(g, t);
  typename P::Acc acc;
  P::zero(acc);

  // On padded copies the kernel is launched early behind their padding (launch_ring_policy): they are complete from
  // here on. Otherwise this returns at once.
  cuda::wait_for_prior_grids();
  // Prologue: group 0 = rows i_lo .. i_lo+15 and filter row i_lo; group 1 = row i_lo+16 and filter row i_lo+1.
  if (i_lo < i_hi) {
    for (int rho = i_lo; rho < i_lo + kRows; ++rho) P::stage_row(rows_in, rho, tid);
    tile.stage_filter(i_lo);
  }
  cuda::cp_async_commit();
  if (i_lo + kRows < rho_end) P::stage_row(rows_in, i_lo + kRows, tid);
  if (i_lo + 1 < i_hi) tile.stage_filter(i_lo + 1);
  cuda::cp_async_commit();

  const auto row_base = P::row_base(xs, grp);
  for (int i = i_lo; i < i_hi; ++i) {
    cuda::cp_async_wait<1>();  // this thread's copies of row i+15 and filter row i have landed
    __syncthreads();           // ... everyone's, and step i-1 is done with the slots and buffer refilled below
    if (i + kRows + 1 < rho_end) P::stage_row(rows_in, i + kRows + 1, tid);
    if (i + 2 < i_hi) tile.stage_filter(i + 2);
    cuda::cp_async_commit();
    P::compute_row(acc, row_base, fs + ((i % 3) * kGroups + grp) * S::kTapStride, i, g, t, mask);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the output tile
  P::store_tile(acc, xs, a, n, oh0, ow0, c0, tid);
}

template <class P>
void launch_ring_policy(const RingArgs& a, dim3 grid, cudaStream_t stream) {
  using S = typename P::Shape;
  auto kernel = dwconv_tc_ring_f16_kernel<P>;
  // Opt in above 48 KB on every call: cheap, and correct whichever device is current.
  if constexpr (S::kSmemBytes > 48 * 1024)
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
  // On padded copies (src_c > c) the kernel directly follows their padding: it may start during the copy's last wave.
  cuda::launch_kernel(kernel, grid, dim3(kThreads), S::kSmemBytes, stream, a.src_c != a.c, a);
}

}  // namespace
// The channel-pairs MMA policy's launcher (fwd_tc_ring_pairs.cu); launch_dwconv_tc_ring_f16 calls it.
void launch_tc_ring_pairs_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, bool transposed, int q, int src_c, cudaStream_t stream);

}  // namespace cnn::dwconv

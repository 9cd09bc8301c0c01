// Internal: the tiled backward-filter kernel of Flash-DWC, NHWC, stride-1 (sub-)problems, FP32 accumulation and FP32
// dW, on FP32 or FP16 inputs (T = float or __half: X and dY are staged as they are and widened as they are read).
// Block = 32 channels (one per lane) x warps over (row groups, column tiles, dY column splits); X rows (a ring) and
// one dY row segment are staged in SMEM by cp.async; each thread holds an r x tm tile of dW in registers and slides
// a tm-wide X window along the dY row. Stride s runs as s*s phase sub-problems (see docs/dwconv-bfc.md).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/cp_async.cuh"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv::bfc {

constexpr int kLanes = 32;    // channels per block; one (row, column) entry of SMEM is 128 bytes
constexpr int kMaxWarps = 8;  // warps per block (rg * ct * ws)
constexpr int kMaxThreads = kLanes * kMaxWarps;

// Everything a launch needs; "sub" quantities are those of one stride phase (pa, pb): the phase sees the
// sub-image Xp[r][q] = X[sh*r + pa - pt][sw*q + pb - pl] and sub-filter dW[pa + sh*i'][pb + sw*j'].
struct TileArgs {
  const void* x;    // (N, IH, IW, C) of the kernel's T
  const void* dy;   // (N, OH, OW, C) of the kernel's T
  float* dw;        // (FH, FW, C), zeroed; receives atomic adds
  int ih, iw, c, oh, ow, fw;
  int sh, sw, pt, pl;
  int pa, pb;                                 // phase
  int sfh, sfw;                               // sub-filter extents of the phase
  int rg, ct, ws;                             // warps per block along row groups, column tiles, dY column splits
  int bsub, bow;                              // dY columns per warp; per block segment (= ws * bsub)
  int xc;                                     // SMEM X row width: bow + ct*tm - 1 columns
  int n_rtiles, n_ctiles, n_cslices, n_segs;  // block decomposition of one chunk
  int rows;                                   // N*OH dY rows, split into z chunks
  int z;
  int copy_bytes;  // bytes per cp.async: 16, 8 or 4, the widest that divides a position's channel bytes and the
                   // tensors' alignment (bfc_tile_copy_bytes)
};

// Bytes of dynamic shared memory for a block with `bi` filter rows (rg * r), the args' widths and elem-byte inputs.
inline int tile_smem_bytes(int bi, int xc, int bow, int elem) { return ((bi + 1) * xc + 2 * bow) * kLanes * elem; }

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// One thread's share of staging one row into dst[cols][32]: SMEM column k holds global column gc0 + gstep*k of
// `row` (ncols columns x C channels), channels c0 .. c0+31; zeros outside [0, ncols), beyond C, or when !row_ok
// (`row` must still point into the tensor). A job copies kBytes (16: 4 floats or 8 halves, so 8 or 4 threads per
// column; 8 and 4 where a position's channels are not a multiple of 16 bytes, e.g. 124 or 998 halves); thread t
// takes the jobs of columns t/kPer, t/kPer + blockDim/kPer, ... The index math is hoisted out of the job loop, so a
// job costs a compare, a select, the copy and the increments (redone per job it would cost about as many
// instructions as the FFMAs of a 3x3 tile's row).
template <class T, int kBytes>
__device__ __forceinline__ void stage_cols(T* dst, const T* row, bool row_ok, int cols, int gc0, int gstep,
                                           int ncols, int c, int c0) {
  static_assert(kBytes == 16 || kBytes == 8 || kBytes == 4, "cp.async copies 16, 8 or 4 bytes");
  static_assert(kBytes >= int(sizeof(T)), "a job holds whole elements");
  constexpr int kWidth = kBytes / int(sizeof(T));  // elements per job
  constexpr int kPer = kLanes / kWidth;            // threads per SMEM column
  const int lc = (int(threadIdx.x) % kPer) * kWidth;
  const int kstep = int(blockDim.x) / kPer;  // columns between two jobs of one thread
  int k = int(threadIdx.x) / kPer;
  int gc = gc0 + gstep * k;
  const int gcstep = gstep * kstep;
  int64_t off = int64_t(gc) * c + c0 + lc;
  const int64_t offstep = int64_t(gcstep) * c;
  T* d = dst + k * kLanes + lc;
  const bool ok_c = row_ok && c0 + lc < c;
  for (; k < cols; k += kstep, gc += gcstep, off += offstep, d += kstep * kLanes) {
    const bool ok = ok_c && unsigned(gc) < unsigned(ncols);
    if constexpr (kBytes == 16)
      cuda::cp_async_cg16(d, ok ? row + off : row, ok);
    else if constexpr (kBytes == 8)
      cuda::cp_async_ca8(d, ok ? row + off : row, ok);
    else
      cuda::cp_async_ca4(d, ok ? row + off : row, ok);
  }
}

// stage_cols with the launch's copy width.
template <class T>
__device__ __forceinline__ void stage_cols_as(const TileArgs& a, T* dst, const T* row, bool row_ok, int cols, int gc0,
                                              int gstep, int ncols, int c0) {
  if (a.copy_bytes == 16)
    stage_cols<T, 16>(dst, row, row_ok, cols, gc0, gstep, ncols, a.c, c0);
  else if (a.copy_bytes == 8)
    stage_cols<T, 8>(dst, row, row_ok, cols, gc0, gstep, ncols, a.c, c0);
  else
    stage_cols<T, 4>(dst, row, row_ok, cols, gc0, gstep, ncols, a.c, c0);
}

// Stages sub-image row r_sub of image n, sub-columns q0 .. q0+xc-1, channels c0 .. c0+31 into dst[xc][32]
// (zeros outside X and beyond C).
template <class T>
__device__ __forceinline__ void stage_x_row(const TileArgs& a, T* dst, int n, int r_sub, int c0, int q0) {
  const int ih = a.sh * r_sub + a.pa - a.pt;
  const bool row_ok = ih >= 0 && ih < a.ih;
  const T* row = static_cast<const T*>(a.x) + (int64_t(n) * a.ih + (row_ok ? ih : 0)) * a.iw * a.c;
  stage_cols_as(a, dst, row, row_ok, a.xc, a.sw * q0 + a.pb - a.pl, a.sw, a.iw, c0);
}

// Stages dY row g (= n*OH + oh), columns u0 .. u0+bow-1, channels c0 .. c0+31 into dst[bow][32].
template <class T>
__device__ __forceinline__ void stage_dy_row(const TileArgs& a, T* dst, int g, int c0, int u0) {
  const T* row = static_cast<const T*>(a.dy) + int64_t(g) * a.ow * a.c;
  stage_cols_as(a, dst, row, true, a.bow, u0, 1, a.ow, c0);
}

// One dY position v of the sliding window: X offset v+tm-1 enters ring slot (s+tm-1)%tm (s = v % tm, a constant
// after unrolling), then acc[r][t] += X[v+t] * dY[v] for the tile's r rows and tm columns.
template <int R, int TM, class T>
__device__ __forceinline__ void slide_step(float (&acc)[R][TM], float (&win)[R][TM], const T* const (&xr)[R],
                                           const T* dyr, int v, int s) {
  const float d = to_f32(dyr[v * kLanes]);
#pragma unroll
  for (int r = 0; r < R; ++r) win[r][(s + TM - 1) % TM] = to_f32(xr[r][(v + TM - 1) * kLanes]);
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < TM; ++t) acc[r][t] = fmaf(win[r][(s + t) % TM], d, acc[r][t]);
}

// acc[r][t] += sum_{v < nsteps} xr[r][(v+t)*32] * dyr[v*32]: the tile's share of one dY row.
template <int R, int TM, class T>
__device__ __forceinline__ void accumulate_row(float (&acc)[R][TM], const T* const (&xr)[R], const T* dyr,
                                               int nsteps) {
  float win[R][TM];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t + 1 < TM; ++t) win[r][t] = to_f32(xr[r][t * kLanes]);
  int v = 0;
  for (; v + TM <= nsteps; v += TM) {
#pragma unroll
    for (int s = 0; s < TM; ++s) slide_step<R, TM>(acc, win, xr, dyr, v + s, s);
  }
#pragma unroll
  for (int s = 0; s < TM; ++s)
    if (v + s < nsteps) slide_step<R, TM>(acc, win, xr, dyr, v + s, s);
}

// Ring slot of X row slot + k (both < nslot + the ring size), without a division per row.
__device__ __forceinline__ int ring_slot(int slot, int k, int nslot) {
  const int s = slot + k;
  return s >= nslot ? s - nslot : s;
}

// Stages every X row the block needs for dY row g (image n, row oh; the ring slot of sub-image row oh + i0 is slot0)
// plus the dY row itself (chunk start, new image).
template <class T>
__device__ __forceinline__ void stage_full(const TileArgs& a, T* xs, T* dys, int g, int n, int oh, int slot0,
                                           int bi, int i0, int c0, int u0, int q0) {
  for (int k = 0; k < bi; ++k) {
    stage_x_row(a, xs + ring_slot(slot0, k, bi + 1) * a.xc * kLanes, n, oh + i0 + k, c0, q0);
  }
  stage_dy_row(a, dys + (g & 1) * a.bow * kLanes, g, c0, u0);
}

// Stages what dY row g + 1 needs beyond row g of the same image (row oh, ring slot slot0 as above): its last X row
// (sub-image row oh + i0 + bi, which takes the slot row oh + i0 - 1 left) and the dY row.
template <class T>
__device__ __forceinline__ void stage_next(const TileArgs& a, T* xs, T* dys, int g, int n, int oh, int slot0,
                                           int bi, int i0, int c0, int u0, int q0) {
  stage_x_row(a, xs + ring_slot(slot0, bi, bi + 1) * a.xc * kLanes, n, oh + i0 + bi, c0, q0);
  stage_dy_row(a, dys + ((g + 1) & 1) * a.bow * kLanes, g + 1, c0, u0);
}

// Hybrid accumulation (ha) on FP16 inputs: lanes hold channel pairs (T = __half2, so a block slice is 64 channels
// in the same 128 bytes per position as 32 floats, and TileArgs::c counts pairs). Per dY column one HFMA2 per tap
// adds X * dY to an FP16 partial; the partials enter the FP32 sums after every run of kBfcHaRun dY columns (runs
// start at multiples of kBfcHaRun: the planner aligns warp segments) and at the segment's end, as the host
// emulation (dwconv_backward_filter_reference_f16) forms them. Zero-filled X columns give HFMA2(0, dy, p) = p, the
// emulation's skipped step.
template <int R, int TM>
__device__ __forceinline__ void flush_ha(float2 (&acc)[R][TM], __half2 (&part)[R][TM]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < TM; ++t) {
      const float2 f = __half22float2(part[r][t]);
      acc[r][t].x += f.x;
      acc[r][t].y += f.y;
      part[r][t] = __float2half2_rn(0.f);
    }
}

template <int R, int TM>
__device__ __forceinline__ void slide_step_ha(__half2 (&part)[R][TM], __half2 (&win)[R][TM],
                                              const __half2* const (&xr)[R], const __half2* dyr, int v, int s) {
  const __half2 d = dyr[v * kLanes];
#pragma unroll
  for (int r = 0; r < R; ++r) win[r][(s + TM - 1) % TM] = xr[r][(v + TM - 1) * kLanes];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < TM; ++t) part[r][t] = __hfma2(win[r][(s + t) % TM], d, part[r][t]);
}

// The window of step v: xr[r][(v + t) * 32] in slot t (t < TM - 1); slot TM - 1 is loaded by the step itself.
template <int R, int TM>
__device__ __forceinline__ void load_window_ha(__half2 (&win)[R][TM], const __half2* const (&xr)[R], int v) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t + 1 < TM; ++t) win[r][t] = xr[r][(v + t) * kLanes];
}

// acc[r][t] += the run-wise FP16 sums of xr[r][(v+t)*32] * dyr[v*32] over v < nsteps (v = 0 starts a run).
// Whole runs reload the window at their first step, so a run's kBfcHaRun steps unroll with compile-time window
// slots and end in one flush. Testing for a run's end at every step instead (the window's phase within a run
// differs from run to run when TM does not divide kBfcHaRun) would put a branch around a flush after each unrolled
// step, and branch bookkeeping would become a large share of the instructions. The window reload costs R * (TM - 1)
// shared-memory loads per run, against R * TM * kBfcHaRun HFMA2.
template <int R, int TM>
__device__ __forceinline__ void accumulate_row(float2 (&acc)[R][TM], const __half2* const (&xr)[R],
                                               const __half2* dyr, int nsteps) {
  static_assert(TM <= kBfcHaRun, "a run holds at least one window");
  __half2 win[R][TM], part[R][TM];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < TM; ++t) part[r][t] = __float2half2_rn(0.f);  // flush_ha leaves them zero again
  int v = 0;
  for (; v + kBfcHaRun <= nsteps; v += kBfcHaRun) {
    load_window_ha<R, TM>(win, xr, v);
#pragma unroll
    for (int s = 0; s < kBfcHaRun; ++s) slide_step_ha<R, TM>(part, win, xr, dyr, v + s, s % TM);
    flush_ha<R, TM>(acc, part);
  }
  if (v == nsteps) return;
  // The segment's last, short run: fewer than kBfcHaRun steps, one flush at its end.
  load_window_ha<R, TM>(win, xr, v);
  for (; v + TM <= nsteps; v += TM) {
#pragma unroll
    for (int s = 0; s < TM; ++s) slide_step_ha<R, TM>(part, win, xr, dyr, v + s, s);
  }
#pragma unroll
  for (int s = 0; s < TM; ++s)
    if (v + s < nsteps) slide_step_ha<R, TM>(part, win, xr, dyr, v + s, s);
  flush_ha<R, TM>(acc, part);
}

// T = float or __half: FP32 FMAs on widened values; T = __half2: hybrid accumulation (above), dW gets both channels.
template <class T, int R, int TM>
__global__ void __launch_bounds__(kMaxThreads) bfc_tile_kernel(const TileArgs a) {
  constexpr bool kHa = std::is_same_v<T, __half2>;
  using Acc = std::conditional_t<kHa, float2, float>;
  extern __shared__ float4 smem4[];           // float4: 16-byte alignment for cp.async
  T* const xs = reinterpret_cast<T*>(smem4);  // ring of bi+1 X rows, [bi+1][xc][32]
  const int bi = a.rg * R, bj = a.ct * TM, nslot = bi + 1;
  T* const dys = xs + nslot * a.xc * kLanes;  // double-buffered dY row, [2][bow][32]

  // blockIdx.x: filter tile fastest, so blocks sharing X/dY rows (same chunk, segment, slice) run together in L2.
  int bid = blockIdx.x;
  const int ftile = bid % (a.n_rtiles * a.n_ctiles);
  bid /= a.n_rtiles * a.n_ctiles;
  const int cslice = bid % a.n_cslices;
  bid /= a.n_cslices;
  const int seg = bid % a.n_segs, chunk = bid / a.n_segs;
  const int i0 = (ftile / a.n_ctiles) * bi, j0 = (ftile % a.n_ctiles) * bj;  // block origin in the sub-filter
  const int c0 = cslice * kLanes, u0 = seg * a.bow, q0 = u0 + j0;
  const int g_begin = int(int64_t(a.rows) * chunk / a.z), g_end = int(int64_t(a.rows) * (chunk + 1) / a.z);

  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int wsi = warp % a.ws, wct = (warp / a.ws) % a.ct, wrg = warp / (a.ws * a.ct);
  const int ti0 = i0 + wrg * R, tj0 = j0 + wct * TM;  // this thread's tile origin in the sub-filter
  const int wu = wsi * a.bsub;                        // first dY column of this warp, relative to u0
  const int nsteps = (ti0 < a.sfh && tj0 < a.sfw) ? max(0, min(a.bsub, a.ow - u0 - wu)) : 0;
  const int kb = wu + wct * TM;  // SMEM column of X[v = 0, t = 0] for this warp

  Acc acc[R][TM];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < TM; ++t) acc[r][t] = Acc{};

  if (g_begin < g_end) {
    // (n, oh) of row g and the ring slot of its first X row, advanced per row without divisions.
    int n = g_begin / a.oh, oh = g_begin - n * a.oh, slot0 = (oh + i0) % nslot;
    stage_full(a, xs, dys, g_begin, n, oh, slot0, bi, i0, c0, u0, q0);
    cuda::cp_async_commit();
    for (int g = g_begin; g < g_end; ++g) {
      const bool has_next = g + 1 < g_end;
      const bool incremental = has_next && oh + 1 < a.oh;  // next row is in the same image: one new X row
      if (incremental) {
        stage_next(a, xs, dys, g, n, oh, slot0, bi, i0, c0, u0, q0);  // overlaps this row's compute
        cuda::cp_async_commit();
        cuda::cp_async_wait<1>();
      } else {
        cuda::cp_async_wait<0>();
      }
      __syncthreads();
      if (nsteps > 0) {
        const T* xr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) xr[r] = xs + (ring_slot(slot0, wrg * R + r, nslot) * a.xc + kb) * kLanes + lane;
        accumulate_row<R, TM>(acc, xr, dys + ((g & 1) * a.bow + wu) * kLanes + lane, nsteps);
      }
      __syncthreads();  // every warp is done with the slots the next staging overwrites
      if (incremental) {
        ++oh;
        slot0 = ring_slot(slot0, 1, nslot);
      } else if (has_next) {
        ++n;
        oh = 0;
        slot0 = i0 % nslot;
        stage_full(a, xs, dys, g + 1, n, oh, slot0, bi, i0, c0, u0, q0);
        cuda::cp_async_commit();
      }
    }
  }

  const int c = c0 + lane;
  if (nsteps == 0 || c >= a.c) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int si = ti0 + r;
    if (si >= a.sfh) continue;
#pragma unroll
    for (int t = 0; t < TM; ++t) {
      const int sj = tj0 + t;
      if (sj >= a.sfw) continue;
      const int64_t i = a.pa + int64_t(a.sh) * si, j = a.pb + int64_t(a.sw) * sj;
      if constexpr (kHa) {
        float* const d = a.dw + (i * a.fw + j) * (2 * int64_t(a.c)) + 2 * c;  // a.c counts channel pairs
        atomicAdd(d, acc[r][t].x);
        atomicAdd(d + 1, acc[r][t].y);
      } else {
        atomicAdd(a.dw + (i * a.fw + j) * a.c + c, acc[r][t]);
      }
    }
  }
}

}  // namespace cnn::dwconv::bfc

// FP16 depthwise backward-filter for small filters (FH, FW <= 7) at stride 1, FP32 accumulation, FP32 dW:
// dW[i,j,c] = sum_{n,oh,ow} X[n, oh+i-pT, ow+j-pL, c] * dY[n,oh,ow,c]; X, dY (N,H,W,C) FP16, dW (FH,FW,C) FP32.
// Reference: dwconv_backward_filter_reference (FP64). Design notes: docs/dwconv-fp16.md (backward-filter).
//
// Design (why these numbers):
// - Thread = 4 consecutive channels (one 8-byte load; 32 lanes = 128 channels = one 256-byte segment per warp load)
//   x nr <= kRt filter rows x all FW columns, for one dY row at a time. It slides along the row: per dY column one
//   dY load and, per filter row, one new X column enter an FP32 window (a ring of FW columns whose slot indices are
//   compile-time constants once the column loop is unrolled by a multiple of FW), then nr*FW*4 FMAs. Every loaded
//   value is widened to FP32 once per (thread, dY row), not once per tap: 3x3 costs 16 conversions per 36 FMAs.
// - Registers: window + accumulators = 2 * nr * FW * 4 floats, nr * FW <= 10 (kRtMax): 3x3 72 floats; 5x5 and 7x7
//   run one filter row per thread (40, 56 floats: 5x5 in pairs of rows spilled at the 128-register cap). 8 channels
//   per thread would need 144 floats at 3x3 (spills) or a re-widening of every window value per tap (one conversion
//   per FMA). The compiler hoists the loads of an unrolled block of steps (memory-level parallelism), which is where
//   the rest of the registers go: 3x3 118, 5x5 90, 7x7 114 (ptxas, sm_90, no spills; docs/dwconv-fp16.md).
// - Traffic: a block (<= 512 threads, 1 per SM at these register counts: 14-16 warps) = ng filter-row groups x R
//   row slots x G channel groups of one channel slice (G <= 32, fewer so that R >= kMinRows: 3x3 1x16x32, 5x5
//   5x6x16, 7x7 7x4x16). Its R row slots take R consecutive dY rows and its ng groups the same rows, so the FH-fold
//   re-read of X (rows shared by neighbouring dY rows) and the ng-fold re-read of dY meet in L1 within a block step;
//   only the FH-1 halo rows come again from L2 at the next step. DRAM sees X and dY about once (3x3 on 128^4:
//   537 MB, ~0.2 ms at 2.7 TB/s; ~0.5 G warp instructions, ~0.15 ms at 3 IPC per SM). Measured on the H200:
//   0.513 ms (2.1 TB/s), 0.67x cuDNN's 0.344 ms; not profiled yet (docs/perf/dwconv-fp16-h200.md).
// - Work split: the N*OH dY rows are cut into Z chunks of whole block steps, and OW into strips only when rows are
//   too few, for about two waves of resident blocks. A block reduces its threads' accumulators with shared-memory
//   float atomics (layout [tap][channel in group][group]: a warp's adds hit distinct banks) and then issues one
//   FP32 global atomicAdd per (tap, channel) into the dW the launcher zeroed.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {
namespace {

constexpr int kCpt = 4;         // channels per thread: one 8-byte load of 4 halves
constexpr int kBlockMax = 512;  // threads per block at most: ng * R * G
constexpr int kMaxGroups = 32;  // channel groups per slice: 128 channels, one warp-wide 256-byte load
constexpr int kMinRows = 4;     // row slots per block step the planner aims for (X reuse in L1 across dY rows)
constexpr int kMinStrip = 32;   // narrowest column strip the planner cuts: window refill (FW-1)/strip <= 19%
// Most filter rows per thread for a filter width: nr * FW <= 10 (window + accumulators <= 80 floats), lowered where
// ptxas spilled at 128 registers (FW 1: 7 -> 5, FW 2: 4 -> 3, FW 5: 2 -> 1).
constexpr int kRtMax[kBfcSmallMaxF + 1] = {0, 5, 3, 3, 2, 1, 1, 1};

struct SmallArgs {
  const __half* __restrict__ x;   // (N, IH, IW, C)
  const __half* __restrict__ dy;  // (N, OH, OW, C)
  float* __restrict__ dw;         // (FH, FW, C), zeroed; one atomic add per (tap, channel) per block
  int ih, iw, c, oh, ow, fh, pt, pl;
  int ng;                         // filter-row groups: group fg has rows [fg*FH/ng, (fg+1)*FH/ng)
  int groups, g_slice, n_slices;  // channel groups of kCpt: in all, per slice, slices
  int rows_step;                  // R consecutive dY rows per block step (block = ng * R * g_slice threads)
  int strip, n_strips;            // dY column strips of `strip` columns
  int rows, steps, z;             // N*OH dY rows = `steps` block steps (the last one partial) in z chunks
};

// What one block covers: one channel slice, dY columns [s0, s0 + count), dY rows (g = n*OH + oh) [g_begin, g_end).
struct BlockWork {
  int slice, s0, count, g_begin, g_end;
};

// One dY row as a thread sees it: its nr X rows (ih = oh + i_lo + k - pT) and the dY row, both already offset to
// the thread's channel; xc0 = s0 - pL is the X column of tap 0 at the strip's first dY column.
template <int kNr>
struct RowPtrs {
  int x[kNr];    // element offset of X row ih at channel c (< x_elems < 2^31: 32 bits, one register per row)
  bool ok[kNr];  // 0 <= ih < IH; else the row reads as zeros (padding)
  const __half* dy;
  int xc0;
};

__device__ __forceinline__ void load4(const __half* p, float (&out)[kCpt]) {
  const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
}

// X column xc of every row of the thread into ring slot `slot`; zero outside the image (padding).
template <int kFw, int kNr>
__device__ __forceinline__ void load_column(float (&win)[kNr][kFw][kCpt], int slot, const RowPtrs<kNr>& r, int xc,
                                            const SmallArgs& a) {
  const bool col_ok = static_cast<unsigned>(xc) < static_cast<unsigned>(a.iw);
#pragma unroll
  for (int k = 0; k < kNr; ++k) {
    if (col_ok && r.ok[k]) {
      load4(a.x + (r.x[k] + xc * a.c), win[k][slot]);  // 0 <= xc < IW: the sum stays below x_elems
    } else {
#pragma unroll
      for (int ch = 0; ch < kCpt; ++ch) win[k][slot][ch] = 0.f;
    }
  }
}

// dY column s0 + col, ring phase (col % FW) given as `phase`. Invariant (proof in slide_row): before the step, slot
// (phase + j) % FW holds X column s0 + col + j - pL for j < FW-1; the step loads tap FW-1's column into the last slot.
template <int kFw, int kNr>
__device__ __forceinline__ void step(float (&acc)[kNr][kFw][kCpt], float (&win)[kNr][kFw][kCpt],
                                     const RowPtrs<kNr>& r, int col, int phase, const SmallArgs& a) {
  load_column<kFw, kNr>(win, (phase + kFw - 1) % kFw, r, r.xc0 + col + kFw - 1, a);
  float d[kCpt];
  load4(r.dy + col * a.c, d);  // col * C < OW * C: no int overflow
#pragma unroll
  for (int k = 0; k < kNr; ++k)
#pragma unroll
    for (int j = 0; j < kFw; ++j)
#pragma unroll
      for (int ch = 0; ch < kCpt; ++ch) acc[k][j][ch] = fmaf(win[k][(phase + j) % kFw][ch], d[ch], acc[k][j][ch]);
}

// One dY row's strip: acc[k][j][ch] += X[n, ih_k, s0 + col + j - pL, c + ch] * dY[g, s0 + col, c + ch] for every
// col < count. Proof of the ring: the prologue puts column xc0 + t in slot t (t < FW-1), i.e. the invariant of step
// at col = 0, phase 0. Step (col, phase) writes column xc0 + col + FW-1 to slot (phase + FW-1) % FW; after it, for
// col + 1 and phase + 1: slot (phase + 1 + j) % FW for j < FW-1 is either an old slot (phase + j') % FW with
// j' = j + 1 <= FW-1, holding xc0 + col + j' = xc0 + (col + 1) + j, or (j = FW-2) the slot just written, holding
// xc0 + col + FW-1 = xc0 + (col + 1) + j. Both loops advance col by kU, a multiple of FW, so phase = s % FW.
template <int kFw, int kNr>
__device__ __forceinline__ void slide_row(float (&acc)[kNr][kFw][kCpt], const RowPtrs<kNr>& r, int count,
                                          const SmallArgs& a) {
  constexpr int kU = kFw >= 3 ? kFw : 4;  // steps per unrolled block: a multiple of FW, >= 3 steps of loads
  static_assert(kU % kFw == 0, "the ring phase of step s must be s % FW");
  float win[kNr][kFw][kCpt];
#pragma unroll
  for (int t = 0; t + 1 < kFw; ++t) load_column<kFw, kNr>(win, t, r, r.xc0 + t, a);
  int col = 0;
  for (; col + kU <= count; col += kU) {
#pragma unroll
    for (int s = 0; s < kU; ++s) step<kFw, kNr>(acc, win, r, col + s, s % kFw, a);
  }
#pragma unroll
  for (int s = 0; s < kU; ++s)
    if (col + s < count) step<kFw, kNr>(acc, win, r, col + s, s % kFw, a);
}

// Thread t of the block = (fg, r_off, cg) with t = (fg * R + r_off) * G + cg takes filter rows [i_lo, i_lo + nr) of
// row group fg, channels c = (slice*G + cg)*4 .. +3 and dY rows g = g_begin + r_off, + R, ... < g_end. The row slots
// partition the chunk, chunks partition [0, N*OH) and strips [0, OW), so every (g, ow) term reaches each (tap,
// channel) exactly once (a row whose nr X rows all lie in the padding adds zero and is skipped). The thread's sums
// go into the block's shared-memory sums red[((i*FW + j)*4 + ch)*G + cg].
template <int kFw, int kNr>
__device__ __forceinline__ void accumulate_rows(const SmallArgs& a, const BlockWork& bw, int i_lo, int r_off, int cg,
                                                float* red) {
  const int c = (bw.slice * a.g_slice + cg) * kCpt;
  float acc[kNr][kFw][kCpt] = {};
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
    r.xc0 = bw.s0 - a.pl;
    slide_row<kFw, kNr>(acc, r, bw.count, a);
  }
#pragma unroll
  for (int k = 0; k < kNr; ++k)
#pragma unroll
    for (int j = 0; j < kFw; ++j)
#pragma unroll
      for (int ch = 0; ch < kCpt; ++ch)
        atomicAdd(&red[(((i_lo + k) * kFw + j) * kCpt + ch) * a.g_slice + cg], acc[k][j][ch]);
}

// Block index = slice + n_slices * (strip + n_strips * chunk); the block holds all ng filter-row groups of its piece
// of input, so the groups' reads of the same X and dY rows meet in L1. Groups hold kRt or kRt - 1 rows (uniform per
// warp when R*G is a multiple of 32). Dynamic shared memory: FH*FW*4*G floats of block sums.
template <int kFw, int kRt>
__global__ void __launch_bounds__(kBlockMax, 1) bfc_f16_small_kernel(const SmallArgs a) {
  extern __shared__ float red[];
  const int t = static_cast<int>(threadIdx.x), gs = a.g_slice, per_group = a.rows_step * gs;
  int b = static_cast<int>(blockIdx.x);
  BlockWork bw;
  bw.slice = b % a.n_slices;
  b /= a.n_slices;
  const int strip = b % a.n_strips, chunk = b / a.n_strips;
  bw.s0 = strip * a.strip;
  bw.count = min(a.strip, a.ow - bw.s0);
  const int st_begin = static_cast<int>(static_cast<long long>(a.steps) * chunk / a.z);
  const int st_end = static_cast<int>(static_cast<long long>(a.steps) * (chunk + 1) / a.z);
  bw.g_begin = st_begin * a.rows_step;
  bw.g_end = min(st_end * a.rows_step, a.rows);  // steps * R < rows + R: no int overflow

  const int red_n = a.fh * kFw * kCpt * gs;
  for (int e = t; e < red_n; e += blockDim.x) red[e] = 0.f;
  __syncthreads();
  const int fg = t / per_group, r_off = (t % per_group) / gs, cg = t % gs;
  const int i_lo = fg * a.fh / a.ng, nr = (fg + 1) * a.fh / a.ng - i_lo;
  if (fg < a.ng && bw.slice * gs + cg < a.groups) {
    if (nr == kRt) {
      accumulate_rows<kFw, kRt>(a, bw, i_lo, r_off, cg, red);
    } else {
      if constexpr (kRt > 1) accumulate_rows<kFw, kRt - 1>(a, bw, i_lo, r_off, cg, red);
    }
  }
  __syncthreads();
  for (int e = t; e < red_n; e += blockDim.x) {
    const int group_e = bw.slice * gs + e % gs;
    if (group_e >= a.groups) continue;
    const int tap_ch = e / gs;  // (i * FW + j) * 4 + ch: dW's (tap, channel-in-group) order
    atomicAdd(a.dw + static_cast<long long>(tap_ch / kCpt) * a.c + group_e * kCpt + tap_ch % kCpt, red[e]);
  }
}

using KernelFn = void (*)(SmallArgs);

template <int kFw, int kRt = kRtMax[kFw]>
KernelFn kernel_for_rows(int rt) {
  if constexpr (kRt >= 1) {
    if (rt == kRt) return bfc_f16_small_kernel<kFw, kRt>;
    return kernel_for_rows<kFw, kRt - 1>(rt);
  } else {
    return nullptr;
  }
}

KernelFn select_kernel(int fw, int rt) {
  switch (fw) {
    case 1: return kernel_for_rows<1>(rt);
    case 2: return kernel_for_rows<2>(rt);
    case 3: return kernel_for_rows<3>(rt);
    case 4: return kernel_for_rows<4>(rt);
    case 5: return kernel_for_rows<5>(rt);
    case 6: return kernel_for_rows<6>(rt);
    case 7: return kernel_for_rows<7>(rt);
    default: return nullptr;
  }
}

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

struct SmallPlan {
  int rt = 1, ng = 1;                            // rows per thread (kernel), filter-row groups per block
  int g_slice = 1, n_slices = 1, rows_step = 1;  // G, slices, R
  int strip = 1, n_strips = 1, steps = 1, z = 1;
  int threads = 1, smem = 0, resident = 1;  // block size, dynamic shared bytes, blocks per SM (occupancy)
};

// Row groups as balanced as kRtMax allows. Channel slices of <= 32 groups (fewer, down to 8, when that is what
// lets R reach kMinRows within kBlockMax threads), balanced. Then about two waves of resident blocks: Z chunks of
// block steps first, strips of >= kMinStrip columns only when rows are too few.
SmallPlan make_small_plan(const DwconvParams& p, const BfcF16SmallForce& force) {
  CNN_CHECK(p.fh >= 1 && p.fh <= kBfcSmallMaxF && p.fw >= 1 && p.fw <= kBfcSmallMaxF && p.c % kCpt == 0,
            "dwconv bfc f16 small: expected FH, FW in 1..", kBfcSmallMaxF, " and C % ", kCpt, " == 0, got ", p.str());
  SmallPlan s;
  s.ng = ceil_div(p.fh, kRtMax[p.fw]);
  s.rt = ceil_div(p.fh, s.ng);
  int g_cap = kMaxGroups;
  while (g_cap > 8 && s.ng * kMinRows * g_cap > kBlockMax) g_cap /= 2;
  const int groups = p.c / kCpt;
  s.n_slices = ceil_div(groups, g_cap);
  s.g_slice = ceil_div(groups, s.n_slices);
  s.rows_step = std::max(1, kBlockMax / (s.ng * s.g_slice));
  s.threads = s.ng * s.rows_step * s.g_slice;
  s.smem = p.fh * p.fw * kCpt * s.g_slice * static_cast<int>(sizeof(float));
  s.steps = ceil_div(static_cast<long long>(p.n) * p.oh(), s.rows_step);
  int dev = 0, sms = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&dev));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CNN_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.resident, select_kernel(p.fw, s.rt), s.threads, s.smem));
  s.resident = std::max(1, s.resident);
  const long long target = 2LL * sms * s.resident;
  const int ow = p.ow();
  if (force.strip > 0) {
    s.strip = std::min(force.strip, ow);
  } else {
    int n_strips = 1;
    if (static_cast<long long>(s.n_slices) * s.steps < target)
      n_strips = std::clamp(ceil_div(target, static_cast<long long>(s.n_slices) * s.steps), 1,
                            std::max(1, ow / kMinStrip));
    s.strip = ceil_div(ow, n_strips);
  }
  s.n_strips = ceil_div(ow, s.strip);
  const int z = force.z > 0 ? force.z : ceil_div(target, static_cast<long long>(s.n_slices) * s.n_strips);
  s.z = std::clamp(z, 1, s.steps);
  return s;
}

bool aligned8(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 8 == 0; }

}  // namespace

bool bfc_f16_small_supports(const DwconvParams& p, const void* x, const void* dy) {
  return p.stride_h == 1 && p.stride_w == 1 && p.fh <= kBfcSmallMaxF && p.fw <= kBfcSmallMaxF &&
         p.c % kCpt == 0 && aligned8(x) && aligned8(dy);
}

std::string dwconv_bfc_f16_small_path_name(const DwconvParams& p, const BfcF16SmallForce& force) {
  const SmallPlan s = make_small_plan(p, force);
  return str_cat("bfc f16 fp32 small cuda-core F=", p.fh, "x", p.fw, " rows/thread=", s.rt, " row-groups=", s.ng,
                 " ch/thread=", kCpt, " slices=", s.n_slices, "x", s.g_slice * kCpt, "ch rows/step=", s.rows_step,
                 " block=", s.threads, " strip=", s.strip, "x", s.n_strips, " Z=", s.z, " blocks/SM=", s.resident);
}

void launch_dwconv_bfc_f16_small(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                 const BfcF16SmallForce& force, cudaStream_t stream) {
  p.validate("launch_dwconv_bfc_f16_small");
  CNN_CHECK(bfc_f16_small_supports(p, x, dy), "dwconv bfc f16 small: expected stride 1, FH and FW <= ",
            kBfcSmallMaxF, ", C % ", kCpt, " == 0 and 8-byte aligned x and dy, got ", p.str());
  CNN_CHECK(dw != nullptr && force.z >= 0 && force.strip >= 0,
            "dwconv bfc f16 small: expected non-null dw and forced Z, strip >= 0, got Z=", force.z,
            " strip=", force.strip);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  const SmallPlan s = make_small_plan(p, force);
  const SmallArgs a{x,          dy,     dw,         p.ih,       p.iw,       p.c,
                    p.oh(),     p.ow(), p.fh,       p.pad_top,  p.pad_left, s.ng,
                    p.c / kCpt, s.g_slice, s.n_slices, s.rows_step, s.strip,  s.n_strips,
                    p.n * p.oh(), s.steps, s.z};
  const long long blocks = static_cast<long long>(s.n_slices) * s.n_strips * s.z;
  CNN_CHECK(blocks < (1LL << 31), "dwconv bfc f16 small: grid too large (", blocks, " blocks) for ", p.str());
  const KernelFn kernel = select_kernel(p.fw, s.rt);
  kernel<<<static_cast<unsigned>(blocks), s.threads, s.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_f16_small_kernel");
}

}  // namespace cnn::dwconv

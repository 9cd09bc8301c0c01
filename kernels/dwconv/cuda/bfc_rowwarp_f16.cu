// FP16 depthwise backward-filter (BFC) on CUDA cores, FP32 dW: dW[i,j,c] = sum_{n,oh,ow} X[n, oh*sH+i-pT,
// ow*sW+j-pL, c] * dY[n,oh,ow,c], with FP32 accumulation or hybrid FP16/FP32 accumulation (dwconv.h, BfcAccum).
// Reference: dwconv_backward_filter_reference (FP64) and its emulation dwconv_backward_filter_reference_f16.
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

constexpr int kLanes = 32;
constexpr int kSliceC = 2 * kLanes;  // channels per block: one half2 per lane, a 128-byte row per warp
constexpr int kMaxRowsPerBlock = 4;  // warps per block, one filter row each
constexpr int kMaxTm = 9;            // filter columns per thread (width-9 column tiles, flash-dwc.md 5.2)

struct BfcArgs {
  const __half* __restrict__ x;   // (N, IH, IW, C)
  const __half* __restrict__ dy;  // (N, OH, OW, C)
  float* __restrict__ dw;         // (FH, FW, C), zeroed; receives atomic adds
  int ih, iw, c, oh, ow, fh, fw, sh, sw, pt, pl;
  int j0;                  // first filter column of this launch's tiles
  int n_ctiles;            // column tiles of TM columns in this launch
  int rows_per_block, n_rgroups, n_cslices;
  int rows, z;             // N*OH dY rows split into z chunks
  int pair_ok;             // C even and x, dy 4-byte aligned: half2 loads
};

// Channels c and c+1 (c+1 only when `both`), zero when the column is outside [0, extent).
__device__ __forceinline__ __half2 load2(const __half* p, int col, int extent, int c, bool both, bool pair_ok) {
  if (static_cast<unsigned>(col) >= static_cast<unsigned>(extent)) return __half2half2(__ushort_as_half(0));
  const __half* q = p + static_cast<long long>(col) * c;
  if (pair_ok) return __ldg(reinterpret_cast<const __half2*>(q));
  return __halves2half2(__ldg(q), both ? __ldg(q + 1) : __ushort_as_half(0));
}

// Per-thread accumulation state: kTm filter columns x 2 channels. fp32: window of widened inputs, FP32 FMAs.
// ha: FP16 window and FP16 partials (HFMA2), each partial added into FP32 at the end of its run of kBfcHaRun dY
// columns (the run boundaries of dwconv.h, which the host emulation follows).
template <int kTm, bool kHa>
struct Accumulator {
  using Win = std::conditional_t<kHa, __half2, float2>;
  float2 acc[kTm];
  __half2 part[kTm];
  Win win[kTm];

  __device__ __forceinline__ static Win widen(__half2 v) {
    if constexpr (kHa)
      return v;
    else
      return __half22float2(v);
  }
  __device__ __forceinline__ void init() {
#pragma unroll
    for (int t = 0; t < kTm; ++t) {
      acc[t] = make_float2(0.f, 0.f);
      part[t] = __half2half2(__ushort_as_half(0));
    }
  }
  // dY column ow (ring phase s = ow % kTm): X column xc enters slot (s + kTm - 1) % kTm, then column t of the tile
  // takes X[ow + t] * dY[ow].
  template <int kS>
  __device__ __forceinline__ void step(const __half* x_row, const __half* dy_row, int ow, int xc, const BfcArgs& a,
                                       int c, bool both) {
    win[(kS + kTm - 1) % kTm] = widen(load2(x_row, xc, a.iw, a.c, both, a.pair_ok));
    const __half2 d = load2(dy_row, ow, a.ow, a.c, both, a.pair_ok);
    if constexpr (kHa) {
#pragma unroll
      for (int t = 0; t < kTm; ++t) part[t] = __hfma2(win[(kS + t) % kTm], d, part[t]);
      if (((ow + 1) & (kBfcHaRun - 1)) == 0 || ow + 1 == a.ow) {
#pragma unroll
        for (int t = 0; t < kTm; ++t) {
          const float2 p = __half22float2(part[t]);
          acc[t].x += p.x;
          acc[t].y += p.y;
          part[t] = __half2half2(__ushort_as_half(0));
        }
      }
    } else {
      const float2 df = __half22float2(d);
#pragma unroll
      for (int t = 0; t < kTm; ++t) {
        acc[t].x = fmaf(win[(kS + t) % kTm].x, df.x, acc[t].x);
        acc[t].y = fmaf(win[(kS + t) % kTm].y, df.y, acc[t].y);
      }
    }
  }
};
static_assert((kBfcHaRun & (kBfcHaRun - 1)) == 0, "the run test uses a mask");

template <int kS, int kTm, bool kHa>
__device__ __forceinline__ void step_block(Accumulator<kTm, kHa>& st, const __half* x_row, const __half* dy_row,
                                           int v, int xc0, const BfcArgs& a, int c, bool both, int limit) {
  if constexpr (kS < kTm) {
    if (v + kS < limit) {
      st.template step<kS>(x_row, dy_row, v + kS, (v + kS) * a.sw + xc0 + kTm - 1, a, c, both);
      step_block<kS + 1, kTm, kHa>(st, x_row, dy_row, v, xc0, a, c, both, limit);
    }
  }
}

// One dY row against the X row of filter row i: dY columns ascending, kTm steps per unrolled block so every ring
// index is a compile-time constant. kTm > 1 implies stride 1 along W (the window slides by one column per step).
template <int kTm, bool kHa>
__device__ __forceinline__ void accumulate_row(Accumulator<kTm, kHa>& st, const __half* x_row, const __half* dy_row,
                                               int xc0, const BfcArgs& a, int c, bool both) {
#pragma unroll
  for (int t = 0; t + 1 < kTm; ++t) st.win[t] = st.widen(load2(x_row, xc0 + t, a.iw, a.c, both, a.pair_ok));
  int v = 0;
  for (; v + kTm <= a.ow; v += kTm) step_block<0, kTm, kHa>(st, x_row, dy_row, v, xc0, a, c, both, v + kTm);
  step_block<0, kTm, kHa>(st, x_row, dy_row, v, xc0, a, c, both, a.ow);  // remainder < kTm columns
}

template <int kTm, bool kHa>
__global__ void __launch_bounds__(kLanes * kMaxRowsPerBlock) bfc_f16_kernel(const BfcArgs a) {
  int bid = blockIdx.x;
  const int ftile = bid % (a.n_rgroups * a.n_ctiles);
  bid /= a.n_rgroups * a.n_ctiles;
  const int cslice = bid % a.n_cslices, chunk = bid / a.n_cslices;
  const int i = (ftile / a.n_ctiles) * a.rows_per_block + static_cast<int>(threadIdx.x) / kLanes;
  const int jt0 = a.j0 + (ftile % a.n_ctiles) * kTm;
  const int c = cslice * kSliceC + 2 * (threadIdx.x % kLanes);
  if (i >= a.fh || c >= a.c) return;  // no shared memory, no barriers: idle threads may leave
  const bool both = c + 1 < a.c;
  const int g_begin = static_cast<int>(static_cast<long long>(a.rows) * chunk / a.z);
  const int g_end = static_cast<int>(static_cast<long long>(a.rows) * (chunk + 1) / a.z);

  Accumulator<kTm, kHa> st;
  st.init();
  for (int g = g_begin; g < g_end; ++g) {
    const int n = g / a.oh, oh = g - n * a.oh;
    const int ih = oh * a.sh + i - a.pt;
    if (ih < 0 || ih >= a.ih) continue;
    const __half* x_row = a.x + (static_cast<long long>(n) * a.ih + ih) * a.iw * a.c + c;
    const __half* dy_row = a.dy + static_cast<long long>(g) * a.ow * a.c + c;
    accumulate_row<kTm, kHa>(st, x_row, dy_row, jt0 - a.pl, a, c, both);
  }
  float* out = a.dw + (static_cast<long long>(i) * a.fw + jt0) * a.c + c;
#pragma unroll
  for (int t = 0; t < kTm; ++t) {
    atomicAdd(out + static_cast<long long>(t) * a.c, st.acc[t].x);
    if (both) atomicAdd(out + static_cast<long long>(t) * a.c + 1, st.acc[t].y);
  }
}

// One launch: n_ctiles tiles of tm columns starting at filter column j0.
struct TileLaunch {
  int tm = 1, j0 = 0, n_ctiles = 0;
};

struct BfcF16Plan {
  TileLaunch launches[2];
  int n_launches = 0;
  int rows_per_block = 1, n_rgroups = 1, n_cslices = 1;
  int z[2] = {1, 1};
};

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Column tiles: width-9 tiles plus one remainder tile (FW = 9q + r -> q x 9 + r, flash-dwc.md 5.2); stride > 1
// along W runs one column per thread (the sliding window needs stride 1). Z: enough chunks of N*OH dY rows for
// about two waves of full-occupancy warps, each chunk at least kMinRowsPerChunk rows (bounds the atomics).
BfcF16Plan make_plan(const DwconvParams& p, const BfcF16Force& force, int sms) {
  constexpr int kMinRowsPerChunk = 4;
  constexpr long long kWarpsPerSm = 64;
  BfcF16Plan plan;
  const int tm = p.stride_w > 1 ? 1 : (force.tm > 0 ? force.tm : std::min(kMaxTm, p.fw));
  if (p.fw / tm > 0) plan.launches[plan.n_launches++] = TileLaunch{tm, 0, p.fw / tm};
  if (p.fw % tm > 0) plan.launches[plan.n_launches++] = TileLaunch{p.fw % tm, p.fw / tm * tm, 1};
  plan.n_rgroups = ceil_div(p.fh, kMaxRowsPerBlock);
  plan.rows_per_block = ceil_div(p.fh, plan.n_rgroups);
  plan.n_cslices = ceil_div(p.c, kSliceC);
  const int rows = p.n * p.oh();
  for (int l = 0; l < plan.n_launches; ++l) {
    const long long warps_per_chunk =
        static_cast<long long>(plan.n_rgroups) * plan.launches[l].n_ctiles * plan.n_cslices * plan.rows_per_block;
    const int z_max = std::max(1, rows / kMinRowsPerChunk);
    const int z = force.z > 0 ? std::min(force.z, rows) : ceil_div(2 * kWarpsPerSm * sms, warps_per_chunk);
    plan.z[l] = std::clamp(z, 1, force.z > 0 ? rows : z_max);
  }
  return plan;
}

template <bool kHa>
void launch_tile(const BfcArgs& a, int tm, unsigned blocks, int threads, cudaStream_t stream) {
  switch (tm) {
    case 1: bfc_f16_kernel<1, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 2: bfc_f16_kernel<2, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 3: bfc_f16_kernel<3, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 4: bfc_f16_kernel<4, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 5: bfc_f16_kernel<5, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 6: bfc_f16_kernel<6, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 7: bfc_f16_kernel<7, kHa><<<blocks, threads, 0, stream>>>(a); break;
    case 8: bfc_f16_kernel<8, kHa><<<blocks, threads, 0, stream>>>(a); break;
    default: bfc_f16_kernel<9, kHa><<<blocks, threads, 0, stream>>>(a); break;
  }
}

}  // namespace

std::string dwconv_bfc_f16_path_name(const DwconvParams& p, BfcAccum accum, const BfcF16Force& force) {
  const BfcF16Plan plan = make_plan(p, force, current_device_sms());
  std::string tiles;
  for (int l = 0; l < plan.n_launches; ++l)
    tiles += str_cat(l ? "+" : "", plan.launches[l].n_ctiles, "x", plan.launches[l].tm);
  return str_cat("bfc f16 ", bfc_accum_name(accum), " cuda-core TM=", tiles, " rows/block=", plan.rows_per_block,
                 " Z=", plan.z[0], p.c % 2 == 0 ? "" : " (C odd: scalar halves)");
}

void launch_dwconv_bfc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                           const BfcF16Force& force, cudaStream_t stream) {
  CNN_CHECK(force.tm >= 0 && force.tm <= kMaxTm && force.z >= 0, "dwconv bfc f16: forced TM must be in 0..", kMaxTm,
            " and Z >= 0, got TM=", force.tm, " Z=", force.z);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  const BfcF16Plan plan = make_plan(p, force, current_device_sms());
  const bool pair_ok = p.c % 2 == 0 && reinterpret_cast<uintptr_t>(x) % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(dy) % 4 == 0;
  for (int l = 0; l < plan.n_launches; ++l) {
    const TileLaunch& tl = plan.launches[l];
    const BfcArgs a{x,         dy,          dw,          p.ih,         p.iw,      p.c,
                    p.oh(),    p.ow(),      p.fh,        p.fw,         p.stride_h, p.stride_w,
                    p.pad_top, p.pad_left,  tl.j0,       tl.n_ctiles,  plan.rows_per_block, plan.n_rgroups,
                    plan.n_cslices, p.n * p.oh(), plan.z[l], pair_ok ? 1 : 0};
    const long long blocks = static_cast<long long>(plan.n_rgroups) * tl.n_ctiles * plan.n_cslices * plan.z[l];
    CNN_CHECK(blocks < (1LL << 31), "dwconv bfc f16: grid too large (", blocks, " blocks) for ", p.str());
    const int threads = kLanes * plan.rows_per_block;
    if (accum == BfcAccum::ha)
      launch_tile<true>(a, tl.tm, static_cast<unsigned>(blocks), threads, stream);
    else
      launch_tile<false>(a, tl.tm, static_cast<unsigned>(blocks), threads, stream);
    CNN_CHECK_LAUNCH("bfc_f16_kernel");
  }
}

}  // namespace cnn::dwconv

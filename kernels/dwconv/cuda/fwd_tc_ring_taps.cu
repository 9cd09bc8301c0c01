// The ring kernel's 8-tap MMA policy (fwd_tc_ring.cuh), FW <= 64 in kGamma = ceil(FW / 8) fragments.
//
// Per channel, two m16n8k8 MMAs (k = 0..7, 8..15) compute 16 output rows x 8 output columns over a 16-column input
// window and 8 filter taps: A[m][k] = x(row m, column 8s + k), B[k][n] = w(8f + k - n) inside the band
// 0 <= k - n < 8, else 0. Two k8 MMAs rather than one k16: a k16 A operand is the register quad {block s, block
// s+1}, and block s+1 is also the low half of the next block's quad, so k16 forced register copies (169 moves per 64
// HMMA.16816 in the SASS); a k8 A operand is one block's own register pair, used in place.
// With fragments of 8 taps, the window of output block q at fragment f starts at column 8(q + f): moving to the next
// fragment, block q reads what block q+1 read before. A warp therefore keeps the 8-column input blocks of one
// filter row in registers and loads one new block per fragment for kQ MMAs, instead of one 16x16 A tile per MMA
// (the T kernels' design, bound by shared-memory bandwidth).
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/fwd_tc_ring.cuh"

namespace cnn::dwconv {
namespace {

// The warp's MMAs of filter row i: kGamma fragments x kQ output blocks x 4 channels.
template <int kQ, int kGamma>
__device__ __forceinline__ void tap_row(float (&acc)[kQ][4][4], const uint2* xs_grp, const uint2* taps, int i,
                                            int g, int t, unsigned mask) {
  using S = RingShape<kQ, kGamma>;
  const uint2* row_g = xs_grp + ((i + g) % kRing) * S::kPitch;
  const uint2* row_g8 = xs_grp + ((i + g + 8) % kRing) * S::kPitch;
  Block blk[kQ + kGamma];
#pragma unroll
  for (int b = 0; b <= kQ; ++b) load_block(blk[b], row_g, row_g8, 8 * b + 2 * t);
#pragma unroll
  for (int f = 0; f < kGamma; ++f) {
    if (f + kQ + 1 < kQ + kGamma) load_block(blk[f + kQ + 1], row_g, row_g8, 8 * (f + kQ + 1) + 2 * t);
    unsigned b0[4], b1[4];
    load_filter(b0, b1, taps, kFront + 8 * f + 2 * t - g, mask);
#pragma unroll
    for (int q = 0; q < kQ; ++q)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        cuda::mma_m16n8k8(acc[q][c], blk[q + f].r[c], blk[q + f].r[4 + c], b0[c]);
        cuda::mma_m16n8k8(acc[q][c], blk[q + f + 1].r[c], blk[q + f + 1].r[4 + c], b1[c]);
      }
  }
}

template <int kQ, int kGamma>
__device__ __forceinline__ void store_tap_tile(const float (&acc)[kQ][4][4], uint2* ys, const RingArgs& a, int n,
                                           int oh0, int ow0, int c0, int tid) {
  using S = RingShape<kQ, kGamma>;
  constexpr int kCols = S::kCols;
  static_assert(kCols % 4 == 0 && 64 % kCols == 0, "tile rows of 8, 16 or 32 columns");
  const int lane = tid & 31, grp = tid >> 5, g = lane >> 2, t = lane & 3;
  float bias[4] = {0.f, 0.f, 0.f, 0.f};
  if (a.bias != nullptr && c0 + 4 * grp < a.src_c) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(a.bias + c0 + 4 * grp));
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&v.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
    bias[0] = lo.x, bias[1] = lo.y, bias[2] = hi.x, bias[3] = hi.y;
  }
  // Store (q, e) goes to row g + 8 (e >> 1), column 8q + 2t + (e & 1): its unit is
  // ((row * kCols + (column & ~3)) * 4 + ((4 * (column & 3) + grp) ^ swizzle), with column & ~3 = 8q + 4 (t >> 1),
  // column & 3 = 2 (t & 1) + (e & 1) and the swizzle tile_swizzle(g, 2t) for every (q, e).
  const int s = tile_swizzle(g, 2 * t);
  const int base = (g * kCols + 4 * (t >> 1)) * 4;
  const int low[2] = {(4 * (2 * (t & 1)) + grp) ^ s, (4 * (2 * (t & 1) + 1) + grp) ^ s};
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const __half2 lo = __floats2half2_rn(acc[q][0][e] + bias[0], acc[q][1][e] + bias[1]);
      const __half2 hi = __floats2half2_rn(acc[q][2][e] + bias[2], acc[q][3][e] + bias[3]);
      ys[base + (8 * (e >> 1) * kCols + 8 * q) * 4 + low[e & 1]] =
          make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
    }
  __syncthreads();
  write_tile_out<kCols>(ys, a, n, oh0, ow0, c0, tid);
}

// Resident blocks per SM the register budget is set for. Four (<= 128 registers, 16 warps) up to gamma 3 (FW <= 24):
// the kernel is latency-bound, and more warps hide more of it; from gamma 4 the accumulators and ring need more
// registers than 128 leave (spills), so wider rows keep three (~160-170 registers, no spills). Five blocks at
// gamma 1 spill and run slower (docs/dwconv-fp16.md, tried and rejected).
__host__ __device__ constexpr int ring_min_blocks(int gamma) { return gamma <= 3 ? 4 : 3; }

// The policy (fwd_tc_ring.cuh): ring rows of 8-byte positions (4 channels), the B band masked per lane.
template <int kQ, int kGamma>
struct TapsPolicy {
  using Shape = RingShape<kQ, kGamma>;
  using Acc = float[kQ][4][4];
  struct Rows {  // the tile stages its own input rows
    const RingTile<kQ, kGamma>& tile;
  };
  static constexpr int kMinBlocks = ring_min_blocks(kGamma);
  __device__ static Rows rows(const RingTile<kQ, kGamma>& tile, const RingArgs&, uint2*, int, int, int, int, int) {
    return Rows{tile};
  }
  __device__ static void stage_row(const Rows& r, int rho, int) { r.tile.stage_row(rho); }
  // Lane mask of the B band: low half valid when 2t >= g, high half when 2t + 1 >= g.
  __device__ static unsigned lane_mask(int g, int t) {
    return (2 * t >= g ? 0x0000ffffu : 0u) | (2 * t + 1 >= g ? 0xffff0000u : 0u);
  }
  __device__ static void zero(Acc& acc) {
#pragma unroll
    for (int q = 0; q < kQ; ++q)
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][c][e] = 0.f;
  }
  __device__ static const uint2* row_base(const uint2* xs, int grp) { return xs + grp * Shape::kGroupStride; }
  __device__ static void compute_row(Acc& acc, const uint2* xs_grp, const uint2* taps, int i, int g, int t,
                                     unsigned mask) {
    tap_row<kQ, kGamma>(acc, xs_grp, taps, i, g, t, mask);
  }
  __device__ static void store_tile(const Acc& acc, uint2* ys, const RingArgs& a, int n, int oh0, int ow0, int c0,
                                    int tid) {
    store_tap_tile<kQ, kGamma>(acc, ys, a, n, oh0, ow0, c0, tid);
  }
};

template <int kQ>
void launch_ring_q(const RingArgs& a, int gamma, dim3 grid, cudaStream_t stream) {
  switch (gamma) {
    case 1: return launch_ring_policy<TapsPolicy<kQ, 1>>(a, grid, stream);
    case 2: return launch_ring_policy<TapsPolicy<kQ, 2>>(a, grid, stream);
    case 3: return launch_ring_policy<TapsPolicy<kQ, 3>>(a, grid, stream);
    case 4: return launch_ring_policy<TapsPolicy<kQ, 4>>(a, grid, stream);
    case 5: return launch_ring_policy<TapsPolicy<kQ, 5>>(a, grid, stream);
    case 6: return launch_ring_policy<TapsPolicy<kQ, 6>>(a, grid, stream);
    case 7: return launch_ring_policy<TapsPolicy<kQ, 7>>(a, grid, stream);
    default: return launch_ring_policy<TapsPolicy<kQ, 8>>(a, grid, stream);
  }
}

}  // namespace

void launch_dwconv_tc_ring_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                               const ConvGeometry& g, int q, RingMma mma, bool transposed, cudaStream_t stream,
                               int src_c) {
  if (mma == RingMma::pairs) return launch_tc_ring_pairs_f16(src, w, bias, dst, g, transposed, q, src_c, stream);
  const char* what = "dwconv tc-ring f16";
  const RingArgs a = ring_args(src, w, bias, dst, g, transposed, q, src_c, 4, what);
  const dim3 grid = ring_grid(a, g, what);
  const int gamma = (a.fw + 7) / 8;
  switch (q) {
    case 4: launch_ring_q<4>(a, gamma, grid, stream); break;
    case 2: launch_ring_q<2>(a, gamma, grid, stream); break;
    default: launch_ring_q<1>(a, gamma, grid, stream); break;
  }
  CNN_CHECK_LAUNCH("dwconv_tc_ring_f16_kernel");
}

}  // namespace cnn::dwconv

// Flash-DWC-T with register reuse ("ring" kernel): FP16 depthwise convolution on tensor cores, FP32 accumulation,
// stride 1, forward and backward-data (filter read rotated by 180 degrees). NHWC maps, (FH, FW, C) filter,
// C % 8 == 0, 16-byte aligned pointers, FW <= 8 * kMaxGamma. Design and measurements: docs/dwconv-fp16.md.
//
// Per channel, two m16n8k8 MMAs (k = 0..7, 8..15) compute 16 output rows x 8 output columns over a 16-column input
// window and 8 filter taps: A[m][k] = x(row m, column 8s + k), B[k][n] = w(8f + k - n) inside the band
// 0 <= k - n < 8, else 0. Two k8 MMAs rather than one k16: a k16 A operand is the register quad {block s, block
// s+1}, and block s+1 is also the low half of the next block's quad, so k16 forced register copies (169 moves per 64
// HMMA.16816 in the SASS); a k8 A operand is one block's own register pair, used in place.
// With fragments of 8 taps, the window of output block q at fragment f starts at column 8(q + f): moving to the next
// fragment, block q reads what block q+1 read before. A warp therefore keeps the 8-column input blocks of one
// filter row in registers and loads one new block per fragment for kQ MMAs, instead of one 16x16 A tile per MMA
// (the T kernels' design, bound by shared-memory bandwidth). Input rows live in a ring of shared-memory rows: moving
// to the next filter row needs one new input row, fetched with cp.async two steps ahead, one barrier per filter row.
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
__device__ __forceinline__ void compute_row(float (&acc)[kQ][4][4], const uint2* xs_grp, const uint2* taps, int i,
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
__device__ __forceinline__ void store_tile(const float (&acc)[kQ][4][4], uint2* ys, const RingArgs& a, int n,
                                           int oh0, int ow0, int c0, int tid) {
  using S = RingShape<kQ, kGamma>;
  constexpr int kCols = S::kCols;
  static_assert(kCols % 4 == 0 && 64 % kCols == 0, "tile rows of 8, 16 or 32 columns");
  const int lane = tid & 31, grp = tid >> 5, g = lane >> 2, t = lane & 3;
  float bias[4] = {0.f, 0.f, 0.f, 0.f};
  if (a.bias != nullptr && c0 + 4 * grp < a.c) {
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

template <int kQ, int kGamma>
__global__ void __launch_bounds__(kThreads, ring_min_blocks(kGamma)) dwconv_tc_ring_f16_kernel(const RingArgs a) {
  using S = RingShape<kQ, kGamma>;
  extern __shared__ uint4 smem_u4[];
  uint2* const xs = reinterpret_cast<uint2*>(smem_u4);
  uint2* const fs = xs + S::kXBytes / 8;
  const int tid = threadIdx.x, lane = tid & 31, grp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;

  // Channel blocks fastest: the blocks of one tile position run together, so each 128-byte line of the maps is read
  // and written whole while it is in L2 (a block moves 32 bytes of each position); with column tiles fastest the
  // other sectors of a line go to blocks that run waves later.
  const int spatial_blocks = gridDim.x / a.channel_blocks;
  const int cb = a.channels_first ? blockIdx.x % a.channel_blocks : blockIdx.x / spatial_blocks;
  int bx = a.channels_first ? blockIdx.x / a.channel_blocks : blockIdx.x % spatial_blocks;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * kRows, ow0 = tw * S::kCols, c0 = cb * kBN;
  const RingTile<kQ, kGamma> tile(a, xs, fs, n, oh0, ow0, c0, tid);

  // Height trimming: only filter rows that reach a source row for some valid output row of the tile.
  const int rows = min(kRows, a.out_h - oh0);
  const int i_lo = max(0, a.pad_t - oh0 - (rows - 1)), i_hi = min(a.fh, a.in_h + a.pad_t - oh0);
  const int rho_end = i_hi + kRows - 1;  // input rows past this are never read

  // Lane mask of the B band: low half valid when 2t >= g, high half when 2t + 1 >= g.
  const unsigned mask = (2 * t >= g ? 0x0000ffffu : 0u) | (2 * t + 1 >= g ? 0xffff0000u : 0u);

  float acc[kQ][4][4];
#pragma unroll
  for (int q = 0; q < kQ; ++q)
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[q][c][e] = 0.f;

  // Prologue: group 0 = rows i_lo .. i_lo+15 and filter row i_lo; group 1 = row i_lo+16 and filter row i_lo+1.
  if (i_lo < i_hi) {
    for (int rho = i_lo; rho < i_lo + kRows; ++rho) tile.stage_row(rho);
    tile.stage_filter(i_lo);
  }
  cuda::cp_async_commit();
  if (i_lo + kRows < rho_end) tile.stage_row(i_lo + kRows);
  if (i_lo + 1 < i_hi) tile.stage_filter(i_lo + 1);
  cuda::cp_async_commit();

  const uint2* xs_grp = xs + grp * S::kGroupStride;
  for (int i = i_lo; i < i_hi; ++i) {
    cuda::cp_async_wait<1>();  // this thread's copies of row i+15 and filter row i have landed
    __syncthreads();           // ... everyone's, and step i-1 is done with the slots and buffer refilled below
    if (i + kRows + 1 < rho_end) tile.stage_row(i + kRows + 1);
    if (i + 2 < i_hi) tile.stage_filter(i + 2);
    cuda::cp_async_commit();
    compute_row<kQ, kGamma>(acc, xs_grp, fs + ((i % 3) * kGroups + grp) * S::kTapStride, i, g, t, mask);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the output tile
  store_tile<kQ, kGamma>(acc, xs, a, n, oh0, ow0, c0, tid);
}

template <int kQ, int kGamma>
void launch_ring(const RingArgs& a, dim3 grid, cudaStream_t stream) {
  using S = RingShape<kQ, kGamma>;
  auto kernel = dwconv_tc_ring_f16_kernel<kQ, kGamma>;
  // Opt in above 48 KB on every call: cheap, and correct whichever device is current.
  if constexpr (S::kSmemBytes > 48 * 1024)
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
  kernel<<<grid, kThreads, S::kSmemBytes, stream>>>(a);
}

template <int kQ>
void launch_ring_q(const RingArgs& a, int gamma, dim3 grid, cudaStream_t stream) {
  switch (gamma) {
    case 1: return launch_ring<kQ, 1>(a, grid, stream);
    case 2: return launch_ring<kQ, 2>(a, grid, stream);
    case 3: return launch_ring<kQ, 3>(a, grid, stream);
    case 4: return launch_ring<kQ, 4>(a, grid, stream);
    case 5: return launch_ring<kQ, 5>(a, grid, stream);
    case 6: return launch_ring<kQ, 6>(a, grid, stream);
    case 7: return launch_ring<kQ, 7>(a, grid, stream);
    default: return launch_ring<kQ, 8>(a, grid, stream);
  }
}

}  // namespace

void launch_dwconv_tc_ring_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                               const ConvGeometry& g, int q, RingMma mma, cudaStream_t stream) {
  if (mma == RingMma::pairs) return launch_tc_ring_pairs_f16(src, w, bias, dst, g, q, stream);
  const char* what = "dwconv tc-ring f16";
  const RingArgs a = ring_args(src, w, bias, dst, g, q, true, what);
  const dim3 grid = ring_grid(a, g, what);
  const int gamma = (g.fw + 7) / 8;
  switch (q) {
    case 4: launch_ring_q<4>(a, gamma, grid, stream); break;
    case 2: launch_ring_q<2>(a, gamma, grid, stream); break;
    default: launch_ring_q<1>(a, gamma, grid, stream); break;
  }
  CNN_CHECK_LAUNCH("dwconv_tc_ring_f16_kernel");
}

}  // namespace cnn::dwconv

// The ring kernel with channel pairs in the MMA's k dimension: FP16 depthwise convolution on tensor cores, FP32
// accumulation, stride 1, forward and backward-data (filter read rotated). Same block, ring of input rows and cp.async
// staging as dwconv_f16_tc_ring.cu; the MMA formulation differs.
//
// Per m16n8k8: k = 4 input positions x 2 channels (k = 2 position + channel), n = 4 output columns x the same 2
// channels (n = 2 column + channel), M = 16 output rows. A[m][k] = x(row m, position 4j + k/2, channel k%2): exactly
// the ring's layout (8 bytes = 4 channels per position), so one LDS.64 gives a lane both channel pairs of a position
// and no byte permutes are needed (the tap-fragment kernel permutes every A register: 40 PRMT per warp and filter row
// at 7x7, 88 at 51x51). B[k][n] = w(4d + k/2 - n/2) for equal channels (k%2 == n%2), else 0, with d = j - q the
// block offset between input block j and output group q: a lane's B register is one filter tap of one channel in its
// half, read from the staged filter row (zero outside [0, FW)), so no band masks either. Output group q of 4 columns
// needs d = 0 .. nd - 1, nd = (FW + 2) / 4 + 1: per filter row and 4-channel warp 2 * 2kQ * nd MMAs (7x7: 48, the
// tap kernel 32; 9x9: 48 against 64; 51x51: 224 against 224), 2 (2kQ + nd - 1) LDS.64 for A and nd LDS.64 for B.
// An MMA's A operand is a register pair (row g, row g+8), which the two loads leave apart: ptxas adds 4 moves per
// block. Measured (thirteenth session, docs/perf/dwconv-fp16-h200.md): 1.14-1.18x over the tap kernel at 9x9 and
// 17x17 and 1.02-1.03x at 13x13 (fewer or as many MMAs), 0.92-0.93x at 7x7 and 31x31 and 0.64-0.70x at 51x51 (more
// MMAs, or as many and the wide unrolled row); the dispatcher picks it at 9 <= FW <= 21 where nd <= 2 gamma.
// Design: docs/dwconv-fp16.md.
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dwconv/dwconv_f16_internal.h"
#include "kernels/dwconv/dwconv_f16_tc_ring.cuh"

namespace cnn::dwconv {
namespace {

// Positions per ring row: a half-warp's LDS.64 reads 4 consecutive positions (32 bytes) of rows g .. g+3, so rows
// 32 (mod 128) bytes apart put the four in different banks: pitch = 4 (mod 16) positions.
constexpr int pitch_for_pairs(int positions) { return positions + ((4 - positions % 16) + 16) % 16; }

constexpr int kPairsMaxNd = (kTcRingMaxFw + 2) / 4 + 1;  // block offsets per output group at the widest filter

template <int kQ, int kNd>
struct PairShape {
  static constexpr int kCols = 8 * kQ;                // output columns per tile
  static constexpr int kGroupsOut = 2 * kQ;           // output groups of 4 columns
  static constexpr int kBlocksIn = kGroupsOut + kNd - 1;  // input blocks of 4 positions a tile row reads
  static constexpr int kWin = 4 * kBlocksIn;
  static constexpr int kPitch = pitch_for_pairs(kWin);
  static constexpr int kTaps = kFront + 4 * kNd;      // staged filter row: kFront zeros, taps, zeros past FW
  static constexpr int kGroupStride = odd_halves(kRing * kPitch);
  static constexpr int kTapStride = odd_halves((kTaps + 7) / 8 * 8);
  static constexpr int kXBytes = kGroups * kGroupStride * 8;
  static constexpr int kFBytes = 3 * kGroups * kTapStride * 8;
  static constexpr int kTileBytes = kRows * kCols * kBN * 2;
  static constexpr int kSmemBytes = kXBytes + kFBytes;
  static_assert(kXBytes >= kTileBytes, "the output tile is staged in the input ring");
};

// The warp's MMAs of filter row i: output groups q outer (an A block is loaded once, when group q first needs it),
// block offsets d inner; the row's nd B registers per channel pair are loaded first.
template <int kQ, int kNd>
__device__ __forceinline__ void compute_row_pairs(float (&acc)[2 * kQ][2][4], const uint2* xs_grp, const uint2* taps,
                                                  int i, int g, int t, unsigned half_mask) {
  using S = PairShape<kQ, kNd>;
  const uint2* row_g = xs_grp + ((i + g) % kRing) * S::kPitch + t;
  const uint2* row_g8 = xs_grp + ((i + g + 8) % kRing) * S::kPitch + t;
  // B: lane (g, t) holds tap 4d + t - g/2 of channel 2P + (g & 1) in half g & 1.
  const uint2* tap0 = taps + kFront + t - (g >> 1);
  unsigned b[kNd][2];
#pragma unroll
  for (int d = 0; d < kNd; ++d) {
    const uint2 w = lds64(tap0 + 4 * d);
    b[d][0] = w.x & half_mask;
    b[d][1] = w.y & half_mask;
  }
  uint2 a[S::kBlocksIn], a8[S::kBlocksIn];
#pragma unroll
  for (int j = 0; j < kNd - 1; ++j) a[j] = lds64(row_g + 4 * j), a8[j] = lds64(row_g8 + 4 * j);
#pragma unroll
  for (int q = 0; q < S::kGroupsOut; ++q) {
    const int j_new = q + kNd - 1;
    a[j_new] = lds64(row_g + 4 * j_new), a8[j_new] = lds64(row_g8 + 4 * j_new);
#pragma unroll
    for (int d = 0; d < kNd; ++d) {
      cuda::mma_m16n8k8(acc[q][0], a[q + d].x, a8[q + d].x, b[d][0]);
      cuda::mma_m16n8k8(acc[q][1], a[q + d].y, a8[q + d].y, b[d][1]);
    }
  }
}

// Accumulators + bias -> the FP16 output tile in the ring (tile_swizzle units, as the tap kernel's), then to the map.
// Lane (g, t) holds, for output group q, column 4q + t of rows g and g + 8 for all 4 channels of its warp.
template <int kQ>
__device__ __forceinline__ void store_tile_pairs(const float (&acc)[2 * kQ][2][4], uint2* ys, const RingArgs& a,
                                                 int n, int oh0, int ow0, int c0, int tid) {
  constexpr int kCols = 8 * kQ;
  const int lane = tid & 31, grp = tid >> 5, g = lane >> 2, t = lane & 3;
  float bias[4] = {0.f, 0.f, 0.f, 0.f};
  if (a.bias != nullptr && c0 + 4 * grp < a.c) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(a.bias + c0 + 4 * grp));
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&v.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
    bias[0] = lo.x, bias[1] = lo.y, bias[2] = hi.x, bias[3] = hi.y;
  }
#pragma unroll
  for (int q = 0; q < 2 * kQ; ++q)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = g + 8 * r, col = 4 * q + t;
      const __half2 lo = __floats2half2_rn(acc[q][0][2 * r] + bias[0], acc[q][0][2 * r + 1] + bias[1]);
      const __half2 hi = __floats2half2_rn(acc[q][1][2 * r] + bias[2], acc[q][1][2 * r + 1] + bias[3]);
      const int unit = (row * kCols + 4 * q) * 4 + ((4 * t + grp) ^ tile_swizzle(row, col));
      ys[unit] = make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
    }
  __syncthreads();
  write_tile_out<kCols>(ys, a, n, oh0, ow0, c0, tid);
}

// Four blocks per SM (16 warps): without byte permutes a lane holds few A operands, and ptxas fits Q = 4 in 108-128
// registers without spills up to nd = 16 (FW 61); nd = 17 takes three (168 registers, 72 bytes of spills).
__host__ __device__ constexpr int pairs_min_blocks(int nd) { return nd <= 16 ? 4 : 3; }

template <int kQ, int kNd>
__global__ void __launch_bounds__(kThreads, pairs_min_blocks(kNd)) dwconv_tc_ring_pairs_f16_kernel(const RingArgs a) {
  using S = PairShape<kQ, kNd>;
  extern __shared__ uint4 smem_u4[];
  uint2* const xs = reinterpret_cast<uint2*>(smem_u4);
  uint2* const fs = xs + S::kXBytes / 8;
  const int tid = threadIdx.x, lane = tid & 31, grp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;

  // Channel blocks fastest, as in the tap kernel (its eleventh-session measurement).
  const int cb = blockIdx.x % a.channel_blocks;
  int bx = blockIdx.x / a.channel_blocks;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * kRows, ow0 = tw * S::kCols, c0 = cb * kBN;
  const RingTileT<S> tile(a, xs, fs, n, oh0, ow0, c0, tid);

  const int rows = min(kRows, a.out_h - oh0);
  const int i_lo = max(0, a.pad_t - oh0 - (rows - 1)), i_hi = min(a.fh, a.in_h + a.pad_t - oh0);
  const int rho_end = i_hi + kRows - 1;

  const unsigned half_mask = (g & 1) ? 0xffff0000u : 0x0000ffffu;  // the lane's output channel within its pair

  float acc[2 * kQ][2][4];
#pragma unroll
  for (int q = 0; q < 2 * kQ; ++q)
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[q][p][e] = 0.f;

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
    compute_row_pairs<kQ, kNd>(acc, xs_grp, fs + ((i % 3) * kGroups + grp) * S::kTapStride, i, g, t, half_mask);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the output tile
  store_tile_pairs<kQ>(acc, xs, a, n, oh0, ow0, c0, tid);
}

template <int kQ, int kNd>
void launch_pairs(const RingArgs& a, dim3 grid, cudaStream_t stream) {
  using S = PairShape<kQ, kNd>;
  auto kernel = dwconv_tc_ring_pairs_f16_kernel<kQ, kNd>;
  if constexpr (S::kSmemBytes > 48 * 1024)
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
  kernel<<<grid, kThreads, S::kSmemBytes, stream>>>(a);
}

template <int kQ, int kNd = 1>
void launch_pairs_nd(const RingArgs& a, int nd, dim3 grid, cudaStream_t stream) {
  if constexpr (kNd < kPairsMaxNd) {
    if (nd > kNd) return launch_pairs_nd<kQ, kNd + 1>(a, nd, grid, stream);
  }
  launch_pairs<kQ, kNd>(a, grid, stream);
}

}  // namespace

int tc_ring_pairs_nd(int fw) { return (fw + 2) / 4 + 1; }

void launch_dwconv_tc_ring_pairs_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                     const ConvGeometry& g, int q, cudaStream_t stream) {
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && g.c % 8 == 0,
            "dwconv tc-ring-pairs f16: needs stride 1 and C % 8 == 0, got C=", g.c, " stride ", g.stride_h, "x",
            g.stride_w);
  CNN_CHECK(g.fw >= 1 && g.fw <= kTcRingMaxFw, "dwconv tc-ring-pairs f16: FW must be 1..", kTcRingMaxFw, ", got ",
            g.fw);
  CNN_CHECK(q == 1 || q == 2 || q == 4, "dwconv tc-ring-pairs f16: Q must be 1, 2 or 4, got ", q);
  CNN_CHECK(static_cast<long long>(g.in_w) * g.c < (1LL << 31),
            "dwconv tc-ring-pairs f16: a source row of W*C = ", static_cast<long long>(g.in_w) * g.c,
            " elements does not fit the kernel's 32-bit row offsets");
  const int channel_blocks = (g.c + kBN - 1) / kBN;
  const RingArgs a{.src = src, .w = w, .bias = bias, .dst = dst, .in_h = g.in_h, .in_w = g.in_w, .c = g.c,
                   .out_h = g.out_h, .out_w = g.out_w, .fh = g.fh, .fw = g.fw, .pad_t = g.pad_t, .pad_l = g.pad_l,
                   .flip = g.flip ? 1 : 0, .tiles_h = (g.out_h + kRows - 1) / kRows,
                   .tiles_w = (g.out_w + 8 * q - 1) / (8 * q), .channel_blocks = channel_blocks, .channels_first = 1};
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w * channel_blocks;
  CNN_CHECK(blocks < (1LL << 31), "dwconv tc-ring-pairs f16: grid too large for ", blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks));
  const int nd = tc_ring_pairs_nd(g.fw);
  switch (q) {
    case 4: launch_pairs_nd<4>(a, nd, grid, stream); break;
    case 2: launch_pairs_nd<2>(a, nd, grid, stream); break;
    default: launch_pairs_nd<1>(a, nd, grid, stream); break;
  }
  CNN_CHECK_LAUNCH("dwconv_tc_ring_pairs_f16_kernel");
}

}  // namespace cnn::dwconv

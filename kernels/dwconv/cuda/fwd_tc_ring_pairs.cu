// The ring kernel's channel-pairs MMA policy (fwd_tc_ring.cuh): same block, ring of input rows and filter-row
// staging as the 8-tap policy; the MMA formulation and the ring's layout differ.
//
// Per m16n8k8: k = 4 input positions x 2 channels (k = 2 position + channel), n = 4 output columns x the same 2
// channels (n = 2 column + channel), M = 16 output rows. A[m][k] = x(row m, position 4j + k/2, channel k%2): a lane's
// A register is one position's channel pair, read as one word (the tap-fragment kernel builds every A register with
// a byte permute: 40 PRMT per warp and filter row at 7x7, 88 at 51x51). B[k][n] = w(4d + k/2 - n/2) for equal
// channels (k%2 == n%2), else 0, with d = j - q the block offset between input block j and output group q: a lane's
// B register is one filter tap of one channel in its half, read from the staged filter row (zero outside [0, FW)),
// so no band masks either. Output group q of 4 columns needs d = 0 .. nd - 1, nd = (FW + 2) / 4 + 1: per filter row
// and warp 2 * 2Q * nd MMAs (Q = 4: 7x7 48, the tap kernel 32; 9x9 48 against 64; 17x17 80 against 96; 31x31 144
// against 128; 51x51 224 against 224).
//
// The ring holds each (channel group, channel pair) in its own plane of 4-byte words: an MMA's A operand is the
// register pair (row g, row g+8), and with one LDS.32 per row and pair ptxas loads the two straight into a pair
// (8-byte positions, one LDS.64 giving both pairs, cost 4 register moves per input block). Staging takes two 4-byte
// copies per position and channel group.
//
// select.cpp runs this policy from FW = 9, where it issues no more MMAs than 8-tap fragments and beats them; at
// FW <= 8 it issues half again the MMAs and the tap policy runs. Design: docs/dwconv-fp16.md.
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/fwd_tc_ring.cuh"

namespace cnn::dwconv {
namespace {

constexpr int kPairsMaxNd = (kTcRingMaxFw + 2) / 4 + 1;  // block offsets per output group at the widest filter

template <int kQ, int kNd>
struct PairShape {
  static constexpr int kCols = 8 * kQ;                    // output columns per tile
  static constexpr int kGroupsOut = 2 * kQ;               // output groups of 4 columns
  static constexpr int kBlocksIn = kGroupsOut + kNd - 1;  // input blocks of 4 positions a tile row reads
  static constexpr int kWin = 4 * kBlocksIn;
  static constexpr int kTaps = kFront + 4 * kNd;          // staged filter row: kFront zeros, taps, zeros past FW
  static constexpr int kTapStride = odd_halves((kTaps + 7) / 8 * 8);
  // Planes: rows 4 x odd words apart, so the 8 rows x 4 words of a warp's LDS.32 fall in 32 different banks; planes
  // 4 x odd words apart, so a warp's copies (8 planes x 4 positions) do too.
  static constexpr int kPitchW = kWin % 8 == 4 ? kWin : kWin + 4;
  static constexpr int kPlaneStride = kRing * kPitchW + 4;
  static constexpr int kXBytes = 2 * kGroups * kPlaneStride * 4;
  static constexpr int kFBytes = 3 * kGroups * kTapStride * 8;
  static constexpr int kTileBytes = kRows * kCols * kBN * 2;
  static constexpr int kSmemBytes = kXBytes + kFBytes;
  static_assert(kXBytes >= kTileBytes, "the output tile is staged in the input ring");
};

__device__ __forceinline__ unsigned lds32(const void* p) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))));
  return v;
}

// Input rows into the planes: job k of thread tid is position (tid >> 3) + 16k of plane tid & 7 (channels
// c0 + 2 (tid & 7), +1), the same positions in every row; offsets and bounds are worked out once per tile.
template <class S>
struct PlaneRows {
  static constexpr int kJobs = (S::kWin + 15) / 16;
  const RingArgs& a;
  unsigned* dst0;     // this thread's first word in slot 0
  int ih0, row0;
  int x_col;          // element offset of job 0 within a source row
  unsigned ok;        // bit k: job k's position and channels are inside the image
  __device__ PlaneRows(const RingArgs& args, unsigned* xs, int n, int oh, int ow0, int c0, int tid)
      : a(args), ih0(oh - args.pad_t), row0(n * args.src_img_rows + oh - args.pad_t) {
    const int plane = tid & 7, col = tid >> 3, ch = c0 + 2 * plane;
    dst0 = xs + plane * S::kPlaneStride + col;
    x_col = (ow0 - a.pad_l + col) * a.src_col + ch;
    ok = 0;
#pragma unroll
    for (int k = 0; k < kJobs; ++k) {
      const int iw = ow0 - a.pad_l + col + 16 * k;
      ok |= (ch < a.c && col + 16 * k < S::kWin && static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w) ? 1u : 0u)
            << k;
    }
  }
  __device__ __forceinline__ void stage_row(int rho, int tid) const {
    const bool row_ok = static_cast<unsigned>(ih0 + rho) < static_cast<unsigned>(a.in_h);
    const __half* row = a.src + static_cast<long long>(row0 + rho) * a.src_row + x_col;
    unsigned* dst = dst0 + (rho % kRing) * S::kPitchW;
#pragma unroll
    for (int k = 0; k < kJobs; ++k) {
      if (k + 1 == kJobs && (tid >> 3) + 16 * k >= S::kWin) break;
      const bool job_ok = row_ok && (ok >> k & 1u);
      cuda::cp_async_ca4(dst + 16 * k, job_ok ? row + 16 * k * a.src_col : a.src, job_ok);
    }
  }
};

// B registers of a filter row (taps: the warp's channel group in a staged filter-row buffer): lane (g, t) holds, for
// block offset d and channel pair P, tap 4d + t - g/2 of channel 2P + (g & 1) in half g & 1.
template <int kNd>
__device__ __forceinline__ void load_b(unsigned (&b)[kNd][2], const uint2* taps, int g, int t, unsigned half_mask) {
  const uint2* tap0 = taps + kFront + t - (g >> 1);
#pragma unroll
  for (int d = 0; d < kNd; ++d) {
    const uint2 w = lds64(tap0 + 4 * d);
    b[d][0] = w.x & half_mask;
    b[d][1] = w.y & half_mask;
  }
}

// The warp's MMAs of filter row i: output groups q outer (an A block is loaded once, when group q first needs it),
// block offsets d inner; the row's nd B registers per channel pair are loaded first. One LDS.32 per row and channel
// pair; plane0 is the warp's pair-0 plane, pair 1 follows it.
template <int kQ, int kNd>
__device__ __forceinline__ void compute_row_pairs(float (&acc)[2 * kQ][2][4], const unsigned* plane0,
                                                  const uint2* taps, int i, int g, int t, unsigned half_mask) {
  using S = PairShape<kQ, kNd>;
  const unsigned* row_g = plane0 + ((i + g) % kRing) * S::kPitchW + t;
  const unsigned* row_g8 = plane0 + ((i + g + 8) % kRing) * S::kPitchW + t;
  unsigned b[kNd][2];
  load_b<kNd>(b, taps, g, t, half_mask);
  unsigned a[S::kBlocksIn][2], a8[S::kBlocksIn][2];
  const auto load = [&](int j) {
#pragma unroll
    for (int p = 0; p < 2; ++p)
      a[j][p] = lds32(row_g + p * S::kPlaneStride + 4 * j), a8[j][p] = lds32(row_g8 + p * S::kPlaneStride + 4 * j);
  };
#pragma unroll
  for (int j = 0; j < kNd - 1; ++j) load(j);
#pragma unroll
  for (int q = 0; q < S::kGroupsOut; ++q) {
    load(q + kNd - 1);
#pragma unroll
    for (int d = 0; d < kNd; ++d)
#pragma unroll
      for (int p = 0; p < 2; ++p) cuda::mma_m16n8k8(acc[q][p], a[q + d][p], a8[q + d][p], b[d][p]);
  }
}

// Accumulators + bias -> the FP16 output tile in the ring (tile_swizzle units, as the tap kernel's), then to the map.
// Lane (g, t) holds, for output group q, column 4q + t of rows g and g + 8 for all 4 channels of its warp.
template <int kQ>
__device__ __forceinline__ void store_tile_pairs(const float (&acc)[2 * kQ][2][4], uint2* ys, const RingArgs& a,
                                                 int n, int oh0, int ow0, int c0, int tid) {
  constexpr int kCols = 8 * kQ;
  const int lane = tid & 31, grp = tid >> 5, g = lane >> 2, t = lane & 3;
  // The warp's 4 channels of bias, per channel pair (4-byte aligned at an even src_c; a pair past src_c is zero).
  float bias[4] = {0.f, 0.f, 0.f, 0.f};
  const int ch = c0 + 4 * grp;
  if (a.bias != nullptr) {
#pragma unroll
    for (int p = 0; p < 2; ++p)
      if (ch + 2 * p < a.src_c) {
        const float2 v = __half22float2(__ldg(reinterpret_cast<const __half2*>(a.bias + ch + 2 * p)));
        bias[2 * p] = v.x, bias[2 * p + 1] = v.y;
      }
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

// Four blocks per SM (16 warps): ptxas fits Q = 4 in 107-128 registers without spills up to nd = 16 (FW 61); three
// at nd = 17 (125 registers).
__host__ __device__ constexpr int pairs_min_blocks(int nd) { return nd <= 16 ? 4 : 3; }

// The policy (fwd_tc_ring.cuh): input rows in channel-pair planes of 4-byte words, B one tap per lane half.
template <int kQ, int kNd>
struct PairsPolicy {
  using Shape = PairShape<kQ, kNd>;
  using Acc = float[2 * kQ][2][4];
  using Rows = PlaneRows<Shape>;
  static constexpr int kMinBlocks = pairs_min_blocks(kNd);
  __device__ static Rows rows(const RingTileT<Shape>&, const RingArgs& a, uint2* xs, int n, int oh0, int ow0, int c0,
                              int tid) {
    return Rows(a, reinterpret_cast<unsigned*>(xs), n, oh0, ow0, c0, tid);
  }
  __device__ static void stage_row(const Rows& r, int rho, int tid) { r.stage_row(rho, tid); }
  // The lane's output channel within its pair.
  __device__ static unsigned lane_mask(int g, int) { return (g & 1) ? 0xffff0000u : 0x0000ffffu; }
  __device__ static void zero(Acc& acc) {
#pragma unroll
    for (int q = 0; q < 2 * kQ; ++q)
#pragma unroll
      for (int p = 0; p < 2; ++p)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[q][p][e] = 0.f;
  }
  __device__ static const unsigned* row_base(const uint2* xs, int grp) {
    return reinterpret_cast<const unsigned*>(xs) + 2 * grp * Shape::kPlaneStride;
  }
  __device__ static void compute_row(Acc& acc, const unsigned* plane0, const uint2* taps, int i, int g, int t,
                                     unsigned half_mask) {
    compute_row_pairs<kQ, kNd>(acc, plane0, taps, i, g, t, half_mask);
  }
  __device__ static void store_tile(const Acc& acc, uint2* ys, const RingArgs& a, int n, int oh0, int ow0, int c0,
                                    int tid) {
    store_tile_pairs<kQ>(acc, ys, a, n, oh0, ow0, c0, tid);
  }
};

template <int kQ, int kNd = 1>
void launch_pairs_nd(const RingArgs& a, int nd, dim3 grid, cudaStream_t stream) {
  if constexpr (kNd < kPairsMaxNd) {
    if (nd > kNd) return launch_pairs_nd<kQ, kNd + 1>(a, nd, grid, stream);
  }
  launch_ring_policy<PairsPolicy<kQ, kNd>>(a, grid, stream);
}

}  // namespace

int tc_ring_pairs_nd(int fw) { return (fw + 2) / 4 + 1; }

void launch_tc_ring_pairs_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, bool transposed, int q, int src_c, cudaStream_t stream) {
  const char* what = "dwconv tc-ring-pairs f16";
  const RingArgs a = ring_args(src, w, bias, dst, g, transposed, q, src_c, 2, what);
  const dim3 grid = ring_grid(a, g, what);
  const int nd = tc_ring_pairs_nd(a.fw);
  switch (q) {
    case 4: launch_pairs_nd<4>(a, nd, grid, stream); break;
    case 2: launch_pairs_nd<2>(a, nd, grid, stream); break;
    default: launch_pairs_nd<1>(a, nd, grid, stream); break;
  }
  CNN_CHECK_LAUNCH("dwconv_tc_ring_pairs_f16_kernel");
}

}  // namespace cnn::dwconv

// The ring kernel with its input rows fetched by the Tensor Memory Accelerator: FP16 depthwise convolution on tensor
// cores, FP32 accumulation, stride 1, forward and backward-data (filter read rotated). Same MMA formulation and ring
// of input rows as dwconv_f16_tc_ring.cu; what differs is how a row gets into shared memory and the warps' split.
//
// Why (docs/dwconv-fp16.md): at 7x7 the cp.async ring kernel kept the L1 data pipe 87% busy, about half of it the
// shared-memory side of its 8-byte cp.async copies (one wavefront per 32-byte global sector, 8.4 per copy
// instruction), and its staging was a quarter of its instructions. Here thread 0 asks the TMA for each input row (one
// box of 16 channels x the tile's window columns, zero-filled outside the image) and an mbarrier per ring slot says
// when it has landed; the warps only read.
//
// Layout: a ring slot holds one input row as [column][16 channels], 32 bytes per position, with the TMA's 32-byte
// swizzle (the 16-byte halves of a position swap when bit 7 of the address is set). Warp w owns channels
// 8 (w & 1) .. +7 and output blocks kQ/2 (w >> 1) .. +kQ/2-1: one LDS.128 reads 8 channels of one position, and lanes of
// odd g read their two columns in the opposite order, so a quarter-warp's 8 loads hit 8 distinct 16-byte bank groups.
#include <cuda.h>
#include <cuda_fp16.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cuda/ptx>
#endif

#include "core/cuda_check.h"
#include "kernels/common/mma.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/dwconv/dwconv_cuda_internal.h"
#include "kernels/dwconv/dwconv_f16_tc_ring.cuh"

namespace cnn::dwconv {
namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace ptx = ::cuda::ptx;
#endif

template <int kQ, int kGamma>
struct TmaRingShape {
  using Filter = RingShape<kQ, kGamma>;    // filter-row buffers and output tile as in the cp.async kernel
  static constexpr int kQw = kQ / 2;       // output blocks per warp
  static constexpr int kWin = 8 * (kQ + kGamma);
  static constexpr int kSlotBytes = kWin * 2 * kBN;  // a multiple of 256: every slot starts a swizzle period
  static constexpr int kXBytes = kRing * kSlotBytes;
  static constexpr int kBarOffset = kXBytes + Filter::kFBytes;
  static constexpr int kSmemBytes = kBarOffset + kRing * 8;
  static_assert(kQ == 2 || kQ == 4, "two column halves of whole 8-column blocks");
  static_assert(kXBytes >= Filter::kTileBytes, "the output tile is staged in the input ring");
  static_assert(kWin <= 256, "a TMA box side holds at most 256 elements");
};

// One input block as A operands for the warp's 8 channels: r[c] = (x[p][c], x[p+1][c]) of row g, r[8 + c] of row g+8.
struct Block8 {
  unsigned r[16];
};

// A lane's two column loads of a block: byte offsets (within an 8-column block) of columns 2t + (g & 1) and
// 2t + 1 - (g & 1) under the 32-byte swizzle (swizzle = 1; 0: none, for checking), and the byte permutes that put
// column p in the low half either way.
struct LaneCols {
  int first, second;
  unsigned sel_lo, sel_hi;
  __device__ LaneCols(int g, int t, int c8, int swizzle) {
    const int e = g & 1, c_first = 2 * t + e, c_second = 2 * t + 1 - e;
    first = c_first * 32 + 16 * (c8 ^ (swizzle & (c_first >> 2)));
    second = c_second * 32 + 16 * (c8 ^ (swizzle & (c_second >> 2)));
    sel_lo = e ? 0x1054u : 0x5410u;
    sel_hi = e ? 0x3276u : 0x7632u;
  }
};

__device__ __forceinline__ void load_block8(Block8& b, const unsigned char* row_g, const unsigned char* row_g8,
                                            int block_byte, const LaneCols& lc) {
  const uint4 u = lds128(row_g + block_byte + lc.first), v = lds128(row_g + block_byte + lc.second);
  const uint4 w = lds128(row_g8 + block_byte + lc.first), z = lds128(row_g8 + block_byte + lc.second);
  const unsigned uu[4] = {u.x, u.y, u.z, u.w}, vv[4] = {v.x, v.y, v.z, v.w};
  const unsigned ww[4] = {w.x, w.y, w.z, w.w}, zz[4] = {z.x, z.y, z.z, z.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    b.r[2 * k] = prmt(uu[k], vv[k], lc.sel_lo);
    b.r[2 * k + 1] = prmt(uu[k], vv[k], lc.sel_hi);
    b.r[8 + 2 * k] = prmt(ww[k], zz[k], lc.sel_lo);
    b.r[8 + 2 * k + 1] = prmt(ww[k], zz[k], lc.sel_hi);
  }
}

// The warp's MMAs of filter row i (ring row r = i - i_lo): kGamma fragments x kQw output blocks x 8 channels.
template <int kQ, int kGamma>
__device__ __forceinline__ void compute_row_tma(float (&acc)[kQ / 2][8][4], const unsigned char* xs,
                                                const uint2* taps0, const uint2* taps1, int r, int g, int t, int h,
                                                const LaneCols& lc, unsigned mask) {
  using S = TmaRingShape<kQ, kGamma>;
  constexpr int kQw = S::kQw;
  const unsigned char* row_g = xs + ((r + g) % kRing) * S::kSlotBytes;
  const unsigned char* row_g8 = xs + ((r + g + 8) % kRing) * S::kSlotBytes;
  const int first_byte = 8 * 32 * kQw * h;  // the warp's first output block, 8 columns of 32 bytes
  Block8 blk[kQw + kGamma];
#pragma unroll
  for (int b = 0; b <= kQw; ++b) load_block8(blk[b], row_g, row_g8, first_byte + 256 * b, lc);
#pragma unroll
  for (int f = 0; f < kGamma; ++f) {
    if (f + kQw + 1 < kQw + kGamma) load_block8(blk[f + kQw + 1], row_g, row_g8, first_byte + 256 * (f + kQw + 1), lc);
#pragma unroll
    for (int cg = 0; cg < 2; ++cg) {
      unsigned b0[4], b1[4];
      load_filter(b0, b1, cg == 0 ? taps0 : taps1, kFront + 8 * f + 2 * t - g, mask);
#pragma unroll
      for (int q = 0; q < kQw; ++q)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int ch = 4 * cg + c;
          cuda::mma_m16n8k8(acc[q][ch], blk[q + f].r[ch], blk[q + f].r[8 + ch], b0[c]);
          cuda::mma_m16n8k8(acc[q][ch], blk[q + f + 1].r[ch], blk[q + f + 1].r[8 + ch], b1[c]);
        }
    }
  }
}

// Accumulators + bias -> FP16 output tile in the ring (the cp.async kernel's swizzled layout), then to the map.
template <int kQ, int kGamma>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[kQ / 2][8][4], uint2* ys, const RingArgs& a, int n,
                                               int oh0, int ow0, int c0, int tid) {
  constexpr int kCols = 8 * kQ, kQw = kQ / 2;
  const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3, c8 = warp & 1, h = warp >> 1;
  float bias[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (a.bias != nullptr && c0 + 8 * c8 < a.c) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.bias + c0 + 8 * c8));
    const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[k]));
      bias[2 * k] = f.x, bias[2 * k + 1] = f.y;
    }
  }
  const int s = tile_swizzle(g, 2 * t);
  const int base = (g * kCols + 4 * (t >> 1)) * 4;
#pragma unroll
  for (int cg = 0; cg < 2; ++cg) {
    const int grp = 2 * c8 + cg;
    const int low[2] = {(4 * (2 * (t & 1)) + grp) ^ s, (4 * (2 * (t & 1) + 1) + grp) ^ s};
#pragma unroll
    for (int qw = 0; qw < kQw; ++qw)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float* bb = bias + 4 * cg;
        const __half2 lo = __floats2half2_rn(acc[qw][4 * cg][e] + bb[0], acc[qw][4 * cg + 1][e] + bb[1]);
        const __half2 hi = __floats2half2_rn(acc[qw][4 * cg + 2][e] + bb[2], acc[qw][4 * cg + 3][e] + bb[3]);
        ys[base + (8 * (e >> 1) * kCols + 8 * (kQw * h + qw)) * 4 + low[e & 1]] =
            make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
      }
  }
  __syncthreads();
  write_tile_out<kCols>(ys, a, n, oh0, ow0, c0, tid);
}

// Resident blocks per SM the register budget is set for: four at one fragment per row (128 registers, no spills);
// wider rows hold more A operands (8 channels per warp, twice the cp.async kernel's 4) and take three (105-163
// registers, no spills; four spilled 20-128 bytes at Q = 4).
__host__ __device__ constexpr int tma_ring_min_blocks(int gamma) { return gamma == 1 ? 4 : 3; }

template <int kQ, int kGamma>
__global__ void __launch_bounds__(kThreads, tma_ring_min_blocks(kGamma))
    dwconv_tc_ring_tma_f16_kernel(const __grid_constant__ CUtensorMap src, const RingArgs a, int swizzle) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using S = TmaRingShape<kQ, kGamma>;
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* const xs = smem;
  uint2* const fs = reinterpret_cast<uint2*>(smem + S::kXBytes);
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + S::kBarOffset);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, c8 = warp & 1, h = warp >> 1;

  // Block order as in the cp.async kernel: the 16-channel blocks of one tile position are consecutive.
  const int cb = blockIdx.x % a.channel_blocks;
  int bx = blockIdx.x / a.channel_blocks;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * kRows, ow0 = tw * 8 * kQ, c0 = cb * kBN;
  const RingTile<kQ, kGamma> tile(a, reinterpret_cast<uint2*>(xs), fs, n, oh0, ow0, c0, tid);  // filter rows only

  const int rows = min(kRows, a.out_h - oh0);
  const int i_lo = max(0, a.pad_t - oh0 - (rows - 1)), i_hi = min(a.fh, a.in_h + a.pad_t - oh0);
  const int rho_end = i_hi + kRows - 1;

  // Input row rho of the tile into ring slot (rho - i_lo) % kRing; its k-th use of the slot completes phase k.
  const auto issue = [&](int rho) {
    uint64_t* bar = &full[(rho - i_lo) % kRing];
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar,
                                   static_cast<uint32_t>(S::kSlotBytes));
    const int32_t coords[4] = {c0, ow0 - a.pad_l, oh0 - a.pad_t + rho, n};
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, xs + ((rho - i_lo) % kRing) * S::kSlotBytes,
                              &src, coords, bar);
  };
  if (tid == 0) {
    for (int s = 0; s < kRing; ++s) ptx::mbarrier_init(&full[s], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    if (i_lo < i_hi)
      for (int rho = i_lo; rho < min(i_lo + kRows + 1, rho_end); ++rho) issue(rho);
  }
  if (i_lo < i_hi) tile.stage_filter(i_lo);
  cuda::cp_async_commit();
  if (i_lo + 1 < i_hi) tile.stage_filter(i_lo + 1);
  cuda::cp_async_commit();

  const unsigned mask = (2 * t >= g ? 0x0000ffffu : 0u) | (2 * t + 1 >= g ? 0xffff0000u : 0u);
  const LaneCols lc(g, t, c8, swizzle);
  float acc[S::kQw][8][4];
#pragma unroll
  for (int q = 0; q < S::kQw; ++q)
#pragma unroll
    for (int c = 0; c < 8; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[q][c][e] = 0.f;

  int landed = 0;  // ring rows (rho - i_lo) this thread has seen arrive
  for (int i = i_lo; i < i_hi; ++i) {
    cuda::cp_async_wait<1>();  // this thread's copies of filter row i have landed
    __syncthreads();           // ... everyone's, and step i-1 is done with its slots and the buffer refilled below
    if (tid == 0 && i + kRows + 1 < rho_end) issue(i + kRows + 1);
    if (i + 2 < i_hi) tile.stage_filter(i + 2);
    cuda::cp_async_commit();
    for (; landed < i - i_lo + kRows; ++landed)
      while (!ptx::mbarrier_try_wait_parity(&full[landed % kRing], static_cast<uint32_t>((landed / kRing) & 1))) {
      }
    const uint2* taps = fs + (i % 3) * kGroups * S::Filter::kTapStride;
    compute_row_tma<kQ, kGamma>(acc, xs, taps + (2 * c8) * S::Filter::kTapStride,
                                taps + (2 * c8 + 1) * S::Filter::kTapStride, i - i_lo, g, t, h, lc, mask);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the output tile
  store_tile_tma<kQ, kGamma>(acc, reinterpret_cast<uint2*>(xs), a, n, oh0, ow0, c0, tid);
#endif
}

// CNN_DWCONV_F16_RING_TMA_SWIZZLE = auto | none: the TMA's 32-byte swizzle of the ring rows (auto), or none (bank
// conflicts; kept to tell a layout error from others).
bool ring_tma_swizzle() {
  static const bool value = env_choice("CNN_DWCONV_F16_RING_TMA_SWIZZLE", {"auto", "none"}) != "none";
  return value;
}

// The source map: (C, W, H, N), a box of 16 channels x the tile's window columns x one row.
CUtensorMap ring_source_map(const __half* src, const ConvGeometry& g, int win) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {cuuint64_t(g.c), cuuint64_t(g.in_w), cuuint64_t(g.in_h), cuuint64_t(g.n)};
  const cuuint64_t row = cuuint64_t(g.c) * sizeof(__half);
  const cuuint64_t strides[3] = {row, row * g.in_w, row * g.in_w * g.in_h};
  const cuuint32_t box[4] = {kBN, cuuint32_t(win), 1, 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  const CUresult r = cuda::tensor_map_encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, const_cast<__half*>(src), dims,
                                                strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                ring_tma_swizzle() ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CNN_CHECK(r == CUDA_SUCCESS, "dwconv tc-ring-tma f16: cuTensorMapEncodeTiled failed (CUresult ", int(r), ") for N=",
            g.n, " H=", g.in_h, " W=", g.in_w, " C=", g.c, " F=", g.fh, "x", g.fw);
  return m;
}

template <int kQ, int kGamma>
void launch_ring_tma(const __half* src, const RingArgs& a, const ConvGeometry& g, dim3 grid, cudaStream_t stream) {
  using S = TmaRingShape<kQ, kGamma>;
  auto kernel = dwconv_tc_ring_tma_f16_kernel<kQ, kGamma>;
  const CUtensorMap map = ring_source_map(src, g, S::kWin);
  // Opt in above 48 KB on every call: cheap, and correct whichever device is current.
  if constexpr (S::kSmemBytes > 48 * 1024)
    CNN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
  kernel<<<grid, kThreads, S::kSmemBytes, stream>>>(map, a, ring_tma_swizzle() ? 1 : 0);
}

template <int kQ>
void launch_ring_tma_q(const __half* src, const RingArgs& a, const ConvGeometry& g, int gamma, dim3 grid,
                       cudaStream_t stream) {
  switch (gamma) {
    case 1: return launch_ring_tma<kQ, 1>(src, a, g, grid, stream);
    case 2: return launch_ring_tma<kQ, 2>(src, a, g, grid, stream);
    case 3: return launch_ring_tma<kQ, 3>(src, a, g, grid, stream);
    case 4: return launch_ring_tma<kQ, 4>(src, a, g, grid, stream);
    case 5: return launch_ring_tma<kQ, 5>(src, a, g, grid, stream);
    case 6: return launch_ring_tma<kQ, 6>(src, a, g, grid, stream);
    case 7: return launch_ring_tma<kQ, 7>(src, a, g, grid, stream);
    default: return launch_ring_tma<kQ, 8>(src, a, g, grid, stream);
  }
}

}  // namespace

bool tc_ring_tma_supports(const ConvGeometry& g, int q) {
  return (q == 2 || q == 4) && g.stride_h == 1 && g.stride_w == 1 && g.c % 8 == 0 && g.fw >= 1 &&
         g.fw <= kTcRingMaxFw;
}

void launch_dwconv_tc_ring_tma_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                                   const ConvGeometry& g, int q, cudaStream_t stream) {
  CNN_CHECK(tc_ring_tma_supports(g, q), "dwconv tc-ring-tma f16: needs stride 1, C % 8 == 0, 1 <= FW <= ",
            kTcRingMaxFw, " and Q = 2 or 4, got C=", g.c, " stride ", g.stride_h, "x", g.stride_w, " FW=", g.fw,
            " Q=", q);
  CNN_CHECK(reinterpret_cast<uintptr_t>(src) % 16 == 0, "dwconv tc-ring-tma f16: the source must be 16-byte aligned");
  CNN_CHECK(static_cast<long long>(g.in_w) * g.c < (1LL << 31),
            "dwconv tc-ring-tma f16: a source row of W*C = ", static_cast<long long>(g.in_w) * g.c,
            " elements does not fit the kernel's 32-bit row offsets");
  const int gamma = (g.fw + 7) / 8;
  const int channel_blocks = (g.c + kBN - 1) / kBN;
  const RingArgs a{.src = src, .w = w, .bias = bias, .dst = dst, .in_h = g.in_h, .in_w = g.in_w, .c = g.c,
                   .out_h = g.out_h, .out_w = g.out_w, .fh = g.fh, .fw = g.fw, .pad_t = g.pad_t, .pad_l = g.pad_l,
                   .flip = g.flip ? 1 : 0, .tiles_h = (g.out_h + kRows - 1) / kRows,
                   .tiles_w = (g.out_w + 8 * q - 1) / (8 * q), .channel_blocks = channel_blocks, .channels_first = 1};
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w * channel_blocks;
  CNN_CHECK(blocks < (1LL << 31), "dwconv tc-ring-tma f16: grid too large for ", blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks));
  if (q == 4)
    launch_ring_tma_q<4>(src, a, g, gamma, grid, stream);
  else
    launch_ring_tma_q<2>(src, a, g, gamma, grid, stream);
  CNN_CHECK_LAUNCH("dwconv_tc_ring_tma_f16_kernel");
}

}  // namespace cnn::dwconv

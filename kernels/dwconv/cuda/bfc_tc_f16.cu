// FP16 backward-filter on tensor cores (FP32 accumulation), stride 1, filters of at most 8 rows and 64 columns in the
// maps' own view or their transposed one (SLaK's 5 x K and K x 5 strips, 7x7 and smaller squares).
//
// Per channel and dY row h, the filter rows i and columns j get dW[i][j] += sum_u X[h+i][u] dY[h][u-j] (u: padded
// input columns). As an MMA with M = 16 filter columns, N = 8 filter rows, K = 16 input columns per chunk u0:
// A[j][u] = dY[h][u0+u-j] (a Toeplitz band of the dY row), B[u][i] = X[h+i][u0+u] (eight input rows as they are),
// D[j][i] += A B. Column tile tj of chunk K reads the same A registers as tile 0 of chunk K - tj (dY pairs at
// 16(K - tj) + 2t - g - 8m), so a warp keeps the last kTiles chunks' A register quads and builds one per chunk from
// two new pairs (four LDS.64 for 4 channels); B is two LDS.128 of two positions of 4 channels. The MMAs of a column
// tile whose band lies entirely outside the dY row are skipped.
//
// A block is 16 channels (a warp per group of 4, 8-byte positions, as fwd_tc_ring.cuh) and a balanced range of dY
// rows counted over all images; it keeps its dW tiles in registers over the range and adds them to dW with FP32
// atomics once. X rows live in a ring of shared-memory rows: a dY row needs one new X row (all FH at an image's first
// row), fetched with cp.async two rows ahead together with the dY row, one barrier per dY row. Lanes g >= FH read a
// row of zeros. Design and measurements: docs/dwconv-bfc.md.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;  // 4 warps, warp w owns channels 4w..4w+3 of the block
constexpr int kGroups = 4;     // channel groups of 4 (8 bytes per position)
constexpr int kBN = 16;        // channels per block: one 32-byte sector per position
constexpr int kFront = 8;      // zero dY positions staged before column 0 (a chunk's new pair reads down to -7)
constexpr int kMaxJobs = 32;   // cp.async jobs per thread and staged row (bit masks of 32)

// A span of positions padded to an odd number of 64-byte halves (8 positions), so that two spans side by side start
// in different bank halves: a quarter-warp's LDS.128 reads two X rows at the same columns.
int odd_halves(int positions) {
  const int p = (positions + 7) / 8 * 8;
  return (p / 8) % 2 ? p : p + 8;
}

struct TcArgs {
  const __half* __restrict__ x;
  const __half* __restrict__ dy;
  float* __restrict__ dw;
  // The view (rows and columns swapped in the transposed one): extents, padding, element strides. Element (n, r, col,
  // ch) of X is at x + (n * x_img_rows + r) * x_row + col * x_col + ch, dY likewise; view tap (i, j) at
  // dw + i * dw_row + j * dw_tap + ch.
  int ih, iw, oh, ow, fh, fw, pad_t, pad_l, c;
  long long x_img_rows, dy_img_rows;
  int x_row, x_col, dy_row, dy_col, dw_row, dw_tap;
  int chunks;                                // 16-column chunks per dY row
  int ring;                                  // X rows in the ring (layout_for)
  int x_pitch, x_group, dy_pitch, dy_group;  // positions per X row / per group's ring; per dY row / per group's rows
  int x_cols, dy_cols;                       // positions staged per X row (the chunks' columns), per dY row
  int x_jobs, dy_jobs;                       // cp.async jobs per thread of an X row, of a dY row (the last partial)
  int channel_blocks;
  long long rows;  // dY rows over all images
  int z;           // blocks per channel block: balanced row ranges
};

__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel) { return __byte_perm(a, b, sel); }

// Shared-memory loads at a 32-bit shared address, as volatile asm so that they stay where the chunk loop issues them
// (one chunk ahead of their use); a constant added to a base address becomes the instruction's immediate offset.
__device__ __forceinline__ uint4 lds128(unsigned addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint2 lds64(unsigned addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ unsigned shared_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Where a dY row of the block's range sits: image, row, and the ring slot of its first X row (X rows take
// consecutive slots, modulo the ring, as they are staged).
struct RowCursor {
  int n, oh, slot;
  bool image_start;
  __device__ void start(long long r, int oh_count) {
    n = static_cast<int>(r / oh_count);
    oh = static_cast<int>(r - static_cast<long long>(n) * oh_count);
    slot = 0;
    image_start = true;
  }
  __device__ void advance(int oh_count, int fh, int ring) {
    if (++oh == oh_count) {
      oh = 0;
      ++n;
    }
    image_start = oh == 0;
    slot += image_start ? fh : 1;  // past the previous row's window (an image start stages a whole new one)
    if (slot >= ring) slot -= ring;
  }
};

// One X row (view row ih of image n; zeros outside the image) into ring slot `slot` of every group.
__device__ __forceinline__ void stage_x_row(const TcArgs& a, uint2* xs, int n, int ih, int slot, int c_off,
                                            unsigned col_ok, int tid) {
  const bool row_ok = static_cast<unsigned>(ih) < static_cast<unsigned>(a.ih);
  const __half* src = a.x + (static_cast<long long>(n) * a.x_img_rows + (row_ok ? ih : 0)) * a.x_row + c_off +
                      static_cast<long long>((tid >> 2) - a.pad_l) * a.x_col;
  const long long step = 32LL * a.x_col;
  uint2* dst = xs + (tid & 3) * a.x_group + slot * a.x_pitch + (tid >> 2);
  for (int k = 0; k < a.x_jobs && (tid >> 2) + 32 * k < a.x_cols; ++k, src += step) {
    const bool ok = row_ok && (col_ok >> k & 1u);
    cuda::cp_async_ca8(dst + 32 * k, ok ? src : a.x, ok);
  }
}

// dY row oh of image n into buffer `buf`: position e holds dY column e - kFront, zeros outside the row.
__device__ __forceinline__ void stage_dy_row(const TcArgs& a, uint2* ds, int n, int oh, int buf, int c_off,
                                             unsigned col_ok, int tid) {
  const __half* src = a.dy + (static_cast<long long>(n) * a.dy_img_rows + oh) * a.dy_row + c_off +
                      static_cast<long long>((tid >> 2) - kFront) * a.dy_col;
  const long long step = 32LL * a.dy_col;
  uint2* dst = ds + (tid & 3) * a.dy_group + buf * a.dy_pitch + (tid >> 2);
  for (int k = 0; k < a.dy_jobs && (tid >> 2) + 32 * k < a.dy_cols; ++k, src += step) {
    const bool ok = col_ok >> k & 1u;
    cuda::cp_async_ca8(dst + 32 * k, ok ? src : a.dy, ok);
  }
}

// The 4 channels' (x[p][c], x[p+1][c]) pairs from two 8-byte positions p (lo) and p + 1 (hi) of 4 channels each.
__device__ __forceinline__ void pairs_of(unsigned (&r)[4], uint2 lo, uint2 hi) {
  r[0] = prmt(lo.x, hi.x, 0x5410u);
  r[1] = prmt(lo.x, hi.x, 0x7632u);
  r[2] = prmt(lo.y, hi.y, 0x5410u);
  r[3] = prmt(lo.y, hi.y, 0x7632u);
}
// The same into register r of each channel's quad. `swapped` computes the same pairs from the operands in the other
// order (selectors 0x1054 / 0x3276), so that ptxas does not merge the two PRMTs of a pair that a quad holds twice.
// It still does not keep the quads in place: per MMA it copies or recomputes their registers (ncu, 5x51 at
// 64x64x64x128: PRMT 28% and moves 11% of the instructions, HMMA 12%).
template <bool kSwapped>
__device__ __forceinline__ void pairs_into(unsigned (&q)[4][4], int r, uint2 lo, uint2 hi) {
  if constexpr (kSwapped) {
    q[0][r] = prmt(hi.x, lo.x, 0x1054u);
    q[1][r] = prmt(hi.x, lo.x, 0x3276u);
    q[2][r] = prmt(hi.y, lo.y, 0x1054u);
    q[3][r] = prmt(hi.y, lo.y, 0x3276u);
  } else {
    q[0][r] = prmt(lo.x, hi.x, 0x5410u);
    q[1][r] = prmt(lo.x, hi.x, 0x7632u);
    q[2][r] = prmt(lo.y, hi.y, 0x5410u);
    q[3][r] = prmt(lo.y, hi.y, 0x7632u);
  }
}
__device__ __forceinline__ void pairs_of(unsigned (&r)[4], uint4 v) {
  pairs_of(r, make_uint2(v.x, v.y), make_uint2(v.z, v.w));
}

// kTiles: 16-column filter tiles (FW <= 16 kTiles in the view). The MMAs are m16n8k16 over 16-column chunks K
// (u0 = 16K); chunks are unrolled in groups of kTiles, so that the register quads' slots are static.
// Resident blocks per SM the registers are set for: three up to three tiles; four tiles' ring and accumulators need
// more registers than three blocks leave (spills), so two.
template <int kTiles>
__global__ void __launch_bounds__(kThreads, kTiles <= 3 ? 3 : 2) bfc_tc_f16_kernel(const TcArgs a) {
  extern __shared__ uint4 smem_u4[];
  uint2* const xs = reinterpret_cast<uint2*>(smem_u4);
  uint2* const ds = xs + kGroups * a.x_group;
  uint2* const zero_row = ds + kGroups * a.dy_group;
  const int tid = threadIdx.x, lane = tid & 31, grp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;

  const int cb = blockIdx.x % a.channel_blocks, zi = blockIdx.x / a.channel_blocks;
  const long long r_begin = a.rows * zi / a.z, r_end = a.rows * (zi + 1) / a.z;
  const int c0 = cb * kBN;
  // This thread's staging jobs: channel group tid & 3, positions (tid >> 2) + 32 k.
  const int c_off = c0 + 4 * (tid & 3);
  const bool ch_ok = c_off < a.c;
  unsigned x_ok = 0, dy_ok = 0;
  for (int k = 0; k < a.x_jobs; ++k) {
    const int col = (tid >> 2) + 32 * k - a.pad_l;
    x_ok |= (ch_ok && static_cast<unsigned>(col) < static_cast<unsigned>(a.iw) ? 1u : 0u) << k;
  }
  for (int k = 0; k < a.dy_jobs; ++k) {
    const int col = (tid >> 2) + 32 * k - kFront;
    dy_ok |= (ch_ok && static_cast<unsigned>(col) < static_cast<unsigned>(a.ow) ? 1u : 0u) << k;
  }
  for (int e = tid; e < a.x_pitch; e += kThreads) zero_row[e] = make_uint2(0u, 0u);

  const long long steps = r_end - r_begin;
  // Stages the dY row at `rc` into buffer `buf` and the X rows it adds to the ring.
  const auto stage = [&](const RowCursor& rc, int buf) {
    const int first = rc.image_start ? 0 : a.fh - 1;
    int slot = rc.slot + first;
    if (slot >= a.ring) slot -= a.ring;
    for (int rho = first; rho < a.fh; ++rho) {
      stage_x_row(a, xs, rc.n, rc.oh - a.pad_t + rho, slot, c_off, x_ok, tid);
      if (++slot == a.ring) slot = 0;
    }
    stage_dy_row(a, ds, rc.n, rc.oh, buf, c_off, dy_ok, tid);
  };

  float acc[kTiles][4][4];
#pragma unroll
  for (int tj = 0; tj < kTiles; ++tj)
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[tj][c][e] = 0.f;

  RowCursor comp, ahead;
  comp.start(r_begin, a.oh);
  ahead = comp;
  if (steps > 0) stage(ahead, 0);
  cuda::cp_async_commit();
  if (steps > 1) {
    ahead.advance(a.oh, a.fh, a.ring);
    stage(ahead, 1);
  }
  cuda::cp_async_commit();

  // Chunk K of tile tj has dY in its band iff 0 <= K - tj < band_chunks.
  const unsigned band_chunks = static_cast<unsigned>((a.ow + 30) / 16);
  const unsigned xs_grp = shared_addr(xs + grp * a.x_group), zero_addr = shared_addr(zero_row + 2 * t);
  const unsigned ds_grp = shared_addr(ds + grp * a.dy_group + kFront + 2 * t - g);
  int buf = 0, stage_buf = 2;
  for (long long s = 0; s < steps; ++s) {
    cuda::cp_async_wait<1>();  // this thread's copies for row s have landed
    __syncthreads();           // ... everyone's, and row s-1 is done with the slots refilled below
    if (s + 2 < steps) {
      ahead.advance(a.oh, a.fh, a.ring);
      stage(ahead, stage_buf);
    }
    cuda::cp_async_commit();
    if (++stage_buf == 3) stage_buf = 0;

    // B rows: X row h + g of the ring, or zeros past the filter's rows.
    int slot = comp.slot + g;
    if (slot >= a.ring) slot -= a.ring;
    unsigned xrow = g < a.fh ? xs_grp + (slot * a.x_pitch + 2 * t) * 8 : zero_addr;
    unsigned dyrow = ds_grp + buf * a.dy_pitch * 8;
    if (++buf == 3) buf = 0;
    // quad[s][c]: channel c's A registers {E[2K], E[2K-1], E[2K+1], E[2K]} of chunk K in slot K % kTiles, where
    // entry E[e] is the dY pair at 8e + 2t - g; tile tj at chunk K takes the quad of chunk K - tj. Built in place so
    // that each MMA's A operand is one register quad (assembling quads from shared entries costs moves per MMA).
    // (A tile reads chunk K - tj's quad only from chunk tj on: no quad from the row before is read.)
    unsigned quad[kTiles][4][4];
    // Each chunk's shared loads are issued one chunk ahead, before the current chunk's MMAs.
    uint2 d0 = lds64(dyrow), d1 = lds64(dyrow + 8), d8 = lds64(dyrow + 64), d9 = lds64(dyrow + 72);
    uint2 p8 = make_uint2(0u, 0u), p9 = p8;  // the previous chunk's E[2K+1] loads (none before chunk 0: zeros)
    uint4 x0 = lds128(xrow), x8 = lds128(xrow + 64);
    for (int k0 = 0; k0 < a.chunks; k0 += kTiles, dyrow += 128 * kTiles, xrow += 128 * kTiles) {
#pragma unroll
      for (int kk = 0; kk < kTiles; ++kk) {
        if (k0 + kk == a.chunks) break;
        // Each quad register from its own PRMT of the loaded pairs: E[2K] twice, E[2K+1], and E[2K-1] from the
        // previous chunk's loads.
        unsigned(&qk)[4][4] = quad[kk];
        pairs_into<false>(qk, 0, d0, d1);
        pairs_into<true>(qk, 3, d0, d1);
        pairs_into<false>(qk, 2, d8, d9);
        pairs_into<true>(qk, 1, p8, p9);
        p8 = d8, p9 = d9;
        unsigned b0[4], b1[4], bq[4][2];
        pairs_of(b0, x0);
        pairs_of(b1, x8);
#pragma unroll
        for (int c = 0; c < 4; ++c) bq[c][0] = b0[c], bq[c][1] = b1[c];
        // The next chunk's (past the last one: inside the rows' slack, unused).
        d0 = lds64(dyrow + 128 * kk + 128), d1 = lds64(dyrow + 128 * kk + 136);
        d8 = lds64(dyrow + 128 * kk + 192), d9 = lds64(dyrow + 128 * kk + 200);
        x0 = lds128(xrow + 128 * kk + 128), x8 = lds128(xrow + 128 * kk + 192);
#pragma unroll
        for (int tj = 0; tj < kTiles; ++tj) {
          if (static_cast<unsigned>(k0 + kk - tj) >= band_chunks) continue;
          const unsigned(&qt)[4][4] = quad[(kk - tj + kTiles) % kTiles];
#pragma unroll
          for (int c = 0; c < 4; ++c)
            cuda::mma_m16n8k16(acc[tj][c], qt[c][0], qt[c][1], qt[c][2], qt[c][3], bq[c][0], bq[c][1]);
        }
      }
    }
    comp.advance(a.oh, a.fh, a.ring);
  }
  cuda::cp_async_wait<0>();

  // D[j][i]: lane (g, t) holds columns j = 16 tj + g (+ 8) and rows i = 2t, 2t + 1.
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int ch = c0 + 4 * grp + c;
    if (ch >= a.c) continue;
#pragma unroll
    for (int tj = 0; tj < kTiles; ++tj)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = 16 * tj + g + 8 * (e >> 1), i = 2 * t + (e & 1);
        if (i < a.fh && j < a.fw) atomicAdd(a.dw + i * a.dw_row + j * a.dw_tap + ch, acc[tj][c][e]);
      }
  }
}

using KernelFn = void (*)(TcArgs);

KernelFn kernel_for(int tiles) {
  switch (tiles) {
    case 1:
      return &bfc_tc_f16_kernel<1>;
    case 2:
      return &bfc_tc_f16_kernel<2>;
    case 3:
      return &bfc_tc_f16_kernel<3>;
    default:
      return &bfc_tc_f16_kernel<4>;
  }
}

// The view the kernel runs on: the maps' own when the filter has at most kBfcTcMaxRows rows (and at most
// kBfcTcMaxCols columns), else the transposed one.
bool use_transposed(const DwconvParams& p) { return !(p.fh <= kBfcTcMaxRows && p.fw <= kBfcTcMaxCols); }

struct TcPlan {
  TcArgs args{};  // without pointers
  KernelFn kernel = nullptr;
  bool transposed = false;
  int tiles = 1, smem = 0, blocks_per_sm = 1;
  long long blocks() const { return static_cast<long long>(args.channel_blocks) * args.z; }
};

// Shared memory of a view (fh rows, ow output columns, fw columns): the X ring, three dY rows, a zero row.
struct TcLayout {
  int tiles, chunks, x_pitch, x_group, dy_pitch, dy_group, ring, bytes;
};
TcLayout layout_for(int fh, int fw, int oh, int ow) {
  TcLayout l{};
  l.tiles = (fw + 15) / 16;
  l.chunks = (ow + fw - 1 + 15) / 16;  // 16-column chunks covering the padded input row
  const int span = 16 * l.chunks;
  // Rows in the ring: a dY row's FH, and the rows staged for the next two. Those add one row each, or FH at an
  // image's first row; two image starts in a row (a new one after one dY row) happen only on one-row maps.
  l.ring = oh == 1 ? 3 * fh : 2 * fh + 1;
  // Reads run one chunk past the last (the prefetch): 16 positions of slack after each row.
  l.x_pitch = odd_halves(span + 16);
  l.x_group = odd_halves(l.ring * l.x_pitch);
  l.dy_pitch = odd_halves(span + kFront + 24);
  l.dy_group = odd_halves(3 * l.dy_pitch);
  l.bytes = (kGroups * (l.x_group + l.dy_group) + l.x_pitch) * 8;
  return l;
}

ConvGeometry view_of(const DwconvParams& p, bool transposed) {
  const ConvGeometry g = forward_geometry(p);
  return transposed ? transposed_geometry(g) : g;
}

TcPlan make_plan(const DwconvParams& p) {
  TcPlan s;
  s.transposed = use_transposed(p);
  const ConvGeometry v = view_of(p, s.transposed);
  const TcLayout l = layout_for(v.fh, v.fw, v.out_h, v.out_w);
  s.tiles = l.tiles;
  s.smem = l.bytes;
  s.kernel = kernel_for(l.tiles);
  TcArgs& a = s.args;
  a.ih = v.in_h, a.iw = v.in_w, a.oh = v.out_h, a.ow = v.out_w, a.fh = v.fh, a.fw = v.fw, a.pad_t = v.pad_t,
  a.pad_l = v.pad_l, a.c = p.c;
  const int c = p.c;
  // NHWC strides; the transposed view swaps each row stride with its column stride.
  int x_row = p.iw * c, x_col = c, dy_row = p.ow() * c, dy_col = c, dw_row = p.fw * c, dw_tap = c;
  if (s.transposed) {
    std::swap(x_row, x_col);
    std::swap(dy_row, dy_col);
    std::swap(dw_row, dw_tap);
  }
  a.x_row = x_row, a.x_col = x_col, a.dy_row = dy_row, a.dy_col = dy_col, a.dw_row = dw_row, a.dw_tap = dw_tap;
  a.x_img_rows = s.transposed ? static_cast<long long>(p.ih) * p.iw : p.ih;
  a.dy_img_rows = s.transposed ? static_cast<long long>(p.oh()) * p.ow() : p.oh();
  a.chunks = l.chunks, a.ring = l.ring;
  a.x_pitch = l.x_pitch, a.x_group = l.x_group, a.dy_pitch = l.dy_pitch, a.dy_group = l.dy_group;
  a.x_cols = 16 * l.chunks;
  a.dy_cols = 16 * l.chunks + kFront + 8;
  a.x_jobs = (a.x_cols + 31) / 32;
  a.dy_jobs = (a.dy_cols + 31) / 32;
  a.channel_blocks = (c + kBN - 1) / kBN;
  a.rows = static_cast<long long>(p.n) * v.out_h;
  CNN_CUDA_CHECK(cudaFuncSetAttribute(s.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, s.smem));
  s.blocks_per_sm = resident_blocks_per_sm(s.kernel, kThreads, s.smem);
  // One wave: each channel block's rows in as many balanced ranges as its share of the resident blocks.
  const long long slots = static_cast<long long>(current_device_sms()) * s.blocks_per_sm;
  a.z = static_cast<int>(std::clamp<long long>(slots / a.channel_blocks, 1, a.rows));
  CNN_CHECK(s.blocks() < (1LL << 31), "dwconv bfc_tc: grid too large for ", p.str());
  return s;
}

const TcPlan& cached_plan(const DwconvParams& p) {
  static PlanCache<DeviceShapeKey, TcPlan> cache;
  return cache.get(device_shape_key(p), [&] { return make_plan(p); });
}

}  // namespace

bool bfc_tc_f16_supports(const DwconvParams& p, int align) {
  if (p.stride_h != 1 || p.stride_w != 1 || p.c % 4 != 0 || align < 8) return false;
  const bool own = p.fh <= kBfcTcMaxRows && p.fw <= kBfcTcMaxCols;
  const bool transposed = p.fw <= kBfcTcMaxRows && p.fh <= kBfcTcMaxCols;
  if (!own && !transposed) return false;
  const ConvGeometry v = view_of(p, use_transposed(p));
  const TcLayout l = layout_for(v.fh, v.fw, v.out_h, v.out_w);
  // 32-bit element offsets within an image, the staging jobs' bit masks, and a block's shared memory.
  const long long image = static_cast<long long>(std::max(p.ih * p.iw, p.oh() * p.ow())) * p.c;
  return image < (1LL << 31) && (16 * l.chunks + kFront + 8 + 31) / 32 <= kMaxJobs && l.bytes <= kBfcTcMaxSmemBytes;
}

std::string dwconv_bfc_tc_f16_path_name(const DwconvParams& p) {
  const TcPlan& s = cached_plan(p);
  return str_cat("bfc f16 tc (fp32 accumulation) F=", p.fh, "x", p.fw, s.transposed ? " transposed" : "",
                 " tiles=", s.tiles, "x16 chunks=", s.args.chunks, " ring=", s.args.ring, " Z=", s.args.z,
                 " blocks=", s.blocks(), " (", s.blocks_per_sm, "/SM)");
}

void launch_dwconv_bfc_tc_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                              cudaStream_t stream) {
  const char* name = "launch_dwconv_bfc_tc_f16";
  p.validate(name);
  check_pointers(name, x, "x", dy, "dy", dw, "dw");
  CNN_CHECK(bfc_tc_f16_supports(p, alignment_of({x, dy})), name, ": expected stride 1, C % 4 == 0, 8-byte aligned ",
            "x and dy, a filter of at most ", kBfcTcMaxRows, " rows and ", kBfcTcMaxCols,
            " columns (or the transpose) and maps within its shared memory, got ", p.str());
  const TcPlan& s = cached_plan(p);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  if (s.blocks() == 0 || p.x_elems() == 0) return;
  TcArgs a = s.args;
  a.x = x, a.dy = dy, a.dw = dw;
  s.kernel<<<static_cast<unsigned>(s.blocks()), kThreads, s.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_tc_f16_kernel");
}

}  // namespace cnn::dwconv

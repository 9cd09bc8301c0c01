// The kernel of fwd_tma_cc.cu (which launches it): depthwise forward (and stride-1 backward-data on the flipped
// filter) for narrow filters (FW <= 5) on CUDA cores, fed by the Tensor Memory Accelerator, FP16 or FP32 data, FP32
// accumulation. NHWC, stride 1, 16-byte aligned tensors, C % 8 == 0 (FP16) or C % 4 == 0 (FP32), sm_90.
//
// Persistent blocks walk tiles of 16 output rows x 8 (or 16) columns x one 128-byte channel slice (64 halves or 32
// floats), in the order TmaTileOrder names (the host launches the sliced order). Thread 0 asks the TMA for a tile's input window, (16 + FH - 1) x
// (tile width + FW - 1) positions of the slice, stages - 1 tiles ahead into a ring of shared-memory stages; an
// mbarrier per stage says when its bytes have landed. Thread = one lane of 16 or 8 bytes of channels
// (TmaCcConfig::lane_bytes) x 8 outputs of one tile row, or of two rows (rows_per_thread, 8-byte lanes); a 16-column
// tile has two such column groups. The filter of the block's slice (interleaved order: of every slice) sits in shared
// memory as FP32 (rotated for backward-data), the bias in registers.
//
// Why (docs/dwconv-fp16.md): the FP16 register kernel spends about three instructions per FFMA at 3x3 on bounds
// checks, 64-bit addresses and per-row filter loads and conversions, and keeps only its own loads in flight (L2
// re-serves each input several times). Here the copy is one instruction per tile, padding is the
// TMA's zero fill of out-of-bounds boxes (negative coordinates included), and a thread's inner loop is shared-memory
// loads, conversions and FMAs only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cuda/ptx>
#endif

#include "core/cuda_check.h"
#include "kernels/common/fast_divmod.h"
#include "kernels/common/half8.cuh"
#include "kernels/common/tensor_map.h"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kRows = 16;                // output rows per tile
constexpr int kTM = 8;                   // output columns per thread
constexpr int kSliceBytes = 128;         // one box row of channels
constexpr size_t kMaxSmem = 200 * 1024;  // per block: stages + filter + barriers (an SM has 227 KB)

// Tile orders the kernel can walk. The host launches the sliced order only; the kernel keeps the other orders' code
// because removing it changes ptxas's register allocation of the sliced path and measured slower: FP16 3x3 0.92x,
// FP32 5x5 0.96x on all three sweep maps (docs/dwconv-fp16.md, tried and rejected).
enum class TmaTileOrder { sliced, contiguous, strided, interleaved };
constexpr int kSliced = static_cast<int>(TmaTileOrder::sliced);

// A thread's lane: kBytes of one position's channels (16: a uint4, 8: a uint2), widened to / narrowed from FP32,
// for kRpt output rows of a tile. 16-byte lanes give a 128-thread block (8 lanes x 16 rows); 8-byte lanes give 256
// threads with half the accumulators each, so twice the warps fit an SM for the same shared memory (registers are
// the limit otherwise). Two rows per thread (8-byte lanes only: twice the accumulators) read FH + 1 input rows for two
// output rows instead of 2 FH, so a third fewer shared-memory loads and FP16 widenings at 3x3, in 128-thread blocks.
// kCg column groups of kTM columns make a tile kTM * kCg columns wide: a wider window re-reads fewer halo columns
// from L2 (3x3: 18x10 positions per 16x8 tile = 1.41 per output, 18x18 per 16x16 = 1.27).
template <class T, int kBytes, int kRpt = 1, int kCg = 1>
struct Lane {
  using Elem = T;
  using Vec = std::conditional_t<kBytes == 16, uint4, uint2>;
  static constexpr bool kHalf = std::is_same_v<T, __half>;
  static constexpr int kCpl = kBytes / static_cast<int>(sizeof(T));  // channels per lane
  static constexpr int kWords = kBytes / 4;
  static constexpr int kLanes = kSliceBytes / kBytes;  // lanes of one slice
  static constexpr int kRowsPerThread = kRpt;
  static_assert(kRpt == 1 || kRpt == 2, "one or two output rows per thread");
  static_assert(kCg == 1 || kCg == 2, "one or two column groups per tile");
  static constexpr int kRowSlots = kRows / kRpt;  // threads down a column group
  static constexpr int kTileW = kTM * kCg;        // output columns per tile
  static constexpr int kThreads = kLanes * kRowSlots * kCg;
  // 128-thread and 256-thread blocks run three per SM (as measured); 512-thread blocks one or more.
  static constexpr int kMinBlocks = kCg == 1 ? 3 : 1;
  static constexpr int kBN = kSliceBytes / static_cast<int>(sizeof(T));  // channels of one slice
  static constexpr int kBytesPerLane = kBytes;
  static constexpr CUtensorMapDataType kMapType =
      kHalf ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  __device__ static void widen(const Vec v, float (&f)[kCpl]) {
    const auto& w = *reinterpret_cast<const unsigned(*)[kWords]>(&v);
    if constexpr (kHalf) {
      cuda::widen_halves(w, f);
    } else {
#pragma unroll
      for (int k = 0; k < kWords; ++k) f[k] = __uint_as_float(w[k]);
    }
  }
  __device__ static Vec narrow(const float (&f)[kCpl]) {
    Vec v;
    auto& w = *reinterpret_cast<unsigned(*)[kWords]>(&v);
    if constexpr (kHalf) {
      cuda::narrow_halves(f, w);  // round to nearest even, once per value
    } else {
#pragma unroll
      for (int k = 0; k < kWords; ++k) w[k] = __float_as_uint(f[k]);
    }
    return v;
  }
  __device__ static float to_float(T v) {
    if constexpr (kHalf)
      return __half2float(v);
    else
      return v;
  }
};

// The filter of a slice in shared memory, FP32: [tap][group][lane][kF] with a lane's kCpl channels in groups of
// kF = min(kCpl, 4), so the lanes of a quarter-warp read consecutive 16-byte words (no bank conflicts).
template <class L>
constexpr int kF = L::kCpl < 4 ? L::kCpl : 4;
template <class L>
__host__ __device__ constexpr int filter_slot(int k) {  // channel k of the slice -> its float within a tap
  const int lane = k / L::kCpl, e = k % L::kCpl;
  return ((e / kF<L>)*L::kLanes + lane) * kF<L> + e % kF<L>;
}

template <class L>
struct TmaArgs {
  const typename L::Elem* __restrict__ w;     // (FH, FW, C)
  const typename L::Elem* __restrict__ bias;  // (C) or null
  typename L::Elem* __restrict__ dst;         // (N, out_h, out_w, C)
  int n, c, out_h, out_w, fh, pad_t, pad_l, flip;
  int tiles_h, tiles_w, tiles;  // tiles = channel slices x N x tiles_h x tiles_w
  int stage_bytes, stages;
  int order;                             // TmaTileOrder
  int slices;                            // channel slices
  int filter_floats;                     // shared-memory floats before the mbarriers: filter(s), bias (interleaved)
  cuda::FastDivmod div_w, div_h, div_n;  // tiles_w, tiles_h, n as multiply-shift divisors (see tile_at)
  cuda::FastDivmod div_s;                // slices (interleaved order)
};

template <class L>
size_t stage_bytes(int fh, int fw) {
  return size_t(kRows + fh - 1) * (L::kTileW + fw - 1) * kSliceBytes;
}
template <class L>
size_t filter_bytes(int fh, int fw) {
  return size_t(fh) * fw * L::kBN * sizeof(float);
}
// Floats of filter (and bias) in shared memory: one slice's filter, or with the interleaved order every slice's
// filter and the whole bias (each a multiple of 32 floats, so the mbarriers after them stay 8-byte aligned).
template <class L>
int filter_floats(const ConvGeometry& g) {
  return g.fh * g.fw * L::kBN;
}
// [stage][window rows][window columns][slice channels] (each stage a multiple of 128 bytes), the FP32 filter
// [slice][tap][slice channels] (and the bias), then one mbarrier per stage.
template <class L>
size_t smem_bytes(int fh, int fw, int stages, size_t filter_floats) {
  return stages * stage_bytes<L>(fh, fw) + filter_floats * sizeof(float) + stages * sizeof(uint64_t);
}
template <class L>
size_t smem_bytes(int fh, int fw, int stages) {  // one slice's filter
  return smem_bytes<L>(fh, fw, stages, filter_bytes<L>(fh, fw) / sizeof(float));
}

// Tile t -> (channel slice, image, tile row, tile column), columns fastest and the channel slice slowest, so a
// persistent block reloads its filter only when its tiles cross into the next slice (interleaved order: the slice
// fastest, every slice's filter loaded once).
struct Tile {
  int c0, n, oh0, ow0;
};
// 4-warp blocks (16-byte lanes, or 8-byte lanes with two rows per thread) run 2-3 per SM at 5x5: 8-12 warps cannot
// hide the ~20 dependent instructions of each division, so the digits come from multiply-shift divisors. 8-warp
// blocks keep the divisions, which measured faster for them (docs/dwconv-fp16.md, tried and rejected).
template <class L>
constexpr bool kDivisorTiles = L::kLanes * L::kRowSlots == 128;  // per column group: wide tiles run as many warps

// Interleaved order: tile t is slice t % slices of position t / slices, the position's digits as above.
template <class L>
__device__ __forceinline__ Tile tile_at(const TmaArgs<L>& a, int t) {
  Tile p;
  int slice = -1;
  if (a.order == static_cast<int>(TmaTileOrder::interleaved)) {
    uint32_t r = 0;
    t = static_cast<int>(a.div_s.divmod(static_cast<uint32_t>(t), r));
    slice = static_cast<int>(r);
  }
  if constexpr (kDivisorTiles<L>) {
    uint32_t r = 0;
    uint32_t q = a.div_w.divmod(static_cast<uint32_t>(t), r);
    p.ow0 = static_cast<int>(r) * L::kTileW;
    q = a.div_h.divmod(q, r);
    p.oh0 = static_cast<int>(r) * kRows;
    q = a.div_n.divmod(q, r);
    p.n = static_cast<int>(r);
    p.c0 = static_cast<int>(q) * L::kBN;
  } else {
    p.ow0 = (t % a.tiles_w) * L::kTileW;
    t /= a.tiles_w;
    p.oh0 = (t % a.tiles_h) * kRows;
    t /= a.tiles_h;
    p.n = t % a.n;
    p.c0 = (t / a.n) * L::kBN;
  }
  if (slice >= 0) p.c0 = slice * L::kBN;
  return p;
}

// This block's tiles: first, first + step, ... (count of them).
struct TileRange {
  int first, step, count;
};
template <class L>
__device__ __forceinline__ TileRange tile_range(const TmaArgs<L>& a) {
  const int block = static_cast<int>(blockIdx.x), grid = static_cast<int>(gridDim.x);
  const int per_slice = a.n * a.tiles_h * a.tiles_w, slices = a.tiles / per_slice;
  if (a.order == static_cast<int>(TmaTileOrder::sliced) && grid >= slices) {
    // The blocks split into one group per slice (sizes differ by at most one); a group walks its slice with the
    // group's stride, so its blocks run neighbouring tiles at once (shared halos in L2) and load the filter once.
    const int s = static_cast<int>(1LL * block * slices / grid);
    const int lo = static_cast<int>((1LL * s * grid + slices - 1) / slices);
    const int hi = static_cast<int>((1LL * (s + 1) * grid + slices - 1) / slices);
    const int rank = block - lo, size = hi - lo;
    return {s * per_slice + rank, size, rank < per_slice ? (per_slice - rank - 1) / size + 1 : 0};
  }
  if (a.order == static_cast<int>(TmaTileOrder::contiguous) || a.order == static_cast<int>(TmaTileOrder::sliced)) {
    // contiguous, or sliced with fewer blocks than slices
    const int first = static_cast<int>(1LL * block * a.tiles / grid);
    return {first, 1, static_cast<int>(1LL * (block + 1) * a.tiles / grid) - first};
  }
  return {block, grid, block < a.tiles ? (a.tiles - block - 1) / grid + 1 : 0};  // strided, interleaved
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace ptx = ::cuda::ptx;

// Filter row i of this lane's channels from the slice's FP32 filter in shared memory.
template <class L, int kFW>
__device__ __forceinline__ void load_filter_row(const float* wl, int i, float (&wf)[kFW][L::kCpl]) {
#pragma unroll
  for (int j = 0; j < kFW; ++j)
#pragma unroll
    for (int g = 0; g < L::kCpl / kF<L>; ++g) {
      const float* t = wl + (i * kFW + j) * L::kBN + g * L::kLanes * kF<L>;
      if constexpr (kF<L> == 4) {
        const float4 v = *reinterpret_cast<const float4*>(t);
        wf[j][4 * g] = v.x, wf[j][4 * g + 1] = v.y, wf[j][4 * g + 2] = v.z, wf[j][4 * g + 3] = v.w;
      } else {
        const float2 v = *reinterpret_cast<const float2*>(t);
        wf[j][2 * g] = v.x, wf[j][2 * g + 1] = v.y;
      }
    }
}

// Output row oh from column ow of a tile (the thread's lane at channel ch): acc[u] narrowed and stored for the
// columns inside the map.
template <class L>
__device__ __forceinline__ void store_row(const TmaArgs<L>& a, const Tile& p, int oh, int ow, int ch,
                                          const float (&acc)[kTM][L::kCpl]) {
  auto* out = a.dst + ((static_cast<long long>(p.n) * a.out_h + oh) * a.out_w + ow) * a.c + ch;
#pragma unroll
  for (int u = 0; u < kTM; ++u) {
    if (ow + u >= a.out_w) break;
    *reinterpret_cast<typename L::Vec*>(out + static_cast<long long>(u) * a.c) = L::narrow(acc[u]);
  }
}

// A thread's place in a tile: lane cq of the slice, first output row r (of kRpt), column group g.
struct ThreadSpot {
  int cq, r, g;
};
template <class L>
__device__ __forceinline__ ThreadSpot thread_spot() {
  const int t = static_cast<int>(threadIdx.x), slot = t / L::kLanes;
  return {t % L::kLanes, slot % L::kRowSlots * L::kRowsPerThread, slot / L::kRowSlots};
}

// One tile row of one lane from a landed stage: acc[u] = bias + sum over the window of inputs x filter, stored.
template <class L, int kFW>
__device__ __forceinline__ void compute_row(const TmaArgs<L>& a, const unsigned char* stage, const float* wsm,
                                            const float (&b)[L::kCpl], const Tile& p) {
  constexpr int kCols = L::kTileW + kFW - 1, kCpl = L::kCpl, kLanes = L::kLanes;  // window columns
  const auto [cq, r, g] = thread_spot<L>();
  const int oh = p.oh0 + r, ow = p.ow0 + g * kTM, ch = p.c0 + kCpl * cq;
  if (oh >= a.out_h || ow >= a.out_w || ch >= a.c) return;
  float acc[kTM][kCpl];
#pragma unroll
  for (int u = 0; u < kTM; ++u)
#pragma unroll
    for (int e = 0; e < kCpl; ++e) acc[u][e] = b[e];
  using Vec = typename L::Vec;
  const Vec* win = reinterpret_cast<const Vec*>(stage) + (r * kCols + g * kTM) * kLanes + cq;
  const float* wl = wsm + kF<L> * cq;
  for (int i = 0; i < a.fh; ++i) {
    float wf[kFW][kCpl];
    load_filter_row<L, kFW>(wl, i, wf);
    const Vec* in = win + i * kCols * kLanes;
#pragma unroll
    for (int q = 0; q < kTM + kFW - 1; ++q) {
      float x[kCpl];
      L::widen(in[q * kLanes], x);
#pragma unroll
      for (int j = 0; j < kFW; ++j) {
        const int u = q - j;
        if (u >= 0 && u < kTM) {
#pragma unroll
          for (int e = 0; e < kCpl; ++e) acc[u][e] = fmaf(x[e], wf[j][e], acc[u][e]);
        }
      }
    }
  }
  store_row(a, p, oh, ow, ch, acc);
}

// Window row i of a thread's pair of output rows (r0, r0 + 1): row r0 takes filter row i when bit 0 of kUse is set,
// row r0 + 1 filter row i - 1 when bit 1 is. Each input position is loaded and widened once for both.
template <class L, int kFW, int kUse>
__device__ __forceinline__ void input_row_pair(float (&acc)[2][kTM][L::kCpl], const typename L::Vec* in,
                                               const float* wl, int i) {
  constexpr int kCpl = L::kCpl;
  float wf[2][kFW][kCpl];
  if constexpr (kUse & 1) load_filter_row<L, kFW>(wl, i, wf[0]);
  if constexpr (kUse & 2) load_filter_row<L, kFW>(wl, i - 1, wf[1]);
#pragma unroll
  for (int q = 0; q < kTM + kFW - 1; ++q) {
    float x[kCpl];
    L::widen(in[q * L::kLanes], x);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      if (!(kUse >> k & 1)) continue;
#pragma unroll
      for (int j = 0; j < kFW; ++j) {
        const int u = q - j;
        if (u >= 0 && u < kTM) {
#pragma unroll
          for (int e = 0; e < kCpl; ++e) acc[k][u][e] = fmaf(x[e], wf[k][j][e], acc[k][u][e]);
        }
      }
    }
  }
}

// Two tile rows of one lane (two rows per thread): window rows 0 .. FH, the first feeding only output row r0, the
// last only r0 + 1.
template <class L, int kFW>
__device__ __forceinline__ void compute_row_pair(const TmaArgs<L>& a, const unsigned char* stage, const float* wsm,
                                                 const float (&b)[L::kCpl], const Tile& p) {
  constexpr int kCols = L::kTileW + kFW - 1, kCpl = L::kCpl, kLanes = L::kLanes;  // window columns
  const auto [cq, r0, g] = thread_spot<L>();
  const int oh = p.oh0 + r0, ow = p.ow0 + g * kTM, ch = p.c0 + kCpl * cq;
  if (oh >= a.out_h || ow >= a.out_w || ch >= a.c) return;
  float acc[2][kTM][kCpl];
#pragma unroll
  for (int k = 0; k < 2; ++k)
#pragma unroll
    for (int u = 0; u < kTM; ++u)
#pragma unroll
      for (int e = 0; e < kCpl; ++e) acc[k][u][e] = b[e];
  using Vec = typename L::Vec;
  const Vec* win = reinterpret_cast<const Vec*>(stage) + (r0 * kCols + g * kTM) * kLanes + cq;
  const float* wl = wsm + kF<L> * cq;
  input_row_pair<L, kFW, 1>(acc, win, wl, 0);
  for (int i = 1; i < a.fh; ++i) input_row_pair<L, kFW, 3>(acc, win + i * kCols * kLanes, wl, i);
  input_row_pair<L, kFW, 2>(acc, win + a.fh * kCols * kLanes, wl, a.fh);
  store_row(a, p, oh, ow, ch, acc[0]);
  if (oh + 1 < a.out_h) store_row(a, p, oh + 1, ow, ch, acc[1]);
}

// The filter of the channel slice at c0 as FP32 in shared memory ([tap][filter_slot], rotated by 180 degrees for
// backward-data; zeros past C).
template <class L, int kFW>
__device__ __forceinline__ void load_slice_filter(const TmaArgs<L>& a, int c0, float* wsm) {
  constexpr int kBn = L::kBN;
  for (int idx = threadIdx.x; idx < a.fh * kFW * kBn; idx += L::kThreads) {
    const int k = idx % kBn, tap = idx / kBn, i = tap / kFW, j = tap % kFW;
    const int si = a.flip ? a.fh - 1 - i : i, sj = a.flip ? kFW - 1 - j : j;
    wsm[tap * kBn + filter_slot<L>(k)] =
        c0 + k < a.c ? L::to_float(a.w[(static_cast<long long>(si) * kFW + sj) * a.c + c0 + k]) : 0.f;
  }
}
// This thread's bias values for the slice at c0 (zeros past C or without a bias).
template <class L>
__device__ __forceinline__ void load_bias(const TmaArgs<L>& a, int c0, float (&b)[L::kCpl]) {
  const int ch = c0 + L::kCpl * thread_spot<L>().cq;
#pragma unroll
  for (int e = 0; e < L::kCpl; ++e) b[e] = a.bias != nullptr && ch + e < a.c ? L::to_float(a.bias[ch + e]) : 0.f;
}
#endif

template <class L, int kFW>
__global__ void __launch_bounds__(L::kThreads, L::kMinBlocks)
    dwconv_tma_cc_kernel(const __grid_constant__ CUtensorMap src, const TmaArgs<L> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  const int stages = a.stages;
  float* wsm = reinterpret_cast<float*>(smem + stages * a.stage_bytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(wsm + a.filter_floats);  // 8-byte aligned (filter_floats)
  // Interleaved order: consecutive tiles of a block are in different slices, so every slice's filter and the bias
  // are loaded once, up front.
  const bool whole = a.order == static_cast<int>(TmaTileOrder::interleaved);
  const int taps_floats = a.fh * kFW * L::kBN;  // one slice's filter
  float* bsm = wsm + a.slices * taps_floats;    // interleaved: the bias, slices x kBN floats
  const TileRange range = tile_range(a);
  const int first = range.first, step = range.step, my_tiles = range.count;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) ptx::mbarrier_init(&full[s], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  if (whole) {
    for (int sl = 0; sl < a.slices; ++sl) load_slice_filter<L, kFW>(a, sl * L::kBN, wsm + sl * taps_floats);
    for (int c = threadIdx.x; c < a.slices * L::kBN; c += L::kThreads)
      bsm[c] = a.bias != nullptr && c < a.c ? L::to_float(a.bias[c]) : 0.f;
  }
  __syncthreads();
  // Thread 0: the k-th tile of this block into the next stage of the ring, `put` (its previous use ended at a block
  // barrier). Ring positions advance by one per tile, without divisions.
  int put = 0;
  const auto issue = [&](int k) {
    const Tile p = tile_at(a, first + k * step);
    const int s = put;
    put = put + 1 == stages ? 0 : put + 1;
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s],
                                   static_cast<uint32_t>(a.stage_bytes));
    const int32_t coords[4] = {p.c0, p.ow0 - a.pad_l, p.oh0 - a.pad_t, p.n};
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + s * a.stage_bytes, &src, coords, &full[s]);
  };
  if (threadIdx.x == 0)
    for (int k = 0; k < stages - 1 && k < my_tiles; ++k) issue(k);
  int slice = -1, s = 0;
  uint32_t phase = 0;  // of stage s's mbarrier: flips each time the ring wraps
  float b[L::kCpl];
  for (int k = 0; k < my_tiles; ++k) {
    if (threadIdx.x == 0 && k + stages - 1 < my_tiles) issue(k + stages - 1);
    const Tile p = tile_at(a, first + k * step);
    const float* wt = wsm;
    if (whole) {
      wt += p.c0 / L::kBN * taps_floats;
      const float* bl = bsm + p.c0 + L::kCpl * thread_spot<L>().cq;
#pragma unroll
      for (int e = 0; e < L::kCpl; ++e) b[e] = bl[e];
    } else if (p.c0 != slice) {  // the same for the whole block; nobody reads wsm past the last iteration's barrier
      load_slice_filter<L, kFW>(a, p.c0, wsm);
      load_bias(a, p.c0, b);
      slice = p.c0;
      __syncthreads();
    }
    while (!ptx::mbarrier_try_wait_parity(&full[s], phase)) {
    }
    if constexpr (L::kRowsPerThread == 1)
      compute_row<L, kFW>(a, smem + s * a.stage_bytes, wt, b, p);
    else
      compute_row_pair<L, kFW>(a, smem + s * a.stage_bytes, wt, b, p);
    __syncthreads();  // stage s is free for the tile issued next iteration
    if (++s == stages) s = 0, phase ^= 1;
  }
#endif
}

}  // namespace
}  // namespace cnn::dwconv

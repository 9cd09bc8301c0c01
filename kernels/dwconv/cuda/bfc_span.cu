// Depthwise backward-filter for 3x3, 5x5, 7x7, 9x9, 13x5 and 5x13 filters at stride 1 on span-staged tiles
// (Kernel::bfc_span):
// dW[i,j,c] = sum_{n,oh,ow} X[n, oh+i-pT, ow+j-pL, c] * dY[n,oh,ow,c], X and dY (N,H,W,C) FP16 or FP32, dW (FH,FW,C)
// FP32 with FP32 accumulation, at any C whose map rows are whole 16-byte chunks (SLaK's 124, 249, 499, 998 on maps of
// a multiple of 8 columns, FP16; of 4 columns, FP32).
//
// - Block = one slice of 32 channels (lane = channel) over a chunk of output tiles of kWarps * kTh rows x kTW
//   columns (kTh = 2; 8 warps, or 4 on maps of at most 8 rows, which are then one tile high); per tile it stages the X
//   window ((tile rows + FH - 1) x (tile columns + FW - 1)) and the dY tile in shared memory with 16-byte cp.async
//   copies of each pixel's channel span (span_staging.cuh), so odd C costs no element loads.
// - Warp w takes dY rows w * kTh .. + kTh - 1 of the tile; its lanes walk the X columns k = 0 .. kTW + FW - 2: step
//   k widens X column k of the kTh + FH - 1 rows once, dY column k enters a ring of FW columns, and tap (i, j) of dY
//   row t adds X[t + i][k] * dY[t][k - j] (k - j inside the tile: the test is compile-time once the walk is
//   unrolled). Each (X column, row) costs one shared load (and for FP16 one conversion) for kTh * FW FMAs.
// - The slots' shifts repeat every 8 columns (FP16; every 4 for FP32), and tiles start at multiples of 8, so a lane
//   keeps 8 shared addresses per tensor (one per column mod 8) for all its tiles, and every load is an address
//   register plus an immediate.
// - FP32 sums per (tap, lane) in registers over the block's tiles, then shared-memory adds across warps and one global
//   atomicAdd per (tap, channel) per block into dW, zeroed by the launcher. Blocks: slices x chunks, about one wave.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>

#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/kernels.h"
#include "kernels/dwconv/cuda/plan_cache.h"
#include "kernels/dwconv/cuda/span_staging.cuh"

namespace cnn::dwconv {
namespace {

constexpr int kLanes = 32;
constexpr int kRowsPerWarp = 2;  // dY rows per warp in a tile (kTh)
template <class T>
constexpr int kPitch = span::kPitch<T, kLanes>;  // elements per staged pixel

template <class T>
struct SpanArgs {
  const T* x;
  const T* dy;
  float* dw;
  int64_t x_elems, dy_elems;
  int n, ih, iw, c, oh, ow, pt, pl;
  int tiles_h, tiles_w;  // output tiles per image
  int slices, z;         // blocks: slice fastest, then chunk of tiles
};

template <class T, int FH, int FW, int kTh, int kTW, int kWarps>
struct SpanTile {
  static constexpr int kThreads = kLanes * kWarps;
  static constexpr int kRows = kWarps * kTh;     // dY rows per tile
  static constexpr int kXRows = kRows + FH - 1;  // X window
  static constexpr int kXCols = kTW + FW - 1;
  static constexpr int kXElems = kXRows * kXCols * kPitch<T>;
};

// 8 shared addresses, one per column mod 8, of a lane's channel in a slot row whose column 0 is input column x0.
template <class T>
__device__ __forceinline__ void column_addresses(uint32_t (&a)[8], const T* row, int x0, int c, int lane) {
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(row + lane));
#pragma unroll
  for (int m = 0; m < 8; ++m) a[m] = base + sizeof(T) * (m * kPitch<T> + span::shift<T>(x0 + m, c));
}

// One element at a shared address, as FP32.
template <class T>
__device__ __forceinline__ float lds(uint32_t addr) {
  if constexpr (std::is_same_v<T, __half>) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
    return __half2float(__ushort_as_half(v));
  } else {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr));
    return v;
  }
}

// Blocks per SM in the bounds: a register budget of 128 per thread up to 49 taps; the larger filters' sums take
// more, for half the warps.
template <int FH, int FW, int kWarps>
constexpr int kMinBlocks = (FH * FW <= 49 ? 16 : 8) / kWarps;

template <class T, int FH, int FW, int kTh, int kTW, int kWarps>
__global__ void __launch_bounds__(kLanes* kWarps, kMinBlocks<FH, FW, kWarps>) bfc_span_kernel(const SpanArgs<T> a) {
  using S = SpanTile<T, FH, FW, kTh, kTW, kWarps>;
  constexpr int kThreads = S::kThreads;
  constexpr int kP = kPitch<T>;
  extern __shared__ __align__(16) unsigned char smem_bytes_[];
  T* xs = reinterpret_cast<T*>(smem_bytes_);
  T* ds = xs + S::kXElems;
  const int slice = blockIdx.x % a.slices, chunk = blockIdx.x / a.slices;
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int c0 = slice * kLanes;
  const int per_img = a.tiles_h * a.tiles_w, tiles = a.n * per_img;  // under 2^31 (make_plan)
  const int t_begin = static_cast<int>(int64_t(tiles) * chunk / a.z);
  const int t_end = static_cast<int>(int64_t(tiles) * (chunk + 1) / a.z);
  float acc[FH][FW];
#pragma unroll
  for (int i = 0; i < FH; ++i)
#pragma unroll
    for (int j = 0; j < FW; ++j) acc[i][j] = 0.f;
  // Tiles start at multiples of kTW (8 or 16) columns, so a column's shift is the same in every tile: the addresses
  // are the tile loop's constants.
  uint32_t xa[8], da[8];
  column_addresses(xa, xs + warp * kTh * S::kXCols * kP, -a.pl, a.c, lane);
  column_addresses(da, ds + warp * kTh * kTW * kP, 0, a.c, lane);
  // The tile's image and position, stepped from the chunk's first tile (no division per tile).
  int n = t_begin / per_img, tile_r = t_begin % per_img / a.tiles_w, tile_c = t_begin % a.tiles_w;
  for (int t = t_begin; t < t_end; ++t) {
    const int oh0 = tile_r * S::kRows, ow0 = tile_c * kTW;
    __syncthreads();  // the previous tile's reads are done
    span::stage<T, kLanes, S::kXCols>(xs, a.x, a.x_elems, n, a.ih, a.iw, a.c, oh0 - a.pt, ow0 - a.pl, S::kXRows, c0,
                                      threadIdx.x, kThreads);
    span::stage<T, kLanes, kTW>(ds, a.dy, a.dy_elems, n, a.oh, a.ow, a.c, oh0, ow0, S::kRows, c0, threadIdx.x,
                                kThreads);
    cuda::cp_async_commit();
    cuda::cp_async_wait<0>();
    __syncthreads();
    float ring[kTh][FW];  // dY column k - j of row t in slot (k - j) % FW
#pragma unroll
    for (int k = 0; k < S::kXCols; ++k) {
      float xv[kTh + FH - 1];
#pragma unroll
      for (int r = 0; r < kTh + FH - 1; ++r) xv[r] = lds<T>(xa[k % 8] + sizeof(T) * (r * S::kXCols + k / 8 * 8) * kP);
      if (k < kTW) {
#pragma unroll
        for (int r = 0; r < kTh; ++r) ring[r][k % FW] = lds<T>(da[k % 8] + sizeof(T) * (r * kTW + k / 8 * 8) * kP);
      }
#pragma unroll
      for (int r = 0; r < kTh; ++r)
#pragma unroll
        for (int j = 0; j < FW; ++j)
          if (k - j >= 0 && k - j < kTW) {
#pragma unroll
            for (int i = 0; i < FH; ++i) acc[i][j] = fmaf(xv[r + i], ring[r][(k - j) % FW], acc[i][j]);
          }
    }
    if (++tile_c == a.tiles_w) {
      tile_c = 0;
      if (++tile_r == a.tiles_h) tile_r = 0, ++n;
    }
  }
  // Block sums: shared-memory adds across the warps, then one global add per (tap, channel).
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem_bytes_);
  for (int e = threadIdx.x; e < FH * FW * kLanes; e += kThreads) red[e] = 0.f;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < FH; ++i)
#pragma unroll
    for (int j = 0; j < FW; ++j) atomicAdd(&red[(i * FW + j) * kLanes + lane], acc[i][j]);
  __syncthreads();
  for (int e = threadIdx.x; e < FH * FW * kLanes; e += kThreads) {
    const int tap = e / kLanes, c = c0 + e % kLanes;
    if (c < a.c) atomicAdd(a.dw + int64_t(tap) * a.c + c, red[e]);
  }
}

template <class T>
using KernelFn = void (*)(SpanArgs<T>);

template <class T, int FH, int FW>
KernelFn<T> kernel_for_filter(int warps, int tw) {
  constexpr int kTh = kRowsPerWarp;
  if (warps == 4) return tw == 8 ? &bfc_span_kernel<T, FH, FW, kTh, 8, 4> : &bfc_span_kernel<T, FH, FW, kTh, 16, 4>;
  return tw == 8 ? &bfc_span_kernel<T, FH, FW, kTh, 8, 8> : &bfc_span_kernel<T, FH, FW, kTh, 16, 8>;
}

// The filters instantiated: (FH, FW).
constexpr std::pair<int, int> kSpanFilters[] = {{3, 3}, {5, 5}, {7, 7}, {9, 9}, {13, 5}, {5, 13}};

// The kernel for an entry of kSpanFilters (another filter: null; bfc_span_supports checks first).
template <class T, size_t... I>
KernelFn<T> kernel_for(int fh, int fw, int warps, int tw, std::index_sequence<I...>) {
  KernelFn<T> k = nullptr;
  ((fh == kSpanFilters[I].first && fw == kSpanFilters[I].second
        ? (k = kernel_for_filter<T, kSpanFilters[I].first, kSpanFilters[I].second>(warps, tw))
        : nullptr),
   ...);
  return k;
}
template <class T>
KernelFn<T> kernel_for(int fh, int fw, int warps, int tw) {
  return kernel_for<T>(fh, fw, warps, tw, std::make_index_sequence<std::size(kSpanFilters)>{});
}

// The block tile: two dY rows per warp, 8 warps on maps taller than 8 rows, else 4 (8 rows: a map of 8 rows is one
// tile, and each warp's X rows serve two dY rows); 16 columns on maps wider than 8, else 8.
template <class T>
struct SpanPlan {
  int warps = 8, tw = 8, smem = 0, blocks_per_sm = 1;
  SpanArgs<T> args{};  // without pointers
  KernelFn<T> kernel = nullptr;
  int rows() const { return warps * kRowsPerWarp; }
  int64_t blocks() const { return int64_t(args.slices) * args.z; }
};

template <class T>
int smem_bytes(int fh, int fw, int rows, int tw) {
  return ((rows + fh - 1) * (tw + fw - 1) + rows * tw) * kPitch<T> * int(sizeof(T));
}

template <class T>
SpanPlan<T> make_plan(const DwconvParams& p) {
  SpanPlan<T> s;
  s.warps = p.oh() > 8 ? 8 : 4;
  s.tw = p.ow() > 8 ? 16 : 8;
  s.kernel = kernel_for<T>(p.fh, p.fw, s.warps, s.tw);
  CNN_CHECK(s.kernel != nullptr, "dwconv bfc_span: no kernel for a ", p.fh, "x", p.fw, " filter");
  s.smem = smem_bytes<T>(p.fh, p.fw, s.rows(), s.tw);
  SpanArgs<T>& a = s.args;
  a.x_elems = p.x_elems(), a.dy_elems = p.y_elems();
  a.n = p.n, a.ih = p.ih, a.iw = p.iw, a.c = p.c, a.oh = p.oh(), a.ow = p.ow(), a.pt = p.pad_top, a.pl = p.pad_left;
  a.tiles_h = (a.oh + s.rows() - 1) / s.rows();
  a.tiles_w = (a.ow + s.tw - 1) / s.tw;
  a.slices = (p.c + kLanes - 1) / kLanes;
  CNN_CUDA_CHECK(cudaFuncSetAttribute(s.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, s.smem));
  s.blocks_per_sm = resident_blocks_per_sm(s.kernel, kLanes * s.warps, s.smem);
  // One wave of blocks: each slice's tiles in as many balanced chunks as its share of the resident blocks.
  const int64_t tiles = int64_t(p.n) * a.tiles_h * a.tiles_w, slots = int64_t(current_device_sms()) * s.blocks_per_sm;
  a.z = static_cast<int>(std::clamp<int64_t>(slots / a.slices, 1, tiles));
  CNN_CHECK(s.blocks() < (int64_t(1) << 31) && tiles < (int64_t(1) << 31), "dwconv bfc_span: grid too large for ",
            p.str());
  return s;
}

template <class T>
const SpanPlan<T>& cached_plan(const DwconvParams& p) {
  static PlanCache<DeviceShapeKey, SpanPlan<T>> cache;
  return cache.get(device_shape_key(p), [&] { return make_plan<T>(p); });
}

template <class T>
void launch_span(const T* x, const T* dy, float* dw, const DwconvParams& p, const char* name, cudaStream_t stream) {
  p.validate(name);
  check_pointers(name, x, "x", dy, "dy", dw, "dw");
  CNN_CHECK(bfc_span_supports(p, alignment_of({x, dy}), sizeof(T)), name, ": expected stride 1, a 3x3, 5x5, 7x7, ",
            "9x9, 13x5 or 5x13 filter, map rows of whole 16-byte chunks (W * C % ", 16 / sizeof(T),
            " == 0) and 16-byte aligned x and dy, got ", p.str());
  const SpanPlan<T>& s = cached_plan<T>(p);
  CNN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<size_t>(p.w_elems()) * sizeof(float), stream));
  if (s.blocks() == 0 || p.x_elems() == 0) return;
  SpanArgs<T> a = s.args;
  a.x = x, a.dy = dy, a.dw = dw;
  s.kernel<<<static_cast<unsigned>(s.blocks()), kLanes * s.warps, s.smem, stream>>>(a);
  CNN_CHECK_LAUNCH("bfc_span_kernel");
}

}  // namespace

bool bfc_span_supports(const DwconvParams& p, int align, int elem_bytes) {
  const bool filter =
      std::find(std::begin(kSpanFilters), std::end(kSpanFilters), std::pair{p.fh, p.fw}) != std::end(kSpanFilters);
  return p.stride_h == 1 && p.stride_w == 1 && filter && span::supports(align, p.iw, p.c, elem_bytes) &&
         span::supports(align, p.ow(), p.c, elem_bytes) && int64_t(p.ih) * p.iw * p.c < (int64_t(1) << 31) &&
         int64_t(p.oh()) * p.ow() * p.c < (int64_t(1) << 31);
}

std::string dwconv_bfc_span_path_name(const DwconvParams& p, bool f16) {
  const auto name = [&](const auto& s) {
    return str_cat("bfc ", f16 ? "f16" : "f32", " span (fp32 accumulation) F=", p.fh, "x", p.fw, " tile=", s.rows(),
                   "x", s.tw, " slices=", s.args.slices, "x32ch Z=", s.args.z, " blocks=", s.blocks(), "x", s.warps,
                   "w (", s.blocks_per_sm, "/SM)");
  };
  return f16 ? name(cached_plan<__half>(p)) : name(cached_plan<float>(p));
}

void launch_dwconv_bfc_span(const float* x, const float* dy, float* dw, const DwconvParams& p, cudaStream_t stream) {
  launch_span(x, dy, dw, p, "launch_dwconv_bfc_span", stream);
}

void launch_dwconv_bfc_span_f16(const __half* x, const __half* dy, float* dw, const DwconvParams& p,
                                cudaStream_t stream) {
  launch_span(x, dy, dw, p, "launch_dwconv_bfc_span_f16", stream);
}

}  // namespace cnn::dwconv

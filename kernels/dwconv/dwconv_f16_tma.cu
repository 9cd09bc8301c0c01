// FP16 depthwise forward (and stride-1 backward-data on the flipped filter) for narrow filters (FW <= 5) on CUDA
// cores, fed by the Tensor Memory Accelerator. NHWC, stride 1, C % 8 == 0, 16-byte aligned tensors, sm_90.
//
// Persistent blocks walk tiles of 16 output rows x 8 columns x 64 channels. Thread 0 asks the TMA for a tile's input
// window, (16 + FH - 1) x (8 + FW - 1) positions x 64 channels, kStages - 1 tiles ahead into a ring of shared-memory
// stages; an mbarrier per stage says when its bytes have landed. Thread = 8 channels x the 8 outputs of one tile row.
// The filter of the block's channel slice sits in shared memory as FP32 (rotated for backward-data), the bias in
// registers. Why (docs/perf/dwconv-fp16-h200.md): the register kernel spends ~206 instructions per 8-channel output at
// 3x3 (72 of them FFMA) on bounds checks, 64-bit addresses and per-row filter loads and conversions, and holds only
// its own loads in flight (DRAM 56%, L2 74% busy re-serving the 3.75 requests per input); the cp.async pipeline of
// the seventh session removed the latter and added instructions (0.85x). Here the copy is one instruction per tile,
// padding is the TMA's zero fill of out-of-bounds boxes (negative coordinates included), and a thread's inner loop is
// shared-memory loads, conversions and FMAs only.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cuda/ptx>
#endif

#include "core/cuda_check.h"
#include "kernels/common/half8.cuh"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;
constexpr int kLanes = 8;     // 8 lanes x 8 halves: 64 channels, one 128-byte box row
constexpr int kBN = kLanes * 8;
constexpr int kRows = 16;     // output rows per tile, one per 8-lane group
constexpr int kTM = 8;        // output columns per tile and thread
constexpr int kStages = 3;    // tiles in flight per block: the one computed and two prefetched
constexpr size_t kMaxSmem = 200 * 1024;  // per block: stages + filter + barriers (an SM has 227 KB)

struct TmaArgs {
  const __half* __restrict__ w;     // (FH, FW, C)
  const __half* __restrict__ bias;  // (C) or null
  __half* __restrict__ dst;         // (N, out_h, out_w, C)
  int n, c, out_h, out_w, fh, pad_t, pad_l, flip;
  int tiles_h, tiles_w, tiles;  // tiles = channel slices x N x tiles_h x tiles_w
  int stage_bytes;
};

size_t stage_bytes(int fh, int fw) { return size_t(kRows + fh - 1) * (kTM + fw - 1) * kBN * sizeof(__half); }
size_t filter_bytes(int fh, int fw) { return size_t(fh) * fw * kBN * sizeof(float); }
// [stage][window rows][window columns][64 channels] (each stage a multiple of 128 bytes), the FP32 filter
// [tap][64 channels], then one mbarrier per stage.
size_t smem_bytes(int fh, int fw) {
  return kStages * stage_bytes(fh, fw) + filter_bytes(fh, fw) + kStages * sizeof(uint64_t);
}

// Tile t -> (channel slice, image, tile row, tile column), columns fastest and the channel slice slowest, so a
// persistent block reloads its filter only when its tiles cross into the next slice.
struct Tile {
  int c0, n, oh0, ow0;
};
__device__ __forceinline__ Tile tile_at(const TmaArgs& a, int t) {
  Tile p;
  p.ow0 = (t % a.tiles_w) * kTM;
  t /= a.tiles_w;
  p.oh0 = (t % a.tiles_h) * kRows;
  t /= a.tiles_h;
  p.n = t % a.n;
  p.c0 = (t / a.n) * kBN;
  return p;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace ptx = ::cuda::ptx;

// One tile row of one lane from a landed stage: acc[u] = sum over the window of inputs x filter, + bias, stored.
template <int kFW>
__device__ __forceinline__ void compute_row(const TmaArgs& a, const unsigned char* stage, const float* wsm,
                                            const float (&b)[8], const Tile& p) {
  constexpr int kCols = kTM + kFW - 1;
  const int cq = threadIdx.x % kLanes, r = threadIdx.x / kLanes;
  const int oh = p.oh0 + r, ch = p.c0 + 8 * cq;
  if (oh >= a.out_h || ch >= a.c) return;
  float acc[kTM][8];
#pragma unroll
  for (int u = 0; u < kTM; ++u)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[u][e] = b[e];
  const uint4* win = reinterpret_cast<const uint4*>(stage) + r * kCols * kLanes + cq;
  const float4* w4 = reinterpret_cast<const float4*>(wsm) + 2 * cq;
  for (int i = 0; i < a.fh; ++i) {
    float wf[kFW][8];
#pragma unroll
    for (int j = 0; j < kFW; ++j) {
      const float4 lo = w4[(i * kFW + j) * (kBN / 4)], hi = w4[(i * kFW + j) * (kBN / 4) + 1];
      wf[j][0] = lo.x, wf[j][1] = lo.y, wf[j][2] = lo.z, wf[j][3] = lo.w;
      wf[j][4] = hi.x, wf[j][5] = hi.y, wf[j][6] = hi.z, wf[j][7] = hi.w;
    }
    const uint4* in = win + i * kCols * kLanes;
#pragma unroll
    for (int q = 0; q < kCols; ++q) {
      float x[8];
      cuda::widen8(in[q * kLanes], x);
#pragma unroll
      for (int j = 0; j < kFW; ++j) {
        const int u = q - j;
        if (u >= 0 && u < kTM) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[u][e] = fmaf(x[e], wf[j][e], acc[u][e]);
        }
      }
    }
  }
  __half* out = a.dst + ((static_cast<long long>(p.n) * a.out_h + oh) * a.out_w + p.ow0) * a.c + ch;
#pragma unroll
  for (int u = 0; u < kTM; ++u) {
    if (p.ow0 + u >= a.out_w) break;
    *reinterpret_cast<uint4*>(out + static_cast<long long>(u) * a.c) = cuda::narrow8(acc[u]);
  }
}

// The block's channel slice of the filter as FP32 in shared memory ([tap][64 channels], rotated by 180 degrees for
// backward-data; zeros past C), and this thread's 8 bias values.
template <int kFW>
__device__ __forceinline__ void load_slice(const TmaArgs& a, int c0, float* wsm, float (&b)[8]) {
  for (int idx = threadIdx.x; idx < a.fh * kFW * kBN; idx += kThreads) {
    const int k = idx % kBN, tap = idx / kBN, i = tap / kFW, j = tap % kFW;
    const int si = a.flip ? a.fh - 1 - i : i, sj = a.flip ? kFW - 1 - j : j;
    wsm[idx] = c0 + k < a.c ? __half2float(a.w[(static_cast<long long>(si) * kFW + sj) * a.c + c0 + k]) : 0.f;
  }
  const int ch = c0 + 8 * (threadIdx.x % kLanes);
#pragma unroll
  for (int e = 0; e < 8; ++e) b[e] = a.bias != nullptr && ch + e < a.c ? __half2float(a.bias[ch + e]) : 0.f;
}
#endif

template <int kFW>
__global__ void __launch_bounds__(kThreads, 3) dwconv_tma_cc_f16_kernel(const __grid_constant__ CUtensorMap src,
                                                                        const TmaArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  float* wsm = reinterpret_cast<float*>(smem + kStages * a.stage_bytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(wsm + a.fh * kFW * kBN);  // 8-byte aligned: 256 bytes per tap
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);
  const int my_tiles = first < a.tiles ? (a.tiles - first - 1) / step + 1 : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full[s], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  // Thread 0: the k-th tile of this block into stage k % kStages (its previous use ended at a block barrier).
  const auto issue = [&](int k) {
    const Tile p = tile_at(a, first + k * step);
    const int s = k % kStages;
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s],
                                   static_cast<uint32_t>(a.stage_bytes));
    const int32_t coords[4] = {p.c0, p.ow0 - a.pad_l, p.oh0 - a.pad_t, p.n};
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + s * a.stage_bytes, &src, coords,
                              &full[s]);
  };
  if (threadIdx.x == 0)
    for (int k = 0; k < kStages - 1 && k < my_tiles; ++k) issue(k);
  int slice = -1;
  float b[8];
  for (int k = 0; k < my_tiles; ++k) {
    if (threadIdx.x == 0 && k + kStages - 1 < my_tiles) issue(k + kStages - 1);
    const Tile p = tile_at(a, first + k * step);
    if (p.c0 != slice) {  // the same for the whole block; nobody reads wsm past the last iteration's barrier
      load_slice<kFW>(a, p.c0, wsm, b);
      slice = p.c0;
      __syncthreads();
    }
    const int s = k % kStages;
    while (!ptx::mbarrier_try_wait_parity(&full[s], static_cast<uint32_t>((k / kStages) & 1))) {
    }
    compute_row<kFW>(a, smem + s * a.stage_bytes, wsm, b, p);
    __syncthreads();  // stage s is free for the tile issued next iteration
  }
#endif
}

using TmaKernel = void (*)(const CUtensorMap, const TmaArgs);

TmaKernel kernel_for(int fw) {
  switch (fw) {
    case 1: return dwconv_tma_cc_f16_kernel<1>;
    case 2: return dwconv_tma_cc_f16_kernel<2>;
    case 3: return dwconv_tma_cc_f16_kernel<3>;
    case 4: return dwconv_tma_cc_f16_kernel<4>;
    default: return dwconv_tma_cc_f16_kernel<5>;
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    CNN_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status));
    CNN_CHECK(status == cudaDriverEntryPointSuccess && p != nullptr,
              "dwconv tma f16: the CUDA driver does not provide cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// The source as a 4-D tensor (C, W, H, N) with a box of one tile's input window; out-of-bounds elements read as 0.
CUtensorMap source_map(const __half* src, const ConvGeometry& g) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {cuuint64_t(g.c), cuuint64_t(g.in_w), cuuint64_t(g.in_h), cuuint64_t(g.n)};
  const cuuint64_t row = cuuint64_t(g.c) * sizeof(__half);
  const cuuint64_t strides[3] = {row, row * g.in_w, row * g.in_w * g.in_h};
  const cuuint32_t box[4] = {kBN, cuuint32_t(kTM + g.fw - 1), cuuint32_t(kRows + g.fh - 1), 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  const CUresult r = encode_tiled()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, const_cast<__half*>(src), dims, strides,
                                    box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CNN_CHECK(r == CUDA_SUCCESS, "dwconv tma f16: cuTensorMapEncodeTiled failed (CUresult ", int(r), ") for N=", g.n,
            " H=", g.in_h, " W=", g.in_w, " C=", g.c, " F=", g.fh, "x", g.fw);
  return m;
}

// Resident blocks per SM of the kernel for (fw, fh) on the current device, measured once (the runtime's occupancy
// query, after raising the kernel's dynamic shared-memory limit).
int blocks_per_sm(int fw, int fh, int device) {
  static std::mutex mu;
  static std::map<std::tuple<int, int, int>, int> cache;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(fw, fh, device);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const TmaKernel k = kernel_for(fw);
  const size_t smem = smem_bytes(fh, fw);
  CNN_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int blocks = 0;
  CNN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, kThreads, smem));
  CNN_CHECK(blocks >= 1, "dwconv tma f16: no block of ", smem, " bytes of shared memory fits an SM (F=", fh, "x", fw,
            ")");
  cache.emplace(key, blocks);
  return blocks;
}

}  // namespace

bool tma_cc_f16_supports(const ConvGeometry& g) {
  if (g.stride_h != 1 || g.stride_w != 1 || g.c % 8 != 0 || g.fw < 1 || g.fw > kCcMaxFw) return false;
  if (smem_bytes(g.fh, g.fw) > kMaxSmem) return false;
  int device = 0, major = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

std::string tma_cc_f16_describe(const ConvGeometry& g) {
  return str_cat(g.flip ? "bdc" : "fwd", " f16 cuda-core tma FW=", g.fw, " tile=", kRows, "x", kTM, " BN=", kBN,
                 " stages=", kStages);
}

void launch_dwconv_tma_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, cudaStream_t stream) {
  CNN_CHECK(tma_cc_f16_supports(g), "dwconv tma f16: needs sm_90, stride 1, C % 8 == 0, FW <= ", kCcMaxFw,
            " and a window within ", kMaxSmem, " bytes of shared memory, got C=", g.c, " F=", g.fh, "x", g.fw,
            " stride ", g.stride_h, "x", g.stride_w);
  TmaArgs a{w, bias, dst, g.n, g.c, g.out_h, g.out_w, g.fh, g.pad_t, g.pad_l, g.flip ? 1 : 0, 0, 0, 0, 0};
  a.tiles_h = (g.out_h + kRows - 1) / kRows;
  a.tiles_w = (g.out_w + kTM - 1) / kTM;
  const long long tiles = static_cast<long long>((g.c + kBN - 1) / kBN) * g.n * a.tiles_h * a.tiles_w;
  CNN_CHECK(tiles < (1LL << 31), "dwconv tma f16: ", tiles, " tiles do not fit an int");
  a.tiles = static_cast<int>(tiles);
  a.stage_bytes = static_cast<int>(stage_bytes(g.fh, g.fw));
  int device = 0, sms = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int grid = static_cast<int>(std::min<long long>(tiles, 1LL * sms * blocks_per_sm(g.fw, g.fh, device)));
  const CUtensorMap map = source_map(src, g);
  kernel_for(g.fw)<<<grid, kThreads, smem_bytes(g.fh, g.fw), stream>>>(map, a);
  CNN_CHECK_LAUNCH("dwconv_tma_cc_f16_kernel");
}

}  // namespace cnn::dwconv

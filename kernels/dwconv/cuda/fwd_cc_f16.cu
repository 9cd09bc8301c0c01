// CUDA-core FP16 depthwise kernels (FP16 data, FP32 accumulation, FP16 outputs rounded once): a register-tiled
// kernel for narrow filters (FW <= 5, stride 1), and the shared direct kernels (direct.cuh) on groups of 8
// or 1 halves for every stride, padding, C and alignment. NHWC maps, (FH, FW, C) filter. Reference:
// dwconv_forward_reference / dwconv_backward_data_reference.
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/common/half8.cuh"
#include "kernels/dwconv/cuda/direct.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

using cuda::narrow8;
using cuda::widen8;

// kWidth FP16 channels, summed in FP32: 16-byte loads and stores for 8, scalar for 1.
template <int kWidth>
struct HalfGroup : direct::GroupSums<kWidth> {
  static_assert(kWidth == 1 || kWidth == 8, "FP16 groups are 8 halves or 1");
  using Elem = __half;
  static constexpr int kVec = kWidth;
  __device__ void load(const __half* p) {
    if constexpr (kVec == 8)
      widen8(__ldg(reinterpret_cast<const uint4*>(p)), this->v);
    else
      this->v[0] = __half2float(p[0]);
  }
  __device__ void store(__half* p) const {
    if constexpr (kVec == 8)
      *reinterpret_cast<uint4*>(p) = narrow8(this->v);
    else
      p[0] = __float2half_rn(this->v[0]);
  }
};

// ---- Register-tiled CUDA-core kernel for FW <= 5 ------------------------------------------------------------
// Block: 128 threads, 64 channels (8 lanes x 8 halves = one 128-byte segment per position); lane l owns channels
// 8*(l%8) .. +7 and 8 consecutive outputs of one output row (spatial slot l/8), as the FP32 GEMV kernel does with
// float4. Each input is loaded and widened once per filter row and feeds the <= FW outputs that use it.
constexpr int kCcThreads = 128;
constexpr int kCcBN = 64;
constexpr int kCcTM = 8;

struct CcArgs {
  const __half* __restrict__ src;
  const __half* __restrict__ w;
  const __half* __restrict__ bias;
  __half* __restrict__ dst;
  int n, in_h, in_w, c, out_h, out_w, fh, pad_t, pad_l, flip;
  int groups_per_row, tile_h, tile_w, tiles_h, tiles_w;
};

__device__ __forceinline__ uint4 load_row8(const __half* row, int col, int in_w, int c) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (static_cast<unsigned>(col) < static_cast<unsigned>(in_w))
    v = __ldg(reinterpret_cast<const uint4*>(row + col * c));
  return v;
}

template <int kFW>
__global__ void __launch_bounds__(kCcThreads) dwconv_cc_f16_kernel(const CcArgs a) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cq = lane & 7, sp = lane >> 3;
  const int rows_per_warp = 4 / a.groups_per_row;
  int bx = blockIdx.x;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int ch = blockIdx.y * kCcBN + 8 * cq;
  const int oh_t = th * a.tile_h + warp * rows_per_warp + sp / a.groups_per_row;
  const int ow_t = tw * a.tile_w + kCcTM * (sp % a.groups_per_row);
  if (oh_t >= a.out_h || ow_t >= a.out_w || ch >= a.c) return;  // no shared memory, no barriers: safe to leave

  float acc[kCcTM][8];
#pragma unroll
  for (int t = 0; t < kCcTM; ++t)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[t][e] = 0.f;

  const int col0 = ow_t - a.pad_l;
  const int i_lo = max(0, a.pad_t - oh_t), i_hi = min(a.fh, a.pad_t + a.in_h - oh_t);  // rows inside the source
  for (int i = i_lo; i < i_hi; ++i) {
    const __half* row = a.src + ((static_cast<long long>(n) * a.in_h + oh_t + i - a.pad_t) * a.in_w) * a.c + ch;
    const int wi = a.flip ? a.fh - 1 - i : i;
    float wf[kFW][8];
#pragma unroll
    for (int j = 0; j < kFW; ++j) {
      const int wj = a.flip ? kFW - 1 - j : j;
      widen8(__ldg(reinterpret_cast<const uint4*>(a.w + (static_cast<long long>(wi) * kFW + wj) * a.c + ch)), wf[j]);
    }
    // FW >= 4: all of the row's input loads first, then the FMAs. With 12 warps per SM each thread must keep its
    // own loads in flight, which beats loading each input where it is used at 5x5; at 3x3 (fewer FMAs per load to
    // cover) the interleaved order is faster.
    constexpr bool kLoadsFirst = kFW >= 4;
    uint4 raw[kCcTM + kFW - 1];
    if constexpr (kLoadsFirst) {
#pragma unroll
      for (int q = 0; q < kCcTM + kFW - 1; ++q) raw[q] = load_row8(row, col0 + q, a.in_w, a.c);
    }
#pragma unroll
    for (int q = 0; q < kCcTM + kFW - 1; ++q) {
      if constexpr (!kLoadsFirst) raw[q] = load_row8(row, col0 + q, a.in_w, a.c);
      float xf[8];
      widen8(raw[q], xf);
#pragma unroll
      for (int j = 0; j < kFW; ++j) {
        const int t = q - j;
        if (t >= 0 && t < kCcTM) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[t][e] = fmaf(xf[e], wf[j][e], acc[t][e]);
        }
      }
    }
  }

  float b[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  if (a.bias) widen8(__ldg(reinterpret_cast<const uint4*>(a.bias + ch)), b);
  __half* out = a.dst + ((static_cast<long long>(n) * a.out_h + oh_t) * a.out_w + ow_t) * a.c + ch;
#pragma unroll
  for (int t = 0; t < kCcTM; ++t) {
    if (ow_t + t >= a.out_w) break;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[t][e] += b[e];
    *reinterpret_cast<uint4*>(out + static_cast<long long>(t) * a.c) = narrow8(acc[t]);
  }
}

}  // namespace

void launch_dwconv_direct_f16_forward(const __half* src, const __half* w, const __half* bias, __half* dst,
                                      const ConvGeometry& g, bool vec8, cudaStream_t stream) {
  if (vec8)
    direct::launch_forward<HalfGroup<8>>(src, w, bias, dst, g, stream);
  else
    direct::launch_forward<HalfGroup<1>>(src, w, bias, dst, g, stream);
}

void launch_dwconv_direct_f16_backward_data(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                                            bool vec8, cudaStream_t stream) {
  if (vec8)
    direct::launch_backward_data<HalfGroup<8>>(dy, w, dx, p, stream);
  else
    direct::launch_backward_data<HalfGroup<1>>(dy, w, dx, p, stream);
}

void launch_dwconv_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int groups, cudaStream_t stream) {
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && g.c % 8 == 0 && g.fw >= 1 && g.fw <= kCcMaxFw,
            "dwconv cc f16: needs stride 1, C % 8 == 0 and FW <= ", kCcMaxFw, ", got C=", g.c, " FW=", g.fw,
            " stride ", g.stride_h, "x", g.stride_w);
  CNN_CHECK(groups == 1 || groups == 2 || groups == 4, "dwconv cc f16: groups per row must be 1, 2 or 4, got ", groups);
  CcArgs a{src, w, bias, dst, g.n, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.fh, g.pad_t, g.pad_l, g.flip ? 1 : 0,
           0, 0, 0, 0, 0};
  a.groups_per_row = groups;
  a.tile_h = 16 / a.groups_per_row;
  a.tile_w = kCcTM * a.groups_per_row;
  a.tiles_h = (g.out_h + a.tile_h - 1) / a.tile_h;
  a.tiles_w = (g.out_w + a.tile_w - 1) / a.tile_w;
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (g.c + kCcBN - 1) / kCcBN;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv cc f16: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks), channel_blocks);
  switch (g.fw) {
    case 1: dwconv_cc_f16_kernel<1><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 2: dwconv_cc_f16_kernel<2><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 3: dwconv_cc_f16_kernel<3><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 4: dwconv_cc_f16_kernel<4><<<grid, kCcThreads, 0, stream>>>(a); break;
    default: dwconv_cc_f16_kernel<5><<<grid, kCcThreads, 0, stream>>>(a); break;
  }
  CNN_CHECK_LAUNCH("dwconv_cc_f16_kernel");
}

}  // namespace cnn::dwconv

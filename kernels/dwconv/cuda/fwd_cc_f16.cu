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
// Block: 128 threads, 64 channels. Each lane owns kVec channels (8: one 16-byte load, 4: one 8-byte load for
// C % 8 == 4, SLaK's 124) and 8 consecutive outputs of one output row, as the FP32 GEMV kernel does with float4: a
// warp covers 32 / (64 / kVec) spatial slots. Each input is loaded and widened once per filter row and feeds the
// <= FW outputs that use it.
constexpr int kCcThreads = 128;
constexpr int kCcBN = 64;
constexpr int kCcTM = 8;

template <int kVec>
constexpr int cc_slots_per_warp() {
  return 32 / (kCcBN / kVec);
}

struct CcArgs {
  const __half* __restrict__ src;
  const __half* __restrict__ w;
  const __half* __restrict__ bias;
  __half* __restrict__ dst;
  int n, in_h, in_w, c, out_h, out_w, fh, pad_t, pad_l, flip;
  int groups_per_row, tile_h, tile_w, tiles_h, tiles_w;
};

// kVec halves as 32-bit words: a uint4 for 8, a uint2 for 4.
template <int kVec>
struct HalfWords {
  unsigned w[kVec / 2];
  __device__ __forceinline__ void load(const __half* p) {
    if constexpr (kVec == 8) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
      w[0] = v.x, w[1] = v.y;
    }
  }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) w[k] = 0u;
  }
  __device__ __forceinline__ void store(__half* p) const {
    if constexpr (kVec == 8)
      *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    else
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  }
};

template <int kVec>
__device__ __forceinline__ HalfWords<kVec> load_row(const __half* row, int col, int in_w, int c) {
  HalfWords<kVec> v;
  v.zero();
  if (static_cast<unsigned>(col) < static_cast<unsigned>(in_w)) v.load(row + col * c);
  return v;
}

template <int kFW, int kVec>
__global__ void __launch_bounds__(kCcThreads) dwconv_cc_f16_kernel(const CcArgs a) {
  constexpr int kLanesPerSlot = kCcBN / kVec;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cq = lane % kLanesPerSlot, sp = lane / kLanesPerSlot;
  const int rows_per_warp = cc_slots_per_warp<kVec>() / a.groups_per_row;
  int bx = blockIdx.x;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int ch = blockIdx.y * kCcBN + kVec * cq;
  const int oh_t = th * a.tile_h + warp * rows_per_warp + sp / a.groups_per_row;
  const int ow_t = tw * a.tile_w + kCcTM * (sp % a.groups_per_row);
  if (oh_t >= a.out_h || ow_t >= a.out_w || ch >= a.c) return;  // no shared memory, no barriers: safe to leave

  float acc[kCcTM][kVec];
#pragma unroll
  for (int t = 0; t < kCcTM; ++t)
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[t][e] = 0.f;

  const int col0 = ow_t - a.pad_l;
  const int i_lo = max(0, a.pad_t - oh_t), i_hi = min(a.fh, a.pad_t + a.in_h - oh_t);  // rows inside the source
  for (int i = i_lo; i < i_hi; ++i) {
    const __half* row = a.src + ((static_cast<long long>(n) * a.in_h + oh_t + i - a.pad_t) * a.in_w) * a.c + ch;
    const int wi = a.flip ? a.fh - 1 - i : i;
    float wf[kFW][kVec];
#pragma unroll
    for (int j = 0; j < kFW; ++j) {
      const int wj = a.flip ? kFW - 1 - j : j;
      HalfWords<kVec> wv;
      wv.load(a.w + (static_cast<long long>(wi) * kFW + wj) * a.c + ch);
      cuda::widen_halves(wv.w, wf[j]);
    }
    // FW >= 4: all of the row's input loads first, then the FMAs. With 12 warps per SM each thread must keep its
    // own loads in flight, which beats loading each input where it is used at 5x5; at 3x3 (fewer FMAs per load to
    // cover) the interleaved order is faster.
    constexpr bool kLoadsFirst = kFW >= 4;
    HalfWords<kVec> raw[kCcTM + kFW - 1];
    if constexpr (kLoadsFirst) {
#pragma unroll
      for (int q = 0; q < kCcTM + kFW - 1; ++q) raw[q] = load_row<kVec>(row, col0 + q, a.in_w, a.c);
    }
#pragma unroll
    for (int q = 0; q < kCcTM + kFW - 1; ++q) {
      if constexpr (!kLoadsFirst) raw[q] = load_row<kVec>(row, col0 + q, a.in_w, a.c);
      float xf[kVec];
      cuda::widen_halves(raw[q].w, xf);
#pragma unroll
      for (int j = 0; j < kFW; ++j) {
        const int t = q - j;
        if (t >= 0 && t < kCcTM) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[t][e] = fmaf(xf[e], wf[j][e], acc[t][e]);
        }
      }
    }
  }

  float b[kVec] = {};
  if (a.bias) {
    HalfWords<kVec> bv;
    bv.load(a.bias + ch);
    cuda::widen_halves(bv.w, b);
  }
  __half* out = a.dst + ((static_cast<long long>(n) * a.out_h + oh_t) * a.out_w + ow_t) * a.c + ch;
#pragma unroll
  for (int t = 0; t < kCcTM; ++t) {
    if (ow_t + t >= a.out_w) break;
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[t][e] += b[e];
    HalfWords<kVec> o;
    cuda::narrow_halves(acc[t], o.w);
    o.store(out + static_cast<long long>(t) * a.c);
  }
}

template <int kVec>
void launch_cc(const CcArgs& a, int fw, dim3 grid, cudaStream_t stream) {
  switch (fw) {
    case 1: dwconv_cc_f16_kernel<1, kVec><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 2: dwconv_cc_f16_kernel<2, kVec><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 3: dwconv_cc_f16_kernel<3, kVec><<<grid, kCcThreads, 0, stream>>>(a); break;
    case 4: dwconv_cc_f16_kernel<4, kVec><<<grid, kCcThreads, 0, stream>>>(a); break;
    default: dwconv_cc_f16_kernel<5, kVec><<<grid, kCcThreads, 0, stream>>>(a); break;
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

int cc_f16_lane_halves(int c) { return c % 8 == 0 ? 8 : c % 4 == 0 ? 4 : 0; }

int cc_f16_max_groups(int c) { return cc_f16_lane_halves(c) == 4 ? cc_slots_per_warp<4>() : cc_slots_per_warp<8>(); }

void launch_dwconv_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int groups, cudaStream_t stream) {
  const int vec = cc_f16_lane_halves(g.c);
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && vec != 0 && g.fw >= 1 && g.fw <= kCcMaxFw,
            "dwconv cc f16: needs stride 1, C % 4 == 0 and FW <= ", kCcMaxFw, ", got C=", g.c, " FW=", g.fw,
            " stride ", g.stride_h, "x", g.stride_w);
  const int max_groups = cc_f16_max_groups(g.c);
  CNN_CHECK(groups == 1 || groups == 2 || (groups == 4 && max_groups == 4), "dwconv cc f16: groups per row must be 1",
            max_groups == 4 ? ", 2 or 4" : " or 2", " at C=", g.c, ", got ", groups);
  CcArgs a{src, w, bias, dst, g.n, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.fh, g.pad_t, g.pad_l, g.flip ? 1 : 0,
           0, 0, 0, 0, 0};
  a.groups_per_row = groups;
  a.tile_h = 4 * max_groups / a.groups_per_row;  // 4 warps, each max_groups / groups rows
  a.tile_w = kCcTM * a.groups_per_row;
  a.tiles_h = (g.out_h + a.tile_h - 1) / a.tile_h;
  a.tiles_w = (g.out_w + a.tile_w - 1) / a.tile_w;
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (g.c + kCcBN - 1) / kCcBN;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv cc f16: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks), channel_blocks);
  if (vec == 8)
    launch_cc<8>(a, g.fw, grid, stream);
  else
    launch_cc<4>(a, g.fw, grid, stream);
  CNN_CHECK_LAUNCH("dwconv_cc_f16_kernel");
}

}  // namespace cnn::dwconv

// FP32 depthwise forward (and stride-1 backward-data on the flipped filter) for filters up to 3x3 on CUDA cores,
// sliding down the output rows. NHWC maps, (FH, FW, C) filter, stride 1, 4 channels per thread (one float4):
// C % 4 == 0 and 16-byte aligned tensors.
//
// Why (docs/dwconv-fp32.md): the GEMV kernel reloads a thread's TM + FW - 1 inputs for every filter row, which
// keeps it well below the copy rate at 3x3. Here a thread owns 4 channels x kTM output columns and walks down kRows output
// rows of a tile: each input row is loaded once per thread (kTM + FW - 1 loads) and feeds the up to FH output rows
// whose windows contain it, held as FH accumulator slots in registers (slot = row % FH, a compile-time index once
// the row loop is unrolled by FH). An output row is stored when its last input row has been added. The next input
// row's loads are issued before the current row's FMAs.
//
// Scope (select.cpp): FP32 filters up to 3x3, where it beats the GEMV kernel; at 5x5 the GEMV and TMA kernels win,
// and on FP16 data the FP16 kernels do.
#include <utility>

#include "core/cuda_check.h"
#include "kernels/common/float4_fma.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;
constexpr int kTM = 4;          // output columns per thread
constexpr int kRows = 16;       // output rows per tile (vertical halo (kRows + FH - 1) / kRows)
constexpr int kMaxLanesC = 32;  // threads of a block along channels: 128 channels, 512 contiguous bytes

struct VsArgs {
  const float* __restrict__ src;
  const float* __restrict__ w;
  const float* __restrict__ bias;
  float* __restrict__ dst;
  int in_h, in_w, c, out_h, out_w, pad_t, pad_l, flip;
  int groups, lanes_c, strips;  // channel groups of 4; threads along channels and column strips per block
  int tiles_h, tiles_w;         // tiles of kRows x (strips * kTM) outputs
};

__device__ __forceinline__ float4 load4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }

using cnn::cuda::fma4;

// Input row ih, columns col0 .. col0 + kIn - 1 of the thread's channels; zeros outside the image (padding).
template <int kIn>
__device__ __forceinline__ void load_row(float4 (&raw)[kIn], const VsArgs& a, const float* img, int ih, int col0) {
  const bool row_ok = static_cast<unsigned>(ih) < static_cast<unsigned>(a.in_h);
#pragma unroll
  for (int t = 0; t < kIn; ++t) {
    const int iw = col0 + t;
    raw[t] = row_ok && static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w)
                 ? load4(img + (static_cast<long long>(ih) * a.in_w + iw) * a.c)
                 : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// ptxas (sm_90, at most 168 registers for 3 blocks of 128 threads per SM): 3x3 153 registers, no spills.
template <int kFH, int kFW>
__global__ void __launch_bounds__(kThreads, 3) dwconv_vslide_kernel(const VsArgs a) {
  constexpr int kIn = kTM + kFW - 1;
  const int t = static_cast<int>(threadIdx.x);
  const int cg_local = t % a.lanes_c, strip = t / a.lanes_c;
  int bx = static_cast<int>(blockIdx.x);
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int cg = static_cast<int>(blockIdx.y) * a.lanes_c + cg_local;
  const int o0 = th * kRows, ow0 = (tw * a.strips + strip) * kTM;

  // The block's filter slice in shared memory as [tap][lane] (a lane's 4 channels are one conflict-free 16-byte
  // load): FH x FW float4 registers per thread would push the kernel to ~180 registers.
  __shared__ float4 ws[kFH * kFW][kMaxLanesC];
  for (int job = t; job < kFH * kFW * a.lanes_c; job += kThreads) {
    const int tap = job / a.lanes_c, lane = job % a.lanes_c, g = static_cast<int>(blockIdx.y) * a.lanes_c + lane;
    const int i = tap / kFW, j = tap % kFW;
    const int wi = a.flip ? kFH - 1 - i : i, wj = a.flip ? kFW - 1 - j : j;
    ws[tap][lane] = g < a.groups ? load4(a.w + (wi * kFW + wj) * a.c + g * 4) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncthreads();
  if (strip >= a.strips || cg >= a.groups || ow0 >= a.out_w) return;  // no barrier after this point
  const int c = cg * 4;
  const int rows = min(kRows, a.out_h - o0);
  const float4 b = a.bias ? load4(a.bias + c) : make_float4(0.f, 0.f, 0.f, 0.f);

  float4 acc[kFH][kTM];
#pragma unroll
  for (int s = 0; s < kFH; ++s)
#pragma unroll
    for (int q = 0; q < kTM; ++q) acc[s][q] = make_float4(0.f, 0.f, 0.f, 0.f);

  const float* img = a.src + static_cast<long long>(n) * a.in_h * a.in_w * a.c + c;
  float* out = a.dst + static_cast<long long>(n) * a.out_h * a.out_w * a.c + c;
  const int ih0 = o0 - a.pad_t, col0 = ow0 - a.pad_l;
  const int k_end = rows + kFH - 1;  // input rows ih0 .. ih0 + k_end - 1 reach the tile's outputs
  float4 raw[kIn];
  load_row<kIn>(raw, a, img, ih0, col0);
  for (int kb = 0; kb < k_end; kb += kFH) {
#pragma unroll
    for (int kk = 0; kk < kFH; ++kk) {
      const int k = kb + kk;
      if (k >= k_end) break;  // uniform over the block
      float4 x[kIn];
#pragma unroll
      for (int u = 0; u < kIn; ++u) x[u] = raw[u];
      if (k + 1 < k_end) load_row<kIn>(raw, a, img, ih0 + k + 1, col0);
      // Input row k holds filter row i of output row q = k - i; its slot is q % FH = (kk - i) mod FH.
#pragma unroll
      for (int i = 0; i < kFH; ++i) {
        const int q = k - i;
        if (q < 0 || q >= rows) continue;  // uniform
        const int s = (kk - i + kFH) % kFH;
#pragma unroll
        for (int j = 0; j < kFW; ++j) {
          const float4 wv = ws[i * kFW + j][cg_local];
#pragma unroll
          for (int m = 0; m < kTM; ++m) fma4(acc[s][m], x[m + j], wv);
        }
      }
      // Output row k - (FH - 1) has all its filter rows now: store it (bias added) and reuse the slot.
      const int qd = k - (kFH - 1);
      if (qd >= 0 && qd < rows) {
        const int s = (kk + 1) % kFH;
        float* row = out + static_cast<long long>(o0 + qd) * a.out_w * a.c;
#pragma unroll
        for (int m = 0; m < kTM; ++m) {
          const float4 v = make_float4(acc[s][m].x + b.x, acc[s][m].y + b.y, acc[s][m].z + b.z, acc[s][m].w + b.w);
          acc[s][m] = make_float4(0.f, 0.f, 0.f, 0.f);
          if (ow0 + m < a.out_w) *reinterpret_cast<float4*>(row + static_cast<long long>(ow0 + m) * a.c) = v;
        }
      }
    }
  }
}

using KernelFn = void (*)(VsArgs);

template <int kFH, int... kFW>
KernelFn kernel_for_fw(int fw, std::integer_sequence<int, kFW...>) {
  KernelFn k = nullptr;
  ((fw == kFW + 1 ? (k = dwconv_vslide_kernel<kFH, kFW + 1>, 0) : 0), ...);
  return k;
}

template <int... kFH>
KernelFn kernel_for(int fh, int fw, std::integer_sequence<int, kFH...>) {
  KernelFn k = nullptr;
  ((fh == kFH + 1 ? (k = kernel_for_fw<kFH + 1>(fw, std::make_integer_sequence<int, kVslideMaxF>{}), 0) : 0), ...);
  return k;
}

}  // namespace

bool vslide_f32_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst) {
  return g.stride_h == 1 && g.stride_w == 1 && g.fh >= 1 && g.fh <= kVslideMaxF && g.fw >= 1 && g.fw <= kVslideMaxF &&
         g.c % 4 == 0 && aligned16(src) && aligned16(w) && aligned16(bias) && aligned16(dst);
}

void launch_dwconv_vslide_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              cudaStream_t stream) {
  CNN_CHECK(vslide_f32_supports(g, src, w, bias, dst), "dwconv vslide: needs stride 1, FH and FW in 1..", kVslideMaxF,
            ", C a multiple of 4 and 16-byte aligned tensors, got C=", g.c, " F=", g.fh, "x", g.fw, " stride ",
            g.stride_h, "x", g.stride_w);
  if (g.n == 0 || g.out_h == 0 || g.out_w == 0) return;
  VsArgs a{src, w, bias, dst, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.pad_t, g.pad_l, g.flip ? 1 : 0, 0, 0, 0, 0, 0};
  a.groups = g.c / 4;
  a.lanes_c = a.groups < kMaxLanesC ? a.groups : kMaxLanesC;
  a.strips = kThreads / a.lanes_c;
  a.tiles_h = (g.out_h + kRows - 1) / kRows;
  a.tiles_w = (g.out_w + a.strips * kTM - 1) / (a.strips * kTM);
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (a.groups + a.lanes_c - 1) / a.lanes_c;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv vslide: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  kernel_for(g.fh, g.fw, std::make_integer_sequence<int, kVslideMaxF>{})<<<
      dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(channel_blocks)), kThreads, 0, stream>>>(a);
  CNN_CHECK_LAUNCH("dwconv_vslide_kernel");
}

}  // namespace cnn::dwconv

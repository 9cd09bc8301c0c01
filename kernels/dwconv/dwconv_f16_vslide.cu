// FP16 depthwise forward (and stride-1 backward-data on the flipped filter) for filters up to 3x3 on CUDA cores,
// sliding down the output rows: FP16 data, FP32 accumulation, FP16 outputs rounded once. NHWC maps, (FH, FW, C)
// filter, stride 1, C % 4 == 0, 8-byte aligned pointers.
//
// Why (docs/dwconv-fp16.md): the register-tiled kernel (dwconv_f16_direct.cu) gives every output row its own FH
// input rows, so each input is requested FH x (8 + FW - 1) / 8 = 3.75 times at 3x3 and half of that misses L1;
// it moves 2.8 TB/s where cuDNN moves 3.4. Here a thread owns 4 channels x kTM output columns and walks down
// kRows output rows of a tile: each input row is loaded once per thread (kTM + FW - 1 8-byte loads) and feeds the
// up to FH output rows whose windows contain it, held as FH accumulator slots in registers (slot = row % FH, a
// compile-time index once the row loop is unrolled by FH). An output row is stored when its last input row has
// been added. The next input row's loads are issued before the current row's FMAs.
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;
constexpr int kCpt = 4;        // channels per thread: one 8-byte load of 4 halves
constexpr int kTM = 4;         // output columns per thread
constexpr int kRows = 16;      // output rows per tile (vertical halo (kRows + FH - 1) / kRows)
constexpr int kMaxLanesC = 32;  // threads of a block along channels: 128 channels, 256 contiguous bytes

struct VsArgs {
  const __half* __restrict__ src;
  const __half* __restrict__ w;
  const __half* __restrict__ bias;
  __half* __restrict__ dst;
  int in_h, in_w, c, out_h, out_w, pad_t, pad_l, flip;
  int groups, lanes_c, strips;    // channel groups of 4; threads along channels and column strips per block
  int tiles_h, tiles_w;           // tiles of kRows x (strips * kTM) outputs
};

__device__ __forceinline__ void widen4(uint2 u, float (&f)[kCpt]) {
  const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  f[0] = lo.x, f[1] = lo.y, f[2] = hi.x, f[3] = hi.y;
}

__device__ __forceinline__ uint2 narrow4(const float (&f)[kCpt]) {
  const __half2 lo = __floats2half2_rn(f[0], f[1]);
  const __half2 hi = __floats2half2_rn(f[2], f[3]);
  return make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
}

// Input row ih, columns col0 .. col0 + kIn - 1 of the thread's channels; zeros outside the image (padding).
template <int kIn>
__device__ __forceinline__ void load_row(uint2 (&raw)[kIn], const VsArgs& a, const __half* img, int ih, int col0) {
  const bool row_ok = static_cast<unsigned>(ih) < static_cast<unsigned>(a.in_h);
#pragma unroll
  for (int t = 0; t < kIn; ++t) {
    const int iw = col0 + t;
    raw[t] = row_ok && static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w)
                 ? __ldg(reinterpret_cast<const uint2*>(img + (static_cast<long long>(ih) * a.in_w + iw) * a.c))
                 : make_uint2(0u, 0u);
  }
}

template <int kFH, int kFW>
__global__ void __launch_bounds__(kThreads, 4) dwconv_vslide_f16_kernel(const VsArgs a) {
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
  if (strip >= a.strips || cg >= a.groups || ow0 >= a.out_w) return;  // no shared memory, no barriers
  const int c = cg * kCpt;
  const int rows = min(kRows, a.out_h - o0);

  float wf[kFH][kFW][kCpt];
#pragma unroll
  for (int i = 0; i < kFH; ++i)
#pragma unroll
    for (int j = 0; j < kFW; ++j) {
      const int wi = a.flip ? kFH - 1 - i : i, wj = a.flip ? kFW - 1 - j : j;
      widen4(__ldg(reinterpret_cast<const uint2*>(a.w + (wi * kFW + wj) * a.c + c)), wf[i][j]);
    }
  float b[kCpt] = {0.f, 0.f, 0.f, 0.f};
  if (a.bias) widen4(__ldg(reinterpret_cast<const uint2*>(a.bias + c)), b);

  float acc[kFH][kTM][kCpt];
#pragma unroll
  for (int s = 0; s < kFH; ++s)
#pragma unroll
    for (int q = 0; q < kTM; ++q)
#pragma unroll
      for (int e = 0; e < kCpt; ++e) acc[s][q][e] = 0.f;

  const __half* img = a.src + static_cast<long long>(n) * a.in_h * a.in_w * a.c + c;
  __half* out = a.dst + static_cast<long long>(n) * a.out_h * a.out_w * a.c + c;
  const int ih0 = o0 - a.pad_t, col0 = ow0 - a.pad_l;
  const int k_end = rows + kFH - 1;  // input rows ih0 .. ih0 + k_end - 1 reach the tile's outputs
  uint2 raw[kIn];
  load_row<kIn>(raw, a, img, ih0, col0);
  for (int kb = 0; kb < k_end; kb += kFH) {
#pragma unroll
    for (int kk = 0; kk < kFH; ++kk) {
      const int k = kb + kk;
      if (k >= k_end) break;  // uniform over the block
      float xf[kIn][kCpt];
#pragma unroll
      for (int u = 0; u < kIn; ++u) widen4(raw[u], xf[u]);
      if (k + 1 < k_end) load_row<kIn>(raw, a, img, ih0 + k + 1, col0);
      // Input row k holds filter row i of output row q = k - i; its slot is q % FH = (kk - i) mod FH.
#pragma unroll
      for (int i = 0; i < kFH; ++i) {
        const int q = k - i;
        if (q < 0 || q >= rows) continue;  // uniform
        const int s = (kk - i + kFH) % kFH;
#pragma unroll
        for (int j = 0; j < kFW; ++j)
#pragma unroll
          for (int m = 0; m < kTM; ++m)
#pragma unroll
            for (int e = 0; e < kCpt; ++e) acc[s][m][e] = fmaf(xf[m + j][e], wf[i][j][e], acc[s][m][e]);
      }
      // Output row k - (FH - 1) has all its filter rows now: store it (bias added, rounded once) and reuse the slot.
      const int qd = k - (kFH - 1);
      if (qd >= 0 && qd < rows) {
        const int s = (kk + 1) % kFH;
        __half* row = out + static_cast<long long>(o0 + qd) * a.out_w * a.c;
#pragma unroll
        for (int m = 0; m < kTM; ++m) {
          float v[kCpt];
#pragma unroll
          for (int e = 0; e < kCpt; ++e) {
            v[e] = acc[s][m][e] + b[e];
            acc[s][m][e] = 0.f;
          }
          if (ow0 + m < a.out_w) *reinterpret_cast<uint2*>(row + static_cast<long long>(ow0 + m) * a.c) = narrow4(v);
        }
      }
    }
  }
}

using KernelFn = void (*)(VsArgs);

template <int kFH>
KernelFn kernel_for_fw(int fw) {
  switch (fw) {
    case 1: return dwconv_vslide_f16_kernel<kFH, 1>;
    case 2: return dwconv_vslide_f16_kernel<kFH, 2>;
    default: return dwconv_vslide_f16_kernel<kFH, 3>;
  }
}

KernelFn kernel_for(int fh, int fw) {
  switch (fh) {
    case 1: return kernel_for_fw<1>(fw);
    case 2: return kernel_for_fw<2>(fw);
    default: return kernel_for_fw<3>(fw);
  }
}

bool aligned8(const void* p) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 8 == 0; }

}  // namespace

bool vslide_f16_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst) {
  return g.stride_h == 1 && g.stride_w == 1 && g.c % kCpt == 0 && g.fh >= 1 && g.fh <= kVslideMaxF && g.fw >= 1 &&
         g.fw <= kVslideMaxF && aligned8(src) && aligned8(w) && aligned8(bias) && aligned8(dst);
}

void launch_dwconv_vslide_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, cudaStream_t stream) {
  CNN_CHECK(vslide_f16_supports(g, src, w, bias, dst),
            "dwconv vslide f16: needs stride 1, C % 4 == 0, FH and FW in 1..", kVslideMaxF,
            " and 8-byte aligned tensors, got C=", g.c, " F=", g.fh, "x", g.fw, " stride ", g.stride_h, "x",
            g.stride_w);
  if (g.n == 0 || g.out_h == 0 || g.out_w == 0) return;
  VsArgs a{src, w, bias, dst, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.pad_t, g.pad_l, g.flip ? 1 : 0, 0, 0, 0, 0, 0};
  a.groups = g.c / kCpt;
  a.lanes_c = a.groups < kMaxLanesC ? a.groups : kMaxLanesC;
  a.strips = kThreads / a.lanes_c;
  a.tiles_h = (g.out_h + kRows - 1) / kRows;
  a.tiles_w = (g.out_w + a.strips * kTM - 1) / (a.strips * kTM);
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (a.groups + a.lanes_c - 1) / a.lanes_c;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv vslide f16: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  kernel_for(g.fh, g.fw)<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(channel_blocks)), kThreads, 0,
                          stream>>>(a);
  CNN_CHECK_LAUNCH("dwconv_vslide_f16_kernel");
}

}  // namespace cnn::dwconv

// Depthwise forward (and stride-1 backward-data on the flipped filter) for filters up to 5x5 on CUDA cores, sliding
// down the output rows; FP16 data (FP32 accumulation, outputs rounded once) or FP32. NHWC maps, (FH, FW, C) filter,
// stride 1; 4 channels per thread up to 3x3, 2 beyond, tensors aligned to one thread's channels.
//
// Why (docs/dwconv-fp16.md): the FP16 register-tiled kernel (dwconv_f16_direct.cu) gives every output row its own
// FH input rows, so each input is requested FH x (8 + FW - 1) / 8 = 3.75 times at 3x3 and half of that misses L1;
// it moves 2.8 TB/s where cuDNN moves 3.4 (the FP32 GEMV kernel: 72-77% of the copy rate at 3x3, 61-62% at 5x5).
// Here a thread owns kCpt channels x kTM output columns and walks down kRows output rows of a tile: each input row
// is loaded once per thread (kTM + FW - 1 loads) and feeds the up to FH output rows whose windows contain it, held
// as FH accumulator slots in registers (slot = row % FH, a compile-time index once the row loop is unrolled by
// FH). An output row is stored when its last input row has been added. The next input row's loads are issued
// before the current row's FMAs.
#include <cuda_fp16.h>

#include <cstdint>
#include <utility>

#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_cuda_internal.h"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 128;
constexpr int kTM = 4;         // output columns per thread
constexpr int kRows = 16;      // output rows per tile (vertical halo (kRows + FH - 1) / kRows)
constexpr int kMaxLanesC = 32;  // threads of a block along channels: 128 channels, 256 contiguous bytes

template <class T>
struct VsArgs {
  const T* __restrict__ src;
  const T* __restrict__ w;
  const T* __restrict__ bias;
  T* __restrict__ dst;
  int in_h, in_w, c, out_h, out_w, pad_t, pad_l, flip;
  int groups, lanes_c, strips;    // channel groups of 4; threads along channels and column strips per block
  int tiles_h, tiles_w;           // tiles of kRows x (strips * kTM) outputs
};

// The thread's kCpt channels of one position as loaded (Raw: one 4-16-byte load), widened to FP32 and written back
// once (FP16: rounded) for the store.
template <class T, int kCpt>
struct Pack;
template <>
struct Pack<__half, 4> {
  using Raw = uint2;
  __device__ static Raw zero() { return make_uint2(0u, 0u); }
  __device__ static void widen(Raw u, float (&f)[4]) {
    const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
    const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
    f[0] = lo.x, f[1] = lo.y, f[2] = hi.x, f[3] = hi.y;
  }
  __device__ static Raw narrow(const float (&f)[4]) {
    const __half2 lo = __floats2half2_rn(f[0], f[1]);
    const __half2 hi = __floats2half2_rn(f[2], f[3]);
    return make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
  }
};
template <>
struct Pack<__half, 2> {
  using Raw = unsigned;
  __device__ static Raw zero() { return 0u; }
  __device__ static void widen(Raw u, float (&f)[2]) {
    const float2 v = __half22float2(*reinterpret_cast<const __half2*>(&u));
    f[0] = v.x, f[1] = v.y;
  }
  __device__ static Raw narrow(const float (&f)[2]) {
    const __half2 h = __floats2half2_rn(f[0], f[1]);
    return *reinterpret_cast<const unsigned*>(&h);
  }
};
template <>
struct Pack<float, 4> {
  using Raw = float4;
  __device__ static Raw zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
  __device__ static void widen(Raw u, float (&f)[4]) { f[0] = u.x, f[1] = u.y, f[2] = u.z, f[3] = u.w; }
  __device__ static Raw narrow(const float (&f)[4]) { return make_float4(f[0], f[1], f[2], f[3]); }
};
template <>
struct Pack<float, 2> {
  using Raw = float2;
  __device__ static Raw zero() { return make_float2(0.f, 0.f); }
  __device__ static void widen(Raw u, float (&f)[2]) { f[0] = u.x, f[1] = u.y; }
  __device__ static Raw narrow(const float (&f)[2]) { return make_float2(f[0], f[1]); }
};

template <class T, int kCpt>
__device__ __forceinline__ typename Pack<T, kCpt>::Raw load_pack(const T* p) {
  return __ldg(reinterpret_cast<const typename Pack<T, kCpt>::Raw*>(p));
}

// Input row ih, columns col0 .. col0 + kIn - 1 of the thread's channels; zeros outside the image (padding).
template <class T, int kCpt, int kIn>
__device__ __forceinline__ void load_row(typename Pack<T, kCpt>::Raw (&raw)[kIn], const VsArgs<T>& a, const T* img,
                                         int ih, int col0) {
  const bool row_ok = static_cast<unsigned>(ih) < static_cast<unsigned>(a.in_h);
#pragma unroll
  for (int t = 0; t < kIn; ++t) {
    const int iw = col0 + t;
    raw[t] = row_ok && static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w)
                 ? load_pack<T, kCpt>(img + (static_cast<long long>(ih) * a.in_w + iw) * a.c)
                 : Pack<T, kCpt>::zero();
  }
}

template <class T, int kFH, int kFW, int kCpt>
__global__ void __launch_bounds__(kThreads, 3) dwconv_vslide_kernel(const VsArgs<T> a) {
  using P = Pack<T, kCpt>;
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

  // The block's filter slice, widened once, in shared memory as [tap][lane][kCpt] (a lane's kCpt floats are one
  // conflict-free 8-16-byte load): FH x FW x kCpt registers per thread would push the kernel to ~180 registers.
  __shared__ float ws[kFH * kFW][kMaxLanesC][kCpt];
  for (int job = t; job < kFH * kFW * a.lanes_c; job += kThreads) {
    const int tap = job / a.lanes_c, lane = job % a.lanes_c, g = static_cast<int>(blockIdx.y) * a.lanes_c + lane;
    const int i = tap / kFW, j = tap % kFW;
    const int wi = a.flip ? kFH - 1 - i : i, wj = a.flip ? kFW - 1 - j : j;
    float v[kCpt] = {};
    if (g < a.groups) P::widen(load_pack<T, kCpt>(a.w + (wi * kFW + wj) * a.c + g * kCpt), v);
#pragma unroll
    for (int e = 0; e < kCpt; ++e) ws[tap][lane][e] = v[e];
  }
  __syncthreads();
  if (strip >= a.strips || cg >= a.groups || ow0 >= a.out_w) return;  // no barrier after this point
  const int c = cg * kCpt;
  const int rows = min(kRows, a.out_h - o0);
  float b[kCpt] = {};
  if (a.bias) P::widen(load_pack<T, kCpt>(a.bias + c), b);

  float acc[kFH][kTM][kCpt];
#pragma unroll
  for (int s = 0; s < kFH; ++s)
#pragma unroll
    for (int q = 0; q < kTM; ++q)
#pragma unroll
      for (int e = 0; e < kCpt; ++e) acc[s][q][e] = 0.f;

  const T* img = a.src + static_cast<long long>(n) * a.in_h * a.in_w * a.c + c;
  T* out = a.dst + static_cast<long long>(n) * a.out_h * a.out_w * a.c + c;
  const int ih0 = o0 - a.pad_t, col0 = ow0 - a.pad_l;
  const int k_end = rows + kFH - 1;  // input rows ih0 .. ih0 + k_end - 1 reach the tile's outputs
  typename P::Raw raw[kIn];
  load_row<T, kCpt, kIn>(raw, a, img, ih0, col0);
  for (int kb = 0; kb < k_end; kb += kFH) {
#pragma unroll
    for (int kk = 0; kk < kFH; ++kk) {
      const int k = kb + kk;
      if (k >= k_end) break;  // uniform over the block
      float xf[kIn][kCpt];
#pragma unroll
      for (int u = 0; u < kIn; ++u) P::widen(raw[u], xf[u]);
      if (k + 1 < k_end) load_row<T, kCpt, kIn>(raw, a, img, ih0 + k + 1, col0);
      // Input row k holds filter row i of output row q = k - i; its slot is q % FH = (kk - i) mod FH.
#pragma unroll
      for (int i = 0; i < kFH; ++i) {
        const int q = k - i;
        if (q < 0 || q >= rows) continue;  // uniform
        const int s = (kk - i + kFH) % kFH;
#pragma unroll
        for (int j = 0; j < kFW; ++j) {
          float wv[kCpt];
#pragma unroll
          for (int e = 0; e < kCpt; ++e) wv[e] = ws[i * kFW + j][cg_local][e];
#pragma unroll
          for (int m = 0; m < kTM; ++m)
#pragma unroll
            for (int e = 0; e < kCpt; ++e) acc[s][m][e] = fmaf(xf[m + j][e], wv[e], acc[s][m][e]);
        }
      }
      // Output row k - (FH - 1) has all its filter rows now: store it (bias added, rounded once) and reuse the slot.
      const int qd = k - (kFH - 1);
      if (qd >= 0 && qd < rows) {
        const int s = (kk + 1) % kFH;
        T* row = out + static_cast<long long>(o0 + qd) * a.out_w * a.c;
#pragma unroll
        for (int m = 0; m < kTM; ++m) {
          float v[kCpt];
#pragma unroll
          for (int e = 0; e < kCpt; ++e) {
            v[e] = acc[s][m][e] + b[e];
            acc[s][m][e] = 0.f;
          }
          if (ow0 + m < a.out_w)
            *reinterpret_cast<typename P::Raw*>(row + static_cast<long long>(ow0 + m) * a.c) = P::narrow(v);
        }
      }
    }
  }
}

// Channels per thread: 4 up to 3x3, 2 beyond (FH x kTM x kCpt accumulators: 80 registers at 5x5 with 4 channels).
// ptxas (sm_90, at most 168 registers for 3 blocks of 128 threads per SM), no spills: FP16 3x3 141, 5x5 126 (4
// blocks/SM); FP32 3x3 154, 5x5 134.
constexpr int channels_per_thread(int fh, int fw) { return fh <= 3 && fw <= 3 ? 4 : 2; }

template <class T>
using KernelFn = void (*)(VsArgs<T>);

template <class T, int kFH, int... kFW>
KernelFn<T> kernel_for_fw(int fw, std::integer_sequence<int, kFW...>) {
  KernelFn<T> k = nullptr;
  ((fw == kFW + 1 ? (k = dwconv_vslide_kernel<T, kFH, kFW + 1, channels_per_thread(kFH, kFW + 1)>, 0) : 0), ...);
  return k;
}

template <class T, int... kFH>
KernelFn<T> kernel_for(int fh, int fw, std::integer_sequence<int, kFH...>) {
  KernelFn<T> k = nullptr;
  ((fh == kFH + 1 ? (k = kernel_for_fw<T, kFH + 1>(fw, std::make_integer_sequence<int, kVslideMaxF>{}), 0) : 0),
   ...);
  return k;
}

bool aligned(const void* p, int bytes) { return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

template <class T>
bool supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst) {
  if (g.stride_h != 1 || g.stride_w != 1 || g.fh < 1 || g.fh > kVslideMaxF || g.fw < 1 || g.fw > kVslideMaxF)
    return false;
  const int cpt = channels_per_thread(g.fh, g.fw), bytes = cpt * static_cast<int>(sizeof(T));
  return g.c % cpt == 0 && aligned(src, bytes) && aligned(w, bytes) && aligned(bias, bytes) && aligned(dst, bytes);
}

template <class T>
void launch(const T* src, const T* w, const T* bias, T* dst, const ConvGeometry& g, cudaStream_t stream) {
  CNN_CHECK(supports<T>(g, src, w, bias, dst), "dwconv vslide ", sizeof(T) == 2 ? "f16" : "f32",
            ": needs stride 1, FH and FW in 1..", kVslideMaxF,
            ", C a multiple of 4 (2 beyond 3x3) and tensors aligned to it, got C=", g.c, " F=", g.fh, "x", g.fw,
            " stride ", g.stride_h, "x", g.stride_w);
  if (g.n == 0 || g.out_h == 0 || g.out_w == 0) return;
  VsArgs<T> a{src, w, bias, dst, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.pad_t, g.pad_l, g.flip ? 1 : 0,
              0,   0, 0,    0,   0};
  a.groups = g.c / channels_per_thread(g.fh, g.fw);
  a.lanes_c = a.groups < kMaxLanesC ? a.groups : kMaxLanesC;
  a.strips = kThreads / a.lanes_c;
  a.tiles_h = (g.out_h + kRows - 1) / kRows;
  a.tiles_w = (g.out_w + a.strips * kTM - 1) / (a.strips * kTM);
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (a.groups + a.lanes_c - 1) / a.lanes_c;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv vslide: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  kernel_for<T>(g.fh, g.fw, std::make_integer_sequence<int, kVslideMaxF>{})<<<
      dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(channel_blocks)), kThreads, 0, stream>>>(a);
  CNN_CHECK_LAUNCH("dwconv_vslide_kernel");
}

}  // namespace

bool vslide_f16_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst) {
  return supports<__half>(g, src, w, bias, dst);
}
bool vslide_f32_supports(const ConvGeometry& g, const void* src, const void* w, const void* bias, const void* dst) {
  return supports<float>(g, src, w, bias, dst);
}

void launch_dwconv_vslide_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, cudaStream_t stream) {
  launch<__half>(src, w, bias, dst, g, stream);
}
void launch_dwconv_vslide_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              cudaStream_t stream) {
  launch<float>(src, w, bias, dst, g, stream);
}

}  // namespace cnn::dwconv

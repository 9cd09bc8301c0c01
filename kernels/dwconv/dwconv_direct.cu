// Direct depthwise kernels for the cases the GEMV kernel does not take: stride > 1, C % 4 != 0, unaligned pointers.
// One thread per destination element group (VEC channels), taps read through the read-only cache. FP32, NHWC.
// Correct for every stride/padding pair (flash-dwc.md sections 1 and 5.1); speed is secondary on these paths.
#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/dwconv/dwconv_cuda_internal.h"

namespace cnn::dwconv {
namespace {

constexpr int kThreads = 256;

template <int kVec>
struct VecOf;
template <>
struct VecOf<1> {
  using T = float;
  __device__ static T zero() { return 0.f; }
  __device__ static void fma(T& acc, T x, T w) { acc = fmaf(x, w, acc); }
};
template <>
struct VecOf<4> {
  using T = float4;
  __device__ static T zero() { return make_float4(0.f, 0.f, 0.f, 0.f); }
  __device__ static void fma(T& acc, T x, T w) {
    acc.x = fmaf(x.x, w.x, acc.x);
    acc.y = fmaf(x.y, w.y, acc.y);
    acc.z = fmaf(x.z, w.z, acc.z);
    acc.w = fmaf(x.w, w.w, acc.w);
  }
};

template <int kVec>
__device__ __forceinline__ typename VecOf<kVec>::T load(const float* p) {
  return __ldg(reinterpret_cast<const typename VecOf<kVec>::T*>(p));
}

__device__ __forceinline__ void add_bias(float& v, const float* b) { v += __ldg(b); }
__device__ __forceinline__ void add_bias(float4& v, const float* b) {
  const float4 bb = __ldg(reinterpret_cast<const float4*>(b));
  v.x += bb.x, v.y += bb.y, v.z += bb.z, v.w += bb.w;
}

// dst[n,oh,ow,c] = bias[c] + sum_{i,j} src[n, oh*sh + i - pt, ow*sw + j - pl, c] * W(i,j,c), W rotated if flip.
template <int kVec>
__global__ void __launch_bounds__(kThreads) dwconv_direct_forward_kernel(const float* __restrict__ src,
                                                                         const float* __restrict__ w,
                                                                         const float* __restrict__ bias,
                                                                         float* __restrict__ dst, ConvGeometry g) {
  const int groups = g.c / kVec;
  const long long total = static_cast<long long>(g.n) * g.out_h * g.out_w * groups;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % groups) * kVec;
    long long pos = e / groups;
    const int ow = static_cast<int>(pos % g.out_w);
    pos /= g.out_w;
    const int oh = static_cast<int>(pos % g.out_h);
    const int n = static_cast<int>(pos / g.out_h);
    auto acc = VecOf<kVec>::zero();
    for (int i = 0; i < g.fh; ++i) {
      const int r = oh * g.stride_h + i - g.pad_t;
      if (r < 0 || r >= g.in_h) continue;
      const int wi = g.flip ? g.fh - 1 - i : i;
      const float* src_row = src + ((static_cast<long long>(n) * g.in_h + r) * g.in_w) * g.c + c;
      for (int j = 0; j < g.fw; ++j) {
        const int col = ow * g.stride_w + j - g.pad_l;
        if (col < 0 || col >= g.in_w) continue;
        const int wj = g.flip ? g.fw - 1 - j : j;
        VecOf<kVec>::fma(acc, load<kVec>(src_row + static_cast<long long>(col) * g.c),
                         load<kVec>(w + (static_cast<long long>(wi) * g.fw + wj) * g.c + c));
      }
    }
    if (bias) add_bias(acc, bias + c);
    *reinterpret_cast<typename VecOf<kVec>::T*>(dst + e * kVec) = acc;
  }
}

// Strided backward-data as a gather: dx[n,h,w,c] = sum over taps (i,j) with (h+pT-i) % sH == 0 and
// (w+pL-j) % sW == 0 of dy[n, (h+pT-i)/sH, (w+pL-j)/sW, c] * W[i,j,c]; only those taps are visited.
template <int kVec>
__global__ void __launch_bounds__(kThreads) dwconv_direct_backward_data_kernel(const float* __restrict__ dy,
                                                                               const float* __restrict__ w,
                                                                               float* __restrict__ dx,
                                                                               DwconvParams p, int oh_n, int ow_n) {
  const int groups = p.c / kVec;
  const long long total = static_cast<long long>(p.n) * p.ih * p.iw * groups;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % groups) * kVec;
    long long pos = e / groups;
    const int x = static_cast<int>(pos % p.iw);
    pos /= p.iw;
    const int h = static_cast<int>(pos % p.ih);
    const int n = static_cast<int>(pos / p.ih);
    auto acc = VecOf<kVec>::zero();
    const int hp = h + p.pad_top, xp = x + p.pad_left;
    for (int i = hp % p.stride_h; i < p.fh && i <= hp; i += p.stride_h) {
      const int oh = (hp - i) / p.stride_h;
      if (oh >= oh_n) continue;
      const float* dy_row = dy + ((static_cast<long long>(n) * oh_n + oh) * ow_n) * p.c + c;
      for (int j = xp % p.stride_w; j < p.fw && j <= xp; j += p.stride_w) {
        const int ow = (xp - j) / p.stride_w;
        if (ow >= ow_n) continue;
        VecOf<kVec>::fma(acc, load<kVec>(dy_row + static_cast<long long>(ow) * p.c),
                         load<kVec>(w + (static_cast<long long>(i) * p.fw + j) * p.c + c));
      }
    }
    *reinterpret_cast<typename VecOf<kVec>::T*>(dx + e * kVec) = acc;
  }
}

unsigned grid_for(long long work) { return cnn::grid_for(work, kThreads, kDirectMaxBlocks); }

}  // namespace

void launch_dwconv_direct_forward(const float* src, const float* w, const float* bias, float* dst,
                                  const ConvGeometry& g, bool vec4, cudaStream_t stream) {
  const long long work = static_cast<long long>(g.n) * g.out_h * g.out_w * g.c / (vec4 ? 4 : 1);
  if (work == 0) return;
  if (vec4)
    dwconv_direct_forward_kernel<4><<<grid_for(work), kThreads, 0, stream>>>(src, w, bias, dst, g);
  else
    dwconv_direct_forward_kernel<1><<<grid_for(work), kThreads, 0, stream>>>(src, w, bias, dst, g);
  CNN_CHECK_LAUNCH("dwconv_direct_forward_kernel");
}

void launch_dwconv_direct_backward_data(const float* dy, const float* w, float* dx, const DwconvParams& p, bool vec4,
                                        cudaStream_t stream) {
  const long long work = p.x_elems() / (vec4 ? 4 : 1);
  if (work == 0) return;
  if (vec4)
    dwconv_direct_backward_data_kernel<4><<<grid_for(work), kThreads, 0, stream>>>(dy, w, dx, p, p.oh(), p.ow());
  else
    dwconv_direct_backward_data_kernel<1><<<grid_for(work), kThreads, 0, stream>>>(dy, w, dx, p, p.oh(), p.ow());
  CNN_CHECK_LAUNCH("dwconv_direct_backward_data_kernel");
}

}  // namespace cnn::dwconv

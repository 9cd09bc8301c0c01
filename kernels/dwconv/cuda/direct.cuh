// Internal: direct depthwise kernels for the cases the fast kernels do not take (stride > 1, C not a multiple of the
// vector width, unaligned pointers), shared by FP32 (direct.cu) and FP16 (fwd_cc_f16.cu). One thread
// per destination channel group, taps read through the read-only cache, FP32 accumulation. NHWC maps, (FH, FW, C)
// filter. Correct for every stride/padding pair (flash-dwc.md sections 1 and 5.1); speed is secondary here.
//
// G is a group of G::kVec consecutive channels of element type G::Elem: the FP32 sums of GroupSums plus
// load(const Elem*) (widened to FP32) and store(Elem*) (rounded once).
#pragma once
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv::direct {

constexpr int kThreads = 256;

// FP32 values of a group of N channels: what every element type's group accumulates in.
template <int N>
struct GroupSums {
  float v[N];
  __device__ void zero() {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = 0.f;
  }
  __device__ void fma(const GroupSums& x, const GroupSums& w) {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] = fmaf(x.v[e], w.v[e], v[e]);
  }
  __device__ void add(const GroupSums& b) {
#pragma unroll
    for (int e = 0; e < N; ++e) v[e] += b.v[e];
  }
};

// dst[n,oh,ow,c] = bias[c] + sum_{i,j} src[n, oh*sh + i - pt, ow*sw + j - pl, c] * W(i,j,c), W rotated if flip.
template <class G>
__global__ void __launch_bounds__(kThreads) forward_kernel(const typename G::Elem* __restrict__ src,
                                                           const typename G::Elem* __restrict__ w,
                                                           const typename G::Elem* __restrict__ bias,
                                                           typename G::Elem* __restrict__ dst, ConvGeometry g) {
  const int groups = g.c / G::kVec;
  const long long total = static_cast<long long>(g.n) * g.out_h * g.out_w * groups;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % groups) * G::kVec;
    long long pos = e / groups;
    const int ow = static_cast<int>(pos % g.out_w);
    pos /= g.out_w;
    const int oh = static_cast<int>(pos % g.out_h);
    const int n = static_cast<int>(pos / g.out_h);
    G acc, xv, wv;
    acc.zero();
    for (int i = 0; i < g.fh; ++i) {
      const int r = oh * g.stride_h + i - g.pad_t;
      if (r < 0 || r >= g.in_h) continue;
      const int wi = g.flip ? g.fh - 1 - i : i;
      const typename G::Elem* src_row = src + ((static_cast<long long>(n) * g.in_h + r) * g.in_w) * g.c + c;
      for (int j = 0; j < g.fw; ++j) {
        const int col = ow * g.stride_w + j - g.pad_l;
        if (col < 0 || col >= g.in_w) continue;
        const int wj = g.flip ? g.fw - 1 - j : j;
        xv.load(src_row + static_cast<long long>(col) * g.c);
        wv.load(w + (static_cast<long long>(wi) * g.fw + wj) * g.c + c);
        acc.fma(xv, wv);
      }
    }
    if (bias) {
      G b;
      b.load(bias + c);
      acc.add(b);
    }
    acc.store(dst + e * G::kVec);
  }
}

// Strided backward-data as a gather: dx[n,h,w,c] = sum over taps (i,j) with (h+pT-i) % sH == 0 and
// (w+pL-j) % sW == 0 of dy[n, (h+pT-i)/sH, (w+pL-j)/sW, c] * W[i,j,c]; only those taps are visited, and rows or
// columns no window covers get zero.
template <class G>
__global__ void __launch_bounds__(kThreads) backward_data_kernel(const typename G::Elem* __restrict__ dy,
                                                                 const typename G::Elem* __restrict__ w,
                                                                 typename G::Elem* __restrict__ dx, DwconvParams p,
                                                                 int oh_n, int ow_n) {
  const int groups = p.c / G::kVec;
  const long long total = static_cast<long long>(p.n) * p.ih * p.iw * groups;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(e % groups) * G::kVec;
    long long pos = e / groups;
    const int x = static_cast<int>(pos % p.iw);
    pos /= p.iw;
    const int h = static_cast<int>(pos % p.ih);
    const int n = static_cast<int>(pos / p.ih);
    G acc, dv, wv;
    acc.zero();
    const int hp = h + p.pad_top, xp = x + p.pad_left;
    for (int i = hp % p.stride_h; i < p.fh && i <= hp; i += p.stride_h) {
      const int oh = (hp - i) / p.stride_h;
      if (oh >= oh_n) continue;
      const typename G::Elem* dy_row = dy + ((static_cast<long long>(n) * oh_n + oh) * ow_n) * p.c + c;
      for (int j = xp % p.stride_w; j < p.fw && j <= xp; j += p.stride_w) {
        const int ow = (xp - j) / p.stride_w;
        if (ow >= ow_n) continue;
        dv.load(dy_row + static_cast<long long>(ow) * p.c);
        wv.load(w + (static_cast<long long>(i) * p.fw + j) * p.c + c);
        acc.fma(dv, wv);
      }
    }
    acc.store(dx + e * G::kVec);
  }
}

template <class G>
void launch_forward(const typename G::Elem* src, const typename G::Elem* w, const typename G::Elem* bias,
                    typename G::Elem* dst, const ConvGeometry& g, cudaStream_t stream) {
  const long long work = static_cast<long long>(g.n) * g.out_h * g.out_w * g.c / G::kVec;
  if (work == 0) return;
  forward_kernel<G><<<cnn::grid_for(work, kThreads, kDirectMaxBlocks), kThreads, 0, stream>>>(src, w, bias, dst, g);
  CNN_CHECK_LAUNCH("dwconv direct forward kernel");
}

template <class G>
void launch_backward_data(const typename G::Elem* dy, const typename G::Elem* w, typename G::Elem* dx,
                          const DwconvParams& p, cudaStream_t stream) {
  const long long work = p.x_elems() / G::kVec;
  if (work == 0) return;
  backward_data_kernel<G><<<cnn::grid_for(work, kThreads, kDirectMaxBlocks), kThreads, 0, stream>>>(dy, w, dx, p,
                                                                                                  p.oh(), p.ow());
  CNN_CHECK_LAUNCH("dwconv direct backward-data kernel");
}

}  // namespace cnn::dwconv::direct

// CUDA-core FP16 depthwise kernels (FP16 data, FP32 accumulation, FP16 outputs rounded once): a register-tiled
// kernel for narrow filters (FW <= 5, stride 1) and generic direct kernels for every stride, padding, C and
// alignment. NHWC maps, (FH, FW, C) filter. Reference: dwconv_forward_reference / dwconv_backward_data_reference.
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "kernels/dwconv/dwconv_f16_internal.h"

namespace cnn::dwconv {
namespace {

// 8 halves <-> 8 floats.
__device__ __forceinline__ void widen8(const uint4 v, float (&f)[8]) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&words[k]));
    f[2 * k] = p.x;
    f[2 * k + 1] = p.y;
  }
}

__device__ __forceinline__ uint4 narrow8(const float (&f)[8]) {
  unsigned words[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
    words[k] = *reinterpret_cast<const unsigned*>(&h);
  }
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// Channel group of kVec consecutive channels: load (widened), accumulate, store (narrowed).
template <int kVec>
struct Group {
  float v[kVec];
  __device__ void zero() {
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = 0.f;
  }
  __device__ void load(const __half* p) {
    if constexpr (kVec == 8) {
      widen8(__ldg(reinterpret_cast<const uint4*>(p)), v);
    } else {
      v[0] = __half2float(p[0]);
    }
  }
  __device__ void fma(const Group& x, const Group& w) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = fmaf(x.v[e], w.v[e], v[e]);
  }
  __device__ void add(const Group& b) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] += b.v[e];
  }
  __device__ void store(__half* p) const {
    if constexpr (kVec == 8) {
      *reinterpret_cast<uint4*>(p) = narrow8(v);
    } else {
      p[0] = __float2half_rn(v[0]);
    }
  }
};

constexpr int kDirectThreads = 256;

// dst[n,oh,ow,c] = bias[c] + sum_{i,j} src[n, oh*sh + i - pt, ow*sw + j - pl, c] * W(i,j,c), W rotated if flip.
template <int kVec>
__global__ void __launch_bounds__(kDirectThreads) dwconv_direct_f16_forward_kernel(const __half* __restrict__ src,
                                                                                   const __half* __restrict__ w,
                                                                                   const __half* __restrict__ bias,
                                                                                   __half* __restrict__ dst,
                                                                                   ConvGeometry g) {
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
    Group<kVec> acc, xv, wv;
    acc.zero();
    for (int i = 0; i < g.fh; ++i) {
      const int r = oh * g.stride_h + i - g.pad_t;
      if (r < 0 || r >= g.in_h) continue;
      const int wi = g.flip ? g.fh - 1 - i : i;
      const __half* src_row = src + ((static_cast<long long>(n) * g.in_h + r) * g.in_w) * g.c + c;
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
      Group<kVec> b;
      b.load(bias + c);
      acc.add(b);
    }
    acc.store(dst + e * kVec);
  }
}

// Strided backward-data as a gather over the taps with (h+pT-i) % sH == 0 and (w+pL-j) % sW == 0 (see the FP32
// twin in dwconv_direct.cu); rows/columns no window covers get zero.
template <int kVec>
__global__ void __launch_bounds__(kDirectThreads) dwconv_direct_f16_backward_data_kernel(
    const __half* __restrict__ dy, const __half* __restrict__ w, __half* __restrict__ dx, DwconvParams p, int oh_n,
    int ow_n) {
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
    Group<kVec> acc, dv, wv;
    acc.zero();
    const int hp = h + p.pad_top, xp = x + p.pad_left;
    for (int i = hp % p.stride_h; i < p.fh && i <= hp; i += p.stride_h) {
      const int oh = (hp - i) / p.stride_h;
      if (oh >= oh_n) continue;
      const __half* dy_row = dy + ((static_cast<long long>(n) * oh_n + oh) * ow_n) * p.c + c;
      for (int j = xp % p.stride_w; j < p.fw && j <= xp; j += p.stride_w) {
        const int ow = (xp - j) / p.stride_w;
        if (ow >= ow_n) continue;
        dv.load(dy_row + static_cast<long long>(ow) * p.c);
        wv.load(w + (static_cast<long long>(i) * p.fw + j) * p.c + c);
        acc.fma(dv, wv);
      }
    }
    acc.store(dx + e * kVec);
  }
}

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
    // own loads in flight: measured on the H200, 5x5 1.17-1.19x faster than loading each input where it is used;
    // 3x3 1-2% slower (fewer FMAs per load to cover), so it keeps the interleaved order.
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

unsigned direct_grid(long long work) { return cnn::grid_for(work, kDirectThreads, kDirectMaxBlocks); }

int cc_groups_per_row(int out_w) { return out_w >= 4 * kCcTM ? 4 : (out_w >= 2 * kCcTM ? 2 : 1); }

}  // namespace

void launch_dwconv_direct_f16_forward(const __half* src, const __half* w, const __half* bias, __half* dst,
                                      const ConvGeometry& g, bool vec8, cudaStream_t stream) {
  const long long work = static_cast<long long>(g.n) * g.out_h * g.out_w * g.c / (vec8 ? 8 : 1);
  if (work == 0) return;
  if (vec8)
    dwconv_direct_f16_forward_kernel<8><<<direct_grid(work), kDirectThreads, 0, stream>>>(src, w, bias, dst, g);
  else
    dwconv_direct_f16_forward_kernel<1><<<direct_grid(work), kDirectThreads, 0, stream>>>(src, w, bias, dst, g);
  CNN_CHECK_LAUNCH("dwconv_direct_f16_forward_kernel");
}

void launch_dwconv_direct_f16_backward_data(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                                            bool vec8, cudaStream_t stream) {
  const long long work = p.x_elems() / (vec8 ? 8 : 1);
  if (work == 0) return;
  if (vec8)
    dwconv_direct_f16_backward_data_kernel<8><<<direct_grid(work), kDirectThreads, 0, stream>>>(dy, w, dx, p, p.oh(),
                                                                                                p.ow());
  else
    dwconv_direct_f16_backward_data_kernel<1><<<direct_grid(work), kDirectThreads, 0, stream>>>(dy, w, dx, p, p.oh(),
                                                                                                p.ow());
  CNN_CHECK_LAUNCH("dwconv_direct_f16_backward_data_kernel");
}

void launch_dwconv_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          cudaStream_t stream) {
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && g.c % 8 == 0 && g.fw >= 1 && g.fw <= kCcMaxFw,
            "dwconv cc f16: needs stride 1, C % 8 == 0 and FW <= ", kCcMaxFw, ", got C=", g.c, " FW=", g.fw,
            " stride ", g.stride_h, "x", g.stride_w);
  CcArgs a{src, w, bias, dst, g.n, g.in_h, g.in_w, g.c, g.out_h, g.out_w, g.fh, g.pad_t, g.pad_l, g.flip ? 1 : 0,
           0, 0, 0, 0, 0};
  a.groups_per_row = cc_groups_per_row(g.out_w);
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

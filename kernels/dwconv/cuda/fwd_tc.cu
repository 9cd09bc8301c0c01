// Flash-DWC-T: FP16 depthwise convolution on tensor cores (flash-dwc.md section 4), FP32 accumulation, stride 1.
// Forward, and backward-data as the same kernel over dY with the filter rotated by 180 degrees while it is staged.
// NHWC maps, (FH, FW, C) filter, C % 8 == 0. Reference: dwconv_forward_reference / dwconv_backward_data_reference.
// Decisions and the shared-memory layout: docs/dwconv-fp16.md.
#include <cuda_fp16.h>

#include "core/cuda_check.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {
namespace {

constexpr int kBN = 64;            // channels per block: 8 lanes x 16 bytes = one 128-byte segment per position
constexpr int kThreads = 128;      // 4 warps, each owns 16 channels of the block (16 MMAs per GEMM half)
constexpr int kPitch = kBN + 8;    // halves per shared-memory entry (one position or filter tap): 144 bytes
constexpr int kPEntries = 23;      // compressed filter vector p = [0 x7, f0..f8, 0 x7]
constexpr int kFrag = 9;           // useful taps per fragment (width-9 fragments of a filter row)

// Geometry of kernel T<theta>: a (16/theta) x (8*theta) output tile = 16 GEMVs of 8 outputs. Input window of a
// tile row = theta+1 buffers of 8 positions; GEMV q of a row reads buffer q (k = 0..7) and q+1 (k = 8..15).
template <int kTheta>
struct TcShape {
  static constexpr int kHT = 16 / kTheta;
  static constexpr int kWT = 8 * kTheta;
  static constexpr int kBufs = kTheta + 1;
  // Entries between tile rows of a buffer and between buffers. Entry e starts at bank group (9e) % 8 = e % 8; the 8
  // lanes of one LDS.128 phase read rows g = 2p, 2p+1 at slots 2t (+1): they differ by one buffer (theta >= 2) or
  // one tile row (theta = 1), so that distance must be odd for the 8 entries to hit distinct bank groups.
  static constexpr int kPh = kTheta == 1 ? 9 : 8;
  static constexpr int kPb = kHT * kPh + 1;
  static constexpr int kXEntries = kBufs * kPb;
  static constexpr int kSmemBytes = (kXEntries + kPEntries) * kPitch * 2;
  static_assert(kXEntries >= 128, "the output tile (128 positions) is staged in the input buffers' space");
};

struct TcArgs {
  const __half* __restrict__ src;   // (N, in_h, in_w, C)
  const __half* __restrict__ w;     // (FH, FW, C)
  const __half* __restrict__ bias;  // (C) or null
  __half* __restrict__ dst;         // (N, out_h, out_w, C)
  int n, in_h, in_w, c, out_h, out_w, fh, fw, pad_t, pad_l, flip;
  int tiles_h, tiles_w, gamma;  // gamma = ceil(FW / 9) fragments per filter row
};

// Block-wide loads of one fragment. The window of tile row h at fragment f starts at input column
// ow0 - pad_l + 9f; window coordinate a = 9f + 8b + k (buffer b, position k) lives in physical buffer
// (b + f) % (theta+1) at slot a % 8. Moving to fragment f+1 therefore renames buffer b+1 to b (7 of its 8 values stay,
// the 8th slot receives the one new value) and turns the old buffer 0 into the new buffer theta: no copies.
template <int kTheta>
struct Stager {
  using S = TcShape<kTheta>;
  const TcArgs& a;
  __half* xs;
  const __half* src_n;  // image n
  int oh0, ow0, c0, tid;

  __device__ __forceinline__ void input(int i, int f, int b, int h, int k_abs, int ch8) const {
    const int ih = oh0 + h + i - a.pad_t;
    const int iw = ow0 - a.pad_l + k_abs;  // k_abs = 9f + 8b + k
    const int ch = c0 + 8 * ch8;
    const bool ok = static_cast<unsigned>(ih) < static_cast<unsigned>(a.in_h) &&
                    static_cast<unsigned>(iw) < static_cast<unsigned>(a.in_w) && ch < a.c;
    const __half* gp = ok ? src_n + (static_cast<long long>(ih) * a.in_w + iw) * a.c + ch : a.src;
    const int phys = (b + f) % S::kBufs;
    __half* sp = xs + ((phys * S::kPb + h * S::kPh + (k_abs & 7)) * kPitch + 8 * ch8);
    cuda::cp_async_ca16(sp, gp, ok);
  }
  // f == 0: buffers 0..theta-1 whole (1024 copies, 8 per thread).
  __device__ __forceinline__ void bulk(int i) const {
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      const int job = tid + kThreads * r;
      const int e = job >> 6;
      input(i, 0, e % kTheta, e / kTheta, 8 * (e % kTheta) + ((job >> 3) & 7), job & 7);
    }
  }
  // f > 0: the one new value of each buffer 0..theta-1 per tile row (128 copies, 1 per thread).
  __device__ __forceinline__ void new_values(int i, int f) const {
    const int e = tid >> 3, b = e % kTheta;
    input(i, f, b, e / kTheta, kFrag * f + 8 * b + 7, tid & 7);
  }
  // Buffer theta, 8 fresh positions per tile row (1024/theta copies).
  __device__ __forceinline__ void last_buffer(int i, int f) const {
#pragma unroll
    for (int r = 0; r < 8 / kTheta; ++r) {
      const int job = tid + kThreads * r;
      input(i, f, kTheta, job >> 6, kFrag * f + 8 * kTheta + ((job >> 3) & 7), job & 7);
    }
  }
  // Taps 9f .. 9f+8 of filter row i (rotated for backward-data) into p[7..15]; taps >= FW and channels >= C are
  // zero-filled, so a partial last fragment needs no special case.
  __device__ __forceinline__ void filter(__half* ps, int i, int f) const {
    if (tid >= kFrag * 8) return;
    const int u = tid >> 3, ch8 = tid & 7;
    const int j = kFrag * f + u, ch = c0 + 8 * ch8;
    const bool ok = j < a.fw && ch < a.c;
    const int wi = a.flip ? a.fh - 1 - i : i, wj = a.flip ? a.fw - 1 - j : j;
    const __half* gp = ok ? a.w + (static_cast<long long>(wi) * a.fw + wj) * a.c + ch : a.w;
    cuda::cp_async_cg16(ps + (7 + u) * kPitch + 8 * ch8, gp, ok);
  }
};

__device__ __forceinline__ uint4 lds128(const __half* p) { return *reinterpret_cast<const uint4*>(p); }

__device__ __forceinline__ unsigned word(const uint4& v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }

// One GEMM half for the warp's 16 channels: kHalf 0 = GEMM1 (k = 0..7: buffers q, filter p[0..14]), 1 = GEMM2
// (k = 8..15: buffers q+1, p[8..22]). Lane (g, t) needs, per channel, A rows g and g+8 at k = 2t, 2t+1 and
// B[k][g] = p[k + 7 - g] at the same k: six 128-bit loads give them for 8 channels, and byte permutes pair the two
// k values of each channel into one f16x2 register.
template <int kTheta, int kHalf>
__device__ __forceinline__ void gemm_half(float (&acc)[16][4], const __half* xs, const __half* ps, int f, int warp,
                                          int lane) {
  using S = TcShape<kTheta>;
  const int g = lane >> 2, t = lane & 3;
  const int r0 = g, r1 = g + 8;
  const int phys0 = (r0 % kTheta + kHalf + f) % S::kBufs, phys1 = (r1 % kTheta + kHalf + f) % S::kBufs;
  const int slot = (f + 2 * t) & 7;  // k = 2t within the half; k = 2t+1 is the next slot (mod 8)
  const int slot1 = (slot + 1) & 7;
  const int e00 = phys0 * S::kPb + (r0 / kTheta) * S::kPh, e10 = phys1 * S::kPb + (r1 / kTheta) * S::kPh;
  const int jp = 2 * t + 7 - g + 8 * kHalf;  // p index of B[k = 2t (+8)][g]
  const int cw = 16 * warp;
#pragma unroll
  for (int cg = 0; cg < 2; ++cg) {
    const int cc = cw + 8 * cg;
    const uint4 xa0 = lds128(xs + (e00 + slot) * kPitch + cc);
    const uint4 xa1 = lds128(xs + (e00 + slot1) * kPitch + cc);
    const uint4 xb0 = lds128(xs + (e10 + slot) * kPitch + cc);
    const uint4 xb1 = lds128(xs + (e10 + slot1) * kPitch + cc);
    const uint4 pa = lds128(ps + jp * kPitch + cc);
    const uint4 pb = lds128(ps + (jp + 1) * kPitch + cc);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const unsigned sel = (c & 1) ? 0x7632u : 0x5410u;  // high or low halves of the two words
      const unsigned a0 = __byte_perm(word(xa0, c >> 1), word(xa1, c >> 1), sel);
      const unsigned a1 = __byte_perm(word(xb0, c >> 1), word(xb1, c >> 1), sel);
      const unsigned b = __byte_perm(word(pa, c >> 1), word(pb, c >> 1), sel);
      cuda::mma_m16n8k8(acc[8 * cg + c], a0, a1, b);
    }
  }
}

// Accumulators (+ bias) -> FP16 tile in shared memory (position r*8 + t' of GEMV r, 64 channels) -> 128-byte rows.
template <int kTheta>
__device__ __forceinline__ void store_tile(const float (&acc)[16][4], __half* ys, const TcArgs& a, int n, int oh0,
                                           int ow0, int c0) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, cw = 16 * warp;
  float bias[16];
#pragma unroll
  for (int m = 0; m < 16; ++m) bias[m] = 0.f;
  if (a.bias) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (c0 + cw + 8 * h < a.c) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.bias + c0 + cw + 8 * h));
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const unsigned wv = word(v, k);
          const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&wv));
          bias[8 * h + 2 * k] = p.x;
          bias[8 * h + 2 * k + 1] = p.y;
        }
      }
    }
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int pos = (g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1);
    unsigned wv[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const __half2 h2 = __floats2half2_rn(acc[2 * m][e] + bias[2 * m], acc[2 * m + 1][e] + bias[2 * m + 1]);
      wv[m] = *reinterpret_cast<const unsigned*>(&h2);
    }
    *reinterpret_cast<uint4*>(ys + pos * kPitch + cw) = make_uint4(wv[0], wv[1], wv[2], wv[3]);
    *reinterpret_cast<uint4*>(ys + pos * kPitch + cw + 8) = make_uint4(wv[4], wv[5], wv[6], wv[7]);
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int job = tid + kThreads * r;
    const int ch8 = job & 7, pos = job >> 3, row = pos >> 3;
    const int oh = oh0 + row / kTheta, ow = ow0 + 8 * (row % kTheta) + (pos & 7), ch = c0 + 8 * ch8;
    if (oh < a.out_h && ow < a.out_w && ch < a.c) {
      const uint4 v = lds128(ys + pos * kPitch + 8 * ch8);
      __stcs(reinterpret_cast<uint4*>(a.dst + ((static_cast<long long>(n) * a.out_h + oh) * a.out_w + ow) * a.c + ch), v);
    }
  }
}

template <int kTheta>
__global__ void __launch_bounds__(kThreads) dwconv_tc_f16_kernel(const TcArgs a) {
  using S = TcShape<kTheta>;
  extern __shared__ uint4 smem_u4[];
  __half* const xs = reinterpret_cast<__half*>(smem_u4);  // [kXEntries][kPitch] input buffers
  __half* const ps = xs + S::kXEntries * kPitch;          // [23][kPitch] compressed filter vectors
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  int bx = blockIdx.x;
  const int tw = bx % a.tiles_w;
  bx /= a.tiles_w;
  const int th = bx % a.tiles_h;
  const int n = bx / a.tiles_h;
  const int oh0 = th * S::kHT, ow0 = tw * S::kWT, c0 = blockIdx.y * kBN;
  const Stager<kTheta> st{a, xs, a.src + static_cast<long long>(n) * a.in_h * a.in_w * a.c, oh0, ow0, c0, tid};

  // The 14 constant zeros of p (entries 0..6 and 16..22), written once; the first barrier below publishes them.
  for (int e = tid; e < 14 * 8; e += kThreads) {
    const int m = e >> 3;
    *reinterpret_cast<uint4*>(ps + (m < 7 ? m : m + 9) * kPitch + 8 * (e & 7)) = make_uint4(0u, 0u, 0u, 0u);
  }

  float acc[16][4];
#pragma unroll
  for (int c = 0; c < 16; ++c)
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[c][k] = 0.f;

  // Height trimming: only filter rows that reach a source row for some output row of this tile.
  const int oh_last = min(oh0 + S::kHT, a.out_h) - 1;
  const int i_lo = max(0, a.pad_t - oh_last), i_hi = min(a.fh, a.pad_t + a.in_h - oh0);
  for (int i = i_lo; i < i_hi; ++i) {
    for (int f = 0; f < a.gamma; ++f) {
      __syncthreads();  // every warp is done with GEMM2 of the previous fragment: its slots may be overwritten
      // Prefetch1: what GEMM1 needs beyond the reused values (filter fragment + buffers 0..theta-1).
      st.filter(ps, i, f);
      if (f == 0)
        st.bulk(i);
      else
        st.new_values(i, f);
      cuda::cp_async_commit();
      // Prefetch2: the fresh buffer theta, needed only by GEMM2; it lands while GEMM1 runs.
      st.last_buffer(i, f);
      cuda::cp_async_commit();
      cuda::cp_async_wait<1>();
      __syncthreads();
      gemm_half<kTheta, 0>(acc, xs, ps, f, warp, lane);
      cuda::cp_async_wait<0>();
      __syncthreads();
      gemm_half<kTheta, 1>(acc, xs, ps, f, warp, lane);
    }
  }
  __syncthreads();  // the input buffers become the output tile
  store_tile<kTheta>(acc, xs, a, n, oh0, ow0, c0);
}

}  // namespace

void launch_dwconv_tc_f16(const __half* src, const __half* w, const __half* bias, __half* dst, const ConvGeometry& g,
                          int theta, cudaStream_t stream) {
  CNN_CHECK(g.stride_h == 1 && g.stride_w == 1 && g.c % 8 == 0,
            "dwconv tc f16: needs stride 1 and C % 8 == 0, got C=", g.c, " stride ", g.stride_h, "x", g.stride_w);
  CNN_CHECK(theta == 1 || theta == 2 || theta == 4, "dwconv tc f16: theta must be 1, 2 or 4, got ", theta);
  const int ht = 16 / theta, wt = 8 * theta;
  TcArgs a{src,     w,        bias,    dst,  g.n,      g.in_h,  g.in_w, g.c, g.out_h, g.out_w, g.fh, g.fw, g.pad_t,
           g.pad_l, g.flip ? 1 : 0, (g.out_h + ht - 1) / ht, (g.out_w + wt - 1) / wt, (g.fw + kFrag - 1) / kFrag};
  const long long blocks = static_cast<long long>(g.n) * a.tiles_h * a.tiles_w;
  const int channel_blocks = (g.c + kBN - 1) / kBN;
  CNN_CHECK(blocks < (1LL << 31) && channel_blocks <= 65535, "dwconv tc f16: grid too large for ", blocks, " x ",
            channel_blocks, " blocks");
  const dim3 grid(static_cast<unsigned>(blocks), channel_blocks);
  switch (theta) {
    case 4:
      dwconv_tc_f16_kernel<4><<<grid, kThreads, TcShape<4>::kSmemBytes, stream>>>(a);
      break;
    case 2:
      dwconv_tc_f16_kernel<2><<<grid, kThreads, TcShape<2>::kSmemBytes, stream>>>(a);
      break;
    default:
      dwconv_tc_f16_kernel<1><<<grid, kThreads, TcShape<1>::kSmemBytes, stream>>>(a);
      break;
  }
  CNN_CHECK_LAUNCH("dwconv_tc_f16_kernel");
}

}  // namespace cnn::dwconv

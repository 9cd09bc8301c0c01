// Internal to kernels/norm/*_cuda.cu: what LayerNorm and BatchNorm share on the GPU. Fixed row chunks (the split
// depends only on the shape, so the per-channel sums are reproducible), the column partial kernel that sums over a
// chunk (Welford statistics, or the gradient sums of dgamma / dbeta), the ordered combine of the chunks' partials,
// the workspace layout and the argument checks.
#pragma once

#include <algorithm>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/common/chunk_combine.cuh"
#include "kernels/norm/norm_cuda.h"
#include "kernels/norm/welford.h"

namespace cnn::kernels::norm_detail {

constexpr int kColThreads = 128;       // channels per block of the column-sum kernels
constexpr int64_t kMinChunkRows = 64;  // rows per partial at least (amortises the partial write)
constexpr int64_t kMaxChunks = 1024;   // partials per channel at most (grid.y limit and combine cost)
// LayerNorm's backward blocks take chunks of at least this many rows (4 per group of its kernel): the per-channel
// partial a block writes then costs 8 bytes per channel against >= 192 bytes per channel of f16 dy, x and dx, while
// rows / 32 blocks still fill the GPU at SLaK's and ConvNeXt's late stages (16384 rows of C = 499: 512 blocks).
constexpr int64_t kLnMinChunkRows = 32;

// Fixed split of the rows into at most kMaxChunks chunks of at least min_rows: depends only on the shape, so sums
// are reproducible.
inline int64_t rows_per_chunk(int64_t rows, int64_t min_rows = kMinChunkRows) {
  const int64_t chunks = std::clamp<int64_t>((rows + min_rows - 1) / min_rows, 1, kMaxChunks);
  return (rows + chunks - 1) / chunks;
}
inline int64_t chunk_count(int64_t rows, int64_t min_rows = kMinChunkRows) {
  const int64_t per = rows_per_chunk(rows, min_rows);
  return (rows + per - 1) / per;
}

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

template <NormAct A>
__device__ __forceinline__ float act_value(float v) {
  if constexpr (A == NormAct::relu) return v > 0.f ? v : 0.f;
  if constexpr (A == NormAct::gelu) return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
  return v;
}

enum class ColMode { welford, grad_channel_stats, grad_row_stats };

constexpr int kColUnroll = 4;  // rows loaded before they are accumulated: four loads in flight per thread

// Partial column statistics over one row chunk (blockIdx.y), kN consecutive channels per thread (with_pack):
//   welford: (mean, m2) of act(a) over the chunk (one pass, kernels/norm/welford.h);  grad_*: sums (a * xhat, a)
//   with a = dy, xhat from act(b), b = x, and per-channel (BatchNorm) or per-row (LayerNorm) statistics.
// The rows are accumulated in order; kColUnroll of them are loaded first so that the loads overlap.
template <class T, ColMode M, NormAct A, int kN>
__global__ void column_partial_kernel(const T* __restrict__ a, const T* __restrict__ b, const float* __restrict__ mean,
                                      const float* __restrict__ rstd, int64_t rows, int64_t c, int64_t per_chunk,
                                      float* __restrict__ part0, float* __restrict__ part1) {
  const int64_t ch0 = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * kN;
  if (ch0 >= c) return;
  const int64_t r0 = blockIdx.y * per_chunk, r1 = min(rows, r0 + per_chunk);
  constexpr bool kGrad = M != ColMode::welford;
  float s0[kN] = {}, s1[kN] = {}, mu[kN] = {}, rs[kN] = {};
  if constexpr (M == ColMode::grad_channel_stats) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      mu[k] = mean[ch0 + k];
      rs[k] = rstd[ch0 + k];
    }
  }
  // welford: s0 = mean, s1 = m2, the count is the thread's row count; grad: s0 += a * xhat, s1 += a.
  auto accumulate = [&](int64_t r, const float(&v)[kN], const float(&xb)[kN]) {
    if constexpr (M == ColMode::welford) {
      const float inv_n = 1.0f / float(r - r0 + 1);
#pragma unroll
      for (int k = 0; k < kN; ++k) welford_step(s0[k], s1[k], act_value<A>(v[k]), inv_n);
    } else {
      if constexpr (M == ColMode::grad_row_stats) {
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          mu[k] = mean[r];
          rs[k] = rstd[r];
        }
      }
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        s0[k] += v[k] * (act_value<A>(xb[k]) - mu[k]) * rs[k];
        s1[k] += v[k];
      }
    }
  };
  int64_t r = r0;
  for (; r + kColUnroll <= r1; r += kColUnroll) {
    float v[kColUnroll][kN], xb[kColUnroll][kN];
#pragma unroll
    for (int u = 0; u < kColUnroll; ++u) {
      cuda::load_n<kN>(a + (r + u) * c + ch0, v[u]);
      if constexpr (kGrad) cuda::load_n<kN>(b + (r + u) * c + ch0, xb[u]);
    }
#pragma unroll
    for (int u = 0; u < kColUnroll; ++u) accumulate(r + u, v[u], xb[u]);
  }
  for (; r < r1; ++r) {
    float v[kN], xb[kN];
    cuda::load_n<kN>(a + r * c + ch0, v);
    if constexpr (kGrad) cuda::load_n<kN>(b + r * c + ch0, xb);
    accumulate(r, v, xb);
  }
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    part0[blockIdx.y * c + ch0 + k] = s0[k];
    part1[blockIdx.y * c + ch0 + k] = s1[k];
  }
}

// Ordered combine of the gradient partials: FP32 sums for the dx pass, T copies for the outputs (if non-null).
template <class T>
__global__ void __launch_bounds__(kCombineThreads)
    grad_combine_kernel(const float* __restrict__ part0, const float* __restrict__ part1, int64_t chunks, int64_t c,
                        float* __restrict__ sum0, float* __restrict__ sum1, T* dgamma, T* dbeta) {
  float s[2];
  combine_sums<2>({part0, part1}, chunks, c, s);
  const int64_t ch = combine_column();
  if (threadIdx.y != 0 || ch >= c) return;
  sum0[ch] = s[0];
  sum1[ch] = s[1];
  if (dgamma) dgamma[ch] = device_cast<T>(s[0]);
  if (dbeta) dbeta[ch] = device_cast<T>(s[1]);
}

// Blocks of the column partial kernel: one thread per pack, up to kColThreads packs, whole warps.
inline unsigned col_threads(int64_t packs) { return unsigned(std::min<int64_t>(kColThreads, (packs + 31) / 32 * 32)); }
inline unsigned col_blocks(int64_t packs) { return unsigned((packs + col_threads(packs) - 1) / col_threads(packs)); }

template <class T, ColMode M, NormAct A = NormAct::none>
void launch_column_partial(const T* a, const T* b, const float* mean, const float* rstd, const NormParams& p,
                           float* part0, float* part1, cudaStream_t s) {
  const unsigned chunks = unsigned(chunk_count(p.rows));
  cuda::with_pack<T>(p.c, cuda::common_alignment(a, b), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    column_partial_kernel<T, M, A, kN><<<dim3(col_blocks(p.c / kN), chunks), col_threads(p.c / kN), 0, s>>>(
        a, b, mean, rstd, p.rows, p.c, rows_per_chunk(p.rows), part0, part1);
  });
  CNN_CHECK_LAUNCH("norm column partial sums");
}

// Workspace layout (floats): part0 (chunks, C), part1 (chunks, C), sum0 (C), sum1 (C).
struct Ws {
  float *part0, *part1, *sum0, *sum1;
};
inline Ws split(float* ws, int64_t chunks, int64_t c) {
  const int64_t pc = chunks * c;
  return {ws, ws + pc, ws + 2 * pc, ws + 2 * pc + c};
}
inline Ws split(float* ws, const NormParams& p) { return split(ws, chunk_count(p.rows), p.c); }

inline void check(const char* op, const NormParams& p, const void* ws) {
  CNN_CHECK(p.rows >= 1 && p.c >= 1, op, ": expected rows, C >= 1, got rows=", p.rows, " C=", p.c);
  CNN_CHECK(p.eps > 0.0, op, ": expected eps > 0, got ", p.eps);
  CNN_CHECK(ws != nullptr, op, ": null workspace");
}

}  // namespace cnn::kernels::norm_detail

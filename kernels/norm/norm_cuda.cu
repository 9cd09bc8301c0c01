// CUDA LayerNorm and BatchNorm: kernels, then launchers, then the exported entries. FP32 arithmetic for f32 and f16
// data.
//   LayerNorm: a group of 16 or 32 lanes per row keeps the row in registers (C <= 1024, loaded in the widest packs
//   C and the pointers allow), so the forward reads x once and the backward reads dy and x once; the backward also
//   sums dgamma / dbeta per block over fixed row chunks, and an ordered pass combines the blocks' partials. Rows
//   longer than 1024 take one warp per row with loops over the row (three reads of x forward, two of dy and x for
//   dx, then a column pass for dgamma / dbeta).
//   BatchNorm: per-channel statistics in one Welford pass over fixed row chunks, gradient column sums likewise,
//   ordered combines, elementwise apply.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/norm/norm_cuda.h"
#include "kernels/norm/welford.h"

namespace cnn::kernels {

namespace {

constexpr int kColThreads = 128;       // channels per block of the column-sum kernels
constexpr int kRowsPerBlock = 8;       // warps (rows) per block of the LayerNorm loop kernels (C > 1024)
constexpr int kElemBlock = 256;        // threads of the elementwise kernels
constexpr int64_t kMinChunkRows = 64;  // rows per partial at least (amortises the partial write)
constexpr int64_t kMaxChunks = 1024;   // partials per channel at most (grid.y limit and combine cost)

// LayerNorm register kernels: a group of kG lanes (4 to 32) per row keeps the row in registers, at most
// kLnLaneValues values of each row tensor per lane, which covers C <= 1024 with 32 lanes. Groups are sized for about
// kLnFwdLaneValues / kLnBwdLaneValues values per lane, so that short rows still keep enough loads in flight (several
// rows per warp: C = 96 in f16 takes 8 lanes per row forward, 16 backward) and the backward, which holds four values
// per channel (dy, xhat and two sums), stays at about 64 registers up to C = 256.
constexpr int kLnLaneValues = 32;
constexpr int kLnFwdLaneValues = 16;
constexpr int kLnBwdLaneValues = 8;
constexpr int kLnFwdThreads = 256;  // forward block: 256 / kG rows
constexpr int kLnGroups = 8;        // backward block: kLnGroups groups sharing one partial row of dgamma / dbeta
// Backward blocks take chunks of at least this many rows (4 per group): the per-channel partial a block writes then
// costs 8 bytes per channel against >= 192 bytes per channel of f16 dy, x and dx, while rows / 32 blocks still
// fill the GPU at SLaK's and ConvNeXt's late stages (16384 rows of C = 499: 512 blocks).
constexpr int64_t kLnMinChunkRows = 32;

// Fixed split of the rows into at most kMaxChunks chunks of at least min_rows: depends only on the shape, so sums
// are reproducible.
int64_t rows_per_chunk(int64_t rows, int64_t min_rows = kMinChunkRows) {
  const int64_t chunks = std::clamp<int64_t>((rows + min_rows - 1) / min_rows, 1, kMaxChunks);
  return (rows + chunks - 1) / chunks;
}
int64_t chunk_count(int64_t rows, int64_t min_rows = kMinChunkRows) {
  const int64_t per = rows_per_chunk(rows, min_rows);
  return (rows + per - 1) / per;
}

// Sum over each aligned group of kG lanes (16 or 32) of the warp; every lane of the warp takes part.
template <int kG = 32>
__device__ __forceinline__ float group_sum(float v) {
  for (int o = kG / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

template <NormAct A>
__device__ __forceinline__ float act_value(float v) {
  if constexpr (A == NormAct::relu) return v > 0.f ? v : 0.f;
  if constexpr (A == NormAct::gelu) return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
  return v;
}

template <NormAct A>
__device__ __forceinline__ float act_grad(float v) {
  if constexpr (A == NormAct::relu) return v > 0.f ? 1.f : 0.f;
  if constexpr (A == NormAct::gelu) return 0.5f * (1.0f + erff(v * kInvSqrt2)) + v * kInvSqrt2Pi * expf(-0.5f * v * v);
  return 1.f;
}

// Runs f(std::integral_constant<NormAct, A>) for the run-time activation.
template <class F>
void dispatch_act(NormAct act, F&& f) {
  switch (act) {
    case NormAct::none:
      return f(std::integral_constant<NormAct, NormAct::none>{});
    case NormAct::relu:
      return f(std::integral_constant<NormAct, NormAct::relu>{});
    case NormAct::gelu:
      return f(std::integral_constant<NormAct, NormAct::gelu>{});
  }
  throw Error(str_cat("batchnorm: invalid activation ", int(act)));
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
  auto accumulate = [&](int64_t r, const float (&v)[kN], const float (&xb)[kN]) {
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

// The combine kernels: blocks of 32 channels x kCombineSplit warps. Warp j takes the j-th contiguous range of chunks
// and folds it in chunk order; warp 0 then folds the kCombineSplit results in order. The order depends only on the
// shape, so the results are reproducible; the chains are kCombineSplit times shorter than one thread per channel.
constexpr int kCombineSplit = 8;
dim3 combine_grid(int64_t c) { return dim3(unsigned((c + 31) / 32)); }
const dim3 kCombineBlock(32, kCombineSplit);

__device__ __forceinline__ void combine_range(int64_t chunks, int64_t& k0, int64_t& k1) {
  const int64_t per = (chunks + kCombineSplit - 1) / kCombineSplit;
  k0 = min(chunks, threadIdx.y * per);
  k1 = min(chunks, k0 + per);
}

// Merges the chunks' Welford partials (chunk k holds min(per_chunk, rows - k per_chunk) rows), then writes mean and
// rstd and updates the running statistics.
__global__ void bn_stats_combine_kernel(const float* __restrict__ part_mean, const float* __restrict__ part_m2,
                                        int64_t chunks, int64_t per_chunk, int64_t c, int64_t rows, float eps,
                                        float* __restrict__ mean, float* __restrict__ rstd, float* running_mean,
                                        float* running_var, bool update, float momentum) {
  __shared__ Welford partial[kCombineSplit][32];
  const int64_t ch = blockIdx.x * 32 + threadIdx.x;
  Welford w;
  if (ch < c) {
    int64_t k0, k1;
    combine_range(chunks, k0, k1);
    for (int64_t k = k0; k < k1; ++k) {
      const float n = float(min(per_chunk, rows - k * per_chunk));
      w = welford_merge(w, Welford{n, part_mean[k * c + ch], part_m2[k * c + ch]});
    }
  }
  partial[threadIdx.y][threadIdx.x] = w;
  __syncthreads();
  if (threadIdx.y != 0 || ch >= c) return;
  for (int j = 1; j < kCombineSplit; ++j) w = welford_merge(w, partial[j][threadIdx.x]);
  const float var = w.m2 / float(rows);
  mean[ch] = w.mean;
  rstd[ch] = 1.0f / sqrtf(var + eps);
  if (update) {
    const float unbiased = rows > 1 ? var * (float(rows) / float(rows - 1)) : var;
    running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * w.mean;
    running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * unbiased;
  }
}

// Ordered combine of the gradient partials: FP32 sums for the dx pass, T copies for the outputs (if non-null).
template <class T>
__global__ void grad_combine_kernel(const float* __restrict__ part0, const float* __restrict__ part1, int64_t chunks,
                                    int64_t c, float* __restrict__ sum0, float* __restrict__ sum1, T* dgamma,
                                    T* dbeta) {
  __shared__ float partial[2][kCombineSplit][32];
  const int64_t ch = blockIdx.x * 32 + threadIdx.x;
  float s0 = 0.f, s1 = 0.f;
  if (ch < c) {
    int64_t k0, k1;
    combine_range(chunks, k0, k1);
    for (int64_t k = k0; k < k1; ++k) {
      s0 += part0[k * c + ch];
      s1 += part1[k * c + ch];
    }
  }
  partial[0][threadIdx.y][threadIdx.x] = s0;
  partial[1][threadIdx.y][threadIdx.x] = s1;
  __syncthreads();
  if (threadIdx.y != 0 || ch >= c) return;
  for (int j = 1; j < kCombineSplit; ++j) {
    s0 += partial[0][j][threadIdx.x];
    s1 += partial[1][j][threadIdx.x];
  }
  sum0[ch] = s0;
  sum1[ch] = s1;
  if (dgamma) dgamma[ch] = device_cast<T>(s0);
  if (dbeta) dbeta[ch] = device_cast<T>(s1);
}

__global__ void bn_eval_stats_kernel(const float* __restrict__ rm, const float* __restrict__ rv, int64_t c, float eps,
                                     float* __restrict__ mean, float* __restrict__ rstd) {
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= c) return;
  mean[ch] = rm[ch];
  rstd[ch] = 1.0f / sqrtf(rv[ch] + eps);
}

// BatchNorm's elementwise passes over (rows, C) in kN-channel packs (cuda::with_pack). Thread t keeps one pack,
// channel pack t % packs, for rows t / packs, + row_step, ... (row_step * packs threads in all), so its per-channel
// coefficients are computed once into registers and each element costs its loads and a few FMAs: the passes run at
// memory speed.
struct RowWalk {
  int64_t rows, c, row_step;
};
// Threads in flight: enough to fill an H100/H200 (132 SMs x 2048), so each thread holds one load of each input.
constexpr int64_t kElemThreads = int64_t(1) << 18;

// y = (act(x) - mean) * rstd * gamma + beta (+ residual).
template <class T, int kN, NormAct A>
__global__ void batchnorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                         const T* __restrict__ beta, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, const T* __restrict__ residual,
                                         T* __restrict__ y, RowWalk w) {
  const int64_t packs = w.c / kN, t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= packs * w.row_step) return;
  const int64_t ch0 = t % packs * kN;
  float mu[kN], scale[kN], shift[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    mu[k] = mean[ch0 + k];
    scale[k] = rstd[ch0 + k] * widen(gamma[ch0 + k]);
    shift[k] = widen(beta[ch0 + k]);
  }
  for (int64_t r = t / packs; r < w.rows; r += w.row_step) {
    const int64_t i = r * w.c + ch0;
    float v[kN], res[kN] = {};
    cuda::load_n<kN>(x + i, v);
    if (residual != nullptr) cuda::load_n<kN>(residual + i, res);
#pragma unroll
    for (int k = 0; k < kN; ++k) v[k] = (act_value<A>(v[k]) - mu[k]) * scale[k] + shift[k] + res[k];
    cuda::store_n<kN>(y + i, v);
  }
}

// Training: dx = g (dy - sum(dy) / rows - xhat sum(dy xhat) / rows) with g = gamma rstd and xhat = (act(x) - mean)
// rstd, i.e. dx = g dy + slope (act(x) - mean) + offset; eval: dx = g dy. Times act'(x) either way.
template <class T, int kN, NormAct A>
__global__ void batchnorm_backward_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                             const T* __restrict__ gamma, const float* __restrict__ mean,
                                             const float* __restrict__ rstd, const float* __restrict__ sum_gx,
                                             const float* __restrict__ sum_g, T* __restrict__ dx, bool training,
                                             RowWalk w) {
  const int64_t packs = w.c / kN, t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= packs * w.row_step) return;
  const int64_t ch0 = t % packs * kN;
  const float inv_rows = 1.0f / float(w.rows);
  float g[kN], mu[kN], slope[kN], offset[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    const int64_t ch = ch0 + k;
    g[k] = widen(gamma[ch]) * rstd[ch];
    mu[k] = mean[ch];
    slope[k] = training ? -g[k] * rstd[ch] * sum_gx[ch] * inv_rows : 0.f;
    offset[k] = training ? -g[k] * sum_g[ch] * inv_rows : 0.f;
  }
  const bool need_x = training || A != NormAct::none;
  for (int64_t r = t / packs; r < w.rows; r += w.row_step) {
    const int64_t i = r * w.c + ch0;
    float d[kN], xv[kN] = {};
    cuda::load_n<kN>(dy + i, d);
    if (need_x) cuda::load_n<kN>(x + i, xv);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      d[k] = g[k] * d[k] + slope[k] * (act_value<A>(xv[k]) - mu[k]) + offset[k];
      if constexpr (A != NormAct::none) d[k] *= act_grad<A>(xv[k]);
    }
    cuda::store_n<kN>(dx + i, d);
  }
}

// LayerNorm with the row in registers: lane threadIdx.x of group (row slot) threadIdx.y keeps packs lane, lane + kG,
// ... (kIters at most) of kN consecutive channels, packs = C / kN.

// y = (x - mean) * rstd * gamma + beta; mean, then the variance about it, from the registers.
template <class T, int kN, int kIters, int kG>
__global__ void __launch_bounds__(kLnFwdThreads)
    layernorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ beta,
                             T* __restrict__ y, float* __restrict__ mean, float* __restrict__ rstd, int64_t rows,
                             int64_t c, float eps) {
  const int lane = threadIdx.x, packs = int(c / kN);
  const int64_t row = blockIdx.x * int64_t(blockDim.y) + threadIdx.y;
  const bool live = row < rows;  // a group past the last row still joins its warp's shuffles
  const T* xr = x + (live ? row : 0) * c;
  float v[kIters][kN], s = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const int p = j * kG + lane;
    if (live && p < packs) {
      cuda::load_n<kN>(xr + p * kN, v[j]);
    } else {
#pragma unroll
      for (int k = 0; k < kN; ++k) v[j][k] = 0.f;
    }
#pragma unroll
    for (int k = 0; k < kN; ++k) s += v[j][k];
  }
  const float mu = group_sum<kG>(s) / float(c);
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    if (j * kG + lane >= packs) continue;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const float d = v[j][k] - mu;
      q += d * d;
    }
  }
  const float rs = 1.0f / sqrtf(group_sum<kG>(q) / float(c) + eps);
  if (!live) return;
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  T* yr = y + row * c;
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const int p = j * kG + lane;
    if (p >= packs) continue;
    float g[kN], b[kN];
    cuda::load_n<kN>(gamma + p * kN, g);
    cuda::load_n<kN>(beta + p * kN, b);
#pragma unroll
    for (int k = 0; k < kN; ++k) v[j][k] = (v[j][k] - mu) * rs * g[k] + b[k];
    cuda::store_n<kN>(yr + p * kN, v[j]);
  }
}

// dx = rstd (g - mean_C(g) - xhat mean_C(g xhat)) with g = dy gamma, xhat = (x - mean) rstd, from one read of dy and
// x; dx may be null. Block b takes rows [b per_chunk, (b + 1) per_chunk), group i its rows i, i + kLnGroups, ..., and
// each lane sums dy xhat and dy over them for its channels; the groups then add their sums in group order into
// part0 / part1 row b (skipped where part0 is null). That order does not depend on the pack width or group size, so
// with the ordered combine dgamma and dbeta depend only on the shape.
template <class T, int kN, int kIters, int kG>
__global__ void __launch_bounds__(32 * kLnGroups)
    layernorm_backward_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ gamma,
                              const float* __restrict__ mean, const float* __restrict__ rstd, T* __restrict__ dx,
                              int64_t rows, int64_t c, int64_t per_chunk, float* __restrict__ part0,
                              float* __restrict__ part1) {
  __shared__ float block_sum[2][kIters * kN * kG];  // indexed by channel: covers C
  const int lane = threadIdx.x, group = threadIdx.y, packs = int(c / kN);
  const int64_t r0 = blockIdx.x * per_chunk, r1 = min(rows, r0 + per_chunk);
  const float inv_c = 1.0f / float(c);
  float sum_dyx[kIters][kN] = {}, sum_dy[kIters][kN] = {};
  // Every group runs the same number of steps (two groups can share a warp); a group past r1 loads zeros.
  for (int64_t base = r0; base < r1; base += kLnGroups) {
    const int64_t row = base + group;
    const bool live = row < r1;
    const float mu = live ? mean[row] : 0.f, rs = live ? rstd[row] : 0.f;
    const int64_t off = live ? row * c : 0;
    float d[kIters][kN], xh[kIters][kN], sg = 0.f, sgx = 0.f;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int p = j * kG + lane;
      float g[kN];
      if (live && p < packs) {
        cuda::load_n<kN>(dy + off + p * kN, d[j]);
        cuda::load_n<kN>(x + off + p * kN, xh[j]);
        cuda::load_n<kN>(gamma + p * kN, g);
      } else {
#pragma unroll
        for (int k = 0; k < kN; ++k) d[j][k] = xh[j][k] = g[k] = 0.f;
      }
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        xh[j][k] = (xh[j][k] - mu) * rs;
        sum_dyx[j][k] += d[j][k] * xh[j][k];
        sum_dy[j][k] += d[j][k];
        d[j][k] *= g[k];  // from here on d holds g = dy gamma
        sg += d[j][k];
        sgx += d[j][k] * xh[j][k];
      }
    }
    sg = group_sum<kG>(sg) * inv_c;
    sgx = group_sum<kG>(sgx) * inv_c;
    if (!live || dx == nullptr) continue;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int p = j * kG + lane;
      if (p >= packs) continue;
#pragma unroll
      for (int k = 0; k < kN; ++k) d[j][k] = rs * (d[j][k] - sg - xh[j][k] * sgx);
      cuda::store_n<kN>(dx + off + p * kN, d[j]);
    }
  }
  if (part0 == nullptr) return;
  for (int i = 0; i < kLnGroups; ++i) {
    if (group == i) {
#pragma unroll
      for (int j = 0; j < kIters; ++j) {
        const int p = j * kG + lane;
        if (p >= packs) continue;
#pragma unroll
        for (int k = 0; k < kN; ++k) {
          const int ch = p * kN + k;
          block_sum[0][ch] = i == 0 ? sum_dyx[j][k] : block_sum[0][ch] + sum_dyx[j][k];
          block_sum[1][ch] = i == 0 ? sum_dy[j][k] : block_sum[1][ch] + sum_dy[j][k];
        }
      }
    }
    __syncthreads();
  }
  for (int ch = group * kG + lane; ch < c; ch += kG * kLnGroups) {
    part0[blockIdx.x * c + ch] = block_sum[0][ch];
    part1[blockIdx.x * c + ch] = block_sum[1][ch];
  }
}

// Rows longer than the register kernels hold (C > 1024): one warp per row, loops over the row.
template <class T>
__global__ void layernorm_forward_loop_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                              const T* __restrict__ beta, T* __restrict__ y, float* __restrict__ mean,
                                              float* __restrict__ rstd, int64_t rows, int64_t c, float eps) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;  // one warp per row
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const T* xr = x + row * c;
  float s = 0.f;
  for (int64_t i = lane; i < c; i += 32) s += widen(xr[i]);
  const float mu = group_sum(s) / float(c);
  float v = 0.f;
  for (int64_t i = lane; i < c; i += 32) {
    const float d = widen(xr[i]) - mu;
    v += d * d;
  }
  const float rs = 1.0f / sqrtf(group_sum(v) / float(c) + eps);
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  T* yr = y + row * c;
  for (int64_t i = lane; i < c; i += 32)
    yr[i] = device_cast<T>((widen(xr[i]) - mu) * rs * widen(gamma[i]) + widen(beta[i]));
}

template <class T>
__global__ void layernorm_backward_dx_loop_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                                  const T* __restrict__ gamma, const float* __restrict__ mean,
                                                  const float* __restrict__ rstd, T* __restrict__ dx, int64_t rows,
                                                  int64_t c) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const T *xr = x + row * c, *dyr = dy + row * c;
  const float mu = mean[row], rs = rstd[row];
  float sg = 0.f, sgx = 0.f;
  for (int64_t i = lane; i < c; i += 32) {
    const float g = widen(dyr[i]) * widen(gamma[i]);
    sg += g;
    sgx += g * (widen(xr[i]) - mu) * rs;
  }
  sg = group_sum(sg) / float(c);
  sgx = group_sum(sgx) / float(c);
  T* dxr = dx + row * c;
  for (int64_t i = lane; i < c; i += 32) {
    const float g = widen(dyr[i]) * widen(gamma[i]);
    dxr[i] = device_cast<T>(rs * (g - sg - (widen(xr[i]) - mu) * rs * sgx));
  }
}

// ---- launchers ------------------------------------------------------------------------------------------------

// Blocks of the column partial kernel: one thread per pack, up to kColThreads packs, whole warps.
unsigned col_threads(int64_t packs) { return unsigned(std::min<int64_t>(kColThreads, (packs + 31) / 32 * 32)); }
unsigned col_blocks(int64_t packs) { return unsigned((packs + col_threads(packs) - 1) / col_threads(packs)); }
unsigned channel_blocks(int64_t c) { return unsigned((c + kColThreads - 1) / kColThreads); }

// Launches an elementwise BatchNorm kernel (kN-channel packs) over p's rows: args..., then its RowWalk.
template <int kN, class Kernel, class... Args>
void launch_row_walk(Kernel kernel, const NormParams& p, cudaStream_t s, Args... args) {
  const int64_t packs = p.c / kN;
  const RowWalk w{p.rows, p.c, std::clamp<int64_t>(kElemThreads / packs, 1, p.rows)};
  kernel<<<unsigned((packs * w.row_step + kElemBlock - 1) / kElemBlock), kElemBlock, 0, s>>>(args..., w);
}

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
Ws split(float* ws, int64_t chunks, int64_t c) {
  const int64_t pc = chunks * c;
  return {ws, ws + pc, ws + 2 * pc, ws + 2 * pc + c};
}
Ws split(float* ws, const NormParams& p) { return split(ws, chunk_count(p.rows), p.c); }

// Runs f(k) for the least power of two k >= iters from kIters on with k * kN <= kLnLaneValues; false if none.
template <int kN, int kIters, class F>
bool with_lane_iters(int64_t iters, F&& f) {
  if constexpr (kIters * kN > kLnLaneValues) {
    return false;
  } else {
    if (iters <= kIters) {
      f(std::integral_constant<int, kIters>{});
      return true;
    }
    return with_lane_iters<kN, kIters * 2>(iters, f);
  }
}

// A LayerNorm register kernel's shape: kN-element packs, kG lanes per row, kIters packs per lane at most.
template <int N, int Iters, int G>
struct LnShape {
  static constexpr int kN = N, kIters = Iters, kG = G;
};

// Runs f(LnShape) for C: the widest pack that C and `align` allow, kLaneValues / kN packs per lane on the fewest
// lanes (4, 8, 16) that hold the row, else 32 lanes with as many packs per lane as the row needs. Returns false
// where a row does not fit in the registers (C > 1024).
template <class T, int kLaneValues, class F>
bool with_ln_shape(int64_t c, int align, F&& f) {
  bool fits = true;
  cuda::with_pack<T>(c, align, [&](auto pack) {
    constexpr int kN = decltype(pack)::value, kIt = kLaneValues > kN ? kLaneValues / kN : 1;
    const int64_t packs = c / kN, lanes = (packs + kIt - 1) / kIt;
    if (lanes <= 4) return f(LnShape<kN, kIt, 4>{});
    if (lanes <= 8) return f(LnShape<kN, kIt, 8>{});
    if (lanes <= 16) return f(LnShape<kN, kIt, 16>{});
    fits =
        with_lane_iters<kN, kIt>((packs + 31) / 32, [&](auto iters) { f(LnShape<kN, decltype(iters)::value, 32>{}); });
  });
  return fits;
}

// The elementwise BatchNorm passes, on the widest packs C and the pointers allow (batchnorm_forward_kernel).
template <class T, NormAct A>
void launch_bn_forward(const T* x, const T* gamma, const T* beta, const float* mean, const float* rstd,
                       const T* residual, T* y, const NormParams& p, cudaStream_t s) {
  cuda::with_pack<T>(p.c, cuda::common_alignment(x, residual, y), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    launch_row_walk<kN>(batchnorm_forward_kernel<T, kN, A>, p, s, x, gamma, beta, mean, rstd, residual, y);
  });
  CNN_CHECK_LAUNCH("batchnorm_forward");
}

template <class T, NormAct A>
void launch_bn_backward_dx(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, const Ws& w,
                           T* dx, const NormParams& p, bool training, cudaStream_t s) {
  cuda::with_pack<T>(p.c, cuda::common_alignment(dy, x, dx), [&](auto pack) {
    constexpr int kN = decltype(pack)::value;
    launch_row_walk<kN>(batchnorm_backward_dx_kernel<T, kN, A>, p, s, dy, x, gamma, mean, rstd, w.sum0, w.sum1, dx,
                        training);
  });
  CNN_CHECK_LAUNCH("batchnorm_backward dx");
}

void check(const char* op, const NormParams& p, const void* ws) {
  CNN_CHECK(p.rows >= 1 && p.c >= 1, op, ": expected rows, C >= 1, got rows=", p.rows, " C=", p.c);
  CNN_CHECK(p.eps > 0.0, op, ": expected eps > 0, got ", p.eps);
  CNN_CHECK(ws != nullptr, op, ": null workspace");
}

}  // namespace

size_t norm_workspace_bytes(const NormParams& p) {
  const int64_t rows = std::max<int64_t>(p.rows, 1);
  const int64_t chunks = std::max(chunk_count(rows), chunk_count(rows, kLnMinChunkRows));
  return size_t(2 * chunks * p.c + 2 * p.c) * sizeof(float);
}

template <class T>
void layernorm_forward_cuda(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                            const NormParams& p, cudaStream_t s) {
  check("layernorm_forward_cuda", p, x);
  const int align = cuda::common_alignment(x, gamma, beta, y);
  const bool fits = with_ln_shape<T, kLnFwdLaneValues>(p.c, align, [&](auto shape) {
    using S = decltype(shape);
    constexpr int kRows = kLnFwdThreads / S::kG;
    layernorm_forward_kernel<T, S::kN, S::kIters, S::kG>
        <<<unsigned((p.rows + kRows - 1) / kRows), dim3(S::kG, kRows), 0, s>>>(x, gamma, beta, y, mean, rstd, p.rows,
                                                                               p.c, float(p.eps));
  });
  if (!fits) {
    layernorm_forward_loop_kernel<T>
        <<<unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock), dim3(32, kRowsPerBlock), 0, s>>>(
            x, gamma, beta, y, mean, rstd, p.rows, p.c, float(p.eps));
  }
  CNN_CHECK_LAUNCH("layernorm_forward");
}

template <class T>
void layernorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, float* workspace, cudaStream_t s) {
  check("layernorm_backward_cuda", p, workspace);
  const bool params = dgamma != nullptr || dbeta != nullptr;
  if (dx == nullptr && !params) return;
  const int64_t chunks = chunk_count(p.rows, kLnMinChunkRows);
  const Ws w = split(workspace, chunks, p.c);
  const int align = cuda::common_alignment(dy, x, gamma, dx);
  const bool fits = with_ln_shape<T, kLnBwdLaneValues>(p.c, align, [&](auto shape) {
    using S = decltype(shape);
    layernorm_backward_kernel<T, S::kN, S::kIters, S::kG><<<unsigned(chunks), dim3(S::kG, kLnGroups), 0, s>>>(
        dy, x, gamma, mean, rstd, dx, p.rows, p.c, rows_per_chunk(p.rows, kLnMinChunkRows), params ? w.part0 : nullptr,
        w.part1);
  });
  if (fits) {
    CNN_CHECK_LAUNCH("layernorm_backward");
    if (!params) return;
    grad_combine_kernel<T>
        <<<combine_grid(p.c), kCombineBlock, 0, s>>>(w.part0, w.part1, chunks, p.c, w.sum0, w.sum1, dgamma, dbeta);
    CNN_CHECK_LAUNCH("layernorm_backward dgamma/dbeta");
    return;
  }
  // C > 1024: dx from the loop kernel, dgamma / dbeta from the column pass over dy and x.
  if (dx != nullptr) {
    layernorm_backward_dx_loop_kernel<T>
        <<<unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock), dim3(32, kRowsPerBlock), 0, s>>>(
            dy, x, gamma, mean, rstd, dx, p.rows, p.c);
    CNN_CHECK_LAUNCH("layernorm_backward dx");
  }
  if (!params) return;
  const Ws wc = split(workspace, p);
  launch_column_partial<T, ColMode::grad_row_stats>(dy, x, mean, rstd, p, wc.part0, wc.part1, s);
  grad_combine_kernel<T><<<combine_grid(p.c), kCombineBlock, 0, s>>>(wc.part0, wc.part1, chunk_count(p.rows), p.c,
                                                                     wc.sum0, wc.sum1, dgamma, dbeta);
  CNN_CHECK_LAUNCH("layernorm_backward dgamma/dbeta");
}

template <class T>
void batchnorm_act_stats_cuda(const T* x, NormAct act, float* mean, float* rstd, float* running_mean,
                              float* running_var, const NormParams& p, const BatchNormUpdate& u, float* workspace,
                              cudaStream_t s) {
  check("batchnorm_stats_cuda", p, workspace);
  CNN_CHECK(!u.update_running || (running_mean != nullptr && running_var != nullptr),
            "batchnorm_stats_cuda: running statistics to update are null");
  const Ws w = split(workspace, p);
  dispatch_act(act, [&](auto a) {
    launch_column_partial<T, ColMode::welford, decltype(a)::value>(x, nullptr, nullptr, nullptr, p, w.part0, w.part1,
                                                                   s);
  });
  bn_stats_combine_kernel<<<combine_grid(p.c), kCombineBlock, 0, s>>>(
      w.part0, w.part1, chunk_count(p.rows), rows_per_chunk(p.rows), p.c, p.rows, float(p.eps), mean, rstd,
      running_mean, running_var, u.update_running, float(u.momentum));
  CNN_CHECK_LAUNCH("batchnorm statistics");
}

template <class T>
void batchnorm_stats_cuda(const T* x, float* mean, float* rstd, float* running_mean, float* running_var,
                          const NormParams& p, const BatchNormUpdate& u, float* workspace, cudaStream_t s) {
  batchnorm_act_stats_cuda<T>(x, NormAct::none, mean, rstd, running_mean, running_var, p, u, workspace, s);
}

void batchnorm_eval_stats_cuda(const float* running_mean, const float* running_var, float* mean, float* rstd,
                               const NormParams& p, cudaStream_t s) {
  check("batchnorm_eval_stats_cuda", p, running_mean);
  bn_eval_stats_kernel<<<channel_blocks(p.c), kColThreads, 0, s>>>(running_mean, running_var, p.c, float(p.eps), mean,
                                                                   rstd);
  CNN_CHECK_LAUNCH("batchnorm eval statistics");
}

template <class T>
void batchnorm_act_forward_cuda(const T* x, NormAct act, const T* gamma, const T* beta, const float* mean,
                                const float* rstd, const T* residual, T* y, const NormParams& p, cudaStream_t s) {
  check("batchnorm_forward_cuda", p, x);
  dispatch_act(
      act, [&](auto a) { launch_bn_forward<T, decltype(a)::value>(x, gamma, beta, mean, rstd, residual, y, p, s); });
}

template <class T>
void batchnorm_forward_cuda(const T* x, const T* gamma, const T* beta, const float* mean, const float* rstd, T* y,
                            const NormParams& p, cudaStream_t s) {
  batchnorm_act_forward_cuda<T>(x, NormAct::none, gamma, beta, mean, rstd, nullptr, y, p, s);
}

template <class T>
void batchnorm_act_backward_cuda(const T* dy, const T* x, NormAct act, const T* gamma, const float* mean,
                                 const float* rstd, T* dx, T* dgamma, T* dbeta, const NormParams& p, bool training,
                                 float* workspace, cudaStream_t s) {
  check("batchnorm_backward_cuda", p, workspace);
  const Ws w = split(workspace, p);
  dispatch_act(act, [&](auto a) {
    launch_column_partial<T, ColMode::grad_channel_stats, decltype(a)::value>(dy, x, mean, rstd, p, w.part0, w.part1,
                                                                              s);
    grad_combine_kernel<T><<<combine_grid(p.c), kCombineBlock, 0, s>>>(w.part0, w.part1, chunk_count(p.rows), p.c,
                                                                       w.sum0, w.sum1, dgamma, dbeta);
    CNN_CHECK_LAUNCH("batchnorm_backward dgamma/dbeta");
    if (dx != nullptr) launch_bn_backward_dx<T, decltype(a)::value>(dy, x, gamma, mean, rstd, w, dx, p, training, s);
  });
}

template <class T>
void batchnorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, bool training, float* workspace,
                             cudaStream_t s) {
  batchnorm_act_backward_cuda<T>(dy, x, NormAct::none, gamma, mean, rstd, dx, dgamma, dbeta, p, training, workspace, s);
}

#define CNN_NORM_CUDA(T)                                                                                              \
  template void layernorm_forward_cuda<T>(const T*, const T*, const T*, T*, float*, float*, const NormParams&,        \
                                          cudaStream_t);                                                              \
  template void layernorm_backward_cuda<T>(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,      \
                                           const NormParams&, float*, cudaStream_t);                                  \
  template void batchnorm_stats_cuda<T>(const T*, float*, float*, float*, float*, const NormParams&,                  \
                                        const BatchNormUpdate&, float*, cudaStream_t);                                \
  template void batchnorm_forward_cuda<T>(const T*, const T*, const T*, const float*, const float*, T*,               \
                                          const NormParams&, cudaStream_t);                                           \
  template void batchnorm_backward_cuda<T>(const T*, const T*, const T*, const float*, const float*, T*, T*, T*,      \
                                           const NormParams&, bool, float*, cudaStream_t);                            \
  template void batchnorm_act_stats_cuda<T>(const T*, NormAct, float*, float*, float*, float*, const NormParams&,     \
                                            const BatchNormUpdate&, float*, cudaStream_t);                            \
  template void batchnorm_act_forward_cuda<T>(const T*, NormAct, const T*, const T*, const float*, const float*,      \
                                              const T*, T*, const NormParams&, cudaStream_t);                         \
  template void batchnorm_act_backward_cuda<T>(const T*, const T*, NormAct, const T*, const float*, const float*, T*, \
                                               T*, T*, const NormParams&, bool, float*, cudaStream_t);
CNN_NORM_CUDA(float)
CNN_NORM_CUDA(__half)
#undef CNN_NORM_CUDA

}  // namespace cnn::kernels

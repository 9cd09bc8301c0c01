// CUDA LayerNorm (one warp per row) and BatchNorm (per-channel statistics in one Welford pass over fixed row chunks,
// gradient column sums likewise, ordered combines, elementwise apply): kernels, then launchers, then the exported
// entries. FP32 arithmetic for f32 and f16 data.
#include <algorithm>

#include "core/cuda_check.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "kernels/norm/norm_cuda.h"
#include "kernels/norm/welford.h"

namespace cnn::kernels {

namespace {

constexpr int kColThreads = 128;       // channels per block of the column-sum kernels
constexpr int kRowsPerBlock = 8;       // warps (rows) per block of the LayerNorm kernels
constexpr int kElemBlock = 256;        // threads of the elementwise kernels
constexpr int64_t kMinChunkRows = 64;  // rows per partial at least (amortises the partial write)
constexpr int64_t kMaxChunks = 1024;   // partials per channel at most (grid.y limit and combine cost)

// Fixed split of the rows into chunks: depends only on the shape, so sums are reproducible.
int64_t rows_per_chunk(int64_t rows) {
  const int64_t chunks = std::clamp<int64_t>((rows + kMinChunkRows - 1) / kMinChunkRows, 1, kMaxChunks);
  return (rows + chunks - 1) / chunks;
}
int64_t chunk_count(int64_t rows) {
  const int64_t per = rows_per_chunk(rows);
  return (rows + per - 1) / per;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
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

template <class T>
__global__ void layernorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                         const T* __restrict__ beta, T* __restrict__ y, float* __restrict__ mean,
                                         float* __restrict__ rstd, int64_t rows, int64_t c, float eps) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.y;  // one warp per row
  if (row >= rows) return;
  const int lane = threadIdx.x;
  const T* xr = x + row * c;
  float s = 0.f;
  for (int64_t i = lane; i < c; i += 32) s += widen(xr[i]);
  const float mu = warp_sum(s) / float(c);
  float v = 0.f;
  for (int64_t i = lane; i < c; i += 32) {
    const float d = widen(xr[i]) - mu;
    v += d * d;
  }
  const float rs = 1.0f / sqrtf(warp_sum(v) / float(c) + eps);
  if (lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  T* yr = y + row * c;
  for (int64_t i = lane; i < c; i += 32)
    yr[i] = device_cast<T>((widen(xr[i]) - mu) * rs * widen(gamma[i]) + widen(beta[i]));
}

template <class T>
__global__ void layernorm_backward_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x,
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
  sg = warp_sum(sg) / float(c);
  sgx = warp_sum(sgx) / float(c);
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
Ws split(float* ws, const NormParams& p) {
  const int64_t pc = chunk_count(p.rows) * p.c;
  return {ws, ws + pc, ws + 2 * pc, ws + 2 * pc + p.c};
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
  return size_t(2 * chunk_count(std::max<int64_t>(p.rows, 1)) * p.c + 2 * p.c) * sizeof(float);
}

template <class T>
void layernorm_forward_cuda(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                            const NormParams& p, cudaStream_t s) {
  check("layernorm_forward_cuda", p, x);
  const unsigned blocks = unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  layernorm_forward_kernel<T>
      <<<blocks, dim3(32, kRowsPerBlock), 0, s>>>(x, gamma, beta, y, mean, rstd, p.rows, p.c, float(p.eps));
  CNN_CHECK_LAUNCH("layernorm_forward");
}

template <class T>
void layernorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, float* workspace, cudaStream_t s) {
  check("layernorm_backward_cuda", p, workspace);
  if (dx != nullptr) {
    const unsigned blocks = unsigned((p.rows + kRowsPerBlock - 1) / kRowsPerBlock);
    layernorm_backward_dx_kernel<T>
        <<<blocks, dim3(32, kRowsPerBlock), 0, s>>>(dy, x, gamma, mean, rstd, dx, p.rows, p.c);
    CNN_CHECK_LAUNCH("layernorm_backward dx");
  }
  if (dgamma == nullptr && dbeta == nullptr) return;
  const Ws w = split(workspace, p);
  launch_column_partial<T, ColMode::grad_row_stats>(dy, x, mean, rstd, p, w.part0, w.part1, s);
  grad_combine_kernel<T><<<combine_grid(p.c), kCombineBlock, 0, s>>>(w.part0, w.part1, chunk_count(p.rows), p.c,
                                                                     w.sum0, w.sum1, dgamma, dbeta);
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

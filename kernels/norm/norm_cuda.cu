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

// Loads / stores kN consecutive elements as floats: one element, or one 16-byte pack (core/cuda_pack.cuh).
template <int kN, class T>
__device__ __forceinline__ void load_n(const T* p, float (&v)[kN]) {
  if constexpr (kN == 1) {
    v[0] = widen(*p);
  } else {
    cuda::load_pack(p, v);
  }
}
template <int kN, class T>
__device__ __forceinline__ void store_n(T* p, const float (&v)[kN]) {
  if constexpr (kN == 1) {
    *p = device_cast<T>(v[0]);
  } else {
    cuda::store_pack(p, v);
  }
}

enum class ColMode { welford, grad_channel_stats, grad_row_stats };

// Partial column statistics over one row chunk (blockIdx.y), kN consecutive channels per thread (one 16-byte pack
// when C and the pointers allow, else kN = 1):
//   welford: (mean, m2) of act(a) over the chunk (one pass, kernels/norm/welford.h);  grad_*: sums (a * xhat, a)
//   with a = dy, xhat from act(b), b = x, and per-channel (BatchNorm) or per-row (LayerNorm) statistics.
template <class T, ColMode M, NormAct A, int kN>
__global__ void column_partial_kernel(const T* __restrict__ a, const T* __restrict__ b, const float* __restrict__ mean,
                                      const float* __restrict__ rstd, int64_t rows, int64_t c, int64_t per_chunk,
                                      float* __restrict__ part0, float* __restrict__ part1) {
  const int64_t ch0 = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * kN;
  if (ch0 >= c) return;
  const int64_t r0 = blockIdx.y * per_chunk, r1 = min(rows, r0 + per_chunk);
  float s0[kN] = {}, s1[kN] = {}, v[kN], xb[kN];
  if constexpr (M == ColMode::welford) {  // s0 = mean, s1 = m2; the count is the thread's row count
    for (int64_t r = r0; r < r1; ++r) {
      const float inv_n = 1.0f / float(r - r0 + 1);
      load_n<kN>(a + r * c + ch0, v);
#pragma unroll
      for (int k = 0; k < kN; ++k) welford_step(s0[k], s1[k], act_value<A>(v[k]), inv_n);
    }
  } else {
    for (int64_t r = r0; r < r1; ++r) {
      load_n<kN>(a + r * c + ch0, v);
      load_n<kN>(b + r * c + ch0, xb);
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        const int64_t st = M == ColMode::grad_channel_stats ? ch0 + k : r;
        s0[k] += v[k] * (act_value<A>(xb[k]) - mean[st]) * rstd[st];
        s1[k] += v[k];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    part0[blockIdx.y * c + ch0 + k] = s0[k];
    part1[blockIdx.y * c + ch0 + k] = s1[k];
  }
}

// Merges the chunks' Welford partials in chunk order (chunk k holds min(per_chunk, rows - k per_chunk) rows), then
// writes mean and rstd and updates the running statistics.
__global__ void bn_stats_combine_kernel(const float* __restrict__ part_mean, const float* __restrict__ part_m2,
                                        int64_t chunks, int64_t per_chunk, int64_t c, int64_t rows, float eps,
                                        float* __restrict__ mean, float* __restrict__ rstd, float* running_mean,
                                        float* running_var, bool update, float momentum) {
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= c) return;
  Welford w;
  for (int64_t k = 0; k < chunks; ++k) {
    const float n = float(min(per_chunk, rows - k * per_chunk));
    w = welford_merge(w, Welford{n, part_mean[k * c + ch], part_m2[k * c + ch]});
  }
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
  const int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (ch >= c) return;
  float s0 = 0.f, s1 = 0.f;
  for (int64_t k = 0; k < chunks; ++k) {
    s0 += part0[k * c + ch];
    s1 += part1[k * c + ch];
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

// BatchNorm's elementwise passes: y = xhat gamma + beta (+ residual) with xhat from act(x), and the training / eval
// dx (times act'(x)). Element i of (rows, C) is channel i % C. kN = 1 runs element by element, kN = Pack<T>::kN
// takes whole packs (C % kN == 0, aligned pointers: a pack never crosses a row).
template <class T, int kN, NormAct A>
__global__ void batchnorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                         const T* __restrict__ beta, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, const T* __restrict__ residual,
                                         T* __restrict__ y, int64_t n, int64_t c) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < n / kN; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p * kN, ch0 = i % c;
    float v[kN], r[kN] = {};
    load_n<kN>(x + i, v);
    if (residual != nullptr) load_n<kN>(residual + i, r);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t ch = ch0 + k;
      v[k] = (act_value<A>(v[k]) - mean[ch]) * rstd[ch] * widen(gamma[ch]) + widen(beta[ch]) + r[k];
    }
    store_n<kN>(y + i, v);
  }
}

template <class T, int kN, NormAct A>
__global__ void batchnorm_backward_dx_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                             const T* __restrict__ gamma, const float* __restrict__ mean,
                                             const float* __restrict__ rstd, const float* __restrict__ sum_gx,
                                             const float* __restrict__ sum_g, T* __restrict__ dx, int64_t n, int64_t c,
                                             float inv_rows, bool training) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < n / kN; p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p * kN, ch0 = i % c;
    float d[kN], xv[kN] = {};
    load_n<kN>(dy + i, d);
    if (training || A != NormAct::none) load_n<kN>(x + i, xv);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t ch = ch0 + k;
      const float g = widen(gamma[ch]) * rstd[ch];
      if (!training) {
        d[k] = g * d[k];
      } else {
        const float xhat = (act_value<A>(xv[k]) - mean[ch]) * rstd[ch];
        d[k] = g * (d[k] - sum_g[ch] * inv_rows - xhat * sum_gx[ch] * inv_rows);
      }
      if constexpr (A != NormAct::none) d[k] *= act_grad<A>(xv[k]);
    }
    store_n<kN>(dx + i, d);
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

unsigned channel_blocks(int64_t c) { return unsigned((c + kColThreads - 1) / kColThreads); }

template <class T, ColMode M, NormAct A = NormAct::none>
void launch_column_partial(const T* a, const T* b, const float* mean, const float* rstd, const NormParams& p,
                           float* part0, float* part1, cudaStream_t s) {
  constexpr int kN = cuda::Pack<T>::kN;
  const unsigned chunks = unsigned(chunk_count(p.rows));
  if (p.c % kN == 0 && cuda::packs_ok(a, b))
    column_partial_kernel<T, M, A, kN><<<dim3(channel_blocks(p.c / kN), chunks), kColThreads, 0, s>>>(
        a, b, mean, rstd, p.rows, p.c, rows_per_chunk(p.rows), part0, part1);
  else
    column_partial_kernel<T, M, A, 1><<<dim3(channel_blocks(p.c), chunks), kColThreads, 0, s>>>(
        a, b, mean, rstd, p.rows, p.c, rows_per_chunk(p.rows), part0, part1);
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

// The elementwise BatchNorm passes, on packs when C and the pointers allow (batchnorm_forward_kernel).
template <class T, NormAct A>
void launch_bn_forward(const T* x, const T* gamma, const T* beta, const float* mean, const float* rstd,
                       const T* residual, T* y, const NormParams& p, cudaStream_t s) {
  const int64_t n = p.rows * p.c;
  constexpr int kN = cuda::Pack<T>::kN;
  if (p.c % kN == 0 && cuda::packs_ok(x, residual, y))
    batchnorm_forward_kernel<T, kN, A>
        <<<grid_for(n / kN, kElemBlock, 32768), kElemBlock, 0, s>>>(x, gamma, beta, mean, rstd, residual, y, n, p.c);
  else
    batchnorm_forward_kernel<T, 1, A>
        <<<grid_for(n, kElemBlock), kElemBlock, 0, s>>>(x, gamma, beta, mean, rstd, residual, y, n, p.c);
  CNN_CHECK_LAUNCH("batchnorm_forward");
}

template <class T, NormAct A>
void launch_bn_backward_dx(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, const Ws& w,
                           T* dx, const NormParams& p, bool training, cudaStream_t s) {
  const int64_t n = p.rows * p.c;
  constexpr int kN = cuda::Pack<T>::kN;
  const float inv_rows = 1.0f / float(p.rows);
  if (p.c % kN == 0 && cuda::packs_ok(dy, x, dx))
    batchnorm_backward_dx_kernel<T, kN, A><<<grid_for(n / kN, kElemBlock, 32768), kElemBlock, 0, s>>>(
        dy, x, gamma, mean, rstd, w.sum0, w.sum1, dx, n, p.c, inv_rows, training);
  else
    batchnorm_backward_dx_kernel<T, 1, A><<<grid_for(n, kElemBlock), kElemBlock, 0, s>>>(
        dy, x, gamma, mean, rstd, w.sum0, w.sum1, dx, n, p.c, inv_rows, training);
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
  grad_combine_kernel<T><<<channel_blocks(p.c), kColThreads, 0, s>>>(w.part0, w.part1, chunk_count(p.rows), p.c, w.sum0,
                                                                     w.sum1, dgamma, dbeta);
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
  bn_stats_combine_kernel<<<channel_blocks(p.c), kColThreads, 0, s>>>(
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
    grad_combine_kernel<T><<<channel_blocks(p.c), kColThreads, 0, s>>>(w.part0, w.part1, chunk_count(p.rows), p.c,
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

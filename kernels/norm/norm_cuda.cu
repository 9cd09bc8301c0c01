// CUDA BatchNorm: per-channel statistics in one Welford pass over fixed row chunks, gradient column sums likewise,
// ordered combines (norm_cuda_common.cuh), elementwise apply; kernels, launchers, then the exported entries (and the
// workspace size LayerNorm shares). FP32 arithmetic for f32 and f16 data.
#include "kernels/norm/norm_cuda_common.cuh"

namespace cnn::kernels {

namespace {

using namespace norm_detail;

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

unsigned channel_blocks(int64_t c) { return unsigned((c + kColThreads - 1) / kColThreads); }

constexpr int kElemBlock = 256;  // threads of the elementwise kernels

// Merges the chunks' Welford partials (chunk k holds min(per_chunk, rows - k per_chunk) rows), then writes mean and
// rstd and updates the running statistics.
__global__ void __launch_bounds__(kCombineThreads)
    bn_stats_combine_kernel(const float* __restrict__ part_mean, const float* __restrict__ part_m2, int64_t chunks,
                            int64_t per_chunk, int64_t c, int64_t rows, float eps, float* __restrict__ mean,
                            float* __restrict__ rstd, float* running_mean, float* running_var, bool update,
                            float momentum) {
  __shared__ Welford partial[kCombineSplit][32];
  const int64_t ch = combine_column();
  Welford w;
  if (ch < c) {
    fold_chunk_range<2>({part_mean, part_m2}, chunks, c, ch, [&](int64_t k, const float(&v)[2]) {
      w = welford_merge(w, Welford{float(min(per_chunk, rows - k * per_chunk)), v[0], v[1]});
    });
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

// Launches an elementwise BatchNorm kernel (kN-channel packs) over p's rows: args..., then its RowWalk.
template <int kN, class Kernel, class... Args>
void launch_row_walk(Kernel kernel, const NormParams& p, cudaStream_t s, Args... args) {
  const int64_t packs = p.c / kN;
  const RowWalk w{p.rows, p.c, std::clamp<int64_t>(kElemThreads / packs, 1, p.rows)};
  kernel<<<unsigned((packs * w.row_step + kElemBlock - 1) / kElemBlock), kElemBlock, 0, s>>>(args..., w);
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

}  // namespace

size_t norm_workspace_bytes(const NormParams& p) {
  const int64_t rows = std::max<int64_t>(p.rows, 1);
  const int64_t chunks = std::max(chunk_count(rows), chunk_count(rows, kLnMinChunkRows));
  return size_t(2 * chunks * p.c + 2 * p.c) * sizeof(float);
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

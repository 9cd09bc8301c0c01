// Normalisation kernels on channels-last data x (rows, C): LayerNorm over C per row, BatchNorm over rows per
// channel. xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps), biased variance; y = xhat * gamma + beta.
// CPU (this header): f32 / f64, statistics accumulated in FP64 and stored in T; per-channel sums use a fixed
// row split (deterministic for any thread count). CUDA twins in norm_cuda.h (f32 / f16, FP32 statistics).
#pragma once

#include <cstdint>

namespace cnn::kernels {

struct NormParams {
  int64_t rows = 0;  // N*H*W (or any leading extent product)
  int64_t c = 0;     // channels
  double eps = 1e-6;
};

// ---- LayerNorm: mean, rstd per row (rows) ----------------------------------------------------------------------
void layernorm_forward_cpu(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                           const NormParams& p);
void layernorm_forward_cpu(const double* x, const double* gamma, const double* beta, double* y, double* mean,
                           double* rstd, const NormParams& p);
// dx = rstd * (g - mean_C(g) - xhat * mean_C(g * xhat)), g = dy * gamma; dgamma = sum_rows dy * xhat,
// dbeta = sum_rows dy. dgamma / dbeta may be null (not needed).
void layernorm_backward_cpu(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                            float* dx, float* dgamma, float* dbeta, const NormParams& p);
void layernorm_backward_cpu(const double* dy, const double* x, const double* gamma, const double* mean,
                            const double* rstd, double* dx, double* dgamma, double* dbeta, const NormParams& p);

// ---- BatchNorm: mean, rstd per channel (C) ---------------------------------------------------------------------
// Activation the fused CUDA BatchNorm applies to its input first, y = BN(act(x)) (ConvMixer's act -> BN): relu, or
// exact GELU 0.5 x (1 + erf(x / sqrt(2))). act(x) is never stored; backward recomputes it and its derivative.
enum class NormAct { none, relu, gelu };
struct BatchNormUpdate {
  bool update_running = false;  // training: running = (1 - momentum) running + momentum * batch statistic
  double momentum = 0.1;        // running_var takes the unbiased variance var * rows / (rows - 1)
};
// Training statistics of the batch; updates running_mean / running_var when asked.
void batchnorm_stats_cpu(const float* x, float* mean, float* rstd, float* running_mean, float* running_var,
                         const NormParams& p, const BatchNormUpdate& u);
void batchnorm_stats_cpu(const double* x, double* mean, double* rstd, double* running_mean, double* running_var,
                         const NormParams& p, const BatchNormUpdate& u);
// Eval statistics: mean = running_mean, rstd = 1 / sqrt(running_var + eps).
void batchnorm_eval_stats_cpu(const float* running_mean, const float* running_var, float* mean, float* rstd,
                              const NormParams& p);
void batchnorm_eval_stats_cpu(const double* running_mean, const double* running_var, double* mean, double* rstd,
                              const NormParams& p);
void batchnorm_forward_cpu(const float* x, const float* gamma, const float* beta, const float* mean,
                           const float* rstd, float* y, const NormParams& p);
void batchnorm_forward_cpu(const double* x, const double* gamma, const double* beta, const double* mean,
                           const double* rstd, double* y, const NormParams& p);
// training: dx = gamma rstd (dy - mean_rows(dy) - xhat mean_rows(dy xhat)); eval: dx = gamma rstd dy.
// dgamma = sum_rows dy xhat, dbeta = sum_rows dy (always computed; dx may be null).
void batchnorm_backward_cpu(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                            float* dx, float* dgamma, float* dbeta, const NormParams& p, bool training);
void batchnorm_backward_cpu(const double* dy, const double* x, const double* gamma, const double* mean,
                            const double* rstd, double* dx, double* dgamma, double* dbeta, const NormParams& p,
                            bool training);

}  // namespace cnn::kernels

// CUDA LayerNorm / BatchNorm (same math as norm.h): T = float or __half for x, y, gamma, beta and their
// gradients; statistics (mean, rstd, running_mean, running_var) are FP32 and all arithmetic is FP32.
// Per-channel sums are deterministic: fixed row chunks write partials to `workspace`, an ordered pass combines.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/norm/norm.h"

namespace cnn::kernels {

// Bytes of FP32 workspace for the per-channel reductions of layernorm_backward / batchnorm_*.
size_t norm_workspace_bytes(const NormParams& p);

template <class T>
void layernorm_forward_cuda(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd,
                            const NormParams& p, cudaStream_t stream);
// dx, dgamma, dbeta may each be null.
template <class T>
void layernorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, float* workspace, cudaStream_t stream);

template <class T>
void batchnorm_stats_cuda(const T* x, float* mean, float* rstd, float* running_mean, float* running_var,
                          const NormParams& p, const BatchNormUpdate& u, float* workspace, cudaStream_t stream);
void batchnorm_eval_stats_cuda(const float* running_mean, const float* running_var, float* mean, float* rstd,
                               const NormParams& p, cudaStream_t stream);
template <class T>
void batchnorm_forward_cuda(const T* x, const T* gamma, const T* beta, const float* mean, const float* rstd, T* y,
                            const NormParams& p, cudaStream_t stream);
// dgamma, dbeta always written; dx may be null.
template <class T>
void batchnorm_backward_cuda(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, T* dx,
                             T* dgamma, T* dbeta, const NormParams& p, bool training, float* workspace,
                             cudaStream_t stream);

// Fused BatchNorm on act(x) (norm.h NormAct), plus an optional residual: y = BN(act(x)) + residual. Statistics of
// act(x) in one Welford pass; backward: dgamma, dbeta from (dy, act(x)), dx = act'(x) * (BatchNorm's dx). With
// NormAct::none and no residual these are the plain BatchNorm entries above. residual and dx may be null.
template <class T>
void batchnorm_act_stats_cuda(const T* x, NormAct act, float* mean, float* rstd, float* running_mean,
                              float* running_var, const NormParams& p, const BatchNormUpdate& u, float* workspace,
                              cudaStream_t stream);
template <class T>
void batchnorm_act_forward_cuda(const T* x, NormAct act, const T* gamma, const T* beta, const float* mean,
                                const float* rstd, const T* residual, T* y, const NormParams& p, cudaStream_t stream);
template <class T>
void batchnorm_act_backward_cuda(const T* dy, const T* x, NormAct act, const T* gamma, const float* mean,
                                 const float* rstd, T* dx, T* dgamma, T* dbeta, const NormParams& p, bool training,
                                 float* workspace, cudaStream_t stream);

}  // namespace cnn::kernels

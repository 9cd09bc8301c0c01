// BatchNorm of act(x) plus an optional residual, y = BN(act(x)) + residual, as one differentiable op (ConvMixer's
// act -> BatchNorm [-> + x]). CUDA runs the fused kernels of kernels/norm/norm_cuda.h: act(x) is never stored, the
// statistics take one Welford pass, y one pass, and backward one pass of column sums and one for dx. The CPU runs
// the separate ops' kernels in sequence (the reference). Statistics, running-statistics updates and gradients as
// ops::batch_norm (layers/functional.h) applied to act(x); the residual's gradient is dy.
#pragma once

#include "core/autograd.h"
#include "core/tensor.h"
#include "kernels/norm/norm.h"
#include "layers/layers.h"
#include "layers/backend/backend.h"

namespace cnn {

namespace ops {
// act: relu or gelu (none is ops::batch_norm). residual: x's shape and dtype, or undefined.
Tensor batch_norm_act(Tape* tape, const Tensor& x, kernels::NormAct act, const Tensor& gamma, const Tensor& beta,
                      Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                      const Tensor& residual);
}  // namespace ops

// The BatchNorm2d module `bn` applied to act(x) (+ residual) as one op: training mode and the batch count as
// BatchNorm2d::forward.
Tensor batch_norm_act(const ForwardContext& ctx, BatchNorm2d& bn, const Tensor& x, kernels::NormAct act,
                      const Tensor& residual = Tensor());

namespace backend::cuda {
// CUDA side (contiguous validated inputs; errors without CUDA). stats hold (C) f32 tensors to fill when training.
void batch_norm_act_stats(const Tensor& x, kernels::NormAct act, Tensor& running_mean, Tensor& running_var,
                          double momentum, double eps, NormStats& stats);
void batch_norm_act_apply(const Tensor& x, kernels::NormAct act, const Tensor& gamma, const Tensor& beta,
                          const NormStats& stats, const Tensor& residual, Tensor& y);
void batch_norm_act_backward(const Tensor& dy, const Tensor& x, kernels::NormAct act, const Tensor& gamma,
                             const NormStats& stats, bool training, NormGrads& grads);
}  // namespace backend::cuda

}  // namespace cnn

// Differentiable ops on Tensor. Each takes the Tape explicitly: a null tape, a NoGradGuard or inputs that do not
// require grad mean no recording. Inputs share dtype and device; f32 / f64 on CPU, f32 / f16 on CUDA with FP32
// accumulation and FP32 statistics. Activations are NHWC. The forward and backward run on the inputs' device
// backend (layers/backend/backend.h).
#pragma once

#include <cstdint>
#include <functional>

#include "core/autograd.h"
#include "core/tensor.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::ops {

// ---- elementwise and reductions ----------------------------------------------------------------------------------
// Broadcasting: b of shape (C) against a of shape (..., C), or b with one element.
Tensor add(Tape* tape, const Tensor& a, const Tensor& b);  // a + b
Tensor mul(Tape* tape, const Tensor& a, const Tensor& b);  // a * b
Tensor scale(Tape* tape, const Tensor& x, double alpha);   // alpha * x

Tensor sum(Tape* tape, const Tensor& x);               // all elements -> shape ()
Tensor mean(Tape* tape, const Tensor& x);              // all elements -> shape ()
Tensor sum_except_last(Tape* tape, const Tensor& x);   // (..., C) -> (C)
Tensor mean_except_last(Tape* tape, const Tensor& x);  // (..., C) -> (C)

Tensor relu(Tape* tape, const Tensor& x);

// GELU, exact form: y = x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))).
Tensor gelu(Tape* tape, const Tensor& x);

// Reshape (copying first when x is not contiguous); one extent may be -1.
Tensor reshape(Tape* tape, const Tensor& x, const Shape& shape);

// Elementwise conversion that gradients flow through (f16 <-> f32 on the mixed-precision path).
Tensor cast(Tape* tape, const Tensor& x, DType dtype);

// ---- matrix products ---------------------------------------------------------------------------------------------
// a (M, K) @ b (K, N) -> (M, N)
Tensor matmul(Tape* tape, const Tensor& a, const Tensor& b);
// PyTorch Linear: x (M, K), w (N, K), bias (N) or undefined -> y = x w^T + bias, (M, N). x may also be
// (..., K) (e.g. NHWC activations: a 1x1 conv); it is flattened to (M, K) and the result reshaped to (..., N).
Tensor linear(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias);
// The same over the last axis of x (..., K) with at least 2 axes, with the weight-shape error phrased for layers.
Tensor linear_nd(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias);

// ---- loss --------------------------------------------------------------------------------------------------------
// Mean softmax cross-entropy with label smoothing (kernels/loss/softmax_xent.h): logits (B, K), labels (B) i64.
// Returns a () loss, f32 for f32/f16 logits (FP32 math), f64 for f64 logits.
Tensor softmax_cross_entropy(Tape* tape, const Tensor& logits, const Tensor& labels, double label_smoothing = 0.0);

// ---- convolution -------------------------------------------------------------------------------------------------
// Dense convolution, groups = 1, symmetric padding: x (N, H, W, C), w (K, R, S, C), bias (K) or undefined
// -> y (N, OH, OW, K), OH = (H + 2 pad_h - R) / stride_h + 1 (cross-correlation, as PyTorch).
struct Conv2dGeometry {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
};
Tensor conv2d(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dGeometry& g);

// Depthwise convolution (Flash-DWC): x (N, H, W, C), w (FH, FW, C), bias (C) or undefined -> (N, OH, OW, C) with
// the output-size formula of kernels/dwconv/dwconv.h. f16 on CUDA runs the FP16 Flash-DWC-T kernels; bfc_accum
// selects their backward-filter accumulation (f32 and f64 accumulate in FP32 / FP64 whatever it says).
struct DwGeometry {
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};
// filter_grad, when set, computes dW (FH, FW, C) from (x, dY) in place of the backend (analysis tools: FP16
// emulation on the CPU, gradient probes); it must return dW in w's dtype and device.
using DwFilterGrad = std::function<Tensor(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                                          dwconv::BfcAccum accum)>;
Tensor depthwise_conv2d(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias, const DwGeometry& g,
                        dwconv::BfcAccum bfc_accum = dwconv::BfcAccum::fp32, const DwFilterGrad& filter_grad = {});

// ---- normalisation -----------------------------------------------------------------------------------------------
// LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance, FP32 statistics
// (FP64 for f64). gamma, beta (C), same dtype as x.
Tensor layer_norm(Tape* tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);

// BatchNorm over all but the last axis of x (N, H, W, C) (per channel over N*H*W). gamma, beta: (C), x's dtype.
// running_mean / running_var: (C), f32 (f64 when x is f64), contiguous, updated in place when training:
//   training: normalise with the batch mean and biased variance; running = (1 - momentum) running + momentum *
//             batch (unbiased variance for running_var).
//   eval:     normalise with the running statistics (y is affine in x).
Tensor batch_norm(Tape* tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, double momentum, double eps);

// ---- stochastic depth and pooling --------------------------------------------------------------------------------
// y[n, ...] = x[n, ...] * scale[n]: scale (N) is a constant (no gradient), x's dtype (f32 for f16 x).
Tensor sample_scale(Tape* tape, const Tensor& x, const Tensor& scale);

// Per-sample keep scales of stochastic depth: scale[n] = (u_n < keep) / keep with u_n uniform in [0, 1) from
// Philox key `seed`, counter step * 2^32 + layer_id * 2^20 + n (N < 2^20, layer_id < 2^12). Same values on CPU and
// GPU. dtype f32 (f64 when requested), on `device`.
Tensor drop_path_scales(int64_t n, double drop_prob, uint64_t seed, uint64_t step, uint32_t layer_id, DType dtype,
                        Device device);
// Stochastic depth: sample_scale(x, drop_path_scales(...)); the identity when drop_prob == 0.
Tensor drop_path(Tape* tape, const Tensor& x, double drop_prob, uint64_t seed, uint64_t step, uint32_t layer_id);

// (N, H, W, C) -> (N, C), mean over H*W (FP32 accumulation on the GPU, FP64 on the CPU).
Tensor global_avg_pool(Tape* tape, const Tensor& x);

}  // namespace cnn::ops

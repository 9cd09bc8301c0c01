// Tensor-level kernels of the CNN layers, without autograd: validate shapes and dtypes, allocate outputs on the
// inputs' device and dispatch to the CPU kernels (f32, f64) or CUDA (f32, f16). layers/nn_ops.h builds on these.
// Statistics tensors (mean, rstd, running stats) are f32 (f64 for f64 data).
#pragma once

#include "core/tensor.h"
#include "kernels/conv/conv2d.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::backend {

// ---- dense convolution (kernels/conv/conv2d.h) -----------------------------------------------------------------
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p);
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p);
Tensor conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p);

// ---- depthwise convolution (Flash-DWC) ---------------------------------------------------------------------------
Tensor dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p);
Tensor dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p);
// accum selects the FP16 kernels' backward-filter accumulation (f16 tensors on CUDA); other dtypes accumulate in
// FP32 (f32) or FP64 (f64) whatever it says.
Tensor dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                              dwconv::BfcAccum accum = dwconv::BfcAccum::fp32);

// ---- normalisation (kernels/norm/norm.h); x is viewed as (rows, C) ------------------------------------------------
struct NormStats {
  Tensor mean;  // LayerNorm: (rows); BatchNorm: (C)
  Tensor rstd;
};
struct NormGrads {
  Tensor dx, dgamma, dbeta;  // undefined where not requested
};
Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, NormStats& stats);
NormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                             bool need_dx, bool need_params);
// Batch statistics; updates running_mean / running_var in place when update_running.
NormStats batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum,
                                double eps, bool update_running);
NormStats batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps);
Tensor batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats);
NormGrads batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                             bool training, bool need_dx);

// ---- pointwise / pooling (kernels/pointwise/pointwise.h) ---------------------------------------------------------
Tensor gelu_forward(const Tensor& x);
Tensor gelu_backward(const Tensor& x, const Tensor& dy);
Tensor sample_scale(const Tensor& x, const Tensor& scale);  // scale (N): f32 (f64 for f64 x)
Tensor gap_forward(const Tensor& x);                          // (N, H, W, C) -> (N, C)
Tensor gap_backward(const Tensor& dy, const Shape& x_shape);
Tensor drop_scales(const Tensor& uniforms, double keep, DType dtype);  // uniforms (N) f32

namespace cuda {
// CUDA implementations on contiguous, validated inputs and preallocated outputs (errors without CUDA).
void conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p, Tensor& y);
void conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p, Tensor& dx);
void conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p, Tensor& dw);
void dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p, Tensor& y);
void dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p, Tensor& dx);
void dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum accum,
                            Tensor& dw);
void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                       NormStats& stats);
void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                        NormGrads& grads);
void batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                           bool update_running, NormStats& stats);
void batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps, NormStats& stats);
void batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats, Tensor& y);
void batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats, bool training,
                        NormGrads& grads);
void gelu_forward(const Tensor& x, Tensor& y);
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx);
void sample_scale(const Tensor& x, const Tensor& scale, Tensor& y);
void gap_forward(const Tensor& x, Tensor& y);
void gap_backward(const Tensor& dy, Tensor& dx);
void drop_scales(const Tensor& uniforms, double keep, Tensor& scale);
}  // namespace cuda

}  // namespace cnn::backend

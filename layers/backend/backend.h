// Tensor-level kernels without autograd, the forward and backward halves of the ops in layers/functional.h. Each
// entry point (backend.cpp) validates what the op layer does not, makes its inputs contiguous, allocates its outputs
// on the inputs' device and runs that device's DeviceBackend: cpu.cpp (f32, f64) or cuda.cpp (f32, f16 with FP32
// math; nocuda.cpp in builds without CUDA). Statistics tensors (mean, rstd, running stats) are f32 (f64 for f64 data).
#pragma once

#include <utility>

#include "core/tensor.h"
#include "kernels/conv/conv2d.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/matmul/gemm.h"

namespace cnn::backend {

struct NormStats {
  Tensor mean;  // LayerNorm: (rows); BatchNorm: (C)
  Tensor rstd;
};
struct NormGrads {
  Tensor dx, dgamma, dbeta;  // undefined where not requested
};
// dtype of the statistics and per-sample scales that go with data of dtype t.
inline DType stat_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// ---- elementwise, reductions, GEMM, loss (kernels/elementwise, reduce, matmul, loss) -----------------------------
// y = a (op) b, b broadcast cyclically (b.numel() divides a.numel()); a and b of one dtype and device.
Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b);
// y = a (op) b written into y (may be a itself); y contiguous with a's shape.
void binary_into(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y);
Tensor scale(const Tensor& x, double alpha);
// Tensor of `shape` whose element i is alpha * v[i % v.numel()].
Tensor broadcast(const Tensor& v, const Shape& shape, double alpha);
Tensor relu_forward(const Tensor& x);
Tensor relu_backward(const Tensor& y, const Tensor& dy);
// alpha * sum of all elements, shape ().
Tensor sum_all(const Tensor& x, double alpha);
// alpha * sum over all but the last axis, shape (C).
Tensor sum_rows(const Tensor& x, double alpha);
// op(a) op(b) for 2-D a, b (row-major, gemm.h semantics), plus `bias` (N values) on every row when defined.
Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const Tensor& bias = Tensor());
// A linear layer's y = x w^T + bias (x (M, K), w (N, K)) and the x its backward reads: x itself, or the zero-padded
// (M, KP >= K) copy the backend ran the GEMM on, which the backward then takes without padding x again.
struct LinearForward {
  Tensor y, x_saved;
};
LinearForward linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias);
// Its dX = dY W and dW = dY^T X (dy (M, N); x_saved from linear_forward) in one call, so that a backend can share
// work between the two GEMMs.
std::pair<Tensor, Tensor> linear_backward(const Tensor& dy, const Tensor& x_saved, const Tensor& w);
// dW alone (w needs no dX): dY^T X from x_saved, (N, K).
Tensor linear_backward_weight(const Tensor& dy, const Tensor& x_saved, int64_t k);
// (loss (), lse (B)); loss and lse are f32 for f32/f16 logits, f64 for f64 logits.
std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits, const Tensor& labels, double label_smoothing);
Tensor softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                             double label_smoothing);

// ---- dense and depthwise convolution (kernels/conv, kernels/dwconv) ----------------------------------------------
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p);
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p);
Tensor conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p);
Tensor dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p);
Tensor dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p);
// accum selects the FP16 kernels' backward-filter accumulation (f16 tensors on CUDA); other dtypes accumulate in
// FP32 (f32) or FP64 (f64) whatever it says.
Tensor dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                              dwconv::BfcAccum accum = dwconv::BfcAccum::fp32);
// dX and dW of one convolution, as dwconv_backward_data and dwconv_backward_filter give them: one call lets a
// channel-padded plan pad dY once for both.
std::pair<Tensor, Tensor> dwconv_backward(const Tensor& x, const Tensor& dy, const Tensor& w,
                                          const dwconv::DwconvParams& p, dwconv::BfcAccum accum);
// The same dW in FP32 whatever x's dtype: the FP16 kernels' FP32 result before dwconv_backward_filter rounds it to
// f16 (analysis tools compare accumulation modes on it).
Tensor dwconv_backward_filter_f32(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                                  dwconv::BfcAccum accum);

// ---- normalisation (kernels/norm); x is viewed as (rows, C) ------------------------------------------------------
Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, NormStats& stats);
NormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                             bool need_dx, bool need_params);
// Batch statistics; updates running_mean / running_var in place when update_running.
NormStats batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                                bool update_running);
NormStats batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps);
Tensor batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats);
NormGrads batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                             bool training, bool need_dx);

// ---- pointwise and pooling (kernels/pointwise) -------------------------------------------------------------------
Tensor gelu_forward(const Tensor& x);
Tensor gelu_backward(const Tensor& x, const Tensor& dy);
Tensor sample_scale(const Tensor& x, const Tensor& scale);  // scale (N): f32 (f64 for f64 x)
Tensor gap_forward(const Tensor& x);                        // (N, H, W, C) -> (N, C)
Tensor gap_backward(const Tensor& dy, const Shape& x_shape);
Tensor drop_scales(const Tensor& uniforms, double keep, DType dtype);  // uniforms (N) f32

// The kernels of one device, on the contiguous, validated inputs and the outputs the entry points above allocated.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual void binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) = 0;
  virtual void scale(const Tensor& x, double alpha, Tensor& y) = 0;
  virtual void broadcast(const Tensor& v, double alpha, Tensor& y) = 0;
  virtual void relu_forward(const Tensor& x, Tensor& y) = 0;
  virtual void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;
  virtual void sum_all(const Tensor& x, double alpha, Tensor& y) = 0;
  virtual void sum_rows(const Tensor& x, double alpha, Tensor& y) = 0;
  // c = op(a) op(b); with a defined bias also c += bias on every row where the backend fuses it: returns whether
  // it did (the caller adds it otherwise).
  virtual bool gemm(const Tensor& a, const Tensor& b, const kernels::GemmParams& p, Tensor& c, const Tensor& bias) = 0;
  // A linear layer's forward and both backward GEMMs (backend.h, linear_forward / linear_backward) through the
  // functions above; a backend that pads operands, or can share work between the GEMMs, overrides them. The dW it
  // returns may have x_saved's KP columns (the caller keeps the first K).
  virtual LinearForward linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias);
  virtual std::pair<Tensor, Tensor> linear_backward(const Tensor& dy, const Tensor& x_saved, const Tensor& w);
  virtual void softmax_xent_forward(const Tensor& logits, const Tensor& labels, double eps, Tensor& loss,
                                    Tensor& lse) = 0;
  virtual void softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                                     double eps, Tensor& dlogits) = 0;
  virtual void conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p, Tensor& y) = 0;
  virtual void conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p, Tensor& dx) = 0;
  virtual void conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p,
                                      Tensor& dw) = 0;
  virtual void dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p,
                              Tensor& y) = 0;
  virtual void dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p, Tensor& dx) = 0;
  virtual void dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                                      dwconv::BfcAccum accum, Tensor& dw) = 0;
  // Both backward ops; a backend that can share work between them overrides this.
  virtual void dwconv_backward(const Tensor& x, const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p,
                               dwconv::BfcAccum accum, Tensor& dx, Tensor& dw) {
    dwconv_backward_data(dy, w, p, dx);
    dwconv_backward_filter(x, dy, p, accum, dw);
  }
  virtual void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                                 NormStats& stats) = 0;
  virtual void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                                  NormGrads& grads) = 0;
  virtual void batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum,
                                     double eps, bool update_running, NormStats& stats) = 0;
  virtual void batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                       NormStats& stats) = 0;
  virtual void batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats,
                               Tensor& y) = 0;
  virtual void batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                                  bool training, NormGrads& grads) = 0;
  virtual void gelu_forward(const Tensor& x, Tensor& y) = 0;
  virtual void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) = 0;
  virtual void sample_scale(const Tensor& x, const Tensor& scale, Tensor& y) = 0;
  virtual void gap_forward(const Tensor& x, Tensor& y) = 0;
  virtual void gap_backward(const Tensor& dy, Tensor& dx) = 0;
  virtual void drop_scales(const Tensor& uniforms, double keep, Tensor& scale) = 0;
};

DeviceBackend& cpu_backend();
DeviceBackend& cuda_backend();  // an error naming the build in binaries built without CUDA

}  // namespace cnn::backend

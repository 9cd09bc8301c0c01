// The kernels of one device behind one interface, used only by the op layer (layers/functional.cpp), which has
// validated shapes, dtypes and devices. Each function makes its inputs contiguous, allocates its outputs on the
// inputs' device and calls kernels/. cpu.cpp runs f32 and f64; cuda.cpp f32 and f16 with FP32 math (nocuda.cpp
// stands in for it in builds without CUDA). Statistics tensors (mean, rstd, running stats) are f32 (f64 for f64 data).
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

class Backend {
 public:
  virtual ~Backend() = default;

  // ---- elementwise, reductions, GEMM, loss (kernels/elementwise, reduce, matmul, loss) -------------------------
  // y = a (op) b, b broadcast cyclically (b.numel() divides a.numel()); y contiguous with a's shape, may be a.
  virtual void binary_into(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) = 0;
  Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b) {
    Tensor y = Tensor::empty(a.shape(), a.dtype(), a.device());
    binary_into(op, a, b, y);
    return y;
  }
  virtual Tensor scale(const Tensor& x, double alpha) = 0;
  // Tensor of `shape` whose element i is alpha * v[i % v.numel()].
  virtual Tensor broadcast(const Tensor& v, const Shape& shape, double alpha) = 0;
  virtual Tensor relu_forward(const Tensor& x) = 0;
  virtual Tensor relu_backward(const Tensor& y, const Tensor& dy) = 0;
  // alpha * sum of all elements, shape ().
  virtual Tensor sum_all(const Tensor& x, double alpha) = 0;
  // alpha * sum over all but the last axis, shape (C).
  virtual Tensor sum_rows(const Tensor& x, double alpha) = 0;
  // op(a) op(b) for 2-D a, b (row-major, gemm.h semantics).
  virtual Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) = 0;
  // (loss (), lse (B)); loss and lse are f32 for f32/f16 logits, f64 for f64 logits.
  virtual std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits, const Tensor& labels,
                                                         double label_smoothing) = 0;
  // dloss: the loss gradient, one element of lse's dtype.
  virtual Tensor softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse,
                                       const Tensor& dloss, double label_smoothing) = 0;

  // ---- dense and depthwise convolution (kernels/conv, kernels/dwconv) ------------------------------------------
  virtual Tensor conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p) = 0;
  virtual Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p) = 0;
  virtual Tensor conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p) = 0;
  virtual Tensor dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias,
                                const dwconv::DwconvParams& p) = 0;
  virtual Tensor dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p) = 0;
  // accum selects the FP16 kernels' backward-filter accumulation (f16 tensors on CUDA); other dtypes accumulate in
  // FP32 (f32) or FP64 (f64) whatever it says.
  virtual Tensor dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p,
                                        dwconv::BfcAccum accum) = 0;

  // ---- normalisation (kernels/norm); x is viewed as (rows, C) ------------------------------------------------
  virtual Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                   NormStats& stats) = 0;
  virtual NormGrads layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                                       bool need_dx, bool need_params) = 0;
  // Batch statistics; updates running_mean / running_var (contiguous) in place when update_running.
  virtual NormStats batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum,
                                          double eps, bool update_running) = 0;
  virtual NormStats batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps) = 0;
  virtual Tensor batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats) = 0;
  virtual NormGrads batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                                       bool training, bool need_dx) = 0;

  // ---- pointwise and pooling (kernels/pointwise) ---------------------------------------------------------------
  virtual Tensor gelu_forward(const Tensor& x) = 0;
  virtual Tensor gelu_backward(const Tensor& x, const Tensor& dy) = 0;
  virtual Tensor sample_scale(const Tensor& x, const Tensor& scale) = 0;  // scale (N): f32 (f64 for f64 x)
  virtual Tensor gap_forward(const Tensor& x) = 0;                        // (N, H, W, C) -> (N, C)
  virtual Tensor gap_backward(const Tensor& dy, const Shape& x_shape) = 0;
  virtual Tensor drop_scales(const Tensor& uniforms, double keep, DType dtype) = 0;  // uniforms (N) f32
};

Backend& cpu_backend();
Backend& cuda_backend();  // an error naming the build in binaries built without CUDA
inline Backend& backend_for(Device device) { return device.is_cuda() ? cuda_backend() : cpu_backend(); }

// ---- helpers both backends share ---------------------------------------------------------------------------------
inline Tensor empty_like(const Tensor& x, const Shape& shape) { return Tensor::empty(shape, x.dtype(), x.device()); }
inline DType stat_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }
// GEMM of contiguous row-major 2-D a, b into a contiguous (M, N) output.
inline kernels::GemmParams gemm_params(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  kernels::GemmParams p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = trans_a ? a.size(1) : a.size(0), p.n = trans_b ? b.size(0) : b.size(1), p.k = trans_a ? a.size(0) : a.size(1);
  p.lda = a.size(1), p.ldb = b.size(1), p.ldc = p.n;
  return p;
}
// Gradient buffers of a norm over x (rows, C): dx of x's shape if need_dx, dgamma and dbeta (C) if need_params.
inline NormGrads empty_norm_grads(const Tensor& x, bool need_dx, bool need_params) {
  NormGrads g;
  if (need_dx) g.dx = empty_like(x, x.shape());
  if (need_params) {
    g.dgamma = empty_like(x, {x.size(-1)});
    g.dbeta = empty_like(x, {x.size(-1)});
  }
  return g;
}

}  // namespace cnn::backend

// The device-neutral half of the backend: checks, contiguous inputs, outputs allocated on the inputs' device, then
// the kernels of that device (cpu.cpp or cuda.cpp). Shape checks with user-facing messages live in the op layer.
#include "layers/backend/backend.h"

namespace cnn::backend {

namespace {

DeviceBackend& on(const Tensor& t) { return t.device().is_cuda() ? cuda_backend() : cpu_backend(); }

Tensor like(const Tensor& x, const Shape& shape) { return Tensor::empty(shape, x.dtype(), x.device()); }

void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  CNN_CHECK(a.defined() && b.defined(), op, ": undefined input");
  CNN_CHECK(a.dtype() == b.dtype(), op, ": inputs must share a dtype, got ", a.str(), " and ", b.str());
  CNN_CHECK(a.device() == b.device(), op, ": inputs must be on one device, got ", a.str(), " and ", b.str());
}

void check_xent(const Tensor& logits, const Tensor& labels, double eps) {
  CNN_CHECK(logits.defined() && labels.defined(), "softmax_cross_entropy: undefined input");
  CNN_CHECK(logits.dim() == 2, "softmax_cross_entropy: expected logits (B, K), got ", logits.str());
  CNN_CHECK(labels.dtype() == DType::i64, "softmax_cross_entropy: expected i64 labels, got ", labels.str());
  CNN_CHECK(labels.dim() == 1 && labels.size(0) == logits.size(0), "softmax_cross_entropy: expected labels (",
            logits.size(0), "), got ", labels.str());
  CNN_CHECK(labels.device() == logits.device(), "softmax_cross_entropy: labels on ", labels.device().str(),
            ", logits on ", logits.device().str());
  CNN_CHECK(eps >= 0.0 && eps < 1.0, "softmax_cross_entropy: label smoothing must be in [0, 1), got ", eps);
}

// C of a norm's input viewed as (rows, C), after checking that it has elements.
int64_t norm_channels(const Tensor& x) {
  CNN_CHECK(x.dim() >= 1 && x.size(-1) >= 1 && x.numel() >= 1, "norm: expected (..., C) with elements, got ", x.str());
  return x.size(-1);
}

}  // namespace

// ---- elementwise, reductions, GEMM, loss ---------------------------------------------------------------------------

void binary_into(kernels::BinaryOp op, const Tensor& a_in, const Tensor& b_in, Tensor& y) {
  const char* name = op == kernels::BinaryOp::add ? "add" : "mul";
  check_pair(name, a_in, b_in);
  CNN_CHECK(b_in.numel() >= 1 && a_in.numel() % b_in.numel() == 0, name, ": b ", b_in.str(),
            " does not broadcast against a ", a_in.str());
  CNN_CHECK(y.shape() == a_in.shape() && y.dtype() == a_in.dtype() && y.device() == a_in.device() && y.is_contiguous(),
            name, ": output ", y.str(), " must be contiguous and match a ", a_in.str());
  on(a_in).binary(op, a_in.contiguous(), b_in.contiguous(), y);
}

Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor y = like(a, a.shape());
  binary_into(op, a, b, y);
  return y;
}

Tensor scale(const Tensor& x_in, double alpha) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  on(x).scale(x, alpha, y);
  return y;
}

Tensor broadcast(const Tensor& v_in, const Shape& shape, double alpha) {
  const Tensor v = v_in.contiguous();
  Tensor y = like(v, shape);
  CNN_CHECK(v.numel() >= 1 && y.numel() % v.numel() == 0, "broadcast: ", v.str(), " does not tile shape ",
            shape_str(shape));
  on(v).broadcast(v, alpha, y);
  return y;
}

Tensor relu_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  on(x).relu_forward(x, y);
  return y;
}

Tensor relu_backward(const Tensor& y_in, const Tensor& dy_in) {
  check_pair("relu_backward", y_in, dy_in);
  CNN_CHECK(y_in.shape() == dy_in.shape(), "relu_backward: dy ", dy_in.str(), " does not match y ", y_in.str());
  const Tensor y = y_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = like(y, y.shape());
  on(y).relu_backward(y, dy, dx);
  return dx;
}

Tensor sum_all(const Tensor& x_in, double alpha) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, {});
  on(x).sum_all(x, alpha, y);
  return y;
}

Tensor sum_rows(const Tensor& x_in, double alpha) {
  CNN_CHECK(x_in.dim() >= 1 && x_in.size(-1) >= 1,
            "sum over all but the last axis: expected (..., C) with C >= 1, got ", x_in.str());
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, {x.size(-1)});
  on(x).sum_rows(x, alpha, y);
  return y;
}

Tensor gemm(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b, const Tensor& bias) {
  check_pair("matmul", a_in, b_in);
  CNN_CHECK(a_in.dim() == 2 && b_in.dim() == 2, "matmul: expected 2-D operands, got ", a_in.str(), " and ", b_in.str());
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t kb = trans_b ? b.size(1) : b.size(0), n = trans_b ? b.size(0) : b.size(1);
  CNN_CHECK(k == kb, "matmul: inner extents differ: op(a) is (", m, ", ", k, "), op(b) is (", kb, ", ", n, ") from ",
            a.str(), " and ", b.str());
  kernels::GemmParams p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = m, p.n = n, p.k = k;
  p.lda = a.size(1), p.ldb = b.size(1), p.ldc = n;
  Tensor c = like(a, {m, n});
  if (bias.defined()) {
    check_pair("matmul", a, bias);
    CNN_CHECK(bias.dim() == 1 && bias.size(0) == n, "matmul: expected a bias of ", n, " values, got ", bias.str());
  }
  const Tensor bias_c = bias.defined() ? bias.contiguous() : bias;
  if (!on(a).gemm(a, b, p, c, bias_c) && bias.defined()) binary_into(kernels::BinaryOp::add, c, bias_c, c);
  return c;
}

LinearForward DeviceBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return {backend::gemm(x, w, false, true, bias), x};
}

std::pair<Tensor, Tensor> DeviceBackend::linear_backward(const Tensor& dy, const Tensor& x_saved, const Tensor& w) {
  return {backend::gemm(dy, w, false, false), backend::gemm(dy, x_saved, true, false)};
}

LinearForward linear_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& bias) {
  check_pair("linear", x_in, w_in);
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  CNN_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "linear: expected x (M, K) and w (N, K), got ",
            x.str(), " and ", w.str());
  return on(x).linear_forward(x, w, bias);
}

namespace {
// dW's first K columns, contiguous, where the backward ran on a padded x.
Tensor first_columns(const Tensor& dw, int64_t k) { return dw.size(1) == k ? dw : dw.slice(1, 0, k).contiguous(); }
}  // namespace

std::pair<Tensor, Tensor> linear_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& w_in) {
  check_pair("linear backward", dy_in, x_in);
  check_pair("linear backward", dy_in, w_in);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), w = w_in.contiguous();
  CNN_CHECK(dy.dim() == 2 && x.dim() == 2 && w.dim() == 2 && dy.size(0) == x.size(0) && dy.size(1) == w.size(0) &&
                x.size(1) >= w.size(1),
            "linear backward: expected dy (M, N), x (M, KP >= K), w (N, K), got ", dy.str(), ", ", x.str(), ", ",
            w.str());
  auto [dx, dw] = on(dy).linear_backward(dy, x, w);
  return {dx, first_columns(dw, w.size(1))};
}

Tensor linear_backward_weight(const Tensor& dy, const Tensor& x_saved, int64_t k) {
  return first_columns(gemm(dy, x_saved, true, false), k);
}

std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits_in, const Tensor& labels_in, double eps) {
  check_xent(logits_in, labels_in, eps);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  const DType lt = stat_dtype(logits.dtype());
  Tensor loss = Tensor::empty({}, lt, logits.device(), "loss");
  Tensor lse = Tensor::empty({logits.size(0)}, lt, logits.device(), "lse");
  on(logits).softmax_xent_forward(logits, labels, eps, loss, lse);
  return {loss, lse};
}

Tensor softmax_xent_backward(const Tensor& logits_in, const Tensor& labels_in, const Tensor& lse_in,
                             const Tensor& dloss_in, double eps) {
  check_xent(logits_in, labels_in, eps);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous(), lse = lse_in.contiguous();
  const Tensor dloss = dloss_in.to(lse.dtype()).contiguous();
  CNN_CHECK(dloss.numel() == 1, "softmax_cross_entropy backward: expected a one-element loss gradient, got ",
            dloss.str());
  Tensor dlogits = like(logits, logits.shape());
  on(logits).softmax_xent_backward(logits, labels, lse, dloss, eps, dlogits);
  return dlogits;
}

// ---- dense and depthwise convolution -------------------------------------------------------------------------------

Tensor conv2d_forward(const Tensor& x_in, const Tensor& w_in, const kernels::Conv2dParams& p) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  Tensor y = like(x, {p.n, p.oh(), p.ow(), p.k});
  on(x).conv2d_forward(x, w, p, y);
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy_in, const Tensor& w_in, const kernels::Conv2dParams& p) {
  const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
  Tensor dx = like(dy, {p.n, p.ih, p.iw, p.c});
  on(dy).conv2d_backward_data(dy, w, p, dx);
  return dx;
}

Tensor conv2d_backward_filter(const Tensor& x_in, const Tensor& dy_in, const kernels::Conv2dParams& p) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dw = like(x, {p.k, p.r, p.s, p.c});
  on(x).conv2d_backward_filter(x, dy, p, dw);
  return dw;
}

Tensor dwconv_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in, const dwconv::DwconvParams& p) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  Tensor y = like(x, {p.n, p.oh(), p.ow(), p.c});
  on(x).dwconv_forward(x, w, bias, p, y);
  return y;
}

Tensor dwconv_backward_data(const Tensor& dy_in, const Tensor& w_in, const dwconv::DwconvParams& p) {
  const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
  Tensor dx = like(dy, {p.n, p.ih, p.iw, p.c});
  on(dy).dwconv_backward_data(dy, w, p, dx);
  return dx;
}

Tensor dwconv_backward_filter(const Tensor& x_in, const Tensor& dy_in, const dwconv::DwconvParams& p,
                              dwconv::BfcAccum accum) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dw = like(x, {p.fh, p.fw, p.c});
  on(x).dwconv_backward_filter(x, dy, p, accum, dw);
  return dw;
}

std::pair<Tensor, Tensor> dwconv_backward(const Tensor& x_in, const Tensor& dy_in, const Tensor& w_in,
                                          const dwconv::DwconvParams& p, dwconv::BfcAccum accum) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous(), w = w_in.contiguous();
  Tensor dx = like(dy, {p.n, p.ih, p.iw, p.c}), dw = like(x, {p.fh, p.fw, p.c});
  on(x).dwconv_backward(x, dy, w, p, accum, dx, dw);
  return {dx, dw};
}

Tensor dwconv_backward_filter_f32(const Tensor& x_in, const Tensor& dy_in, const dwconv::DwconvParams& p,
                                  dwconv::BfcAccum accum) {
  if (x_in.dtype() == DType::f64) return dwconv_backward_filter(x_in, dy_in, p, accum).to(DType::f32);
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dw = Tensor::empty({p.fh, p.fw, p.c}, DType::f32, x.device());
  on(x).dwconv_backward_filter(x, dy, p, accum, dw);
  return dw;
}

// ---- normalisation -------------------------------------------------------------------------------------------------

Tensor layernorm_forward(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, double eps,
                         NormStats& stats) {
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const int64_t rows = x.numel() / norm_channels(x);
  Tensor y = like(x, x.shape());
  stats.mean = Tensor::empty({rows}, stat_dtype(x.dtype()), x.device());
  stats.rstd = Tensor::empty({rows}, stat_dtype(x.dtype()), x.device());
  on(x).layernorm_forward(x, gamma, beta, eps, y, stats);
  return y;
}

NormGrads layernorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                             bool need_dx, bool need_params) {
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const int64_t c = norm_channels(x);
  NormGrads g;
  if (need_dx) g.dx = like(x, x.shape());
  if (need_params) {
    g.dgamma = like(x, {c});
    g.dbeta = like(x, {c});
  }
  on(x).layernorm_backward(dy, x, gamma, stats, g);
  return g;
}

NormStats batchnorm_batch_stats(const Tensor& x_in, Tensor& running_mean, Tensor& running_var, double momentum,
                                double eps, bool update_running) {
  const Tensor x = x_in.contiguous();
  const int64_t c = norm_channels(x);
  CNN_CHECK(running_mean.is_contiguous() && running_var.is_contiguous(),
            "batch_norm: running statistics must be contiguous");
  NormStats st{Tensor::empty({c}, stat_dtype(x.dtype()), x.device()),
               Tensor::empty({c}, stat_dtype(x.dtype()), x.device())};
  on(x).batchnorm_batch_stats(x, running_mean, running_var, momentum, eps, update_running, st);
  return st;
}

NormStats batchnorm_running_stats(const Tensor& running_mean_in, const Tensor& running_var_in, double eps) {
  const Tensor rm = running_mean_in.contiguous(), rv = running_var_in.contiguous();
  NormStats st{like(rm, rm.shape()), like(rm, rm.shape())};
  on(rm).batchnorm_running_stats(rm, rv, eps, st);
  return st;
}

Tensor batchnorm_apply(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, const NormStats& stats) {
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  norm_channels(x);
  Tensor y = like(x, x.shape());
  on(x).batchnorm_apply(x, gamma, beta, stats, y);
  return y;
}

NormGrads batchnorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                             bool training, bool need_dx) {
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const int64_t c = norm_channels(x);
  NormGrads g{need_dx ? like(x, x.shape()) : Tensor(), like(x, {c}), like(x, {c})};
  on(x).batchnorm_backward(dy, x, gamma, stats, training, g);
  return g;
}

// ---- pointwise and pooling -----------------------------------------------------------------------------------------

Tensor gelu_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  on(x).gelu_forward(x, y);
  return y;
}

Tensor gelu_backward(const Tensor& x_in, const Tensor& dy_in) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = like(x, x.shape());
  on(x).gelu_backward(x, dy, dx);
  return dx;
}

Tensor sample_scale(const Tensor& x_in, const Tensor& scale_in) {
  const Tensor x = x_in.contiguous(), s = scale_in.contiguous();
  CNN_CHECK(x.dim() >= 1 && s.dim() == 1 && s.size(0) == x.size(0), "sample_scale: expected scale (", x.size(0),
            ") for x ", x.str(), ", got ", s.str());
  CNN_CHECK(s.dtype() == stat_dtype(x.dtype()), "sample_scale: expected ", dtype_name(stat_dtype(x.dtype())),
            " scales for x ", x.str(), ", got ", s.str());
  Tensor y = like(x, x.shape());
  on(x).sample_scale(x, s, y);
  return y;
}

Tensor gap_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, {x.size(0), x.size(3)});
  on(x).gap_forward(x, y);
  return y;
}

Tensor gap_backward(const Tensor& dy_in, const Shape& x_shape) {
  const Tensor dy = dy_in.contiguous();
  Tensor dx = like(dy, x_shape);
  on(dy).gap_backward(dy, dx);
  return dx;
}

Tensor drop_scales(const Tensor& u, double keep, DType dtype) {
  CNN_CHECK(u.dtype() == DType::f32 && u.dim() == 1 && u.is_contiguous(), "drop_path: expected f32 uniforms (N), got ",
            u.str());
  Tensor s = Tensor::empty(u.shape(), dtype, u.device());
  on(u).drop_scales(u, keep, s);
  return s;
}

}  // namespace cnn::backend

// The CPU backend: f32 and f64 through the CPU kernels of kernels/ (OpenMP, OpenBLAS). Depthwise convolution runs
// the FP32 Flash-DWC CPU kernels for f32 and the FP64 reference for f64 (gradient checks).
#include <algorithm>

#include "core/dispatch.h"
#include "kernels/loss/softmax_xent.h"
#include "kernels/norm/norm.h"
#include "kernels/pointwise/pointwise.h"
#include "kernels/reduce/reduce.h"
#include "layers/backend/backend.h"

namespace cnn::backend {

namespace {

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

kernels::NormParams norm_params(const Tensor& x, double eps) {
  CNN_CHECK(x.dim() >= 1 && x.size(-1) >= 1 && x.numel() >= 1, "norm: expected (..., C) with elements, got ", x.str());
  return {x.numel() / x.size(-1), x.size(-1), eps};
}

// The CPU depthwise kernels exist in f32 (backend) and f64 (reference).
void check_dw_dtype(const char* op, DType t) {
  CNN_CHECK(t == DType::f32 || t == DType::f64, op, ": dtype ", dtype_name(t),
            " is not supported on cpu (expected f32 or f64)");
}

// Column buffer of the dense convolution.
Tensor conv_workspace(const Tensor& like_t, const kernels::Conv2dParams& p) {
  return Tensor::empty({std::max<int64_t>(1, kernels::conv2d_cpu_workspace_elems(p))}, like_t.dtype(), Device::cpu(),
                       "conv2d im2col");
}

class CpuBackend final : public Backend {
 public:
  // ---- elementwise, reductions, GEMM, loss ---------------------------------------------------------------------

  void binary_into(kernels::BinaryOp op, const Tensor& a_in, const Tensor& b_in, Tensor& y) override {
    const Tensor a = a_in.contiguous(), b = b_in.contiguous();
    const kernels::BinaryParams p{a.numel(), b.numel(), op};
    dispatch_cpu_float(a.dtype(), op == kernels::BinaryOp::add ? "add" : "mul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::binary_forward_cpu(a.data<T>(), b.data<T>(), y.data<T>(), p);
    });
  }

  Tensor scale(const Tensor& x_in, double alpha) override {
    const Tensor x = x_in.contiguous();
    Tensor y = empty_like(x, x.shape());
    dispatch_cpu_float(x.dtype(), "scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::scale_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
    });
    return y;
  }

  Tensor broadcast(const Tensor& v_in, const Shape& shape, double alpha) override {
    const Tensor v = v_in.contiguous();
    Tensor y = empty_like(v, shape);
    dispatch_cpu_float(v.dtype(), "broadcast", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::broadcast_cpu(v.data<T>(), y.data<T>(), y.numel(), v.numel(), alpha);
    });
    return y;
  }

  Tensor relu_forward(const Tensor& x_in) override {
    const Tensor x = x_in.contiguous();
    Tensor y = empty_like(x, x.shape());
    dispatch_cpu_float(x.dtype(), "relu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
    });
    return y;
  }

  Tensor relu_backward(const Tensor& y_in, const Tensor& dy_in) override {
    const Tensor y = y_in.contiguous(), dy = dy_in.contiguous();
    Tensor dx = empty_like(y, y.shape());
    dispatch_cpu_float(y.dtype(), "relu_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_backward_cpu(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
    });
    return dx;
  }

  Tensor sum_all(const Tensor& x_in, double alpha) override {
    const Tensor x = x_in.contiguous();
    Tensor y = empty_like(x, {});
    dispatch_cpu_float(x.dtype(), "sum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_all_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
    });
    return y;
  }

  Tensor sum_rows(const Tensor& x_in, double alpha) override {
    const Tensor x = x_in.contiguous();
    const int64_t cols = x.size(-1);
    Tensor y = empty_like(x, {cols});
    dispatch_cpu_float(x.dtype(), "sum over all but the last axis", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_rows_cpu(x.data<T>(), y.data<T>(), x.numel() / cols, cols, alpha);
    });
    return y;
  }

  Tensor gemm(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b) override {
    const Tensor a = a_in.contiguous(), b = b_in.contiguous();
    const kernels::GemmParams p = gemm_params(a, b, trans_a, trans_b);
    Tensor c = empty_like(a, {p.m, p.n});
    if (p.k == 0) {  // BLAS leaves C untouched for K = 0; the empty sum is 0
      c.fill_(0.0);
      return c;
    }
    dispatch_cpu_float(a.dtype(), "matmul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gemm_cpu(a.data<T>(), b.data<T>(), c.data<T>(), p);
    });
    return c;
  }

  std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits_in, const Tensor& labels_in,
                                                 double eps) override {
    const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
    const DType lt = stat_dtype(logits.dtype());
    Tensor loss = Tensor::empty({}, lt, logits.device(), "loss");
    Tensor lse = Tensor::empty({logits.size(0)}, lt, logits.device(), "lse");
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_forward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), loss.data<T>(), p);
    });
    return {loss, lse};
  }

  Tensor softmax_xent_backward(const Tensor& logits_in, const Tensor& labels_in, const Tensor& lse_in,
                               const Tensor& dloss_in, double eps) override {
    const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous(), lse = lse_in.contiguous();
    const Tensor dloss = dloss_in.contiguous();
    Tensor dlogits = empty_like(logits, logits.shape());
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_backward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), dloss.data<T>(),
                                         dlogits.data<T>(), p);
    });
    return dlogits;
  }

  // ---- dense convolution: im2col + OpenBLAS ---------------------------------------------------------------------

  Tensor conv2d_forward(const Tensor& x_in, const Tensor& w_in, const kernels::Conv2dParams& p) override {
    const Tensor x = x_in.contiguous(), w = w_in.contiguous();
    Tensor y = empty_like(x, {p.n, p.oh(), p.ow(), p.k});
    const Tensor ws = conv_workspace(x, p);
    dispatch_cpu_float(x.dtype(), "conv2d", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_forward_cpu(x.data<T>(), w.data<T>(), y.data<T>(), p, ws.data<T>());
    });
    return y;
  }

  Tensor conv2d_backward_data(const Tensor& dy_in, const Tensor& w_in, const kernels::Conv2dParams& p) override {
    const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
    Tensor dx = empty_like(dy, {p.n, p.ih, p.iw, p.c});
    const Tensor ws = conv_workspace(dy, p);
    dispatch_cpu_float(dy.dtype(), "conv2d backward_data", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_backward_data_cpu(dy.data<T>(), w.data<T>(), dx.data<T>(), p, ws.data<T>());
    });
    return dx;
  }

  Tensor conv2d_backward_filter(const Tensor& x_in, const Tensor& dy_in, const kernels::Conv2dParams& p) override {
    const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
    Tensor dw = empty_like(x, {p.k, p.r, p.s, p.c});
    const Tensor ws = conv_workspace(x, p);
    dispatch_cpu_float(x.dtype(), "conv2d backward_filter", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_backward_filter_cpu(x.data<T>(), dy.data<T>(), dw.data<T>(), p, ws.data<T>());
    });
    return dw;
  }

  // ---- depthwise convolution: f32 -> FP32 CPU kernels, f64 -> FP64 reference --------------------------------------

  Tensor dwconv_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in,
                        const dwconv::DwconvParams& p) override {
    const Tensor x = x_in.contiguous(), w = w_in.contiguous();
    const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
    Tensor y = empty_like(x, {p.n, p.oh(), p.ow(), p.c});
    check_dw_dtype("depthwise_conv2d", x.dtype());
    if (x.dtype() == DType::f64) {
      dwconv::dwconv_forward_reference(x.data<double>(), w.data<double>(), ptr<double>(bias), y.data<double>(), p);
    } else {
      dwconv::dwconv_forward_cpu(x.data<float>(), w.data<float>(), ptr<float>(bias), y.data<float>(), p);
    }
    return y;
  }

  Tensor dwconv_backward_data(const Tensor& dy_in, const Tensor& w_in, const dwconv::DwconvParams& p) override {
    const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
    Tensor dx = empty_like(dy, {p.n, p.ih, p.iw, p.c});
    check_dw_dtype("depthwise_conv2d backward_data", dy.dtype());
    if (dy.dtype() == DType::f64) {
      dwconv::dwconv_backward_data_reference(dy.data<double>(), w.data<double>(), dx.data<double>(), p);
    } else {
      dwconv::dwconv_backward_data_cpu(dy.data<float>(), w.data<float>(), dx.data<float>(), p);
    }
    return dx;
  }

  Tensor dwconv_backward_filter(const Tensor& x_in, const Tensor& dy_in, const dwconv::DwconvParams& p,
                                dwconv::BfcAccum) override {
    const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
    Tensor dw = empty_like(x, {p.fh, p.fw, p.c});
    check_dw_dtype("depthwise_conv2d backward_filter", x.dtype());
    if (x.dtype() == DType::f64) {
      dwconv::dwconv_backward_filter_reference(x.data<double>(), dy.data<double>(), dw.data<double>(), p);
    } else {
      dwconv::dwconv_backward_filter_cpu(x.data<float>(), dy.data<float>(), dw.data<float>(), p);
    }
    return dw;
  }

  // ---- normalisation --------------------------------------------------------------------------------------------

  Tensor layernorm_forward(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, double eps,
                           NormStats& stats) override {
    const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
    const kernels::NormParams p = norm_params(x, eps);
    Tensor y = empty_like(x, x.shape());
    stats.mean = Tensor::empty({p.rows}, stat_dtype(x.dtype()), x.device());
    stats.rstd = Tensor::empty({p.rows}, stat_dtype(x.dtype()), x.device());
    dispatch_cpu_float(x.dtype(), "layer_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(), stats.mean.data<T>(),
                                     stats.rstd.data<T>(), p);
    });
    return y;
  }

  NormGrads layernorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                               bool need_dx, bool need_params) override {
    const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
    const kernels::NormParams p = norm_params(x, 1.0);
    NormGrads g = empty_norm_grads(x, need_dx, need_params);
    dispatch_cpu_float(x.dtype(), "layer_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                      stats.rstd.data<T>(), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta), p);
    });
    return g;
  }

  NormStats batchnorm_batch_stats(const Tensor& x_in, Tensor& running_mean, Tensor& running_var, double momentum,
                                  double eps, bool update_running) override {
    const Tensor x = x_in.contiguous();
    const kernels::NormParams p = norm_params(x, eps);
    NormStats st{Tensor::empty({p.c}, stat_dtype(x.dtype()), x.device()),
                 Tensor::empty({p.c}, stat_dtype(x.dtype()), x.device())};
    const kernels::BatchNormUpdate u{update_running, momentum};
    dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_stats_cpu(x.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), running_mean.data<T>(),
                                   running_var.data<T>(), p, u);
    });
    return st;
  }

  NormStats batchnorm_running_stats(const Tensor& running_mean_in, const Tensor& running_var_in, double eps) override {
    const Tensor rm = running_mean_in.contiguous(), rv = running_var_in.contiguous();
    const kernels::NormParams p{1, rm.numel(), eps};
    NormStats st{empty_like(rm, rm.shape()), empty_like(rm, rm.shape())};
    dispatch_cpu_float(rm.dtype(), "batch_norm (eval)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_eval_stats_cpu(rm.data<T>(), rv.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), p);
    });
    return st;
  }

  Tensor batchnorm_apply(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in,
                         const NormStats& stats) override {
    const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
    const kernels::NormParams p = norm_params(x, 1.0);
    Tensor y = empty_like(x, x.shape());
    dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), stats.mean.data<T>(),
                                     stats.rstd.data<T>(), y.data<T>(), p);
    });
    return y;
  }

  NormGrads batchnorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                               bool training, bool need_dx) override {
    const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
    const kernels::NormParams p = norm_params(x, 1.0);
    NormGrads g = empty_norm_grads(x, need_dx, true);
    dispatch_cpu_float(x.dtype(), "batch_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                      stats.rstd.data<T>(), ptr<T>(g.dx), g.dgamma.data<T>(), g.dbeta.data<T>(), p,
                                      training);
    });
    return g;
  }

  // ---- pointwise and pooling ------------------------------------------------------------------------------------

  Tensor gelu_forward(const Tensor& x_in) override {
    const Tensor x = x_in.contiguous();
    Tensor y = empty_like(x, x.shape());
    dispatch_cpu_float(x.dtype(), "gelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
    });
    return y;
  }

  Tensor gelu_backward(const Tensor& x_in, const Tensor& dy_in) override {
    const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
    Tensor dx = empty_like(x, x.shape());
    dispatch_cpu_float(x.dtype(), "gelu backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_backward_cpu(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
    });
    return dx;
  }

  Tensor sample_scale(const Tensor& x_in, const Tensor& scale_in) override {
    const Tensor x = x_in.contiguous(), s = scale_in.contiguous();
    Tensor y = empty_like(x, x.shape());
    const int64_t per = x.size(0) > 0 ? x.numel() / x.size(0) : 0;
    dispatch_cpu_float(x.dtype(), "sample_scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sample_scale_cpu(x.data<T>(), s.data<T>(), y.data<T>(), x.size(0), per);
    });
    return y;
  }

  Tensor gap_forward(const Tensor& x_in) override {
    const Tensor x = x_in.contiguous();
    Tensor y = empty_like(x, {x.size(0), x.size(3)});
    dispatch_cpu_float(x.dtype(), "global_avg_pool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_forward_cpu(x.data<T>(), y.data<T>(), x.size(0), x.size(1) * x.size(2), x.size(3));
    });
    return y;
  }

  Tensor gap_backward(const Tensor& dy_in, const Shape& x_shape) override {
    const Tensor dy = dy_in.contiguous();
    Tensor dx = empty_like(dy, x_shape);
    dispatch_cpu_float(dy.dtype(), "global_avg_pool backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_backward_cpu(dy.data<T>(), dx.data<T>(), x_shape[0], x_shape[1] * x_shape[2], x_shape[3]);
    });
    return dx;
  }

  Tensor drop_scales(const Tensor& u, double keep, DType dtype) override {
    Tensor s = Tensor::empty(u.shape(), dtype, u.device());
    dispatch_cpu_float(dtype, "drop_path", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::drop_scales_cpu(u.data<float>(), s.data<T>(), u.numel(), float(keep));
    });
    return s;
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace cnn::backend

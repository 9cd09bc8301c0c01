// Device dispatch of the CNN layer kernels; CPU calls run here, CUDA calls go to nn_backend_cuda.cpp.
// Inputs are made contiguous here; shape checks with user-facing messages live in nn_ops.cpp.
#include "layers/nn_backend.h"

#include "core/dispatch.h"
#include "kernels/norm/norm.h"
#include "kernels/pointwise/pointwise.h"

namespace cnn::backend {

namespace {

Tensor like(const Tensor& x, const Shape& shape) { return Tensor::empty(shape, x.dtype(), x.device()); }
DType stat_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

kernels::NormParams norm_params(const Tensor& x, double eps) {
  CNN_CHECK(x.dim() >= 1 && x.size(-1) >= 1 && x.numel() >= 1, "norm: expected (..., C) with elements, got ",
            x.str());
  return {x.numel() / x.size(-1), x.size(-1), eps};
}

// The CPU depthwise kernels exist in f32 (backend) and f64 (reference).
void check_dw_cpu_dtype(const char* op, DType t) {
  CNN_CHECK(t == DType::f32 || t == DType::f64, op, ": dtype ", dtype_name(t),
            " is not supported on cpu (expected f32 or f64)");
}

// CPU column buffer of the dense convolution.
Tensor conv_workspace(const Tensor& like_t, const kernels::Conv2dParams& p) {
  return Tensor::empty({std::max<int64_t>(1, kernels::conv2d_cpu_workspace_elems(p))}, like_t.dtype(),
                       Device::cpu(), "conv2d im2col");
}

}  // namespace

// ---- dense convolution ------------------------------------------------------------------------------------------

Tensor conv2d_forward(const Tensor& x_in, const Tensor& w_in, const kernels::Conv2dParams& p) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  Tensor y = like(x, {p.n, p.oh(), p.ow(), p.k});
  if (x.device().is_cuda()) {
    cuda::conv2d_forward(x, w, p, y);
    return y;
  }
  const Tensor ws = conv_workspace(x, p);
  dispatch_cpu_float(x.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::conv2d_forward_cpu(x.data<T>(), w.data<T>(), y.data<T>(), p, ws.data<T>());
  });
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy_in, const Tensor& w_in, const kernels::Conv2dParams& p) {
  const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
  Tensor dx = like(dy, {p.n, p.ih, p.iw, p.c});
  if (dy.device().is_cuda()) {
    cuda::conv2d_backward_data(dy, w, p, dx);
    return dx;
  }
  const Tensor ws = conv_workspace(dy, p);
  dispatch_cpu_float(dy.dtype(), "conv2d backward_data", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::conv2d_backward_data_cpu(dy.data<T>(), w.data<T>(), dx.data<T>(), p, ws.data<T>());
  });
  return dx;
}

Tensor conv2d_backward_filter(const Tensor& x_in, const Tensor& dy_in, const kernels::Conv2dParams& p) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dw = like(x, {p.k, p.r, p.s, p.c});
  if (x.device().is_cuda()) {
    cuda::conv2d_backward_filter(x, dy, p, dw);
    return dw;
  }
  const Tensor ws = conv_workspace(x, p);
  dispatch_cpu_float(x.dtype(), "conv2d backward_filter", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::conv2d_backward_filter_cpu(x.data<T>(), dy.data<T>(), dw.data<T>(), p, ws.data<T>());
  });
  return dw;
}

// ---- depthwise convolution: CPU f32 -> FP32 CPU backend, f64 -> FP64 reference ------------------------------------

Tensor dwconv_forward(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in, const dwconv::DwconvParams& p) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  const Tensor bias = bias_in.defined() ? bias_in.contiguous() : Tensor();
  Tensor y = like(x, {p.n, p.oh(), p.ow(), p.c});
  if (x.device().is_cuda()) {
    cuda::dwconv_forward(x, w, bias, p, y);
    return y;
  }
  check_dw_cpu_dtype("depthwise_conv2d", x.dtype());
  if (x.dtype() == DType::f64) {
    dwconv::dwconv_forward_reference(x.data<double>(), w.data<double>(), ptr<double>(bias), y.data<double>(), p);
  } else {
    dwconv::dwconv_forward_cpu(x.data<float>(), w.data<float>(), ptr<float>(bias), y.data<float>(), p);
  }
  return y;
}

Tensor dwconv_backward_data(const Tensor& dy_in, const Tensor& w_in, const dwconv::DwconvParams& p) {
  const Tensor dy = dy_in.contiguous(), w = w_in.contiguous();
  Tensor dx = like(dy, {p.n, p.ih, p.iw, p.c});
  if (dy.device().is_cuda()) {
    cuda::dwconv_backward_data(dy, w, p, dx);
    return dx;
  }
  check_dw_cpu_dtype("depthwise_conv2d backward_data", dy.dtype());
  if (dy.dtype() == DType::f64) {
    dwconv::dwconv_backward_data_reference(dy.data<double>(), w.data<double>(), dx.data<double>(), p);
  } else {
    dwconv::dwconv_backward_data_cpu(dy.data<float>(), w.data<float>(), dx.data<float>(), p);
  }
  return dx;
}

Tensor dwconv_backward_filter(const Tensor& x_in, const Tensor& dy_in, const dwconv::DwconvParams& p,
                              dwconv::BfcAccum accum) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dw = like(x, {p.fh, p.fw, p.c});
  if (x.device().is_cuda()) {
    cuda::dwconv_backward_filter(x, dy, p, accum, dw);
    return dw;
  }
  check_dw_cpu_dtype("depthwise_conv2d backward_filter", x.dtype());
  if (x.dtype() == DType::f64) {
    dwconv::dwconv_backward_filter_reference(x.data<double>(), dy.data<double>(), dw.data<double>(), p);
  } else {
    dwconv::dwconv_backward_filter_cpu(x.data<float>(), dy.data<float>(), dw.data<float>(), p);
  }
  return dw;
}

// ---- normalisation ----------------------------------------------------------------------------------------------

Tensor layernorm_forward(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, double eps,
                         NormStats& stats) {
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const kernels::NormParams p = norm_params(x, eps);
  Tensor y = like(x, x.shape());
  stats.mean = Tensor::empty({p.rows}, stat_dtype(x.dtype()), x.device());
  stats.rstd = Tensor::empty({p.rows}, stat_dtype(x.dtype()), x.device());
  if (x.device().is_cuda()) {
    cuda::layernorm_forward(x, gamma, beta, eps, y, stats);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::layernorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(), stats.mean.data<T>(),
                                   stats.rstd.data<T>(), p);
  });
  return y;
}

NormGrads layernorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                             bool need_dx, bool need_params) {
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const kernels::NormParams p = norm_params(x, 1.0);
  NormGrads g;
  if (need_dx) g.dx = like(x, x.shape());
  if (need_params) {
    g.dgamma = like(x, {p.c});
    g.dbeta = like(x, {p.c});
  }
  if (x.device().is_cuda()) {
    cuda::layernorm_backward(dy, x, gamma, stats, g);
    return g;
  }
  dispatch_cpu_float(x.dtype(), "layer_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::layernorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                    stats.rstd.data<T>(), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta), p);
  });
  return g;
}

NormStats batchnorm_batch_stats(const Tensor& x_in, Tensor& running_mean, Tensor& running_var, double momentum,
                                double eps, bool update_running) {
  const Tensor x = x_in.contiguous();
  const kernels::NormParams p = norm_params(x, eps);
  CNN_CHECK(running_mean.is_contiguous() && running_var.is_contiguous(),
            "batch_norm: running statistics must be contiguous");
  NormStats st{Tensor::empty({p.c}, stat_dtype(x.dtype()), x.device()),
               Tensor::empty({p.c}, stat_dtype(x.dtype()), x.device())};
  if (x.device().is_cuda()) {
    cuda::batchnorm_batch_stats(x, running_mean, running_var, momentum, eps, update_running, st);
    return st;
  }
  const kernels::BatchNormUpdate u{update_running, momentum};
  dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_stats_cpu(x.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), running_mean.data<T>(),
                                 running_var.data<T>(), p, u);
  });
  return st;
}

NormStats batchnorm_running_stats(const Tensor& running_mean_in, const Tensor& running_var_in, double eps) {
  const Tensor rm = running_mean_in.contiguous(), rv = running_var_in.contiguous();
  const kernels::NormParams p{1, rm.numel(), eps};
  NormStats st{like(rm, rm.shape()), like(rm, rm.shape())};
  if (rm.device().is_cuda()) {
    cuda::batchnorm_running_stats(rm, rv, eps, st);
    return st;
  }
  dispatch_cpu_float(rm.dtype(), "batch_norm (eval)", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_eval_stats_cpu(rm.data<T>(), rv.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), p);
  });
  return st;
}

Tensor batchnorm_apply(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, const NormStats& stats) {
  const Tensor x = x_in.contiguous(), gamma = gamma_in.contiguous(), beta = beta_in.contiguous();
  const kernels::NormParams p = norm_params(x, 1.0);
  Tensor y = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::batchnorm_apply(x, gamma, beta, stats, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), stats.mean.data<T>(),
                                   stats.rstd.data<T>(), y.data<T>(), p);
  });
  return y;
}

NormGrads batchnorm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma_in, const NormStats& stats,
                             bool training, bool need_dx) {
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(), gamma = gamma_in.contiguous();
  const kernels::NormParams p = norm_params(x, 1.0);
  NormGrads g{need_dx ? like(x, x.shape()) : Tensor(), like(x, {p.c}), like(x, {p.c})};
  if (x.device().is_cuda()) {
    cuda::batchnorm_backward(dy, x, gamma, stats, training, g);
    return g;
  }
  dispatch_cpu_float(x.dtype(), "batch_norm backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                    stats.rstd.data<T>(), ptr<T>(g.dx), g.dgamma.data<T>(), g.dbeta.data<T>(), p,
                                    training);
  });
  return g;
}

// ---- pointwise / pooling ------------------------------------------------------------------------------------------

Tensor gelu_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::gelu_forward(x, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "gelu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gelu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
  });
  return y;
}

Tensor gelu_backward(const Tensor& x_in, const Tensor& dy_in) {
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::gelu_backward(x, dy, dx);
    return dx;
  }
  dispatch_cpu_float(x.dtype(), "gelu backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gelu_backward_cpu(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
  });
  return dx;
}

Tensor sample_scale(const Tensor& x_in, const Tensor& scale_in) {
  const Tensor x = x_in.contiguous(), s = scale_in.contiguous();
  CNN_CHECK(x.dim() >= 1 && s.dim() == 1 && s.size(0) == x.size(0), "sample_scale: expected scale (", x.size(0),
            ") for x ", x.str(), ", got ", s.str());
  CNN_CHECK(s.dtype() == stat_dtype(x.dtype()), "sample_scale: expected ", dtype_name(stat_dtype(x.dtype())),
            " scales for x ", x.str(), ", got ", s.str());
  Tensor y = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::sample_scale(x, s, y);
    return y;
  }
  const int64_t per = x.size(0) > 0 ? x.numel() / x.size(0) : 0;
  dispatch_cpu_float(x.dtype(), "sample_scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::sample_scale_cpu(x.data<T>(), s.data<T>(), y.data<T>(), x.size(0), per);
  });
  return y;
}

Tensor gap_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, {x.size(0), x.size(3)});
  if (x.device().is_cuda()) {
    cuda::gap_forward(x, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "global_avg_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gap_forward_cpu(x.data<T>(), y.data<T>(), x.size(0), x.size(1) * x.size(2), x.size(3));
  });
  return y;
}

Tensor gap_backward(const Tensor& dy_in, const Shape& x_shape) {
  const Tensor dy = dy_in.contiguous();
  Tensor dx = like(dy, x_shape);
  if (dy.device().is_cuda()) {
    cuda::gap_backward(dy, dx);
    return dx;
  }
  dispatch_cpu_float(dy.dtype(), "global_avg_pool backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gap_backward_cpu(dy.data<T>(), dx.data<T>(), x_shape[0], x_shape[1] * x_shape[2], x_shape[3]);
  });
  return dx;
}

Tensor drop_scales(const Tensor& u, double keep, DType dtype) {
  CNN_CHECK(u.dtype() == DType::f32 && u.dim() == 1 && u.is_contiguous(), "drop_path: expected f32 uniforms (N), got ",
            u.str());
  Tensor s = Tensor::empty(u.shape(), dtype, u.device());
  if (u.device().is_cuda()) {
    cuda::drop_scales(u, keep, s);
    return s;
  }
  dispatch_cpu_float(dtype, "drop_path", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::drop_scales_cpu(u.data<float>(), s.data<T>(), u.numel(), float(keep));
  });
  return s;
}

}  // namespace cnn::backend

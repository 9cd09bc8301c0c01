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

kernels::NormParams rows_c(const Tensor& x, double eps) { return {x.numel() / x.size(-1), x.size(-1), eps}; }

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

class CpuBackend final : public DeviceBackend {
 public:
  // ---- elementwise, reductions, GEMM, loss --------------------------------------------------------------------------

  void binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) override {
    const kernels::BinaryParams p{a.numel(), b.numel(), op};
    dispatch_cpu_float(a.dtype(), op == kernels::BinaryOp::add ? "add" : "mul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::binary_forward_cpu(a.data<T>(), b.data<T>(), y.data<T>(), p);
    });
  }

  void scale(const Tensor& x, double alpha, Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::scale_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
    });
  }

  void broadcast(const Tensor& v, double alpha, Tensor& y) override {
    dispatch_cpu_float(v.dtype(), "broadcast", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::broadcast_cpu(v.data<T>(), y.data<T>(), y.numel(), v.numel(), alpha);
    });
  }

  void relu_forward(const Tensor& x, Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "relu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
    });
  }

  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    dispatch_cpu_float(y.dtype(), "relu_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_backward_cpu(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
    });
  }

  void sum_all(const Tensor& x, double alpha, Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "sum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_all_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
    });
  }

  void sum_rows(const Tensor& x, double alpha, Tensor& y) override {
    const int64_t cols = x.size(-1);
    dispatch_cpu_float(x.dtype(), "sum over all but the last axis", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_rows_cpu(x.data<T>(), y.data<T>(), x.numel() / cols, cols, alpha);
    });
  }

  bool gemm(const Tensor& a, const Tensor& b, const kernels::GemmParams& p, Tensor& c, const Tensor&) override {
    if (p.k == 0) {  // BLAS leaves C untouched for K = 0; the empty sum is 0
      c.fill_(0.0);
      return false;
    }
    dispatch_cpu_float(a.dtype(), "matmul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gemm_cpu(a.data<T>(), b.data<T>(), c.data<T>(), p);
    });
    return false;  // the bias, if any, is the caller's add
  }

  void softmax_xent_forward(const Tensor& logits, const Tensor& labels, double eps, Tensor& loss,
                            Tensor& lse) override {
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_forward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), loss.data<T>(), p);
    });
  }

  void softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                             double eps, Tensor& dlogits) override {
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_backward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), dloss.data<T>(),
                                         dlogits.data<T>(), p);
    });
  }

  // ---- dense convolution: im2col + OpenBLAS -------------------------------------------------------------------------

  void conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p, Tensor& y) override {
    const Tensor ws = conv_workspace(x, p);
    dispatch_cpu_float(x.dtype(), "conv2d", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_forward_cpu(x.data<T>(), w.data<T>(), y.data<T>(), p, ws.data<T>());
    });
  }

  void conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p, Tensor& dx) override {
    const Tensor ws = conv_workspace(dy, p);
    dispatch_cpu_float(dy.dtype(), "conv2d backward_data", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_backward_data_cpu(dy.data<T>(), w.data<T>(), dx.data<T>(), p, ws.data<T>());
    });
  }

  void conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p, Tensor& dw) override {
    const Tensor ws = conv_workspace(x, p);
    dispatch_cpu_float(x.dtype(), "conv2d backward_filter", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::conv2d_backward_filter_cpu(x.data<T>(), dy.data<T>(), dw.data<T>(), p, ws.data<T>());
    });
  }

  // ---- depthwise convolution: f32 -> FP32 CPU kernels, f64 -> FP64 reference ----------------------------------------

  void dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p,
                      Tensor& y) override {
    check_dw_dtype("depthwise_conv2d", x.dtype());
    if (x.dtype() == DType::f64) {
      dwconv::dwconv_forward_reference(x.data<double>(), w.data<double>(), ptr<double>(bias), y.data<double>(), p);
    } else {
      dwconv::dwconv_forward_cpu(x.data<float>(), w.data<float>(), ptr<float>(bias), y.data<float>(), p);
    }
  }

  void dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p, Tensor& dx) override {
    check_dw_dtype("depthwise_conv2d backward_data", dy.dtype());
    if (dy.dtype() == DType::f64) {
      dwconv::dwconv_backward_data_reference(dy.data<double>(), w.data<double>(), dx.data<double>(), p);
    } else {
      dwconv::dwconv_backward_data_cpu(dy.data<float>(), w.data<float>(), dx.data<float>(), p);
    }
  }

  void dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum,
                              Tensor& dw) override {
    check_dw_dtype("depthwise_conv2d backward_filter", x.dtype());
    if (x.dtype() == DType::f64) {
      dwconv::dwconv_backward_filter_reference(x.data<double>(), dy.data<double>(), dw.data<double>(), p);
    } else {
      dwconv::dwconv_backward_filter_cpu(x.data<float>(), dy.data<float>(), dw.data<float>(), p);
    }
  }

  // ---- normalisation: statistics in the data's precision (FP64 for f64) ---------------------------------------------

  void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                         NormStats& stats) override {
    dispatch_cpu_float(x.dtype(), "layer_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), y.data<T>(), stats.mean.data<T>(),
                                     stats.rstd.data<T>(), rows_c(x, eps));
    });
  }

  void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                          NormGrads& g) override {
    dispatch_cpu_float(x.dtype(), "layer_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                      stats.rstd.data<T>(), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta),
                                      rows_c(x, 1.0));
    });
  }

  void batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                             bool update_running, NormStats& st) override {
    const kernels::BatchNormUpdate u{update_running, momentum};
    dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_stats_cpu(x.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), running_mean.data<T>(),
                                   running_var.data<T>(), rows_c(x, eps), u);
    });
  }

  void batchnorm_running_stats(const Tensor& rm, const Tensor& rv, double eps, NormStats& st) override {
    const kernels::NormParams p{1, rm.numel(), eps};
    dispatch_cpu_float(rm.dtype(), "batch_norm (eval)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_eval_stats_cpu(rm.data<T>(), rv.data<T>(), st.mean.data<T>(), st.rstd.data<T>(), p);
    });
  }

  void batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats,
                       Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_forward_cpu(x.data<T>(), gamma.data<T>(), beta.data<T>(), stats.mean.data<T>(),
                                     stats.rstd.data<T>(), y.data<T>(), rows_c(x, 1.0));
    });
  }

  void batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats, bool training,
                          NormGrads& g) override {
    dispatch_cpu_float(x.dtype(), "batch_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_backward_cpu(dy.data<T>(), x.data<T>(), gamma.data<T>(), stats.mean.data<T>(),
                                      stats.rstd.data<T>(), ptr<T>(g.dx), g.dgamma.data<T>(), g.dbeta.data<T>(),
                                      rows_c(x, 1.0), training);
    });
  }

  // ---- pointwise and pooling ----------------------------------------------------------------------------------------

  void gelu_forward(const Tensor& x, Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "gelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
    });
  }

  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    dispatch_cpu_float(x.dtype(), "gelu backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_backward_cpu(x.data<T>(), dy.data<T>(), dx.data<T>(), x.numel());
    });
  }

  void sample_scale(const Tensor& x, const Tensor& s, Tensor& y) override {
    const int64_t per = x.size(0) > 0 ? x.numel() / x.size(0) : 0;
    dispatch_cpu_float(x.dtype(), "sample_scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sample_scale_cpu(x.data<T>(), s.data<T>(), y.data<T>(), x.size(0), per);
    });
  }

  void gap_forward(const Tensor& x, Tensor& y) override {
    dispatch_cpu_float(x.dtype(), "global_avg_pool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_forward_cpu(x.data<T>(), y.data<T>(), x.size(0), x.size(1) * x.size(2), x.size(3));
    });
  }

  void gap_backward(const Tensor& dy, Tensor& dx) override {
    dispatch_cpu_float(dy.dtype(), "global_avg_pool backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_backward_cpu(dy.data<T>(), dx.data<T>(), dx.size(0), dx.size(1) * dx.size(2), dx.size(3));
    });
  }

  void drop_scales(const Tensor& u, double keep, Tensor& s) override {
    dispatch_cpu_float(s.dtype(), "drop_path", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::drop_scales_cpu(u.data<float>(), s.data<T>(), u.numel(), float(keep));
    });
  }
};

}  // namespace

DeviceBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace cnn::backend

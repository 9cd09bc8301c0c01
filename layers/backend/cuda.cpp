// The CUDA backend: f32 and f16 (FP32 math) on the tensor's device, its context's compute stream, cuBLAS and cuDNN
// handles and workspace. Depthwise convolution runs the FP32 Flash-DWC kernels for f32 and the FP16 Flash-DWC-T
// kernels for f16.
#include <cuda_fp16.h>

#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "core/cuda_dtype.cuh"
#include "kernels/common/channel_pad.h"
#include "kernels/conv/conv2d_cuda.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "kernels/elementwise/elementwise_cuda.h"
#include "kernels/loss/softmax_xent_cuda.h"
#include "kernels/matmul/gemm_cuda.h"
#include "kernels/norm/norm_cuda.h"
#include "kernels/pointwise/pointwise_cuda.h"
#include "kernels/reduce/reduce_cuda.h"
#include "layers/backend/backend.h"

namespace cnn::backend {

namespace {

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

kernels::WorkspaceFn workspace_of(CudaContext& ctx) {
  return [&ctx](size_t bytes) { return ctx.workspace(bytes); };
}

void check_cuda_dtype(const char* op, DType t) {
  CNN_CHECK(t == DType::f32 || t == DType::f16, op, ": dtype ", dtype_name(t),
            " is not supported on cuda (expected f32 or f16)");
}

kernels::NormParams rows_c(const Tensor& x, double eps) { return {x.numel() / x.size(-1), x.size(-1), eps}; }

// An FP16 matrix's row length rounded up to the GEMM's alignment, and a copy of the (rows, k) matrix t with zero
// columns up to that length: what the FP16 GEMM runs on where k is not a multiple of kGemmF16RowAlign.
int64_t gemm_row_length(int64_t k) {
  return (k + kernels::kGemmF16RowAlign - 1) / kernels::kGemmF16RowAlign * kernels::kGemmF16RowAlign;
}
Tensor zero_padded_columns(const Tensor& t, int64_t cols, cudaStream_t s) {
  Tensor p = Tensor::empty({t.size(0), cols}, DType::f16, t.device());
  kernels::launch_pad_channels(ptr<__half>(t), ptr<__half>(p), t.size(0), int(t.size(1)), int(cols), s);
  return p;
}

class CudaBackend final : public DeviceBackend {
 public:
  // ---- elementwise, reductions, GEMM (cuBLAS), loss -----------------------------------------------------------------

  void binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) override {
    CudaDeviceGuard guard(a.device().index);
    cudaStream_t s = cuda_context(a.device()).compute_stream();
    const kernels::BinaryParams p{a.numel(), b.numel(), op};
    dispatch_cuda_float(a.dtype(), op == kernels::BinaryOp::add ? "add" : "mul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::binary_forward_cuda<T>(ptr<T>(a), ptr<T>(b), ptr<T>(y), p, s);
    });
  }

  void scale(const Tensor& x, double alpha, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::scale_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), float(alpha), s);
    });
  }

  void broadcast(const Tensor& v, double alpha, Tensor& y) override {
    CudaDeviceGuard guard(v.device().index);
    cudaStream_t s = cuda_context(v.device()).compute_stream();
    dispatch_cuda_float(v.dtype(), "broadcast", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::broadcast_cuda<T>(ptr<T>(v), ptr<T>(y), y.numel(), v.numel(), float(alpha), s);
    });
  }

  void relu_forward(const Tensor& x, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "relu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_forward_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), s);
    });
  }

  void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) override {
    CudaDeviceGuard guard(y.device().index);
    cudaStream_t s = cuda_context(y.device()).compute_stream();
    dispatch_cuda_float(y.dtype(), "relu_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::relu_backward_cuda<T>(ptr<T>(y), ptr<T>(dy), ptr<T>(dx), y.numel(), s);
    });
  }

  void sum_all(const Tensor& x, double alpha, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    float* ws = static_cast<float*>(ctx.workspace(kernels::sum_all_workspace_bytes(x.numel())));
    dispatch_cuda_float(x.dtype(), "sum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_all_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), float(alpha), ws, ctx.compute_stream());
    });
  }

  void sum_rows(const Tensor& x, double alpha, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    float* ws = static_cast<float*>(ctx.workspace(kernels::sum_rows_workspace_bytes(rows, cols)));
    dispatch_cuda_float(x.dtype(), "sum over all but the last axis", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sum_rows_cuda<T>(ptr<T>(x), ptr<T>(y), rows, cols, float(alpha), ws, ctx.compute_stream());
    });
  }

  bool gemm(const Tensor& a, const Tensor& b, const kernels::GemmParams& p, Tensor& c, const Tensor& bias) override {
    CudaDeviceGuard guard(a.device().index);
    CudaContext& ctx = cuda_context(a.device());
    const kernels::GemmCuda env{.blas = ctx.cublas(), .lt = ctx.cublaslt(), .stream = ctx.compute_stream(),
                                .scratch = [&ctx](size_t bytes) { return ctx.workspace(bytes); }};
    bool fused = false;
    dispatch_cuda_float(a.dtype(), "matmul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      fused = kernels::gemm_cuda<T>(ptr<T>(a), ptr<T>(b), ptr<T>(c), p, env, bias.defined() ? ptr<T>(bias) : nullptr);
    });
    return fused && bias.defined();
  }

  // FP16 with x's rows (K) not a multiple of 8, on a GEMM large enough to run on padded copies: x is padded into a
  // tensor rather than the GEMM's scratch (W gets zero columns, which add nothing), and the backward keeps that copy
  // for dW = dY^T X, which would pad x again.
  LinearForward linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias) override {
    const int64_t m = x.size(0), n = w.size(0), k = x.size(1);
    if (x.dtype() != DType::f16 || k % kernels::kGemmF16RowAlign == 0 || !kernels::gemm_f16_pads_unaligned(m, n, k))
      return DeviceBackend::linear_forward(x, w, bias);
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    const int64_t kp = gemm_row_length(k);
    Tensor x_p = zero_padded_columns(x, kp, s);
    return {backend::gemm(x_p, zero_padded_columns(w, kp, s), false, true, bias), x_p};
  }

  // FP16 with dY's rows (N) not a multiple of 8: each GEMM would pad dY into its own scratch (dX = dY W pads its K,
  // dW = dY^T X its M; the same (M, NP) copy). Both run on one padded copy instead, with W given NP - N zero rows:
  // the zero columns and rows add nothing to dX, and dW's first N rows (a contiguous view) are the answer.
  std::pair<Tensor, Tensor> linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w) override {
    const int64_t m = dy.size(0), n = dy.size(1), k = w.size(1);
    if (dy.dtype() != DType::f16 || n % kernels::kGemmF16RowAlign == 0 || !kernels::gemm_f16_pads_unaligned(m, n, k))
      return DeviceBackend::linear_backward(dy, x, w);
    CudaDeviceGuard guard(dy.device().index);
    cudaStream_t s = cuda_context(dy.device()).compute_stream();
    const int64_t np = gemm_row_length(n);
    Tensor dy_p = zero_padded_columns(dy, np, s);
    Tensor w_p = Tensor::empty({np, k}, DType::f16, w.device());
    w_p.slice(0, 0, n).copy_(w);
    w_p.slice(0, n, np).fill_(0.0);
    Tensor dx = backend::gemm(dy_p, w_p, false, false);
    Tensor dw = backend::gemm(dy_p, x, true, false).slice(0, 0, n);
    return {dx, dw};
  }

  void softmax_xent_forward(const Tensor& logits, const Tensor& labels, double eps, Tensor& loss,
                            Tensor& lse) override {
    CudaDeviceGuard guard(logits.device().index);
    CudaContext& ctx = cuda_context(logits.device());
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    float* ws = static_cast<float*>(ctx.workspace(kernels::softmax_xent_workspace_bytes(p.batch)));
    dispatch_cuda_float(logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_forward_cuda<T>(ptr<T>(logits), labels.data<int64_t>(), lse.data<float>(),
                                            loss.data<float>(), p, ws, ctx.compute_stream());
    });
  }

  void softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                             double eps, Tensor& dlogits) override {
    CudaDeviceGuard guard(logits.device().index);
    CudaContext& ctx = cuda_context(logits.device());
    const kernels::XentParams p{logits.size(0), logits.size(1), eps};
    dispatch_cuda_float(logits.dtype(), "softmax_cross_entropy backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::softmax_xent_backward_cuda<T>(ptr<T>(logits), labels.data<int64_t>(), lse.data<float>(),
                                             dloss.data<float>(), ptr<T>(dlogits), p, ctx.compute_stream());
    });
  }

  // ---- dense convolution (cuDNN) ------------------------------------------------------------------------------------

  void conv2d_forward(const Tensor& x, const Tensor& w, const kernels::Conv2dParams& p, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    check_cuda_dtype("conv2d", x.dtype());
    kernels::conv2d_forward_cuda(x.data_ptr(), w.data_ptr(), y.data_ptr(), p, x.dtype(), ctx.cudnn(),
                                 workspace_of(ctx));
  }

  void conv2d_backward_data(const Tensor& dy, const Tensor& w, const kernels::Conv2dParams& p, Tensor& dx) override {
    CudaDeviceGuard guard(dy.device().index);
    CudaContext& ctx = cuda_context(dy.device());
    check_cuda_dtype("conv2d backward_data", dy.dtype());
    kernels::conv2d_backward_data_cuda(dy.data_ptr(), w.data_ptr(), dx.data_ptr(), p, dy.dtype(), ctx.cudnn(),
                                       workspace_of(ctx));
  }

  void conv2d_backward_filter(const Tensor& x, const Tensor& dy, const kernels::Conv2dParams& p, Tensor& dw) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    check_cuda_dtype("conv2d backward_filter", x.dtype());
    kernels::conv2d_backward_filter_cuda(x.data_ptr(), dy.data_ptr(), dw.data_ptr(), p, x.dtype(), ctx.cudnn(),
                                         workspace_of(ctx));
  }

  // ---- depthwise convolution (Flash-DWC: FP32 kernels for f32, Flash-DWC-T FP16 kernels for f16) --------------------

  void dwconv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const dwconv::DwconvParams& p,
                      Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    cudaStream_t s = ctx.compute_stream();
    check_cuda_dtype("depthwise_conv2d", x.dtype());
    if (x.dtype() == DType::f16)
      dwconv::dwconv_forward_cuda(ptr<__half>(x), ptr<__half>(w), ptr<__half>(bias), ptr<__half>(y), p, s,
                                  workspace_of(ctx));
    else
      dwconv::dwconv_forward_cuda(ptr<float>(x), ptr<float>(w), ptr<float>(bias), ptr<float>(y), p, s,
                                  workspace_of(ctx));
  }

  void dwconv_backward_data(const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p, Tensor& dx) override {
    CudaDeviceGuard guard(dy.device().index);
    CudaContext& ctx = cuda_context(dy.device());
    cudaStream_t s = ctx.compute_stream();
    check_cuda_dtype("depthwise_conv2d backward_data", dy.dtype());
    if (dy.dtype() == DType::f16)
      dwconv::dwconv_backward_data_cuda(ptr<__half>(dy), ptr<__half>(w), ptr<__half>(dx), p, s, workspace_of(ctx));
    else
      dwconv::dwconv_backward_data_cuda(ptr<float>(dy), ptr<float>(w), ptr<float>(dx), p, s, workspace_of(ctx));
  }

  // f16: the FP16 kernels write dW in FP32 (the FP32 master weights' precision); an f16 dW tensor receives it rounded.
  void dwconv_backward_filter(const Tensor& x, const Tensor& dy, const dwconv::DwconvParams& p, dwconv::BfcAccum accum,
                              Tensor& dw) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    cudaStream_t s = ctx.compute_stream();
    check_cuda_dtype("depthwise_conv2d backward_filter", x.dtype());
    if (x.dtype() != DType::f16) {
      dwconv::dwconv_backward_filter_cuda(ptr<float>(x), ptr<float>(dy), ptr<float>(dw), p, s, workspace_of(ctx));
      return;
    }
    Tensor dwf = dw.dtype() == DType::f32 ? dw : Tensor::empty(dw.shape(), DType::f32, dw.device());
    dwconv::dwconv_backward_filter_cuda(ptr<__half>(x), ptr<__half>(dy), ptr<float>(dwf), p, accum, s,
                                        workspace_of(ctx));
    if (dwf.storage() != dw.storage()) dw.copy_(dwf);
  }

  void dwconv_backward(const Tensor& x, const Tensor& dy, const Tensor& w, const dwconv::DwconvParams& p,
                       dwconv::BfcAccum accum, Tensor& dx, Tensor& dw) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    cudaStream_t s = ctx.compute_stream();
    check_cuda_dtype("depthwise_conv2d backward", x.dtype());
    if (x.dtype() != DType::f16) {
      dwconv::dwconv_backward_cuda(ptr<float>(x), ptr<float>(dy), ptr<float>(w), ptr<float>(dx), ptr<float>(dw), p, s,
                                   workspace_of(ctx));
      return;
    }
    Tensor dwf = dw.dtype() == DType::f32 ? dw : Tensor::empty(dw.shape(), DType::f32, dw.device());
    dwconv::dwconv_backward_cuda(ptr<__half>(x), ptr<__half>(dy), ptr<__half>(w), ptr<__half>(dx), ptr<float>(dwf), p,
                                 accum, s, workspace_of(ctx));
    if (dwf.storage() != dw.storage()) dw.copy_(dwf);
  }

  // ---- normalisation (FP32 statistics) ------------------------------------------------------------------------------

  void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, Tensor& y,
                         NormStats& stats) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "layer_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_forward_cuda<T>(ptr<T>(x), ptr<T>(gamma), ptr<T>(beta), ptr<T>(y), ptr<float>(stats.mean),
                                         ptr<float>(stats.rstd), rows_c(x, eps), s);
    });
  }

  void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats,
                          NormGrads& g) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    const kernels::NormParams p = rows_c(x, 1.0);
    float* ws = static_cast<float*>(ctx.workspace(kernels::norm_workspace_bytes(p)));
    dispatch_cuda_float(x.dtype(), "layer_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::layernorm_backward_cuda<T>(ptr<T>(dy), ptr<T>(x), ptr<T>(gamma), ptr<float>(stats.mean),
                                          ptr<float>(stats.rstd), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta), p,
                                          ws, ctx.compute_stream());
    });
  }

  void batchnorm_batch_stats(const Tensor& x, Tensor& running_mean, Tensor& running_var, double momentum, double eps,
                             bool update_running, NormStats& stats) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    const kernels::NormParams p = rows_c(x, eps);
    float* ws = static_cast<float*>(ctx.workspace(kernels::norm_workspace_bytes(p)));
    const kernels::BatchNormUpdate u{update_running, momentum};
    dispatch_cuda_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_stats_cuda<T>(ptr<T>(x), ptr<float>(stats.mean), ptr<float>(stats.rstd),
                                       ptr<float>(running_mean), ptr<float>(running_var), p, u, ws,
                                       ctx.compute_stream());
    });
  }

  void batchnorm_running_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                               NormStats& stats) override {
    CudaDeviceGuard guard(running_mean.device().index);
    cudaStream_t s = cuda_context(running_mean.device()).compute_stream();
    CNN_CHECK(running_mean.dtype() == DType::f32, "batch_norm (eval): expected f32 running statistics on cuda, got ",
              running_mean.str());
    const kernels::NormParams p{1, running_mean.numel(), eps};
    kernels::batchnorm_eval_stats_cuda(ptr<float>(running_mean), ptr<float>(running_var), ptr<float>(stats.mean),
                                       ptr<float>(stats.rstd), p, s);
  }

  void batchnorm_apply(const Tensor& x, const Tensor& gamma, const Tensor& beta, const NormStats& stats,
                       Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "batch_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_forward_cuda<T>(ptr<T>(x), ptr<T>(gamma), ptr<T>(beta), ptr<float>(stats.mean),
                                         ptr<float>(stats.rstd), ptr<T>(y), rows_c(x, 1.0), s);
    });
  }

  void batchnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const NormStats& stats, bool training,
                          NormGrads& g) override {
    CudaDeviceGuard guard(x.device().index);
    CudaContext& ctx = cuda_context(x.device());
    const kernels::NormParams p = rows_c(x, 1.0);
    float* ws = static_cast<float*>(ctx.workspace(kernels::norm_workspace_bytes(p)));
    dispatch_cuda_float(x.dtype(), "batch_norm backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::batchnorm_backward_cuda<T>(ptr<T>(dy), ptr<T>(x), ptr<T>(gamma), ptr<float>(stats.mean),
                                          ptr<float>(stats.rstd), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta), p,
                                          training, ws, ctx.compute_stream());
    });
  }

  // ---- pointwise and pooling ----------------------------------------------------------------------------------------

  void gelu_forward(const Tensor& x, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "gelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_forward_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), s);
    });
  }

  void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "gelu backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gelu_backward_cuda<T>(ptr<T>(x), ptr<T>(dy), ptr<T>(dx), x.numel(), s);
    });
  }

  void sample_scale(const Tensor& x, const Tensor& scale, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    const int64_t per = x.size(0) > 0 ? x.numel() / x.size(0) : 0;
    dispatch_cuda_float(x.dtype(), "sample_scale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::sample_scale_cuda<T>(ptr<T>(x), ptr<float>(scale), ptr<T>(y), x.size(0), per, s);
    });
  }

  void gap_forward(const Tensor& x, Tensor& y) override {
    CudaDeviceGuard guard(x.device().index);
    cudaStream_t s = cuda_context(x.device()).compute_stream();
    dispatch_cuda_float(x.dtype(), "global_avg_pool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_forward_cuda<T>(ptr<T>(x), ptr<T>(y), x.size(0), x.size(1) * x.size(2), x.size(3), s);
    });
  }

  void gap_backward(const Tensor& dy, Tensor& dx) override {
    CudaDeviceGuard guard(dy.device().index);
    cudaStream_t s = cuda_context(dy.device()).compute_stream();
    dispatch_cuda_float(dy.dtype(), "global_avg_pool backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::gap_backward_cuda<T>(ptr<T>(dy), ptr<T>(dx), dx.size(0), dx.size(1) * dx.size(2), dx.size(3), s);
    });
  }

  void drop_scales(const Tensor& uniforms, double keep, Tensor& scale) override {
    CudaDeviceGuard guard(uniforms.device().index);
    CNN_CHECK(scale.dtype() == DType::f32, "drop_path: expected f32 scales on cuda, got ", scale.str());
    kernels::drop_scales_cuda(ptr<float>(uniforms), ptr<float>(scale), uniforms.numel(), float(keep),
                              cuda_context(uniforms.device()).compute_stream());
  }
};

}  // namespace

DeviceBackend& cuda_backend() {
  static CudaBackend backend;
  return backend;
}

}  // namespace cnn::backend

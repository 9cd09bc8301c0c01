// CUDA side of ops::batch_norm_act: the fused BatchNorm-of-activation kernels on the context's stream.
#include <cuda_fp16.h>

#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "core/cuda_dtype.cuh"
#include "kernels/norm/norm_cuda.h"
#include "layers/batch_norm_act.h"

namespace cnn::backend::cuda {

namespace {
template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}
kernels::NormParams rows_c(const Tensor& x, double eps) { return {x.numel() / x.size(-1), x.size(-1), eps}; }
}  // namespace

void batch_norm_act_stats(const Tensor& x, kernels::NormAct act, Tensor& running_mean, Tensor& running_var,
                          double momentum, double eps, NormStats& stats) {
  CudaDeviceGuard guard(x.device().index);
  CudaContext& ctx = cuda_context(x.device());
  const kernels::NormParams p = rows_c(x, eps);
  float* ws = static_cast<float*>(ctx.workspace(kernels::norm_workspace_bytes(p)));
  dispatch_cuda_float(x.dtype(), "batch_norm_act", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_act_stats_cuda<T>(ptr<T>(x), act, ptr<float>(stats.mean), ptr<float>(stats.rstd),
                                         ptr<float>(running_mean), ptr<float>(running_var), p, {true, momentum}, ws,
                                         ctx.compute_stream());
  });
}

void batch_norm_act_apply(const Tensor& x, kernels::NormAct act, const Tensor& gamma, const Tensor& beta,
                          const NormStats& stats, const Tensor& residual, Tensor& y) {
  CudaDeviceGuard guard(x.device().index);
  dispatch_cuda_float(x.dtype(), "batch_norm_act", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_act_forward_cuda<T>(ptr<T>(x), act, ptr<T>(gamma), ptr<T>(beta), ptr<float>(stats.mean),
                                           ptr<float>(stats.rstd), ptr<T>(residual), ptr<T>(y), rows_c(x, 1.0),
                                           cuda_context(x.device()).compute_stream());
  });
}

void batch_norm_act_backward(const Tensor& dy, const Tensor& x, kernels::NormAct act, const Tensor& gamma,
                             const NormStats& stats, bool training, NormGrads& g) {
  CudaDeviceGuard guard(x.device().index);
  CudaContext& ctx = cuda_context(x.device());
  const kernels::NormParams p = rows_c(x, 1.0);
  float* ws = static_cast<float*>(ctx.workspace(kernels::norm_workspace_bytes(p)));
  dispatch_cuda_float(x.dtype(), "batch_norm_act backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::batchnorm_act_backward_cuda<T>(ptr<T>(dy), ptr<T>(x), act, ptr<T>(gamma), ptr<float>(stats.mean),
                                            ptr<float>(stats.rstd), ptr<T>(g.dx), ptr<T>(g.dgamma), ptr<T>(g.dbeta),
                                            p, training, ws, ctx.compute_stream());
  });
}

}  // namespace cnn::backend::cuda

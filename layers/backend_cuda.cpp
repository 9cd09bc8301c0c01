// CUDA side of the Tensor-level kernels: picks the device type (f32 / f16), the context's stream, cuBLAS handle
// and workspace, and calls the kernels. Inputs arrive contiguous and validated by backend.cpp.
#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "core/cuda_dtype.cuh"
#include "kernels/elementwise/elementwise_cuda.h"
#include "kernels/loss/softmax_xent_cuda.h"
#include "kernels/matmul/gemm_cuda.h"
#include "kernels/reduce/reduce_cuda.h"
#include "layers/backend.h"

namespace cnn::backend::cuda {

namespace {
template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}
}  // namespace

void binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  CudaDeviceGuard guard(a.device().index);
  cudaStream_t s = cuda_context(a.device()).compute_stream();
  const kernels::BinaryParams p{a.numel(), b.numel(), op};
  dispatch_cuda_float(a.dtype(), op == kernels::BinaryOp::add ? "add" : "mul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::binary_forward_cuda<T>(ptr<T>(a), ptr<T>(b), ptr<T>(y), p, s);
  });
}

void scale(const Tensor& x, double alpha, Tensor& y) {
  CudaDeviceGuard guard(x.device().index);
  cudaStream_t s = cuda_context(x.device()).compute_stream();
  dispatch_cuda_float(x.dtype(), "scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::scale_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), float(alpha), s);
  });
}

void broadcast(const Tensor& v, double alpha, Tensor& y) {
  CudaDeviceGuard guard(v.device().index);
  cudaStream_t s = cuda_context(v.device()).compute_stream();
  dispatch_cuda_float(v.dtype(), "broadcast", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::broadcast_cuda<T>(ptr<T>(v), ptr<T>(y), y.numel(), v.numel(), float(alpha), s);
  });
}

void relu_forward(const Tensor& x, Tensor& y) {
  CudaDeviceGuard guard(x.device().index);
  cudaStream_t s = cuda_context(x.device()).compute_stream();
  dispatch_cuda_float(x.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::relu_forward_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), s);
  });
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  CudaDeviceGuard guard(y.device().index);
  cudaStream_t s = cuda_context(y.device()).compute_stream();
  dispatch_cuda_float(y.dtype(), "relu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::relu_backward_cuda<T>(ptr<T>(y), ptr<T>(dy), ptr<T>(dx), y.numel(), s);
  });
}

void sum_all(const Tensor& x, double alpha, Tensor& y) {
  CudaDeviceGuard guard(x.device().index);
  CudaContext& ctx = cuda_context(x.device());
  float* ws = static_cast<float*>(ctx.workspace(kernels::sum_all_workspace_bytes(x.numel())));
  dispatch_cuda_float(x.dtype(), "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::sum_all_cuda<T>(ptr<T>(x), ptr<T>(y), x.numel(), float(alpha), ws, ctx.compute_stream());
  });
}

void sum_rows(const Tensor& x, double alpha, Tensor& y) {
  CudaDeviceGuard guard(x.device().index);
  CudaContext& ctx = cuda_context(x.device());
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  float* ws = static_cast<float*>(ctx.workspace(kernels::sum_rows_workspace_bytes(rows, cols)));
  dispatch_cuda_float(x.dtype(), "sum over all but the last axis", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::sum_rows_cuda<T>(ptr<T>(x), ptr<T>(y), rows, cols, float(alpha), ws, ctx.compute_stream());
  });
}

void gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Tensor& c) {
  CudaDeviceGuard guard(a.device().index);
  CudaContext& ctx = cuda_context(a.device());
  kernels::GemmParams p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = c.size(0), p.n = c.size(1), p.k = trans_a ? a.size(0) : a.size(1);
  p.lda = a.size(1), p.ldb = b.size(1), p.ldc = c.size(1);
  dispatch_cuda_float(a.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gemm_cuda<T>(ptr<T>(a), ptr<T>(b), ptr<T>(c), p, ctx.cublas());
  });
}

void softmax_xent_forward(const Tensor& logits, const Tensor& labels, double eps, Tensor& loss, Tensor& lse) {
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
                           double eps, Tensor& dlogits) {
  CudaDeviceGuard guard(logits.device().index);
  CudaContext& ctx = cuda_context(logits.device());
  const kernels::XentParams p{logits.size(0), logits.size(1), eps};
  dispatch_cuda_float(logits.dtype(), "softmax_cross_entropy backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::softmax_xent_backward_cuda<T>(ptr<T>(logits), labels.data<int64_t>(), lse.data<float>(),
                                           dloss.data<float>(), ptr<T>(dlogits), p, ctx.compute_stream());
  });
}

}  // namespace cnn::backend::cuda

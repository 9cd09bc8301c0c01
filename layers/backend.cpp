// Device dispatch of the Tensor-level kernels; CPU calls run here, CUDA calls go to backend_cuda.cpp.
#include "layers/backend.h"

#include "core/dispatch.h"
#include "kernels/loss/softmax_xent.h"
#include "kernels/matmul/gemm.h"
#include "kernels/reduce/reduce.h"

namespace cnn::backend {

namespace {

void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  CNN_CHECK(a.defined() && b.defined(), op, ": undefined input");
  CNN_CHECK(a.dtype() == b.dtype(), op, ": inputs must share a dtype, got ", a.str(), " and ", b.str());
  CNN_CHECK(a.device() == b.device(), op, ": inputs must be on one device, got ", a.str(), " and ", b.str());
}

Tensor like(const Tensor& x, const Shape& shape) { return Tensor::empty(shape, x.dtype(), x.device()); }

}  // namespace

void binary_into(kernels::BinaryOp op, const Tensor& a_in, const Tensor& b_in, Tensor& y) {
  const char* name = op == kernels::BinaryOp::add ? "add" : "mul";
  check_pair(name, a_in, b_in);
  CNN_CHECK(b_in.numel() >= 1 && a_in.numel() % b_in.numel() == 0, name, ": b ", b_in.str(),
            " does not broadcast against a ", a_in.str());
  CNN_CHECK(y.shape() == a_in.shape() && y.dtype() == a_in.dtype() && y.device() == a_in.device() &&
                y.is_contiguous(),
            name, ": output ", y.str(), " must be contiguous and match a ", a_in.str());
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  if (a.device().is_cuda()) return cuda::binary(op, a, b, y);
  const kernels::BinaryParams p{a.numel(), b.numel(), op};
  dispatch_cpu_float(a.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::binary_forward_cpu(a.data<T>(), b.data<T>(), y.data<T>(), p);
  });
}

Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor y = like(a, a.shape());
  binary_into(op, a, b, y);
  return y;
}

Tensor scale(const Tensor& x_in, double alpha) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::scale(x, alpha, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::scale_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
  });
  return y;
}

Tensor broadcast(const Tensor& v_in, const Shape& shape, double alpha) {
  const Tensor v = v_in.contiguous();
  Tensor y = like(v, shape);
  CNN_CHECK(v.numel() >= 1 && y.numel() % v.numel() == 0, "broadcast: ", v.str(), " does not tile shape ",
            shape_str(shape));
  if (v.device().is_cuda()) {
    cuda::broadcast(v, alpha, y);
    return y;
  }
  dispatch_cpu_float(v.dtype(), "broadcast", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::broadcast_cpu(v.data<T>(), y.data<T>(), y.numel(), v.numel(), alpha);
  });
  return y;
}

Tensor relu_forward(const Tensor& x_in) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, x.shape());
  if (x.device().is_cuda()) {
    cuda::relu_forward(x, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::relu_forward_cpu(x.data<T>(), y.data<T>(), x.numel());
  });
  return y;
}

Tensor relu_backward(const Tensor& y_in, const Tensor& dy_in) {
  check_pair("relu_backward", y_in, dy_in);
  CNN_CHECK(y_in.shape() == dy_in.shape(), "relu_backward: dy ", dy_in.str(), " does not match y ", y_in.str());
  const Tensor y = y_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = like(y, y.shape());
  if (y.device().is_cuda()) {
    cuda::relu_backward(y, dy, dx);
    return dx;
  }
  dispatch_cpu_float(y.dtype(), "relu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::relu_backward_cpu(y.data<T>(), dy.data<T>(), dx.data<T>(), y.numel());
  });
  return dx;
}

Tensor sum_all(const Tensor& x_in, double alpha) {
  const Tensor x = x_in.contiguous();
  Tensor y = like(x, {});
  if (x.device().is_cuda()) {
    cuda::sum_all(x, alpha, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::sum_all_cpu(x.data<T>(), y.data<T>(), x.numel(), alpha);
  });
  return y;
}

Tensor sum_rows(const Tensor& x_in, double alpha) {
  CNN_CHECK(x_in.dim() >= 1 && x_in.size(-1) >= 1, "sum over all but the last axis: expected (..., C) with C >= 1, got ",
            x_in.str());
  const Tensor x = x_in.contiguous();
  const int64_t cols = x.size(-1);
  Tensor y = like(x, {cols});
  if (x.device().is_cuda()) {
    cuda::sum_rows(x, alpha, y);
    return y;
  }
  dispatch_cpu_float(x.dtype(), "sum over all but the last axis", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::sum_rows_cpu(x.data<T>(), y.data<T>(), x.numel() / cols, cols, alpha);
  });
  return y;
}

Tensor gemm(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b) {
  check_pair("matmul", a_in, b_in);
  CNN_CHECK(a_in.dim() == 2 && b_in.dim() == 2, "matmul: expected 2-D operands, got ", a_in.str(), " and ",
            b_in.str());
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t kb = trans_b ? b.size(1) : b.size(0), n = trans_b ? b.size(0) : b.size(1);
  CNN_CHECK(k == kb, "matmul: inner extents differ: op(a) is (", m, ", ", k, "), op(b) is (", kb, ", ", n,
            ") from ", a.str(), " and ", b.str());
  Tensor c = like(a, {m, n});
  if (a.device().is_cuda()) {
    cuda::gemm(a, b, trans_a, trans_b, c);
    return c;
  }
  kernels::GemmParams p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  p.m = m, p.n = n, p.k = k;
  p.lda = a.size(1), p.ldb = b.size(1), p.ldc = n;
  if (k == 0) {  // BLAS leaves C untouched for K = 0; the empty sum is 0
    c.fill_(0.0);
    return c;
  }
  dispatch_cpu_float(a.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::gemm_cpu(a.data<T>(), b.data<T>(), c.data<T>(), p);
  });
  return c;
}

namespace {
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
DType loss_dtype(DType logits) { return logits == DType::f64 ? DType::f64 : DType::f32; }
}  // namespace

std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits_in, const Tensor& labels_in, double eps) {
  check_xent(logits_in, labels_in, eps);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  const DType lt = loss_dtype(logits.dtype());
  Tensor loss = Tensor::empty({}, lt, logits.device(), "loss");
  Tensor lse = Tensor::empty({logits.size(0)}, lt, logits.device(), "lse");
  if (logits.device().is_cuda()) {
    cuda::softmax_xent_forward(logits, labels, eps, loss, lse);
    return {loss, lse};
  }
  const kernels::XentParams p{logits.size(0), logits.size(1), eps};
  dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::softmax_xent_forward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), loss.data<T>(), p);
  });
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
  if (logits.device().is_cuda()) {
    cuda::softmax_xent_backward(logits, labels, lse, dloss, eps, dlogits);
    return dlogits;
  }
  const kernels::XentParams p{logits.size(0), logits.size(1), eps};
  dispatch_cpu_float(logits.dtype(), "softmax_cross_entropy backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::softmax_xent_backward_cpu(logits.data<T>(), labels.data<int64_t>(), lse.data<T>(), dloss.data<T>(),
                                       dlogits.data<T>(), p);
  });
  return dlogits;
}

}  // namespace cnn::backend

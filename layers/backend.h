// Tensor-level kernels without autograd: validate, allocate the output on the inputs' device and dispatch to the
// CPU kernels (f32, f64) or the CUDA kernels (f32, f16). layers/functional.h builds the differentiable ops on these.
#pragma once

#include <utility>

#include "core/tensor.h"
#include "kernels/elementwise/elementwise.h"

namespace cnn::backend {

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
// op(a) op(b) for 2-D a, b (row-major, gemm.h semantics).
Tensor gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);
// (loss (), lse (B)); loss and lse are f32 for f32/f16 logits, f64 for f64 logits.
std::pair<Tensor, Tensor> softmax_xent_forward(const Tensor& logits, const Tensor& labels, double label_smoothing);
Tensor softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                             double label_smoothing);

namespace cuda {
// CUDA implementations on preallocated contiguous outputs (CUDA builds; errors without CUDA).
void binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y);
void scale(const Tensor& x, double alpha, Tensor& y);
void broadcast(const Tensor& v, double alpha, Tensor& y);
void relu_forward(const Tensor& x, Tensor& y);
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx);
void sum_all(const Tensor& x, double alpha, Tensor& y);
void sum_rows(const Tensor& x, double alpha, Tensor& y);
void gemm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Tensor& c);
void softmax_xent_forward(const Tensor& logits, const Tensor& labels, double eps, Tensor& loss, Tensor& lse);
void softmax_xent_backward(const Tensor& logits, const Tensor& labels, const Tensor& lse, const Tensor& dloss,
                           double eps, Tensor& dlogits);
}  // namespace cuda

}  // namespace cnn::backend

// Differentiable ops on Tensor. Each takes the Tape explicitly: a null tape, a NoGradGuard or inputs that do not
// require grad mean no recording. Layout and dtype: inputs share dtype and device; f32 / f64 on CPU, f32 / f16 on
// CUDA (FP32 math). Broadcasting: b of shape (C) against a of shape (..., C), or b with one element.
#pragma once

#include "core/autograd.h"
#include "core/tensor.h"

namespace cnn::ops {

Tensor add(Tape* tape, const Tensor& a, const Tensor& b);  // a + b
Tensor mul(Tape* tape, const Tensor& a, const Tensor& b);  // a * b
Tensor scale(Tape* tape, const Tensor& x, double alpha);   // alpha * x

Tensor sum(Tape* tape, const Tensor& x);               // all elements -> shape ()
Tensor mean(Tape* tape, const Tensor& x);              // all elements -> shape ()
Tensor sum_except_last(Tape* tape, const Tensor& x);   // (..., C) -> (C)
Tensor mean_except_last(Tape* tape, const Tensor& x);  // (..., C) -> (C)

// a (M, K) @ b (K, N) -> (M, N)
Tensor matmul(Tape* tape, const Tensor& a, const Tensor& b);
// PyTorch Linear: x (M, K), w (N, K), bias (N) or undefined -> y = x w^T + bias, (M, N). x may also be
// (..., K) (e.g. NHWC activations: a 1x1 conv); it is flattened to (M, K) and the result reshaped to (..., N).
Tensor linear(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias);

Tensor relu(Tape* tape, const Tensor& x);

// Mean softmax cross-entropy with label smoothing (kernels/loss/softmax_xent.h): logits (B, K), labels (B) i64.
// Returns a () loss, f32 for f32/f16 logits (FP32 math), f64 for f64 logits.
Tensor softmax_cross_entropy(Tape* tape, const Tensor& logits, const Tensor& labels, double label_smoothing = 0.0);

// Reshape (copying first when x is not contiguous); one extent may be -1.
Tensor reshape(Tape* tape, const Tensor& x, const Shape& shape);

}  // namespace cnn::ops

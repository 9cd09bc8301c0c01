// Elementwise kernels on contiguous buffers (CPU: f32, f64 with OpenMP). Binary ops broadcast b cyclically,
// b[i % nb] with nb dividing n: a (C) vector against (..., C), or a scalar (nb = 1). Outputs may alias inputs.
// CUDA twins (f32, f16 with FP32 math) are in elementwise_cuda.h.
#pragma once

#include <cstdint>

namespace cnn::kernels {

enum class BinaryOp { add, mul };

struct BinaryParams {
  int64_t n = 0;   // elements of a and y
  int64_t nb = 1;  // elements of b; n % nb == 0
  BinaryOp op = BinaryOp::add;
};

// y[i] = a[i] (op) b[i % nb]
void binary_forward_cpu(const float* a, const float* b, float* y, const BinaryParams& p);
void binary_forward_cpu(const double* a, const double* b, double* y, const BinaryParams& p);

// y[i] = alpha * x[i]
void scale_cpu(const float* x, float* y, int64_t n, double alpha);
void scale_cpu(const double* x, double* y, int64_t n, double alpha);

// y[i] = alpha * v[i % nv]: the gradient of a broadcast or of a reduction.
void broadcast_cpu(const float* v, float* y, int64_t n, int64_t nv, double alpha);
void broadcast_cpu(const double* v, double* y, int64_t n, int64_t nv, double alpha);

// y = max(x, 0); dx = dy where y > 0, else 0 (the gradient at 0 is 0).
void relu_forward_cpu(const float* x, float* y, int64_t n);
void relu_forward_cpu(const double* x, double* y, int64_t n);
void relu_backward_cpu(const float* y, const float* dy, float* dx, int64_t n);
void relu_backward_cpu(const double* y, const double* dy, double* dx, int64_t n);

}  // namespace cnn::kernels

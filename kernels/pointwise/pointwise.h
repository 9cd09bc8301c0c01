// Pointwise and pooling kernels of the CNN layers on contiguous buffers (CPU: f32 / f64, OpenMP; CUDA twins in
// pointwise_cuda.h: f32 / f16, FP32 math):
//   gelu:          y = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2));  dx = dy (Phi(x) + x phi(x))
//   sample_scale:  y[n, i] = x[n, i] * s[n] for x (N, M): per-sample scaling (stochastic depth)
//   gap:           y[n, c] = mean_p x[n, p, c] for x (N, P, C);  dx[n, p, c] = dy[n, c] / P
//   drop_scales:   s[n] = u[n] < keep ? 1 / keep : 0
#pragma once

#include <cstdint>

namespace cnn::kernels {

void gelu_forward_cpu(const float* x, float* y, int64_t n);
void gelu_forward_cpu(const double* x, double* y, int64_t n);
void gelu_backward_cpu(const float* x, const float* dy, float* dx, int64_t n);
void gelu_backward_cpu(const double* x, const double* dy, double* dx, int64_t n);

void sample_scale_cpu(const float* x, const float* s, float* y, int64_t samples, int64_t per_sample);
void sample_scale_cpu(const double* x, const double* s, double* y, int64_t samples, int64_t per_sample);

void gap_forward_cpu(const float* x, float* y, int64_t samples, int64_t pixels, int64_t c);
void gap_forward_cpu(const double* x, double* y, int64_t samples, int64_t pixels, int64_t c);
void gap_backward_cpu(const float* dy, float* dx, int64_t samples, int64_t pixels, int64_t c);
void gap_backward_cpu(const double* dy, double* dx, int64_t samples, int64_t pixels, int64_t c);

// u holds uniforms in [0, 1) as float (drawn by Tensor::uniform_); s is float or double.
void drop_scales_cpu(const float* u, float* s, int64_t n, float keep);
void drop_scales_cpu(const float* u, double* s, int64_t n, float keep);

}  // namespace cnn::kernels

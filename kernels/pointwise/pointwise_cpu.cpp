// f64 GELU, per-sample scaling, global average pooling and drop-path scales on the CPU (OpenMP above 2^18 elements);
// the f32 GELU is gelu_cpu_f32.cpp.
#include <cmath>
#include <vector>

#include "kernels/pointwise/pointwise.h"

namespace cnn::kernels {

namespace {

constexpr int64_t kParallelMin = int64_t(1) << 18;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Phi(x) = erfc(-x / sqrt 2) / 2: equal to (1 + erf(x / sqrt 2)) / 2 but accurate in relative terms for x << 0 too.
void gelu_fwd(const double* x, double* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5 * x[i] * std::erfc(-x[i] * kInvSqrt2);
}

void gelu_bwd(const double* x, const double* dy, double* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double cdf = 0.5 * std::erfc(-v * kInvSqrt2), pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

template <class T>
void sample_scale(const T* x, const T* s, T* y, int64_t samples, int64_t per) {
#pragma omp parallel for schedule(static) if (samples * per >= kParallelMin)
  for (int64_t n = 0; n < samples; ++n)
    for (int64_t i = 0; i < per; ++i) y[n * per + i] = x[n * per + i] * s[n];
}

template <class T>
void gap_fwd(const T* x, T* y, int64_t samples, int64_t pixels, int64_t c) {
#pragma omp parallel for schedule(static) if (samples * pixels * c >= kParallelMin)
  for (int64_t n = 0; n < samples; ++n) {
    std::vector<double> acc(size_t(c), 0.0);  // pixel rows are contiguous: accumulate row by row
    for (int64_t p = 0; p < pixels; ++p) {
      const T* xr = x + (n * pixels + p) * c;
      for (int64_t ch = 0; ch < c; ++ch) acc[size_t(ch)] += double(xr[ch]);
    }
    for (int64_t ch = 0; ch < c; ++ch) y[n * c + ch] = T(acc[size_t(ch)] / double(pixels));
  }
}

template <class T>
void gap_bwd(const T* dy, T* dx, int64_t samples, int64_t pixels, int64_t c) {
  const double inv = 1.0 / double(pixels);
#pragma omp parallel for schedule(static) if (samples * pixels * c >= kParallelMin)
  for (int64_t n = 0; n < samples; ++n)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t ch = 0; ch < c; ++ch) dx[(n * pixels + p) * c + ch] = T(double(dy[n * c + ch]) * inv);
}

template <class T>
void drop_scales(const float* u, T* s, int64_t n, float keep) {
  const float inv = 1.0f / keep;  // rounded once to float on both devices
  for (int64_t i = 0; i < n; ++i) s[i] = u[i] < keep ? T(inv) : T(0);
}

}  // namespace

void gelu_forward_cpu(const double* x, double* y, int64_t n) { gelu_fwd(x, y, n); }
void gelu_backward_cpu(const double* x, const double* dy, double* dx, int64_t n) { gelu_bwd(x, dy, dx, n); }
void sample_scale_cpu(const float* x, const float* s, float* y, int64_t samples, int64_t per) {
  sample_scale(x, s, y, samples, per);
}
void sample_scale_cpu(const double* x, const double* s, double* y, int64_t samples, int64_t per) {
  sample_scale(x, s, y, samples, per);
}
void gap_forward_cpu(const float* x, float* y, int64_t samples, int64_t pixels, int64_t c) {
  gap_fwd(x, y, samples, pixels, c);
}
void gap_forward_cpu(const double* x, double* y, int64_t samples, int64_t pixels, int64_t c) {
  gap_fwd(x, y, samples, pixels, c);
}
void gap_backward_cpu(const float* dy, float* dx, int64_t samples, int64_t pixels, int64_t c) {
  gap_bwd(dy, dx, samples, pixels, c);
}
void gap_backward_cpu(const double* dy, double* dx, int64_t samples, int64_t pixels, int64_t c) {
  gap_bwd(dy, dx, samples, pixels, c);
}
void drop_scales_cpu(const float* u, float* s, int64_t n, float keep) { drop_scales(u, s, n, keep); }
void drop_scales_cpu(const float* u, double* s, int64_t n, float keep) { drop_scales(u, s, n, keep); }

}  // namespace cnn::kernels

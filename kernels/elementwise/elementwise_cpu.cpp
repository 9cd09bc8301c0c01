// CPU elementwise kernels (OpenMP over elements; small inputs stay single-threaded).
#include "kernels/elementwise/elementwise.h"

#include "core/error.h"

namespace cnn::kernels {

namespace {

// Memory-bound: below this a single thread is as fast, and an idle OpenMP team would spin against OpenBLAS.
constexpr int64_t kParallelMin = int64_t(1) << 18;

template <class T>
void binary_impl(const T* a, const T* b, T* y, const BinaryParams& p) {
  CNN_CHECK(p.nb >= 1 && p.n % p.nb == 0, "binary_forward_cpu: b of ", p.nb, " elements does not tile ", p.n);
  const int64_t rows = p.n / p.nb, nb = p.nb;
#pragma omp parallel for schedule(static) if (p.n > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const T* ar = a + r * nb;
    T* yr = y + r * nb;
    if (p.op == BinaryOp::add) {
      for (int64_t j = 0; j < nb; ++j) yr[j] = ar[j] + b[j];
    } else {
      for (int64_t j = 0; j < nb; ++j) yr[j] = ar[j] * b[j];
    }
  }
}

template <class T>
void scale_impl(const T* x, T* y, int64_t n, double alpha) {
  const T s = T(alpha);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = s * x[i];
}

template <class T>
void broadcast_impl(const T* v, T* y, int64_t n, int64_t nv, double alpha) {
  CNN_CHECK(nv >= 1 && n % nv == 0, "broadcast_cpu: ", nv, " values do not tile ", n);
  const T s = T(alpha);
  const int64_t rows = n / nv;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < nv; ++j) y[r * nv + j] = s * v[j];
  }
}

template <class T>
void relu_fwd_impl(const T* x, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_bwd_impl(const T* y, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}

}  // namespace

void binary_forward_cpu(const float* a, const float* b, float* y, const BinaryParams& p) { binary_impl(a, b, y, p); }
void binary_forward_cpu(const double* a, const double* b, double* y, const BinaryParams& p) {
  binary_impl(a, b, y, p);
}
void scale_cpu(const float* x, float* y, int64_t n, double alpha) { scale_impl(x, y, n, alpha); }
void scale_cpu(const double* x, double* y, int64_t n, double alpha) { scale_impl(x, y, n, alpha); }
void broadcast_cpu(const float* v, float* y, int64_t n, int64_t nv, double alpha) { broadcast_impl(v, y, n, nv, alpha); }
void broadcast_cpu(const double* v, double* y, int64_t n, int64_t nv, double alpha) {
  broadcast_impl(v, y, n, nv, alpha);
}
void relu_forward_cpu(const float* x, float* y, int64_t n) { relu_fwd_impl(x, y, n); }
void relu_forward_cpu(const double* x, double* y, int64_t n) { relu_fwd_impl(x, y, n); }
void relu_backward_cpu(const float* y, const float* dy, float* dx, int64_t n) { relu_bwd_impl(y, dy, dx, n); }
void relu_backward_cpu(const double* y, const double* dy, double* dx, int64_t n) { relu_bwd_impl(y, dy, dx, n); }

}  // namespace cnn::kernels

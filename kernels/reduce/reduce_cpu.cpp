// CPU sum reductions: fixed-size chunks reduced in parallel into FP64 partials, then combined in chunk order.
#include <vector>

#include "core/error.h"
#include "kernels/reduce/reduce.h"

namespace cnn::kernels {

namespace {

constexpr int64_t kChunk = 8192;        // elements per partial of sum_all
constexpr int64_t kRowsPerChunk = 64;   // rows per partial of sum_rows

template <class T>
void sum_all_impl(const T* x, T* y, int64_t n, double alpha) {
  CNN_CHECK(n >= 0, "sum_all_cpu: negative element count ", n);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(size_t(chunks), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 32)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    double s = 0.0;
    for (int64_t i = c * kChunk; i < end; ++i) s += double(x[i]);
    partial[c] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  y[0] = T(alpha * total);
}

template <class T>
void sum_rows_impl(const T* x, T* y, int64_t rows, int64_t cols, double alpha) {
  CNN_CHECK(rows >= 0 && cols >= 1, "sum_rows_cpu: expected rows >= 0 and cols >= 1, got ", rows, " x ", cols);
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  std::vector<double> partial(size_t(chunks * cols), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1 && rows * cols > (int64_t(1) << 18))
  for (int64_t k = 0; k < chunks; ++k) {
    double* acc = partial.data() + k * cols;
    const int64_t end = std::min(rows, (k + 1) * kRowsPerChunk);
    for (int64_t r = k * kRowsPerChunk; r < end; ++r) {
      const T* xr = x + r * cols;
      for (int64_t c = 0; c < cols; ++c) acc[c] += double(xr[c]);
    }
  }
#pragma omp parallel for schedule(static) if (cols > 4096)
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0.0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[size_t(k * cols + c)];
    y[c] = T(alpha * s);
  }
}

}  // namespace

void sum_all_cpu(const float* x, float* y, int64_t n, double alpha) { sum_all_impl(x, y, n, alpha); }
void sum_all_cpu(const double* x, double* y, int64_t n, double alpha) { sum_all_impl(x, y, n, alpha); }
void sum_rows_cpu(const float* x, float* y, int64_t rows, int64_t cols, double alpha) {
  sum_rows_impl(x, y, rows, cols, alpha);
}
void sum_rows_cpu(const double* x, double* y, int64_t rows, int64_t cols, double alpha) {
  sum_rows_impl(x, y, rows, cols, alpha);
}

}  // namespace cnn::kernels

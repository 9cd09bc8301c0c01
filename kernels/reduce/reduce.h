// Sum reductions on contiguous buffers, deterministic (fixed split, independent of the thread count).
//   sum_all:  y[0] = alpha * sum_i x[i]
//   sum_rows: y[c] = alpha * sum_r x[r, c] for x (R, C): the reduction over all but the last axis.
// CPU: f32 / f64 inputs, FP64 accumulation. CUDA (reduce_cuda.h): f32 / f16 inputs, FP32 accumulation.
#pragma once

#include <cstdint>

namespace cnn::kernels {

void sum_all_cpu(const float* x, float* y, int64_t n, double alpha);
void sum_all_cpu(const double* x, double* y, int64_t n, double alpha);
void sum_rows_cpu(const float* x, float* y, int64_t rows, int64_t cols, double alpha);
void sum_rows_cpu(const double* x, double* y, int64_t rows, int64_t cols, double alpha);

}  // namespace cnn::kernels

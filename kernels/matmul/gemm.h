// Row-major GEMM: C (M, N) = alpha * op(A) op(B) + beta * C, op(A) (M, K), op(B) (K, N); op = transpose when
// trans_* is set (then A is stored (K, M) / B is stored (N, K)). Leading dimensions are row strides in elements.
// CPU: OpenBLAS cblas_sgemm / cblas_dgemm. CUDA (gemm_cuda.h): cublasGemmEx, FP32 compute for f32 and f16.
#pragma once

#include <cstdint>
#include <string>

namespace cnn::kernels {

struct GemmParams {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  double alpha = 1.0, beta = 0.0;
  // Throws naming `op` unless extents are >= 0, fit in int32 (BLAS) and leading dimensions cover each row.
  void validate(const char* op) const;
  std::string str() const;
};

void gemm_cpu(const float* a, const float* b, float* c, const GemmParams& p);
void gemm_cpu(const double* a, const double* b, double* c, const GemmParams& p);

}  // namespace cnn::kernels

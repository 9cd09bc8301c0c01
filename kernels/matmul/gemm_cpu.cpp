// GEMM parameter checks and the CPU backend (OpenBLAS, row-major interface).
#include <cblas.h>

#include <limits>

#include "core/error.h"
#include "kernels/matmul/gemm.h"

namespace cnn::kernels {

void GemmParams::validate(const char* op) const {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  CNN_CHECK(m >= 0 && n >= 0 && k >= 0, op, ": negative GEMM extent in ", str());
  CNN_CHECK(m <= kMax && n <= kMax && k <= kMax && lda <= kMax && ldb <= kMax && ldc <= kMax, op,
            ": GEMM extents must fit in int32, got ", str());
  const int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  CNN_CHECK(lda >= std::max<int64_t>(1, a_cols), op, ": lda ", lda, " below the row length ", a_cols, " in ", str());
  CNN_CHECK(ldb >= std::max<int64_t>(1, b_cols), op, ": ldb ", ldb, " below the row length ", b_cols, " in ", str());
  CNN_CHECK(ldc >= std::max<int64_t>(1, n), op, ": ldc ", ldc, " below the row length ", n, " in ", str());
}

std::string GemmParams::str() const {
  return str_cat("M=", m, " N=", n, " K=", k, " op(A)=", trans_a ? "T" : "N", " op(B)=", trans_b ? "T" : "N",
                 " lda=", lda, " ldb=", ldb, " ldc=", ldc);
}

void gemm_cpu(const float* a, const float* b, float* c, const GemmParams& p) {
  p.validate("gemm_cpu");
  if (p.m == 0 || p.n == 0) return;
  cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, int(p.m),
              int(p.n), int(p.k), float(p.alpha), a, int(p.lda), b, int(p.ldb), float(p.beta), c, int(p.ldc));
}

void gemm_cpu(const double* a, const double* b, double* c, const GemmParams& p) {
  p.validate("gemm_cpu");
  if (p.m == 0 || p.n == 0) return;
  cblas_dgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, int(p.m),
              int(p.n), int(p.k), p.alpha, a, int(p.lda), b, int(p.ldb), p.beta, c, int(p.ldc));
}

}  // namespace cnn::kernels

// GEMM parameter checks and the CPU backend (OpenBLAS, row-major interface): large products are split into one
// panel of C per OpenMP thread, each a single-threaded OpenBLAS call.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
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

namespace {

// Below this many multiply-adds one call is cheaper than waking the OpenMP team.
constexpr double kSplitMinMacs = 1 << 21;
constexpr int64_t kPanelAlign = 16;  // panel edges on 16 rows / columns (whole SIMD tiles of the BLAS kernels)

// OpenBLAS's own worker threads spin in sched_yield between calls, competing with the OpenMP team for the cores;
// with one BLAS thread per call the parallelism comes from the panel split instead.
void use_single_threaded_blas() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

// Splits C along its longer side (rows of op(A) or columns of op(B)) into one aligned panel per thread. The panels
// depend only on the shape and the thread count, so runs are reproducible (not bitwise equal across thread counts).
template <class T, class Call>
void gemm_panels(const T* a, const T* b, T* c, const GemmParams& p, Call call) {
  use_single_threaded_blas();
  const double macs = double(p.m) * double(p.n) * double(p.k);
  const bool by_rows = p.m >= p.n;
  const int64_t extent = by_rows ? p.m : p.n;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int parts = int(std::min<int64_t>(threads, extent / kPanelAlign));
  if (parts <= 1 || macs < kSplitMinMacs) {
    call(a, b, c, p);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int t = 0; t < parts; ++t) {
    const int64_t step = (extent / parts + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
    const int64_t lo = std::min(extent, t * step), hi = t + 1 == parts ? extent : std::min(extent, lo + step);
    if (hi <= lo) continue;
    GemmParams q = p;
    if (by_rows) {
      q.m = hi - lo;
      call(a + (p.trans_a ? lo : lo * p.lda), b, c + lo * p.ldc, q);
    } else {
      q.n = hi - lo;
      call(a, b + (p.trans_b ? lo * p.ldb : lo), c + lo, q);
    }
  }
}

CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

}  // namespace

void gemm_cpu(const float* a, const float* b, float* c, const GemmParams& p) {
  p.validate("gemm_cpu");
  if (p.m == 0 || p.n == 0) return;
  gemm_panels(a, b, c, p, [](const float* pa, const float* pb, float* pc, const GemmParams& q) {
    cblas_sgemm(CblasRowMajor, op(q.trans_a), op(q.trans_b), int(q.m), int(q.n), int(q.k), float(q.alpha), pa,
                int(q.lda), pb, int(q.ldb), float(q.beta), pc, int(q.ldc));
  });
}

void gemm_cpu(const double* a, const double* b, double* c, const GemmParams& p) {
  p.validate("gemm_cpu");
  if (p.m == 0 || p.n == 0) return;
  gemm_panels(a, b, c, p, [](const double* pa, const double* pb, double* pc, const GemmParams& q) {
    cblas_dgemm(CblasRowMajor, op(q.trans_a), op(q.trans_b), int(q.m), int(q.n), int(q.k), q.alpha, pa, int(q.lda), pb,
                int(q.ldb), q.beta, pc, int(q.ldc));
  });
}

}  // namespace cnn::kernels

// gemm_cpu (OpenBLAS, split into per-thread panels of C when large) against a double reference for every transpose
// combination, padded leading dimensions, alpha / beta, both split directions; repeated calls agree bitwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/matmul/gemm.h"
#include "tests/kernels/dwconv_test_util.h"

namespace cnn::kernels {
namespace {

struct Case {
  bool ta, tb;
  int64_t m, n, k;
};

std::string describe(const Case& c, uint64_t seed) {
  return "M=" + std::to_string(c.m) + " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " seed=" + std::to_string(seed);
}

// Row-major storage of op(X) (rows, cols) with one padding column per row.
GemmParams params(const Case& c) {
  GemmParams p;
  p.trans_a = c.ta, p.trans_b = c.tb;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.lda = (c.ta ? c.m : c.k) + 3, p.ldb = (c.tb ? c.k : c.n) + 5, p.ldc = c.n + 2;
  p.alpha = 0.5, p.beta = 0.75;
  return p;
}

template <class T>
std::vector<double> reference(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c0,
                              const GemmParams& p) {
  std::vector<double> c(c0.begin(), c0.end());
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0.0;
      for (int64_t l = 0; l < p.k; ++l) {
        const double av = p.trans_a ? a[size_t(l * p.lda + i)] : a[size_t(i * p.lda + l)];
        const double bv = p.trans_b ? b[size_t(j * p.ldb + l)] : b[size_t(l * p.ldb + j)];
        s += av * bv;
      }
      c[size_t(i * p.ldc + j)] = p.alpha * s + p.beta * double(c0[size_t(i * p.ldc + j)]);
    }
  return c;
}

template <class T>
void check_case(const Case& cs, uint64_t seed, double unit_roundoff) {
  const GemmParams p = params(cs);
  const size_t a_rows = size_t(cs.ta ? cs.k : cs.m), b_rows = size_t(cs.tb ? cs.n : cs.k);
  const auto a = test::random_uniform<T>(a_rows * size_t(p.lda), seed);
  const auto b = test::random_uniform<T>(b_rows * size_t(p.ldb), seed + 1);
  const auto c0 = test::random_uniform<T>(size_t(cs.m * p.ldc), seed + 2);
  std::vector<T> c = c0;
  gemm_cpu(a.data(), b.data(), c.data(), p);
  // Inputs in [-1, 1): each of the K products and sums rounds once, so |error| <= 2 K u (plus the alpha/beta step).
  const double atol = 2.0 * double(cs.k + 2) * unit_roundoff;
  EXPECT_TRUE(test::all_close(c, reference(a, b, c0, p), atol, 0.0, describe(cs, seed)));

  std::vector<T> again = c0;  // same thread count, same panels: bitwise the same result (runs are reproducible)
  gemm_cpu(a.data(), b.data(), again.data(), p);
  EXPECT_TRUE(again == c) << "repeated call differs for " << describe(cs, seed);
}

const std::vector<Case> kCases = {
    {false, false, 1000, 72, 48},  {false, true, 1000, 72, 48}, {true, false, 1000, 72, 48}, {true, true, 1000, 72, 48},
    {false, false, 40, 1200, 64},  {false, true, 40, 1200, 64}, {true, false, 40, 1200, 64}, {true, true, 40, 1200, 64},
    {true, false, 128, 130, 3000}, {false, false, 7, 9, 5},  // below the split threshold: one call
};

TEST(GemmCpu, FloatMatchesReferenceAllTransposes) {
  uint64_t seed = 100;
  for (const Case& c : kCases) check_case<float>(c, seed += 3, 0x1p-24);
}

TEST(GemmCpu, DoubleMatchesReferenceAllTransposes) {
  uint64_t seed = 200;
  for (const Case& c : kCases) check_case<double>(c, seed += 3, 0x1p-53);
}

}  // namespace
}  // namespace cnn::kernels

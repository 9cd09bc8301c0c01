// Welford statistics and Chan's merge (kernels/norm/welford.h), as the CUDA BatchNorm statistics use them: values
// split into row chunks, one Welford per chunk, chunks merged in order; checked against a two-pass FP64 mean and
// variance on data with a large offset (where sum(x^2) - n mean^2 in FP32 loses every digit).
#include "kernels/norm/welford.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace cnn::kernels {
namespace {

struct Exact {
  double mean = 0, var = 0;
};

Exact two_pass(const std::vector<float>& v) {
  Exact e;
  for (float x : v) e.mean += x;
  e.mean /= double(v.size());
  for (float x : v) e.var += (x - e.mean) * (x - e.mean);
  e.var /= double(v.size());
  return e;
}

Welford chunked(const std::vector<float>& v, size_t per_chunk) {
  Welford total;
  for (size_t r0 = 0; r0 < v.size(); r0 += per_chunk) {
    Welford w;
    for (size_t r = r0; r < std::min(v.size(), r0 + per_chunk); ++r) welford_add(w, v[r]);
    total = welford_merge(total, w);
  }
  return total;
}

TEST(Welford, ChunkedMergeMatchesTwoPassFp64) {
  std::mt19937 rng(20261201);
  // 82944 = the rows of a ConvMixer-768/32 BatchNorm at batch 64 and 256x256 input (36x36 maps); 1 and 7 rows are
  // the smallest cases; offsets up to 1e3 standard deviations.
  for (size_t rows : {size_t(1), size_t(7), size_t(1000), size_t(82944)}) {
    for (double offset : {0.0, 30.0, 1000.0}) {
      std::normal_distribution<float> normal(float(offset), 1.0f);
      std::vector<float> v(rows);
      for (float& x : v) x = normal(rng);
      const Exact e = two_pass(v);
      for (size_t per_chunk : {size_t(1), size_t(64), size_t(81), rows}) {
        const Welford w = chunked(v, per_chunk);
        // FP32 Welford: each update rounds the mean by ~1 ulp of |offset| (6e-5 at 1000), a random walk over the
        // updates; the deviations v - mean are exact to that error, so m2 / n keeps ~1e-4 of the variance (1) at
        // offsets <= 30 and 1e-3 at 1000 (the data's own ulp there is 6e-5 of one standard deviation).
        EXPECT_EQ(w.n, float(rows));
        EXPECT_NEAR(w.mean, e.mean, 1e-5 + 2e-5 * offset)
            << "rows " << rows << " offset " << offset << " chunk " << per_chunk;
        if (rows > 1) {
          EXPECT_NEAR(w.m2 / w.n, e.var, (offset >= 1000 ? 1e-3 : 1e-4) * e.var)
              << "rows " << rows << " offset " << offset << " chunk " << per_chunk;
        }
        EXPECT_GE(w.m2, 0.f);
      }
    }
  }
}

TEST(Welford, MergeIsExactOnSmallIntegersAndNeutralOnEmpty) {
  Welford a, b;
  for (float x : {1.f, 2.f, 3.f}) welford_add(a, x);
  for (float x : {10.f, 14.f}) welford_add(b, x);
  const Welford m = welford_merge(a, b);  // {1, 2, 3, 10, 14}: mean 6, sum of squared deviations 25 + 16 + 9 + 16 + 64 = 130
  EXPECT_EQ(m.n, 5.f);
  EXPECT_FLOAT_EQ(m.mean, 6.f);
  EXPECT_FLOAT_EQ(m.m2, 130.f);
  const Welford empty;
  EXPECT_EQ(welford_merge(empty, a).m2, a.m2);
  EXPECT_EQ(welford_merge(a, empty).mean, a.mean);
}

}  // namespace
}  // namespace cnn::kernels

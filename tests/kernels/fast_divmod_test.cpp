#include "kernels/common/fast_divmod.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using cnn::cuda::FastDivmod;

void expect_exact(uint32_t d, uint32_t n) {
  const FastDivmod f(d);
  uint32_t r = 0;
  const uint32_t q = f.divmod(n, r);
  ASSERT_EQ(q, n / d) << "n=" << n << " d=" << d;
  ASSERT_EQ(r, n % d) << "n=" << n << " d=" << d;
}

// Every divisor below 300 against every dividend below 70000 and the dividends next to each multiple near 2^31.
TEST(FastDivmod, SmallDivisorsExhaustively) {
  for (uint32_t d = 1; d < 300; ++d) {
    for (uint32_t n = 0; n < 70000; ++n) expect_exact(d, n);
    const uint32_t top = (uint32_t{1} << 31) - 1;
    for (uint32_t k = top / d - 2; k <= top / d; ++k)
      for (uint32_t n : {k * d - 1, k * d, k * d + 1})
        if (n <= top) expect_exact(d, n);
  }
}

// Random divisors up to 2^31 - 1 (powers of two and their neighbours included) against random dividends.
TEST(FastDivmod, RandomDivisorsAndDividends) {
  std::mt19937_64 rng(20261130);
  std::vector<uint32_t> divisors;
  for (int b = 0; b < 31; ++b)
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t{1} << b) + delta;
      if (d >= 1 && d < (int64_t{1} << 31)) divisors.push_back(static_cast<uint32_t>(d));
    }
  for (int i = 0; i < 2000; ++i) divisors.push_back(1 + static_cast<uint32_t>(rng() % ((uint32_t{1} << 31) - 1)));
  for (const uint32_t d : divisors)
    for (int i = 0; i < 2000; ++i) expect_exact(d, static_cast<uint32_t>(rng() % (uint32_t{1} << 31)));
}

TEST(FastDivmod, RejectsDivisorsOutsideItsRange) {
  EXPECT_THROW(FastDivmod(0), cnn::Error);
  EXPECT_THROW(FastDivmod(uint32_t{1} << 31), cnn::Error);
  EXPECT_NO_THROW(FastDivmod((uint32_t{1} << 31) - 1));
}

}  // namespace

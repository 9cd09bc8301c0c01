// Division by a divisor fixed at launch, as one multiply-high, an add and a shift (the round-up method of
// Granlund and Montgomery): q = (umulhi(n, m) + n) >> s with s = ceil(log2 d) and m = floor(2^32 (2^s - d) / d) + 1.
// Exact for 0 <= n < 2^31 and 1 <= d < 2^31 (umulhi(n, m) <= n, so the sum fits 32 bits). A kernel that divides a
// running index by grid dimensions on every iteration pays ~4 instructions instead of a ~20-instruction division.
#pragma once

#include <cstdint>

#include "core/dtype.h"  // CNN_HOST_DEVICE
#include "core/error.h"

namespace cnn::cuda {

struct FastDivmod {
  uint32_t d = 1, m = 1;
  int s = 0;

  FastDivmod() = default;
  explicit FastDivmod(uint32_t divisor) : d(divisor) {
    CNN_CHECK(divisor >= 1 && divisor < (uint32_t{1} << 31), "FastDivmod: divisor must be in [1, 2^31), got ", divisor);
    while ((uint64_t{1} << s) < d) ++s;
    m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - d)) / d + 1);
  }

  CNN_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, m);
#else
    const uint32_t hi = static_cast<uint32_t>((uint64_t{n} * m) >> 32);
#endif
    return (hi + n) >> s;
  }
  // n = q * d + r; returns q.
  CNN_HOST_DEVICE uint32_t divmod(uint32_t n, uint32_t& r) const {
    const uint32_t q = div(n);
    r = n - q * d;
    return q;
  }
};

}  // namespace cnn::cuda

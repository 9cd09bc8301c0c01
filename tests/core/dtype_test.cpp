// DType names and sizes; exhaustive half / bfloat16 conversion checks (round trip, ties to even, specials).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"

namespace cnn {
namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::f32), 4);
  EXPECT_EQ(dtype_size(DType::f16), 2);
  EXPECT_EQ(dtype_size(DType::bf16), 2);
  EXPECT_EQ(dtype_size(DType::f64), 8);
  EXPECT_EQ(dtype_size(DType::i32), 4);
  EXPECT_EQ(dtype_size(DType::i64), 8);
  EXPECT_EQ(dtype_size(DType::u8), 1);
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8}) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_THROW(dtype_from_name("float32"), Error);
}

// Every one of the 65536 half patterns survives half -> float -> half (NaNs stay NaN with their sign).
TEST(DType, HalfRoundTripAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_bits_to_float(uint16_t(h));
    const uint16_t back = float_to_half_bits(f);
    const bool is_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    if (is_nan) {
      ASSERT_TRUE(std::isnan(f)) << "pattern 0x" << std::hex << h;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << "sign of nan 0x" << std::hex << h;
      ASSERT_TRUE((back & 0x7c00u) == 0x7c00u && (back & 0x3ffu) != 0) << "nan 0x" << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << "pattern 0x" << std::hex << h << " -> " << f;
    }
  }
}

// The value of each half against a direct formula: subnormals m * 2^-24, normals (1 + m/1024) * 2^(e-15).
TEST(DType, HalfValuesMatchFormula) {
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const int e = int(h >> 10), m = int(h & 0x3ff);
    const double want = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    ASSERT_EQ(double(half_bits_to_float(uint16_t(h))), want) << "pattern 0x" << std::hex << h;
    ASSERT_EQ(double(half_bits_to_float(uint16_t(h | 0x8000u))), -want);
  }
  EXPECT_TRUE(std::isinf(half_bits_to_float(0x7c00u)));
  EXPECT_LT(half_bits_to_float(0xfc00u), 0.f);
}

// Rounding: the midpoint between neighbours h and h+1 goes to the even one; just above / below go to the nearest.
TEST(DType, HalfRoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t h = 0; h < 0x7bffu; ++h) {
    const float lo = half_bits_to_float(uint16_t(h)), hi = half_bits_to_float(uint16_t(h + 1));
    const float mid = (lo + hi) / 2;  // exact: halves need 11 significant bits, floats carry 24
    const uint16_t even = (h & 1u) ? uint16_t(h + 1) : uint16_t(h);
    ASSERT_EQ(float_to_half_bits(mid), even) << "midpoint after 0x" << std::hex << h;
    ASSERT_EQ(float_to_half_bits(std::nextafter(mid, 0.f)), h) << "below midpoint after 0x" << std::hex << h;
    ASSERT_EQ(float_to_half_bits(std::nextafter(mid, 1e9f)), h + 1) << "above midpoint after 0x" << std::hex << h;
    ASSERT_EQ(float_to_half_bits(-mid), even | 0x8000u);
  }
}

TEST(DType, HalfOverflowUnderflowAndSpecials) {
  EXPECT_EQ(float_to_half_bits(65504.f), 0x7bffu);               // largest finite
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7bffu);             // below the rounding boundary
  EXPECT_EQ(float_to_half_bits(65520.f), 0x7c00u);               // midpoint to inf rounds to even (inf)
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7c00u);
  EXPECT_EQ(float_to_half_bits(-1e10f), 0xfc00u);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00u);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -25)), 0x0000u);  // half of it: tie to even (zero)
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001u);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.f, -30)), 0x0000u);
  EXPECT_EQ(float_to_half_bits(-0.f), 0x8000u);
  EXPECT_EQ(float_to_half_bits(bits_to_float(0x00000001u)), 0x0000u);  // float subnormal
  const uint16_t nan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE((nan & 0x7c00u) == 0x7c00u && (nan & 0x3ffu) != 0);
}

TEST(DType, BFloat16RoundTripAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_bits_to_float(uint16_t(b));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(f))));
      continue;
    }
    ASSERT_EQ(float_to_bf16_bits(f), b) << "pattern 0x" << std::hex << b;
    if ((b & 0x7f80u) == 0x7f80u || b == 0x7f7fu || b == 0xff7fu) continue;
    // Midpoint to the next pattern (same sign) rounds to even.
    const uint32_t mid_bits = (b << 16) | 0x8000u;
    const uint16_t even = (b & 1u) ? uint16_t(b + 1) : uint16_t(b);
    ASSERT_EQ(float_to_bf16_bits(bits_to_float(mid_bits)), even) << "midpoint after 0x" << std::hex << b;
    ASSERT_EQ(float_to_bf16_bits(bits_to_float(mid_bits + 1)), b + 1);
    ASSERT_EQ(float_to_bf16_bits(bits_to_float(mid_bits - 1)), b);
  }
  EXPECT_EQ(float_to_bf16_bits(3.4e38f), 0x7f80u);  // rounds past the largest finite bf16 to inf
}

TEST(DType, CastValueGoesThroughFloatForHalfTypes) {
  EXPECT_EQ(cast_value<Half>(int64_t(2049)).bits, float_to_half_bits(2048.f));  // 2049 ties to even 2048
  EXPECT_EQ(cast_value<int32_t>(Half(3.0f)), 3);
  EXPECT_EQ(cast_value<double>(BFloat16(1.5f)), 1.5);
}

}  // namespace
}  // namespace cnn

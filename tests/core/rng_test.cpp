// Philox 4x32-10 known answers, the portable log/cos accuracy, and the statistics and offset rule of random init.
#include <gtest/gtest.h>

#include <cmath>

#include "core/philox.h"
#include "core/tensor.h"

namespace cnn {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Rng, PhiloxKnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const rng::Philox4 r = rng::philox4x32_10(rng::Philox4{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}}, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], k.out[i]) << "word " << i << " of counter 0x" << std::hex << k.ctr[0];
  }
}

TEST(Rng, PortableLogAndCosAreAccurate) {
  double max_log = 0, max_cos = 0;
  for (uint32_t i = 1; i <= 1u << 24; i += 97) {
    const float u = float(i) / 16777216.0f;
    max_log = std::max(max_log, std::fabs(double(rng::portable_log(u)) - std::log(double(u))));
    max_cos = std::max(max_cos, std::fabs(double(rng::portable_cos_2pi(u)) - std::cos(2 * M_PI * double(u))));
  }
  EXPECT_LT(max_log, 4e-6) << "max abs error of log over (0, 1]";  // float log of values down to 2^-24 (|log| <= 17)
  EXPECT_LT(max_cos, 1e-6) << "max abs error of cos(2 pi t)";       // a few float ulps of 1
}

TEST(Rng, UniformNormalTruncStatistics) {
  const int64_t n = 200000;
  const uint64_t seed = 42;
  Tensor u = Tensor::empty({n}, DType::f64);
  u.uniform_(seed, 0, -1.0, 3.0);
  Tensor g = Tensor::empty({n}, DType::f32);
  g.normal_(seed, 0, 0.5, 2.0);
  Tensor t = Tensor::empty({n}, DType::f32);
  t.trunc_normal_(seed, 0, 0.0, 1.0, -2.0, 2.0);
  double su = 0, su2 = 0, sg = 0, sg2 = 0, st2 = 0;
  for (double v : u.to_vector<double>()) {
    ASSERT_TRUE(v >= -1.0 && v < 3.0) << v;
    su += v, su2 += v * v;
  }
  for (float v : g.to_vector<float>()) sg += v, sg2 += double(v) * v;
  for (float v : t.to_vector<float>()) {
    ASSERT_TRUE(v >= -2.f && v <= 2.f) << v;
    st2 += double(v) * v;
  }
  // With n = 2e5 the standard error of a mean is sd / 447; bounds are about 5 standard errors (seed 42).
  EXPECT_NEAR(su / n, 1.0, 0.015);
  EXPECT_NEAR(su2 / n - (su / n) * (su / n), 16.0 / 12.0, 0.02);
  EXPECT_NEAR(sg / n, 0.5, 0.025);
  EXPECT_NEAR(std::sqrt(sg2 / n - (sg / n) * (sg / n)), 2.0, 0.02);
  EXPECT_NEAR(st2 / n, 0.7737, 0.01);  // variance of N(0,1) truncated to [-2, 2]
}

TEST(Rng, OffsetSelectsTheSameStream) {
  Tensor all = Tensor::empty({100}, DType::f32);
  all.normal_(7, 0, 0.0, 1.0);
  Tensor tail = Tensor::empty({40}, DType::f32);
  tail.normal_(7, 60, 0.0, 1.0);
  EXPECT_EQ(tail.to_vector<float>(), all.slice(0, 60, 100).to_vector<float>());
  Tensor other = Tensor::empty({100}, DType::f32);
  other.normal_(8, 0, 0.0, 1.0);
  EXPECT_NE(other.to_vector<float>(), all.to_vector<float>());
  // A non-contiguous destination draws in its own row-major order.
  Tensor m = Tensor::zeros({10, 10}, DType::f32);
  m.permute({1, 0}).normal_(7, 0, 0.0, 1.0);
  EXPECT_EQ(m.permute({1, 0}).contiguous().to_vector<float>(), all.to_vector<float>());
}

TEST(Rng, HalfInitIsRoundedFloatInit) {
  Tensor f = Tensor::empty({1000}, DType::f32);
  f.uniform_(3, 5, -1, 1);
  Tensor h = Tensor::empty({1000}, DType::f16);
  h.uniform_(3, 5, -1, 1);
  EXPECT_EQ(f.to(DType::f16).to_vector<Half>().size(), 1000u);
  const auto a = f.to(DType::f16).to_vector<Half>(), b = h.to_vector<Half>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].bits, b[i].bits) << i;
}

}  // namespace
}  // namespace cnn

// The f32 CPU GELU (every ISA build this CPU runs) against Phi(x) = erfc(-x / sqrt 2) / 2 in double, over a dense
// grid of [-20, 20], a sweep of float bit patterns up to |x| = 20 and special values; the parallel path matches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/pointwise/gelu_cpu_f32.h"
#include "kernels/pointwise/pointwise.h"

namespace cnn::kernels::gelu_f32 {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kTiny = 0x1p-122;    // below this, results lose relative precision to the subnormal tail Q(|x|)
constexpr double kSubUlp = 0x1p-149;  // the smallest subnormal float
// Measured maxima (both ISAs): 6.5 ulp forward, 6.2 ulp backward, 32 and 21 subnormal ulps below kTiny; the
// bounds leave ~25% margin. Sources: fit (0.25 ulp), exp polynomial and reduction (~1.5), the rational t, Horner
// and the final products (~1 each).
constexpr double kFwdUlps = 8.0;
constexpr double kBwdUlps = 8.0;
constexpr double kTinySubUlps = 40.0;

double ulp_of(double v) {
  const float f = float(std::fabs(v));
  return double(std::nextafter(f, std::numeric_limits<float>::infinity())) - double(f);
}

double ref_forward(double x) { return x * 0.5 * std::erfc(-x * kInvSqrt2); }
double ref_cdf(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }
double ref_pdf(double x) { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }

std::vector<float> test_inputs() {
  std::vector<float> x;
  for (int64_t i = -2000000; i <= 2000000; ++i) x.push_back(float(double(i) * 1e-5));  // step 1e-5 on [-20, 20]
  for (uint32_t b = 0; b < 0x41a00000u; b += 997) {  // every 997th float bit pattern in [0, 20), both signs
    float f;
    std::memcpy(&f, &b, sizeof f);
    x.push_back(f);
    x.push_back(-f);
  }
  return x;
}

std::vector<Isa> isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

TEST(GeluCpuF32, ForwardWithinUlpsOfErfcReference) {
  const std::vector<float> x = test_inputs();
  std::vector<float> y(x.size());
  for (Isa isa : isas()) {
    forward(isa, x.data(), y.data(), int64_t(x.size()));
    double worst = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double ref = ref_forward(x[i]), err = std::fabs(double(y[i]) - ref);
      const bool tiny = std::fabs(ref) < kTiny;
      const double units = tiny ? err / kSubUlp : err / ulp_of(ref);
      worst = std::max(worst, tiny ? 0.0 : units);
      ASSERT_LE(units, tiny ? kTinySubUlps : kFwdUlps)
          << "isa " << int(isa) << " index " << i << " x " << x[i] << " expected " << ref << " got " << y[i]
          << " abs err " << err << " rel err " << err / std::fabs(ref) << (tiny ? " (subnormal ulps)" : " (ulps)");
    }
    RecordProperty("fwd_max_ulps_isa_" + std::to_string(int(isa)), std::to_string(worst));
  }
}

// The derivative crosses zero near x = -0.75 (Phi(x) = -x phi(x)): the error is bounded in ulps of the larger term.
TEST(GeluCpuF32, BackwardWithinUlpsOfErfcReference) {
  const std::vector<float> x = test_inputs();
  const std::vector<float> dy(x.size(), 1.0f);
  std::vector<float> dx(x.size());
  for (Isa isa : isas()) {
    backward(isa, x.data(), dy.data(), dx.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], ref = ref_cdf(v) + v * ref_pdf(v), err = std::fabs(double(dx[i]) - ref);
      const double scale = ref_cdf(v) + std::fabs(v * ref_pdf(v));
      const bool tiny = scale < kTiny;
      const double units = tiny ? err / kSubUlp : err / ulp_of(scale);
      ASSERT_LE(units, tiny ? kTinySubUlps : kBwdUlps)
          << "isa " << int(isa) << " index " << i << " x " << x[i] << " expected " << ref << " got " << dx[i]
          << " abs err " << err << " rel err " << err / std::fabs(ref) << (tiny ? " (subnormal ulps)" : " (ulps)");
    }
  }
}

TEST(GeluCpuF32, BackwardScalesByDy) {
  const std::vector<float> x = {-3.0f, -0.5f, 0.25f, 2.0f}, dy = {2.0f, -4.0f, 0.5f, 8.0f};  // powers of 2: exact
  const std::vector<float> ones(x.size(), 1.0f);
  std::vector<float> d1(x.size()), d(x.size());
  for (Isa isa : isas()) {
    backward(isa, x.data(), ones.data(), d1.data(), int64_t(x.size()));
    backward(isa, x.data(), dy.data(), d.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(d[i], dy[i] * d1[i]) << "isa " << int(isa) << " x " << x[i];
  }
}

// Same conventions as the f64 formula x Phi(x) and Phi(x) + x phi(x): -inf gives -inf * 0 = NaN.
TEST(GeluCpuF32, SpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kMax = std::numeric_limits<float>::max();
  const std::vector<float> x = {kNaN, kInf, -kInf, 0.0f, -0.0f, kMax, -kMax, 1e30f, -1e30f, 15.0f, -15.0f};
  const std::vector<float> ones(x.size(), 1.0f);
  std::vector<float> y(x.size()), d(x.size());
  for (Isa isa : isas()) {
    forward(isa, x.data(), y.data(), int64_t(x.size()));
    backward(isa, x.data(), ones.data(), d.data(), int64_t(x.size()));
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(d[0])) << "isa " << int(isa) << ": NaN must pass through";
    EXPECT_EQ(y[1], kInf) << "isa " << int(isa);
    EXPECT_TRUE(std::isnan(d[1])) << "isa " << int(isa) << ": 1 + inf * 0";
    EXPECT_TRUE(std::isnan(y[2]) && std::isnan(d[2])) << "isa " << int(isa) << ": -inf * 0";
    EXPECT_TRUE(y[3] == 0.0f && !std::signbit(y[3]) && d[3] == 0.5f) << "isa " << int(isa);
    EXPECT_TRUE(y[4] == 0.0f && std::signbit(y[4]) && d[4] == 0.5f) << "isa " << int(isa);
    EXPECT_EQ(y[5], kMax) << "isa " << int(isa);
    EXPECT_EQ(d[5], 1.0f) << "isa " << int(isa);
    EXPECT_TRUE(y[6] == 0.0f && std::signbit(y[6]) && d[6] == 0.0f) << "isa " << int(isa) << " got " << y[6];
    EXPECT_EQ(y[7], 1e30f) << "isa " << int(isa);
    EXPECT_TRUE(y[8] == 0.0f && d[8] == 0.0f) << "isa " << int(isa) << " got " << y[8] << ", " << d[8];
    EXPECT_EQ(y[9], 15.0f) << "isa " << int(isa);   // 15 Phi(15) = 15 (1 - 3.7e-51)
    EXPECT_EQ(y[10], -0.0f) << "isa " << int(isa);  // -15 Phi(-15) = -5.5e-50 underflows
  }
}

// The public entry (parallel chunks above 2^18 elements, widest ISA) equals element-by-element calls, including
// the ragged last chunk.
TEST(GeluCpuF32, ParallelEntryMatchesElementwise) {
  const int64_t n = (int64_t(1) << 19) + 37;
  std::vector<float> x(static_cast<size_t>(n)), dy(x.size()), y(x.size()), dx(x.size());
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = float(std::sin(double(i) * 0.37) * 6.0);
    dy[size_t(i)] = float(std::cos(double(i) * 0.11));
  }
  gelu_forward_cpu(x.data(), y.data(), n);
  gelu_backward_cpu(x.data(), dy.data(), dx.data(), n);
  for (int64_t i = 0; i < n; i += 997) {
    float y1, dx1;
    forward(best_isa(), &x[size_t(i)], &y1, 1);
    backward(best_isa(), &x[size_t(i)], &dy[size_t(i)], &dx1, 1);
    ASSERT_EQ(y[size_t(i)], y1) << "index " << i << " x " << x[size_t(i)];
    ASSERT_EQ(dx[size_t(i)], dx1) << "index " << i << " x " << x[size_t(i)];
  }
}

}  // namespace
}  // namespace cnn::kernels::gelu_f32

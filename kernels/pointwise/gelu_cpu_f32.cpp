// Exact (erf) GELU and its derivative for f32 on the CPU in vectorizable float arithmetic: one loop built for
// baseline x86-64, AVX2+FMA and AVX-512, chosen at run time. Phi comes from the normal tail Q(a) = exp(-a^2/2) t g(t),
// t = 1/(1 + P a), g fitted by scripts/fit_gelu_f32.py; tests/kernels/gelu_cpu_test.cpp measures the error.
#include "kernels/pointwise/gelu_cpu_f32.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/pointwise/pointwise.h"

namespace cnn::kernels {

namespace gelu_f32 {
namespace {

constexpr int64_t kParallelMin = int64_t(1) << 18;
constexpr int64_t kChunk = int64_t(1) << 14;  // elements per parallel work item (64 KiB of f32 per stream)
constexpr float kInvSqrt2Pi = 0.398942280401432677940f;
constexpr double kLog2e = 1.44269504088896340736;
constexpr double kLn2 = 0.693147180559945309417;
constexpr double kRoundMagic = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds a small double to an integer
// Beyond |x| = 15 the tail Q underflows (exp(-112.5) < 2^-149): clamping keeps every step finite.
constexpr float kMaxA = 15.0f;
constexpr int32_t kMaxABits = 0x41700000;  // the bit pattern of kMaxA
constexpr float kTailP = 0.3125f;
// g(t), highest degree first; fitted by scripts/fit_gelu_f32.py (relative error of t g(t) below 1.5e-8 on [0, 15]).
constexpr float kTail[] = {-0.01897384785115719f,   0.09119093418121338f,  -0.15061086416244507f, 0.073787622153759f,
                           -0.0022429220844060183f, 0.055452071130275726f, 0.09009390324354172f,  0.11188866198062897f,
                           0.12474896758794785f,    0.12466546893119812f};

[[gnu::always_inline]] inline int32_t float_to_bits(float f) {
  int32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

[[gnu::always_inline]] inline float bits_to_float(int32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// exp(-a^2/2) for 0 <= a <= kMaxA, within ~2 ulp down to the subnormal range. a^2 is exact in double (24-bit a),
// the reduction y = k ln2 + r runs in double, exp(r) (|r| <= ln2/2) is its degree-7 Taylor polynomial in float
// (truncation < 6e-9 relative), and 2^k is applied as two normal factors so that results down to 2^-149 round once.
[[gnu::always_inline]] inline float exp_neg_half_square(float a) {
  const double y = -0.5 * double(a) * double(a);
  const double kd = (y * kLog2e + kRoundMagic) - kRoundMagic;
  const float r = float(y - kd * kLn2);
  const int32_t k = int32_t(kd);
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t k1 = k >> 1, k2 = k - k1;  // k >= -163: both halves are normal exponents
  return p * bits_to_float((k1 + 127) << 23) * bits_to_float((k2 + 127) << 23);
}

// Phi(x) and phi(x) for one element: Q(|x|) = exp(-x^2/2) t g(t) is accurate in relative terms, so the lower tail
// Phi(x) = Q(-x) (x < 0) keeps its precision; the upper side 1 - Q loses nothing relevant since Phi >= 1/2 there.
struct NormalAt {
  float cdf, pdf;
};

[[gnu::always_inline]] inline NormalAt normal_at(float x) {
  // min(|x|, kMaxA) on the bit patterns (ordered like the values for x >= 0): an integer min stays branch-free for
  // the vectorizer. NaN becomes kMaxA here; the result stays NaN through the final products with x.
  const int32_t ab = float_to_bits(std::fabs(x));
  const float a = bits_to_float(ab < kMaxABits ? ab : kMaxABits);
  const float e = exp_neg_half_square(a);
  const float t = 1.0f / (1.0f + kTailP * a);
  float g = kTail[0];
#pragma GCC unroll 16
  for (int i = 1; i < int(sizeof kTail / sizeof kTail[0]); ++i) g = g * t + kTail[i];
  const float q = e * (t * g);
  // Phi = q for sign-bit-set x, 1 - q otherwise, as sign arithmetic (no select) so that nothing is computed
  // conditionally: the first sum is exactly 0 or 1.
  return {(0.5f + std::copysign(0.5f, x)) + std::copysign(q, -x), e * kInvSqrt2Pi};
}

[[gnu::always_inline]] inline void forward_loop(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * normal_at(x[i]).cdf;
}

[[gnu::always_inline]] inline void backward_loop(const float* x, const float* dy, float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const NormalAt v = normal_at(x[i]);
    dx[i] = dy[i] * (v.cdf + x[i] * v.pdf);
  }
}

void forward_generic(const float* x, float* y, int64_t n) { forward_loop(x, y, n); }
void backward_generic(const float* x, const float* dy, float* dx, int64_t n) { backward_loop(x, dy, dx, n); }
[[gnu::target("avx2,fma")]] void forward_avx2(const float* x, float* y, int64_t n) { forward_loop(x, y, n); }
[[gnu::target("avx2,fma")]] void backward_avx2(const float* x, const float* dy, float* dx, int64_t n) {
  backward_loop(x, dy, dx, n);
}
[[gnu::target("avx512f,avx512dq,avx512vl,avx2,fma")]] void forward_avx512(const float* x, float* y, int64_t n) {
  forward_loop(x, y, n);
}
[[gnu::target("avx512f,avx512dq,avx512vl,avx2,fma")]] void backward_avx512(const float* x, const float* dy, float* dx,
                                                                           int64_t n) {
  backward_loop(x, dy, dx, n);
}

}  // namespace

bool isa_supported(Isa isa) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (isa) {
    case Isa::avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    case Isa::avx2:
      return avx2;
    case Isa::generic:
      return true;
  }
  return false;
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::avx512) ? Isa::avx512
                          : isa_supported(Isa::avx2) ? Isa::avx2
                                                     : Isa::generic;
  return best;
}

void forward(Isa isa, const float* x, float* y, int64_t n) {
  const auto chunk = isa == Isa::avx512 ? forward_avx512 : isa == Isa::avx2 ? forward_avx2 : forward_generic;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t b = 0; b < n; b += kChunk) chunk(x + b, y + b, std::min(kChunk, n - b));
}

void backward(Isa isa, const float* x, const float* dy, float* dx, int64_t n) {
  const auto chunk = isa == Isa::avx512 ? backward_avx512 : isa == Isa::avx2 ? backward_avx2 : backward_generic;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t b = 0; b < n; b += kChunk) chunk(x + b, dy + b, dx + b, std::min(kChunk, n - b));
}

}  // namespace gelu_f32

void gelu_forward_cpu(const float* x, float* y, int64_t n) { gelu_f32::forward(gelu_f32::best_isa(), x, y, n); }

void gelu_backward_cpu(const float* x, const float* dy, float* dx, int64_t n) {
  gelu_f32::backward(gelu_f32::best_isa(), x, dy, dx, n);
}

}  // namespace cnn::kernels

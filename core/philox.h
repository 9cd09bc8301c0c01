// Philox 4x32-10 counter-based RNG and its float transforms, identical on host and device: every float step is
// an explicitly rounded operation (device __f*_rn, host double-then-round, exact by Figueroa's 2p+2 rule), so
// CPU and GPU produce bit-identical numbers. Element e of a fill with (seed, offset) uses counter
// (lo32(offset+e), hi32(offset+e), attempt, 0) and key (lo32(seed), hi32(seed)); see docs/core.md.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define CNN_HD __host__ __device__
#else
#define CNN_HD
#endif

namespace cnn::rng {

struct Philox4 {
  uint32_t v[4];
};

CNN_HD inline void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// Philox4x32 with 10 rounds (Salmon et al., SC'11), multipliers and Weyl constants from the paper.
CNN_HD inline Philox4 philox4x32_10(Philox4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(kM0, ctr.v[0], hi0, lo0);
    mulhilo32(kM1, ctr.v[2], hi1, lo1);
    ctr = Philox4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

CNN_HD inline Philox4 philox_for_element(uint64_t seed, uint64_t index, uint32_t attempt) {
  return philox4x32_10(Philox4{{uint32_t(index), uint32_t(index >> 32), attempt, 0u}}, uint32_t(seed),
                       uint32_t(seed >> 32));
}

// Correctly rounded float operations that no compiler may fuse or reassociate.
CNN_HD inline float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return float(double(a) * double(b));
#endif
}
CNN_HD inline float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return float(double(a) + double(b));
#endif
}
CNN_HD inline float rn_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return float(double(a) / double(b));
#endif
}
CNN_HD inline float rn_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
CNN_HD inline float rn_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// [0, 1): top 24 bits, exact.
CNN_HD inline float uniform01(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
// (0, 1]: never zero, so log() is finite.
CNN_HD inline float uniform01_open0(uint32_t x) { return float((x >> 8) + 1u) * (1.0f / 16777216.0f); }

// Natural log for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1).
CNN_HD inline float portable_log(float u) {
  union {
    float f;
    uint32_t i;
  } bits{u};
  int e = int((bits.i >> 23) & 0xffu) - 127;
  bits.i = (bits.i & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
  float m = bits.f;
  if (m > 1.41421356f) {
    m = rn_mul(m, 0.5f);  // exact
    ++e;
  }
  const float s = rn_div(rn_add(m, -1.0f), rn_add(m, 1.0f));
  const float s2 = rn_mul(s, s);
  // 2 * (s + s^3/3 + ... + s^11/11): |s| < 0.1716 so the next term is below 2^-28 relative.
  float p = rn_fma(s2, 2.0f / 11.0f, 2.0f / 9.0f);
  p = rn_fma(s2, p, 2.0f / 7.0f);
  p = rn_fma(s2, p, 2.0f / 5.0f);
  p = rn_fma(s2, p, 2.0f / 3.0f);
  p = rn_fma(s2, p, 2.0f);
  const float log_m = rn_mul(s, p);
  return rn_fma(float(e), 0.693147180559945f, log_m);
}

// cos(2 pi t) for t in [0, 1), reduced exactly to an angle in [0, pi/2] and evaluated by its Taylor series.
CNN_HD inline float portable_cos_2pi(float t) {
  float x = t >= 0.5f ? rn_add(t, -1.0f) : t;  // [-0.5, 0.5), exact (Sterbenz)
  x = x < 0.0f ? -x : x;                       // cos is even
  float sign = 1.0f;
  if (x > 0.25f) {  // cos(2 pi x) = -cos(2 pi (1/2 - x))
    x = rn_add(0.5f, -x);
    sign = -1.0f;
  }
  const float a = rn_mul(x, 6.28318530717958f);
  const float a2 = rn_mul(a, a);
  // Terms through a^16/16!: the first omitted term is below 1e-12 at a = pi/2.
  float p = rn_fma(a2, 1.0f / 20922789888000.0f, -1.0f / 87178291200.0f);
  p = rn_fma(a2, p, 1.0f / 479001600.0f);
  p = rn_fma(a2, p, -1.0f / 3628800.0f);
  p = rn_fma(a2, p, 1.0f / 40320.0f);
  p = rn_fma(a2, p, -1.0f / 720.0f);
  p = rn_fma(a2, p, 1.0f / 24.0f);
  p = rn_fma(a2, p, -0.5f);
  p = rn_fma(a2, p, 1.0f);
  return rn_mul(sign, p);
}

// Standard normal from two words (Box-Muller, cosine branch).
CNN_HD inline float normal_from_bits(uint32_t a, uint32_t b) {
  const float r = rn_sqrt(rn_mul(-2.0f, portable_log(uniform01_open0(a))));
  return rn_mul(r, portable_cos_2pi(uniform01(b)));
}

CNN_HD inline float uniform_value(uint64_t seed, uint64_t index, float lo, float hi) {
  const Philox4 r = philox_for_element(seed, index, 0);
  return rn_fma(uniform01(r.v[0]), rn_add(hi, -lo), lo);
}

CNN_HD inline float normal_value(uint64_t seed, uint64_t index, float mean, float stddev) {
  const Philox4 r = philox_for_element(seed, index, 0);
  return rn_fma(normal_from_bits(r.v[0], r.v[1]), stddev, mean);
}

// Normal(mean, stddev) truncated to [lo, hi] (absolute bounds) by rejection: attempt k draws two candidates from
// counter word 2 = k. After kMaxAttempts rejections (bounds far in the tail) the value is clamped into range.
CNN_HD inline float trunc_normal_value(uint64_t seed, uint64_t index, float mean, float stddev, float lo, float hi) {
  constexpr uint32_t kMaxAttempts = 64;
  for (uint32_t k = 0; k < kMaxAttempts; ++k) {
    const Philox4 r = philox_for_element(seed, index, k);
    const float z0 = rn_fma(normal_from_bits(r.v[0], r.v[1]), stddev, mean);
    if (z0 >= lo && z0 <= hi) return z0;
    const float z1 = rn_fma(normal_from_bits(r.v[2], r.v[3]), stddev, mean);
    if (z1 >= lo && z1 <= hi) return z1;
  }
  return mean < lo ? lo : (mean > hi ? hi : mean);
}

}  // namespace cnn::rng

// Welford running statistics (count, mean, m2 = sum of squared deviations from the mean) and Chan's merge of two
// of them, on host and device: the CUDA BatchNorm statistics accumulate one per channel and row chunk in a single
// pass over x, then merge the chunks in a fixed order (deterministic). Variance = m2 / n (biased).
#pragma once

#include "core/dtype.h"

namespace cnn::kernels {

struct Welford {
  float n = 0.f, mean = 0.f, m2 = 0.f;
};

// Adds one value as the n-th, given inv_n = 1 / n: the mean moves by delta / n, m2 by delta * (v - new mean)
// (never negative, unlike sum x^2 - n mean^2). Threads that track several channels over the same rows share inv_n.
CNN_HOST_DEVICE inline void welford_step(float& mean, float& m2, float v, float inv_n) {
  const float d = v - mean;
  mean += d * inv_n;
  m2 += d * (v - mean);
}

CNN_HOST_DEVICE inline void welford_add(Welford& s, float v) {
  s.n += 1.f;
  welford_step(s.mean, s.m2, v, 1.0f / s.n);
}

// Statistics of the union of two disjoint sets (Chan et al.): exact in real arithmetic; an empty side is neutral.
CNN_HOST_DEVICE inline Welford welford_merge(const Welford& a, const Welford& b) {
  if (b.n == 0.f) return a;
  if (a.n == 0.f) return b;
  Welford r;
  r.n = a.n + b.n;
  const float d = b.mean - a.mean, fb = b.n / r.n;
  r.mean = a.mean + d * fb;
  r.m2 = a.m2 + b.m2 + d * d * a.n * fb;
  return r;
}

}  // namespace cnn::kernels

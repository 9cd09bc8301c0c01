// Per-element and per-step math shared by the CPU kernels and the CUDA kernels (CNN_HD): every float operation is
// an explicitly rounded one (core/philox.h rn_*), so CPU and GPU AdamW steps agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/philox.h"
#include "optim/optim_kernels.h"

namespace cnn::optim {

using rng::rn_add;
using rng::rn_div;
using rng::rn_mul;
using rng::rn_sqrt;

// Double multiply / subtract that the device compiler may not contract into an FMA.
CNN_HD inline double rn_dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
CNN_HD inline double rn_dsub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

// b^t by binary exponentiation of rounded double multiplies: identical on host and device (no libm pow).
CNN_HD inline double pow_int(double b, int64_t t) {
  double r = 1.0;
  while (t > 0) {
    if (t & 1) r = rn_dmul(r, b);
    b = rn_dmul(b, b);
    t >>= 1;
  }
  return r;
}

// Per-step AdamW scalars: out = {skip, step_size = lr / (1 - b1^t), sqrt(1 - b2^t)}; advances *step unless skipped.
CNN_HD inline void adamw_advance(int64_t* step, const float* found_inf, double lr, double beta1, double beta2,
                                 float out[3]) {
  if (found_inf != nullptr && *found_inf != 0.0f) {
    out[0] = 1.0f;
    out[1] = 0.0f;
    out[2] = 1.0f;
    return;
  }
  const int64_t t = ++*step;
  const double bc1 = rn_dsub(1.0, pow_int(beta1, t));
  const double bc2 = rn_dsub(1.0, pow_int(beta2, t));
  out[0] = 0.0f;
  out[1] = float(lr / bc1);
  out[2] = float(sqrt(bc2));
}

// Scalars of one element update, constant over a step (float roundings of the double options).
struct AdamWElementConsts {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
  float decay_mul;  // 1 - lr * weight_decay (decay entries)
  float step_size;  // lr / (1 - b1^t)
  float bc2_sqrt;   // sqrt(1 - b2^t)
};

inline AdamWElementConsts adamw_element_consts(const AdamWArgs& a) {
  AdamWElementConsts c{};
  c.beta1 = float(a.beta1);
  c.one_minus_beta1 = float(1.0 - a.beta1);
  c.beta2 = float(a.beta2);
  c.one_minus_beta2 = float(1.0 - a.beta2);
  c.eps = float(a.eps);
  c.decay_mul = float(1.0 - a.lr * a.weight_decay);
  c.step_size = 0.0f;  // per step, from adamw_advance
  c.bc2_sqrt = 1.0f;
  return c;
}

// One AdamW element update on FP32 values (g already multiplied by any gradient scale).
CNN_HD inline void adamw_element(float& p, float& m, float& v, float g, bool decay, const AdamWElementConsts& c) {
  if (decay) p = rn_mul(p, c.decay_mul);
  m = rn_add(rn_mul(c.beta1, m), rn_mul(c.one_minus_beta1, g));
  v = rn_add(rn_mul(c.beta2, v), rn_mul(rn_mul(c.one_minus_beta2, g), g));
  const float denom = rn_add(rn_div(rn_sqrt(v), c.bc2_sqrt), c.eps);
  p = rn_add(p, -rn_mul(c.step_size, rn_div(m, denom)));
}

// torch.nn.utils.clip_grad_norm_: coefficient max_norm / (norm + 1e-6), clamped to at most 1.
CNN_HD inline float clip_coefficient(float norm, float max_norm) {
  const float coef = rn_div(max_norm, rn_add(norm, 1e-6f));
  return coef < 1.0f ? coef : 1.0f;
}

// Dynamic loss-scale update (torch's _amp_update_scale_ plus a floor and a cap); see optim_kernels.h.
CNN_HD inline void scaler_update(float* state, const ScalerConfig& c) {
  float scale = state[kScale];
  if (state[kFoundInf] != 0.0f) {
    scale = rn_mul(scale, c.backoff_factor);
    state[kScale] = scale > c.min_scale ? scale : c.min_scale;
    state[kGrowthTracker] = 0.0f;
    state[kSkippedSteps] = rn_add(state[kSkippedSteps], 1.0f);
    return;
  }
  const float tracker = rn_add(state[kGrowthTracker], 1.0f);
  if (tracker >= float(c.growth_interval)) {
    scale = rn_mul(scale, c.growth_factor);
    state[kScale] = scale < c.max_scale ? scale : c.max_scale;
    state[kGrowthTracker] = 0.0f;
  } else {
    state[kGrowthTracker] = tracker;
  }
}

}  // namespace cnn::optim

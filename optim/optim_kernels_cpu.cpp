// CPU optimizer kernels (OpenMP over elements of large tensors; reductions over fixed chunks, so results do not
// depend on the thread count). The math is optim_math.h, shared with the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "optim/optim_kernels.h"
#include "optim/optim_math.h"

namespace cnn::optim {

namespace {

// Memory-bound: below this a single thread is as fast, and an idle OpenMP team would spin against OpenBLAS.
constexpr int64_t kParallelMin = int64_t(1) << 18;
constexpr int64_t kNormChunk = int64_t(1) << 14;  // elements per partial sum of the norm

AdamWElementConsts element_consts(const AdamWArgs& a, const float scalars[3]) {
  AdamWElementConsts c = adamw_element_consts(a);
  c.step_size = scalars[1];
  c.bc2_sqrt = scalars[2];
  return c;
}

void adamw_tensor(const AdamWTensor& t, const AdamWElementConsts& c, float gscale) {
  float* p = t.p;
  float* m = t.m;
  float* v = t.v;
  const float* g = t.g;
  uint16_t* p16 = t.p16;
  const bool decay = t.decay;
#pragma omp parallel for schedule(static) if (t.n > kParallelMin)
  for (int64_t i = 0; i < t.n; ++i) {
    adamw_element(p[i], m[i], v[i], rn_mul(g[i], gscale), decay, c);
    if (p16 != nullptr) p16[i] = float_to_half_bits(p[i]);
  }
}

void check_tensors(const std::vector<GradTensor>& grads, const char* op) {
  for (const GradTensor& t : grads) {
    CNN_CHECK(t.n >= 0 && (t.n == 0 || t.g != nullptr), op, ": expected a gradient buffer, got null with ", t.n,
              " elements");
  }
}

}  // namespace

void adamw_advance_cpu(const AdamWArgs& a, float out[3]) {
  CNN_CHECK(a.step != nullptr, "adamw_step: the step counter pointer is null");
  adamw_advance(a.step, a.found_inf, a.lr, a.beta1, a.beta2, out);
}

void adamw_step_cpu(const std::vector<AdamWTensor>& tensors, const AdamWArgs& args) {
  float scalars[3];
  adamw_advance_cpu(args, scalars);
  if (scalars[0] != 0.0f) return;  // overflow: skip the step entirely
  const AdamWElementConsts c = element_consts(args, scalars);
  const float gscale = args.grad_scale != nullptr ? *args.grad_scale : 1.0f;
  for (const AdamWTensor& t : tensors) {
    CNN_CHECK(t.n == 0 || (t.p && t.g && t.m && t.v), "adamw_step_cpu: null buffer in a tensor of ", t.n, " elements");
    adamw_tensor(t, c, gscale);
  }
}

void unscale_check_cpu(const std::vector<GradTensor>& grads, const float* scale, float* found_inf) {
  check_tensors(grads, "unscale_check_cpu");
  const float inv = rn_div(1.0f, *scale);
  bool bad = false;
  for (const GradTensor& t : grads) {
    float* g = t.g;
#pragma omp parallel for schedule(static) reduction(|| : bad) if (t.n > kParallelMin)
    for (int64_t i = 0; i < t.n; ++i) {
      const float v = rn_mul(g[i], inv);
      bad = bad || !std::isfinite(v);
      g[i] = v;
    }
  }
  *found_inf = bad ? 1.0f : 0.0f;
}

void grad_norm_cpu(const std::vector<GradTensor>& grads, float max_norm, float* out) {
  check_tensors(grads, "grad_norm_cpu");
  double total = 0.0;
  for (const GradTensor& t : grads) {
    const int64_t chunks = (t.n + kNormChunk - 1) / kNormChunk;
    std::vector<double> partial(size_t(chunks), 0.0);
    const float* g = t.g;
#pragma omp parallel for schedule(static) if (t.n > kParallelMin)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t end = std::min(t.n, (c + 1) * kNormChunk);
      double s = 0.0;
      for (int64_t i = c * kNormChunk; i < end; ++i) s += double(g[i]) * double(g[i]);
      partial[size_t(c)] = s;
    }
    for (double s : partial) total += s;
  }
  out[0] = float(std::sqrt(total));
  out[1] = clip_coefficient(out[0], max_norm);
}

void scale_grads_cpu(const std::vector<GradTensor>& grads, const float* factor) {
  check_tensors(grads, "scale_grads_cpu");
  const float f = *factor;
  for (const GradTensor& t : grads) {
    float* g = t.g;
#pragma omp parallel for schedule(static) if (t.n > kParallelMin)
    for (int64_t i = 0; i < t.n; ++i) g[i] = rn_mul(g[i], f);
  }
}

void scaler_update_cpu(float* state, const ScalerConfig& c) { scaler_update(state, c); }

}  // namespace cnn::optim

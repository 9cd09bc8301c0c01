// Multi-tensor optimizer kernels on raw pointers (FP32 master weights, FP32 grads and state): AdamW step, grad
// unscale + inf/nan check, global L2 norm with clip coefficient, in-place grad scaling, loss-scale update.
// CPU versions (OpenMP) are the reference; the cuda_* twins (optim_kernels_cuda.cu) run the same float op sequence
// on the device's compute stream, one launch per batch of tensors, and never synchronize with the host.
#pragma once

#include <cstdint>
#include <vector>

namespace cnn::optim {

// One parameter of an AdamW step. p16 (nullable) receives round-to-nearest-even f16 bits of the updated p.
struct AdamWTensor {
  float* p = nullptr;        // master weight
  const float* g = nullptr;  // gradient
  float* m = nullptr;        // exp_avg
  float* v = nullptr;        // exp_avg_sq
  uint16_t* p16 = nullptr;   // f16 model copy or null
  int64_t n = 0;
  bool decay = true;  // decoupled weight decay applies
};

// Scalars of one AdamW step, in double like PyTorch's Python floats: derived constants (1 - beta, 1 - lr * wd,
// bias corrections) are computed in double and rounded to float once. Pointers live on the tensors' device (host
// memory for the CPU kernel).
struct AdamWArgs {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t* step = nullptr;            // step counter t: incremented by a step that runs, untouched by a skipped one
  const float* found_inf = nullptr;   // nullable: nonzero skips the whole step (state, weights and t unchanged)
  const float* grad_scale = nullptr;  // nullable: every gradient is multiplied by *grad_scale (clip coefficient)
};

// A gradient buffer of n FP32 values.
struct GradTensor {
  float* g = nullptr;
  int64_t n = 0;
};

// Dynamic loss scaler settings; the state it updates is kScalerStateSize floats (see loss_scaler.h).
struct ScalerConfig {
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;  // 2^24
};
// Layout of the scaler state vector (floats; counters stay exact below 2^24).
enum ScalerSlot : int { kScale = 0, kGrowthTracker = 1, kFoundInf = 2, kSkippedSteps = 3, kScalerStateSize = 4 };

// Bias-corrected step scalars {skip, step_size = lr / (1 - b1^t), sqrt(1 - b2^t)} after advancing *step
// unless *found_inf is set: shared by the CPU kernel and the device prologue.
void adamw_advance_cpu(const AdamWArgs& a, float out[3]);

// p <- p * (1 - lr * wd) (decay entries), m <- b1 m + (1 - b1) g, v <- b2 v + (1 - b2) g g,
// p <- p - step_size * (m / (sqrt(v) / sqrt(1 - b2^t) + eps)); with g = grad * *grad_scale when given.
void adamw_step_cpu(const std::vector<AdamWTensor>& tensors, const AdamWArgs& args);
void adamw_step_cuda(int device, const std::vector<AdamWTensor>& tensors, const AdamWArgs& args);

// g <- g * (1 / *scale) for every tensor; *found_inf = 1 if any unscaled value is inf or nan (0 otherwise).
void unscale_check_cpu(const std::vector<GradTensor>& grads, const float* scale, float* found_inf);
void unscale_check_cuda(int device, const std::vector<GradTensor>& grads, const float* scale, float* found_inf);

// out[0] = sqrt(sum of g^2 over all tensors), out[1] = min(1, max_norm / (out[0] + 1e-6)) (torch's clip_grad_norm_
// coefficient). CPU accumulates in double; CUDA in float per chunk, then an ordered double combine (deterministic).
void grad_norm_cpu(const std::vector<GradTensor>& grads, float max_norm, float* out);
void grad_norm_cuda(int device, const std::vector<GradTensor>& grads, float max_norm, float* out);

// g <- g * *factor (factor read where it lives, no host sync on cuda).
void scale_grads_cpu(const std::vector<GradTensor>& grads, const float* factor);
void scale_grads_cuda(int device, const std::vector<GradTensor>& grads, const float* factor);

// g <- 0 for every tensor, a batch of tensors per launch (one fill per tensor costs a launch each: SLaK-T has 308).
void zero_grads_cuda(int device, const std::vector<GradTensor>& grads);

// One scaler update from state[kFoundInf]: backoff (floored at min_scale), reset tracker and count the skip on
// overflow; else count a clean step and grow (capped at max_scale) after growth_interval clean steps.
void scaler_update_cpu(float* state, const ScalerConfig& c);
void scaler_update_cuda(int device, float* state, const ScalerConfig& c);

}  // namespace cnn::optim

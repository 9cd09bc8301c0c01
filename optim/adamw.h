// AdamW with decoupled weight decay (PyTorch semantics) on FP32 master weights and FP32 state, CPU (OpenMP) or one
// fused multi-tensor CUDA launch per ~56 tensors. The step counter lives on the parameters' device, so a step
// skipped by the loss scaler's device-side overflow flag needs no host sync. Math in docs/optim.md.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "optim/param.h"

namespace cnn::optim {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // torch.optim.AdamW default; applied only to entries with decay = true
};

// Optional device-side inputs of one step, each a one-element f32 tensor on the parameters' device (or undefined).
struct StepControl {
  Tensor found_inf;   // nonzero: skip the step (DynamicLossScaler::found_inf())
  Tensor grad_scale;  // gradients are multiplied by it first (GradNorm::coef from grad_norm)
};

class AdamW {
 public:
  // Parameters are validated by check_params; state (exp_avg, exp_avg_sq: zeros, step: 0) lives on their device.
  explicit AdamW(std::vector<ParamRef> params, const AdamWOptions& options = {});

  // FP16 model copies refreshed (round to nearest even) by every step that runs: (master, f16 copy) pairs; the
  // master must be one of the parameters (same tensor storage), the copy f16 contiguous of its shape and device.
  void set_half_copies(const std::vector<std::pair<Tensor, Tensor>>& copies);

  // One step at learning rate lr; parameters without a gradient are left untouched (their state too).
  void step(double lr, const StepControl& control = {});
  void zero_grad() { optim::zero_grad(params_); }

  // Steps taken so far (skipped steps do not count); reads the device counter (synchronizes on cuda).
  int64_t step_count() const;

  // State as named tensors: "optim.step" (i64 (1)), "optim.<name>.exp_avg", "optim.<name>.exp_avg_sq" (f32, the
  // parameter's shape). The tensors alias the live state: save them before the next step.
  std::map<std::string, Tensor> state_dict() const;
  // Copies a state saved by state_dict (any device; keys not starting with "optim." are ignored). Every expected
  // key must be present with its dtype and shape, and no other "optim." key may appear.
  void load_state_dict(const std::map<std::string, Tensor>& state);

  const std::vector<ParamRef>& params() const { return params_; }
  const AdamWOptions& options() const { return options_; }

 private:
  std::vector<ParamRef> params_;
  AdamWOptions options_;
  Device device_;
  std::vector<Tensor> exp_avg_;     // FP32, each param's shape
  std::vector<Tensor> exp_avg_sq_;  // FP32, each param's shape
  std::vector<Tensor> half_copy_;   // f16 copy of params_[i] or undefined
  Tensor step_;                     // i64 (1)
};

}  // namespace cnn::optim

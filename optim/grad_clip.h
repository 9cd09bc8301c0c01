// Global L2 gradient norm over a parameter list and torch-style clipping (coef = min(1, max_norm / (norm + 1e-6))),
// computed on the parameters' device without a host sync: the result is a device tensor.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "optim/param.h"

namespace cnn::optim {

struct GradNorm {
  Tensor norm;  // f32 (1): sqrt(sum of squares of every gradient)
  Tensor coef;  // f32 (1): clip coefficient (1 when norm <= max_norm); pass as StepControl::grad_scale
};

// Norm and clip coefficient; gradients are not modified. Parameters without a gradient contribute nothing.
// A non-finite gradient gives a non-finite norm (and coefficient 0 or nan); a step skipped by the loss scaler
// ignores both. max_norm must be > 0.
GradNorm grad_norm(const std::vector<ParamRef>& params, double max_norm);

// grad_norm, then every gradient multiplied by the coefficient in place (torch.nn.utils.clip_grad_norm_).
// Prefer grad_norm + StepControl::grad_scale, which folds the multiply into the AdamW pass.
GradNorm clip_grad_norm_(const std::vector<ParamRef>& params, double max_norm);

}  // namespace cnn::optim

// Parameter lists seen by the optimizer: (name, FP32 master weight with .grad(), decay) entries as produced by the
// model's Module system, plus list-wide helpers: zero_grad and gradient scaling for accumulation.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "optim/optim_kernels.h"

namespace cnn::optim {

struct ParamRef {
  std::string name;   // unique; keys the optimizer state ("optim.<name>.exp_avg")
  Tensor param;       // FP32 master weight, requires grad, contiguous
  bool decay = true;  // false for norms, biases, LayerScale: no weight decay
};

// Checks a parameter list (non-empty, unique non-empty names, f32 contiguous leaves requiring grad, one device)
// and returns that device. `op` names the caller in errors.
Device check_params(const std::vector<ParamRef>& params, const char* op);

// Gradients present in the list (parameters without a gradient are left out), validated as f32 contiguous
// buffers of the parameter's shape and device.
std::vector<GradTensor> grad_tensors(const std::vector<ParamRef>& params, const char* op);

// Fills every existing gradient with zeros (buffers are kept, so their addresses stay stable across steps).
void zero_grad(const std::vector<ParamRef>& params);

// g <- alpha * g for every gradient: for gradient accumulation over K micro-batches call it once with 1/K after
// the last backward (or, equivalently, divide each micro-batch loss by K). No host sync on cuda.
void scale_grads(const std::vector<ParamRef>& params, double alpha);

// A one-element f32 tensor holding `value` on `device` (a factor read by the kernels where it lives).
Tensor scalar_tensor(float value, Device device, const std::string& label);

}  // namespace cnn::optim

// SGD with heavy-ball momentum and L2 weight decay, as torch.optim.SGD (dampening 0, no Nesterov):
//   v = momentum * v + (g + weight_decay * p);  p -= lr * v   (v starts at zero, so the first step uses v = g).
// Velocities are FP32 on the parameters' devices; the step runs on any device through Tensor::add_. It trains the
// Fashion-MNIST demo (apps/mnist-mlp); the CNN recipes use AdamW (optim/adamw.h).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace cnn::optim {

class SgdMomentum {
 public:
  // lr > 0, momentum in [0, 1), weight_decay >= 0; every parameter must require grad.
  SgdMomentum(std::vector<Tensor> params, double lr, double momentum, double weight_decay = 0.0);
  void step();       // skips parameters without a gradient (their velocity too)
  void zero_grad();  // zeroes existing gradients
  void set_lr(double lr);
  double lr() const { return lr_; }

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> velocity_;  // FP32, each parameter's shape
  double lr_, momentum_, weight_decay_;
};

}  // namespace cnn::optim

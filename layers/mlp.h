// Two-layer perceptron (Linear -> ReLU -> Linear) and a minimal SGD with momentum: the Fashion-MNIST demo model
// used by apps/mnist-mlp and tests/layers/mlp_test.cpp (AdamW and schedules live in optim/).
#pragma once

#include <cstdint>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace cnn {

struct Mlp {
  Tensor w1;  // (H, In)
  Tensor b1;  // (H)
  Tensor w2;  // (Out, H)
  Tensor b2;  // (Out)

  // PyTorch Linear init: weights and biases uniform in +-1/sqrt(fan_in), Philox stream `seed`.
  static Mlp create(int64_t in, int64_t hidden, int64_t out, uint64_t seed, Device device);
  Tensor forward(Tape* tape, const Tensor& x) const;  // x (B, In) -> logits (B, Out)
  std::vector<Tensor> parameters() const;
};

// Heavy-ball SGD as in PyTorch: v = momentum * v + (g + weight_decay * p); p -= lr * v.
class SgdMomentum {
 public:
  SgdMomentum(std::vector<Tensor> params, double lr, double momentum, double weight_decay = 0.0);
  void step();       // skips parameters without a gradient
  void zero_grad();  // zeroes existing gradients
  void set_lr(double lr) { lr_ = lr; }

 private:
  std::vector<Tensor> params_;
  std::vector<Tensor> velocity_;  // FP32, like the gradients
  double lr_, momentum_, weight_decay_;
};

// Number of rows whose arg-max logit equals the label: logits (B, K), labels (B) i64, any device.
int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace cnn

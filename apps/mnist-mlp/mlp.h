// The Fashion-MNIST demo model: a two-layer perceptron (Linear -> ReLU -> Linear) as four plain tensors, trained by
// optim/sgd.h in apps/mnist-mlp and tests/apps/mnist_mlp_test.cpp. The library's Module-based MLP is cnn::Mlp
// (models/model.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"

namespace cnn::mnist {

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

// Number of rows whose arg-max logit equals the label: logits (B, K), labels (B) i64, any device.
int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace cnn::mnist

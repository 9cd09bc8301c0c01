// The demo MLP and accuracy counting.
#include "apps/mnist-mlp/mlp.h"

#include <cmath>

#include "layers/functional.h"

namespace cnn::mnist {

Mlp Mlp::create(int64_t in, int64_t hidden, int64_t out, uint64_t seed, Device device) {
  CNN_CHECK(in >= 1 && hidden >= 1 && out >= 1, "Mlp::create: expected positive sizes, got ", in, "-", hidden, "-",
            out);
  Mlp m;
  const double k1 = 1.0 / std::sqrt(double(in)), k2 = 1.0 / std::sqrt(double(hidden));
  uint64_t offset = 0;  // consecutive Philox offsets: every parameter draws distinct numbers from one seed
  auto init = [&](const Shape& shape, double bound, const char* name) {
    Tensor t = Tensor::empty(shape, DType::f32, device, name);
    t.uniform_(seed, offset, -bound, bound);
    offset += uint64_t(t.numel());
    t.set_requires_grad(true);
    return t;
  };
  m.w1 = init({hidden, in}, k1, "mlp.fc1.weight");
  m.b1 = init({hidden}, k1, "mlp.fc1.bias");
  m.w2 = init({out, hidden}, k2, "mlp.fc2.weight");
  m.b2 = init({out}, k2, "mlp.fc2.bias");
  return m;
}

Tensor Mlp::forward(Tape* tape, const Tensor& x) const {
  const Tensor h = ops::relu(tape, ops::linear(tape, x, w1, b1));
  return ops::linear(tape, h, w2, b2);
}

std::vector<Tensor> Mlp::parameters() const { return {w1, b1, w2, b2}; }

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  CNN_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0),
            "count_correct: expected logits (B, K) and labels (B), got ", logits.str(), " and ", labels.str());
  const std::vector<float> z = logits.to(DType::f32).to_vector<float>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  const int64_t b = logits.size(0), k = logits.size(1);
  int64_t correct = 0;
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j) best = z[size_t(i * k + j)] > z[size_t(i * k + best)] ? j : best;
    correct += best == y[size_t(i)] ? 1 : 0;
  }
  return correct;
}

}  // namespace cnn::mnist

// End-to-end: a 784-256-10 MLP trained with SGD + momentum on real Fashion-MNIST on the CPU reaches > 80% test
// accuracy (2 epochs, batch 128; about 85% is typical, the bound leaves room for seed and thread-count noise).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "apps/mnist-mlp/mlp.h"
#include "data/fashion_mnist.h"
#include "layers/functional.h"
#include "optim/sgd.h"

namespace cnn::mnist {
namespace {

TEST(MlpFashionMnist, TrainsAbove80PercentOnCpu) {
  const uint64_t seed = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const data::FashionMnist train = data::load_fashion_mnist(data::kFashionMnistDir, "train");
  const data::FashionMnist test = data::load_fashion_mnist(data::kFashionMnistDir, "test");
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  const Device cpu = Device::cpu();
  Mlp mlp = Mlp::create(784, 256, 10, seed, cpu);
  optim::SgdMomentum opt(mlp.parameters(), 0.05, 0.9);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  const int64_t batch = 128;
  double last_loss = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t s = 0; s + batch <= train.size(); s += batch) {
      const std::vector<int64_t> idx(order.begin() + s, order.begin() + s + batch);
      auto [x, y] = data::fashion_mnist_batch(train, idx, cpu);
      Tape tape;
      const Tensor loss = ops::softmax_cross_entropy(&tape, mlp.forward(&tape, x), y);
      opt.zero_grad();
      tape.backward(loss);
      opt.step();
      last_loss = loss.item();
    }
  }
  int64_t correct = 0;
  for (int64_t s = 0; s < test.size(); s += 1000) {
    std::vector<int64_t> idx(1000);
    std::iota(idx.begin(), idx.end(), s);
    auto [x, y] = data::fashion_mnist_batch(test, idx, cpu);
    correct += count_correct(mlp.forward(nullptr, x), y);
  }
  const double acc = double(correct) / double(test.size());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fashion-mnist mlp: test accuracy %.4f, last batch loss %.4f, %.1f s\n", acc, last_loss, secs);
  EXPECT_GT(acc, 0.80) << "seed " << seed << ", last loss " << last_loss;
}

}  // namespace
}  // namespace cnn::mnist

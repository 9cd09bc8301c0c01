// Fashion-MNIST MLP demo: trains 784-H-10 (ReLU, softmax cross-entropy, SGD with momentum) on cpu or cuda and
// prints per-epoch loss, throughput and test accuracy.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>

#include "apps/mnist-mlp/mlp.h"
#include "core/context.h"
#include "core/error.h"
#include "data/fashion_mnist.h"
#include "layers/functional.h"
#include "optim/sgd.h"

namespace {

struct Options {
  int epochs = 3;
  int64_t batch_size = 128;
  double lr = 0.05;
  double momentum = 0.9;
  int64_t hidden = 256;
  std::string device = "cpu";
  uint64_t seed = 1;
  std::string data_dir = cnn::data::kFashionMnistDir;
};

double evaluate(const cnn::mnist::Mlp& mlp, const cnn::data::FashionMnist& ds, cnn::Device device) {
  int64_t correct = 0;
  for (int64_t s = 0; s < ds.size(); s += 1000) {
    std::vector<int64_t> idx(size_t(std::min<int64_t>(1000, ds.size() - s)));
    std::iota(idx.begin(), idx.end(), s);
    auto [x, y] = cnn::data::fashion_mnist_batch(ds, idx, device);
    correct += cnn::mnist::count_correct(mlp.forward(nullptr, x), y);
  }
  return double(correct) / double(ds.size());
}

void run(const Options& o) {
  using clock = std::chrono::steady_clock;
  const cnn::Device device = cnn::Device::parse(o.device);
  cnn::require_device(device, "--device");
  std::printf("loading Fashion-MNIST from %s\n", o.data_dir.c_str());
  const auto train = cnn::data::load_fashion_mnist(o.data_dir, "train");
  const auto test = cnn::data::load_fashion_mnist(o.data_dir, "test");
  cnn::mnist::Mlp mlp = cnn::mnist::Mlp::create(784, o.hidden, 10, o.seed, device);
  cnn::optim::SgdMomentum opt(mlp.parameters(), o.lr, o.momentum);
  std::printf("mlp 784-%lld-10 on %s, batch %lld, lr %g, momentum %g, seed %llu\n", (long long)o.hidden,
              device.str().c_str(), (long long)o.batch_size, o.lr, o.momentum, (unsigned long long)o.seed);
  std::mt19937_64 rng(o.seed);
  std::vector<int64_t> order(size_t(train.size()));
  std::iota(order.begin(), order.end(), 0);
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const auto t0 = clock::now();
    std::shuffle(order.begin(), order.end(), rng);
    double loss_sum = 0;
    int64_t steps = 0;
    for (int64_t s = 0; s + o.batch_size <= train.size(); s += o.batch_size, ++steps) {
      const std::vector<int64_t> idx(order.begin() + s, order.begin() + s + o.batch_size);
      auto [x, y] = cnn::data::fashion_mnist_batch(train, idx, device);
      cnn::Tape tape;
      const cnn::Tensor loss = cnn::ops::softmax_cross_entropy(&tape, mlp.forward(&tape, x), y);
      opt.zero_grad();
      tape.backward(loss);
      opt.step();
      loss_sum += loss.item();
      if ((steps + 1) % 100 == 0) {
        std::printf("  epoch %d step %lld: mean loss %.4f\n", epoch, (long long)(steps + 1),
                    loss_sum / double(steps + 1));
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    const double acc = evaluate(mlp, test, device);
    std::printf("epoch %d: train loss %.4f, %.0f images/s, test accuracy %.2f%%\n", epoch, loss_sum / double(steps),
                double(steps * o.batch_size) / secs, 100.0 * acc);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Train a 784-H-10 MLP on Fashion-MNIST and report test accuracy"};
  app.add_option("--epochs", o.epochs, "passes over the 60000 training images")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", o.batch_size, "images per SGD step")->check(CLI::Range(int64_t(1), int64_t(60000)));
  app.add_option("--lr", o.lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--momentum", o.momentum, "SGD momentum in [0, 1)")->check(CLI::Range(0.0, 0.999));
  app.add_option("--hidden", o.hidden, "hidden units")->check(CLI::PositiveNumber);
  app.add_option("--device", o.device, "cpu, cuda or cuda:N");
  app.add_option("--seed", o.seed, "seed of the initialization and the data order");
  app.add_option("--data-dir", o.data_dir, "folder with the Fashion-MNIST *-ubyte.gz files");
  CLI11_PARSE(app, argc, argv);
  try {
    run(o);
  } catch (const cnn::Error& e) {
    std::fprintf(stderr, "mnist-mlp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

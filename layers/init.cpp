// PyTorch / timm parameter initialisation on Philox streams (see layers/init.h).
#include "layers/init.h"

#include <cmath>

#include "core/error.h"

namespace cnn::init {

namespace {
double fan_bound(const char* op, int64_t fan_in) {
  CNN_CHECK(fan_in >= 1, op, ": expected fan_in >= 1, got ", fan_in);
  return 1.0 / std::sqrt(double(fan_in));
}
}  // namespace

void kaiming_uniform_(Tensor& w, int64_t fan_in, InitRng& rng) {
  // gain sqrt(2 / (1 + a^2)) with a = sqrt(5) is sqrt(1/3); bound = gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in).
  const double b = fan_bound("kaiming_uniform_", fan_in);
  w.uniform_(rng.seed, rng.take(w.numel()), -b, b);
}

void bias_uniform_(Tensor& bias, int64_t fan_in, InitRng& rng) {
  const double b = fan_bound("bias_uniform_", fan_in);
  bias.uniform_(rng.seed, rng.take(bias.numel()), -b, b);
}

void trunc_normal_(Tensor& w, double stddev, InitRng& rng, double lo, double hi) {
  CNN_CHECK(stddev > 0.0 && lo < hi, "trunc_normal_: expected std > 0 and lo < hi, got std=", stddev, " [", lo, ", ",
            hi, "]");
  w.trunc_normal_(rng.seed, rng.take(w.numel()), 0.0, stddev, lo, hi);
}

}  // namespace cnn::init

// A full optimizer step on a tiny linear classifier with the tape: backward seeded with the loss scale, unscale,
// clip, AdamW with the device-side skip flag, scaler update. With a power-of-two scale every gradient is scaled
// exactly, so the run must match an unscaled run bit for bit; gradient accumulation matches a full batch.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "layers/functional.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/loss_scaler.h"
#include "tests/support/numeric.h"

namespace cnn::optim {
namespace {

constexpr uint64_t kSeed = 99;

struct Model {
  std::vector<ParamRef> params;  // w (3, 4), b (3)
  static Model create(Device device = Device::cpu()) {
    Tensor w = Tensor::empty({3, 4}, DType::f32);
    w.uniform_(kSeed, 0, -0.5, 0.5);
    w = w.to(device);
    Tensor b = Tensor::zeros({3}, DType::f32, device);
    w.set_requires_grad(true);
    b.set_requires_grad(true);
    return Model{{{"w", w, true}, {"b", b, false}}};
  }
  Tensor loss(Tape* tape, const Tensor& x, const Tensor& y) const {
    return ops::softmax_cross_entropy(tape, ops::linear(tape, x, params[0].param, params[1].param), y);
  }
};

Tensor batch_x(int step) {
  Tensor x = Tensor::empty({8, 4}, DType::f32);
  x.uniform_(kSeed + 1, uint64_t(step) * 32, -2.0, 2.0);
  return x;
}

Tensor batch_y(int step) {
  std::vector<int64_t> y(8);
  for (int i = 0; i < 8; ++i) y[size_t(i)] = (i + step) % 3;
  return Tensor::from_vector(y, {8});
}

void scaled_vs_unscaled(Device device) {
  Model plain = Model::create(device), amp = Model::create(device);
  AdamW opt_plain(plain.params), opt_amp(amp.params);
  DynamicLossScaler scaler(device);
  for (int step = 0; step < 5; ++step) {
    const Tensor x = batch_x(step).to(device), y = batch_y(step).to(device);
    {
      Tape tape;
      tape.backward(plain.loss(&tape, x, y));
      const GradNorm n = grad_norm(plain.params, 0.5);
      opt_plain.step(1e-2, StepControl{Tensor(), n.coef});
      opt_plain.zero_grad();
    }
    {
      Tape tape;
      tape.backward(amp.loss(&tape, x, y), scaler.scale());  // gradients of loss * 65536
      scaler.unscale_and_check(amp.params);
      const GradNorm n = grad_norm(amp.params, 0.5);
      opt_amp.step(1e-2, StepControl{scaler.found_inf(), n.coef});
      scaler.update();
      opt_amp.zero_grad();
    }
  }
  for (size_t i = 0; i < plain.params.size(); ++i) {
    EXPECT_TRUE(test::bitwise_equal(plain.params[i].param, amp.params[i].param, plain.params[i].name))
        << "seed " << kSeed;
  }
  EXPECT_EQ(scaler.read_state().skipped_steps, 0);
  EXPECT_EQ(opt_amp.step_count(), 5);
}

TEST(TrainStep, ScaledAmpStepMatchesUnscaledBitwise) { scaled_vs_unscaled(Device::cpu()); }

TEST(TrainStepGpu, ScaledAmpStepMatchesUnscaledBitwise) {
  CNN_REQUIRE_GPU();
  scaled_vs_unscaled(Device::cuda(0));
}

TEST(TrainStep, AccumulatedHalfBatchesMatchTheFullBatch) {
  Model full = Model::create(), accum = Model::create();
  const Tensor x = batch_x(0), y = batch_y(0);
  {
    Tape tape;
    tape.backward(full.loss(&tape, x, y));
  }
  for (int half = 0; half < 2; ++half) {  // mean loss over 4 rows, twice: the sum is twice the full-batch grad
    Tape tape;
    tape.backward(accum.loss(&tape, x.slice(0, 4 * half, 4 * half + 4).contiguous(),
                             y.slice(0, 4 * half, 4 * half + 4).contiguous()));
  }
  scale_grads(accum.params, 0.5);  // 1 / accum_steps
  for (size_t i = 0; i < full.params.size(); ++i) {
    // Different summation order over the batch (two partial means): float rounding of values ~0.1.
    EXPECT_TRUE(
        test::all_close(full.params[i].param.grad(), accum.params[i].param.grad(), 1e-7, 1e-6, full.params[i].name));
  }
}

}  // namespace
}  // namespace cnn::optim

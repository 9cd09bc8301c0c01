// SGD with momentum against hand-computed steps (the torch.optim.SGD rule in double), parameters without a
// gradient, zero_grad, the learning-rate setter and argument errors.
#include "optim/sgd.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/optim/optim_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::optim {
namespace {

using test::make_param;
using test::set_grad;
using test::values;

// FP32 velocity and parameters, four rounded updates per element and step on values of order 1: within a few ulp
// (6e-8 relative each) after three steps.
constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-6;

TEST(SgdMomentum, HandComputedStepsWithWeightDecayAndAGradlessStep) {
  // lr 0.1, momentum 0.9, weight decay 0.01; w gets a gradient every step, b skips step 2 (no gradient: neither
  // b nor its velocity changes). Expected: v = 0.9 v + g + 0.01 p; p -= 0.1 v, evaluated in double.
  const ParamRef w = make_param("w", {1.0f, -2.0f}, true), b = make_param("b", {0.5f}, true);
  SgdMomentum opt({w.param, b.param}, 0.1, 0.9, 0.01);
  const std::vector<std::vector<float>> gw{{0.5f, -1.0f}, {-0.25f, 2.0f}, {1.0f, 0.0f}}, gb{{0.2f}, {}, {-0.3f}};
  const std::vector<std::vector<float>> want_w{{0.949f, -1.898f}, {0.927151f, -2.004302f}, {0.806559749f, -2.0979695f}};
  const std::vector<float> want_b{0.4795f, 0.4795f, 0.4905705f};
  for (size_t t = 0; t < 3; ++t) {
    set_grad(w, gw[t]);
    if (gb[t].empty()) {
      b.param.autograd_meta()->grad = Tensor();
    } else {
      set_grad(b, gb[t]);
    }
    opt.step();
    const std::string at = "step " + std::to_string(t + 1);
    EXPECT_TRUE(test::all_close(Tensor::from_vector(want_w[t], {2}), w.param, kAtol, kRtol, at + " w"));
    EXPECT_TRUE(
        test::all_close(Tensor::from_vector(std::vector<float>{want_b[t]}, {1}), b.param, kAtol, kRtol, at + " b"));
  }
}

TEST(SgdMomentum, WithoutMomentumIsPlainGradientDescent) {
  const ParamRef w = make_param("w", {1.0f, -2.0f, 4.0f}, true);
  SgdMomentum opt({w.param}, 0.5, 0.0);
  for (int t = 0; t < 2; ++t) {
    set_grad(w, {1.0f, 2.0f, -4.0f});
    opt.step();
  }
  // Two steps of p -= 0.5 g: exact in binary floating point.
  EXPECT_EQ(values(w.param), (std::vector<float>{0.0f, -4.0f, 8.0f}));
}

TEST(SgdMomentum, ZeroGradAndLearningRate) {
  const ParamRef w = make_param("w", {1.0f, 2.0f}, true);
  SgdMomentum opt({w.param}, 0.25, 0.5);
  set_grad(w, {4.0f, -8.0f});
  opt.zero_grad();
  EXPECT_EQ(values(w.param.grad()), (std::vector<float>{0.0f, 0.0f}));
  opt.set_lr(0.5);
  EXPECT_EQ(opt.lr(), 0.5);
  set_grad(w, {2.0f, -2.0f});
  opt.step();  // v = g; p -= 0.5 v
  EXPECT_EQ(values(w.param), (std::vector<float>{0.0f, 3.0f}));
}

TEST(SgdMomentum, RejectsBadInput) {
  const ParamRef w = make_param("w", {1.0f}, true);
  EXPECT_NE(test::error_of([&] { SgdMomentum({w.param}, 0.0, 0.9); }).find("lr > 0"), std::string::npos);
  EXPECT_NE(test::error_of([&] { SgdMomentum({w.param}, 0.1, 1.0); }).find("momentum=1"), std::string::npos);
  EXPECT_NE(test::error_of([&] { SgdMomentum({w.param}, 0.1, 0.9, -1.0); }).find("weight_decay=-1"), std::string::npos);
  const Tensor frozen = Tensor::zeros({2}, DType::f32, Device::cpu(), "frozen");
  EXPECT_NE(test::error_of([&] { SgdMomentum({frozen}, 0.1, 0.9); }).find("does not require grad"), std::string::npos);
  SgdMomentum opt({w.param}, 0.1, 0.9);
  EXPECT_THROW(opt.set_lr(-1.0), Error);
}

}  // namespace
}  // namespace cnn::optim

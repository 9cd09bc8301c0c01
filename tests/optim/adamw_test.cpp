// AdamW against hand-computed steps (bias correction, decoupled weight decay, the no-decay rule), skipped steps,
// gradient scale input, half copies, parameters without gradients, argument errors.
#include "optim/adamw.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/optim/optim_test_util.h"
#include "tests/support/numeric.h"

namespace cnn::optim {
namespace {

using test::make_param;
using test::set_grad;
using test::values;

// Expected values: the update rule of docs/optim.md evaluated in double (see the formula in adamw.h), lr 0.1,
// betas (0.9, 0.999), eps 1e-8; gradients per step: w: (0.5, -1), (-0.25, 2), (1, 0); b: 0.2, 0.2, -0.3.
struct Expected {
  std::vector<float> w, m_w, v_w, b;
};

// FP32 state and about ten rounded float ops per element and step: a few ulp (6e-8 relative each) of values ~1.
constexpr double kAtol = 1e-7;
constexpr double kRtol = 1e-6;

void run_three_steps(double weight_decay, const std::vector<Expected>& expected) {
  std::vector<ParamRef> params{make_param("w", {1.0f, -2.0f}, true), make_param("b", {0.5f}, false)};
  AdamW opt(params, AdamWOptions{0.9, 0.999, 1e-8, weight_decay});
  const std::vector<std::vector<float>> gw{{0.5f, -1.0f}, {-0.25f, 2.0f}, {1.0f, 0.0f}}, gb{{0.2f}, {0.2f}, {-0.3f}};
  for (size_t t = 0; t < 3; ++t) {
    set_grad(params[0], gw[t]);
    set_grad(params[1], gb[t]);
    opt.step(0.1);
    const std::string at = "wd " + std::to_string(weight_decay) + " step " + std::to_string(t + 1);
    const auto state = opt.state_dict();
    EXPECT_TRUE(test::all_close(Tensor::from_vector(expected[t].w, {2}), params[0].param, kAtol, kRtol, at + " w"));
    EXPECT_TRUE(test::all_close(Tensor::from_vector(expected[t].m_w, {2}), state.at("optim.w.exp_avg"), kAtol, kRtol,
                                at + " exp_avg"));
    EXPECT_TRUE(test::all_close(Tensor::from_vector(expected[t].v_w, {2}), state.at("optim.w.exp_avg_sq"), 1e-10, kRtol,
                                at + " exp_avg_sq"));
    EXPECT_TRUE(test::all_close(Tensor::from_vector(expected[t].b, {1}), params[1].param, kAtol, kRtol, at + " b"));
  }
  EXPECT_EQ(opt.step_count(), 3);
}

TEST(AdamW, HandComputedStepsWithoutWeightDecay) {
  run_three_steps(0.0,
                  {{{0.900000002f, -1.9f}, {0.05f, -0.1f}, {0.00025f, 0.001f}, {0.400000005f}},
                   {{0.873366299f, -1.93661035f}, {0.02f, 0.11f}, {0.00031225f, 0.004999f}, {0.30000001f}},
                   {{0.80755514f, -1.96491026f}, {0.118f, 0.099f}, {0.00131193775f, 0.004994001f}, {0.293490441f}}});
}

TEST(AdamW, HandComputedStepsWithWeightDecayOnlyOnDecayEntries) {
  // w decays by (1 - lr * wd) = 0.99 before each update; b (decay = false) matches the run without decay.
  run_three_steps(0.1,
                  {{{0.890000002f, -1.88f}, {0.05f, -0.1f}, {0.00025f, 0.001f}, {0.400000005f}},
                   {{0.854466299f, -1.89781035f}, {0.02f, 0.11f}, {0.00031225f, 0.004999f}, {0.30000001f}},
                   {{0.780110477f, -1.90713216f}, {0.118f, 0.099f}, {0.00131193775f, 0.004994001f}, {0.293490441f}}});
}

TEST(AdamW, FoundInfSkipsTheWholeStep) {
  std::vector<ParamRef> params{make_param("w", {1.0f, -2.0f}, true)};
  AdamW opt(params, AdamWOptions{0.9, 0.999, 1e-8, 0.1});
  set_grad(params[0], {0.5f, -1.0f});
  StepControl skip;
  skip.found_inf = optim::scalar_tensor(1.0f, Device::cpu(), "found_inf");
  opt.step(0.1, skip);
  EXPECT_EQ(values(params[0].param), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(values(opt.state_dict().at("optim.w.exp_avg")), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(opt.step_count(), 0);
  // A clean flag runs the step as step 1 (bias correction of t = 1): w[1] = -2 * 0.99 + 0.1 = -1.88.
  skip.found_inf.fill_(0.0);
  opt.step(0.1, skip);
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_NEAR(values(params[0].param)[1], -1.88f, 2e-7);  // a few float roundings of values ~2
}

TEST(AdamW, GradScaleMultipliesGradients) {
  // grad * 0.25 is exact for these gradients, so a step with grad_scale 0.25 equals one on pre-scaled gradients.
  std::vector<ParamRef> a{make_param("w", {1.0f, -2.0f, 3.0f}, true)}, b{make_param("w", {1.0f, -2.0f, 3.0f}, true)};
  AdamW opt_a(a, AdamWOptions{0.9, 0.999, 1e-3, 0.05}), opt_b(b, AdamWOptions{0.9, 0.999, 1e-3, 0.05});
  StepControl c;
  c.grad_scale = optim::scalar_tensor(0.25f, Device::cpu(), "coef");
  for (int t = 0; t < 3; ++t) {
    set_grad(a[0], {0.5f * float(t + 1), -1.0f, 4.0f});
    set_grad(b[0], {0.125f * float(t + 1), -0.25f, 1.0f});  // exactly 0.25 times a's
    opt_a.step(0.01, c);
    opt_b.step(0.01);
  }
  EXPECT_TRUE(test::bitwise_equal(b[0].param, a[0].param, "scaled vs pre-scaled gradients"));
}

TEST(AdamW, HalfCopiesFollowTheMasterAndGradlessParamsStay) {
  std::vector<ParamRef> params{make_param("w", {1.0f, -2.0f, 1e-3f}, true), make_param("frozen", {7.0f}, true)};
  AdamW opt(params);
  Tensor half = Tensor::zeros({3}, DType::f16);
  opt.set_half_copies({{params[0].param, half}});
  set_grad(params[0], {0.1f, 0.2f, -0.3f});
  opt.step(1e-2);
  EXPECT_TRUE(test::bitwise_equal(params[0].param.to(DType::f16), half, "f16 copy"));
  EXPECT_EQ(values(params[1].param), (std::vector<float>{7.0f}));  // no gradient: untouched
}

TEST(AdamW, RejectsBadInput) {
  std::vector<ParamRef> params{make_param("w", {1.0f}, true)};
  EXPECT_THROW(AdamW(params, AdamWOptions{1.0, 0.999, 1e-8, 0.0}), Error);
  EXPECT_THROW(AdamW({make_param("w", {1.0f}, true), make_param("w", {2.0f}, true)}), Error);  // duplicate name
  AdamW opt(params);
  EXPECT_THROW(opt.step(-1.0), Error);
  StepControl c;
  c.found_inf = Tensor::zeros({2}, DType::f32);
  set_grad(params[0], {1.0f});
  EXPECT_THROW(opt.step(0.1, c), Error);
  EXPECT_THROW(opt.set_half_copies({{Tensor::zeros({1}, DType::f32), Tensor::zeros({1}, DType::f16)}}), Error);
  try {
    opt.set_half_copies({{params[0].param, Tensor::zeros({2}, DType::f16)}});
    FAIL() << "expected an error for a half copy of the wrong shape";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cnn::optim

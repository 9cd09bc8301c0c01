// Dynamic loss scaler: backoff / growth / floor / cap over a table of steps, the skipped AdamW step, unscaling,
// torch defaults (growth after exactly 2000 clean steps), state round trip and misuse errors.
#include "optim/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "optim/adamw.h"
#include "tests/optim/optim_test_util.h"

namespace cnn::optim {
namespace {

using test::make_param;
using test::set_grad;
using test::values;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Row {
  bool overflow;  // this step's gradients hold an inf / nan
  double scale;   // scale after update()
  int64_t tracker;
  int64_t skipped;
};

// init 8, growth 2 every 3 clean steps, backoff 0.5, floor 2, cap 32.
const std::vector<Row> kTable{
    {false, 8, 1, 0},  {false, 8, 2, 0},  {false, 16, 0, 0},  // grow after 3 clean steps
    {true, 8, 0, 1},   {false, 8, 1, 1},  {true, 4, 0, 2},    // backoff resets the tracker
    {true, 2, 0, 3},   {true, 2, 0, 4},                       // floor at min_scale = 2
    {false, 2, 1, 4},  {false, 2, 2, 4},  {false, 4, 0, 4},  {false, 4, 1, 4},  {false, 4, 2, 4},
    {false, 8, 0, 4},  {false, 8, 1, 4},  {false, 8, 2, 4},  {false, 16, 0, 4}, {false, 16, 1, 4},
    {false, 16, 2, 4}, {false, 32, 0, 4}, {false, 32, 1, 4}, {false, 32, 2, 4}, {false, 32, 0, 4},  // cap
};

LossScalerOptions table_options() {
  LossScalerOptions o;
  o.init_scale = 8;
  o.growth_interval = 3;
  o.min_scale = 2;
  o.max_scale = 32;
  return o;
}

TEST(LossScaler, BackoffGrowthFloorCapAndSkipFollowTheTable) {
  std::vector<ParamRef> params{make_param("w", {1.0f, 2.0f}, true)};
  AdamW opt(params, AdamWOptions{0.9, 0.999, 1e-8, 0.0});
  DynamicLossScaler scaler(Device::cpu(), table_options());
  int64_t clean = 0;
  for (size_t i = 0; i < kTable.size(); ++i) {
    const Row& r = kTable[i];
    const double scale_before = scaler.read_state().scale;
    set_grad(params[0], {float(scale_before), r.overflow ? kInf : float(-3.0 * scale_before)});  // loss * scale
    const std::vector<float> before = values(params[0].param);
    scaler.unscale_and_check(params);
    if (!r.overflow) {
      EXPECT_EQ(values(params[0].param.grad()), (std::vector<float>{1.0f, -3.0f})) << "step " << i + 1;
    }
    opt.step(1e-2, StepControl{scaler.found_inf(), Tensor()});
    EXPECT_EQ(scaler.update_sync(), r.overflow) << "step " << i + 1;
    const LossScalerState s = scaler.read_state();
    EXPECT_EQ(s.scale, r.scale) << "step " << i + 1;
    EXPECT_EQ(s.growth_tracker, r.tracker) << "step " << i + 1;
    EXPECT_EQ(s.skipped_steps, r.skipped) << "step " << i + 1;
    if (r.overflow) {
      EXPECT_EQ(values(params[0].param), before) << "skipped step " << i + 1 << " changed the weights";
    } else {
      ++clean;
      EXPECT_NE(values(params[0].param), before) << "clean step " << i + 1 << " left the weights";
    }
    EXPECT_EQ(opt.step_count(), clean) << "step " << i + 1;
  }
}

TEST(LossScaler, TorchDefaultsGrowAfterExactly2000CleanSteps) {
  const LossScalerOptions o;
  EXPECT_EQ(o.init_scale, 65536.0);
  EXPECT_EQ(o.growth_factor, 2.0);
  EXPECT_EQ(o.backoff_factor, 0.5);
  EXPECT_EQ(o.growth_interval, 2000);
  std::vector<ParamRef> params{make_param("w", {1.0f}, true)};
  set_grad(params[0], {1.0f});
  DynamicLossScaler scaler(Device::cpu());
  for (int i = 0; i < 1999; ++i) {
    scaler.unscale_and_check(params);
    params[0].param.grad().fill_(1.0);
    scaler.update();
  }
  EXPECT_EQ(scaler.read_state().scale, 65536.0);
  EXPECT_EQ(scaler.read_state().growth_tracker, 1999);
  scaler.unscale_and_check(params);
  scaler.update();
  EXPECT_EQ(scaler.read_state().scale, 131072.0);
  EXPECT_EQ(scaler.read_state().growth_tracker, 0);
}

TEST(LossScaler, NanCountsAsOverflowAndScaleSeedsBackward) {
  std::vector<ParamRef> params{make_param("w", {1.0f}, true)};
  DynamicLossScaler scaler(Device::cpu());
  EXPECT_EQ(scaler.scale().dim(), 0);  // shape () like a loss, usable as the backward seed
  EXPECT_EQ(scaler.scale().item(), 65536.0);
  set_grad(params[0], {std::nanf("")});
  scaler.unscale_and_check(params);
  EXPECT_EQ(scaler.found_inf().item(), 1.0);
  scaler.update();
  EXPECT_EQ(scaler.scale().item(), 32768.0);
}

TEST(LossScaler, StateRoundTripAndErrors) {
  std::vector<ParamRef> params{make_param("w", {1.0f}, true)};
  DynamicLossScaler a(Device::cpu(), table_options());
  for (bool overflow : {false, true, false, false}) {
    set_grad(params[0], {overflow ? kInf : 1.0f});
    a.unscale_and_check(params);
    a.update();
  }
  DynamicLossScaler b(Device::cpu(), table_options());
  b.load_state_dict(a.state_dict());
  const LossScalerState sa = a.read_state(), sb = b.read_state();
  EXPECT_EQ(sb.scale, sa.scale);
  EXPECT_EQ(sb.growth_tracker, sa.growth_tracker);
  EXPECT_EQ(sb.skipped_steps, 1);
  EXPECT_THROW(b.update(), Error);  // no unscale_and_check since the last update
  auto bad = a.state_dict();
  bad.erase("loss_scaler.growth_tracker");
  EXPECT_THROW(b.load_state_dict(bad), Error);
  bad = a.state_dict();
  bad["loss_scaler.scale"] = Tensor::from_vector(std::vector<float>{1000.0f}, {1});  // above max_scale 32
  EXPECT_THROW(b.load_state_dict(bad), Error);
  LossScalerOptions o;
  o.backoff_factor = 1.5;
  EXPECT_THROW(DynamicLossScaler(Device::cpu(), o), Error);
}

}  // namespace
}  // namespace cnn::optim

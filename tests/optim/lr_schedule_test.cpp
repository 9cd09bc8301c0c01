// LR schedules at key steps: warmup start / middle / end, cosine quarter / half / end, past the end, constant.
#include "optim/lr_schedule.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cnn::optim {
namespace {

// Expected values evaluated by hand in double; the schedule is double math, so only the last digits may differ.
constexpr double kTol = 1e-15;

TEST(LrSchedule, CosineWithLinearWarmup) {
  LrSchedule s;
  s.kind = LrScheduleKind::cosine;
  s.base_lr = 1e-3;
  s.min_lr = 1e-5;
  s.warmup_lr_init = 1e-6;
  s.warmup_steps = 10;
  const int64_t total = 110;
  const std::vector<std::pair<int64_t, double>> table{
      {0, 1e-6},     {1, 1.009e-4},          {5, 5.005e-4},          {9, 9.001e-4}, {10, 1e-3}, {35, 8.55017856687e-4},
      {60, 5.05e-4}, {85, 1.54982143313e-4}, {109, 1.0244252619e-5}, {110, 1e-5},   {500, 1e-5}};
  for (const auto& [step, lr] : table) {
    // Literals with 12 significant digits: relative 1e-11.
    EXPECT_NEAR(s.lr_at(step, total), lr, lr * 1e-11 + kTol) << "step " << step;
  }
}

TEST(LrSchedule, CosineWithoutWarmupStartsAtBase) {
  LrSchedule s;
  s.base_lr = 0.5;
  EXPECT_DOUBLE_EQ(s.lr_at(0, 100), 0.5);
  EXPECT_NEAR(s.lr_at(50, 100), 0.25, kTol);
  EXPECT_NEAR(s.lr_at(100, 100), 0.0, kTol);
}

TEST(LrSchedule, ConstantWithWarmup) {
  LrSchedule s;
  s.kind = lr_schedule_kind_from_name("constant");
  s.base_lr = 0.1;
  s.warmup_steps = 4;
  EXPECT_NEAR(s.lr_at(0, 10), 0.0, kTol);
  EXPECT_NEAR(s.lr_at(2, 10), 0.05, kTol);
  EXPECT_DOUBLE_EQ(s.lr_at(4, 10), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(9, 10), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(20, 10), 0.1);
  EXPECT_STREQ(lr_schedule_kind_name(s.kind), "constant");
}

TEST(LrSchedule, RejectsBadArguments) {
  LrSchedule s;
  s.warmup_steps = 10;
  EXPECT_THROW(s.lr_at(0, 10), Error);  // total_steps must exceed warmup_steps
  EXPECT_THROW(s.lr_at(-1, 100), Error);
  s.min_lr = 1.0;  // above base_lr
  EXPECT_THROW(s.lr_at(0, 100), Error);
  EXPECT_THROW(lr_schedule_kind_from_name("step"), Error);
}

}  // namespace
}  // namespace cnn::optim

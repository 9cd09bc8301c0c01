// Learning-rate schedules: validation and per-step evaluation.
#include "optim/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace cnn::optim {

LrScheduleKind lr_schedule_kind_from_name(const std::string& name) {
  if (name == "cosine") return LrScheduleKind::cosine;
  if (name == "constant") return LrScheduleKind::constant;
  throw Error(str_cat("lr schedule: expected 'cosine' or 'constant', got '", name, "'"));
}

const char* lr_schedule_kind_name(LrScheduleKind kind) {
  return kind == LrScheduleKind::cosine ? "cosine" : "constant";
}

void LrSchedule::validate() const {
  CNN_CHECK(std::isfinite(base_lr) && base_lr > 0, "lr schedule: expected base_lr > 0, got ", base_lr);
  CNN_CHECK(min_lr >= 0 && min_lr <= base_lr, "lr schedule: expected 0 <= min_lr <= base_lr (", base_lr, "), got ",
            min_lr);
  CNN_CHECK(warmup_lr_init >= 0 && warmup_lr_init <= base_lr, "lr schedule: expected 0 <= warmup_lr_init <= base_lr (",
            base_lr, "), got ", warmup_lr_init);
  CNN_CHECK(warmup_steps >= 0, "lr schedule: expected warmup_steps >= 0, got ", warmup_steps);
}

double LrSchedule::lr_at(int64_t step, int64_t total_steps) const {
  validate();
  CNN_CHECK(step >= 0, "lr schedule: expected step >= 0, got ", step);
  CNN_CHECK(total_steps > warmup_steps, "lr schedule: expected total_steps > warmup_steps (", warmup_steps, "), got ",
            total_steps);
  if (step < warmup_steps) {
    return warmup_lr_init + (base_lr - warmup_lr_init) * double(step) / double(warmup_steps);
  }
  if (kind == LrScheduleKind::constant) return base_lr;
  if (step >= total_steps) return min_lr;
  const double progress = double(step - warmup_steps) / double(total_steps - warmup_steps);
  return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace cnn::optim

// Per-step learning-rate schedules (timm semantics with per-iteration updates): linear warmup from warmup_lr_init
// to base_lr over warmup_steps, then cosine decay to min_lr at total_steps (or constant base_lr).
#pragma once

#include <cstdint>
#include <string>

namespace cnn::optim {

enum class LrScheduleKind { cosine, constant };

// "cosine" or "constant"; anything else is an error naming the accepted values.
LrScheduleKind lr_schedule_kind_from_name(const std::string& name);
const char* lr_schedule_kind_name(LrScheduleKind kind);

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::cosine;
  double base_lr = 1e-3;
  double min_lr = 0.0;          // cosine floor, reached at total_steps
  double warmup_lr_init = 0.0;  // lr at step 0 when warmup_steps > 0
  int64_t warmup_steps = 0;

  // Throws unless base_lr > 0, 0 <= min_lr <= base_lr, 0 <= warmup_lr_init <= base_lr, warmup_steps >= 0.
  void validate() const;

  // lr for 0-based step of total_steps (warmup_steps < total_steps unless warmup_steps == 0):
  //   step < W:  warmup_lr_init + (base_lr - warmup_lr_init) * step / W
  //   cosine:    min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - W) / (total_steps - W))) / 2
  //   constant:  base_lr
  // Steps at or past total_steps give the final value (min_lr for cosine).
  double lr_at(int64_t step, int64_t total_steps) const;
};

}  // namespace cnn::optim
